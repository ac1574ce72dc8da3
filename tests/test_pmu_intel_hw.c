/*
 * Intel PMU on real counters: runs where CPUID reports an architectural
 * PMU (KVM with the host PMU exposed, `make check-hw`), and reports SKIP
 * with the reason everywhere else. Nothing here can pass on a machine
 * without a PMU, and nothing may be made to: the runner fails a check-hw
 * run in which every test skipped.
 *
 * Every count is checked against a range derived from a loop whose
 * instructions are known exactly (hw_loop: N iterations of ten
 * instructions, one of them a branch), never against "non-zero". The
 * ranges, with N the number of iterations (references: Intel SDM vol. 3B,
 * chapter 21; table 21-1 lists the architectural events):
 *
 *   instructions retired    [10N, 10.2N]  exactly 10N in the loop
 *   branches retired        [N, 1.1N]     exactly N in the loop
 *   core cycles             [N, 50N]
 *   topdown slots           [N, 400N]     pipeline width (<= 8) x cycles
 *   reference cycles        [0.9, 1.05] x TSC ticks over the loop
 *                           ([0.5, 1.1] under a hypervisor)
 *   USER-only events        exactly 0     this kernel never leaves ring 0
 *
 * The upper slack covers what the measurement window adds to the loop:
 * perfmon's own reads, the tick and overflow interrupts, and, on some
 * processors, one extra instruction counted per VM exit. Every upper
 * bound stays far below 2^31, the least a counter can wrap by, so a wrap
 * lost or counted twice always lands outside the range. Why each bound
 * holds is explained where it is computed (hw_range_of).
 *
 * Events are attached to the test thread itself; where a check needs a
 * counter to start exactly once or needs the processor's registers,
 * preemption is disabled, so the thread neither migrates nor has its
 * counters reloaded. Counters are chosen through the driver's documented
 * allocation (a fixed counter for its event when it exists and is free,
 * else the lowest free general counter; equal configurations share one
 * counter), and each test checks IA32_PERF_GLOBAL_CTRL to confirm it got
 * the counter it meant to exercise.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <machine/pmu_intel.h>

#include "test_util.h"

#define HW_N                1000000ULL  /* iterations of hw_loop */
#define HW_LOOP_INSNS       10          /* instructions per iteration */

/* Registers read directly (SDM vol. 3B, 21.2; vol. 4, table 2-2). */
#define HW_MSR_PMC(i)               (0xc1 + (i))
#define HW_MSR_EVTSEL(i)            (0x186 + (i))
#define HW_MSR_A_PMC(i)             (0x4c1 + (i))
#define HW_MSR_GLOBAL_STATUS        0x38e
#define HW_MSR_GLOBAL_CTRL          0x38f

#define HW_EVTSEL_USR               (1ULL << 16)
#define HW_EVTSEL_OS                (1ULL << 17)
#define HW_EVTSEL_CMASK(n)          ((unsigned int)(n) << 24)

/* Raw codes (event select | umask << 8), table 21-1. */
#define HW_RAW_CYCLES               0x003c
#define HW_RAW_INSNS                0x00c0
#define HW_RAW_BRANCHES             0x00c4
#define HW_RAW_SLOTS                0x01a4

/* CPUID.0AH:EBX bits of the architectural events (table 21-1). */
#define HW_ARCH_CYCLES              0
#define HW_ARCH_INSNS               1
#define HW_ARCH_REF_CYCLES          2
#define HW_ARCH_BRANCHES            5
#define HW_ARCH_NONE                32  /* needs no CPUID bit */

#define HW_KERN                     PERFMON_EF_KERN
#define HW_USER                     PERFMON_EF_USER
#define HW_RAW                      PERFMON_EF_RAW

/* Ranges, see hw_range_of. */
enum hw_bound {
    HW_BOUND_INSNS,
    HW_BOUND_BRANCHES,
    HW_BOUND_CYCLES,
    HW_BOUND_SLOTS,
    HW_BOUND_REF,
    HW_BOUND_ZERO,
};

struct hw_range {
    uint64_t lo;
    uint64_t hi;
};

/* An event a test attaches, and the range it must count over hw_loop. */
struct hw_spec {
    const char *name;
    unsigned int id;
    unsigned int flags;
    unsigned int arch;          /* CPUID.0AH:EBX bit it needs */
    enum hw_bound bound;
};

/* The event of each fixed counter (table 21-2), counting ring 0. */
static const struct hw_spec hw_fixed_specs[PMU_INTEL_MAX_FIXED] = {
    { "fixed0 instructions:k", PERFMON_EV_INSTRUCTION, HW_KERN,
      HW_ARCH_INSNS, HW_BOUND_INSNS },
    { "fixed1 cycles:k", PERFMON_EV_CYCLE, HW_KERN,
      HW_ARCH_CYCLES, HW_BOUND_CYCLES },
    { "fixed2 ref-cycles:k", PERFMON_EV_REF_CYCLE, HW_KERN,
      HW_ARCH_REF_CYCLES, HW_BOUND_REF },
    { "fixed3 slots:k", HW_RAW_SLOTS, HW_RAW | HW_KERN,
      HW_ARCH_NONE, HW_BOUND_SLOTS },
};

