#!/usr/bin/env python3
"""Boot the kernel in QEMU, interactively or as the test runner.

  runner.py run   --iso ISO [--smp N] [--accel auto|kvm|tcg] [--cmdline S]
  runner.py check --iso ISO [--smp "1 2 4"] [--host-tests DIR ...]
  runner.py bench --iso ISO [--accel tcg|kvm]

The kernel reads extra command-line words from the fw_cfg file
opt/perfmon/cmdline, so one ISO serves every configuration. It reports the
end of a test run through the isa-debug-exit device: QEMU exits with 1 when
every test passed, 3 when one failed, 5 on a panic.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import threading
import time

EXIT_PASS = 1
EXIT_FAIL = 3
EXIT_PANIC = 5

KTAP_RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?: # SKIP ?(.*))?$")
KTAP_PLAN = re.compile(r"^1\.\.(\d+)$")


def host_cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def kvm_usable():
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def choose_accel(requested):
    """Return (accel, reason). KVM only where the host has hardware
    virtualization: a nested, emulation-based /dev/kvm is far slower than
    TCG."""
    if requested == "tcg":
        return "tcg", "forced by ACCEL=tcg"
    if requested == "kvm":
        return "kvm", "forced by ACCEL=kvm"
    flags = host_cpu_flags()
    if not (flags & {"vmx", "svm"}):
        return "tcg", "no vmx/svm in the host CPU flags"
    if not kvm_usable():
        return "tcg", "/dev/kvm cannot be opened"
    return "kvm", "host has hardware virtualization and /dev/kvm"


def qemu_command(iso, smp, accel, mem, cmdline, icount=False, gdb=False,
                 interactive=False, pmu=False):
    cmd = ["qemu-system-x86_64", "-cdrom", iso, "-boot", "d",
           "-m", mem, "-smp", str(smp), "-display", "none", "-no-reboot",
           "-serial", "mon:stdio" if interactive else "stdio",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if not interactive:
        cmd += ["-monitor", "none"]
    if accel == "kvm":
        # arch-capabilities is left out: measured on a nested AMD host,
        # QEMU 7.2 aborts setting MSR 0x10a for it; this kernel never
        # reads it.
        cpu = "host,pmu=on" if pmu else "host"
        cmd += ["-accel", "kvm", "-cpu", cpu + ",-arch-capabilities"]
    else:
        cmd += ["-accel", "tcg", "-cpu", "max"]
    if icount:
        cmd += ["-icount", "shift=0"]
    if gdb:
        cmd += ["-s", "-S"]
    if cmdline:
        # QEMU option values escape a comma by doubling it.
        cmd += ["-fw_cfg", "name=opt/perfmon/cmdline,string="
                + cmdline.replace(",", ",,")]
    return cmd


class Qemu:
    """A QEMU process whose serial output is collected by a thread."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.text = ""
        self.cond = threading.Condition()
        self.done = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        fd = self.proc.stdout.fileno()
        while True:
            data = os.read(fd, 4096)
            with self.cond:
                if not data:
                    self.done = True
                    self.cond.notify_all()
                    return
                self.text += data.decode("utf-8", "replace").replace("\r", "")
                self.cond.notify_all()

    def expect(self, pattern, start, deadline):
        """Wait for pattern in the output after offset start. Return the
        match, or None at the deadline or when QEMU ends."""
        regex = re.compile(pattern, re.M)
        with self.cond:
            while True:
                m = regex.search(self.text, start)
                if m:
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or self.done:
                    return None
                self.cond.wait(min(left, 0.5))

    def send(self, text):
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def wait(self, deadline):
        """Wait for QEMU to exit; return its status or None on timeout."""
        try:
            rc = self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.reader.join(timeout=5)
        return rc


