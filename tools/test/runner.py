#!/usr/bin/env python3
"""Boot the kernel in QEMU, interactively or as the test runner.

  runner.py run   --iso ISO [--smp N] [--accel auto|kvm|tcg] [--cmdline S]
  runner.py check --iso ISO [--smp "1 2 4"] [--host-tests DIR ...]
  runner.py check-model --iso build/perfmon-model.iso [--tests SEL]
  runner.py bench --iso ISO [--accel tcg|kvm]
  runner.py bench-scale --iso ISO [--accel tcg|kvm]
  runner.py check-hw --iso ISO [--smp N] [--accel kvm|tcg] [--cmdline S]

The kernel reads extra command-line words from the fw_cfg file
opt/perfmon/cmdline, so one ISO serves every configuration. It reports the
end of a test run through the isa-debug-exit device: QEMU exits with 1 when
every test passed, 3 when one failed, 5 on a panic.
"""

import argparse
import concurrent.futures
import doctest
import os
import re
import signal
import subprocess
import sys
import time

# tools/ is not a package, and keeps no __pycache__: the modules below
# are imported from it.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# perf_profile (make profile's checks) is in tools/perf/.
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "perf"))
import perf_profile  # noqa: E402
import runner_checks  # noqa: E402
import runner_docs  # noqa: E402
import runner_ktap  # noqa: E402
import runner_qemu  # noqa: E402
from runner_checks import (check_logs_saved, check_plan,  # noqa: E402,F401
                           model_plan, run_host_tests)
import runner_tests  # noqa: E402
from runner_ktap import (KTAP_RESULT, Boot, Result, boot_line,  # noqa: E402
                         parse_ktap, recap, totals_line)
from runner_qemu import (EXIT_PASS, Qemu, choose_accel,  # noqa: E402
                         host_cpu_flags, host_cpu_vendor, kvm_usable,
                         qemu_command, stop_all_qemus)

# The kernel supports 1 to 64 CPUs (its per-CPU tables).
SMP_MAX = 64
def log_name(logdir, k, boot):
    name = re.sub(r"[^A-Za-z0-9=,._-]", "_", boot.name)
    return os.path.join(logdir, "%02d-%s.log" % (k, name))


def cmd_check(args):
    accel, reason = choose_accel(args.accel)
    model = args.mode == "check-model"
    boots = model_plan(args) if model else check_plan(args)
    logdir = args.logdir or os.path.join(os.path.dirname(args.iso) or ".",
                                         "logs")
    os.makedirs(logdir, exist_ok=True)
    for old in os.listdir(logdir):
        if old.endswith(".log") or old == "report.txt":
            os.remove(os.path.join(logdir, old))
    print("runner: accelerator %s (%s); %d boot%s, %d at a time; serial "
          "logs in %s/" % (accel, reason, len(boots),
                           "" if len(boots) == 1 else "s", args.jobs, logdir),
          flush=True)
    if args.tests and not model:
        print("runner: TESTS=%s: the shell, runner-check and host-test "
              "boots are left out" % args.tests, flush=True)
    totals = [0, 0, 0, 0]
    done = []           # (boot, result, log), in finishing order
    report = []         # every result line, for report.txt

    def account(res, log=None):
        report.extend(res.lines)
        if args.verbose:
            print("\n".join(res.lines), flush=True)
        totals[0] += res.passed
        totals[1] += res.failed
        totals[2] += res.skipped
        totals[3] += len(res.loosened)

    pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
    interrupted = False
    try:
        futures = {}
        for k, b in enumerate(boots, 1):
            log = log_name(logdir, k, b)
            futures[pool.submit(b.run, args, accel, log)] = (b, log)
        for fut in concurrent.futures.as_completed(futures):
            boot, log = futures[fut]
            res = fut.result()
            done.append((boot, res, log))
            account(res)
            print(boot_line(len(done), len(boots), boot, res), flush=True)

        if not args.tests and not model:
            res = check_logs_saved(done)
            done.append((None, res, None))
            account(res)
            res = runner_docs.check_docs(done)
            done.append((None, res, None))
            account(res)
            print("docs check (docs/testing.md): %d passed, %d failed"
                  % (res.passed, res.failed), flush=True)
            if args.host_list or args.host_py:
                res = run_host_tests(args)
                done.append((None, res, None))
                account(res)
                print("host unit tests (-fsanitize=address,undefined): %d "
                      "passed, %d failed" % (res.passed, res.failed),
                      flush=True)
            res = run_self_tests()
            done.append((None, res, None))
            account(res)
            print("runner self-tests: %d passed, %d failed"
                  % (res.passed, res.failed), flush=True)
    except KeyboardInterrupt:
        interrupted = True
        stop_all_qemus()
        # Results of boots cut short say "interrupted", not why they
        # failed: only boots that finished before Ctrl-C are counted.
        done = [d for d in done
                if not any("interrupted" in l for l in d[1].lines)]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

    with open(os.path.join(logdir, "report.txt"), "w") as f:
        f.write("\n".join(report) + "\n")
    for line in recap([(res, log) for _, res, log in done]):
        print(line)
    print("serial logs of every boot and the full report (every test's "
          "line): %s/" % logdir)
    if interrupted:
        print("interrupted: %d of %d boots finished; every QEMU stopped"
              % (sum(1 for b, _, _ in done if b is not None), len(boots)))
    print(totals_line(*totals), flush=True)
    if interrupted:
        return 130
    return 1 if totals[1] else 0