/*
 * Events for the general counters, all at once next to the fixed ones
 * (which count the same events in ring 0 only). perfmon gives equal
 * configurations one counter, so each entry differs in its event or its
 * ring bits; the strongest ranges come first. The USER-only entries
 * count exactly zero; the last ones, with a counter mask, only make the
 * configurations distinct, to fill eight counters whatever CPUID says.
 */
static const struct hw_spec hw_gp_specs[] = {
    { "branches:k", HW_RAW_BRANCHES, HW_RAW | HW_KERN,
      HW_ARCH_BRANCHES, HW_BOUND_BRANCHES },
    { "instructions:ku", HW_RAW_INSNS, HW_RAW | HW_KERN | HW_USER,
      HW_ARCH_INSNS, HW_BOUND_INSNS },
    { "cycles:ku", HW_RAW_CYCLES, HW_RAW | HW_KERN | HW_USER,
      HW_ARCH_CYCLES, HW_BOUND_CYCLES },
    { "branches:ku", HW_RAW_BRANCHES, HW_RAW | HW_KERN | HW_USER,
      HW_ARCH_BRANCHES, HW_BOUND_BRANCHES },
    { "instructions:u", HW_RAW_INSNS, HW_RAW | HW_USER,
      HW_ARCH_INSNS, HW_BOUND_ZERO },
    { "cycles:u", HW_RAW_CYCLES, HW_RAW | HW_USER,
      HW_ARCH_CYCLES, HW_BOUND_ZERO },
    { "branches:u", HW_RAW_BRANCHES, HW_RAW | HW_USER,
      HW_ARCH_BRANCHES, HW_BOUND_ZERO },
    { "instructions,cmask=1:u", HW_RAW_INSNS | HW_EVTSEL_CMASK(1),
      HW_RAW | HW_USER, HW_ARCH_NONE, HW_BOUND_ZERO },
    { "instructions,cmask=2:u", HW_RAW_INSNS | HW_EVTSEL_CMASK(2),
      HW_RAW | HW_USER, HW_ARCH_NONE, HW_BOUND_ZERO },
    { "instructions,cmask=3:u", HW_RAW_INSNS | HW_EVTSEL_CMASK(3),
      HW_RAW | HW_USER, HW_ARCH_NONE, HW_BOUND_ZERO },
    { "instructions,cmask=4:u", HW_RAW_INSNS | HW_EVTSEL_CMASK(4),
      HW_RAW | HW_USER, HW_ARCH_NONE, HW_BOUND_ZERO },
    { "instructions,cmask=5:u", HW_RAW_INSNS | HW_EVTSEL_CMASK(5),
      HW_RAW | HW_USER, HW_ARCH_NONE, HW_BOUND_ZERO },
    { "instructions,cmask=6:u", HW_RAW_INSNS | HW_EVTSEL_CMASK(6),
      HW_RAW | HW_USER, HW_ARCH_NONE, HW_BOUND_ZERO },
    { "instructions,cmask=7:u", HW_RAW_INSNS | HW_EVTSEL_CMASK(7),
      HW_RAW | HW_USER, HW_ARCH_NONE, HW_BOUND_ZERO },
};

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static void
hw_require_pmu(void)
{
    if (pmu_intel_get_info()->version == 0 || perfmon_get_dev(false) == NULL) {
        test_skip("no architectural PMU (CPUID.0AH version 0)");
    }
}

static void
hw_require_global_regs(void)
{
    if (pmu_intel_get_info()->version < 2) {
        test_skip("version 1: no global registers, no overflow interrupt");
    }
}

static bool
hw_event_available(unsigned int arch)
{
    return arch == HW_ARCH_NONE
           || (pmu_intel_get_info()->events_available & (1U << arch));
}

/* Skip unless CPUID.0AH:EBX reports the architectural event. */
static void
hw_require_event(unsigned int arch, const char *name)
{
    if (!hw_event_available(arch)) {
        test_diag("CPUID.0AH:EBX: no %s event", name);
        test_skip("architectural event unavailable");
    }
}

/*
 * Exactly HW_LOOP_INSNS instructions per iteration: 8 adds, dec, jnz; one
 * of them (jnz) a branch. The adds form one dependency chain.
 */
static void
hw_loop(uint64_t iters)
{
    uint64_t scratch = 0;

    __asm__ volatile("1:\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "decq %0\n"
                     "jnz 1b\n"
                     : "+r"(iters), "+r"(scratch) : : "cc");
}

/*
 * True under a hypervisor: CPUID.1:ECX[31], which the SDM (vol. 2A,
 * CPUID, table 3-10) leaves at 0 on real processors and hypervisors set.
 */
static bool
hw_under_hypervisor(void)
{
    uint32_t eax, ebx, ecx, edx;

    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);
    return (ecx & CPU_CPUID1_ECX_HYPERVISOR) != 0;
}