class Result:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.lines = []     # report lines, printed together
        self.failures = []  # (test, diagnostic lines), for tools/soak.py

    def add(self, status, test, detail=()):
        tag = {"ok": "ok  ", "fail": "FAIL", "skip": "skip"}[status]
        self.lines.append("%s %s %s" % (tag, self.name, test))
        self.lines.extend("     " + d for d in detail)
        if status == "ok":
            self.passed += 1
        elif status == "fail":
            self.failed += 1
            self.failures.append((test, list(detail)))
        else:
            self.skipped += 1


def parse_ktap(text, result, prefix=""):
    """Count KTAP results into result. Return (plan, results seen)."""
    plan = None
    seen = 0
    diag = []
    for line in text.splitlines():
        line = line.strip()
        m = KTAP_PLAN.match(line)
        if m and plan is None:
            plan = int(m.group(1))
            continue
        if line.startswith("#"):
            diag.append(line)
            continue
        m = KTAP_RESULT.match(line)
        if not m:
            continue
        seen += 1
        name = prefix + m.group(3)
        if m.group(1) == "not ok":
            result.add("fail", name, diag[-10:])
        elif m.group(4) is not None:
            result.add("skip", name + " # SKIP " + m.group(4))
        else:
            result.add("ok", name)
        diag = []
    return plan, seen


class Boot:
    """One kernel boot of the check plan.

    expect: "pass" (a test run that must pass), or a harness check of the
    runner itself: "fail" (the run must report a failure), "panic" (the
    kernel must panic), "timeout" (the kernel must hang and be killed).
    """

    def __init__(self, name, cmdline, smp, timeout=180, expect="pass",
                 output=(), script=(), icount=False, pmu=False):
        self.name = name
        self.cmdline = cmdline
        self.smp = smp
        self.timeout = timeout
        self.expect = expect
        self.output = output
        self.script = script
        self.icount = icount
        self.pmu = pmu
        self.text = ""

    def run(self, args, accel):
        result = Result(self.name)
        cmd = qemu_command(args.iso, self.smp, accel, args.mem, self.cmdline,
                           icount=self.icount, pmu=self.pmu)
        start = time.monotonic()
        deadline = start + self.timeout
        qemu = Qemu(cmd)
        script_ok = True
        pos = 0
        for pattern, reply in self.script:
            m = qemu.expect(pattern, pos, deadline)
            if m is None:
                script_ok = False
                result.add("fail", "script", ["did not see %r" % pattern])
                break
            pos = m.end()
            if reply is not None:
                qemu.send(reply)
        rc = qemu.wait(deadline)
        elapsed = time.monotonic() - start
        text = self.text = qemu.text
        header = "== %s: %d CPU%s, %s, %.1f s, cmdline '%s'" % (
            self.name, self.smp, "s" if self.smp > 1 else "", accel, elapsed,
            self.cmdline)
        result.lines.append(header)

        if self.expect == "pass":
            self._judge_run(result, text, rc, script_ok)
        else:
            self._judge_harness(result, text, rc)
        return result

    def _judge_run(self, result, text, rc, script_ok):
        plan, seen = parse_ktap(text, result)
        tail = text.splitlines()[-30:]
        if rc is None:
            result.add("fail", "boot", ["timed out after %d s; last lines:"
                                        % self.timeout] + tail)
        elif rc == EXIT_PANIC:
            panic = text[text.find("panic:"):].splitlines()
            result.add("fail", "boot", ["kernel panic:"] + panic[:40])
        elif rc not in (EXIT_PASS, EXIT_FAIL):
            result.add("fail", "boot", ["QEMU exited with status %s; last "
                                        "lines:" % rc] + tail)
        elif self.script and script_ok:
            result.add("ok", "script")
        if rc == EXIT_FAIL and result.failed == 0:
            result.add("fail", "run", ["the kernel reported a failure"]
                       + [l for l in text.splitlines() if l.startswith("#")])
        if plan is not None and seen < plan:
            result.add("fail", "missing-results",
                       ["plan 1..%d but %d results" % (plan, seen)])
        if rc == EXIT_PASS and plan is None and not self.script:
            result.add("fail", "boot", ["no KTAP output"] + tail)

    def _judge_harness(self, result, text, rc):
        wanted = {"fail": EXIT_FAIL, "panic": EXIT_PANIC, "timeout": None}
        detail = []
        if rc != wanted[self.expect]:
            detail.append("expected QEMU status %s, got %s"
                          % (wanted[self.expect], rc))
        for pattern in self.output:
            if not re.search(pattern, text, re.M):
                detail.append("output lacks /%s/" % pattern)
        if detail:
            result.add("fail", "reports-" + self.expect,
                       detail + ["output:"] + text.splitlines()[-30:])
        else:
            result.add("ok", "reports-" + self.expect)