def cmd_boot(args):
    """One boot of the test suite with the given command line (make
    torture)."""
    accel, reason = choose_accel(args.accel)
    print("runner: accelerator %s (%s)" % (accel, reason), flush=True)
    boot = Boot(args.name, args.cmdline, args.smp[0], timeout=args.timeout,
                pmu=args.pmu)
    start = time.monotonic()

    def heartbeat(qemu):
        print("  %s: %d s, last line: %s" % (args.name,
              time.monotonic() - start, qemu.last_line()[:100]), flush=True)

    res = boot.run(args, accel, heartbeat=heartbeat if args.progress
                   else None)
    print("\n".join(l for l in boot.text.splitlines()
                    if l.startswith("# ")))
    print("\n".join(res.lines))
    for test, what in res.loosened:
        print("loosened: %s: %s" % (test, what))
    print(totals_line(res.passed, res.failed, res.skipped,
                      len(res.loosened)))
    return 1 if res.failed else 0


# --- check-hw: the hardware PMU suite, which must not pass vacuously ------

# The hardware suites: pmu_hw runs against whichever driver registered,
# pmu_intel_hw and pmu_amd_hw only against their vendor's.
HW_SUITES = ("pmu_hw.", "pmu_intel_hw.", "pmu_amd_hw.")
# Skip reasons that mean the guest saw no PMU at all.
HW_NO_PMU = ("no hardware PMU", "no architectural PMU")
AMD_VENDORS = ("AuthenticAMD", "HygonGenuine")


def host_pmu_flag(vendor):
    """The /proc/cpuinfo flag that shows the host CPU's core PMU.

    >>> host_pmu_flag("AuthenticAMD"), host_pmu_flag("GenuineIntel")
    ('perfctr_core', 'arch_perfmon')
    """
    return "perfctr_core" if vendor in AMD_VENDORS else "arch_perfmon"


def hw_suites(vendor):
    """The suites check-hw boots on a host of this vendor.

    >>> hw_suites("AuthenticAMD"), hw_suites("GenuineIntel")
    ('pmu_hw', 'pmu_hw,pmu_intel_hw')
    """
    return "pmu_hw" if vendor in AMD_VENDORS else "pmu_hw,pmu_intel_hw"


