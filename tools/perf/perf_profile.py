#!/usr/bin/env python3
"""make profile: boot the kernel, profile a workload, and write under OUT
what Linux's profilers and a browser read.

  perf_profile.py --iso ISO --elf ELF [--nm NM] [--out DIR] [--smp N]
             [--accel auto|kvm|tcg] [--mem M] [--workload 'calltree 1000']
             [--event emit] [--period 13] [--check]

The kernel boots with QEMU's debugcon writing to OUT/capture.txt (the
capture channel: dumps never pass through the terminal). The shell runs

  perf record -e EVENT [-c PERIOD] -- WORKLOAD
  perf script --capture
  poweroff

and this tool turns the dump into

  OUT/perf-script.txt   the text Linux perf script prints (perf-convert)
  OUT/stacks.folded     folded stacks (perf-convert -f folded)
  OUT/flamegraph.svg    the flame graph (tools/perf/flamegraph)
  OUT/perf.data         a file Linux perf reads (perf-convert -f perf-data)
  OUT/kallsyms          the kernel's symbols for it (gen-ksyms --kallsyms)

plus OUT/console.log, the serial console. --check then checks the
outputs (check_outputs) and, for the calltree workload, the shares Linux
perf report finds. Exit status 0, 1 when the boot, the recording, a
conversion or a check failed (saying which), 2 for bad arguments.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test"))
from runner_ktap import Result  # noqa: E402
from runner_qemu import Qemu, choose_accel, qemu_command  # noqa: E402

PROMPT = r"perfmon> $"
TOTALS = re.compile(r"^perf record: (\d+) samples received, (\d+) lost, "
                    r"(\d+) throttled \((\d+) records produced\)$", re.M)
# The calltree workload's shares in percent (kern/perf/perf_work.h): Self,
# and Children where a function calls others.
CALLTREE_SELF = {"perf_work_tree_root": 10, "perf_work_tree_alpha": 10,
                 "perf_work_tree_beta": 20, "perf_work_tree_gamma": 20,
                 "perf_work_tree_shared": 40}
CALLTREE_CHILDREN = {"perf_work_tree_root": 100, "perf_work_tree_alpha": 30,
                     "perf_work_tree_beta": 60, "perf_work_tree_gamma": 20,
                     "perf_work_tree_shared": 40}
# Sampled on emit with a period prime to the round's 20 units, the shares
# are exact up to a sample per function and what the rings lost: two
# points either way.
SHARE_BOUND = 2.0
OUTPUTS = ("perf-script.txt", "stacks.folded", "flamegraph.svg", "perf.data",
           "kallsyms")


def tool(name):
    return os.path.join(HERE, name)


def sampling_opts(args):
    """perf record's sampling option: -F FREQ when a frequency is asked,
    else -c PERIOD (none when PERIOD is empty).

    >>> sampling_opts(argparse.Namespace(period="13", freq=""))
    ' -c 13'
    >>> sampling_opts(argparse.Namespace(period="13", freq="500"))
    ' -F 500'
    """
    if getattr(args, "freq", ""):
        return " -F %s" % args.freq
    return " -c %s" % args.period if args.period else ""


def record(args, out, log):
    """Boot, record, capture. Return None, or why it failed."""
    accel, _ = choose_accel(args.accel)
    capture = os.path.join(out, "capture.txt")
    if os.path.exists(capture):
        os.remove(capture)
    cmd = qemu_command(args.iso, args.smp, accel, args.mem, "")
    cmd += ["-debugcon", "file:" + capture]
    rec = "perf record -e %s%s -- %s" % (args.event, sampling_opts(args),
                                          args.workload)
    qemu = Qemu(cmd)
    deadline = time.monotonic() + args.timeout
    problem = None
    pos = 0
    # Whole lines only (up to their newline): a line still arriving
    # would match cut short.
    said = r"|^(?:perf[^\n]*: |usage: )[^\n]*\n"
    for pattern, reply in ((PROMPT, rec + "\r"),
                           (TOTALS.pattern[:-1] + r"\n" + said, None),
                           (PROMPT, "perf script --capture\r"),
                           (r"^perf script: \d+ lines written to the "
                            r"capture channel\n" + said, None),
                           (PROMPT, "poweroff\r"),
                           (r"^powering off$", None)):
        m = qemu.expect(pattern, pos, deadline)
        if m is None:
            problem = "no %r on the console" % pattern
            qemu.kill()
            break
        if m.group(0).startswith(("perf:", "usage:", "perf script: no")):
            problem = "the shell said: " + m.group(0).strip()
            qemu.kill()
            break
        pos = m.end()
        if reply:
            qemu.send(reply)
    qemu.wait(deadline)
    with open(log, "w") as f:
        f.write("# %s\n# %s\n" % (rec, " ".join(cmd)))
        f.write(qemu.text)
    return problem


def run(cmd, output=None):
    """Run a host tool; return None or its complaint."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return "%s failed (status %d): %s" % (
            os.path.basename(cmd[1]), proc.returncode, proc.stderr.strip())
    if output is not None:
        with open(output, "w") as f:
            f.write(proc.stdout)
    return None


