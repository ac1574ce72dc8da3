"""KTAP and the report for tools/test/runner.py: a boot's results (Result),
the KTAP parser, one boot of the check plan and its judgement (Boot), and
the lines make check prints about them (boot_line, recap).
"""

import re
import time

from runner_qemu import (EXIT_FAIL, EXIT_PANIC, EXIT_PASS, STOPPING, Qemu,
                         qemu_command)

KTAP_RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?: # SKIP ?(.*))?$")
KTAP_PLAN = re.compile(r"^1\.\.(\d+)$")
# The kernel's report of a bad command-line word or test name.
CMDLINE_ERROR = re.compile(r"^error: command line: .*$", re.M)

class Result:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.lines = []     # report lines, printed together
        self.failures = []  # (test, diagnostic lines), for tools/test/soak.py

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