/*
 * What an event must count over hw_loop(iters), which took tsc TSC ticks.
 *
 * Instructions (table 21-1, "Instructions Retired"): the loop retires
 * exactly 10 per iteration; up to 2% more for the window's own code.
 *
 * Branches ("Branch Instructions Retired"): exactly one jnz per iteration,
 * taken or not; up to 10% more for the window's own code.
 *
 * Core cycles ("UnHalted Core Cycles"): an iteration is at least 9 uops
 * (dec and jnz may fuse into one) and no Intel core allocates more than 8
 * per cycle, so it takes more than one cycle. At most 5 cycles per
 * instruction: the chain of 8 dependent adds needs about 8 cycles per
 * iteration, the rest leaves room for interrupts and a hypervisor.
 *
 * Topdown slots: the issue slots of the unhalted cycles, the pipeline
 * width (at least 1, at most 8 on any core) times the cycles above.
 *
 * Reference cycles on fixed counter 2: IA32_FIXED_CTR2 increments at the
 * TSC frequency whenever the processor is not halted, whatever its core
 * frequency (vol. 3B, "Counting Clocks", "Cycle Counting and
 * Opportunistic Processor Operation"); the loop never halts, so the
 * counter tracks the TSC: [0.9, 1.05] of its ticks, the 5% above for the
 * reads around the TSC window. A hypervisor widens both sides: the
 * guest's counter stops while the host runs (VM exits, the vCPU thread
 * preempted) but the guest's TSC does not, and a guest TSC offset or
 * scaled for migration no longer matches the host counter's rate; so
 * [0.5, 1.1] there.
 *
 * USER-only events: the USR bit of IA32_PERFEVTSELx (figure 21-1) and
 * bit 1 of a fixed counter's field (figure 21-2) count at CPL > 0 only,
 * which this kernel never runs at: exactly 0.
 */
static struct hw_range
hw_range_of(enum hw_bound bound, uint64_t iters, uint64_t tsc)
{
    uint64_t insns = iters * HW_LOOP_INSNS;

    switch (bound) {
    case HW_BOUND_INSNS:
        return (struct hw_range){ insns, insns + insns / 50 };
    case HW_BOUND_BRANCHES:
        return (struct hw_range){ iters, iters + iters / 10 };
    case HW_BOUND_CYCLES:
        return (struct hw_range){ iters, 50 * iters };
    case HW_BOUND_SLOTS:
        return (struct hw_range){ iters, 8 * 50 * iters };
    case HW_BOUND_REF:
        if (hw_under_hypervisor()) {
            return (struct hw_range){ tsc / 2, tsc + tsc / 10 };
        }

        return (struct hw_range){ tsc - tsc / 10, tsc + tsc / 20 };
    case HW_BOUND_ZERO:
    default:
        return (struct hw_range){ 0, 0 };
    }
}

#define HW_ASSERT_RANGE(what, value, range) \
    hw_assert_range(__FILE__, __LINE__, what, value, range)

/* Print the value (a hardware run's record), fail when out of range. */
static void
hw_assert_range(const char *file, int line, const char *what, uint64_t value,
                struct hw_range range)
{
    test_diag("%s: %llu in [%llu, %llu]", what, (unsigned long long)value,
              (unsigned long long)range.lo, (unsigned long long)range.hi);

    if (value < range.lo || value > range.hi) {
        test_fail_at(file, line, "%s: %llu outside [%llu, %llu]", what,
                     (unsigned long long)value, (unsigned long long)range.lo,
                     (unsigned long long)range.hi);
    }
}

static void
hw_attach_self(struct perfmon_event *event, unsigned int id,
               unsigned int flags)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(event, thread_self()), 0);
}

static void
hw_attach_spec(struct perfmon_event *event, const struct hw_spec *spec)
{
    hw_attach_self(event, spec->id, spec->flags);
}

static void
hw_detach_all(struct perfmon_event *events, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&events[i]), 0);
    }
}

/* The GLOBAL_* bits of general counters 0 to n - 1 (vol. 3B, 21.2.2). */
static uint64_t
hw_gp_bits(unsigned int n)
{
    return (n == 0) ? 0 : (1ULL << n) - 1;
}

/* The GLOBAL_* bit of fixed counter j. */
static uint64_t
hw_fixed_bit(unsigned int j)
{
    return 1ULL << (PMU_INTEL_FIXED_BASE + j);
}

/* The GLOBAL_STATUS bits of every counter that exists. */
static uint64_t
hw_counter_bits(void)
{
    const struct pmu_intel_info *info = pmu_intel_get_info();

    return hw_gp_bits(info->nr_gp)
           | ((uint64_t)info->fixed_mask << PMU_INTEL_FIXED_BASE);
}

static uint64_t
hw_width_mask(unsigned int width)
{
    return (width >= 64) ? ~0ULL : (1ULL << width) - 1;
}

/*
 * IA32_PERF_GLOBAL_CTRL of the calling CPU while the test thread's events
 * are loaded there: exactly the counters in use are enabled.
 */
static uint64_t
hw_global_ctrl(void)
{
    uint64_t ctrl;

    thread_preempt_disable();
    ctrl = cpu_get_msr(HW_MSR_GLOBAL_CTRL);
    thread_preempt_enable();
    return ctrl;
}

