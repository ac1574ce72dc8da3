#!/usr/bin/env python3
"""Boot the kernel in QEMU, interactively or as the test runner.

  runner.py run   --iso ISO [--smp N] [--accel auto|kvm|tcg] [--cmdline S]
  runner.py check --iso ISO [--smp "1 2 4"] [--host-tests DIR ...]
  runner.py bench --iso ISO [--accel tcg|kvm]
  runner.py check-hw --iso ISO [--smp N] [--accel kvm|tcg] [--cmdline S]

The kernel reads extra command-line words from the fw_cfg file
opt/perfmon/cmdline, so one ISO serves every configuration. It reports the
end of a test run through the isa-debug-exit device: QEMU exits with 1 when
every test passed, 3 when one failed, 5 on a panic.
"""

import argparse
import concurrent.futures
import doctest
import fnmatch
import os
import re
import signal
import subprocess
import sys
import threading
import time

EXIT_PASS = 1
EXIT_FAIL = 3
EXIT_PANIC = 5

KTAP_RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?: # SKIP ?(.*))?$")
KTAP_PLAN = re.compile(r"^1\.\.(\d+)$")
# The kernel's report of a bad command-line word or test name.
CMDLINE_ERROR = re.compile(r"^error: command line: .*$", re.M)

# Every QEMU started, so that Ctrl-C stops them all; STOPPING keeps boots
# that had not started yet from starting.
LIVE_QEMUS = set()
LIVE_LOCK = threading.Lock()
STOPPING = threading.Event()

# The kernel supports 1 to 64 CPUs (its per-CPU tables).
SMP_MAX = 64


def host_cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def host_cpu_vendor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


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
    TCG. Only a user's ACCEL= reads "forced".

    >>> choose_accel("tcg")
    ('tcg', 'forced by ACCEL=tcg')
    >>> choose_accel("auto")[1].startswith("forced")
    False
    """
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


def qemu_command(iso, smp, accel, mem, cmdline, icount=False, gdb=0,
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
        # Wait, stopped, for gdb on TCP port gdb (make debug GDB_PORT=).
        cmd += ["-gdb", "tcp::%d" % gdb, "-S"]
    if cmdline:
        # QEMU option values escape a comma by doubling it.
        cmd += ["-fw_cfg", "name=opt/perfmon/cmdline,string="
                + cmdline.replace(",", ",,")]
    return cmd


class Qemu:
    """A QEMU process whose serial output is collected by a thread."""

    def __init__(self, cmd):
        # Its own process group: a Ctrl-C reaches the runner alone, which
        # then stops every QEMU and still prints what finished.
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)
        with LIVE_LOCK:
            LIVE_QEMUS.add(self)
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

    def wait(self, deadline, heartbeat=None, period=10):
        """Wait for QEMU to exit; return its status or None on timeout.
        heartbeat, when given, is called every period seconds meanwhile."""
        rc = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                rc = self.proc.wait(timeout=min(left, period)
                                    if heartbeat else left)
                break
            except subprocess.TimeoutExpired:
                if heartbeat:
                    heartbeat(self)
        if rc is None:
            self.kill()
        self.reader.join(timeout=5)
        with LIVE_LOCK:
            LIVE_QEMUS.discard(self)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def last_line(self):
        with self.cond:
            lines = self.text.strip().splitlines()
        return lines[-1] if lines else "(no output yet)"


def stop_all_qemus():
    """Stop every QEMU this runner started (Ctrl-C)."""
    STOPPING.set()
    with LIVE_LOCK:
        live = list(LIVE_QEMUS)
    for q in live:
        try:
            q.kill()
        except OSError:
            pass


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

    def failed_tests(self):
        """The failed tests' names, for a one-line summary."""
        return [t for t, _ in self.failures]