def check_plan(args):
    boots = []
    # Many vCPUs share the host's few cores: give big machines more time.
    def timeout(smp):
        return 180 + 4 * smp

    for smp in args.smp:
        boots.append(Boot("smp=%d" % smp, "test=all", smp, timeout(smp)))
    # perfmon with narrow software counters: polling, then the emulated
    # overflow interrupt (test=all above runs them at width 64).
    for smp in args.smp:
        boots.append(Boot("smp=%d,w16,poll" % smp,
                          "test=perfmon,pmu_soft,perfmon_torture "
                          "pmu_soft.width=16 pmu_soft.intr=0", smp,
                          timeout(smp)))
        boots.append(Boot("smp=%d,w12,intr" % smp,
                          "test=perfmon,pmu_soft,perfmon_torture "
                          "pmu_soft.width=12 pmu_soft.intr=1", smp,
                          timeout(smp)))
    # The serial shell, driven as a user would: every command answers.
    smp = max(args.smp)
    prompt = r"perfmon> $"
    boots.append(Boot("shell", "", smp, timeout=timeout(smp), script=[
        (prompt, "help\r"),
        (r"^  cpus\s+list the processors$", None),
        (r"^  poweroff\s+stop the machine$", None),
        (prompt, "cpus\r"),
        (r"(?:^cpu\d+ apic \d+ online ticks \d+\n){%d}" % smp, None),
        (prompt, "threads\r"),
        (r"^main\s+\d+\s+running\s+4\s+\d+$", None),
        (prompt, "syscnt thread_\r"),
        (r"^thread_switches/0\s+\d+$", None),
        (prompt, "perf list\r"),
        (r"^  instructions\s+(available|unavailable)$", None),
        (r"^  cswitch\s+available$", None),
        (r"^  emit7\s+available$", None),
        (prompt, "perf stat cpu 0 tick,cswitch,emit 300\r"),
        (r"^perf stat cpu 0, 300 ms:\n\s+(29|[3-9]\d|\d{3,})  tick\n"
         r"\s+\d+  cswitch\n\s+0  emit$", None),
        (prompt, "perf stat thread main xcall 50\r"),
        (r"^perf stat thread main, 50 ms:\n\s+0  xcall$", None),
        (prompt, "perf stat cpu 99 tick 10\r"),
        (r"^perf: bad CPU: EINVAL \(invalid argument\)$", None),
        (prompt, "perf stat cpu 0 nosuchevent 10\r"),
        (r"^perf: unknown event 'nosuchevent' \(see perf list\)$", None),
        (prompt, "bogus\r"),
        (r"^bogus: unknown command", None),
        (prompt, "poweroff\r"),
        (r"^powering off$", None)]))
    # The runner's own checks: a failing test, a panic and a hang are each
    # reported as failures with their details.
    boots.append(Boot("harness", "test=selftest.deliberate_failure", 1,
                      timeout=60, expect="fail",
                      output=[r"^# FAIL tests/test_selftest\.c:\d+: "
                              r"1 \+ 1 == 3: 2 \(0x2\) vs 3 \(0x3\)$",
                              r"^not ok 1 selftest\.deliberate_failure$"]))
    boots.append(Boot("harness", "test=crash.page_fault", 1, timeout=60,
                      expect="panic",
                      output=[r"^panic: cpu0: page fault at rip=0x[0-9a-f]+ "
                              r"cr2=0xdead000 ",
                              r"^  #0  0x[0-9a-f]+ test_fn_crash_page_fault\+",
                              r"^  #1  0x[0-9a-f]+ test_run_(one|all)\+",
                              r"^rax=0x"]))
    boots.append(Boot("harness", "test=selftest.hang", 1, timeout=8,
                      expect="timeout", output=[r"^# hanging on purpose$"]))
    return boots