/* Fail unless the thread's events use exactly the counters in bits. */
static void
hw_assert_counters_used(uint64_t bits)
{
    if (pmu_intel_get_info()->version >= 2) {
        TEST_ASSERT_EQ(hw_global_ctrl(), bits);
    }
}

/*
 * Read every event, run the loop, read them again: counts in deltas.
 * Return the TSC ticks the loop took, with preemption disabled so that
 * the thread's counters run for all of them.
 */
static uint64_t
hw_measure(struct perfmon_event *events, unsigned int n, uint64_t *deltas,
           uint64_t iters)
{
    uint64_t t0, t1;

    for (unsigned int i = 0; i < n; i++) {
        deltas[i] = perfmon_event_read(&events[i]);
    }

    thread_preempt_disable();
    t0 = cpu_get_tsc();
    hw_loop(iters);
    t1 = cpu_get_tsc();
    thread_preempt_enable();

    for (unsigned int i = 0; i < n; i++) {
        deltas[i] = perfmon_event_read(&events[i]) - deltas[i];
    }

    return t1 - t0;
}

/* ------------------------------------------------------------------ */
/* Counts of the known loop                                            */
/* ------------------------------------------------------------------ */

/* Instructions in [10N, 10.2N], core cycles in [N, 50N]. */
TEST_DEFINE(pmu_intel_hw, instructions_and_cycles_of_known_loop)
{
    struct perfmon_event events[2];
    uint64_t counts[2], tsc;

    hw_require_pmu();
    hw_require_event(HW_ARCH_INSNS, "instructions");
    hw_require_event(HW_ARCH_CYCLES, "cycles");
    hw_attach_self(&events[0], PERFMON_EV_INSTRUCTION, HW_KERN);
    hw_attach_self(&events[1], PERFMON_EV_CYCLE, HW_KERN);
    tsc = hw_measure(events, 2, counts, HW_N);
    HW_ASSERT_RANGE("instructions", counts[0],
                    hw_range_of(HW_BOUND_INSNS, HW_N, tsc));
    HW_ASSERT_RANGE("cycles", counts[1],
                    hw_range_of(HW_BOUND_CYCLES, HW_N, tsc));
    hw_detach_all(events, 2);
}

/* Branches on a general counter (no fixed counter counts them). */
TEST_DEFINE(pmu_intel_hw, branches_of_known_loop)
{
    struct perfmon_event event;
    uint64_t count, tsc;

    hw_require_pmu();
    hw_require_event(HW_ARCH_BRANCHES, "branches");

    if (pmu_intel_get_info()->nr_gp == 0) {
        test_skip("no general counter");
    }

    hw_attach_self(&event, PERFMON_EV_BRANCH, HW_KERN);
    hw_assert_counters_used(hw_gp_bits(1));
    tsc = hw_measure(&event, 1, &count, HW_N);
    HW_ASSERT_RANGE("branches", count,
                    hw_range_of(HW_BOUND_BRANCHES, HW_N, tsc));
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
}

/*
 * The fixed instructions counter and a general counter programmed with the
 * same event (different ring bits, so they cannot share a counter) agree
 * within 1% in kernel code.
 */
TEST_DEFINE(pmu_intel_hw, fixed_and_general_counters_agree)
{
    struct perfmon_event events[2];
    uint64_t counts[2], diff;

    hw_require_pmu();
    hw_require_event(HW_ARCH_INSNS, "instructions");

    if (!(pmu_intel_get_info()->fixed_mask & 1)
        || pmu_intel_get_info()->nr_gp == 0) {
        test_skip("no fixed counter 0 or no general counter");
    }

    hw_attach_self(&events[0], PERFMON_EV_INSTRUCTION, HW_KERN);
    hw_attach_self(&events[1], HW_RAW_INSNS, HW_RAW | HW_KERN | HW_USER);
    hw_assert_counters_used(hw_fixed_bit(0) | hw_gp_bits(1));
    hw_measure(events, 2, counts, HW_N);
    test_diag("fixed %llu, general %llu", (unsigned long long)counts[0],
              (unsigned long long)counts[1]);
    diff = (counts[0] > counts[1]) ? counts[0] - counts[1]
                                   : counts[1] - counts[0];
    TEST_ASSERT_GE(counts[0], HW_N * HW_LOOP_INSNS);
    TEST_ASSERT_LE(diff, counts[0] / 100);
    hw_detach_all(events, 2);
}

/*
 * Ring filtering: instructions counted in USER mode only are exactly 0 in
 * this ring-0 kernel, on a fixed and on a general counter, while the same
 * event in KERN mode on the other kind of counter counts the loop. Two
 * rounds swap which counter counts which ring.
 */
