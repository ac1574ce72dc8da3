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
                    r"(\d+) periods throttled \((\d+) events, (\d+) "
                    r"records\); (\d+) records produced$", re.M)
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
           "kallsyms", "kernel.elf")
# Linker labels that share a function's address: left out of the ELF
# copy perf reads, or perf would name that function by them.
LABELS = ("text_start", "text_end")
# What QEMU's TCG "-cpu max" (QEMU 7.x) says of itself: qemu64's
# identity, vendor AMD, family 15, model 107, stepping 1.
TCG_CPUDESC = "QEMU TCG CPU"
TCG_CPUID = "AuthenticAMD,15,107,1"


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
    rec = record_line(args)
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


def linux_perf():
    """Linux perf's path, or None when it is absent or does not run."""
    perf = shutil.which("perf")
    if perf is None or subprocess.run([perf, "version"],
                                      capture_output=True).returncode != 0:
        return None
    return perf


def perf_cmd(perf, buildid_dir):
    """perf's command words, with its build-id cache (None: perf's own
    default, ~/.debug)."""
    return [perf] + (["--buildid-dir", buildid_dir] if buildid_dir else [])


def mem_kb(mem):
    """QEMU's -m size in kB.

    >>> mem_kb("512M"), mem_kb("1G"), mem_kb("256")
    (524288, 1048576, 262144)
    """
    m = re.match(r"^(\d+)([MG]?)$", mem.upper())
    if m is None:
        return 0
    return int(m.group(1)) * (1048576 if m.group(2) == "G" else 1024)


def host_cpu():
    """(CPU description, perf's x86 CPUID string) of the host, from
    /proc/cpuinfo: what a KVM guest with -cpu max sees."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not line.strip():
                    break
                info[key.strip()] = value.strip()
    except OSError:
        pass
    return (info.get("model name", "unknown"), "%s,%s,%s,%s" % (
        info.get("vendor_id", "unknown"), info.get("cpu family", "0"),
        info.get("model", "0"), info.get("stepping", "0")))


def kernel_version():
    """The kernel's version: the tree's git description."""
    proc = subprocess.run(["git", "-C", os.path.dirname(HERE), "describe",
                           "--always", "--dirty"], capture_output=True,
                          text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        return "perfmon"
    return "perfmon " + proc.stdout.strip()


def machine_args(args, accel, capture):
    """perf-convert's --machine options: the guest that recorded."""
    cpudesc, cpuid = ((TCG_CPUDESC, TCG_CPUID) if accel == "tcg"
                      else host_cpu())
    tod = int(os.stat(capture).st_mtime * 1000000000)
    fields = [("hostname", "perfmon"), ("osrelease", "perfmon"),
              ("version", kernel_version()), ("arch", "x86_64"),
              ("cpudesc", cpudesc), ("cpuid", cpuid),
              ("total_mem_kb", str(mem_kb(args.mem))), ("tod_ns", str(tod)),
              ("cmdline", record_line(args))]
    out = []
    for key, value in fields:
        out += ["--machine", "%s=%s" % (key, value)]
    return out


def record_line(args):
    """The shell's perf record command line."""
    return "perf record -e %s%s -- %s" % (args.event, sampling_opts(args),
                                          args.workload)


