"""The boots of make check for tools/test/runner.py (check_plan): the suite
boots, the narrow-counter boots, the serial shell and its perf record and
perf script checks, and the runner's own harness checks; and the host
tests and the check that every boot saved its serial log.
"""

import argparse  # noqa: F401  (host_test_commands' doctest)
import fnmatch
import os
import re
import subprocess
import sys

from perf_profile import (CALLTREE_CHILDREN, CALLTREE_SELF,  # noqa: E402
                     ProfileBoot, check_shares)
from runner_ktap import Boot, Result, parse_ktap


NARROW_SUITES = ("perfmon", "pmu_soft", "perfmon_torture", "perfmon_sample",
                 "perfmon_group", "perfmon_mux", "perfmon_nmi",
                 "perfmon_inherit")


# The boots of make check at more CPUs than counters: these suites, and
# the shell's.
SCALE_SMP = 16
SCALE_SUITES = ("perfmon_sample", "perfmon_mux")


def narrow_selection(tests):
    """The entries of a TESTS selection that may select tests of the suites
    the narrow-counter boots run (NARROW_SUITES), as a test= value; ""
    when none may, and that boot is left out.

    >>> narrow_selection("kmem,perfmon.*")
    'perfmon.*'
    >>> narrow_selection("perfmon*,timer.x")
    'perfmon*'
    >>> narrow_selection("kmem,timer")
    ''
    >>> narrow_selection("all")
    'perfmon,pmu_soft,perfmon_torture,perfmon_sample,perfmon_group,perfmon_mux,perfmon_nmi,perfmon_inherit'
    """
    if tests in ("", "all"):
        return ",".join(NARROW_SUITES)
    keep = []
    for entry in tests.split(","):
        suite = entry.split(".", 1)[0]
        if any(fnmatch.fnmatchcase(s, suite) for s in NARROW_SUITES):
            keep.append(entry)
    return ",".join(keep)


PERF_TOTALS = re.compile(r"^perf record: (\d+) samples received, (\d+) "
                         r"lost, \d+ periods throttled \(\d+ events, (\d+) "
                         r"records\); (\d+) records produced$", re.M)
PERF_FRAME = re.compile(r"^\t *[0-9a-f]+ \w+\+0x[0-9a-f]+ "
                        r"\(\[kernel\.kallsyms\]\)$", re.M)


def perf_totals_check(text):
    """Check every `perf record` totals line of a console log: None when
    each has received + lost + throttle records == produced and the first
    one received samples, else why not.

    >>> perf_totals_check("perf record: 58 samples received, 2 lost, "
    ...                   "7 periods throttled (70 events, 1 records); "
    ...                   "61 records produced\\n"
    ...                   "perf record: 0 samples received, 0 lost, "
    ...                   "0 periods throttled (0 events, 0 records); "
    ...                   "0 records produced")
    >>> perf_totals_check("perf record: 58 samples received, 2 lost, "
    ...                   "0 periods throttled (0 events, 0 records); "
    ...                   "61 records produced")
    ['58 received + 2 lost + 0 throttled != 61 produced']
    >>> perf_totals_check("perf record: 0 samples received, 0 lost, "
    ...                   "0 periods throttled (0 events, 0 records); "
    ...                   "0 records produced")
    ['no sample received']
    >>> perf_totals_check("perfmon> ")
    ['no perf record totals line']
    """
    found = [[int(v) for v in f] for f in PERF_TOTALS.findall(text)]
    if not found:
        return ["no perf record totals line"]
    problems = ["%d received + %d lost + %d throttled != %d produced"
                % tuple(f) for f in found if f[0] + f[1] + f[2] != f[3]]
    if found[0][0] == 0:
        problems.append("no sample received")
    return problems or None


PERF_KEPT = re.compile(r"^perf record: \d+ samples did not fit the \d+ KiB "
                       r"buffer \(kept the first (\d+)\)$", re.M)