def hw_outcomes(text):
    """The results of the hardware suites in a boot's output, as (test,
    status, skip reason) with status "ok", "fail" or "skip".

    >>> hw_outcomes("1..4\\n"
    ...     "ok 1 pmu_intel_hw.a # SKIP no architectural PMU (CPUID)\\n"
    ...     "not ok 2 pmu_intel_hw.b\\n"
    ...     "ok 3 perfmon.c\\n"
    ...     "ok 4 pmu_hw.d\\n")
    [('pmu_intel_hw.a', 'skip', 'no architectural PMU (CPUID)'), \
('pmu_intel_hw.b', 'fail', None), ('pmu_hw.d', 'ok', None)]
    """
    found = []
    for line in text.splitlines():
        m = KTAP_RESULT.match(line.strip())
        if not m or not m.group(3).startswith(HW_SUITES):
            continue
        if m.group(1) == "not ok":
            found.append((m.group(3), "fail", None))
        elif m.group(4) is not None:
            found.append((m.group(3), "skip", m.group(4)))
        else:
            found.append((m.group(3), "ok", None))
    return found


def hw_verdict(outcomes, accel, kvm_ok, vendor, flags):
    """Decide whether a check-hw run tested the PMU. outcomes: hw_outcomes
    of every boot together; accel: the accelerator; kvm_ok: /dev/kvm
    opens; vendor, flags: the host's /proc/cpuinfo, whose PMU flag is
    perfctr_core on AMD, arch_perfmon on Intel. Return None when a
    hardware test ran (passed or failed) on a guest that saw the host's
    PMU, else the reason the run fails.

    A run where tests ran, some skipping for a missing feature, on Intel

    >>> ran = [("pmu_hw.a", "ok", None),
    ...        ("pmu_intel_hw.b", "skip", "no fixed counter 2")]
    >>> hw_verdict(ran, "kvm", True, "GenuineIntel", {"arch_perfmon"})

    and on AMD (the AMD driver registered):

    >>> amd = [("pmu_hw.a", "ok", None),
    ...        ("pmu_hw.b", "skip", "polled device: no overflow interrupt")]
    >>> hw_verdict(amd, "kvm", True, "AuthenticAMD", {"perfctr_core"})

    Every test skipped because the guest has no PMU, on a host whose CPU
    shows one: a failure, not a skip, on AMD

    >>> none = [("pmu_hw.a", "skip", "no hardware PMU registered (x)")]
    >>> print(hw_verdict(none, "kvm", True, "AuthenticAMD",
    ...                  {"svm", "perfctr_core"}))
    ... # doctest: +ELLIPSIS
    the host CPU has a PMU (perfctr_core in /proc/cpuinfo) but the guest \
saw none...

    and on Intel, whatever else ran:

    >>> print(hw_verdict(none + ran, "kvm", True, "GenuineIntel",
    ...                  {"arch_perfmon", "vmx"}))
    ... # doctest: +ELLIPSIS
    the host CPU has a PMU (arch_perfmon in /proc/cpuinfo) but the guest \
saw none...

    The same on a host that hides its own PMU (a VM): nothing tested.

    >>> print(hw_verdict(none, "kvm", True, "AuthenticAMD", {"svm"}))
    ... # doctest: +ELLIPSIS
    nothing tested: the guest sees no PMU and the host CPU shows no \
perfctr_core either...
    >>> print(hw_verdict(none, "kvm", True, "GenuineIntel", {"vmx"}))
    ... # doctest: +ELLIPSIS
    nothing tested: the guest sees no PMU and the host CPU shows no \
arch_perfmon either...

    Under TCG:

    >>> print(hw_verdict(none, "tcg", True, "GenuineIntel", set()))
    ... # doctest: +ELLIPSIS
    nothing tested: TCG emulates no PMU...

    No KVM: nothing booted; the PMU flag says whether KVM would help.

    >>> print(hw_verdict([], "kvm", False, "AuthenticAMD", set()))
    ... # doctest: +ELLIPSIS
    nothing tested: KVM is unavailable (/dev/kvm cannot be opened); and \
this host's CPU (AuthenticAMD) shows no perfctr_core...
    >>> print(hw_verdict([], "kvm", False, "GenuineIntel",
    ...                  {"arch_perfmon"}))
    nothing tested: KVM is unavailable (/dev/kvm cannot be opened)

    Every test skipped for other reasons:

    >>> print(hw_verdict([("pmu_hw.a", "skip", "event unavailable")],
    ...                  "kvm", True, "AuthenticAMD", {"perfctr_core"}))
    nothing tested: every hardware test skipped: event unavailable
    """
    flag = host_pmu_flag(vendor)
    hidden = ""
    if flag not in flags:
        hidden = ("this host's CPU (%s) shows no %s in /proc/cpuinfo: it "
                  "hides its PMU (a VM without a virtual PMU, such as a "
                  "nested guest), so a guest would see none either"
                  % (vendor or "unknown vendor", flag))
    if accel == "kvm" and not kvm_ok:
        return ("nothing tested: KVM is unavailable (/dev/kvm cannot be "
                "opened)" + ("; and " + hidden if hidden else ""))
    ran = [o for o in outcomes if o[1] != "skip"]
    no_pmu = any(o[1] == "skip" and o[2].startswith(HW_NO_PMU)
                 for o in outcomes)
    if accel != "kvm" and not ran:
        return ("nothing tested: TCG emulates no PMU; check-hw needs KVM "
                "(ACCEL=kvm)" + ("; and " + hidden if hidden else ""))
    if no_pmu and flag in flags:
        return ("the host CPU has a PMU (%s in /proc/cpuinfo) but the guest "
                "saw none: check that KVM exposes it (cat /sys/module/kvm/"
                "parameters/enable_pmu should say Y) and that QEMU runs "
                "with -cpu host,pmu=on" % flag)
    if ran:
        return None
    if no_pmu:
        return ("nothing tested: the guest sees no PMU and the host CPU "
                "shows no %s either: this host hides its PMU (a VM without "
                "a virtual PMU, such as a nested guest); run check-hw on "
                "bare metal or in a VM whose hypervisor passes the PMU "
                "through" % flag)
    if outcomes:
        return ("nothing tested: every hardware test skipped: "
                + "; ".join(sorted({o[2] for o in outcomes})))
    return "nothing tested: no result from the hardware suite"