TEST_DEFINE(pmu_intel_hw, user_only_counts_zero_kern_only_counts_loop)
{
    static const unsigned int rounds[2][2] = {
        { HW_KERN, HW_USER },   /* fixed 0 kernel, general user */
        { HW_USER, HW_KERN },   /* fixed 0 user, general kernel */
    };
    const struct pmu_intel_info *info = pmu_intel_get_info();
    struct perfmon_event events[2];
    uint64_t counts[2], tsc;

    hw_require_pmu();
    hw_require_event(HW_ARCH_INSNS, "instructions");

    if (info->nr_gp == 0) {
        test_skip("no general counter");
    }

    for (unsigned int r = 0; r < ARRAY_SIZE(rounds); r++) {
        /* The first attached takes fixed 0 when it exists. */
        hw_attach_self(&events[0], PERFMON_EV_INSTRUCTION, rounds[r][0]);
        hw_attach_self(&events[1], PERFMON_EV_INSTRUCTION, rounds[r][1]);

        if (info->fixed_mask & 1) {
            hw_assert_counters_used(hw_fixed_bit(0) | hw_gp_bits(1));
        } else {
            hw_assert_counters_used(hw_gp_bits(2));
        }

        tsc = hw_measure(events, 2, counts, HW_N);

        for (unsigned int i = 0; i < 2; i++) {
            bool kern = rounds[r][i] == HW_KERN;

            HW_ASSERT_RANGE(kern ? "instructions:k" : "instructions:u",
                            counts[i],
                            hw_range_of(kern ? HW_BOUND_INSNS : HW_BOUND_ZERO,
                                        HW_N, tsc));
        }

        hw_detach_all(events, 2);
    }
}

/*
 * A counter mask turns the instruction count into a count of cycles in
 * which at least CMASK instructions retired (vol. 3B, 21.2.1.1, figure
 * 21-1, CMASK field). With CMASK=2 each counted cycle retired two or more
 * instructions, so twice the count is at most the instructions of the
 * same window, below the count without a mask. CMASK=1 counts at least
 * the cycles CMASK=2 counts, and is not zero: the loop retires.
 */
TEST_DEFINE(pmu_intel_hw, counter_mask_counts_less)
{
    /* Events start a few hundred instructions apart: allow for it. */
    const uint64_t skew = 10000;
    const struct pmu_intel_info *info = pmu_intel_get_info();
    struct perfmon_event events[3];
    uint64_t counts[3], tsc;
    unsigned int n, nr_gp_free;

    hw_require_pmu();
    hw_require_event(HW_ARCH_INSNS, "instructions");
    nr_gp_free = info->nr_gp;

    /* Without fixed counter 0, instructions takes a general counter. */
    if (!(info->fixed_mask & 1) && nr_gp_free != 0) {
        nr_gp_free--;
    }

    if (nr_gp_free == 0) {
        test_skip("no general counter left for a counter mask");
    }

    /* Fixed 0 (or a general counter), then masks on general counters. */
    hw_attach_self(&events[0], PERFMON_EV_INSTRUCTION, HW_KERN);
    hw_attach_self(&events[1], HW_RAW_INSNS | HW_EVTSEL_CMASK(2),
                   HW_RAW | HW_KERN);
    n = 2;

    if (nr_gp_free >= 2) {
        hw_attach_self(&events[2], HW_RAW_INSNS | HW_EVTSEL_CMASK(1),
                       HW_RAW | HW_KERN);
        n = 3;
    }

    tsc = hw_measure(events, n, counts, HW_N);
    HW_ASSERT_RANGE("instructions", counts[0],
                    hw_range_of(HW_BOUND_INSNS, HW_N, tsc));
    test_diag("cycles retiring >= 2 instructions: %llu",
              (unsigned long long)counts[1]);
    TEST_ASSERT_LT(counts[1], counts[0]);
    TEST_ASSERT_LE(2 * counts[1], counts[0] + skew);

    if (n == 3) {
        test_diag("cycles retiring >= 1 instruction: %llu",
                  (unsigned long long)counts[2]);
        TEST_ASSERT_GT(counts[2], 0);
        TEST_ASSERT_LE(counts[2], counts[0] + skew);
        TEST_ASSERT_GE(counts[2] + skew, counts[1]);
    }

    hw_detach_all(events, n);
}

/* Fixed counter 2 counts at the TSC rate while the loop runs. */
TEST_DEFINE(pmu_intel_hw, ref_cycles_track_the_tsc)
{
    struct perfmon_event event;
    uint64_t count, tsc;

    hw_require_pmu();
    hw_require_event(HW_ARCH_REF_CYCLES, "reference cycles");

    if (!(pmu_intel_get_info()->fixed_mask & (1U << 2))) {
        test_skip("no fixed counter 2");
    }

    hw_attach_self(&event, PERFMON_EV_REF_CYCLE, HW_KERN);
    hw_assert_counters_used(hw_fixed_bit(2));
    tsc = hw_measure(&event, 1, &count, HW_N);
    test_diag("%s: ref-cycles %llu over %llu TSC ticks",
              hw_under_hypervisor() ? "hypervisor" : "bare metal",
              (unsigned long long)count, (unsigned long long)tsc);
    HW_ASSERT_RANGE("ref-cycles", count, hw_range_of(HW_BOUND_REF, HW_N, tsc));
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
}

/* ------------------------------------------------------------------ */
/* Every counter at once                                               */
/* ------------------------------------------------------------------ */

/*
 * Every general counter, each with a distinct configuration, and every
 * fixed counter count one loop together, each within its range. With
 * GLOBAL_CTRL checked to enable exactly those counters, this proves the
 * layout of its bits (general counter i at bit i, fixed counter j at bit
 * 32 + j, vol. 3B, 21.2.2, figure 21-3): a counter enabled through the
 * wrong bit would not count and fall below its range.
 */
