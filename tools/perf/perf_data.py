"""The perf.data writer of tools/perf/perf-convert: a parsed perfmon dump
(its Dump: samples, threads, events, info) as a file Linux perf 6.x
reads. The layout, its records and its header features follow.
"""

import struct


def sample_order(s):
    """perf's order of samples: by time, then CPU (as perf script prints
    them)."""
    return (s.time, s.cpu)


# The layout of Linux perf's file (tools/perf/Documentation/
# perf.data-file-format.txt and include/uapi/linux/perf_event.h in
# Linux), little-endian, as perf 6.1 reads it:
#
#   header      "PERFILE2", its own size (104), the size of one attr entry
#               (the perf_event_attr and a section for its ids), then
#               sections (offset, size) of the attrs, the data and the
#               (unused) event types, then a 256-bit feature bitmap;
#   attrs       one entry: perf_event_attr of 112 bytes (perf 6.1 refuses
#               the larger, newer layouts as incompatible) and the section
#               of its one id;
#   data        MMAP (the kernel's text, which perf needs to symbolize
#               any kernel address, named "[kernel.kallsyms]_text" with
#               pgoff the text's start: perf relocates by the _text
#               symbol of the kallsyms file), one COMM per thread (its
#               name), the samples;
#               The first attr has mmap and comm set (those records
#               are its), and FINISHED_ROUND records close the set-up
#               records and every ROUND_SAMPLES samples, as perf record
#               closes its rounds;
#   features    after the data, a section per feature bit set, then the
#               features' contents, in bit order: BUILD_ID (the kernel
#               ELF's, for [kernel.kallsyms], when known: perf looks the
#               kernel up by it in its build-id cache), HOSTNAME,
#               OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, CPUID,
#               TOTAL_MEM, CMDLINE (perf data convert --to-json reads
#               these strings unchecked; without CPUID perf fills in the
#               host's), EVENT_DESC (names the events; perf prints the
#               attr's generic name without it), CPU_TOPOLOGY,
#               PMU_MAPPINGS, SAMPLE_TIME (report
#               --time), CLOCKID and CLOCK_DATA (the clock, and its time
#               of day).
#
# With sample_id_all set, every record but a sample ends with the
# sample's identifying fields (here pid/tid, time, cpu), which perf
# strips by that flag. Samples carry ip, pid/tid, time (ns), cpu,
# period and a call chain that starts with the kernel context marker.
#
# Several events: an attr entry each, with an id of its own (EVENT_ID,
# EVENT_ID + 1, ...), and sample_type gains IDENTIFIER: the id first in
# every sample and last in every other record's sample_id fields, which
# is how perf tells whose a record is; EVENT_DESC names each. An event
# sampled at a frequency has the attr's freq flag and sample_freq.