def convert(args, out):
    """The outputs from the capture. Return None or why not."""
    py = sys.executable
    capture = os.path.join(out, "capture.txt")
    path = {name: os.path.join(out, name) for name in OUTPUTS}
    steps = [
        ([py, os.path.join(os.path.dirname(HERE), "build", "gen-ksyms"),
          "--kallsyms", args.nm, args.elf],
         path["kallsyms"]),
        ([py, tool("perf-convert"), "-f", "script", "-o",
          path["perf-script.txt"], capture], None),
        ([py, tool("perf-convert"), "-f", "folded", "-o",
          path["stacks.folded"], capture], None),
        ([py, tool("perf-convert"), "-f", "perf-data", "--kallsyms",
          path["kallsyms"], "-o", path["perf.data"], capture], None),
        ([py, tool("flamegraph"), "--title", "perf record -e %s -- %s"
          % (args.event, args.workload), "-o", path["flamegraph.svg"],
          path["stacks.folded"]], None),
    ]
    for cmd, output in steps:
        problem = run(cmd, output)
        if problem:
            return problem
    return None


# ---- checks --------------------------------------------------------------

def check_svg(svg):
    """None when the SVG parses as XML and its boxes' widths add up (the
    boxes on one never wider than it, the bottom one the graph's width
    and weight), else why not.

    >>> import importlib.machinery
    >>> fg = importlib.machinery.SourceFileLoader(
    ...     "fg", tool("flamegraph")).load_module()
    >>> check_svg(fg.render(fg.parse("a;b 3\\na;c 1\\nd 2\\n")))
    >>> check_svg("<svg><rect")[:28]
    'the SVG does not parse as XM'
    """
    try:
        root = ElementTree.fromstring(svg)
    except ElementTree.ParseError as e:
        return "the SVG does not parse as XML: %s" % e
    frames = []
    for rect in root.iter("{http://www.w3.org/2000/svg}rect"):
        if "data-weight" in rect.attrib:
            frames.append((int(rect.get("data-depth")),
                           float(rect.get("x")), float(rect.get("width")),
                           int(rect.get("data-weight"))))
    bottom = [f for f in frames if f[0] == 0]
    if len(bottom) != 1:
        return "%d bottom boxes, want 1" % len(bottom)
    width = float(root.get("width")) - 20
    if abs(bottom[0][2] - width) > 0.01:
        return "the bottom box is %.2f wide, the graph %.2f" % (
            bottom[0][2], width)
    for depth, x, w, weight in frames:
        above = [f for f in frames if f[0] == depth + 1
                 and x - 0.01 <= f[1] < x + w - 0.005]
        if sum(f[2] for f in above) > w + 0.01 * (len(above) + 1):
            return "the boxes above the one at x=%.2f depth %d are wider " \
                   "(%.2f) than it (%.2f)" % (x, depth,
                                               sum(f[2] for f in above), w)
        if sum(f[3] for f in above) > weight:
            return "the boxes above the one at x=%.2f depth %d weigh %d, " \
                   "more than its %d" % (x, depth, sum(f[3] for f in above),
                                        weight)
    return None