TEST_DEFINE(pmu_intel_hw, all_counters_at_once)
{
    const struct pmu_intel_info *info = pmu_intel_get_info();
    struct perfmon_event events[PMU_INTEL_MAX_GP + PMU_INTEL_MAX_FIXED];
    const struct hw_spec *specs[ARRAY_SIZE(events)];
    uint64_t counts[ARRAY_SIZE(events)], bits = 0, tsc;
    unsigned int n = 0, nr_gp = 0;

    hw_require_pmu();

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        if (!(info->fixed_mask & (1U << j))) {
            continue;
        }

        if (!hw_event_available(hw_fixed_specs[j].arch)) {
            test_diag("fixed counter %u: its event is unavailable", j);
            continue;
        }

        specs[n] = &hw_fixed_specs[j];
        hw_attach_spec(&events[n], specs[n]);
        bits |= hw_fixed_bit(j);
        n++;
    }

    for (unsigned int i = 0; i < ARRAY_SIZE(hw_gp_specs); i++) {
        if (nr_gp == info->nr_gp) {
            break;
        }

        if (!hw_event_available(hw_gp_specs[i].arch)) {
            continue;
        }

        specs[n] = &hw_gp_specs[i];
        hw_attach_spec(&events[n], specs[n]);
        nr_gp++;
        n++;
    }

    TEST_ASSERT_EQ(nr_gp, info->nr_gp);
    bits |= hw_gp_bits(nr_gp);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(perfmon_get_dev(false)), n);
    hw_assert_counters_used(bits);
    tsc = hw_measure(events, n, counts, HW_N);

    for (unsigned int i = 0; i < n; i++) {
        HW_ASSERT_RANGE(specs[i]->name, counts[i],
                        hw_range_of(specs[i]->bound, HW_N, tsc));
    }

    hw_detach_all(events, n);
}

/* ------------------------------------------------------------------ */
/* Overflow interrupts                                                 */
/* ------------------------------------------------------------------ */

/* Events of one overflow check: fillers, then the counter under test. */
struct hw_pmi_setup {
    const struct hw_spec *target;
    unsigned int nr_fillers;    /* general counters to occupy first */
    uint64_t bits;              /* GLOBAL_* bits of all of them */
    struct perfmon_event events[PMU_INTEL_MAX_GP + 1];
};

/*
 * Fillers push the target onto a given general counter: USER-only, so
 * they count nothing and never overflow, and with distinct counter masks,
 * so they are distinct configurations that no fixed counter takes.
 */
static void
hw_pmi_attach(struct hw_pmi_setup *setup)
{
    for (unsigned int k = 0; k < setup->nr_fillers; k++) {
        hw_attach_self(&setup->events[k],
                       HW_RAW_INSNS | HW_EVTSEL_CMASK(k + 1),
                       HW_RAW | HW_USER);
    }

    hw_attach_spec(&setup->events[setup->nr_fillers], setup->target);
    hw_assert_counters_used(setup->bits);
}

static void
hw_pmi_detach(struct hw_pmi_setup *setup)
{
    hw_detach_all(setup->events, setup->nr_fillers + 1);
}

/*
 * One run: the target's counter starts gap events before its overflow
 * (pmu_intel_set_start_gap, applied at attach), the loop crosses it once.
 * Preemption stays disabled around the loop so the counter is not
 * reloaded (a reload would start it at the gap again) and the statistics
 * read are this CPU's. Exactly one PMI that found an overflow must have
 * arrived (spurious ones, with nothing in GLOBAL_STATUS, are set apart);
 * the handler must have acknowledged every overflow bit through
 * GLOBAL_OVF_CTRL and unmasked the LVT entry, which the processor masks
 * on each PMI (vol. 3A, 11.5.1); and the count must be the loop's, one
 * wrap included.
 */
static void
hw_pmi_run(struct hw_pmi_setup *setup, unsigned int run)
{
    struct perfmon_event *target = &setup->events[setup->nr_fillers];
    uint64_t pmis, overflows, status, v0, v1, t0, t1;
    unsigned int cpu;
    bool masked;

    hw_pmi_attach(setup);
    v0 = perfmon_event_read(target);
    thread_preempt_disable();
    cpu = cpu_id();
    pmis = pmu_intel_nr_pmis(cpu) - pmu_intel_nr_spurious(cpu);
    overflows = perfmon_nr_overflows(cpu);
    t0 = cpu_get_tsc();
    hw_loop(HW_N);
    t1 = cpu_get_tsc();
    pmis = pmu_intel_nr_pmis(cpu) - pmu_intel_nr_spurious(cpu) - pmis;
    overflows = perfmon_nr_overflows(cpu) - overflows;
    status = cpu_get_msr(HW_MSR_GLOBAL_STATUS);
    masked = lapic_pmc_masked();
    thread_preempt_enable();
    v1 = perfmon_event_read(target);
    hw_pmi_detach(setup);

    test_diag("%s, run %u: %llu PMIs, %llu overflows, status 0x%llx, "
              "LVT %s", setup->target->name, run, (unsigned long long)pmis,
              (unsigned long long)overflows, (unsigned long long)status,
              masked ? "masked" : "unmasked");
    TEST_ASSERT_EQ(pmis, 1);
    TEST_ASSERT_GE(overflows, 1);
    TEST_ASSERT_EQ(status & hw_counter_bits(), 0);
    TEST_ASSERT(!masked);
    HW_ASSERT_RANGE(setup->target->name, v1 - v0,
                    hw_range_of(setup->target->bound, HW_N, t1 - t0));
}