def first_diagnostic(detail):
    """The line that best says why a test failed: its first "# FAIL" or
    other diagnostic line, else the first line.

    >>> first_diagnostic(["# torture: 10 ops", "# FAIL a.c:3: x == y"])
    '# FAIL a.c:3: x == y'
    >>> first_diagnostic(["timed out after 8 s; last lines:", "boot"])
    'timed out after 8 s; last lines:'
    >>> first_diagnostic([])
    '(no diagnostic)'
    """
    for line in detail:
        if line.startswith("# FAIL") or line.startswith("error:"):
            return line
    return detail[0] if detail else "(no diagnostic)"


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
                 output=(), script=(), icount=False, pmu=False, absent=(),
                 typeahead="", console="stdio", post=None):
        self.name = name
        # post(text) -> [(test, None or diagnostic lines)]: checks of a
        # passing boot's output beyond regular expressions.
        self.post = post
        self.cmdline = cmdline
        self.smp = smp
        self.timeout = timeout
        self.expect = expect
        self.output = output
        self.absent = absent
        self.script = script
        self.icount = icount
        self.pmu = pmu
        # Input sent as QEMU starts, long before the prompt; console
        # "mux" is make run's (-serial mon:stdio).
        self.typeahead = typeahead
        self.console = console
        self.text = ""
        self.log = None     # where run() saved the serial output
        self.elapsed = 0.0

    def run(self, args, accel, log=None, heartbeat=None):
        """Boot, judge, return a Result. log: a file to save the serial
        output in; heartbeat: called every 10 s with the running Qemu."""
        result = Result(self.name)
        if STOPPING.is_set():
            result.add("fail", "boot", ["not started: interrupted"])
            return result
        cmd = qemu_command(args.iso, self.smp, accel, args.mem, self.cmdline,
                           icount=self.icount, pmu=self.pmu,
                           interactive=(self.console == "mux"))
        start = time.monotonic()
        deadline = start + self.timeout
        qemu = Qemu(cmd)
        if self.typeahead:
            qemu.send(self.typeahead)
        script_ok = True
        pos = 0
        for pattern, reply in self.script:
            m = qemu.expect(pattern, pos, deadline)
            if m is None:
                script_ok = False
                result.add("fail", "script", ["did not see %r" % pattern])
                qemu.kill()     # the rest of the script cannot run
                break
            pos = m.end()
            if reply is not None:
                qemu.send(reply)
        rc = qemu.wait(deadline, heartbeat)
        elapsed = self.elapsed = time.monotonic() - start
        text = self.text = qemu.text
        header = "== %s: %d CPU%s, %s, %.1f s, cmdline '%s'" % (
            self.name, self.smp, "s" if self.smp > 1 else "", accel, elapsed,
            self.cmdline)
        result.lines.append(header)
        if log:
            self.log = log
            with open(log, "w") as f:
                f.write("# %s\n# %s\n" % (header[3:], " ".join(cmd)))
                f.write(text)
        if STOPPING.is_set():
            result.add("fail", "boot", ["interrupted"])
            return result

        if self.expect == "pass":
            self._judge_run(result, text, rc, script_ok)
            for test, detail in (self.post(text) if self.post else ()):
                result.add("ok" if detail is None else "fail", test,
                           detail or ())
        else:
            self._judge_harness(result, text, rc)
        return result

    def _judge_run(self, result, text, rc, script_ok):
        plan, seen = parse_ktap(text, result)
        tail = text.splitlines()[-30:]
        for m in CMDLINE_ERROR.finditer(text):
            result.add("fail", "cmdline", [m.group(0)])
        for pattern in self.output:
            if not re.search(pattern, text, re.M):
                result.add("fail", "output", ["output lacks /%s/" % pattern])
        for pattern in self.absent:
            if re.search(pattern, text, re.M):
                result.add("fail", "output", ["output has /%s/" % pattern])
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
        for pattern in self.absent:
            if re.search(pattern, text, re.M):
                detail.append("output has /%s/" % pattern)
        if detail:
            result.add("fail", "reports-" + self.expect,
                       detail + ["output:"] + text.splitlines()[-30:])
        else:
            result.add("ok", "reports-" + self.expect)


NARROW_SUITES = ("perfmon", "pmu_soft", "perfmon_torture", "perfmon_sample",
                 "perfmon_group", "perfmon_mux")


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
    'perfmon,pmu_soft,perfmon_torture,perfmon_sample,perfmon_group,perfmon_mux'
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
                         r"lost, (\d+) throttled \((\d+) records "
                         r"produced\)$", re.M)
PERF_FRAME = re.compile(r"^\t *[0-9a-f]+ \w+\+0x[0-9a-f]+ "
                        r"\(\[kernel\.kallsyms\]\)$", re.M)


def perf_totals_check(text):
    """Check every `perf record` totals line of a console log: None when
    each has received + lost + throttled == produced and the first one
    received samples, else why not.

    >>> perf_totals_check("perf record: 58 samples received, 2 lost, "
    ...                   "1 throttled (61 records produced)\\n"
    ...                   "perf record: 0 samples received, 0 lost, "
    ...                   "0 throttled (0 records produced)")
    >>> perf_totals_check("perf record: 58 samples received, 2 lost, "
    ...                   "0 throttled (61 records produced)")
    ['58 received + 2 lost + 0 throttled != 61 produced']
    >>> perf_totals_check("perf record: 0 samples received, 0 lost, "
    ...                   "0 throttled (0 records produced)")
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


def perf_convert_check(text):
    """Run tools/perf-convert on a console log holding a `perf script`
    dump of a period-1 recording (every dumped sample kept): None when
    both outputs are there, with as many samples as the totals line
    received, symbolized kernel frames, and folded weights summing to
    that count; else why not."""
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "perf-convert")
    # The recording dumped is the last one before the dump.
    found = PERF_TOTALS.findall(text[:text.rfind("perfmon-dump 2 begin")])
    received = int(found[-1][0]) if found else -1
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


def perf_record_checks(text):
    """The shell boot's checks of perf record and perf script."""
    return [("perf_record_totals", perf_totals_check(text)),
            ("perf_convert_accepts_dump", perf_convert_check(text))]


