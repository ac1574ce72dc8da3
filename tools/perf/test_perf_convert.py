#!/usr/bin/env python3
"""Tests of tools/perf/perf-convert, printed as KTAP for make check's host tests.

The fixture tools/perf/testdata/perf-dump.txt is a console capture written by
hand (a version 1 dump with console lines around and between its
records, every kind of record); perf-dump.linux-perf.txt and
perf-dump.folded are the exact outputs expected from it, the folded
stacks being also what FlameGraph's stackcollapse-perf.pl makes of the
perf script text. perf-dump-v2.txt is the same recording as a version 2
dump (call chains on lines of their own), with what a later kernel may
add (a field appended to a line, a line of a kind this tool does not
know), and converts to the same files. perf-dump-tcg.txt is a real
version 1 capture from the shell under TCG, perf-dump-tcg-v2.txt a
version 2 one, with their outputs checked the same way.

The perf.data writer is checked byte by byte against a file laid out by
hand below (PERF_DATA_DUMP): every field written out as a literal from
the format's description, not from the writer's constants.
"""

import contextlib
import importlib.machinery
import importlib.util
import io
import os
import struct
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "testdata")


def load_tool():
    # The tool has no .py suffix (it is a command): load it by path.
    path = os.path.join(HERE, "perf-convert")
    loader = importlib.machinery.SourceFileLoader("perf_convert", path)
    spec = importlib.util.spec_from_loader("perf_convert", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


pc = load_tool()
import perf_data  # noqa: E402  (beside the tool, on its path now)
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def read(name):
    with open(os.path.join(DATA, name)) as f:
        return f.read()


def check_eq(got, want):
    if got != want:
        raise AssertionError("got %r, want %r" % (got, want))


def run_main(argv, stdin=""):
    """Run the command line; return (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = pc.main(argv)
            except SystemExit as e:
                status = e.code
    finally:
        sys.stdin = old_stdin
    return status, out.getvalue(), err.getvalue()


def expect_error(text, line, words):
    """parse(text) must fail at line with a message holding words."""
    try:
        pc.parse(text)
    except pc.DumpError as e:
        check_eq(e.line, line)
        if words not in str(e):
            raise AssertionError("message %r lacks %r" % (str(e), words))
        return
    raise AssertionError("no error")


# A small valid dump the malformed cases alter.
BEGIN = ("perfmon-dump 1 begin cpus=1 tsc_hz=1000000 event=emit period=100 "
         "frames=8 ms=10 target=thread spin\n")
SAMPLE = "pd sample 0 2500000 7 100 0 1 0xffffffff80100010 spin+0x10\n"
TOTALS = ("pd totals received=1 lost=0 throttled=0 produced=1 "
          "dropped=0\n")
END = "perfmon-dump 1 end lines=3\n"
GOOD = BEGIN + "pd thread 7 spin\n" + SAMPLE + TOTALS + END


@test
def fixture_to_perf_script():
    check_eq(pc.to_script(pc.parse(read("perf-dump.txt"))),
             read("perf-dump.linux-perf.txt"))


@test
def fixture_to_folded():
    check_eq(pc.to_folded(pc.parse(read("perf-dump.txt"))),
             read("perf-dump.folded"))


@test
def tcg_capture_to_perf_script_and_folded():
    # A real console capture: perf record all cswitch 200 on 2 CPUs under
    # TCG, then perf report and perf script, call chains of 8 frames.
    dump = pc.parse(read("perf-dump-tcg.txt"))
    check_eq(len(dump.samples), 40)
    check_eq(pc.to_script(dump), read("perf-dump-tcg.linux-perf.txt"))
    check_eq(pc.to_folded(dump), read("perf-dump-tcg.folded"))


@test
def v2_fixture_converts_as_the_same_recording_in_v1():
    dump = pc.parse(read("perf-dump-v2.txt"))
    check_eq(pc.to_script(dump), read("perf-dump.linux-perf.txt"))
    check_eq(pc.to_folded(dump), read("perf-dump.folded"))
    old = pc.parse(read("perf-dump.txt"))
    check_eq([vars(s) for s in dump.samples], [vars(s) for s in old.samples])
    check_eq((dump.lost, dump.throttles, dump.totals, dump.threads),
             (old.lost, old.throttles, old.totals, old.threads))


@test
def tcg_v2_capture_to_perf_script_and_folded():
    # A real console capture of a version 2 dump: perf record all cswitch
    # 200 on 2 CPUs under TCG, call chains of 8 frames.
    dump = pc.parse(read("perf-dump-tcg-v2.txt"))
    check_eq(dump.info["event"], "cswitch")
    check_eq(len(dump.samples), dump.totals["received"])
    check_eq(pc.to_script(dump), read("perf-dump-tcg-v2.linux-perf.txt"))
    check_eq(pc.to_folded(dump), read("perf-dump-tcg-v2.folded"))
    # Some samples have callers, each chain on its own line.
    if not any(len(s.frames) > 1 for s in dump.samples):
        raise AssertionError("no call chain in the capture")


@test
def fixture_records_and_totals():
    dump = pc.parse(read("perf-dump.txt"))
    check_eq(len(dump.samples), 5)
    check_eq(dump.lost, [(1, 3)])
    check_eq(dump.throttles, [(0, 4100000000, 4100200000, 7, None, None)])
    check_eq(dump.totals, {"received": 5, "lost": 3, "throttled": 1,
                           "produced": 9, "dropped": 0})
    check_eq(dump.threads, {0: "idle", 1: "main", 5: "shell"})
    check_eq(dump.info["target"], "all")


@test
def command_line_writes_both_formats():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.txt")
        status, stdout, stderr = run_main(
            [os.path.join(DATA, "perf-dump.txt"), "-o", out])
        check_eq((status, stdout), (0, ""))
        with open(out) as f:
            check_eq(f.read(), read("perf-dump.linux-perf.txt"))
        # Lost and throttled records are reported, not hidden.
        check_eq(stderr, "perf-convert: note: 5 samples converted; 3 records "
                 "lost in the rings, 1 throttle records (7 periods, events "
                 "not recorded), 0 samples did not fit the kernel's "
                 "buffer\n")
    status, stdout, _ = run_main(["--format", "folded"],
                                 stdin=read("perf-dump.txt"))
    check_eq((status, stdout), (0, read("perf-dump.folded")))


@test
def throttle_records_name_their_event_and_events():
    # Today's throttle line: the event's cookie and the events its
    # dropped periods held, summed in the note.
    text = (BEGIN2 + "pd thread 7 spin\n"
            "pd sample 0 2500000 7 100 0 0xffffffff80100010 spin+0x10\n"
            "pd throttle 0 1 2 3 0 300\npd throttle 1 1 2 4 0 400\n"
            + TOTALS.replace("throttled=0 produced=1",
                             "throttled=2 produced=3")
            + END2.replace("lines=4", "lines=5"))
    dump = pc.parse(text)
    check_eq(dump.throttles, [(0, 1, 2, 3, 0, 300), (1, 1, 2, 4, 0, 400)])
    check_eq(pc.summary(dump), "perf-convert: note: 1 samples converted; "
             "0 records lost in the rings, 2 throttle records (7 periods, "
             "700 events), 0 samples did not fit the kernel's buffer")


@test
def complete_dump_is_quiet():
    status, stdout, stderr = run_main(["-f", "folded"], stdin=GOOD)
    check_eq((status, stdout, stderr), (0, "spin;spin 100\n", ""))


@test
def period_and_thread_name_with_spaces():
    text = GOOD.replace("pd thread 7 spin", "pd thread 7 worker two")
    dump = pc.parse(text)
    check_eq(pc.to_script(dump),
             "worker two       7 [000]     2.500000:        100 emit: \n"
             "\tffffffff80100010 spin+0x10 ([kernel.kallsyms])\n\n")
    check_eq(pc.to_folded(dump), "worker_two;spin 100\n")


@test
def timestamps_are_exact():
    # 2^63 - 1 cycles at 3 GHz, in integers (a float would round).
    check_eq(pc.timestamp(2 ** 63 - 1, 3000000000), "3074457345.618258")
    check_eq(pc.timestamp(2999, 3000000000), "0.000000")
    check_eq(pc.timestamp(3000, 3000000000), "0.000001")


@test
def last_complete_dump_is_converted():
    older = GOOD.replace("spin+0x10", "older+0x10")
    dump = pc.parse("noise\n" + older + "noise\n" + GOOD)
    check_eq(dump.samples[0].frames, [(0xffffffff80100010, "spin", 0x10)])


@test
def noise_between_records_is_skipped():
    text = (BEGIN + "pd thread 7 spin\n\n  pd indented is noise\n"
            "warning: something\r\n" + SAMPLE + "perfmon> \n" + TOTALS
            + END)
    check_eq(len(pc.parse(text).samples), 1)


@test
def no_dump_is_an_error():
    expect_error("perfmon> perf script\nperf: no recording\n", 1,
                 "no perfmon dump in the input")


@test
def truncated_dump_is_an_error():
    expect_error("x\n" + BEGIN + SAMPLE, 2, "has no end marker")


@test
def other_version_is_an_error():
    expect_error(BEGIN.replace("dump 1 begin", "dump 3 begin"), 1,
                 "dump version 3 is not supported (this tool reads "
                 "versions 1 and 2)")
    expect_error(GOOD.replace("dump 1 end", "dump 3 end"), 5,
                 "dump version 3 is not supported")
    expect_error(GOOD.replace("dump 1 end", "dump 2 end"), 5,
                 "end marker of version 2 closes a dump of version 1")


# The small dump in version 2: the sample's fixed part, its callers on a
# line of their own.
BEGIN2 = BEGIN.replace("dump 1 begin", "dump 2 begin")
SAMPLE2 = ("pd sample 0 2500000 7 100 0 0xffffffff80100010 spin+0x10\n"
           "pd callchain 1 0xffffffff80100230 main+0x30\n")
END2 = "perfmon-dump 2 end lines=4\n"
GOOD2 = BEGIN2 + "pd thread 7 spin\n" + SAMPLE2 + TOTALS + END2


@test
def v2_call_chain_line_joins_its_sample():
    dump = pc.parse(GOOD2)
    check_eq(dump.samples[0].frames, [(0xffffffff80100010, "spin", 0x10),
                                      (0xffffffff80100230, "main", 0x30)])
    check_eq(pc.to_folded(dump), "spin;main;spin 100\n")
    # A sample without callers has no callchain line.
    text = GOOD2.replace("pd callchain 1 0xffffffff80100230 main+0x30\n",
                         "").replace("lines=4", "lines=3")
    check_eq(pc.to_folded(pc.parse(text)), "spin;spin 100\n")


@test
def v2_reads_what_a_later_kernel_adds():
    # Words appended to lines, a part of a sample of a kind unknown here
    # (before the call chain), a record of an unknown kind.
    text = (BEGIN2 + "pd thread 7 spin\n"
            "pd sample 0 2500000 7 100 0 0xffffffff80100010 spin+0x10 9 x\n"
            "pd branch_stack 1 0x1 0x2\n"
            "pd callchain 1 0xffffffff80100230 main+0x30\n"
            "pd lost 0 2 x\npd throttle 0 1 2 3 4 5 x\npd new_record 5\n"
            + TOTALS.replace("dropped=0", "dropped=0 later=1")
            + END2.replace("lines=4", "lines=8"))
    dump = pc.parse(text)
    check_eq(pc.to_folded(dump), "spin;main;spin 100\n")
    check_eq((dump.lost, dump.throttles), ([(0, 2)], [(0, 1, 2, 3, 4, 5)]))
    # Version 1 refuses all of it.
    expect_error(GOOD.replace("pd thread 7 spin", "pd lost 0 2 x"), 2,
                 "expected 'pd lost CPU NR'")
    expect_error(GOOD.replace("pd thread 7 spin", "pd callchain 0"), 2,
                 "unknown record 'callchain'")


@test
def v2_damaged_call_chains_are_errors():
    chain = "pd callchain 1 0xffffffff80100230 main+0x30\n"
    expect_error(GOOD2.replace(chain, chain + chain).replace("lines=4",
                                                             "lines=5"),
                 5, "callchain: not among the lines of a sample")
    expect_error(BEGIN2 + chain + TOTALS + END2, 2,
                 "callchain: not among the lines of a sample")
    expect_error(BEGIN2 + "pd sample 0 1 7 1 0 0x1 ?\npd lost 0 1\n" + chain
                 + TOTALS + END2, 4,
                 "callchain: not among the lines of a sample")
    expect_error(GOOD2.replace(" 0xffffffff80100230 main+0x30", "")
                 .replace("callchain 1", "callchain 0"), 4,
                 "callchain: no frame")
    expect_error(GOOD2.replace("callchain 1", "callchain 2"), 4,
                 "callchain: announces 2 frames but has 2 address/symbol "
                 "words")
    expect_error(GOOD2.replace("main+0x30", "main"), 4,
                 "bad symbol 'main'")
    expect_error(GOOD2.replace(" 0xffffffff80100010 spin+0x10", ""), 3,
                 "sample: 7 words, expected at least 9")
    expect_error(GOOD2.replace("pd thread 7 spin", "pd Bad 1"), 2,
                 "unknown record 'Bad'")


@test
def lost_line_is_an_error():
    expect_error(GOOD.replace("pd thread 7 spin\n", ""), 4,
                 "announces 3 record lines but 2 were read since line 1")


@test
def garbled_sample_is_an_error():
    expect_error(GOOD.replace(" 2500000 ", " 25x0000 "), 3,
                 "time: expected an unsigned number, got '25x0000'")
    expect_error(GOOD.replace(" 0 1 0xf", " 0 2 0xf"), 3,
                 "announces 2 frames but has 2 address/symbol words")
    expect_error(GOOD.replace("spin+0x10", "spin+16"), 3,
                 "bad symbol 'spin+16'")
    expect_error(GOOD.replace("0xffffffff80100010", "ffffffff80100010"), 3,
                 "bad address 'ffffffff80100010'")
    expect_error(GOOD.replace(SAMPLE, "pd sample 0 1\n"), 3,
                 "sample: 4 words, expected at least 9")


@test
def other_malformed_records_are_errors():
    expect_error(GOOD.replace("pd thread 7 spin", "pd thread 7"), 2,
                 "expected 'pd thread TID NAME'")
    expect_error(GOOD.replace("pd thread 7 spin", "pd lost 0"), 2,
                 "expected 'pd lost CPU NR'")
    expect_error(GOOD.replace("pd thread 7 spin", "pd throttle 0 1 2"), 2,
                 "expected 'pd throttle CPU")
    expect_error(GOOD.replace("pd thread 7 spin", "pd mystery 1"), 2,
                 "unknown record 'mystery'")
    expect_error(GOOD.replace(" dropped=0", ""), 4, "totals: no dropped=")
    expect_error(GOOD.replace(" lost=0", " lost"), 4,
                 "expected KEY=VALUE, got 'lost'")


@test
def inconsistent_markers_are_errors():
    expect_error(BEGIN + BEGIN, 2, "begins before the one begun at line 1")
    expect_error(END, 1, "end marker without a begin marker")
    expect_error(GOOD.replace(" lines=3", ""), 5, "end marker without lines=")
    expect_error(GOOD.replace(TOTALS, "").replace("lines=3", "lines=2"), 4,
                 "no totals line")
    expect_error(GOOD.replace("received=1", "received=2"), 5,
                 "totals say 2 samples received, 0 of them not kept, but "
                 "the dump has 1")
    # Samples the kernel's buffer could not keep are announced.
    text = GOOD.replace("received=1", "received=3").replace("dropped=0",
                                                            "dropped=2")
    check_eq(len(pc.parse(text).samples), 1)
    expect_error(GOOD.replace(" tsc_hz=1000000", ""), 1,
                 "begin marker without tsc_hz=")
    expect_error(GOOD.replace("tsc_hz=1000000", "tsc_hz=0"), 1, "tsc_hz=0")


@test
def command_line_errors():
    status, stdout, stderr = run_main([], stdin=BEGIN)
    check_eq((status, stdout), (1, ""))
    check_eq(stderr, "perf-convert: <stdin>: line 1: the dump begun here has "
             "no end marker (capture cut short?)\n")
    status, _, stderr = run_main([os.path.join(DATA, "no-such-file")])
    check_eq(status, 1)
    if "No such file or directory" not in stderr:
        raise AssertionError(stderr)
    status, _, stderr = run_main(["-f", "svg"], stdin=GOOD)
    check_eq(status, 2)


# ---- perf.data -------------------------------------------------------------

PERF_DATA_DUMP = """\
perfmon-dump 2 begin cpus=2 tsc_hz=1000000000 event=tick period=1 frames=8 \
ms=10 target=all
pd thread 0 idle
pd thread 5 calltree
pd sample 1 2000 5 1 0 0xffffffff80100010 f+0x10
pd callchain 2 0xffffffff80100120 g+0x20 0x0 ?
pd sample 0 1000 0 1 1 0xffffffff80100200 idle_loop+0x0
pd totals received=2 lost=0 throttled=0 produced=2 dropped=0
perfmon-dump 2 end lines=6
"""
PERF_DATA_KALLSYMS = ("ffffffff80100000 T _text\n"
                      "ffffffff80100000 t f\n"
                      "ffffffff80100100 t g\n"
                      "ffffffff80100200 t idle_loop\n")
KERNEL_CONTEXT = 0xffffffffffffff80     # PERF_CONTEXT_KERNEL, (u64)-128


def expected_attr():
    """perf_event_attr, 112 bytes: type 1 (software), size 112, config 0
    (cpu-clock, for tick), period 1, sample_type IP|TID|TIME|CALLCHAIN|
    CPU|PERIOD = 0x1a7, read_format 0, flags exclude_hv (bit 6) and
    sample_id_all (bit 18), then 64 zero bytes (wakeup_events to
    sample_max_stack)."""
    return (struct.pack("<II", 1, 112) + struct.pack("<Q", 0)
            + struct.pack("<Q", 1) + struct.pack("<Q", 0x1a7)
            + struct.pack("<Q", 0) + struct.pack("<Q", 0x40040)
            + bytes(64))


def perf_str(text):
    """A header string: u32 length, the text padded with NULs to 64."""
    data = text.encode() + bytes(64 - len(text))
    return struct.pack("<I", 64) + data


def expected_features(desc, build_id=None):
    """The header features of PERF_DATA_DUMP's file written with the
    default machine (build_id: and the kernel's build id), in bit order:
    [(bit, name, bytes)]."""
    feats = []
    if build_id is not None:
        # BUILD_ID: a record header (type 0, misc KERNEL |
        # BUILD_ID_SIZE, size 8 + 4 + 24 + 64), pid -1, the id padded to
        # 20, its size, 3 zero bytes, "[kernel.kallsyms]" padded to 64.
        feats.append((2, "BUILD_ID", struct.pack("<IHH", 0, 0x8001, 100)
                      + struct.pack("<i", -1) + build_id.ljust(20, b"\0")
                      + bytes([len(build_id), 0, 0, 0])
                      + b"[kernel.kallsyms]" + bytes(47)))
    feats += [
        (3, "HOSTNAME", perf_str("perfmon")),
        (4, "OSRELEASE", perf_str("perfmon")),
        (5, "VERSION", perf_str("perfmon")),
        (6, "ARCH", perf_str("x86_64")),
        (7, "NRCPUS", struct.pack("<II", 2, 2)),      # available, online
        (8, "CPUDESC", perf_str("unknown")),
        (9, "CPUID", perf_str("unknown")),
        (10, "TOTAL_MEM", struct.pack("<Q", 0)),      # kB
        (11, "CMDLINE", struct.pack("<I", 1) + perf_str("perf-convert")),
        (12, "EVENT_DESC", desc),
        # One package, a core a CPU: core siblings "0-1", thread
        # siblings "0" and "1", (core, socket) of each CPU, die siblings
        # "0-1", each CPU's die.
        (13, "CPU_TOPOLOGY", struct.pack("<I", 1) + perf_str("0-1")
         + struct.pack("<I", 2) + perf_str("0") + perf_str("1")
         + struct.pack("<IIII", 0, 0, 1, 0) + struct.pack("<I", 1)
         + perf_str("0-1") + struct.pack("<II", 0, 0)),
        # One PMU: type 1, "software".
        (16, "PMU_MAPPINGS", struct.pack("<II", 1, 1) + perf_str("software")),
        # The first and last samples' times (ns).
        (21, "SAMPLE_TIME", struct.pack("<QQ", 1000, 2000)),
        (23, "CLOCKID", struct.pack("<Q", 1)),        # resolution, ns
        # Version 1, CLOCK_MONOTONIC, time of day 0, the clock's time.
        (29, "CLOCK_DATA", struct.pack("<IIQQ", 1, 1, 0, 2000)),
    ]
    return feats


def expected_perf_data(build_id=None):
    """The parts of the file, in order, as (name, bytes)."""
    attr = expected_attr()
    # The first (here the only) event tracks: mmap (bit 8) and comm
    # (bit 9) say that the MMAP and COMM records are its.
    attr = attr[:40] + struct.pack("<Q", 0x40340) + attr[48:]
    # Records: u32 type, u16 misc, u16 size (the whole record).
    mmap = (struct.pack("<IHH", 1, 1, 88)          # MMAP, misc KERNEL
            + struct.pack("<II", 0xffffffff, 0)      # pid -1, tid 0
            + struct.pack("<Q", 0xffffffff80100000)  # start: _text
            + struct.pack("<Q", 0x1000)              # len: to the page end
            + struct.pack("<Q", 0xffffffff80100000)  # pgoff: _text
            + b"[kernel.kallsyms]_text\0\0"          # 23 bytes, padded
            + struct.pack("<IIQII", 0xffffffff, 0, 0, 0, 0))  # sample_id
    comm0 = (struct.pack("<IHH", 3, 0, 48) + struct.pack("<II", 0, 0)
             + b"idle\0\0\0\0" + struct.pack("<IIQII", 0, 0, 0, 0, 0))
    comm5 = (struct.pack("<IHH", 3, 0, 56) + struct.pack("<II", 5, 5)
             + b"calltree" + bytes(8)
             + struct.pack("<IIQII", 5, 5, 0, 0, 0))
    # Samples in time order: ip, pid, tid, time (ns), cpu, res, period,
    # nr, the chain [kernel context, ip, callers...].
    sample0 = (struct.pack("<IHH", 9, 1, 72)
               + struct.pack("<QIIQIIQ", 0xffffffff80100200, 0, 0, 1000, 0,
                             0, 1)
               + struct.pack("<QQQ", 2, KERNEL_CONTEXT, 0xffffffff80100200))
    # The chain's last address, 0, ends the kernel's walk: left out.
    sample1 = (struct.pack("<IHH", 9, 1, 80)
               + struct.pack("<QIIQIIQ", 0xffffffff80100010, 5, 5, 2000, 1,
                             0, 1)
               + struct.pack("<QQQQ", 3, KERNEL_CONTEXT, 0xffffffff80100010,
                             0xffffffff80100120))
    # FINISHED_ROUND (type 68, header only) after the set-up records
    # and after the last sample.
    round_end = struct.pack("<IHH", 68, 0, 8)
    data = mmap + comm0 + comm5 + round_end + sample0 + sample1 + round_end
    # EVENT_DESC: nr 1, attr size 112, the attr, nr_ids 1, the name as a
    # perf string (u32 length 64, the text padded to 64), the id.
    desc = (struct.pack("<II", 1, 112) + attr + struct.pack("<II", 1, 64)
            + b"tick" + bytes(60) + struct.pack("<Q", 1))
    feats = expected_features(desc, build_id)
    data_offset = 104 + 8 + 128
    bitmap = sum(1 << bit for bit, _, _ in feats)
    header = (b"PERFILE2" + struct.pack("<QQ", 104, 128)
              + struct.pack("<QQ", 112, 128)                 # attrs
              + struct.pack("<QQ", data_offset, len(data))   # data
              + struct.pack("<QQ", 0, 0)                     # event types
              + struct.pack("<QQQQ", bitmap, 0, 0, 0))       # features
    # A section (offset, size) per feature, then their contents.
    offset = data_offset + len(data) + 16 * len(feats)
    sections = []
    for bit, name, body in feats:
        sections.append(("%s section" % name,
                         struct.pack("<QQ", offset, len(body))))
        offset += len(body)
    return ([("header", header), ("ids", struct.pack("<Q", 1)),
             ("attr", attr), ("attr ids section",
                              struct.pack("<QQ", 104, 8)),
             ("mmap", mmap), ("comm idle", comm0), ("comm calltree", comm5),
             ("round after set-up", round_end), ("sample t=1000", sample0),
             ("sample t=2000 with chain", sample1),
             ("round at the end", round_end)]
            + sections + [(name, body) for _, name, body in feats])


def check_bytes(got, parts):
    """got must be the parts' bytes; name the part and offset that
    differ."""
    offset = 0
    for name, want in parts:
        have = got[offset:offset + len(want)]
        if have != want:
            at = next((i for i in range(len(want))
                       if i >= len(have) or have[i] != want[i]), 0)
            raise AssertionError("%s at file offset %d: byte %d differs: "
                                 "got %s, want %s" % (
                                     name, offset, at,
                                     have[at:at + 16].hex(),
                                     want[at:at + 16].hex()))
        offset += len(want)
    check_eq(len(got), offset)


@test
def perf_data_is_laid_out_byte_by_byte():
    dump = pc.parse(PERF_DATA_DUMP)
    check_bytes(pc.to_perf_data(dump, PERF_DATA_KALLSYMS),
                expected_perf_data())


@test
def perf_data_header_attr_and_records():
    """The parts alone, so a failure names the piece that moved."""
    check_bytes(perf_data.perf_attr("tick", 1), [("attr", expected_attr())])
    parts = dict(expected_perf_data())
    check_bytes(perf_data.perf_mmap_record(0xffffffff80100000, 0xffffffff80101000),
                [("mmap", parts["mmap"])])
    check_bytes(perf_data.perf_comm_record(5, "calltree"),
                [("comm", parts["comm calltree"])])
    dump = pc.parse(PERF_DATA_DUMP)
    chained = [s for s in dump.samples if s.tid == 5][0]
    check_bytes(perf_data.perf_sample_record(chained, 2000),
                [("sample", parts["sample t=2000 with chain"])])


@test
def perf_data_event_types_and_text_bounds():
    # Linux's generic events keep their type and config; others read as
    # a software clock, named by EVENT_DESC.
    check_eq(struct.unpack("<IIQ", perf_data.perf_attr("instructions", 7)[:16]),
             (0, 112, 1))
    check_eq(struct.unpack("<IIQ", perf_data.perf_attr("cswitch", 1)[:16]),
             (1, 112, 3))
    check_eq(struct.unpack("<IIQ", perf_data.perf_attr("emit3", 1)[:16]),
             (1, 112, 0))
    # Without a kallsyms file the samples' named frames bound the text.
    dump = pc.parse(PERF_DATA_DUMP)
    check_eq(perf_data.kernel_text_bounds(dump),
             (0xffffffff80100000, 0xffffffff80101000))


@test
def perf_data_command_line():
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "dump.txt")
        kallsyms = os.path.join(tmp, "kallsyms")
        out = os.path.join(tmp, "perf.data")
        with open(dump, "w") as f:
            f.write(PERF_DATA_DUMP)
        with open(kallsyms, "w") as f:
            f.write(PERF_DATA_KALLSYMS)
        status, _, _ = run_main(["-f", "perf-data", "--kallsyms", kallsyms,
                                 "-o", out, dump])
        check_eq(status, 0)
        with open(out, "rb") as f:
            check_bytes(f.read(), expected_perf_data())
        status, _, stderr = run_main(["-f", "perf-data", dump])
        check_eq((status, stderr), (2, "perf-convert: perf-data needs -o "
                                       "FILE\n"))


def elf_with_build_id(build_id):
    """A minimal ELF64 (header and three sections: null, .shstrtab,
    .note.gnu.build-id holding a GNU note with build_id)."""
    names = b"\0.shstrtab\0.note.gnu.build-id\0"
    note = (struct.pack("<III", 4, len(build_id), 3) + b"GNU\0"
            + build_id + bytes(-len(build_id) % 4))
    shoff = 64 + len(names) + len(note)
    header = (b"\x7fELF\x02\x01\x01" + bytes(9)
              + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, shoff, 0, 64,
                            0, 0, 64, 3, 1))

    def shdr(name, stype, offset, size):
        return struct.pack("<IIQQQQIIQQ", name, stype, 0, 0, offset, size,
                           0, 0, 1, 0)
    return (header + names + note + shdr(0, 0, 0, 0)
            + shdr(1, 3, 64, len(names))
            + shdr(11, 7, 64 + len(names), len(note)))


@test
def perf_data_carries_the_kernels_build_id_and_machine():
    """--vmlinux puts the ELF's build id in a BUILD_ID feature entry for
    [kernel.kallsyms]; --machine sets the header's description of the
    recording machine; a file without a build id, an unknown field or a
    number that is not one are refused."""
    build_id = bytes(range(1, 21))
    check_eq(pc.elf_build_id(elf_with_build_id(build_id)), build_id)
    check_eq(pc.elf_build_id(elf_with_build_id(b"")[:64]), None)
    dump = pc.parse(PERF_DATA_DUMP)
    check_bytes(pc.to_perf_data(dump, PERF_DATA_KALLSYMS,
                                pc.Machine(build_id=build_id)),
                expected_perf_data(build_id))
    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: os.path.join(tmp, n)
                 for n in ("dump", "kallsyms", "elf", "noid", "out")}
        for name, text in (("dump", PERF_DATA_DUMP),
                           ("kallsyms", PERF_DATA_KALLSYMS)):
            with open(paths[name], "w") as f:
                f.write(text)
        with open(paths["elf"], "wb") as f:
            f.write(elf_with_build_id(build_id))
        with open(paths["noid"], "wb") as f:
            f.write(b"\x7fELF\x02\x01" + bytes(58))
        base = ["-f", "perf-data", "--kallsyms", paths["kallsyms"], "-o",
                paths["out"]]
        status, _, _ = run_main(base + ["--vmlinux", paths["elf"],
                                        paths["dump"]])
        check_eq(status, 0)
        with open(paths["out"], "rb") as f:
            check_bytes(f.read(), expected_perf_data(build_id))
        status, _, _ = run_main(base + [
            "--machine", "hostname=guest", "--machine", "total_mem_kb=512",
            "--machine", "cmdline=perf record -e emit", paths["dump"]])
        check_eq(status, 0)
        with open(paths["out"], "rb") as f:
            data = f.read()
        for part in (perf_str("guest"), struct.pack("<Q", 512),
                     struct.pack("<I", 4) + perf_str("perf")
                     + perf_str("record") + perf_str("-e") + perf_str("emit")):
            if part not in data:
                raise AssertionError("no %r in the file" % part[:12])
        for argv, want in (
                (["--vmlinux", paths["noid"]],
                 (1, "perf-convert: %s: no GNU build-id note\n"
                  % paths["noid"])),
                (["--machine", "colour=red"],
                 (2, "perf-convert: --machine colour: unknown field\n")),
                (["--machine", "total_mem_kb=lots"],
                 (2, "perf-convert: --machine total_mem_kb=lots: not a "
                  "number\n"))):
            if os.path.exists(paths["out"]):
                os.remove(paths["out"])
            status, _, stderr = run_main(base + argv + [paths["dump"]])
            check_eq((status, stderr), want)
            check_eq(os.path.exists(paths["out"]), False)


# ---- several events ---------------------------------------------------------

# emit at 200 samples a second (period 0), tick every event; the
# samples' cookies name their events.
MULTI_DUMP = """\
perfmon-dump 2 begin cpus=2 tsc_hz=1000000000 event=emit,tick \
period=0,1 freq=200 frames=8 ms=10 target=spin 200
pd thread 0 idle
pd thread 5 spin
pd sample 1 2000 5 7 0 0xffffffff80100010 f+0x10
pd callchain 2 0xffffffff80100120 g+0x20 0x0 ?
pd sample 0 1000 5 1 1 0xffffffff80100110 g+0x10
pd sample 0 3000 0 9 0 0xffffffff80100200 idle_loop+0x0
pd totals received=3 lost=0 throttled=0 produced=3 dropped=0
perfmon-dump 2 end lines=7
"""


@test
def several_events_script_and_folded():
    """Each sample is named by its own event; folded stacks get a tree
    per event, whose periods count different things."""
    dump = pc.parse(MULTI_DUMP)
    check_eq(dump.events(), [("emit", 0, 200), ("tick", 1, 0)])
    heads = [line for line in pc.to_script(dump).splitlines()
             if line and not line.startswith("\t")]
    check_eq(heads, ["spin       5 [000]     0.000001:          1 tick: ",
                     "spin       5 [001]     0.000002:          7 emit: ",
                     "idle       0 [000]     0.000003:          9 emit: "])
    check_eq(pc.to_folded(dump), "emit;idle;idle_loop 9\n"
                                 "emit;spin;g;f 7\n"
                                 "tick;spin;g 1\n")
    check_eq(pc.to_folded(dump, "samples"), "emit;idle;idle_loop 1\n"
                                            "emit;spin;g;f 1\n"
                                            "tick;spin;g 1\n")
    status, stdout, _ = run_main(["-f", "folded", "--weight", "samples"],
                                 stdin=MULTI_DUMP)
    check_eq((status, stdout), (0, pc.to_folded(dump, "samples")))


@test
def several_events_bad_begin_or_cookie():
    expect_error(MULTI_DUMP.replace("period=0,1", "period=0"), 1,
                 "2 events but 1 periods")
    expect_error(MULTI_DUMP.replace(" freq=200", ""), 1,
                 "a period 0 without freq=")
    expect_error(MULTI_DUMP.replace("pd sample 0 1000 5 1 1 ",
                                    "pd sample 0 1000 5 1 2 "), 9,
                 "a sample of event 2, in a dump of 2 events")


@test
def several_events_perf_data_attr_each():
    """An attr per event with an id each (the ids section first), the
    emit one at a frequency; IDENTIFIER in sample_type, so every sample
    starts with its event's id and every other record ends with one;
    EVENT_DESC names both."""
    data = pc.to_perf_data(pc.parse(MULTI_DUMP), PERF_DATA_KALLSYMS)
    (magic, size, entry_size, attrs_off, attrs_size, data_off,
     data_size) = struct.unpack("<8sQQQQQQ", data[:56])
    check_eq((magic, size, entry_size, attrs_off, attrs_size),
             (b"PERFILE2", 104, 128, 120, 256))
    check_eq(struct.unpack("<2Q", data[104:120]), (1, 2))
    entries = [data[attrs_off + 128 * i:attrs_off + 128 * (i + 1)]
               for i in range(2)]
    emit_type = struct.unpack("<IIQQQQQ", entries[0][:48])
    tick_type = struct.unpack("<IIQQQQQ", entries[1][:48])
    # type, size, config, period or freq, sample_type (0x1a7 |
    # IDENTIFIER 0x10000), read_format, flags (freq: bit 10).
    # The first event's also carry mmap and comm (bits 8, 9): the MMAP
    # and COMM records are its.
    check_eq(emit_type, (1, 112, 0, 200, 0x101a7, 0, 0x40740))
    check_eq(tick_type, (1, 112, 0, 1, 0x101a7, 0, 0x40040))
    check_eq(struct.unpack("<QQ", entries[0][112:]), (104, 8))
    check_eq(struct.unpack("<QQ", entries[1][112:]), (112, 8))
    # The records: MMAP, 2 COMM, then the samples in time order, each
    # sample's first word its event's id.
    records, offset = [], data_off
    while offset < data_off + data_size:
        rtype, misc, rsize = struct.unpack("<IHH", data[offset:offset + 8])
        records.append((rtype, data[offset + 8:offset + rsize]))
        offset += rsize
    check_eq([r[0] for r in records], [1, 3, 3, 68, 9, 9, 9, 68])
    check_eq([struct.unpack("<Q", body[:8])[0] for t, body in records
              if t == 9], [2, 1, 1])
    check_eq([struct.unpack("<Q", body[-8:])[0] for t, body in records
              if t in (1, 3)], [1, 1, 1])
    # The EVENT_DESC feature, through its section (the tenth: the nine
    # from HOSTNAME to CMDLINE come before it).
    sections = data_off + data_size
    desc_off, desc_size = struct.unpack("<QQ", data[sections + 16 * 9:
                                                    sections + 16 * 10])
    desc = data[desc_off:desc_off + desc_size]
    check_eq(struct.unpack("<II", desc[:8]), (2, 112))
    for name in (b"emit\0", b"tick\0"):
        if name not in desc:
            raise AssertionError("EVENT_DESC lacks %r" % name)


def main():
    print("KTAP version 1")
    print("1..%d" % len(TESTS))
    failed = 0
    for i, fn in enumerate(TESTS, 1):
        try:
            fn()
        except Exception:
            failed += 1
            for line in traceback.format_exc().splitlines():
                print("# " + line)
            print("not ok %d %s" % (i, fn.__name__))
        else:
            print("ok %d %s" % (i, fn.__name__))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