def report_shares(text):
    """{symbol: (children or None, self)} from perf report --stdio text,
    with or without the Children column.

    >>> report_shares("    40.00%  40.00%  calltree  [kernel.kallsyms]  "
    ...               "[k] perf_work_tree_shared\\n")
    {'perf_work_tree_shared': (40.0, 40.0)}
    >>> report_shares("    10.09%  [k] perf_work_tree_root  -  -\\n")
    {'perf_work_tree_root': (None, 10.09)}
    """
    shares = {}
    for m in re.finditer(r"^\s+([\d.]+)%\s+(?:([\d.]+)%\s+)?.*?\[k\] (\S+)",
                         text, re.M):
        if m.group(2) is None:
            shares[m.group(3)] = (None, float(m.group(1)))
        else:
            shares[m.group(3)] = (float(m.group(1)), float(m.group(2)))
    return shares


def check_shares(shares, what):
    """Problems of shares {symbol: (children, self)} against the calltree
    workload's, within SHARE_BOUND points."""
    problems = []
    for name, want in sorted(CALLTREE_SELF.items()):
        got = shares.get(name)
        if got is None:
            problems.append("%s: no line for %s" % (what, name))
            continue
        if abs(got[1] - want) > SHARE_BOUND:
            problems.append("%s: %s self %.2f%%, want %d%% +- %.0f"
                            % (what, name, got[1], want, SHARE_BOUND))
        kids = CALLTREE_CHILDREN[name]
        if got[0] is not None and abs(got[0] - kids) > SHARE_BOUND:
            problems.append("%s: %s children %.2f%%, want %d%% +- %.0f"
                            % (what, name, got[0], kids, SHARE_BOUND))
    return problems