def hw_boots(vendor, cmdline):
    """check-hw's boots on a host of this vendor: (name, kernel command
    line). Intel: the writes the CPU offers, then 32-bit counter writes
    (pmu_intel.full_width=0); AMD: the PMI, then polling (pmu_amd.pmi=0).
    The first boot runs the perfmon suite too.

    >>> hw_boots("AuthenticAMD", "")
    [('hw', 'test=pmu_hw,perfmon '), ('hw,polled', 'test=pmu_hw \
pmu_amd.pmi=0 ')]
    """
    suites = hw_suites(vendor)
    if vendor in AMD_VENDORS:
        second = ("hw,polled", "test=%s pmu_amd.pmi=0 " % suites)
    else:
        second = ("hw,32-bit-writes",
                  "test=%s pmu_intel.full_width=0 " % suites)
    return [("hw", "test=%s,perfmon " % suites + cmdline),
            (second[0], second[1] + cmdline)]


def cmd_check_hw(args):
    """The hardware PMU suites for the host's vendor (hw_boots), under KVM
    with the host PMU exposed, one boot at a time. Fails, saying why, when
    nothing was tested."""
    if args.accel == "auto":
        accel, reason = "kvm", "check-hw needs KVM to expose the host PMU"
    else:
        accel, reason = choose_accel(args.accel)
    vendor = host_cpu_vendor()
    flags = host_cpu_flags()
    kvm_ok = kvm_usable()
    flag = host_pmu_flag(vendor)
    print("runner: accelerator %s (%s); host CPU %s, %s" % (
        accel, reason, vendor or "unknown",
        flag if flag in flags else "no " + flag), flush=True)
    boots = [Boot(name, cmdline, args.smp[0], timeout=args.timeout, pmu=True)
             for name, cmdline in hw_boots(vendor, args.cmdline)]
    totals = [0, 0, 0]
    outcomes = []

    def account(res):
        print("\n".join(res.lines), flush=True)
        totals[0] += res.passed
        totals[1] += res.failed
        totals[2] += res.skipped

    # One at a time: the counts are measurements, a second guest would
    # disturb them.
    if accel != "kvm" or kvm_ok:
        for boot in boots:
            res = boot.run(args, accel)
            print("\n".join(l for l in boot.text.splitlines()
                            if l.startswith("# ")))
            account(res)
            outcomes += hw_outcomes(boot.text)

    verdict = hw_verdict(outcomes, accel, kvm_ok, vendor, flags)
    if verdict:
        res = Result("check-hw")
        res.add("fail", "tested-hardware", [verdict])
        account(res)
    line = "%d passed, %d failed" % (totals[0], totals[1])
    if totals[2]:
        line += ", %d skipped" % totals[2]
    print(line)
    if verdict:
        print("check-hw: FAILED: " + verdict)
    elif totals[1]:
        print("check-hw: FAILED: see the failures above")
    return 1 if totals[1] else 0


