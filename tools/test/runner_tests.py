#!/usr/bin/env python3
"""The list of in-kernel tests the build knows, for tools/test/runner.py.

  runner_tests.py SOURCE.c ... > build/tests.list

The Makefile writes build/tests.list (beside the ISO) from the sources it
compiles into the kernel: a line `suite.name` per TEST_DEFINE, `suite.name
manual` per TEST_DEFINE_MANUAL. The runner compares each boot's results
with the tests its test= selection picks from that list (test_selected,
the kernel's rules), so a test that silently did not run fails the boot.
"""

import fnmatch
import os
import re
import sys

TEST_DEFINE = re.compile(r"^TEST_DEFINE(_MANUAL)?\(\s*(\w+)\s*,\s*(\w+)\s*\)",
                         re.M)
LIST_NAME = "tests.list"


def scan_source(text):
    """The tests a source defines, as (suite.name, manual), in order.

    >>> scan_source("TEST_DEFINE(kmem, sizes)\\n{\\n}\\n"
    ...             "TEST_DEFINE_MANUAL(crash, page_fault)\\n"
    ...             "  TEST_DEFINE(not, at_line_start)\\n")
    [('kmem.sizes', False), ('crash.page_fault', True)]
    """
    return [("%s.%s" % (m.group(2), m.group(3)), m.group(1) is not None)
            for m in TEST_DEFINE.finditer(text)]


def format_list(tests):
    """The list file's text.

    >>> print(format_list([("a.b", False), ("c.d", True)]), end="")
    a.b
    c.d manual
    """
    return "".join("%s%s\n" % (name, " manual" if manual else "")
                   for name, manual in tests)


def parse_list(text):
    """The (suite.name, manual) pairs of a list file's text.

    >>> parse_list("a.b\\n# comment\\n\\nc.d manual\\n")
    [('a.b', False), ('c.d', True)]
    """
    tests = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        tests.append((words[0], words[1:] == ["manual"]))
    return tests


def load_list(path):
    """The tests of the list at path, or None when there is none."""
    try:
        with open(path) as f:
            return parse_list(f.read())
    except OSError:
        return None


def default_list_path(iso):
    """Where make writes the list: beside the ISO."""
    return os.path.join(os.path.dirname(iso) or ".", LIST_NAME)


def entry_selects(entry, name, manual):
    """Whether one entry of test= selects the test, by the kernel's rules
    (kern/test.c, test_entry_matches): `all`, a suite and a glob (`*`,
    `?` over suite.name) leave manual tests out; suite.name selects any.

    >>> entry_selects("all", "kmem.a", False), entry_selects("all", "x.y", True)
    (True, False)
    >>> entry_selects("kmem", "kmem.a", False), entry_selects("km", "kmem.a", False)
    (True, False)
    >>> entry_selects("crash", "crash.pf", True), entry_selects("crash.pf", "crash.pf", True)
    (False, True)
    >>> entry_selects("perfmon_s*", "perfmon_sample.a", False)
    True
    >>> entry_selects("perfmon.?", "perfmon.ab", False)
    False
    >>> entry_selects("[k]mem.a", "kmem.a", False)
    False
    """
    if entry == "all":
        return not manual
    if "*" in entry or "?" in entry:
        # Only * and ? are special to the kernel: escape anything else.
        pattern = "".join(c if c in "*?" else "[%s]" % c if c in "[]"
                          else c for c in entry)
        return not manual and fnmatch.fnmatchcase(name, pattern)
    if entry == name.split(".", 1)[0]:
        return not manual
    return entry == name


def selected(tests, selection):
    """The names a test= selection picks from tests, in the list's order.

    >>> known = [("a.x", False), ("a.y", True), ("b.z", False)]
    >>> selected(known, "a"), selected(known, "a.y,b*"), selected(known, ",")
    (['a.x'], ['a.y', 'b.z'], [])
    """
    entries = [e for e in selection.split(",") if e]
    return [name for name, manual in tests
            if any(entry_selects(e, name, manual) for e in entries)]


SELECTION = re.compile(r"(?:^|\s)test=(\S*)")


def cmdline_selection(cmdline):
    """The test= value of a kernel command line (the last one), or None.

    >>> cmdline_selection("pmu_soft.width=8 test=kmem,perfmon.* x=1")
    'kmem,perfmon.*'
    >>> cmdline_selection("loglevel=3") is None
    True
    """
    found = SELECTION.findall(cmdline)
    return found[-1] if found else None


def compare_run(known, selection, ran):
    """Compare the tests a boot ran (names, in order) with the ones its
    selection picks from the build's list: a list of problems, each
    (check, detail lines), empty when they are the same.

    >>> known = [("a.x", False), ("a.y", False), ("b.z", False)]
    >>> compare_run(known, "a", ["a.x", "a.y"])
    []
    >>> compare_run(known, "all", ["a.x", "b.z"])
    [('did-not-run', ['1 selected test did not run: a.y'])]
    >>> compare_run(known, "a.x", ["a.x", "c.w"])
    [('not-in-the-build', ['c.w ran, but no source of the build defines it'])]
    """
    problems = []
    want = selected(known, selection)
    ran_set = set(ran)
    missing = [n for n in want if n not in ran_set]
    if missing:
        problems.append(("did-not-run", [
            "%d selected test%s did not run: %s"
            % (len(missing), "" if len(missing) == 1 else "s",
               ", ".join(missing[:20]) + (", ..." if len(missing) > 20
                                          else ""))]))
    want_set = set(want)
    extra = [n for n in ran if n not in want_set]
    if extra:
        names = {n for n, _ in known}
        problems.append(("not-in-the-build", [
            "%s ran, but %s" % (n, "the selection does not pick it"
                                if n in names else
                                "no source of the build defines it")
            for n in extra[:20]]))
    return problems


def main(argv):
    tests = []
    for path in argv[1:]:
        with open(path) as f:
            tests += scan_source(f.read())
    sys.stdout.write(format_list(tests))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
