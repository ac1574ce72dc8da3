/*
 * Intel PMU on real counters: runs where CPUID reports an architectural
 * PMU (KVM with the host PMU exposed, `make check-hw`), and reports SKIP
 * with the reason everywhere else. Nothing here can pass on a machine
 * without a PMU, and nothing may be made to: the runner fails a check-hw
 * run in which every test skipped.
 *
 * The checks that hold on any PMU (the known loop's instructions, cycles
 * and branches, ring filtering, every general counter's overflow
 * interrupt, thread and CPU events) are pmu_hw's (test_pmu_hw.c); this
 * suite keeps what only Intel's architectural PMU has: fixed counters and
 * their overflow interrupts, the IA32_PERF_GLOBAL_CTRL layout, counter
 * masks, reference cycles against the TSC, and counter write width. The
 * loop and the ranges its counts must fall in, with their sources (Intel
 * SDM vol. 3B, chapter 21; table 21-1 lists the architectural events),
 * are pmu_hw_util.h's; the Intel-only ones:
 *
 *   topdown slots           [N, 400N]     pipeline width (<= 8) x cycles
 *   reference cycles        [0.9, 1.05] x TSC ticks over the loop
 *                           ([0.5, 1.1] under a hypervisor)
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
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <pmu/pmu_intel.h>

#include "pmu_hw_util.h"
#include "test_util.h"

/* Registers read directly (SDM vol. 3B, 21.2; vol. 4, table 2-2). */
#define HW_MSR_PMC(i)               (0xc1 + (i))
#define HW_MSR_EVTSEL(i)            (0x186 + (i))
#define HW_MSR_A_PMC(i)             (0x4c1 + (i))

#define HW_EVTSEL_USR               (1ULL << 16)
#define HW_EVTSEL_OS                (1ULL << 17)

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

/* The event of each fixed counter (table 21-2), counting ring 0. */
static const struct hw_spec hw_fixed_specs[PMU_INTEL_MAX_FIXED] = {
    { "fixed0 instructions:k", PERFMON_EV_INSTRUCTION, HW_KERN,
      HW_ARCH_INSNS, HW_BOUND_INSNS },
    { "fixed1 cycles:k", PERFMON_EV_CYCLE, HW_KERN,
      HW_ARCH_CYCLES, HW_BOUND_CYCLES },
    { "fixed2 ref-cycles:k", PERFMON_EV_REF_CYCLE, HW_KERN,
      HW_ARCH_REF_CYCLES, HW_BOUND_REF_INTEL },
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

/*
 * Skip unless the Intel driver registered: CPUID.0AH reports an
 * architectural PMU and no other driver took the hardware device.
 */
static void
hw_require_intel(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);

    if (pmu_intel_get_info()->version == 0 || dev == NULL) {
        test_skip("no architectural PMU (CPUID.0AH version 0)");
    }

    if (strcmp(dev->name, "pmu_intel") != 0) {
        test_diag("hardware device %s", dev->name);
        test_skip("the hardware PMU registered is not Intel's");
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
hw_require_arch_event(unsigned int arch, const char *name)
{
    if (!hw_event_available(arch)) {
        test_diag("CPUID.0AH:EBX: no %s event", name);
        test_skip("architectural event unavailable");
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

static uint64_t
hw_width_mask(unsigned int width)
{
    return (width >= 64) ? ~0ULL : (1ULL << width) - 1;
}

/* ------------------------------------------------------------------ */
/* Counts of the known loop                                            */
/* ------------------------------------------------------------------ */

/*
 * The fixed instructions counter and a general counter programmed with the
 * same event (different ring bits, so they cannot share a counter) agree
 * within 1% in kernel code.
 */
TEST_DEFINE(pmu_intel_hw, fixed_and_general_counters_agree)
{
    struct perfmon_event events[2];
    uint64_t counts[2], diff;

    hw_require_intel();
    hw_require_arch_event(HW_ARCH_INSNS, "instructions");

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

    hw_require_intel();
    hw_require_arch_event(HW_ARCH_INSNS, "instructions");

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

    hw_require_intel();
    hw_require_arch_event(HW_ARCH_INSNS, "instructions");
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

    hw_require_intel();
    hw_require_arch_event(HW_ARCH_REF_CYCLES, "reference cycles");

    if (!(pmu_intel_get_info()->fixed_mask & (1U << 2))) {
        test_skip("no fixed counter 2");
    }

    hw_attach_self(&event, PERFMON_EV_REF_CYCLE, HW_KERN);
    hw_assert_counters_used(hw_fixed_bit(2));
    tsc = hw_measure(&event, 1, &count, HW_N);
    test_diag("%s: ref-cycles %llu over %llu TSC ticks",
              hw_under_hypervisor() ? "hypervisor" : "bare metal",
              (unsigned long long)count, (unsigned long long)tsc);
    HW_ASSERT_RANGE("ref-cycles", count,
                    hw_range_of(HW_BOUND_REF_INTEL, HW_N, tsc));
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

    hw_require_intel();

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
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(perfmon_dev_get(false)), n);
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

/*
 * An overflow interrupt from each fixed counter, counting its own event
 * (the general counters are pmu_hw's overflow_pmi_on_every_general_counter):
 * hw_pmi_check places the wrap in the middle of the loop, twice; PMIs
 * minus spurious PMIs rise by exactly one per run, the count stays in its
 * range (a lost or doubled wrap is off by at least 2^31), no counter bit
 * is left in IA32_PERF_GLOBAL_STATUS and the LVT entry, which the
 * processor masks on each PMI (vol. 3A, 11.5.1), is unmasked again.
 */
TEST_DEFINE(pmu_intel_hw, overflow_pmi_on_every_fixed_counter)
{
    const struct pmu_intel_info *info = pmu_intel_get_info();
    struct hw_pmi_setup setup;
    unsigned int n = 0;

    hw_require_intel();
    hw_require_global_regs();

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        if (!(info->fixed_mask & (1U << j))
            || !hw_event_available(hw_fixed_specs[j].arch)) {
            continue;
        }

        setup.target = &hw_fixed_specs[j];
        setup.nr_fillers = 0;
        setup.bits = hw_fixed_bit(j);
        hw_pmi_check(&setup);
        n++;
    }

    if (n == 0) {
        test_skip("no fixed counter");
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

    hw_require_intel();

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