def run_self_tests():
    """The runner's own doctests (hw_verdict and its helpers), one result
    per documented function, of this module and those it is split into,
    in the order of the functions' names."""
    result = Result("runner")
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = []
    for module in (sys.modules[__name__], runner_qemu, runner_ktap,
                   runner_tests, runner_checks, runner_docs, perf_profile):
        tests += finder.find(module, module.__name__)
    tests.sort(key=lambda test: test.name.split(".", 1)[-1])
    for test in tests:
        if not test.examples:
            continue
        out = []
        failed, _ = runner.run(test, out=out.append)
        name = test.name.split(".")[-1]
        if failed:
            result.add("fail", name, "".join(out).splitlines()[-30:])
        else:
            result.add("ok", name)
    return result


def cmd_bench(args):
    """Boot the benchmark and print its table. Under TCG it runs with
    -icount shift=0, where the TSC counts instructions: the figures are
    deterministic."""
    accel, reason = choose_accel(args.accel)
    icount = accel == "tcg"
    unit = "instructions (TCG -icount shift=0)" if icount else "TSC cycles"
    print("runner: accelerator %s (%s), %d CPUs, figures in %s"
          % (accel, reason, args.smp[0], unit), flush=True)
    cmd = qemu_command(args.iso, args.smp[0], accel, args.mem,
                       "test=bench.perfmon " + args.cmdline, icount=icount)
    qemu = Qemu(cmd)
    rc = qemu.wait(time.monotonic() + args.timeout)
    text = qemu.text
    for line in text.splitlines():
        if line.startswith("# bench:") or line.startswith("clock:"):
            print(line[len("# bench: "):] if line.startswith("#") else line)
    result = Result("bench")
    parse_ktap(text, result)
    if rc != EXIT_PASS or result.failed or result.passed == 0:
        print("\n".join(text.splitlines()[-30:]))
        print("bench: failed (QEMU status %s)" % rc)
        return 1
    # The sample's cost with the overflow as a maskable report, then in
    # NMI mode (a boot-time choice), then with every wrap a real self-NMI.
    for pmi in ("irq", "nmi", "nmi pmu_soft.nmi=ipi"):
        cmd = qemu_command(args.iso, args.smp[0], accel, args.mem,
                           "test=bench.perfmon_pmi pmu_soft.intr=1 "
                           "perfmon.pmi=%s %s" % (pmi, args.cmdline),
                           icount=icount)
        qemu = Qemu(cmd)
        rc = qemu.wait(time.monotonic() + args.timeout)
        result = Result("bench")
        parse_ktap(qemu.text, result)
        for line in qemu.text.splitlines():
            if line.startswith("# bench:") and "sampling, pmi=" in line:
                print(line[len("# bench: "):])
        if rc != EXIT_PASS or result.failed or result.passed == 0:
            print("\n".join(qemu.text.splitlines()[-30:]))
            print("bench: failed (QEMU status %s)" % rc)
            return 1
    return 0