/*
 * Measure the target over one loop, place its overflow at half that
 * count, so it falls in the middle of the loop, and run twice.
 */
static void
hw_pmi_check(struct hw_pmi_setup *setup)
{
    struct perfmon_event *target = &setup->events[setup->nr_fillers];
    uint64_t count, tsc;

    hw_pmi_attach(setup);
    tsc = hw_measure(target, 1, &count, HW_N);
    hw_pmi_detach(setup);
    HW_ASSERT_RANGE(setup->target->name, count,
                    hw_range_of(setup->target->bound, HW_N, tsc));

    TEST_ASSERT_EQ(pmu_intel_set_start_gap(count / 2), 0);

    for (unsigned int run = 1; run <= 2; run++) {
        hw_pmi_run(setup, run);
    }

    TEST_ASSERT_EQ(pmu_intel_set_start_gap(0), 0);
}

/*
 * An overflow interrupt from each general counter (branches, pushed to
 * counter i by i fillers) and from each fixed counter (its own event).
 */
TEST_DEFINE(pmu_intel_hw, overflow_pmi_on_every_counter)
{
    static const struct hw_spec branches = {
        "branches:k", PERFMON_EV_BRANCH, HW_KERN,
        HW_ARCH_BRANCHES, HW_BOUND_BRANCHES,
    };
    const struct pmu_intel_info *info = pmu_intel_get_info();
    struct hw_pmi_setup setup;

    hw_require_pmu();
    hw_require_global_regs();

    if (!hw_event_available(HW_ARCH_BRANCHES)) {
        test_diag("no branch event: general counters left out");
    } else {
        for (unsigned int i = 0; i < info->nr_gp; i++) {
            setup.target = &branches;
            setup.nr_fillers = i;
            setup.bits = hw_gp_bits(i + 1);
            hw_pmi_check(&setup);
        }
    }

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        if (!(info->fixed_mask & (1U << j))
            || !hw_event_available(hw_fixed_specs[j].arch)) {
            continue;
        }

        setup.target = &hw_fixed_specs[j];
        setup.nr_fillers = 0;
        setup.bits = hw_fixed_bit(j);
        hw_pmi_check(&setup);
    }
}

/* ------------------------------------------------------------------ */
/* Counter write width                                                 */
/* ------------------------------------------------------------------ */

/*
 * A write to IA32_PMCx sets bits 31:0 and copies bit 31 into the upper
 * bits; where IA32_PERF_CAPABILITIES.FW_WRITE (bit 13) is set, a write to
 * the IA32_A_PMCx alias sets the counter's full width (vol. 3B, 21.2.6,
 * "Full-Width Writes to Performance Counter Registers"). Checked first on
 * an idle counter, with interrupts disabled so the write and the read hit
 * one CPU; then through the driver, whose path `pmu_intel.full_width=0`
 * forces to IA32_PMCx: there it must refuse a start gap above 2^31 and
 * program 2^31 sign-extended; with full-width writes it programs a gap
 * whose bit 31 differs from the bits above.
 */
TEST_DEFINE(pmu_intel_hw, general_counter_write_width)
{
    const struct pmu_intel_info *info = pmu_intel_get_info();
    bool forced = arg_is_set("pmu_intel.full_width", "0");
    uint64_t mask, sext, legacy, full_low = 0, full_all = 0, gap, raw;
    struct perfmon_event event;
    struct pmu_intel_info hw;
    unsigned long flags;
    unsigned int i;

    hw_require_pmu();

    if (info->nr_gp == 0) {
        test_skip("no general counter");
    }

    pmu_intel_detect(&hw);
    test_diag("FW_WRITE %s, pmu_intel.full_width=0 %s, driver writes %s",
              hw.full_width_writes ? "set" : "clear",
              forced ? "given" : "absent",
              info->full_width_writes ? "full width" : "32 bits");
    TEST_ASSERT_EQ(info->full_width_writes, hw.full_width_writes && !forced);

    i = info->nr_gp - 1;
    mask = hw_width_mask(info->gp_width);
    sext = 0xffffffff80000000ULL & mask;
    flags = cpu_intr_save();
    cpu_set_msr(HW_MSR_PMC(i), 0x80000000ULL);
    legacy = cpu_get_msr(HW_MSR_PMC(i));

    if (hw.full_width_writes) {
        cpu_set_msr(HW_MSR_A_PMC(i), 0x80000000ULL);
        full_low = cpu_get_msr(HW_MSR_PMC(i));
        cpu_set_msr(HW_MSR_A_PMC(i), mask);
        full_all = cpu_get_msr(HW_MSR_PMC(i));
    }

    cpu_set_msr(HW_MSR_PMC(i), 0);
    cpu_intr_restore(flags);
    TEST_ASSERT_EQ(legacy, sext);

    if (hw.full_width_writes) {
        TEST_ASSERT_EQ(full_low, 0x80000000ULL);
        TEST_ASSERT_EQ(full_all, mask);
    }

    /* Bit 31 of this gap's start value differs from the bits above. */
    if (info->full_width_writes) {
        gap = 3ULL << 31;

        if (info->gp_width <= 33
            || (info->fixed_mask != 0 && info->fixed_width <= 33)) {
            test_skip("counters too narrow for a gap above 2^32");
        }
    } else {
        TEST_ASSERT_EQ(pmu_intel_set_start_gap((1ULL << 31) + 1), EINVAL);
        gap = 1ULL << 31;
    }

    /* USER-only branches: general counter 0, which then stays put. */
    TEST_ASSERT_EQ(pmu_intel_set_start_gap(gap), 0);
    hw_attach_self(&event, HW_RAW_BRANCHES, HW_RAW | HW_USER);
    hw_assert_counters_used(hw_gp_bits(1));
    thread_preempt_disable();
    raw = cpu_get_msr(HW_MSR_PMC(0));
    thread_preempt_enable();
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(pmu_intel_set_start_gap(0), 0);
    test_diag("gap 0x%llx: counter 0x%llx", (unsigned long long)gap,
              (unsigned long long)raw);
    TEST_ASSERT_EQ(raw, -gap & mask);

    if (!info->full_width_writes) {
        TEST_ASSERT_EQ(raw, sext);
    }
}

