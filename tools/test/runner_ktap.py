"""KTAP and the report for tools/test/runner.py: a boot's results (Result),
the KTAP parser, one boot of the check plan and its judgement (Boot), and
the lines make check prints about them (boot_line, recap).
"""

import re
import time

import runner_tests
from runner_qemu import (EXIT_FAIL, EXIT_PANIC, EXIT_PASS, STOPPING, Qemu,
                         qemu_command)

KTAP_RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?: # SKIP ?(.*))?$")
KTAP_PLAN = re.compile(r"^1\.\.(\d+)$")
# A failure, wherever it is printed; a check a test made looser, saying so
# (kern/test.h, test_loosen).
KTAP_FAIL = "# FAIL"
KTAP_LOOSENED = re.compile(r"^# loosened: (.*)$")
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
        self.loosened = []  # (test, what was loosened), for the recap
        self.ran = []       # the names of the results parse_ktap saw

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

    def loosen(self, test, what):
        self.loosened.append((test, what))
        self.lines.append("     # loosened: " + what)

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
    """Count KTAP results into result, and check the stream: results
    numbered 1, 2, ... in order, no name twice, no more results than the
    plan, one plan, and no failure line (`# FAIL`) left unaccounted for
    (before an `ok`, or after the last result). Each problem is a failed
    result of its own. Return (plan, results seen); the names seen go to
    result.ran, `# loosened:` lines to result.loosened.

    >>> r = Result("b")
    >>> parse_ktap("KTAP version 1\\n1..2\\nok 1 a.x\\n# FAIL t.c:1: no\\n"
    ...            "not ok 2 a.y\\n", r)
    (2, 2)
    >>> r.passed, r.failed, r.ran, r.failures
    (1, 1, ['a.x', 'a.y'], [('a.y', ['# FAIL t.c:1: no'])])

    A skip, and a loosened check, which the recap counts:

    >>> r = Result("b")
    >>> parse_ktap("1..2\\n# loosened: share unchecked\\nok 1 a.x\\n"
    ...            "ok 2 a.y # SKIP no PMU\\n", r)
    (2, 2)
    >>> r.passed, r.skipped, r.loosened
    (1, 1, [('a.x', 'share unchecked')])

    A failure line before an ok, or after the last result, fails:

    >>> r = Result("b")
    >>> parse_ktap("1..1\\n# FAIL t.c:2: late\\nok 1 a.x\\n# FAIL t.c:3: x\\n", r)
    (1, 1)
    >>> r.passed, [(t, d[0]) for t, d in r.failures]
    ... # doctest: +NORMALIZE_WHITESPACE
    (1, [('failure-line', '# FAIL t.c:2: late (before ok 1 a.x)'),
         ('failure-line', '# FAIL t.c:3: x (after the last result)')])

    Numbering, duplicates, the plan:

    >>> r = Result("b")
    >>> parse_ktap("1..2\\nok 1 a.x\\nok 3 a.y\\nok 3 a.x\\n1..3\\n", r)
    (2, 3)
    >>> [(t, d[0]) for t, d in r.failures]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('ktap-numbering', 'result 3 (a.y) where 2 was due'),
     ('ktap-duplicate', 'a.x reported twice (results 1 and 3)'),
     ('ktap-plan', 'plan 1..2 but result 3 (a.x)'),
     ('ktap-plan', 'a second plan, 1..3, after 1..2')]
    """
    plan = None
    seen = 0
    diag = []
    numbers = {}
    for line in text.splitlines():
        line = line.strip()
        m = KTAP_PLAN.match(line)
        if m:
            if plan is None:
                plan = int(m.group(1))
            else:
                result.add("fail", prefix + "ktap-plan",
                           ["a second plan, 1..%s, after 1..%d"
                            % (m.group(1), plan)])
            continue
        if line.startswith("#"):
            diag.append(line)
            continue
        m = KTAP_RESULT.match(line)
        if not m:
            continue
        seen += 1
        number = int(m.group(2))
        name = prefix + m.group(3)
        failed = m.group(1) == "not ok"
        if number != seen:
            result.add("fail", prefix + "ktap-numbering",
                       ["result %d (%s) where %d was due"
                        % (number, m.group(3), seen)])
        if name in numbers:
            result.add("fail", prefix + "ktap-duplicate",
                       ["%s reported twice (results %d and %d)"
                        % (m.group(3), numbers[name], number)])
        else:
            numbers[name] = number
        if plan is not None and seen > plan:
            result.add("fail", prefix + "ktap-plan",
                       ["plan 1..%d but result %d (%s)"
                        % (plan, number, m.group(3))])
        if not failed:
            for d in diag:
                if d.startswith(KTAP_FAIL):
                    result.add("fail", prefix + "failure-line",
                               ["%s (before ok %d %s)"
                                % (d, number, m.group(3))])
        result.ran.append(name)
        if failed:
            result.add("fail", name, diag[-10:])
        elif m.group(4) is not None:
            result.add("skip", name + " # SKIP " + m.group(4))
        else:
            result.add("ok", name)
        for d in diag:
            lm = KTAP_LOOSENED.match(d)
            if lm:
                result.loosen(name, lm.group(1))
        diag = []
    for d in diag:
        if d.startswith(KTAP_FAIL):
            result.add("fail", prefix + "failure-line",
                       ["%s (after the last result)" % d])
    return plan, seen


def known_tests(args):
    """The build's list of tests (runner_tests.py): args.test_list, else
    the one beside the ISO; (path, tests or None when there is none).
    Read once per args."""
    path = (getattr(args, "test_list", "")
            or runner_tests.default_list_path(args.iso))
    cache = getattr(args, "known_tests_cache", None)
    if cache is None or cache[0] != path:
        cache = (path, runner_tests.load_list(path))
        args.known_tests_cache = cache
    return cache


