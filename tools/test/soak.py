#!/usr/bin/env python3
"""Boot the kernel suites of `make check` again and again: prove a change
flake-free.

  soak.py --iso ISO [--runs N] [--smp "1 2 4 8 64"] [--seed S]

Each run boots every configuration of runner.py's check plan that must
pass (the suites at each CPU count, width 64, 16 with polling, 12 with
the overflow interrupt, and the shell); the runner's own harness checks
and the host tests are deterministic and left to `make check`. Run r
sets torture.seed=S+r-1 where the torture test runs, so run 1 boots
exactly what `make check` boots and later runs also vary the torture.

A line per boot shows progress. The summary gives, per configuration, the
runs that passed and, for every test that failed at least once, its
failure count, the runs, its first diagnostic, a command that replays the
boot and the serial log of the first failing boot. The exit status is
non-zero when any test failed in any run.
"""

import argparse
import concurrent.futures
import copy
import os
import shlex
import sys
import time

# tools/ is not a package, and keeps no __pycache__.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# perf_profile (make profile's checks) is in tools/perf/.
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "perf"))
import runner  # noqa: E402

DEFAULT_SEED = 0x5eed       # perfmon_torture's own default
DIAG_LINES = 40             # of a failure's first diagnostic, in the summary
PROGRESS_DIAG_LINES = 3     # of each failure, as it happens


class Failure:
    """One test of one configuration that failed in some runs."""

    def __init__(self, config, test):
        self.config = config
        self.test = test
        self.runs = []
        self.detail = None      # the first failure's diagnostic lines
        self.boot = None        # the first failing boot, for its replay
        self.log = None         # its serial output, saved


def runs_torture(cmdline):
    """Whether a command line selects the perfmon torture test."""
    for word in cmdline.split():
        if word.startswith("test="):
            for entry in word[len("test="):].split(","):
                if entry == "all" or entry.split(".")[0] == "perfmon_torture":
                    return True
    return False


def boot_for_run(boot, run, seed):
    """A copy of a plan boot for run `run` (1-based), with its seed."""
    b = copy.copy(boot)
    if runs_torture(b.cmdline):
        b.cmdline = "%s torture.seed=%#x" % (b.cmdline, seed + run - 1)
    return b


def replay_commands(args, accel, boot, test):
    """The runner command that replays a boot, and one that boots the
    failing test alone (same CPUs and options) where it is a kernel
    test."""
    base = ["python3", "tools/test/runner.py", "boot", "--iso", args.iso,
            "--smp", str(boot.smp), "--accel", accel, "--mem", args.mem,
            "--timeout", str(boot.timeout)]
    cmds = [("replay", base + ["--cmdline", boot.cmdline])]
    words = boot.cmdline.split()
    if "." in test and any(w.startswith("test=") for w in words):
        alone = []
        for w in words:
            if w.startswith("test="):
                w = "test=" + test
            elif (w.startswith("torture.seed=")
                  and not test.startswith("perfmon_torture.")):
                continue
            alone.append(w)
        cmds.append(("alone", base + ["--cmdline", " ".join(alone)]))
    return [(label, " ".join(shlex.quote(c) for c in cmd))
            for label, cmd in cmds]


def save_log(logdir, boot, run):
    name = "%s-run%d.log" % (boot.name.replace(",", "-").replace("=", ""),
                             run)
    path = os.path.join(logdir, name)
    with open(path, "w") as f:
        f.write(boot.text)
    return path