/* ------------------------------------------------------------------ */
/* Thread and CPU events                                               */
/* ------------------------------------------------------------------ */

struct hw_worker {
    bool busy;
    uint64_t count;
};

static void
hw_worker_main(void *arg)
{
    struct hw_worker *w = arg;
    struct perfmon_event insns;

    hw_attach_self(&insns, PERFMON_EV_INSTRUCTION, HW_KERN);

    if (w->busy) {
        hw_loop(HW_N);
    } else {
        thread_delay(5);
    }

    w->count = perfmon_event_read(&insns);
    TEST_ASSERT_EQ(perfmon_event_detach(&insns), 0);
}

/* A thread event counts its thread only: busy thread vs sleeping one. */
TEST_DEFINE(pmu_intel_hw, thread_event_counts_only_its_thread)
{
    struct hw_worker busy = { .busy = true }, idle = { .busy = false };
    unsigned int cpu = cpu_count() - 1;
    struct thread *tb, *ti;

    hw_require_pmu();
    hw_require_event(HW_ARCH_INSNS, "instructions");
    tb = test_thread_start("hw-busy", 1ULL << cpu, hw_worker_main, &busy);
    ti = test_thread_start("hw-idle", 1ULL << cpu, hw_worker_main, &idle);
    thread_join(tb);
    thread_join(ti);
    test_diag("busy %llu, sleeping %llu", (unsigned long long)busy.count,
              (unsigned long long)idle.count);
    TEST_ASSERT_GE(busy.count, HW_N * HW_LOOP_INSNS);
    TEST_ASSERT_LT(idle.count, busy.count / 100);
}

static void
hw_loop_main(void *arg)
{
    (void)arg;
    hw_loop(HW_N);
}

/*
 * CPU events on every CPU, each CPU running the loop in a thread bound to
 * it: each CPU's events count at least the loop (instructions 10N,
 * cycles N, see hw_range_of); there is no upper bound, as a CPU event
 * counts whatever else ran there.
 */
TEST_DEFINE(pmu_intel_hw, cpu_events_count_every_cpu_loop)
{
    static struct perfmon_event insns[CPU_MAX], cycles[CPU_MAX];
    static struct thread *threads[CPU_MAX];
    unsigned int nr_cpus = cpu_count();

    hw_require_pmu();
    hw_require_event(HW_ARCH_INSNS, "instructions");
    hw_require_event(HW_ARCH_CYCLES, "cycles");

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        TEST_ASSERT_EQ(perfmon_event_init(&insns[cpu],
                                          PERFMON_EV_INSTRUCTION,
                                          HW_KERN), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&insns[cpu], cpu), 0);
        TEST_ASSERT_EQ(perfmon_event_init(&cycles[cpu], PERFMON_EV_CYCLE,
                                          HW_KERN), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&cycles[cpu], cpu), 0);
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        threads[cpu] = test_thread_start("hw-loop", 1ULL << cpu,
                                         hw_loop_main, NULL);
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        thread_join(threads[cpu]);
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        uint64_t i = perfmon_event_read(&insns[cpu]);
        uint64_t c = perfmon_event_read(&cycles[cpu]);

        test_diag("cpu%u: %llu instructions, %llu cycles", cpu,
                  (unsigned long long)i, (unsigned long long)c);
        TEST_ASSERT_GE(i, HW_N * HW_LOOP_INSNS);
        TEST_ASSERT_GE(c, HW_N);
        TEST_ASSERT_EQ(perfmon_event_detach(&insns[cpu]), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&cycles[cpu]), 0);
    }
}