PERF_MAGIC = b"PERFILE2"
PERF_HEADER_SIZE = 104
PERF_ATTR_SIZE = 112                # PERF_ATTR_SIZE_VER5
PERF_RECORD_MMAP = 1
PERF_RECORD_COMM = 3
PERF_RECORD_SAMPLE = 9
PERF_RECORD_FINISHED_ROUND = 68
PERF_RECORD_MISC_KERNEL = 1
PERF_CONTEXT_KERNEL = (1 << 64) - 128
PERF_SAMPLE_IP = 1 << 0
PERF_SAMPLE_TID = 1 << 1
PERF_SAMPLE_TIME = 1 << 2
PERF_SAMPLE_CALLCHAIN = 1 << 5
PERF_SAMPLE_CPU = 1 << 7
PERF_SAMPLE_PERIOD = 1 << 8
SAMPLE_TYPE = (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME
               | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
PERF_SAMPLE_IDENTIFIER = 1 << 16
ATTR_FLAG_SAMPLE_ID_ALL = 1 << 18
ATTR_FLAG_FREQ = 1 << 10
ATTR_FLAG_EXCLUDE_HV = 1 << 6
ATTR_FLAG_MMAP = 1 << 8
ATTR_FLAG_COMM = 1 << 9
PERF_RECORD_MISC_BUILD_ID_SIZE = 1 << 15
# Feature bits (Linux's tools/perf/util/header.h), in file order.
HEADER_BUILD_ID = 2
HEADER_HOSTNAME = 3
HEADER_OSRELEASE = 4
HEADER_VERSION = 5
HEADER_ARCH = 6
HEADER_NRCPUS = 7
HEADER_CPUDESC = 8
HEADER_CPUID = 9
HEADER_TOTAL_MEM = 10
HEADER_CMDLINE = 11
HEADER_EVENT_DESC = 12
HEADER_CPU_TOPOLOGY = 13
HEADER_PMU_MAPPINGS = 16
HEADER_SAMPLE_TIME = 21
HEADER_CLOCKID = 23
HEADER_CLOCK_DATA = 29
KERNEL_DSO_NAME = "[kernel.kallsyms]"
# Samples between two FINISHED_ROUND records: perf sorts each round by
# time before delivering it, as it does for a real recording's rounds.
ROUND_SAMPLES = 256
CLOCK_MONOTONIC = 1
KERNEL_MMAP_NAME = "[kernel.kallsyms]_text"
EVENT_ID = 1
# perf's (type, config) for this kernel's events: the generic hardware
# events, and software ones where Linux has a match; any other (emit*,
# xcall, raw) reads as a software cpu-clock, named by EVENT_DESC.
PERF_EVENT_TYPES = {
    "cycles": (0, 0), "instructions": (0, 1), "cache-references": (0, 2),
    "cache-misses": (0, 3), "branches": (0, 4), "branch-misses": (0, 5),
    "ref-cycles": (0, 9), "tick": (1, 0), "cswitch": (1, 3),
    "context-switches": (1, 3), "cs": (1, 3), "migration": (1, 4),
    "cpu-migrations": (1, 4), "migrations": (1, 4),
}


def pad8(data):
    return data + b"\0" * (-len(data) % 8)


def perf_attr(event, period, freq=0, sample_type=SAMPLE_TYPE,
              tracking=False):
    """perf_event_attr (112 bytes) for an event of the dump: sampled
    every period events, or at freq samples a second when freq; tracking:
    the event that carries the file's MMAP and COMM records (the first,
    as in perf record)."""
    ptype, config = PERF_EVENT_TYPES.get(event.split(":")[0], (1, 0))
    flags = ATTR_FLAG_SAMPLE_ID_ALL | ATTR_FLAG_EXCLUDE_HV
    if tracking:
        flags |= ATTR_FLAG_MMAP | ATTR_FLAG_COMM
    if freq:
        flags |= ATTR_FLAG_FREQ
    # type, size, config, sample_period or sample_freq, sample_type,
    # read_format, flags, then wakeup_events .. sample_max_stack, all zero.
    return struct.pack("<IIQQQQQ", ptype, PERF_ATTR_SIZE, config,
                       freq or period, sample_type, 0,
                       flags) + b"\0" * (PERF_ATTR_SIZE - 48)


def perf_sample_id(pid, tid, time, cpu, ident=None):
    """The sample_id_all trailer of a non-sample record (ident: the
    event's id, with several events)."""
    trailer = struct.pack("<IIQII", pid, tid, time, cpu, 0)
    return trailer if ident is None else trailer + struct.pack("<Q", ident)


def perf_record(rtype, misc, body):
    return struct.pack("<IHH", rtype, misc, 8 + len(body)) + body


def perf_mmap_record(start, end, ident=None):
    body = struct.pack("<IIQQQ", 0xffffffff, 0, start, end - start, start)
    body += pad8(KERNEL_MMAP_NAME.encode() + b"\0")
    body += perf_sample_id(0xffffffff, 0, 0, 0, ident)
    return perf_record(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, body)


def perf_comm_record(tid, name, ident=None):
    body = struct.pack("<II", tid, tid)
    body += pad8(name.encode()[:15] + b"\0")
    body += perf_sample_id(tid, tid, 0, 0, ident)
    return perf_record(PERF_RECORD_COMM, 0, body)


def perf_sample_record(s, ns, ident=None):
    """A sample: (its event's id, with several events,) ip, pid/tid,
    time, cpu, period, then the call chain [kernel context, ip,
    callers...] perf expects."""
    chain = [PERF_CONTEXT_KERNEL] + [f[0] for f in s.frames]
    body = b"" if ident is None else struct.pack("<Q", ident)
    body += struct.pack("<QIIQIIQQ", s.frames[0][0], s.tid, s.tid, ns, s.cpu,
                        0, s.period, len(chain))
    body += struct.pack("<%dQ" % len(chain), *chain)
    return perf_record(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL, body)


def perf_string(text):
    """perf's header string: a length, then the text padded to 64."""
    data = text.encode() + b"\0"
    data += b"\0" * (-len(data) % 64)
    return struct.pack("<I", len(data)) + data


def perf_event_desc(attrs, events):
    """EVENT_DESC: each event's attr, name and one id."""
    desc = struct.pack("<II", len(attrs), PERF_ATTR_SIZE)
    for i, (attr, event) in enumerate(zip(attrs, events)):
        desc += (attr + struct.pack("<I", 1) + perf_string(event)
                 + struct.pack("<Q", EVENT_ID + i))
    return desc


def perf_build_id_entry(build_id, name=KERNEL_DSO_NAME):
    """A BUILD_ID feature entry: the kernel's (pid -1, misc KERNEL), its
    build id padded to 24 bytes with its size in the 21st, the dso name
    padded to 64."""
    name = name.encode() + b"\0"
    name += b"\0" * (-len(name) % 64)
    body = struct.pack("<i20sBxH", -1, build_id, len(build_id), 0) + name
    return struct.pack("<IHH", 0, PERF_RECORD_MISC_KERNEL
                       | PERF_RECORD_MISC_BUILD_ID_SIZE, 8 + len(body)) + body


def elf_build_id(data):
    """The GNU build id (bytes) of an ELF64 little-endian file's
    .note.gnu.build-id section, or None.

    >>> elf_build_id(b"not an ELF") is None
    True
    """
    if data[:6] != b"\x7fELF\x02\x01":
        return None
    try:
        return elf_note_build_id(data)
    except (struct.error, ValueError):
        return None                 # cut short or garbled


def elf_note_build_id(data):
    """elf_build_id's walk of the sections; raises struct.error or
    ValueError where the file is cut short."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)

    def section(i):
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
    strtab = section(shstrndx)
    for i in range(shnum):
        name, stype, _, _, offset, size = section(i)
        end = data.index(b"\0", strtab[4] + name)
        if data[strtab[4] + name:end] != b".note.gnu.build-id":
            continue
        pos = offset
        while pos + 12 <= offset + size:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            desc = pos + 12 + ((namesz + 3) & ~3)
            if ntype == 3 and data[pos + 12:pos + 12 + namesz] == b"GNU\0":
                return data[desc:desc + descsz]
            pos = desc + ((descsz + 3) & ~3)
    return None


class Machine:
    """What the header says of the recording machine (the guest): each
    field as perf's header features want it. build_id: the kernel ELF's,
    or None (no BUILD_ID feature: perf cannot match the kernel)."""

    def __init__(self, build_id=None, hostname="perfmon",
                 osrelease="perfmon", version="perfmon", arch="x86_64",
                 cpudesc="unknown", cpuid="unknown", total_mem_kb=0,
                 cmdline=("perf-convert",), tod_ns=0):
        self.build_id = build_id
        self.hostname = hostname
        self.osrelease = osrelease
        self.version = version
        self.arch = arch
        self.cpudesc = cpudesc
        self.cpuid = cpuid
        self.total_mem_kb = total_mem_kb
        self.cmdline = list(cmdline)
        self.tod_ns = tod_ns


def perf_cpu_topology(cpus):
    """CPU_TOPOLOGY for cpus CPUs of one package, a core each (as QEMU's
    -smp N gives them): the core sibling lists (one: all CPUs), the
    thread sibling lists (one a core), each CPU's core and socket id,
    then the die sibling lists (one) and each CPU's die id."""
    every = "0-%d" % (cpus - 1) if cpus > 1 else "0"
    topo = struct.pack("<I", 1) + perf_string(every)
    topo += struct.pack("<I", cpus) + b"".join(perf_string(str(c))
                                               for c in range(cpus))
    topo += b"".join(struct.pack("<II", c, 0) for c in range(cpus))
    topo += struct.pack("<I", 1) + perf_string(every)
    topo += b"".join(struct.pack("<I", 0) for c in range(cpus))
    return topo


def perf_features(machine, dump, desc, times):
    """[(bit, contents)] of the header features, in bit order."""
    cpus = int(dump.info["cpus"])
    first, last = times if times else (0, 0)
    feats = []
    if machine.build_id is not None:
        feats.append((HEADER_BUILD_ID, perf_build_id_entry(machine.build_id)))
    feats += [
        (HEADER_HOSTNAME, perf_string(machine.hostname)),
        (HEADER_OSRELEASE, perf_string(machine.osrelease)),
        (HEADER_VERSION, perf_string(machine.version)),
        (HEADER_ARCH, perf_string(machine.arch)),
        # CPUs available, then online.
        (HEADER_NRCPUS, struct.pack("<II", cpus, cpus)),
        (HEADER_CPUDESC, perf_string(machine.cpudesc)),
        (HEADER_CPUID, perf_string(machine.cpuid)),
        (HEADER_TOTAL_MEM, struct.pack("<Q", machine.total_mem_kb)),
        (HEADER_CMDLINE, struct.pack("<I", len(machine.cmdline))
         + b"".join(perf_string(w) for w in machine.cmdline)),
        (HEADER_EVENT_DESC, desc),
        (HEADER_CPU_TOPOLOGY, perf_cpu_topology(cpus)),
        # The PMUs the attrs' types name: the software events'.
        (HEADER_PMU_MAPPINGS, struct.pack("<II", 1, 1)
         + perf_string("software")),
        (HEADER_SAMPLE_TIME, struct.pack("<QQ", first, last)),
        # The clock's resolution in ns (the TSC's, rounded up).
        (HEADER_CLOCKID, struct.pack("<Q", 1)),
        # Version 1: the clock, then a time of day and the clock's time
        # at the same instant (the end of the recording).
        (HEADER_CLOCK_DATA, struct.pack("<IIQQ", 1, CLOCK_MONOTONIC,
                                        machine.tod_ns, last)),
    ]
    return feats


def kernel_text_bounds(dump, kallsyms=None):
    """(start, end) of the kernel's text for its mapping: from a kallsyms
    text (_text to past the last symbol) or else the samples' addresses,
    to whole pages."""
    addrs = []
    start = None
    if kallsyms is not None:
        for line in kallsyms.splitlines():
            words = line.split()
            if len(words) >= 3:
                addrs.append(int(words[0], 16))
                if words[2] == "_text":
                    start = int(words[0], 16)
    if not addrs:
        addrs = [f[0] for s in dump.samples for f in s.frames
                 if f[1] is not None]
    if not addrs:
        return (0xffffffff80000000, 0xffffffff80001000)
    if start is None:
        start = min(addrs) & ~0xfff
    return (start, (max(addrs) + 0x1000) & ~0xfff)


def to_perf_data(dump, kallsyms=None, machine=None):
    """The bytes of a perf.data file holding the dump's samples, its
    header describing machine (a Machine; default: nothing known)."""
    machine = machine or Machine()
    hz = int(dump.info["tsc_hz"])
    events = dump.events()
    several = len(events) > 1
    sample_type = SAMPLE_TYPE | (PERF_SAMPLE_IDENTIFIER if several else 0)
    attrs = [perf_attr(name, period, freq, sample_type, i == 0)
             for i, (name, period, freq) in enumerate(events)]
    first = EVENT_ID if several else None
    start, end = kernel_text_bounds(dump, kallsyms)
    data = [perf_mmap_record(start, end, first)]
    for tid in sorted(dump.threads):
        data.append(perf_comm_record(tid, dump.threads[tid], first))
    round_end = struct.pack("<IHH", PERF_RECORD_FINISHED_ROUND, 0, 8)
    data.append(round_end)
    times = []
    for i, s in enumerate(sorted(dump.samples, key=sample_order)):
        ident = EVENT_ID + dump.event_of(s) if several else None
        ns = s.time * 1000000000 // hz
        times.append(ns)
        data.append(perf_sample_record(s, ns, ident))
        if i % ROUND_SAMPLES == ROUND_SAMPLES - 1:
            data.append(round_end)
    if data[-1] is not round_end:
        data.append(round_end)
    data = b"".join(data)
    # The ids, then the attr entries, each with the section of its id.
    ids_offset = PERF_HEADER_SIZE
    attrs_offset = ids_offset + 8 * len(attrs)
    attr_entries = b"".join(attr + struct.pack("<QQ", ids_offset + 8 * i, 8)
                            for i, attr in enumerate(attrs))
    entry_size = len(attr_entries) // len(attrs)
    data_offset = attrs_offset + len(attr_entries)
    features_offset = data_offset + len(data)
    desc = perf_event_desc(attrs, [name for name, _, _ in events])
    feats = perf_features(machine, dump,  desc,
                          (min(times), max(times)) if times else None)
    # A section (offset, size) per feature, then their contents.
    bitmap = 0
    sections = []
    contents = []
    offset = features_offset + 16 * len(feats)
    for bit, body in feats:
        bitmap |= 1 << bit
        sections.append(struct.pack("<QQ", offset, len(body)))
        contents.append(body)
        offset += len(body)
    header = struct.pack("<8sQQQQQQQQ", PERF_MAGIC, PERF_HEADER_SIZE,
                         entry_size, attrs_offset, len(attr_entries),
                         data_offset, len(data), 0, 0)
    header += struct.pack("<4Q", bitmap & (2 ** 64 - 1), bitmap >> 64, 0, 0)
    ids = struct.pack("<%dQ" % len(attrs),
                      *range(EVENT_ID, EVENT_ID + len(attrs)))
    return b"".join([header, ids, attr_entries, data] + sections + contents)