def fmt_time(seconds):
    seconds = int(seconds)
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % (seconds // 60, seconds % 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


def print_summary(args, accel, plan, passed_runs, runs_done, failures,
                  elapsed):
    print("\n== soak summary: %d run%s of %d boots, %s"
          % (args.runs, "" if args.runs == 1 else "s", len(plan),
             fmt_time(elapsed)))
    width = max(len(b.name) for b in plan)
    for b in plan:
        done = runs_done.get(b.name, 0)
        ok = passed_runs.get(b.name, 0)
        print("  %-*s  %d/%d runs passed%s"
              % (width, b.name, ok, done,
                 "" if ok == done else "  <- FLAKY" if ok else "  <- FAILS"))
    if not failures:
        print("no test failed")
        return
    print("tests that failed:")
    order = {b.name: i for i, b in enumerate(plan)}
    for f in sorted(failures.values(),
                    key=lambda f: (order[f.config], min(f.runs))):
        print("FAIL %s %s: failed in %d of %d runs (run%s %s)"
              % (f.config, f.test, len(f.runs), runs_done.get(f.config, 0),
                 "" if len(f.runs) == 1 else "s",
                 ", ".join(str(r) for r in sorted(f.runs))))
        detail = f.detail[:DIAG_LINES]
        for line in detail:
            print("     " + line)
        if len(f.detail) > len(detail):
            print("     ... (%d more lines in the log)"
                  % (len(f.detail) - len(detail)))
        print("     first failing boot: %d CPU%s, cmdline '%s'"
              % (f.boot.smp, "" if f.boot.smp == 1 else "s", f.boot.cmdline))
        for label, cmd in replay_commands(args, accel, f.boot, f.test):
            print("     %s: %s" % (label, cmd))
        print("     serial log: %s" % f.log)


def cmd_soak(args):
    accel, reason = runner.choose_accel(args.accel)
    plan = [b for b in runner.check_plan(args) if b.expect == "pass"]
    total = args.runs * len(plan)
    logdir = os.path.join(os.path.dirname(args.iso) or ".", "soak")
    os.makedirs(logdir, exist_ok=True)
    for name in os.listdir(logdir):
        if name.endswith(".log"):
            os.remove(os.path.join(logdir, name))
    print("soak: accelerator %s (%s); %d run%s of %d boots (CPUs %s), "
          "%d at a time; torture seeds %#x..%#x"
          % (accel, reason, args.runs, "" if args.runs == 1 else "s",
             len(plan), " ".join(str(s) for s in args.smp), args.jobs,
             args.seed, args.seed + args.runs - 1), flush=True)

    passed_runs = {}
    runs_done = {}
    boots_left = {r: len(plan) for r in range(1, args.runs + 1)}
    boots_failed = {r: 0 for r in range(1, args.runs + 1)}
    failures = {}           # (config, test) -> Failure
    start = time.monotonic()
    done = 0

    def account(run, boot, res, seconds):
        nonlocal done
        done += 1
        runs_done[boot.name] = runs_done.get(boot.name, 0) + 1
        if res.failed == 0:
            passed_runs[boot.name] = passed_runs.get(boot.name, 0) + 1
            verdict = "ok  "
        else:
            boots_failed[run] += 1
            verdict = "FAIL"
        elapsed = time.monotonic() - start
        eta = elapsed / done * (total - done)
        print("[%*d/%d] run %d %-18s %s %3d passed, %d failed, %d skipped "
              "(%.0f s; %s elapsed, ~%s left)"
              % (len(str(total)), done, total, run, boot.name, verdict,
                 res.passed, res.failed, res.skipped, seconds,
                 fmt_time(elapsed), fmt_time(eta)), flush=True)
        log = save_log(logdir, boot, run) if res.failed else None
        for test, detail in res.failures:
            print("       FAIL %s %s" % (boot.name, test))
            for line in detail[:PROGRESS_DIAG_LINES]:
                print("            " + line)
            key = (boot.name, test)
            f = failures.setdefault(key, Failure(boot.name, test))
            # Boots end out of order: keep the lowest run's as the first.
            if not f.runs or run < min(f.runs):
                f.detail = detail
                f.boot = boot
                f.log = log
            f.runs.append(run)
        boots_left[run] -= 1
        if boots_left[run] == 0:
            print("soak: run %d/%d done, %d/%d boots passed"
                  % (run, args.runs, len(plan) - boots_failed[run],
                     len(plan)), flush=True)

    def timed_run(boot):
        t0 = time.monotonic()
        res = boot.run(args, accel)
        return res, time.monotonic() - t0

    pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
    futures = {}
    for run in range(1, args.runs + 1):
        for boot in plan:
            b = boot_for_run(boot, run, args.seed)
            futures[pool.submit(timed_run, b)] = (run, b)
    interrupted = False
    try:
        for fut in concurrent.futures.as_completed(futures):
            run, boot = futures[fut]
            res, seconds = fut.result()
            account(run, boot, res, seconds)
    except KeyboardInterrupt:
        # The boots under way get the terminal's SIGINT too and end.
        interrupted = True
        print("\nsoak: interrupted; summary of the boots that finished")
    pool.shutdown(wait=not interrupted, cancel_futures=True)

    print_summary(args, accel, plan, passed_runs, runs_done, failures,
                  time.monotonic() - start)
    nr_fail_boots = sum(boots_failed.values())
    print("soak: %d/%d boots passed; %d test%s failed at least once"
          % (done - nr_fail_boots, total, len(failures),
             "" if len(failures) == 1 else "s"))
    if interrupted:
        return 130
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.
                                     RawDescriptionHelpFormatter)
    parser.add_argument("--iso", required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--smp", default="1 2 4 8 64")
    parser.add_argument("--accel", default="auto",
                        choices=["auto", "kvm", "tcg"])
    parser.add_argument("--mem", default="512M")
    parser.add_argument("--seed", type=lambda s: int(s, 0),
                        default=DEFAULT_SEED,
                        help="torture seed of run 1 (default %#x, as "
                        "make check)" % DEFAULT_SEED)
    parser.add_argument("--jobs", type=int,
                        default=int(os.environ.get("JOBS", "0"))
                        or os.cpu_count() or 1)
    args = parser.parse_args()
    args.smp = [int(s) for s in args.smp.split()]
    if args.runs < 1 or not args.smp:
        parser.error("need at least one run and one CPU count")
    return cmd_soak(args)


if __name__ == "__main__":
    sys.exit(main())