def run_host_tests(args):
    result = Result("host")
    for name in args.host_list.split():
        path = os.path.join(args.host_tests, "test_" + name)
        proc = subprocess.run([path], capture_output=True, text=True)
        plan, seen = parse_ktap(proc.stdout, result, name + ".")
        if proc.returncode != 0 and result.failed == 0:
            result.add("fail", name, (proc.stdout + proc.stderr)
                       .splitlines()[-30:])
        if plan is None or seen < plan:
            result.add("fail", name + ".missing-results",
                       (proc.stdout + proc.stderr).splitlines()[-30:])
    return result


def cmd_check(args):
    accel, reason = choose_accel(args.accel)
    boots = check_plan(args)
    print("runner: accelerator %s (%s); %d boots, %d at a time"
          % (accel, reason, len(boots), args.jobs), flush=True)
    totals = [0, 0, 0]
    results = []

    def account(res):
        print("\n".join(res.lines), flush=True)
        totals[0] += res.passed
        totals[1] += res.failed
        totals[2] += res.skipped

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(b.run, args, accel) for b in boots]
        for fut in futures:
            results.append(fut.result())
            account(results[-1])

    if args.host_list:
        print("== host unit tests (built with -fsanitize=address,undefined)")
        account(run_host_tests(args))

    line = "%d passed, %d failed" % (totals[0], totals[1])
    if totals[2]:
        line += ", %d skipped" % totals[2]
    print(line)
    return 1 if totals[1] else 0


def cmd_boot(args):
    """One boot of the test suite with the given command line (make
    torture)."""
    accel, reason = choose_accel(args.accel)
    print("runner: accelerator %s (%s)" % (accel, reason), flush=True)
    boot = Boot(args.name, args.cmdline, args.smp[0], timeout=args.timeout,
                pmu=args.pmu)
    res = boot.run(args, accel)
    print("\n".join(l for l in boot.text.splitlines()
                    if l.startswith("# ")))
    print("\n".join(res.lines))
    line = "%d passed, %d failed" % (res.passed, res.failed)
    if res.skipped:
        line += ", %d skipped" % res.skipped
    print(line)
    return 1 if res.failed else 0


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
                       "test=bench " + args.cmdline, icount=icount)
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
    parser.add_argument("mode", choices=["run", "check", "boot", "bench"])
    parser.add_argument("--iso", required=True)
    parser.add_argument("--smp", default="1 2 4")
    parser.add_argument("--accel", default="auto",
                        choices=["auto", "kvm", "tcg"])
    parser.add_argument("--mem", default="512M")
    parser.add_argument("--cmdline", default="")
    parser.add_argument("--gdb", action="store_true")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--pmu", action="store_true",
                        help="expose the host PMU (KVM: -cpu host,pmu=on)")
    parser.add_argument("--name", default="boot")
    parser.add_argument("--host-tests", default="")
    parser.add_argument("--host-list", default="")
    parser.add_argument("--jobs", type=int,
                        default=int(os.environ.get("JOBS", "0"))
                        or os.cpu_count() or 1)
    args = parser.parse_args()
    args.smp = [int(s) for s in args.smp.split()]
    if args.mode == "run":
        return cmd_run(args)
    if args.mode == "boot":
        return cmd_boot(args)
    if args.mode == "bench":
        return cmd_bench(args)
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