def run(cmd, output=None):
    """Run a host tool; return None or its complaint."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return "%s failed (status %d): %s" % (
            " ".join(os.path.basename(w) for w in cmd[:2]), proc.returncode,
            proc.stderr.strip())
    if output is not None:
        with open(output, "w") as f:
            f.write(proc.stdout)
    return None


def convert(args, out, accel):
    """The outputs from the capture, and the kernel's ELF in perf's
    build-id cache (args.buildid_dir, None for perf's default). Return
    None or why not."""
    py = sys.executable
    capture = os.path.join(out, "capture.txt")
    path = {name: os.path.join(out, name) for name in OUTPUTS}
    objcopy = (args.nm[:-2] + "objcopy" if args.nm.endswith("nm")
               else "objcopy")
    strip = [objcopy]
    for label in LABELS:
        strip += ["-N", label]
    steps = [
        (strip + [args.elf, path["kernel.elf"]], None),
        ([py, os.path.join(os.path.dirname(HERE), "build", "gen-ksyms"),
          "--kallsyms", args.nm, args.elf],
         path["kallsyms"]),
        ([py, tool("perf-convert"), "-f", "script", "-o",
          path["perf-script.txt"], capture], None),
        ([py, tool("perf-convert"), "-f", "folded", "--weight", "samples",
          "-o", path["stacks.folded"], capture], None),
        ([py, tool("perf-convert"), "-f", "perf-data", "--kallsyms",
          path["kallsyms"], "--vmlinux", path["kernel.elf"]]
         + machine_args(args, accel, capture)
         + ["-o", path["perf.data"], capture], None),
        ([py, tool("flamegraph"), "--title", record_line(args),
          "--unit", "samples", "-o", path["flamegraph.svg"],
          path["stacks.folded"]], None),
    ]
    perf = linux_perf()
    if perf is not None:
        # perf finds the kernel of perf.data by the build id its header
        # carries: the ELF's, in the cache.
        steps.append((perf_cmd(perf, args.buildid_dir)
                      + ["buildid-cache", "-a", path["kernel.elf"]], None))
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


def linux_perf_report(out, buildid_dir):
    """perf report --stdio's text of OUT/perf.data, with no symbol
    option (perf finds the kernel in the build-id cache), or (None,
    why)."""
    perf = linux_perf()
    if perf is None:
        return None, "Linux perf is not installed (make deps installs " \
                     "linux-perf)"
    proc = subprocess.run(perf_cmd(perf, buildid_dir)
                          + ["report", "--stdio", "-f", "-i",
                             os.path.join(out, "perf.data"), "--sort",
                             "comm,symbol"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, "perf report failed (status %d): %s" % (
            proc.returncode, proc.stderr.strip()[-300:])
    return proc.stdout, None


def host_symbols():
    """The names in the host's /proc/kallsyms (empty where unreadable)."""
    try:
        with open("/proc/kallsyms") as f:
            return {line.split()[2] for line in f if len(line.split()) >= 3}
    except OSError:
        return set()


def elf_symbols(nm, elf):
    """The function names of the kernel's ELF."""
    proc = subprocess.run([nm, elf], capture_output=True, text=True)
    return {w[2] for w in (line.split() for line in proc.stdout.splitlines())
            if len(w) == 3 and w[1] in "tT"}


def dump_samples(capture):
    """The samples perf.data holds: the dump's received less dropped."""
    with open(capture, errors="replace") as f:
        totals = re.findall(r"^pd totals received=(\d+) .*dropped=(\d+)",
                            f.read(), re.M)
    return int(totals[-1][0]) - int(totals[-1][1]) if totals else None


# Linux perf's readers of a perf.data, and what each run must show: a
# command (words after "perf"; PD is the file) and a check of its
# standard output (None: only that it exits 0 without a crash).
READERS = (
    ("report", ["report", "--stdio", "-f", "-i", "PD"]),
    ("report_n", ["report", "--stdio", "-f", "-n", "--no-children",
                  "--sort", "comm", "-i", "PD"]),
    ("script", ["script", "-f", "-i", "PD"]),
    ("annotate", ["annotate", "--stdio", "-f", "-i", "PD",
                  "perf_work_tree_shared"]),
    ("diff", ["diff", "-f", "PD", "PD"]),
    ("evlist", ["evlist", "-v", "-f", "-i", "PD"]),
    ("header", ["report", "--header-only", "-f", "-i", "PD"]),
    ("buildid_list", ["buildid-list", "-f", "-i", "PD"]),
    ("json", ["data", "convert", "-f", "--force", "-i", "PD", "--to-json",
              "JSON"]),
)
HEADER_NEEDS = ("hostname : perfmon", "os release : perfmon", "arch : x86_64",
                "nrcpus online", "nrcpus avail", "cpudesc", "cpuid",
                "total memory", "cmdline", "event : name = ", "clockid",
                "CPU_TOPOLOGY info available", "pmu mappings: software = 1",
                "time of first sample", "time of last sample")


def run_readers(perf, out, buildid_dir):
    """{name: (status, stdout, stderr)} of READERS on OUT/perf.data."""
    pd = os.path.join(out, "perf.data")
    json = os.path.join(out, "perf.json")
    runs = {}
    for name, words in READERS:
        words = [pd if w == "PD" else json if w == "JSON" else w
                 for w in words]
        proc = subprocess.run(perf_cmd(perf, buildid_dir) + words,
                              capture_output=True, text=True,
                              errors="replace")
        runs[name] = (proc.returncode, proc.stdout, proc.stderr)
    with open(json, errors="replace") if os.path.exists(json) else \
            open(os.devnull) as f:
        runs["json"] += (f.read(),)
    return runs


def check_readers(runs, ours, host, samples, cpus):
    """Problems of Linux perf's readers' runs (run_readers) on a profile
    of samples samples on cpus CPUs: every one exits 0, shows our
    symbols (ours, the ELF's, less the host's) and counts that agree."""
    problems = []
    for name, (status, _, err) in ((n, r[:3]) for n, r in runs.items()):
        if status != 0:
            problems.append("perf %s: status %d: %s"
                            % (name, status, err.strip()[-200:]))
    mine = ours - host
    report = runs["report"][1]
    syms = set(re.findall(r"\[k\] (\S+)", report))
    if not syms & mine:
        problems.append("perf report: none of our kernel's symbols")
    if syms - ours:
        problems.append("perf report: symbols not in our kernel: %s"
                        % " ".join(sorted(syms - ours)[:5]))
    counted = sum(int(n) for n in re.findall(r"^\s+[\d.]+%\s+(\d+)\s+\S",
                                             runs["report_n"][1], re.M))
    if counted != samples:
        problems.append("perf report -n: %d samples, the profile holds %d"
                        % (counted, samples))
    heads = re.findall(r"^\S+\s+\d+ \[\d{3}\]\s+[\d.]+:",
                       runs["script"][1], re.M)
    if len(heads) != samples:
        problems.append("perf script: %d samples, the profile holds %d"
                        % (len(heads), samples))
    frames = set(re.findall(r"^\s+[0-9a-f]+ (\w+)\+0x",
                            runs["script"][1], re.M))
    if not frames & mine or frames - ours:
        problems.append("perf script: frames %s, not our kernel's"
                        % " ".join(sorted(frames - ours)[:5]))
    if "<perf_work_tree_shared>:" not in runs["annotate"][1]:
        problems.append("perf annotate: no disassembly of "
                        "perf_work_tree_shared")
    diff = set(re.findall(r"\[k\] (\S+)", runs["diff"][1]))
    if not diff & mine or diff - ours:
        problems.append("perf diff: symbols %s, not our kernel's"
                        % " ".join(sorted(diff)[:5]))
    header = runs["header"][1]
    for need in HEADER_NEEDS + ("nrcpus online : %d" % cpus,):
        if need not in header:
            problems.append("perf report --header-only: no '%s'" % need)
    if not re.search(r"^[0-9a-f]{40} \[kernel\.kallsyms\]$",
                     runs["buildid_list"][1], re.M):
        problems.append("perf buildid-list: no build id for "
                        "[kernel.kallsyms]")
    if "mmap: 1" not in runs["evlist"][1] \
            or "sample_id_all: 1" not in runs["evlist"][1]:
        problems.append("perf evlist -v: no mmap/sample_id_all flags")
    json = runs["json"][3]
    nr_json = len(re.findall(r'^\t\t\{$', json, re.M))
    if nr_json != samples or '"os-release": "perfmon"' not in json:
        problems.append("perf data convert --to-json: %d samples, the "
                        "profile holds %d" % (nr_json, samples))
    return problems


def check_unresolved(perf, out, ours, host):
    """Problems when perf, without the build-id cache, shows host symbols
    for our samples or does not say it found no kernel."""
    empty = os.path.join(out, "buildid-empty")
    shutil.rmtree(empty, ignore_errors=True)
    os.makedirs(empty)
    proc = subprocess.run(perf_cmd(perf, empty) + [
        "report", "--stdio", "-f", "--no-children", "-i",
        os.path.join(out, "perf.data")], capture_output=True, text=True,
        errors="replace")
    problems = []
    if proc.returncode != 0:
        problems.append("perf report without the cache: status %d"
                        % proc.returncode)
    syms = set(re.findall(r"\[k\] (\S+)", proc.stdout))
    named = {s for s in syms if not s.startswith("0x")}
    if named:
        problems.append("perf report without the cache names symbols: %s "
                        "(host's: %s)" % (" ".join(sorted(named)[:5]),
                                          " ".join(sorted(named & host)[:5])))
    if "No kallsyms or vmlinux with build-id" not in proc.stdout + \
            proc.stderr:
        problems.append("perf report without the cache does not say that "
                        "it found no kernel with the file's build id")
    return problems


def check_outputs(out, workload, result, nm="nm", buildid_dir=None):
    """Check make profile's outputs into result (a runner Result); Linux
    perf reads perf.data with the build-id cache buildid_dir (None:
    perf's default)."""
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
                           "folded", "--weight", "samples",
                           os.path.join(out, "capture.txt")],
                          capture_output=True, text=True)
    with open(path["stacks.folded"]) as f:
        same = proc.returncode == 0 and f.read() == proc.stdout
    result.add("ok" if same else "fail", "folded_equals_perf_convert",
               () if same else ["stacks.folded differs from perf-convert's "
                                "output of capture.txt"])
    if not workload.startswith("calltree"):
        return
    text, why = linux_perf_report(out, buildid_dir)
    if text is None and why.startswith("Linux perf is not"):
        for name in ("linux_perf_report_shares",
                     "linux_perf_script_equals_text", "linux_perf_readers",
                     "linux_perf_without_cache_no_host_symbols"):
            result.add("skip", name, [why])
        return
    problems = [why] if text is None else check_shares(
        report_shares(text), "perf report")
    result.add("fail" if problems else "ok", "linux_perf_report_shares",
               problems)
    perf = linux_perf()
    # Linux perf script of the perf.data: perf-convert's text, but for
    # the columns' widths.
    proc = subprocess.run(perf_cmd(perf, buildid_dir)
                          + ["script", "-f", "-i", path["perf.data"]],
                          capture_output=True, text=True)
    with open(path["perf-script.txt"]) as f:
        same = (proc.returncode == 0
                and re.sub(r" +", " ", proc.stdout)
                == re.sub(r" +", " ", f.read()))
    result.add("ok" if same else "fail", "linux_perf_script_equals_text",
               () if same else ["perf script -i perf.data (status %d) "
                                "differs from perf-script.txt"
                                % proc.returncode])
    ours = elf_symbols(nm, path["kernel.elf"])
    host = host_symbols()
    samples = dump_samples(os.path.join(out, "capture.txt"))
    with open(os.path.join(out, "capture.txt"), errors="replace") as f:
        cpus = re.findall(r"^perfmon-dump \S+ begin .*\bcpus=(\d+)",
                          f.read(), re.M)
    problems = check_readers(run_readers(perf, out, buildid_dir), ours, host,
                             samples, int(cpus[-1]) if cpus else 0)
    result.add("fail" if problems else "ok", "linux_perf_readers", problems)
    problems = check_unresolved(perf, out, ours, host)
    result.add("fail" if problems else "ok",
               "linux_perf_without_cache_no_host_symbols", problems)


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
            timeout=self.timeout,
            # A cache of this run's own: make check leaves ~/.debug alone.
            buildid_dir=os.path.abspath(os.path.join(out, "buildid")))
        start = time.monotonic()
        self.log = log or os.path.join(out, "console.log")
        problem = record(pargs, out, self.log)
        if problem is None:
            problem = convert(pargs, out, accel)
        self.elapsed = time.monotonic() - start
        result.lines.append("== profile: %d CPUs, %s, %.1f s, outputs in %s"
                            % (self.smp, accel, self.elapsed, out))
        if problem:
            result.add("fail", "profile", [problem])
            return result
        check_outputs(out, pargs.workload, result, pargs.nm,
                      pargs.buildid_dir)
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
    parser.add_argument("--buildid-dir", default="",
                        help="perf's build-id cache to add the kernel ELF "
                        "to (default: perf's own, ~/.debug)")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if not re.match(r"^(spin|pingpong|calltree) \d+$", args.workload):
        print("profile: WORKLOAD='%s': spin MS, pingpong N or calltree N"
              % args.workload, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    if args.buildid_dir:
        args.buildid_dir = os.path.abspath(args.buildid_dir)
    args.buildid_dir = args.buildid_dir or None
    log = os.path.join(args.out, "console.log")
    accel, _ = choose_accel(args.accel)
    problem = record(args, args.out, log) or convert(args, args.out, accel)
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
    if linux_perf() is None:
        print("Linux perf is not installed (make deps installs linux-perf)")
    else:
        print("Linux perf (the kernel ELF is in its build-id cache %s): "
              "perf%s report --stdio -i %s"
              % (args.buildid_dir or "~/.debug",
                 " --buildid-dir " + args.buildid_dir if args.buildid_dir
                 else "", os.path.join(args.out, "perf.data")))
    if args.check:
        result = Result("profile")
        check_outputs(args.out, args.workload, result, args.nm,
                      args.buildid_dir)
        print("\n".join(result.lines))
        return 1 if result.failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