def perf_convert_check(text):
    """Run tools/perf/perf-convert on a console log holding a `perf script`
    dump of a period-1 recording (every dumped sample kept): None when
    both outputs are there, with as many samples as the totals line
    received (as the buffer kept, when it filled), symbolized kernel frames, and folded weights summing to
    that count; else why not."""
    tool = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "perf", "perf-convert")
    # The recording dumped is the last one before the dump; of a buffer
    # that filled, the dump holds the samples it kept.
    before = text[:text.rfind("perfmon-dump 2 begin")]
    found = PERF_TOTALS.findall(before)
    received = int(found[-1][0]) if found else -1
    kept = PERF_KEPT.findall(before[before.rfind("perf record: "):])
    if kept:
        received = int(kept[-1])
    out = {}
    for fmt in ("script", "folded"):
        proc = subprocess.run([sys.executable, tool, "-f", fmt], input=text,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return ["perf-convert -f %s failed (status %d):" % (
                fmt, proc.returncode)] + proc.stderr.splitlines()[-10:]
        out[fmt] = proc.stdout
    problems = []
    nr_samples = len(re.findall(r"^\S", out["script"], re.M))
    if nr_samples != received:
        problems.append("perf script text has %d samples, perf record "
                        "received %d" % (nr_samples, received))
    if not PERF_FRAME.search(out["script"]):
        problems.append("no symbolized kernel frame in the perf script "
                        "text")
    weights = [int(l.rsplit(" ", 1)[1]) for l in out["folded"].splitlines()]
    if sum(weights) != received:
        problems.append("folded stacks weigh %d, perf record received %d"
                        % (sum(weights), received))
    return (problems + ["perf script text:"]
            + out["script"].splitlines()[:20]) if problems else None


CALLTREE_REPORT = re.compile(
    r"^# Samples: \d+ of event 'emit', period 1, target calltree \d+, "
    r"\d+ ms\n(.*?)^#\n# \d+ received", re.M | re.S)
REPORT_LINE = re.compile(r"^\s+([\d.]+)%\s+([\d.]+)%\s+\d+  (\S+)$", re.M)


def calltree_report_check(text):
    r"""The shell's perf report of the calltree workload, sampled on every
    emit unit: None when each function's Self and Children shares are the
    workload's (kern/perf/perf_work.h) within perf_profile.SHARE_BOUND points, else
    why not.

    >>> good = ("# Samples: 1000 of event 'emit', period 1, target "
    ...         "calltree 50, 40 ms\n# Event count: 1000\n#\n"
    ...         + "".join("  %d.00%%  %d.00%%  1  %s\n"
    ...                   % (CALLTREE_CHILDREN[n], CALLTREE_SELF[n], n)
    ...                   for n in sorted(CALLTREE_SELF))
    ...         + "#\n# 1000 received")
    >>> calltree_report_check(good)
    >>> calltree_report_check(good.replace("  40.00%  1  perf_work_tree_sh",
    ...                                    "  30.00%  1  perf_work_tree_sh"))
    ['perf report: perf_work_tree_shared self 30.00%, want 40% +- 2']
    """
    m = CALLTREE_REPORT.search(text)
    if m is None:
        return ["no perf report of the calltree workload"]
    shares = {name: (float(kids), float(own))
              for kids, own, name in REPORT_LINE.findall(m.group(1))}
    return check_shares(shares, "perf report") or None


FREQ_REPORT = re.compile(r"^# Samples: (\d+) of event '\w+', frequency "
                         r"(\d+) Hz, target [^,]+, (\d+) ms$", re.M)
SECTION = re.compile(r"^# Samples: (\d+) of event '(\w+)', ", re.M)
RECEIVED = re.compile(r"^# (\d+) received, ", re.M)


def freq_report_check(text):
    """The shell's perf report of a recording at a frequency: None when
    its samples are the frequency times the recording's length within a
    factor of 2 (the event's rate is far above it; the first tick, at
    period 1, may add a burst), else why not.

    >>> freq_report_check("# Samples: 120 of event 'emit', frequency 200 "
    ...                   "Hz, target spin 500, 510 ms")
    >>> freq_report_check("# Samples: 20 of event 'emit', frequency 200 "
    ...                   "Hz, target spin 500, 510 ms")
    ['perf record -F 200: 20 samples in 510 ms, want 51 to 204']
    """
    m = FREQ_REPORT.search(text)
    if m is None:
        return ["no perf report of a recording at a frequency"]
    nr, freq, ms = (int(g) for g in m.groups())
    low, high = freq * ms // 2000, freq * ms * 2 // 1000
    if not low <= nr <= high:
        return ["perf record -F %d: %d samples in %d ms, want %d to %d"
                % (freq, nr, ms, low, high)]
    return None


def multi_report_check(text):
    r"""The shell's perf report of a recording of emit and tick: None when
    it has a section per event, in order, each with samples, together
    every sample received, else why not.

    >>> good = ("perfmon> perf record -e emit/10,tick -- spin 200\n"
    ...         "# Samples: 7 of event 'emit', period 10, x\n#\n"
    ...         "# Samples: 2 of event 'tick', period 1, x\n#\n"
    ...         "# 9 received, 0 lost")
    >>> multi_report_check(good)
    >>> multi_report_check(good.replace("# 9 received", "# 8 received"))
    ['perf report: sections of emit, tick hold 9 samples, 8 received']
    """
    start = text.find("perfmon> perf record -e emit/10,tick")
    m = RECEIVED.search(text, max(start, 0))
    if start < 0 or m is None:
        return ["no perf report of a recording of emit and tick"]
    sections = SECTION.findall(text[start:m.start()])
    names = [name for _, name in sections]
    if names != ["emit", "tick"] or any(int(n) == 0 for n, _ in sections):
        return ["perf report: sections %s, want emit and tick, each with "
                "samples" % sections]
    total = sum(int(n) for n, _ in sections)
    if total != int(m.group(1)):
        return ["perf report: sections of emit, tick hold %d samples, %s "
                "received" % (total, m.group(1))]
    return None


PERF_TOTALS_ALL = re.compile(r"^perf record: (\d+) samples received, (\d+) "
                             r"lost, (\d+) periods throttled \((\d+) events, "
                             r"(\d+) records\); (\d+) records produced$", re.M)
THROTTLE_RUN = "perf record -e emit -c 1 -- calltree 60"


def throttle_totals_check(text):
    """The shell's perf record of 1200 units at period 1, above a tick's
    budget of samples when they come within one tick: None when the
    samples plus the throttled periods are the units (less what was
    lost), each throttled period one event, else why not.

    >>> throttle_totals_check(THROTTLE_RUN + "\\nperf record: 1000 samples "
    ...     "received, 0 lost, 200 periods throttled (200 events, 1 "
    ...     "records); 1001 records produced")
    >>> throttle_totals_check(THROTTLE_RUN + "\\nperf record: 1000 samples "
    ...     "received, 0 lost, 1 periods throttled (1 events, 1 "
    ...     "records); 1001 records produced")
    ['perf record: 1000 samples + 1 throttled periods (0 lost), want 1200']
    """
    start = text.find(THROTTLE_RUN)
    m = PERF_TOTALS_ALL.search(text, max(start, 0))
    if start < 0 or m is None:
        return ["no perf record totals of " + THROTTLE_RUN]
    received, lost, periods, events, _, _ = (int(g) for g in m.groups())
    problems = []
    if not received + periods <= 1200 <= received + periods + lost:
        problems.append("perf record: %d samples + %d throttled periods "
                        "(%d lost), want 1200" % (received, periods, lost))
    if events != periods:
        problems.append("perf record: %d throttled periods of 1 hold %d "
                        "events" % (periods, events))
    return problems or None


def perf_record_checks(text):
    """The shell boot's checks of perf record and perf script."""
    return [("perf_record_totals", perf_totals_check(text)),
            ("perf_record_throttle_totals", throttle_totals_check(text)),
            ("perf_convert_accepts_dump", perf_convert_check(text)),
            ("calltree_report_shares", calltree_report_check(text)),
            ("freq_report_samples", freq_report_check(text)),
            ("multi_report_split", multi_report_check(text))]


# The model boots (make check-model): the suites that take their device
# from tests/perfmon/perfmon_util.h, in the model kernel
# (build/perfmon-model.iso) on modelled Intel and AMD PMUs
# (arch/x86/pmu/model/pmu_model_kern.h): real widths, then narrow ones
# where wraps are frequent, with the PMI as an NMI (the default) and as
# the maskable vector. The multiplexing suite counts its slots in
# counters that take any event: on Intel, 8 general counters and no fixed
# one, as the software PMU has. Each entry: name, CPUs, suites, words.
MODEL_SUITES = ("perfmon", "perfmon_group")
MODEL_MUX = MODEL_SUITES + ("perfmon_mux",)
MODEL_INTEL_GENERAL = "pmu_model.counters=8 pmu_model.fixed=0"
MODEL_BOOTS = (
    ("intel-v5,smp=2", 2, MODEL_SUITES, "pmu_model=intel"),
    ("intel-v5,general,smp=2", 2, MODEL_MUX,
     "pmu_model=intel " + MODEL_INTEL_GENERAL),
    ("intel-v5,w16,nmi,smp=2", 2, MODEL_MUX,
     "pmu_model=intel pmu_model.width=16 " + MODEL_INTEL_GENERAL),
    ("intel-v5,w12,irq,smp=4", 4, MODEL_SUITES,
     "pmu_model=intel pmu_model.width=12 perfmon.pmi=irq"),
    ("intel-v2,smp=2", 2, MODEL_SUITES, "pmu_model=intel pmu_model.version=2"),
    ("intel-v1,poll,smp=2", 2, MODEL_SUITES,
     "pmu_model=intel pmu_model.version=1"),
    ("amd-v2,smp=2", 2, MODEL_SUITES, "pmu_model=amd"),
    ("amd-v2,8,smp=4", 4, MODEL_MUX, "pmu_model=amd pmu_model.counters=8"),
    ("amd-extcore,smp=2", 2, MODEL_SUITES,
     "pmu_model=amd pmu_model.amd=extcore"),
    ("amd-legacy,smp=2", 2, MODEL_SUITES,
     "pmu_model=amd pmu_model.amd=legacy"),
)
# Those make check boots too: the real width, a narrow one with NMIs,
# and AMD's.
MODEL_CHECK = ("intel-v5,general,smp=2", "intel-v5,w16,nmi,smp=2",
               "amd-v2,8,smp=4")


def model_plan(args, names=None, iso=None):
    """The boots of make check-model (those of names, default all):
    their suites (or the TESTS= selection) on each modelled PMU of
    MODEL_BOOTS, from iso (default args.iso)."""
    tests = getattr(args, "tests", "")
    extra = getattr(args, "cmdline", "")
    extra = (" " + extra) if extra else ""
    return [Boot("model:" + name, "test=%s %s%s" % (tests or ",".join(suites),
                                                   words, extra),
                 smp, 180 + 4 * smp, iso=iso)
            for name, smp, suites, words in MODEL_BOOTS
            if names is None or name in names]


def check_plan(args):
    """The boots of make check. With args.tests (TESTS=), the suite boots
    run that selection, the narrow-counter boots the part of it that may
    concern them, and the shell and runner checks are left out."""
    boots = []
    tests = getattr(args, "tests", "")
    extra = getattr(args, "cmdline", "")
    extra = (" " + extra) if extra else ""
    # Many vCPUs share the host's few cores: give big machines more time,
    # and more again when boots run beside each other (jobs at a time). On
    # 2 cores, two at a time, 64-CPU boots took 380 to 580 s, and the
    # width-8 polled one more than 872 s (its emitters pace themselves to
    # the ticks, which 64 vCPUs delay).
    jobs = max(1, getattr(args, "jobs", 1) or 1)

    def timeout(smp):
        if smp <= 8:
            return 180 + 4 * smp
        return (180 + 12 * smp) * jobs

    for smp in args.smp:
        boots.append(Boot("smp=%d" % smp, "test=%s%s" % (tests or "all",
                                                        extra),
                          smp, timeout(smp)))
    # perfmon with narrow software counters, polled and with the emulated
    # overflow interrupt (test=all above runs them at width 64); width 8
    # makes nearly every operation race a wrap. The interrupt is an NMI
    # (the default) at widths 12 and 8, at 8 with every wrap a real
    # self-NMI (pmu_soft.nmi=ipi), and the maskable vector (perfmon.pmi=irq)
    # at width 8.
    narrow = narrow_selection(tests)
    for smp in args.smp if narrow else ():
        for width, mode in ((16, "poll"), (12, "nmi"), (8, "poll"),
                            (8, "nmi-ipi"), (8, "irq")):
            words = "pmu_soft.width=%d pmu_soft.intr=%d" % (
                width, 0 if mode == "poll" else 1)
            if mode != "poll":
                words += " perfmon.pmi=%s" % mode[:3]
            if mode == "nmi-ipi":
                words += " pmu_soft.nmi=ipi"
            boots.append(Boot("smp=%d,w%d,%s" % (smp, width, mode),
                              "test=%s %s%s" % (narrow, words, extra),
                              smp, timeout(smp)))
    if tests:
        return boots
    # The drivers on modelled PMUs, in the model kernel (model_plan).
    if getattr(args, "model_iso", ""):
        boots += model_plan(args, MODEL_CHECK, args.model_iso)
    # More CPUs than any device has counters: samplers share slots across
    # CPUs and threads, rotations reach only the CPUs that need them.
    if max(args.smp) < SCALE_SMP:
        boots.append(Boot("smp=%d" % SCALE_SMP,
                          "test=%s%s" % (",".join(SCALE_SUITES), extra),
                          SCALE_SMP, timeout(SCALE_SMP)))
    # The serial shell, driven as a user would: every command answers; on
    # more CPUs than counters, where perf record all must still work.
    smp = max(max(args.smp), SCALE_SMP)
    prompt = r"perfmon> $"
    count = r"^\s+[\d,]+\s+"
    # A rate per second of task-clock, no share when not multiplexed.
    rate = r"\s+#\s+\d+\.\d{3} [KMG]?/sec$"
    boots.append(Boot("shell", "", smp, timeout=timeout(smp), script=[
        (prompt, "help\r"),
        (r"^  cpus\s+list the processors$", None),
        (r"^  poweroff\s+stop the machine$", None),
        # help perf gives every subcommand's usage, whole (longer than
        # the 256 bytes printf once cut at), and help perf SUB one's.
        (prompt, "help perf\r"),
        (r"^usage: perf list \[hw \| sw\]\n  every event with a one-line "
         r"description; hw \(hardware\) or sw \(software\)\n  only those\n"
         r"usage: perf stat .*\n(?:.*\n){2,}usage: perf record ", None),
        (r"^  call chains of \d+ frames .*\n  Ctrl-C stops early\n"
         r"  workloads: spin MS \(1 to 60000\), pingpong N and calltree N "
         r"\(1 to 1000000\)\n(?=perfmon> )", None),
        (prompt, "help perf stat\r"),
        (r"^usage: perf stat ", None),
        (prompt, "help perf record\r"),
        (r"^usage: perf record ", None),
        (prompt, "help perf lsit\r"),
        (r"^help: perf has no subcommand 'lsit' \(list, stat, record, "
         r"report, annotate, script\)$", None),
        (prompt, "perf lsit\r"),
        (r"^perf: no subcommand 'lsit' \(list, stat, record, report, "
         r"annotate, script; help perf shows their usage\)$", None),
        (prompt, "cpus\r"),
        (r"(?:^cpu\d+ apic \d+ online ticks \d+\n){%d}" % smp, None),
        # Up arrow runs cpus again; Ctrl-U and Ctrl-W erase.
        (prompt, "\x1b[A\r"),
        (r"^\d+ CPUs?, TSC", None),
        (prompt, "bogus\x15threads xx\x17\r"),
        (r"^main\s+\d+\s+\d+\s+running\s+4\s+\d+$", None),
        (prompt, "cpus extra\r"),
        (r"^cpus: takes no arguments \(got 'extra'\)$", None),
        (prompt, "syscnt thread_\r"),
        (r"^thread_switches/0\s+\d+$", None),
        (prompt, "syscnt nosuch\r"),
        (r"^syscnt: no counter name starts with 'nosuch'$", None),
        (prompt, "perf list\r"),
        (r"^  instructions\s+instructions retired", None),
        (r"^  cswitch\s+context switches", None),
        (r"^  emit7\s+units code emits on channel 7", None),
        (prompt, "perf stat cpu 0 tick,cswitch,emit 300\r"),
        (r"^ Performance counter stats for 'cpu 0':\n\n"
         r"\s+(29|[3-9]\d|\d{3,})\s+tick" + rate + "\n"
         + count + r"cswitch" + rate + "\n"
         r"\s+0\s+emit" + rate + r"\n\n\s+0\.\d{3} seconds time elapsed$",
         None),
        # A workload, Linux names, a row that cannot be counted.
        (prompt, "perf stat emit,cs,raw:0xffffffff -- pingpong 100\r"),
        (r"^ Performance counter stats for 'pingpong 100':\n\n"
         r"\s+200\s+emit" + rate + "\n" + count + r"cs" + rate + "\n"
         r"\s+<not supported>\s+raw:0xffffffff\n\n"
         r"\s+\d+\.\d{3} seconds time elapsed$", None),
        (prompt, "perf stat all emit,tick -- spin 200\r"),
        (r"^ Performance counter stats for 'all %d CPUs?':\n\n"
         % smp + count + r"emit" + rate + "\n" + count + "tick" + rate,
         None),
        # Ctrl-C ends a long count early and prints it.
        (prompt, "perf stat cpu 0 tick 60000\r"),
        (r"perf stat cpu 0 tick 60000\n", "\x03"),
        (r"^\^C\n\n Performance counter stats for 'cpu 0':\n\n" + count
         + "tick" + rate, None),
        # A group, with each count's times (no multiplexing: running is
        # enabled, 100%).
        (prompt, "perf stat -g -v cpu 0 tick,emit,cs 300\r"),
        (r"^tick: (\d+) (\d+) \2\nemit: 0 \2 \2\ncs: \d+ \2 \2\n\n"
         r" Performance counter stats for 'cpu 0':\n\n"
         r"\s+(29|[3-9]\d|\d{3,})\s+tick" + rate + "\n"
         r"\s+0\s+emit" + rate + "\n" + count + r"cs" + rate, None),
        # Twelve raw events on the eight software counters take turns:
        # each runs part of the time, and the count is scaled.
        (prompt, "perf stat cpu 0 emit,emit1,emit2,emit3,emit4,emit5,"
                 "emit6,emit7,emit8,emit9,emit10,tick 500\r"),
        (r"^ Performance counter stats for 'cpu 0':\n\n(?:\s+0\s+emit\d*"
         r"\s+#\s+0\.000 /sec\s+\((?!100\.00)\d+\.\d{2}%\)\n){11}"
         + count + r"tick\s+#\s+\d+\.\d{3} /sec\s+\((?!100\.00)\d+\.\d{2}%\)$",
         None),
        (prompt, "perf stat -x cpu 0 tick 10\r"),
        (r"^perf stat: -x takes one separator character, as -x, \(got "
         r"'cpu'\)$", None),
        (prompt, "perf stat -g cpu 0 tick,raw:0xffffffff 10\r"),
        (r"^perf stat: the group cannot count: .*\n"
         r"perf: no event can be counted$", None),
        (prompt, "perf stat thread main xcall 50\r"),
        (r"^ Performance counter stats for 'thread main':\n\n"
         r"\s+0\s+xcall" + rate, None),
        (prompt, "perf stat cpu 99 tick 10\r"),
        (r"^perf: no CPU 99: CPUs are 0 to %d$" % (smp - 1), None),
        (prompt, "perf stat cpu 0 nosuchevent 10\r"),
        (r"^perf stat: 'nosuchevent' is neither an event \(see perf list\) "
         r"nor a workload: the workloads are spin MS, pingpong N and "
         r"calltree N, after --, as -- spin 100$", None),
        (prompt, "perf stat -e nosuchevent cpu 0 10\r"),
        (r"^perf: unknown event 'nosuchevent' \(see perf list\)$", None),
        (prompt, "perf stat cpu 0 raw:0xffffffff 10\r"),
        (r"^perf: no event can be counted$", None),
        # The sampling profiler: a timer profile of every CPU, its report
        # and its dump (perf_record_checks checks the totals and converts
        # the dump of this period-1 recording); then bad input.
        (prompt, "perf report\r"),
        (r"^perf: no recording yet \(perf record first\)$", None),
        (prompt, "perf record -c 1 all tick 300\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf report\r"),
        (r"^# Samples: \d+ of event 'tick', period 1, target all, 300 ms\n"
         r"# Event count: \d+\n"
         r"#\n# Children      Self   Samples  Symbol\n#\n"
         r"(?:\s+\d+\.\d\d%\s+\d+\.\d\d%\s+\d+  (?:\w+|\[unknown\])\n)*"
         r"\s+\d+\.\d\d%\s+\d+\.\d\d%\s+\d+  [A-Za-z_]\w*\n"
         r"(?:\s+\d+\.\d\d%\s+\d+\.\d\d%\s+\d+  (?:\w+|\[unknown\])\n)*"
         r"(?:\s+\d+\.\d\d%\s+\(other entries: self\)\n)?"
         r"#\n# \d+ received, \d+ lost, \d+ periods throttled \(\d+ "
         r"events, \d+ records\); \d+ produced$",
         None),
        (prompt, "perf script\r"),
        (r"^perfmon-dump 2 begin cpus=%d tsc_hz=\d+ event=tick period=1 "
         r"freq=0 frames=8 ms=300 target=all$" % smp, None),
        (r"^perfmon-dump 2 end lines=\d+$", None),
        (prompt, "perf record thread main cswitch/2 50\r"),
        (PERF_TOTALS.pattern, None),
        # The calltree workload, sampled on every emit unit: its report
        # (calltree_report_check checks the shares), its callers' tree,
        # other sort keys, one function's addresses; the other workloads
        # and Linux perf's option spellings.
        (prompt, "perf record -e emit -c 1 -- calltree 50\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf report\r"),
        (r"^# Samples: \d+ of event 'emit', period 1, target calltree 50, "
         r"\d+ ms\n", None),
        (prompt, "perf report -g --no-children\r"),
        (r"^\s+\d+\.\d\d%\s+\d+  perf_work_tree_shared\n\s+\|\n"
         r"\s+\|--\d+\.\d\d%--perf_work_tree_(?:alpha|beta)\n"
         r"\s+\|\s+perf_work_tree_root$", None),
        (prompt, "perf report --no-children --sort thread,cpu\r"),
        (r"^# Overhead   Samples  Thread\s+CPU\n#\n"
         r"\s+100\.00%\s+\d+  calltree\s+\d{3}$", None),
        (prompt, "perf annotate perf_work_tree_shared\r"),
        (r"^# perf annotate perf_work_tree_shared: 0x[0-9a-f]+, \d+ bytes; "
         r"\d+ samples, \d+\.\d\d% of event 'emit'\n#\n#  Percent.*\n#\n"
         r"\s+\d+\.\d\d%\s+\d+  0x[0-9a-f]+  perf_work_tree_shared\+0x"
         r"[0-9a-f]+$", None),
        (prompt, "perf annotate nosuch\r"),
        (r"^perf annotate: no function named 'nosuch' in the kernel$", None),
        (prompt, "perf report --sort nosuch\r"),
        (r"^perf report: bad sort keys 'nosuch' \(symbol, thread, cpu, "
         r"comma-separated\)$", None),
        # Past a tick's budget when it comes within a tick: the throttled
        # periods and events count (throttle_totals_check).
        (prompt, THROTTLE_RUN + "\r"),
        (PERF_TOTALS.pattern, None),
        # A frequency instead of a period (freq_report_check counts the
        # samples); several events in one recording, a report section and
        # a period each (multi_report_check: the sections share out the
        # samples received).
        (prompt, "perf record -F 200 -e emit -- spin 500\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf report --no-children\r"),
        (r"^# Samples: \d+ of event 'emit', frequency 200 Hz, target spin "
         r"500, \d+ ms\n", None),
        (prompt, "perf record -e emit/10,tick -- spin 200\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf report --no-children --sort thread\r"),
        (r"^# Samples: \d+ of event 'emit', period 10, target spin 200, "
         r"\d+ ms\n", None),
        (r"^# Samples: \d+ of event 'tick', frequency 4000 Hz, target spin "
         r"200, \d+ ms\n", None),
        (prompt, "perf record -F 0 all tick 10\r"),
        (r"^perf: bad frequency '0': 1 to 100000 samples a second$", None),
        (prompt, "perf record -F 100 -c 10 all tick 10\r"),
        (r"^perf: -c and -F exclude each other$", None),
        (prompt, "perf record -a -e tick -- spin 100\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf record cswitch -- pingpong 100\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf record -e emit -- calltree 0\r"),
        (r"^perf: workload must be spin MS", None),
        (prompt, "perf script --capture\r"),
        (r"^perf script: no capture channel: boot QEMU with -debugcon "
         r"file:PATH", None),
        (prompt, "perf record all nosuch 10\r"),
        (r"^perf record: 'nosuch' is neither an event \(see perf list\) "
         r"nor a workload: ", None),
        (prompt, "perf record -e nosuch all 10\r"),
        (r"^perf: unknown event 'nosuch' \(see perf list\)$", None),
        (prompt, "perf record all tick/0 10\r"),
        (r"^perf: bad period '0': 1 to 2\^62 events per sample$", None),
        (prompt, "perf record cpu 99 tick 10\r"),
        (r"^perf: bad CPU '99': EINVAL \(0 to %d, online\)$" % (smp - 1),
         None),
        (prompt, "perf record thread nosuch tick 10\r"),
        (r"^perf: no thread named 'nosuch' \(see threads\)$", None),
        (prompt, "perf record all tick 0\r"),
        (r"^perf: duration must be 1 to 60000 ms$", None),
        (prompt, "perf record all instructions 10\r"),
        (r"^perf: instructions: ENODEV ", None),
        (prompt, "perf record all tick\r"),
        (r"^perf record: for how long\? MS \(1 to 60000\) after the event, "
         r"or a workload after --$", None),
        (prompt, "perf report extra\r"),
        (r"^perf report: unknown option 'extra' \(options: -g, "
         r"--no-children, --sort KEYS, --stdio, -n, -i perf\.data\)$", None),
        (prompt, "bogus\r"),
        (r"^bogus: unknown command", None),
        (prompt, "poweroff\r"),
        (r"^powering off$", None)], post=perf_record_checks))
    # make profile, small: a calltree profile through the capture channel,
    # its outputs checked, and Linux perf's report of its perf.data.
    boots.append(ProfileBoot(2, timeout(2)))
    # perf stat's Linux spellings and outputs, exact where the software
    # PMU makes them so (pingpong N emits exactly 2N units), and a
    # specific message for each bad input.
    boots.append(Boot("shell-stat", "", 2, timeout=timeout(2), script=[
        (prompt, "help perf stat\r"),
        (r"^usage: perf stat \[options\] .*\n(?:.*\n){10,}  Ctrl-C stops "
         r"early\n  workloads: spin MS \(1 to 60000\), pingpong N and "
         r"calltree N \(1 to 1000000\)\n  fanout N DEPTH: N threads under "
         r"each down to DEPTH levels \(N 1 to 4, DEPTH 0 to 4\),\n  1000 "
         r"emit units each$", None),
        # The default events, and task-clock's CPUs utilized.
        (prompt, "perf stat cpu 0 100\r"),
        (r"^ Performance counter stats for 'cpu 0':\n\n"
         r"\s+\d+\.\d\d msec task-clock\s+#\s+[01]\.\d{3} CPUs utilized\n"
         + count + "context-switches" + rate + "\n"
         + count + "cpu-migrations" + rate + "\n"
         r"(?:\s+(?:<not supported>|[\d,]+)\s+(?:cycles|instructions|"
         r"branches|branch-misses)\b.*\n){4}\n"
         r"\s+0\.\d{3} seconds time elapsed$", None),
        # -v: a clock's count is its time, enabled and running on a CPU.
        (prompt, "perf stat -v cpu 1 task-clock 50\r"),
        (r"^task-clock: (\d+) \1 \1$", None),
        # -e and -a, the duration after them.
        (prompt, "perf stat -e tick -a 100\r"),
        (r"^ Performance counter stats for 'all 2 CPUs':\n\n"
         + count + "tick" + rate, None),
        # -C list, -I intervals, -x CSV, cpu-clock; :k on software events.
        (prompt, "perf stat -I 100 -x, -C 0,1 tick:k,cpu-clock 300\r"),
        (r"^(?:\s+\d+\.\d{9},\d+,,tick:k,\d+,100\.00,\d+\.\d{3},/sec\n"
         r"\s+\d+\.\d{9},\d+\.\d\d,msec,cpu-clock,\d+,100\.00,"
         r"[012]\.\d{3},CPUs utilized\n){2,}(?=perfmon> )", None),
        # -r N: the mean and its deviation, exact for pingpong.
        (prompt, "perf stat -r 3 emit,emit:k -- pingpong 50\r"),
        (r"^ Performance counter stats for 'pingpong 50' \(3 runs\):\n\n"
         r"\s+100\s+emit\s+#\s+\d+\.\d{3} [KMG]?/sec\s+\( \+-\s+0\.00% \)\n"
         r"\s+100\s+emit:k\s+#\s+\d+\.\d{3} [KMG]?/sec\s+\( \+-\s+0\.00% \)"
         r"\n\n\s+\d+\.\d{6} \+- \d+\.\d{6} seconds time elapsed  "
         r"\( \+-\s+\d+\.\d\d% \)$", None),
        (prompt, "perf stat -x, -r 2 emit,task-clock -- pingpong 100\r"),
        (r"^200,,emit,0\.00%,\d+,100\.00,\d+\.\d{3},[KMG]?/sec\n"
         r"\d+\.\d\d,msec,task-clock,\d+\.\d\d%,\d+,100\.00,\d\.\d{3},"
         r"CPUs utilized$", None),
        # -t TID, as threads lists it: a thread that never ran is
        # <not counted>; one that runs counts.
        (prompt, "threads\r"),
        (r"^perfmon_mux\s+1\s+\d+\s+sleeping ", None),
        (r"^main\s+2\s+\d+\s+running ", None),
        (prompt, "perf stat -t 1 tick 50\r"),
        (r"^ Performance counter stats for 'thread perfmon_mux':\n\n"
         r"\s+<not counted>\s+tick$", None),
        (prompt, "perf stat -t 2 task-clock,tick 50\r"),
        (r"^ Performance counter stats for 'thread main':\n\n"
         r"\s+\d+\.\d\d msec task-clock\s+#\s+0\.\d{3} CPUs utilized\n"
         + count + "tick", None),
        # A workload's threads multiplexed (ten raw events on eight
        # counters, the clock holding none): the events scaled and
        # marked with their share, as on a CPU; the clock never marked
        # (perfmon never multiplexes it).
        (prompt, "perf stat -e task-clock,emit,emit1,emit2,emit3,emit4,"
                 "emit5,emit6,emit7,emit8,emit9 -- spin 300\r"),
        (r"^ Performance counter stats for 'spin 300':\n\n"
         r"\s+\d+\.\d\d msec task-clock\s+#\s+[01]\.\d{3} CPUs utilized\n"
         + count + r"emit\s+#\s+\d+\.\d{3} [KMG]?/sec\s+\(\d+\.\d\d%\)\n"
         r"(?:\s+(?:[\d,]+|<not counted>)\s+emit\d\b.*\n){9}\n", None),
        # A clock takes no counter: eight raw events and task-clock on
        # eight counters, on every CPU, and nothing is multiplexed (no
        # line has a share); when its carrier took a counter, the emits
        # that waited were marked (75.01%, 86.90%, ...).
        (prompt, "perf stat -a -e task-clock,emit,emit1,emit2,emit3,emit4,"
                 "emit5,emit6,emit7 100\r"),
        (r"^ Performance counter stats for 'all 2 CPUs':\n\n"
         r"\s+\d+\.\d\d msec task-clock\s+#\s+[012]\.\d{3} CPUs utilized\n"
         r"(?:\s+[\d,]+\s+emit\d?\s+#\s+\d+\.\d{3} [KMG]?/sec\n){8}\n"
         r"\s+0\.\d{3} seconds time elapsed$", None),
        # Nine raw events on eight counters, every CPU, with -v: the
        # emits take turns (those that waited are marked), the clock is
        # never marked, and its count, time enabled and time running are
        # one time (it was marked with its carrier's share, 75.17%).
        (prompt, "perf stat -v -a -e cpu-clock,emit,emit1,emit2,emit3,emit4,"
                 "emit5,emit6,emit7,emit8 100\r"),
        (r"^cpu-clock: (\d+) \1 \1\n(?:emit\d?: \d+ \d+ \d+\n){9}\n"
         r" Performance counter stats for 'all 2 CPUs':\n\n"
         r"\s+\d+\.\d\d msec cpu-clock\s+#\s+[012]\.\d{3} CPUs utilized\n"
         r"(?:\s+[\d,]+\s+emit\d?\s+#\s+\d+\.\d{3} [KMG]?/sec"
         r"(?:\s+\(\d+\.\d\d%\))?\n){9}\n", None),
        # A workload's events follow the threads it creates (inherited, as
        # Linux's): fanout 2 2's seven threads, 1000 units each, every one
        # counted, each exactly with --per-thread (the first thread
        # first; task-clock, a clock, is not inherited: the first thread's);
        # -i (--no-inherit) counts the first thread only.
        (prompt, "perf stat --per-thread -e emit,task-clock -- fanout 2 2\r"),
        (r"^ Per-thread counts for 'fanout 2 2':\n\n"
         r"(?:\s+fanout-\d+\s+1,000\s+emit\n){7}"
         r"\s+fanout-\d+\s+[\d,]+\.\d\d msec task-clock\n\n"
         r" Performance counter stats for 'fanout 2 2':\n\n"
         r"\s+7,000\s+emit\s+#.*\n"
         r"\s+[\d,]+\.\d\d msec task-clock\s+#\s+\d\.\d{3} CPUs "
         r"utilized$", None),
        (prompt, "perf stat -i -e emit -- fanout 2 2\r"),
        (r"^ Performance counter stats for 'fanout 2 2':\n\n"
         r"\s+1,000\s+emit\s+#.*$", None),
        (prompt, "perf stat -x, --no-inherit --per-thread emit,cs -- "
                 "fanout 3 1\r"),
        (r"^fanout-\d+,1000,,emit\nfanout-\d+,\d+,,cs\n1000,,emit,", None),
        (prompt, "perf stat -g emit,cs -- fanout 1 3\r"),
        (r"^ Performance counter stats for 'fanout 1 3':\n\n"
         r"\s+4,000\s+emit\s+#.*$", None),
        # Input typed while perf stat runs is kept: Ctrl-C is taken, the
        # line typed before it runs after.
        (prompt, "perf stat cpu 0 tick 60000\r"),
        (r"perf stat cpu 0 tick 60000\n", "cpus\r\x03"),
        (r"^\^C\n\n Performance counter stats for 'cpu 0':\n\n" + count
         + "tick" + rate, None),
        (r"^perfmon> cpus\n2 CPUs, TSC", None),
        # Bad input: each names what was wrong and what is allowed.
        (prompt, "perf stat tick 100\r"),
        (r"^perf stat: nothing to count on: name a target \(cpu N, all, "
         r"thread NAME; -C CPUS, -a, -t TID\) or a workload \(-- spin MS, "
         r"-- pingpong N, -- calltree N\)$", None),
        (prompt, "perf stat cpu 0 tick\r"),
        (r"^perf stat: for how long\? MS \(1 to 60000\) after the events, "
         r"or a workload after --$", None),
        (prompt, "perf stat cpu 0 tick 10 20\r"),
        (r"^perf stat: unexpected '20' after the duration \(a workload goes "
         r"after --, as -- spin 100\)$", None),
        (prompt, "perf stat -e tick cpu 0 cs 10\r"),
        (r"^perf stat: 'cs' is not a duration: MS, 1 to 60000 \(the events "
         r"are -e's\)$", None),
        (prompt, "perf stat -a cpu 1 tick 10\r"),
        (r"^perf stat: two targets \('-a' and 'cpu'\): name one$", None),
        (prompt, "perf stat -z cpu 0 tick 10\r"),
        (r"^perf stat: unknown option '-z' \(-e EVENTS, -a, -C CPUS, -t TID, "
         r"-I MS, -r N, -x SEP, -g, -v, -i, --per-thread, or their long "
         r"names\)$", None),
        (prompt, "perf stat cpu 0 tick 10 -C\r"),
        (r"^perf stat: -C needs a value: CPUS, as 0,2-3$", None),
        (prompt, "perf stat -C 5 tick 10\r"),
        (r"^perf: no CPU 5: CPUs are 0 to 1$", None),
        (prompt, "perf stat -C 1-0 tick 10\r"),
        (r"^perf: bad CPU list '1-0': CPU numbers 0 to 1, as 0,2-3$", None),
        (prompt, "perf stat -r 0 cpu 0 tick 10\r"),
        (r"^perf stat: bad run count \(-r\) '0': 1 to 100$", None),
        (prompt, "perf stat -I 100 -r 2 cpu 0 tick 10\r"),
        (r"^perf stat: -I and -r do not go together$", None),
        (prompt, "perf stat -t 0 tick 10\r"),
        (r"^perf: thread id 0 is the idle threads, one per CPU: count a "
         r"CPU's idle time with -C N$", None),
        (prompt, "perf stat -t 99999 tick 10\r"),
        (r"^perf: no thread with id 99999 \(it ended, or never was\)$", None),
        (prompt, "perf stat cpu 0 tick:u 10\r"),
        (r"^perf: 'tick:u': software events and clocks happen in kernel "
         r"mode only, so :u counts nothing \(drop it, or use :k\)$", None),
        (prompt, "perf stat cpu 0 cycles:x 10\r"),
        (r"^perf: 'cycles:x': no modifier 'x' \(:k kernel, :u user, :ku "
         r"both\)$", None),
        (prompt, "perf stat cpu 0 tick -- spin\r"),
        (r"^perf stat: after -- comes one workload: spin MS \(1 to 60000\), "
         r"pingpong N or calltree N \(1 to 1000000\), fanout N DEPTH$",
         None),
        (prompt, "perf stat cpu 0 tick -- sleep 10\r"),
        (r"^perf stat: the workload is spin MS \(1 to 60000\), pingpong N "
         r"or calltree N \(1 to 1000000\), fanout N DEPTH \(N 1 to 4, "
         r"DEPTH 0 to 4\), not 'sleep 10'$", None),
        (prompt, "perf stat emit -- fanout 5 1\r"),
        (r"^perf stat: the workload is .*, not 'fanout 5 1'$", None),
        (prompt, "perf stat emit -- spin 10 10\r"),
        (r"^perf stat: the workload is .*, not 'spin 10 10'$", None),
        (prompt, "perf stat --per-thread cpu 0 emit 10\r"),
        (r"^perf stat: --per-thread counts a workload's threads: give one "
         r"after --$", None),
        # Nine events in a group on eight counters: one line says why.
        (prompt, "perf stat -g cpu 0 emit,emit1,emit2,emit3,emit4,emit5,"
                 "emit6,emit7,emit8 10\r"),
        (r"^perf stat: the group cannot count: 9 distinct events, 8 counters "
         r"\(E2BIG\)\nperf: no event can be counted$", None),
        (prompt, "poweroff\r"),
        (r"^powering off$", None)]))
    # Linux perf 6.x's command lines: long lines, shell quoting, event
    # groups in braces, the default frequency of perf record, and a
    # message naming the word at fault for each bad option or word.
    long_events = ("context-switches:k,cpu-migrations:k,emit:k,emit,"
                   "task-clock,cpu-clock,context-switches,cpu-migrations")
    pad = "perf stat cpu 0 tick 10"
    boots.append(Boot("shell-linux", "", 2, timeout=timeout(2), script=[
        # A line of more than 127 characters (8 events: no multiplexing,
        # pingpong's emits exact), and one of exactly 1024 runs; 1025
        # are refused.
        (prompt, "perf stat -x, -e %s -- pingpong 100\r" % long_events),
        (r"^\d+,,context-switches:k,.*\n\d+,,cpu-migrations:k,.*\n"
         r"200,,emit:k,.*\n200,,emit,.*\n[\d.]+,msec,task-clock,.*\n"
         r"[\d.]+,msec,cpu-clock,.*\n\d+,,context-switches,.*\n"
         r"\d+,,cpu-migrations,", None),
        (prompt, pad + " " * (1024 - len(pad)) + "\r"),
        (r"^ Performance counter stats for 'cpu 0':", None),
        (prompt, pad + " " * (1025 - len(pad)) + "\r"),
        (r"^line too long: 1024 characters at most, not run$", None),
        # Quotes as a POSIX shell's: the group of the example,
        # quoted parts joined, a backslash.
        (prompt, "perf stat -e '{emit,emit}' -- spin 10\r"),
        (r"^ Performance counter stats for 'spin 10':\n\n"
         r"\s+([\d,]+)\s+emit\s.*\n\s+\1\s+emit\s", None),
        (prompt, "perf stat -e \"emit\"',emit:k' -- pingpong 50\r"),
        (r"^\s+100\s+emit\s.*\n\s+100\s+emit:k\s", None),
        (prompt, "perf stat -e emit\\,emit1 -- pingpong 50\r"),
        (r"^\s+100\s+emit\s.*\n\s+0\s+emit1\s", None),
        (prompt, "perf stat -e 'emit -- spin 10\r"),
        (r"^unterminated single quote \('\), not run$", None),
        (prompt, "perf stat -e \"emit -- spin 10\r"),
        (r"^unterminated double quote \(\"\), not run$", None),
        (prompt, "perf stat -e emit \\\r"),
        (r"^a backslash ends the line and escapes nothing, not run$", None),
        (prompt, "perf stat" + " x" * 63 + "\r"),
        (r"^too many words: 64 at most, not run$", None),
        # A group with modifiers for every member, beside an event that
        # counts alone: the members share their times (one group), the
        # single event has its own.
        (prompt, "perf stat -v -e '{emit,tick}:k,cs' -C 0 100\r"),
        (r"^emit:k: 0 (\d+) \1\ntick:k: (\d+) \1 \1\ncs: \d+ \d+ \d+\n\n"
         r" Performance counter stats for 'cpu 0':\n\n"
         r"\s+0\s+emit:k\s.*\n\s+\2\s+tick:k\s.*\n\s+\d+\s+cs\s", None),
        (prompt, "perf stat -e '{emit,emit1}:u' -C 0 10\r"),
        (r"^perf: 'emit:u': software events and clocks happen in kernel "
         r"mode only, so :u counts nothing \(drop it, or use :k\)$", None),
        (prompt, "perf stat -e '{emit,tick},{cs}' -C 0 10\r"),
        (r"^perf stat: one event group at most \('\{emit,tick\},\{cs\}' has "
         r"a second\)$", None),
        (prompt, "perf stat -e '{emit,tick' -C 0 10\r"),
        (r"^perf stat: '\{' without '\}' in event list '\{emit,tick'$", None),
        (prompt, "perf stat -e 'emit}' -C 0 10\r"),
        (r"^perf stat: '\}' without '\{' in event list 'emit\}'$", None),
        (prompt, "perf stat -e '{}' -C 0 10\r"),
        (r"^perf stat: empty group '\{\}' in event list '\{\}'$", None),
        (prompt, "perf stat -e '{emit,}' -C 0 10\r"),
        (r"^perf stat: empty name in event list '\{emit,\}'$", None),
        (prompt, "perf stat -e '{{emit}}' -C 0 10\r"),
        (r"^perf stat: groups do not nest, in '\{\{emit\}\}'$", None),
        (prompt, "perf stat -e '{emit:k,tick}:k' -C 0 10\r"),
        (r"^perf stat: 'emit:k' has modifiers of its own in a group with "
         r"modifiers, in '\{emit:k,tick\}:k': give them to the group or to "
         r"each member$", None),
        (prompt, "perf stat -e '{emit,tick}x' -C 0 10\r"),
        (r"^perf stat: unexpected 'x' after the group in '\{emit,tick\}x' "
         r"\(a comma, or modifiers after a colon\)$", None),
        (prompt, "perf stat -e '{emit,tick}:' -C 0 10\r"),
        (r"^perf: '\{emit,tick\}:': no modifier after ':' \(:k kernel, :u "
         r"user, :ku both; or no colon\)$", None),
        (prompt, "perf stat -e emit: -C 0 10\r"),
        (r"^perf: 'emit:': no modifier after ':' \(:k kernel, :u user, :ku "
         r"both; or no colon\)$", None),
        # Linux's perf stat COMMAND: the word named, the workloads listed.
        (prompt, "perf stat -a sleep 1\r"),
        (r"^perf stat: 'sleep' is neither an event \(see perf list\) nor a "
         r"workload: the workloads are spin MS, pingpong N and calltree N, "
         r"after --, as -- spin 100$", None),
        (prompt, "perf stat -a spin 10\r"),
        (r"^perf stat: 'spin' is a workload: it goes after --, as -- spin "
         r"100$", None),
        (prompt, "perf stat --foo -a 10\r"),
        (r"^perf stat: unknown option '--foo' \(", None),
        # Linux's long options, with = or a separate value, and aliases.
        # Clocks, so that the docs' example holds no rate of events (K/sec
        # or M/sec by the host's speed).
        (prompt, "perf stat --event=task-clock --event cpu-clock -- "
                 "pingpong 50\r"),
        (r"^ Performance counter stats for 'pingpong 50':\n\n"
         r"\s+[\d,]+\.\d\d msec task-clock\s.*\n"
         r"\s+[\d,]+\.\d\d msec cpu-clock\s", None),
        (prompt, "perf stat --verbose --cpu=0 --event=tick 50\r"),
        (r"^tick: (\d+) (\d+) \2\n\n Performance counter stats for "
         r"'cpu 0':\n\n\s+\1\s+tick\s", None),
        (prompt, "perf stat --all-cpus=1 tick 10\r"),
        (r"^perf stat: --all-cpus takes no value \(got '1'\)$", None),
        (prompt, "perf stat --event= -a 10\r"),
        (r"^perf stat: --event needs a value: EVENTS, as tick,cs \(see perf "
         r"list\)$", None),
        (prompt, "perf stat --evnt=tick -a 10\r"),
        (r"^perf stat: unknown option '--evnt=tick' \(-e EVENTS, ", None),
        (prompt, "perf stat -e cpu-cycles,branch-instructions,tick -a 10\r"),
        (r"^ Performance counter stats for 'all 2 CPUs':\n\n"
         r"\s+<not supported>\s+cpu-cycles\n"
         r"\s+<not supported>\s+branch-instructions\n", None),
        (prompt, "perf list hw\r"),
        (r"^hardware events: none counted here \(no hardware PMU\)\n"
         r"  cycles\s+core cycles while not halted \(cpu-cycles\) "
         r"\[unavailable\]\n(?:  \S+ .*\n){6}(?=perfmon> )", None),
        (prompt, "perf list sw\r"),
        (r"^software events \(pmu_soft, 8 counters of 64 bits\):\n"
         r"(?:  .*\n)+software events and clocks take :k", None),
        (prompt, "perf list hardware software\r"),
        (r"^perf list: one event class at most \(got 'software' after "
         r"'hardware'\)$", None),
        (prompt, "perf list hwx\r"),
        (r"^perf list: no event class 'hwx' \(hw or hardware, sw or "
         r"software\)$", None),
        (prompt, "perf --version\r"),
        (r"^perf version perfmon: the kernel's shell perf, with Linux perf "
         r"6\.x's spellings$", None),
        (prompt, "perf version\r"),
        (r"^perf version perfmon: ", None),
        # perf record samples at 4000 Hz by default: a workload that
        # emits a few hundred units gets samples.
        (prompt, "perf record -e emit -- pingpong 200\r"),
        (r"^perf record: [1-9]\d* samples received, .*\n"
         r"perf record: sampled at 4000 Hz \(the default -F; -c PERIOD or "
         r"EVENT/PERIOD for a fixed period\)$", None),
        (prompt, "perf report --no-children --sort thread\r"),
        (r"^# Samples: [1-9]\d* of event 'emit', frequency 4000 Hz, target "
         r"pingpong 200, \d+ ms\n", None),
        (prompt, "perf report --sort\r"),
        (r"^perf report: --sort needs a value: KEYS, symbol, thread, cpu, "
         r"comma-separated$", None),
        (prompt, "perf report --sort=\r"),
        (r"^perf report: no sort keys given: KEYS, symbol, thread, cpu, "
         r"comma-separated$", None),
        (prompt, "perf report --sort=thread --no-children\r"),
        (r"^# Overhead   Samples  Thread\s*\n", None),
        # -n (the Samples column is always there) and -i perf.data (the
        # last recording: there are no files) are Linux's.
        (prompt, "perf report -n -i perf.data --no-children --sort pid\r"),
        (r"^# Samples: [1-9]\d* of event 'emit', frequency 4000 Hz, target "
         r"pingpong 200, \d+ ms\n", None),
        (prompt, "perf report --input=perf.data --no-children -s tid\r"),
        (r"^# Samples: [1-9]\d* of event 'emit', ", None),
        (prompt, "perf report -i build/profile/perf.data\r"),
        (r"^perf report: input 'build/profile/perf\.data': no files here; "
         r"perf report reads the last recording, perf\.data$", None),
        (prompt, "perf report -i\r"),
        (r"^perf report: -i needs a value: perf\.data, the last recording$",
         None),
        # -t TID and --call-graph fp are Linux's and work; the options
        # that cannot apply here say why, others are named.
        (prompt, "perf record --call-graph fp -t 2 -c 1 cswitch 50\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf record -p 2\r"),
        (r"^perf record: -p: no processes here, only the kernel's threads: "
         r"-t TID or thread NAME \(see threads\)$", None),
        (prompt, "perf record --call-graph dwarf -a 10\r"),
        (r"^perf record: --call-graph 'dwarf': call chains here are "
         r"frame-pointer walks, 'fp' \(8 frames, always recorded\)$", None),
        (prompt, "perf record -o FILE -a 10\r"),
        (r"^perf record: -o: no files here: the recording stays in memory "
         r"for perf report and perf script \(make profile writes a "
         r"perf\.data\)$", None),
        (prompt, "perf record --foo\r"),
        (r"^perf record: unknown option '--foo' \(-e EVENTS, -c PERIOD, -F "
         r"HZ, -a, -C CPU, -t TID, -g, --call-graph fp, or their long "
         r"names\)$", None),
        (prompt, "perf record -a -e\r"),
        (r"^perf record: -e needs a value \(", None),
        # Linux's long names, with = or a separate value.
        (prompt, "perf record --event=emit --count 1 -- pingpong 10\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf report --no-children --sort thread\r"),
        (r"^# Samples: 20 of event 'emit', period 1, target pingpong 10, "
         r"\d+ ms\n", None),
        (prompt, "perf record --cpu=1 --freq=200 tick 50\r"),
        (r"^perf record: sampled at 200 Hz$", None),
        (prompt, "perf record --all-cpus=1 tick 10\r"),
        (r"^perf record: --all-cpus takes no value \(got '1'\)$", None),
        (prompt, "perf record --freq= -a 10\r"),
        (r"^perf record: --freq needs a value \(", None),
        (prompt, "perf record -a sleep 1\r"),
        (r"^perf record: 'sleep' is neither an event \(see perf list\) nor "
         r"a workload: ", None),
        (prompt, "perf record -a -C 1 tick 10\r"),
        (r"^perf record: two targets \('all' and '-C'\): name one$", None),
        (prompt, "perf record -C 1 all tick 10\r"),
        (r"^perf record: two targets \('cpu 1' and 'all'\): name one$", None),
        (prompt, "perf record all tick 10 20\r"),
        (r"^perf record: unexpected '20' after the duration \(a workload "
         r"goes after --, as -- spin 100\)$", None),
        (prompt, "perf record -e tick all cs 10\r"),
        (r"^perf record: 'cs' is not a duration: MS, 1 to 60000 \(the "
         r"events are -e's\)$", None),
        (prompt, "perf record -e '{emit,tick}' -- spin 10\r"),
        (r"^perf record: '\{emit,tick\}': event groups are perf stat's; "
         r"sample the events side by side, as -e a,b$", None),
        (prompt, "perf record -a task-clock 10\r"),
        (r"^perf record: 'task-clock' is a clock, which perf stat counts: "
         r"sample time with tick$", None),
        (prompt, "perf record -a tick:u 10\r"),
        (r"^perf: 'tick:u': software events and clocks happen in kernel "
         r"mode only", None),
        (prompt, "perf record -a -- spin\r"),
        (r"^perf record: after -- comes one workload: spin MS \(1 to "
         r"60000\), pingpong N or calltree N \(1 to 1000000\)$", None),
        (prompt, "poweroff\r"),
        (r"^powering off$", None)]))
    # Input typed before the prompt, as `printf 'cpus\npoweroff\n' | make
    # run` sends it, on make run's console: none of it may be lost. It is
    # longer than what QEMU's console multiplexer buffers (32 bytes).
    boots.append(Boot("shell-typeahead", "", 1, timeout=timeout(1),
                      console="mux",
                      typeahead="help cpus\ncpus\nsyscnt thread_switches/0\n"
                      "poweroff\n", script=[
                          (r"^perfmon> help cpus\nusage: cpus", None),
                          (r"^perfmon> cpus\n1 CPU, TSC \d+ Hz", None),
                          (r"^cpu0 apic \d+ online ticks \d+$", None),
                          (r"^perfmon> syscnt thread_switches/0\n"
                           r"thread_switches/0\s+\d+$", None),
                          (r"^perfmon> poweroff\npowering off$", None)]))
    # Input piped behind a perf command, as `printf 'perf stat cpu 0 tick
    # 100\ncpus\npoweroff\n' | make run` sends it: the Ctrl-C check while
    # perf counts must keep it, and run it after.
    boots.append(Boot("shell-pipe", "", 2, timeout=timeout(2),
                      console="mux",
                      typeahead="perf stat cpu 0 tick 100\ncpus\n"
                      "perf record cpu 1 tick 100\nthreads\npoweroff\n",
                      script=[
                          (r"^ Performance counter stats for 'cpu 0':", None),
                          (r"^perfmon> cpus\n2 CPUs, TSC \d+ Hz", None),
                          (r"^perfmon> perf record cpu 1 tick 100\n"
                           + PERF_TOTALS.pattern[1:], None),
                          (r"^perfmon> threads\nNAME ", None),
                          (r"^perfmon> poweroff\npowering off$", None)]))
    # The runner's own checks: a failing test, a panic and a hang are each
    # reported as failures with their details.
    boots.append(Boot("harness-fail", "test=selftest.deliberate_failure", 1,
                      timeout=60, expect="fail",
                      output=[r"^# FAIL tests/kern/test_selftest\.c:\d+: "
                              r"1 \+ 1 == 3: 2 \(0x2\) vs 3 \(0x3\)$",
                              r"^not ok 1 selftest\.deliberate_failure$"]))
    boots.append(Boot("harness-panic", "test=crash.page_fault", 1, timeout=60,
                      expect="panic",
                      output=[r"^panic: cpu0: page fault at rip=0x[0-9a-f]+ "
                              r"cr2=0xdead000 ",
                              r"^  #0  0x[0-9a-f]+ test_fn_crash_page_fault\+",
                              r"^  #1  0x[0-9a-f]+ test_run_(one|all)\+",
                              r"^rax=0x"]))
    # A failed test whose helper thread still runs ends the run there: the
    # next test must not run.
    boots.append(Boot("harness-helper",
                      "test=selftest.failure_with_running_helper,"
                      "selftest.after_an_aborted_run", 2, timeout=60,
                      expect="fail",
                      output=[r"^not ok 1 selftest\.failure_with_running_"
                              r"helper$",
                              r"^# aborting the run: the test failed with a "
                              r"helper thread still running$"],
                      absent=[r"^(not )?ok 2 ", r"^panic"]))
    # A failed test's undo actions run last first, before its stack
    # unwinds, with interrupts back on; the next test runs.
    boots.append(Boot("harness-undo",
                      "test=selftest.failure_runs_its_undo_actions,spinlock",
                      1, timeout=60, expect="fail",
                      output=[r"^# FAIL tests/kern/test_selftest\.c:\d+: "
                              r"last == 0: 7 \(0x7\) vs 0 \(0x0\)\n"
                              r"# undo 2: interrupts on, after 7\n"
                              r"# undo 1: interrupts on, after 7\n"
                              r"not ok 1 selftest\.failure_runs_its_undo_"
                              r"actions$",
                              r"^ok 2 spinlock\."]))
    # A failure reported after its test ended, by a thread the harness
    # does not track, is not lost: it fails the test running then, or the
    # run, with a line saying it came from outside a running test.
    boots.append(Boot("harness-late-failure",
                      "test=selftest.failure_after_its_test_ended,"
                      "selftest.waits_a_while", 1, timeout=60, expect="fail",
                      output=[r"^# FAIL tests/kern/test_selftest\.c:\d+: "
                              r"2 \+ 2 == 5: ",
                              r"^ok 1 selftest\.failure_after_its_test_"
                              r"ended$",
                              r"^(not ok 2 selftest\.waits_a_while|# FAIL 1 "
                              r"failure reported outside a running test)"]))
    boots.append(Boot("harness-hang", "test=selftest.hang", 1, timeout=20,
                      expect="timeout", output=[r"^# hanging on purpose$"]))
    # A selection by suite, glob and name runs exactly those tests; a
    # suite leaves its manual tests out (selftest would hang).
    boots.append(Boot("harness-cmdline",
                      "test=kmem,xcall.*,spinlock.nosuch_no,selftest "
                      "loglevel=99 nosuchkey=1 panic=x", 1,
                      timeout=60, expect="fail",
                      output=[r"^ok \d+ kmem\.", r"^ok \d+ xcall\.",
                              r"^error: command line: loglevel=99: needs an "
                              r"integer from 0 to 7$",
                              r"^error: command line: nosuchkey=1: unknown "
                              r"key",
                              r"^error: command line: panic=x: the only "
                              r"value is halt$",
                              r"^error: command line: test=spinlock\."
                              r"nosuch_no: no such test or suite",
                              r"^error: command line: test=selftest: only "
                              r"manual tests there"],
                      absent=[r"^(not )?ok \d+ (?!kmem\.|xcall\.)",
                              r"^not ok"]))
    # A glob, the way make check TESTS= passes it, passes alone.
    boots.append(Boot("select", "test=clock.*,smp", 1, timeout=60,
                      output=[r"^ok \d+ clock\.", r"^ok \d+ smp\."],
                      absent=[r"^(not )?ok \d+ (?!clock\.|smp\.)"]))
    return boots


def host_test_commands(args):
    """(name, command) of each host test: the C binaries of
    args.host_list in args.host_tests, then the Python scripts of
    args.host_py (tools/test_NAME.py), each printing KTAP.

    >>> args = argparse.Namespace(host_tests="b/host", host_list="printf",
    ...                           host_py="tools/perf/test_perf_convert.py")
    >>> [(n, c[-1]) for n, c in host_test_commands(args)]
    [('printf', 'b/host/test_printf'), \
('perf_convert', 'tools/perf/test_perf_convert.py')]
    """
    commands = [(name, [os.path.join(args.host_tests, "test_" + name)])
                for name in args.host_list.split()]
    for path in getattr(args, "host_py", "").split():
        name = os.path.basename(path)
        name = name[len("test_"):] if name.startswith("test_") else name
        commands.append((name[:-3] if name.endswith(".py") else name,
                         [sys.executable, path]))
    return commands


def run_host_tests(args):
    result = Result("host")
    for name, cmd in host_test_commands(args):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        plan, seen = parse_ktap(proc.stdout, result, name + ".")
        if proc.returncode != 0 and result.failed == 0:
            result.add("fail", name, (proc.stdout + proc.stderr)
                       .splitlines()[-30:])
        if plan is None or seen < plan:
            result.add("fail", name + ".missing-results",
                       (proc.stdout + proc.stderr).splitlines()[-30:])
    return result


def check_logs_saved(done):
    """The runner's own check that every boot left its serial log."""
    res = Result("runner")
    missing = [log for boot, _, log in done
               if not (log and os.path.isfile(log)
                       and os.path.getsize(log) > 0)]
    if missing:
        res.add("fail", "logs-saved", ["no serial log at " + m
                                       for m in missing])
    else:
        res.add("ok", "logs-saved")
    return res