def check_plan(args):
    """The boots of make check. With args.tests (TESTS=), the suite boots
    run that selection, the narrow-counter boots the part of it that may
    concern them, and the shell and runner checks are left out."""
    boots = []
    tests = getattr(args, "tests", "")
    extra = getattr(args, "cmdline", "")
    extra = (" " + extra) if extra else ""
    # Many vCPUs share the host's few cores: give big machines more time.
    def timeout(smp):
        return 180 + 4 * smp

    for smp in args.smp:
        boots.append(Boot("smp=%d" % smp, "test=%s%s" % (tests or "all",
                                                        extra),
                          smp, timeout(smp)))
    # perfmon with narrow software counters, polled and with the emulated
    # overflow interrupt (test=all above runs them at width 64); width 8
    # makes nearly every operation race a wrap.
    narrow = narrow_selection(tests)
    for smp in args.smp if narrow else ():
        for width, intr in ((16, 0), (12, 1), (8, 0), (8, 1)):
            boots.append(Boot("smp=%d,w%d,%s" % (smp, width,
                                                 "intr" if intr else "poll"),
                              "test=%s pmu_soft.width=%d pmu_soft.intr=%d%s"
                              % (narrow, width, intr, extra),
                              smp, timeout(smp)))
    if tests:
        return boots
    # The serial shell, driven as a user would: every command answers.
    smp = max(args.smp)
    prompt = r"perfmon> $"
    count = r"^\s+[\d,]+\s+"
    rate = r"\s+#\s+\d+\.\d{3} /sec  \(100\.00%\)$"
    boots.append(Boot("shell", "", smp, timeout=timeout(smp), script=[
        (prompt, "help\r"),
        (r"^  cpus\s+list the processors$", None),
        (r"^  poweroff\s+stop the machine$", None),
        (prompt, "help perf\r"),
        (r"^usage: perf list \| stat ", None),
        (prompt, "cpus\r"),
        (r"(?:^cpu\d+ apic \d+ online ticks \d+\n){%d}" % smp, None),
        # Up arrow runs cpus again; Ctrl-U and Ctrl-W erase.
        (prompt, "\x1b[A\r"),
        (r"^\d+ CPUs?, TSC", None),
        (prompt, "bogus\x15threads xx\x17\r"),
        (r"^main\s+\d+\s+running\s+4\s+\d+$", None),
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
         r"\s+<not supported>\s+raw:0xffffffff\s+# .*\n\n"
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
         r"\s+#\s+0\.000 /sec  \((?!100\.00)\d+\.\d{2}%\)\n){11}"
         + count + r"tick\s+#\s+\d+\.\d{3} /sec  \((?!100\.00)\d+\.\d{2}%\)$",
         None),
        (prompt, "perf stat -x cpu 0 tick 10\r"),
        (r"^usage: perf stat \[-g\] \[-v\]", None),
        (prompt, "perf stat -g cpu 0 tick,raw:0xffffffff 10\r"),
        (r"^perf: no event can be counted$", None),
        (prompt, "perf stat thread main xcall 50\r"),
        (r"^ Performance counter stats for 'thread main':\n\n"
         r"\s+0\s+xcall" + rate, None),
        (prompt, "perf stat cpu 99 tick 10\r"),
        (r"^perf: bad CPU: EINVAL \(invalid argument\)$", None),
        (prompt, "perf stat cpu 0 nosuchevent 10\r"),
        (r"^perf: unknown event 'nosuchevent' \(see perf list\)$", None),
        (prompt, "perf stat cpu 0 raw:0xffffffff 10\r"),
        (r"^perf: no event can be counted$", None),
        # The sampling profiler: a timer profile of every CPU, its report
        # and its dump (perf_record_checks checks the totals and converts
        # the dump); then bad input.
        (prompt, "perf report\r"),
        (r"^perf: no recording yet \(perf record first\)$", None),
        (prompt, "perf record all tick 300\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf report\r"),
        (r"^# Samples: \d+ of event 'tick', period 1, target all, 300 ms\n"
         r"#\n# Overhead   Samples  Symbol\n#\n"
         r"(?:\s+\d+\.\d\d%\s+\d+  (?:\w+|\[unknown\]|"
         r"\(other functions\))\n)*"
         r"\s+\d+\.\d\d%\s+\d+  [A-Za-z_]\w*\n"
         r"(?:\s+\d+\.\d\d%\s+\d+  (?:\w+|\[unknown\]|"
         r"\(other functions\))\n)*"
         r"#\n# \d+ received, \d+ lost, \d+ throttled \(\d+ produced\)$",
         None),
        (prompt, "perf script\r"),
        (r"^perfmon-dump 2 begin cpus=%d tsc_hz=\d+ event=tick period=1 "
         r"frames=8 ms=300 target=all$" % smp, None),
        (r"^perfmon-dump 2 end lines=\d+$", None),
        (prompt, "perf record thread main cswitch/2 50\r"),
        (PERF_TOTALS.pattern, None),
        (prompt, "perf record all nosuch 10\r"),
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
        (r"^usage: perf record ", None),
        (prompt, "perf report extra\r"),
        (r"^usage: perf record ", None),
        (prompt, "bogus\r"),
        (r"^bogus: unknown command", None),
        (prompt, "poweroff\r"),
        (r"^powering off$", None)], post=perf_record_checks))
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
    ...                           host_py="tools/test_perf_convert.py")
    >>> [(n, c[-1]) for n, c in host_test_commands(args)]
    [('printf', 'b/host/test_printf'), \
('perf_convert', 'tools/test_perf_convert.py')]
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