def linux_perf_report(out):
    """perf report --stdio's text of OUT/perf.data, or (None, why)."""
    perf = shutil.which("perf")
    if perf is None or subprocess.run([perf, "version"],
                                      capture_output=True).returncode != 0:
        return None, "Linux perf is not installed (make deps installs " \
                     "linux-perf)"
    proc = subprocess.run([perf, "report", "--stdio", "-f", "-i",
                           os.path.join(out, "perf.data"), "--kallsyms",
                           os.path.join(out, "kallsyms"), "--sort",
                           "comm,symbol"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, "perf report failed (status %d): %s" % (
            proc.returncode, proc.stderr.strip()[-300:])
    return proc.stdout, None


def check_outputs(out, workload, result):
    """Check make profile's outputs into result (a runner Result)."""
    path = {name: os.path.join(out, name) for name in OUTPUTS}
    missing = [n for n in OUTPUTS if not os.path.isfile(path[n])]
    if missing:
        result.add("fail", "profile_outputs", ["missing: " + " ".join(
            missing)])
        return
    result.add("ok", "profile_outputs")
    with open(path["flamegraph.svg"]) as f:
        problem = check_svg(f.read())
    result.add("fail" if problem else "ok", "flamegraph_svg_adds_up",
               [problem] if problem else ())
    proc = subprocess.run([sys.executable, tool("perf-convert"), "-f",
                           "folded", os.path.join(out, "capture.txt")],
                          capture_output=True, text=True)
    with open(path["stacks.folded"]) as f:
        same = proc.returncode == 0 and f.read() == proc.stdout
    result.add("ok" if same else "fail", "folded_equals_perf_convert",
               () if same else ["stacks.folded differs from perf-convert's "
                                "output of capture.txt"])
    if not workload.startswith("calltree"):
        return
    text, why = linux_perf_report(out)
    if text is None and why.startswith("Linux perf is not"):
        result.add("skip", "linux_perf_report_shares", [why])
        return
    problems = [why] if text is None else check_shares(
        report_shares(text), "perf report")
    result.add("fail" if problems else "ok", "linux_perf_report_shares",
               problems)
    # Linux perf script of the perf.data: perf-convert's text, but for
    # the columns' widths.
    proc = subprocess.run(["perf", "script", "-f", "-i", path["perf.data"],
                           "--kallsyms", path["kallsyms"]],
                          capture_output=True, text=True)
    with open(path["perf-script.txt"]) as f:
        same = (proc.returncode == 0
                and re.sub(r" +", " ", proc.stdout)
                == re.sub(r" +", " ", f.read()))
    result.add("ok" if same else "fail", "linux_perf_script_equals_text",
               () if same else ["perf script -i perf.data (status %d) "
                                "differs from perf-script.txt"
                                % proc.returncode])


class ProfileBoot:
    """make profile as a boot of make check (runner_checks.check_plan):
    a small calltree profile into LOGDIR/profile/, checked."""

    def __init__(self, smp, timeout):
        self.name = "profile"
        self.smp = smp
        self.timeout = timeout
        self.cmdline = ""
        self.elapsed = 0.0
        self.log = None
        # Not a kernel boot of the suites ("pass"): make soak, which
        # repeats those in parallel, leaves it out (its outputs go to one
        # folder).
        self.expect = "profile"

    def run(self, args, accel, log=None, heartbeat=None):
        result = Result(self.name)
        logdir = os.path.dirname(log) if log else "."
        out = os.path.join(logdir, "profile")
        os.makedirs(out, exist_ok=True)
        pargs = argparse.Namespace(
            iso=args.iso, elf=os.path.join(os.path.dirname(args.iso),
                                           "kernel.elf"),
            nm="nm", smp=self.smp, accel=accel, mem=args.mem,
            workload="calltree 200", event="emit", period="7", freq="",
            timeout=self.timeout)
        start = time.monotonic()
        self.log = log or os.path.join(out, "console.log")
        problem = record(pargs, out, self.log)
        if problem is None:
            problem = convert(pargs, out)
        self.elapsed = time.monotonic() - start
        result.lines.append("== profile: %d CPUs, %s, %.1f s, outputs in %s"
                            % (self.smp, accel, self.elapsed, out))
        if problem:
            result.add("fail", "profile", [problem])
            return result
        check_outputs(out, pargs.workload, result)
        return result


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iso", required=True)
    parser.add_argument("--elf", required=True)
    parser.add_argument("--nm", default="nm")
    parser.add_argument("--out", default="build/profile")
    parser.add_argument("--smp", type=int, default=2)
    parser.add_argument("--accel", default="auto",
                        choices=["auto", "kvm", "tcg"])
    parser.add_argument("--mem", default="512M")
    parser.add_argument("--workload", default="calltree 1000")
    parser.add_argument("--event", default="emit")
    parser.add_argument("--period", default="13")
    parser.add_argument("--freq", default="",
                        help="samples a second (perf record -F): the "
                             "period is estimated, --period ignored")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if not re.match(r"^(spin|pingpong|calltree) \d+$", args.workload):
        print("profile: WORKLOAD='%s': spin MS, pingpong N or calltree N"
              % args.workload, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    log = os.path.join(args.out, "console.log")
    problem = record(args, args.out, log) or convert(args, args.out)
    if problem:
        print("profile: %s (console: %s)" % (problem, log), file=sys.stderr)
        return 1
    with open(log) as f:
        totals = TOTALS.findall(f.read())
    print("profile: perf record -e %s%s -- %s: %s samples (%s lost)"
          % (args.event, sampling_opts(args), args.workload, totals[-1][0],
             totals[-1][1]))
    for name in OUTPUTS:
        print("  %s" % os.path.join(args.out, name))
    print("Linux perf: perf report --stdio -i %s --kallsyms %s"
          % (os.path.join(args.out, "perf.data"),
             os.path.join(args.out, "kallsyms")))
    if args.check:
        result = Result("profile")
        check_outputs(args.out, args.workload, result)
        print("\n".join(result.lines))
        return 1 if result.failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