def cmd_bench_scale(args):
    """The scaling study (make bench-scale): bench.perfmon_scale at each
    of BENCH_SCALE_SMP CPUs, apart from make bench because its 64-CPU
    boot takes most of half an hour under -icount."""
    accel, reason = choose_accel(args.accel)
    icount = accel == "tcg"
    print("runner: accelerator %s (%s), scaling boots at %s CPUs"
          % (accel, reason, ", ".join(str(n) for n in BENCH_SCALE_SMP)),
          flush=True)
    return bench_scale(args, accel, icount)


BENCH_SCALE_SMP = (2, 8, 32, 64)
BENCH_SCALE = re.compile(r"^# bench-scale: (.+): (\d+)$", re.M)


def bench_scale_table(figures, smps):
    """The scaling table: a row per case, a column per CPU count, and
    the ratio of the last to the first.

    >>> print(bench_scale_table({2: {"a": 100}, 64: {"a": 110}}, (2, 64)))
    scaling                                              2 CPUs    64 CPUs   64/2
    a                                                       100        110   1.10
    """
    first, last = smps[0], smps[-1]
    lines = ["%-48s" % "scaling" + "".join("%11s" % ("%d CPUs" % n)
                                           for n in smps)
             + "   %d/%d" % (last, first)]
    for case in figures[first]:
        row = [figures[n].get(case) for n in smps]
        ratio = ("%6.2f" % (row[-1] / row[0])
                 if row[0] and row[-1] is not None else "     -")
        lines.append("%-48s" % case + "".join(
            "%11s" % ("-" if v is None else v) for v in row) + " " + ratio)
    return "\n".join(lines)


