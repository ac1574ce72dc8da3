#!/usr/bin/env python3
"""The docs check of make check (tools/test/runner.py): what README.md and
docs/*.md show must be what the tree does, so that they cannot drift.

- Examples: a fenced block preceded by the comment `<!-- example: BOOT -->`
  is output that boot of the check plan printed in the same make check
  run (its serial log, build/logs/NN-BOOT.log). The block's lines must be
  consecutive lines of the log, after normalise(); a line `...` skips log
  lines up to the first one matching the next line of the block.
- Targets: README's `make` targets section lists exactly the targets
  `make help` lists.
- Command line: docs/cmdline.md lists exactly the keys the kernel
  declares with ARG_DEFINE_* (kern/, arch/, tests/ but tests/host/).
- Links: every relative link of the docs names a file of the tree and,
  with #anchor, a heading of that file.

  runner_docs.py [--logdir build/logs]

checks the docs against the logs of the last make check (or of the boots
named in the examples, run alone) and prints a result per check, then
`N passed, N failed`.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True
from runner_ktap import Result  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

EXAMPLE = re.compile(r"^<!-- example: (\S+) -->$")
FENCE = re.compile(r"^(```|~~~)")
# A number: decimal, with thousands separators or a fraction, or hex. A
# digit inside a name (emit7, x86) is not one.
NUMBER = re.compile(r"(?<![A-Za-z_])(?:0x[0-9a-f]+|\d+(?:[.,]\d+)*)")
SKIP = "..."


def normalise(line):
    """A line as the docs check compares it: every number written as #,
    every run of blanks as one space, none at either end. So a doc's
    example keeps the real figures of one run, and matches any other.

    >>> normalise("   100.00%       400  0xffffffff80122fef  f+0x3f ")
    '#% # # f+#'
    >>> normalise("  emit7   units (1,234 /sec, 2^62)")
    'emit7 units (# /sec, #^#)'
    """
    return " ".join(NUMBER.sub("#", line).split())


def parse_examples(text):
    """The marked examples of a Markdown text: (name, line number of the
    block's first line, its lines).

    >>> parse_examples("x\\n<!-- example: shell -->\\n```\\na\\n\\nb\\n"
    ...                "```\\n```\\nunmarked\\n```\\n")
    [('shell', 4, ['a', '', 'b'])]
    >>> parse_examples("<!-- example: shell -->\\ntext\\n")
    [('shell', 2, None)]
    """
    lines = text.splitlines()
    found = []
    k = 0
    while k < len(lines):
        m = EXAMPLE.match(lines[k].strip())
        k += 1
        if not m:
            continue
        if k >= len(lines) or not FENCE.match(lines[k]):
            found.append((m.group(1), k + 1, None))
            continue
        fence = FENCE.match(lines[k]).group(1)
        end = k + 1
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        found.append((m.group(1), k + 2, lines[k + 1:end]))
        k = end + 1
    return found


def match_block(block, log):
    """Where block (doc lines) fails to be consecutive lines of log, after
    normalise: None when it matches, else (index in block, the doc line,
    the log line it met or None) of the attempt that went furthest.

    >>> log = ["perfmon> a", "1 x", "perfmon> b", "2 y", "3 z", "q"]
    >>> match_block(["perfmon> b", "7 y"], log)
    >>> match_block(["perfmon> a", "...", "9 z", "q"], log)
    >>> match_block(["perfmon> b", "2 y", "3 w"], log)
    (2, '3 w', '3 z')
    >>> match_block(["perfmon> c"], log)
    (0, 'perfmon> c', None)
    >>> match_block(["perfmon> b", "...", "none"], log)
    (2, 'none', None)
    """
    want = [None if l.strip() == SKIP else normalise(l) for l in block]
    have = [normalise(l) for l in log]
    best = (0, block[0] if block else "", None)
    for start in range(len(have)):
        if not want or have[start] != want[0]:
            continue
        i, j = 1, start + 1
        while i < len(want):
            if want[i] is None:
                # Skip to the first log line matching the next doc line.
                nxt = want[i + 1] if i + 1 < len(want) else None
                while j < len(have) and nxt is not None and have[j] != nxt:
                    j += 1
                i += 1
                if nxt is None:
                    break
                if j >= len(have):
                    break
                continue
            if j >= len(have) or have[j] != want[i]:
                break
            i += 1
            j += 1
        if i >= len(want):
            return None
        if i > best[0]:
            best = (i, block[i], log[j] if j < len(log) else None)
    return best


def check_examples(docs, logs, result):
    """Add a result per marked example of docs ({path: text}) to result:
    its block against logs ({boot name: serial log path})."""
    for path in sorted(docs):
        for name, lineno, block in parse_examples(docs[path]):
            test = "example %s:%d (%s)" % (path, lineno, name)
            if block is None:
                result.add("fail", test, ["the marker is not followed by "
                                          "a fenced block"])
                continue
            source = logs.get(name)
            if not source or not os.path.isfile(source):
                result.add("fail", test, ["no log of boot %r in this run "
                                          "(logs of: %s)" % (name, ", ".join(
                                              sorted(logs)))])
                continue
            with open(source, errors="replace") as f:
                log = f.read().splitlines()
            miss = match_block(block, log)
            if miss is None:
                result.add("ok", test)
                continue
            k, doc_line, log_line = miss
            detail = ["%s:%d: %s" % (path, lineno + k, doc_line)]
            if k == 0:
                detail.append("the block's first line is nowhere in %s"
                              % source)
            elif log_line is None:
                detail.append("%s ends, or has no such line, there"
                              % source)
            else:
                detail.append("%s has instead: %s" % (source, log_line))
            result.add("fail", test, detail)


HELP_TARGET = re.compile(r"^make(?: ([a-z][\w-]*))?(?:\s|$)")
README_TARGET = re.compile(r"^- `make(?: ([a-z][\w-]*))?`")


def help_targets(text):
    """The targets `make help` lists: a line per target, `make TARGET`
    at its start ("" for plain make).

    >>> help_targets("make            build\\nmake run        boot\\n"
    ...              "                (more)\\n  SMP=n  CPUs\\n")
    ['', 'run']
    """
    return [m.group(1) or "" for m in map(HELP_TARGET.match,
                                          text.splitlines()) if m]


def readme_targets(text):
    """The targets README's section on make targets lists, an item each,
    "- `make TARGET`" at its start.

    >>> readme_targets("## Make targets\\n\\n- `make`: build\\n"
    ...                "- `make run`: boot\\n\\n## Next\\n- `make x`: no\\n")
    ['', 'run']
    """
    found = []
    inside = False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = "targets" in line.lower()
            continue
        m = README_TARGET.match(line) if inside else None
        if m:
            found.append(m.group(1) or "")
    return found


def compare_lists(what, ours, theirs, result, test):
    """One result: ok when the two lists name the same items, else a
    line per item one lacks.

    >>> r = Result("docs")
    >>> compare_lists(("README", "make help"), ["", "run"], ["run", "x"],
    ...               r, "targets")
    >>> r.lines
    ['FAIL docs targets', "     'make' is in README, not in make help", \
"     'make x' is in make help, not in README"]
    """
    detail = []
    for item in ours:
        if item not in theirs:
            detail.append("%r is in %s, not in %s" % (
                ("make " + item).strip() if test == "targets" else item,
                what[0], what[1]))
    for item in theirs:
        if item not in ours:
            detail.append("%r is in %s, not in %s" % (
                ("make " + item).strip() if test == "targets" else item,
                what[1], what[0]))
    result.add("fail" if detail else "ok", test, detail)


def check_targets(root, result):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make", "-s", "--no-print-directory", "-C", root,
                           "help"], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        result.add("fail", "readme-targets", ["make help failed:"]
                   + (proc.stdout + proc.stderr).splitlines()[-10:])
        return
    with open(os.path.join(root, "README.md")) as f:
        readme = readme_targets(f.read())
    compare_lists(("README", "make help"), readme,
                  help_targets(proc.stdout), result, "readme-targets")


ARG_KEY = re.compile(r"\bARG_DEFINE_(?:STRING|WORD|U64)\(\"([^\"]+)\"")
DOC_KEY = re.compile(r"^- `([\w.]+)=")


def doc_keys(text):
    """The keys docs/cmdline.md lists, an item each, "- `KEY=" at its
    start.

    >>> doc_keys("- `loglevel=N`: how much\\n  - `x=1` no\\n- `test=SEL`")
    ['loglevel', 'test']
    """
    return [m.group(1) for m in map(DOC_KEY.match, text.splitlines()) if m]


def check_cmdline(root, result):
    keys = []
    for pattern in ("kern/**/*.c", "arch/**/*.c", "tests/**/*.c"):
        for path in sorted(glob.glob(os.path.join(root, pattern),
                                     recursive=True)):
            if os.path.relpath(path, root).startswith("tests/host/"):
                continue
            with open(path, errors="replace") as f:
                keys += [k for k in ARG_KEY.findall(f.read())
                         if k not in keys]
    try:
        with open(os.path.join(root, "docs", "cmdline.md")) as f:
            listed = doc_keys(f.read())
    except OSError as e:
        result.add("fail", "cmdline-keys", [str(e)])
        return
    compare_lists(("docs/cmdline.md", "the sources' ARG_DEFINE_*"),
                  listed, keys, result, "cmdline-keys")


LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchor(heading):
    """The anchor GitHub gives a Markdown heading.

    >>> heading_anchor("The overflow interrupt as an NMI (`kern/x.h`)")
    'the-overflow-interrupt-as-an-nmi-kernxh'
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def check_links(docs, root, result):
    """One result: ok when every relative link of docs ({path: text})
    leads to a file and, with an anchor, to one of its headings."""
    detail = []
    for path in sorted(docs):
        text = re.sub(r"^```.*?^```", "", docs[path], flags=re.S | re.M)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue
            name, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(root, os.path.dirname(path),
                                                 name)) if name else \
                os.path.join(root, path)
            if not os.path.exists(dest):
                detail.append("%s: no file %s" % (path, target))
                continue
            if anchor and dest.endswith(".md"):
                with open(dest) as f:
                    heads = [heading_anchor(l.lstrip("#")) for l in f
                             if re.match(r"^#+ ", l)]
                if anchor not in heads:
                    detail.append("%s: no heading #%s in %s"
                                  % (path, anchor, name or path))
    result.add("fail" if detail else "ok", "links", detail)