class Boot:
    """One kernel boot of the check plan.

    expect: "pass" (a test run that must pass), or a harness check of the
    runner itself: "fail" (the run must report a failure), "panic" (the
    kernel must panic), "timeout" (the kernel must hang and be killed).
    """

    def __init__(self, name, cmdline, smp, timeout=180, expect="pass",
                 output=(), script=(), icount=False, pmu=False, absent=(),
                 typeahead="", console="stdio", post=None, iso=None):
        self.name = name
        # The ISO to boot when not args.iso (the model kernel's).
        self.iso = iso
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
        cmd = qemu_command(self.iso or args.iso, self.smp, accel, args.mem,
                           self.cmdline,
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
            self._judge_run(result, text, rc, script_ok, known_tests(args))
            for test, detail in (self.post(text) if self.post else ()):
                result.add("ok" if detail is None else "fail", test,
                           detail or ())
        else:
            self._judge_harness(result, text, rc)
        return result

    def _judge_run(self, result, text, rc, script_ok, known=(None, None)):
        """Judge a boot that must pass: its KTAP (parse_ktap), the kernel's
        command-line errors, output patterns, QEMU's status, the plan, and
        the tests that ran against those its test= selection picks from
        the build's list (known: (path, tests), runner_tests.py).

        >>> known = ("build/tests.list", [("a.x", False), ("a.y", False)])
        >>> def judge(text, rc=EXIT_PASS, cmdline="test=a", known=known):
        ...     r = Result("b")
        ...     Boot("b", cmdline, 1)._judge_run(r, text, rc, True, known)
        ...     return r.passed, [(t, d[0]) for t, d in r.failures]
        >>> judge("KTAP version 1\\n1..2\\nok 1 a.x\\nok 2 a.y\\n")
        (2, [])

        A test the selection picks that did not run, or a short plan:

        >>> judge("1..1\\nok 1 a.x\\n")
        (1, [('did-not-run', '1 selected test did not run: a.y')])
        >>> judge("1..2\\nok 1 a.x\\n")
        ... # doctest: +NORMALIZE_WHITESPACE
        (1, [('missing-results', 'plan 1..2 but 1 results'),
             ('did-not-run', '1 selected test did not run: a.y')])

        A failure the kernel reported that no result shows, a panic, a
        hang, no KTAP at all, no list of the build's tests:

        >>> judge("1..2\\nok 1 a.x\\nok 2 a.y\\n", rc=EXIT_FAIL)
        (2, [('run', 'the kernel reported a failure')])
        >>> judge("1..2\\nok 1 a.x\\npanic: cpu0: oops\\n", rc=EXIT_PANIC)
        ... # doctest: +NORMALIZE_WHITESPACE
        (1, [('boot', 'kernel panic:'),
             ('missing-results', 'plan 1..2 but 1 results'),
             ('did-not-run', '1 selected test did not run: a.y')])
        >>> judge("1..2\\nok 1 a.x\\n", rc=None)[1][0]
        ('boot', 'timed out after 180 s; last lines:')
        >>> judge("booted\\n")[1][0]
        ('boot', 'no KTAP output')
        >>> judge("1..2\\nok 1 a.x\\nok 2 a.y\\n", known=("t.list", None))
        (2, [('test-list', "no list of the build's tests at t.list (make ...")])

        A boot without test= is not compared:

        >>> judge("1..0\\n", cmdline="loglevel=3")
        (0, [])
        """
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
        selection = runner_tests.cmdline_selection(self.cmdline)
        if selection is None:
            return
        path, tests = known
        if tests is None:
            result.add("fail", "test-list",
                       ["no list of the build's tests at %s (make writes it "
                        "beside the ISO): cannot tell whether every test "
                        "ran" % path])
            return
        for check, detail in runner_tests.compare_run(tests, selection,
                                                      result.ran):
            result.add("fail", check, detail)

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
    and, for a boot, the serial log that has the rest; then every check a
    test loosened, saying what (kern/test.h, test_loosen).

    >>> r = Result("smp=2"); r.add("fail", "t.x", ["# FAIL t.c:1: a"])
    >>> print("\\n".join(recap([(r, "build/logs/01-smp=2.log")])))
    failed:
      smp=2 t.x
           # FAIL t.c:1: a
           log: build/logs/01-smp=2.log
    >>> recap([(Result("smp=1"), None)])
    []
    >>> r = Result("smp=16"); r.add("ok", "m.y"); r.loosen("m.y", "no share")
    >>> print("\\n".join(recap([(r, None)])))
    loosened (1 check, the test passed without it):
      smp=16 m.y: no share
    """
    lines = []
    for res, log in results:
        for test, detail in res.failures:
            lines.append("  %s %s" % (res.name, test))
            lines.append("       " + first_diagnostic(detail))
            if log:
                lines.append("       log: " + log)
    lines = ["failed:"] + lines if lines else []
    loose = ["  %s %s: %s" % (res.name, test, what)
             for res, _ in results for test, what in res.loosened]
    if loose:
        lines.append("loosened (%d check%s, the test passed without it):"
                     % (len(loose), "" if len(loose) == 1 else "s"))
        lines += loose
    return lines


def totals_line(passed, failed, skipped, loosened):
    """The last line of a run.

    >>> totals_line(10, 0, 0, 0), totals_line(10, 1, 2, 3)
    ('10 passed, 0 failed', '10 passed, 1 failed, 2 skipped, 3 loosened')
    """
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    if loosened:
        line += ", %d loosened" % loosened
    return line