def boot_line(k, n, boot, res):
    """The progress line of a finished boot.

    >>> r = Result("smp=4"); r.add("ok", "a.b"); r.add("fail", "a.c")
    >>> b = Boot("smp=4", "test=all", 4); b.elapsed = 38.46
    >>> boot_line(3, 14, b, r)
    '[3/14] smp=4 FAIL 38.5 s: a.c'
    >>> boot_line(1, 14, b, Result("smp=4"))
    '[1/14] smp=4 PASS 38.5 s'
    """
    line = "[%d/%d] %s %s %.1f s" % (k, n, boot.name,
                                     "FAIL" if res.failed else "PASS",
                                     boot.elapsed)
    if res.failed:
        line += ": " + ", ".join(res.failed_tests())
    return line


def recap(results):
    """The closing list of every failed test with its first diagnostic
    and, for a boot, the serial log that has the rest.

    >>> r = Result("smp=2"); r.add("fail", "t.x", ["# FAIL t.c:1: a"])
    >>> print("\\n".join(recap([(r, "build/logs/01-smp=2.log")])))
    failed:
      smp=2 t.x
           # FAIL t.c:1: a
           log: build/logs/01-smp=2.log
    >>> recap([(Result("smp=1"), None)])
    []
    """
    lines = []
    for res, log in results:
        for test, detail in res.failures:
            lines.append("  %s %s" % (res.name, test))
            lines.append("       " + first_diagnostic(detail))
            if log:
                lines.append("       log: " + log)
    return ["failed:"] + lines if lines else []


def log_name(logdir, k, boot):
    name = re.sub(r"[^A-Za-z0-9=,._-]", "_", boot.name)
    return os.path.join(logdir, "%02d-%s.log" % (k, name))


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


def cmd_check(args):
    accel, reason = choose_accel(args.accel)
    boots = check_plan(args)
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
    if args.tests:
        print("runner: TESTS=%s: the shell, runner-check and host-test "
              "boots are left out" % args.tests, flush=True)
    totals = [0, 0, 0]
    done = []           # (boot, result, log), in finishing order
    report = []         # every result line, for report.txt

    def account(res, log=None):
        report.extend(res.lines)
        if args.verbose:
            print("\n".join(res.lines), flush=True)
        totals[0] += res.passed
        totals[1] += res.failed
        totals[2] += res.skipped

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

        if not args.tests:
            res = check_logs_saved(done)
            done.append((None, res, None))
            account(res)
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
    line = "%d passed, %d failed" % (totals[0], totals[1])
    if totals[2]:
        line += ", %d skipped" % totals[2]
    print(line, flush=True)
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
    line = "%d passed, %d failed" % (res.passed, res.failed)
    if res.skipped:
        line += ", %d skipped" % res.skipped
    print(line)
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
    per documented function."""
    result = Result("runner")
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    module = sys.modules[__name__]
    for test in finder.find(module, module.__name__):
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
    parser.add_argument("mode", choices=["run", "check", "boot", "bench",
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
    if args.mode == "check-hw":
        return cmd_check_hw(args)
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