def read_docs(root):
    docs = {}
    for path in ["README.md"] + sorted(glob.glob(os.path.join(
            root, "docs", "*.md"))):
        rel = os.path.relpath(os.path.join(root, path), root)
        with open(os.path.join(root, rel)) as f:
            docs[rel] = f.read()
    return docs


def check_docs(done, root=ROOT):
    """The docs check of a make check run. done: (boot, result, log) of
    the boots that ran (boot None for the other checks)."""
    return run_checks({boot.name: log for boot, _, log in done
                       if boot and log}, root)


def run_checks(logs, root):
    result = Result("docs")
    docs = read_docs(root)
    check_examples(docs, logs, result)
    check_links(docs, root, result)
    check_targets(root, result)
    check_cmdline(root, result)
    return result


def logs_in(logdir):
    """{boot name: log} of the serial logs in a log folder, named
    NN-NAME.log as make check names them (the last of a name wins)."""
    logs = {}
    for path in sorted(glob.glob(os.path.join(logdir, "*.log"))):
        m = re.match(r"^\d+-(.+)\.log$", os.path.basename(path))
        if m:
            logs[m.group(1)] = path
    return logs


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logdir", default=os.path.join(ROOT, "build",
                                                         "logs"))
    args = parser.parse_args()
    result = run_checks(logs_in(args.logdir), ROOT)
    print("\n".join(result.lines))
    print("%d passed, %d failed" % (result.passed, result.failed))
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