def bench_scale(args, accel, icount):
    """Boot bench.perfmon_scale at each of BENCH_SCALE_SMP CPUs and print
    how its figures grow with the CPU count."""
    figures = {}
    for smp in BENCH_SCALE_SMP:
        cmd = qemu_command(args.iso, smp, accel, args.mem,
                           "test=bench.perfmon_scale " + args.cmdline,
                           icount=icount)
        start = time.monotonic()
        qemu = Qemu(cmd)
        # Under -icount every vCPU runs in turn on one host thread: a
        # boot takes about as many times longer as it has CPUs.
        rc = qemu.wait(start + args.timeout * max(1, smp // 8))
        result = Result("bench-scale")
        parse_ktap(qemu.text, result)
        if rc != EXIT_PASS or result.failed or result.passed == 0:
            print("\n".join(qemu.text.splitlines()[-30:]))
            print("bench: scaling boot at %d CPUs failed (QEMU status %s)"
                  % (smp, rc))
            return 1
        figures[smp] = {m.group(1): int(m.group(2))
                        for m in BENCH_SCALE.finditer(qemu.text)}
        print("bench: scaling boot at %d CPUs: %s (%.0f s)"
              % (smp, ", ".join("%s %d" % kv for kv in figures[smp].items()),
                 time.monotonic() - start), flush=True)
    print()
    print(bench_scale_table(figures, BENCH_SCALE_SMP))
    return 0


def cmd_run(args):
    accel, reason = choose_accel(args.accel)
    print("runner: accelerator %s (%s), %d CPUs; quit with Ctrl-A X"
          % (accel, reason, args.smp[0]), flush=True)
    cmd = qemu_command(args.iso, args.smp[0], accel, args.mem, args.cmdline,
                       gdb=args.gdb, interactive=True)
    rc = subprocess.call(cmd)
    # The shell's poweroff and a passing test run leave through the exit
    # device with status 1: a normal end.
    return 0 if rc in (0, EXIT_PASS) else rc


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.
                                     RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["run", "check", "check-model",
                                         "boot", "bench", "bench-scale",
                                         "check-hw"])
    parser.add_argument("--iso", required=True)
    parser.add_argument("--smp", default="1 2 4")
    parser.add_argument("--accel", default="auto",
                        choices=["auto", "kvm", "tcg"])
    parser.add_argument("--mem", default="512M")
    parser.add_argument("--cmdline", default="")
    parser.add_argument("--gdb", type=int, default=0, metavar="PORT",
                        help="run: QEMU waits for gdb on this TCP port")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--pmu", action="store_true",
                        help="expose the host PMU (KVM: -cpu host,pmu=on)")
    parser.add_argument("--name", default="boot")
    parser.add_argument("--host-tests", default="")
    parser.add_argument("--host-list", default="")
    parser.add_argument("--host-py", default="",
                        help="Python host test scripts (KTAP output)")
    parser.add_argument("--test-list", default="",
                        help="the build's list of tests (default: "
                        "tests.list beside the ISO, which make writes)")
    parser.add_argument("--model-iso", default="",
                        help="check: the model kernel's ISO, whose boots "
                        "(runner_checks.MODEL_CHECK) run too")
    parser.add_argument("--tests", default="",
                        help="test= selection for the suite boots (TESTS=)")
    parser.add_argument("--logdir", default="",
                        help="where check saves each boot's serial log "
                        "(default: logs/ beside the ISO)")
    parser.add_argument("--verbose", action="store_true",
                        help="print every test's result line (V=1)")
    parser.add_argument("--progress", action="store_true",
                        help="boot: print a line every 10 s while it runs")
    parser.add_argument("--jobs", type=int,
                        default=int(os.environ.get("JOBS", "0"))
                        or os.cpu_count() or 1)
    args = parser.parse_args()
    problem = check_smp_mem(args.smp, args.mem)
    if problem:
        print("runner: " + problem, file=sys.stderr)
        return 2
    args.smp = [int(s) for s in args.smp.split()]
    args.tests = args.tests.strip().replace(" ", ",")
    # A kill (SIGTERM) cleans up like Ctrl-C: the QEMUs run in their own
    # sessions and would outlive the runner.
    signal.signal(signal.SIGTERM, interrupt_on_signal)
    try:
        return dispatch(args)
    except KeyboardInterrupt:
        stop_all_qemus()
        print("\nrunner: interrupted; every QEMU stopped", file=sys.stderr)
        return 130


def interrupt_on_signal(signum, frame):
    raise KeyboardInterrupt()


def check_smp_mem(smp, mem):
    """Why SMP or MEM cannot be used, or None.

    >>> check_smp_mem("1 2 4", "512M")
    >>> check_smp_mem("0", "512M")
    "SMP='0': each CPU count must be an integer from 1 to 64"
    >>> check_smp_mem("two", "512M")
    "SMP='two': each CPU count must be an integer from 1 to 64"
    >>> check_smp_mem("", "1G")
    "SMP='': give at least one CPU count"
    >>> check_smp_mem("2", "lots")
    "MEM='lots': a size such as 512M or 2G, at least 64M"
    >>> check_smp_mem("2", "16M")
    "MEM='16M': a size such as 512M or 2G, at least 64M"
    """
    words = smp.split()
    if not words:
        return "SMP='%s': give at least one CPU count" % smp
    for w in words:
        if not w.isdigit() or not 1 <= int(w) <= SMP_MAX:
            return ("SMP='%s': each CPU count must be an integer from 1 to "
                    "%d" % (smp, SMP_MAX))
    m = re.match(r"^(\d+)([MG]?)$", mem)
    mib = (int(m.group(1)) * (1024 if m.group(2) == "G" else 1)) if m else 0
    if mib < 64:
        return "MEM='%s': a size such as 512M or 2G, at least 64M" % mem
    return None


def dispatch(args):
    if args.mode == "run":
        return cmd_run(args)
    if args.mode == "boot":
        return cmd_boot(args)
    if args.mode == "bench":
        return cmd_bench(args)
    if args.mode == "bench-scale":
        return cmd_bench_scale(args)
    if args.mode == "check-hw":
        return cmd_check_hw(args)
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
