/*
 * Host tests of the Intel PMU driver (arch/x86/pmu/pmu_intel.c) through
 * perfmon (kern/perfmon*.c), both compiled unchanged, against the register
 * model of pmu_model.c in the single-CPU environment of host_env.c.
 *
 * perfmon and the driver register one device per process, so each binary
 * has one PMU, chosen by PMU_TEST_VERSION:
 *   1  version 1: 2 general counters of 40 bits, no fixed counters, no
 *      global registers and no PMI (perfmon polls); LLC references
 *      unavailable.
 *   2  version 2: 4 general and 3 fixed counters of 40 bits, 32-bit
 *      counter writes (PDCM, but no FW_WRITE), PMI, the legacy freeze
 *      on PMI; an EBX vector of 6, so branch misses are unavailable;
 *      Haswell's family and model (06_3CH), with its quirks (counter
 *      constraints, least periods: pmu_model.h).
 *   5  version 5: 8 general counters of 48 bits, fixed counters 0 and 2
 *      only (ECX bitmask) of 40 bits, full-width writes, PMI, the
 *      streamlined (version 4) freeze on PMI; LLC misses unavailable.
 *
 * Every test runs between pmu_test_begin() and pmu_test_end(), which
 * checks that the model saw no #GP, no PMI is left pending, every counter
 * and lock is released and the PMU is idle.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <pmu/pmu_intel.h>
#include <pmu/pmu_x86_test.h>
#include <machine/trap.h>

#include "host_env.h"
#include "host_test.h"
#include "pmu_model.h"
#include "pmu_sample_test.h"

#define PMU_TEST_FIXED(j)   (MODEL_FIXED_BASE + (j))

#if PMU_TEST_VERSION == 1

#define PMU_TEST_NR_GP          2
#define PMU_TEST_GP_WIDTH       40
#define PMU_TEST_FIXED_WIDTH    0
#define PMU_TEST_FIXED_MASK     0x0
#define PMU_TEST_EVENTS         0x77
#define PMU_TEST_FULL_WIDTH     false
#define PMU_TEST_NR_PMCS        2
/* Half the time 2^40 events take at 100 per cycle at 1 GHz, in ticks. */
#define PMU_TEST_POLL_TICKS     549
#define PMU_TEST_UNAVAILABLE    PERFMON_EV_CACHE_REF

static const struct model_config pmu_test_config = {
    .max_leaf = 0xd,
    .a_eax = MODEL_CPUID_A_EAX(1, 2, 40, 7),
    .a_ebx = 1U << 3,
};

#elif PMU_TEST_VERSION == 2

#define PMU_TEST_NR_GP          4
#define PMU_TEST_GP_WIDTH       40
#define PMU_TEST_FIXED_WIDTH    40
#define PMU_TEST_FIXED_MASK     0x7
#define PMU_TEST_EVENTS         0x3f
#define PMU_TEST_FULL_WIDTH     false
#define PMU_TEST_NR_PMCS        7
#define PMU_TEST_POLL_TICKS     0
#define PMU_TEST_UNAVAILABLE    PERFMON_EV_BRANCH_MISS

#define PMU_TEST_HASWELL       true

static const struct model_config pmu_test_config = {
    .max_leaf = 0xd,
    .cpuid1_eax = MODEL_CPUID1_EAX_FAM6(MODEL_HASWELL),
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(2, 4, 40, 6),
    .a_edx = MODEL_CPUID_A_EDX(3, 40),
};

#elif PMU_TEST_VERSION == 5

#define PMU_TEST_NR_GP          8
#define PMU_TEST_GP_WIDTH       48
#define PMU_TEST_FIXED_WIDTH    40
#define PMU_TEST_FIXED_MASK     0x5
#define PMU_TEST_EVENTS         0xef
#define PMU_TEST_FULL_WIDTH     true
#define PMU_TEST_NR_PMCS        10
#define PMU_TEST_POLL_TICKS     0
#define PMU_TEST_UNAVAILABLE    PERFMON_EV_CACHE_MISS

static const struct model_config pmu_test_config = {
    .max_leaf = 0x23,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
    .a_ebx = 1U << 4,
    .a_ecx = 0x5,
    .a_edx = MODEL_CPUID_A_EDX(0, 40),
    .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
};

#else
#error "PMU_TEST_VERSION must be 1, 2 or 5"
#endif

#ifndef PMU_TEST_HASWELL
#define PMU_TEST_HASWELL        false
#endif

#define PMU_TEST_HAS_PMI        (PMU_TEST_VERSION >= 2)

/*
 * The LVT entry as the driver programs it: NMI delivery (perfmon.pmi=nmi,
 * the default, as here with an empty command line) or the PMI vector;
 * and the EOIs a PMI takes (an NMI none).
 */
#define PMU_TEST_LVT    (perfmon_pmi_nmi() ? MODEL_LVT_NMI : TRAP_PMI)
#define PMU_TEST_EOIS   (perfmon_pmi_nmi() ? 0UL : 1UL)
/* The narrowest counter, the width perfmon's device reports. */
#define PMU_TEST_MIN_WIDTH      ((PMU_TEST_FIXED_MASK == 0)               \
                                 ? PMU_TEST_GP_WIDTH                    \
                                 : MIN(PMU_TEST_GP_WIDTH,               \
                                       PMU_TEST_FIXED_WIDTH))
#define PMU_TEST_GP_PERIOD      (1ULL << PMU_TEST_GP_WIDTH)

#define PMU_TEST_MAX_EVENTS     16
#define PMU_TEST_MAX_THREADS    4

/* The architectural event each fixed counter counts (SDM vol. 3B 21.2.2). */
static const struct model_event pmu_test_fixed_events[] = {
    MODEL_EV_INSTRUCTIONS,
    MODEL_EV_CYCLES,
    MODEL_EV_REF_CYCLES,
};

static bool pmu_test_booted;
static int pmu_test_perfmon_setup_error;
static int pmu_test_setup_error;
static unsigned int pmu_test_boot_faults;
static struct model_regs pmu_test_regs_before_setup;
static struct model_regs pmu_test_regs_after_setup;

/*
 * Events and threads come from pools, not from test stacks, so that
 * pmu_test_begin() can detach and unload what a failed test left behind.
 */
static struct perfmon_event pmu_test_events[PMU_TEST_MAX_EVENTS];
static unsigned int pmu_test_nr_events;
static struct thread pmu_test_threads[PMU_TEST_MAX_THREADS];
static unsigned int pmu_test_nr_threads;

/*
 * State a firmware or an earlier kernel could leave in the PMU: event
 * selects programmed but not enabled (an enabled counter is firmware's,
 * which the driver leaves alone: test_pmu_intel_quirks.c), stale values,
 * overflows and freeze bits.
 */
static void
pmu_test_dirty_pmu(void)
{
    model_poke(MODEL_MSR_EVTSEL(0), MODEL_EVTSEL_OS | MODEL_EVTSEL_INT
                                    | model_event_code(MODEL_EV_CYCLES));
    model_poke(MODEL_MSR_EVTSEL(PMU_TEST_NR_GP - 1),
               MODEL_EVTSEL_USR | model_event_code(MODEL_EV_INSTRUCTIONS));
    model_poke(MODEL_MSR_PMC(0), 0x1234);

    if (PMU_TEST_HAS_PMI) {
        model_poke(MODEL_MSR_FIXED_CTRL,
                   MODEL_FIXED_FIELD(0, MODEL_FIXED_PMI));
        model_poke(MODEL_MSR_GLOBAL_STATUS, (1ULL << 0)
                                            | MODEL_GLOBAL_FIXED(0)
                                            | MODEL_STATUS_COND_CHGD);
    }

    /* Freeze on PMI (PDCM and version 2 on), LBRs on. */
    if (PMU_TEST_HAS_PMI) {
        model_poke(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_FREEZE_PERFMON
                                       | MODEL_DEBUGCTL_LBR);
    }

    /* Counters frozen by a PMI firmware left behind (version 4 on). */
    if (PMU_TEST_VERSION >= 4) {
        model_poke(MODEL_MSR_GLOBAL_STATUS,
                   model_msr(MODEL_MSR_GLOBAL_STATUS) | MODEL_STATUS_CTR_FRZ
                   | MODEL_STATUS_LBR_FRZ);
    }
}

/* Power up the model and run the two init operations, once. */
static void
pmu_test_boot(void)
{
    if (pmu_test_booted) {
        return;
    }

    pmu_test_booted = true;
    model_reset(&pmu_test_config);
    pmu_test_dirty_pmu();
    model_snapshot(&pmu_test_regs_before_setup);
    pmu_test_perfmon_setup_error = init_op_perfmon_setup.fn();
    pmu_test_setup_error = init_op_pmu_intel_setup.fn();
    model_snapshot(&pmu_test_regs_after_setup);
    pmu_test_boot_faults = model_nr_faults();
}

static struct perfmon_dev *
pmu_test_dev(void)
{
    struct perfmon_dev *dev = perfmon_get_dev(false);

    HOST_ASSERT(dev != NULL);
    return dev;
}

static void
pmu_test_assert_no_fault(void)
{
    if (model_nr_faults() != 0) {
        HOST_FAIL("%u #GP, first: %s", model_nr_faults(),
                  model_first_fault());
    }
}

#define pmu_test_assert_regs_eq(a, b)                                   \
    do {                                                                \
        const char *diff_ = model_regs_diff(a, b);                      \
                                                                        \
        if (diff_ != NULL) {                                            \
            HOST_FAIL("registers differ: %s", diff_);                   \
        }                                                               \
    } while (0)

static void
pmu_test_begin(void)
{
    pmu_test_boot();
    host_env_recover();
    model_set_wrmsr_hook(NULL);
    model_set_rdmsr_hook(NULL);
    model_set_drift(0);
    model_set_stuck_status(0);
    model_set_debugctl_sticky(0);
    model_poke(MODEL_MSR_DEBUGCTL, pmu_test_regs_after_setup.debugctl);

    /* The interrupt a failed test left pending, as the CPU would take it. */
    if (model_pmi_take()) {
        host_env_raise_trap(TRAP_PMI);
    }

    for (unsigned int i = 0; i < pmu_test_nr_threads; i++) {
        struct thread *thread = &pmu_test_threads[i];

        if (thread->perfmon_td.loaded_cpu != PERFMON_CPU_NONE) {
            host_env_switch_out(thread);
        }
    }

    for (unsigned int i = 0; i < pmu_test_nr_events; i++) {
        if (perfmon_event_attached(&pmu_test_events[i])) {
            perfmon_event_detach(&pmu_test_events[i]);
        }
    }

    pmu_test_nr_events = 0;
    pmu_test_nr_threads = 0;
    pmu_intel_set_start_gap(0);

    /* A poll timer with nothing left to poll lapses at its next firing. */
    host_env_advance(PMU_TEST_POLL_TICKS);
    model_clear_faults();
    pmu_test_dev();
}

static bool
pmu_test_global_enabled(unsigned int pmc_id)
{
    return (model_msr(MODEL_MSR_GLOBAL_CTRL) & (1ULL << pmc_id)) != 0;
}

/*
 * The counter cannot count: version 1, EN clear in its event select;
 * version 2 on, its IA32_PERF_GLOBAL_CTRL bit clear (the event select may
 * stay programmed: SDM vol. 3B, 21.2.2, the enables are ANDed).
 */
static void
pmu_test_assert_disabled(unsigned int pmc_id)
{
    if (PMU_TEST_HAS_PMI) {
        HOST_ASSERT(!pmu_test_global_enabled(pmc_id));
    } else {
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(pmc_id))
                       & MODEL_EVTSEL_EN, 0);
    }
}

static void
pmu_test_end(void)
{
    pmu_test_assert_no_fault();
    HOST_ASSERT(!model_pmi_pending());
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_pmcs(0), 0);
    HOST_ASSERT_EQ(host_env_nr_locks_held(), 0);
    HOST_ASSERT(cpu_intr_enabled());

    for (unsigned int i = 0; i < pmu_test_nr_threads; i++) {
        struct thread *thread = &pmu_test_threads[i];

        HOST_ASSERT_EQ(thread->perfmon_td.loaded_cpu, PERFMON_CPU_NONE);
        HOST_ASSERT(perfmon_td_unused(&thread->perfmon_td));
        HOST_ASSERT_EQ(thread->refs, 1);
    }

    /* Version 2 on, event selects stay programmed: GLOBAL_CTRL stops. */
    for (unsigned int i = 0; i < PMU_TEST_NR_GP; i++) {
        pmu_test_assert_disabled(i);
    }

    for (unsigned int j = 0; j < 3; j++) {
        if (PMU_TEST_FIXED_MASK & (1U << j)) {
            pmu_test_assert_disabled(PMU_TEST_FIXED(j));
        }
    }

    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), 0);
}

static struct perfmon_event *
pmu_test_event(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event;

    HOST_ASSERT(pmu_test_nr_events < PMU_TEST_MAX_EVENTS);
    event = &pmu_test_events[pmu_test_nr_events++];
    HOST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    return event;
}

static struct perfmon_event *
pmu_test_attach_cpu(unsigned int id, unsigned int flags)
{
    struct perfmon_event *event = pmu_test_event(id, flags);

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    return event;
}

static void
pmu_test_detach_all(void)
{
    for (unsigned int i = 0; i < pmu_test_nr_events; i++) {
        if (perfmon_event_attached(&pmu_test_events[i])) {
            HOST_ASSERT_EQ(perfmon_event_detach(&pmu_test_events[i]), 0);
        }
    }
}

static struct thread *
pmu_test_thread(void)
{
    struct thread *thread;

    HOST_ASSERT(pmu_test_nr_threads < PMU_TEST_MAX_THREADS);
    thread = &pmu_test_threads[pmu_test_nr_threads++];
    host_env_thread_init(thread);
    return thread;
}

static uint64_t
pmu_test_read(struct perfmon_event *event)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
    return value;
}

/* The hardware counter behind an attached event. */
static unsigned int
pmu_test_pmc_id(const struct perfmon_event *event)
{
    struct perfmon_dev *dev = pmu_test_dev();

    unsigned int pmc_id, width;

    HOST_ASSERT(perfmon_dev_pmc(dev, perfmon_event_pmc_index(event), &pmc_id,
                                &width));
    return pmc_id;
}

/* What the driver must write to PERFEVTSELi for a code and flags. */
static uint64_t
pmu_test_evtsel(uint64_t code, unsigned int flags)
{
    return code | MODEL_EVTSEL_EN
           | (PMU_TEST_HAS_PMI ? MODEL_EVTSEL_INT : 0)
           | ((flags & PERFMON_EF_KERN) ? MODEL_EVTSEL_OS : 0)
           | ((flags & PERFMON_EF_USER) ? MODEL_EVTSEL_USR : 0);
}

/* What the driver must write to a fixed counter's FIXED_CTR_CTRL field. */
static uint64_t
pmu_test_fixed_field(unsigned int flags)
{
    return (PMU_TEST_HAS_PMI ? MODEL_FIXED_PMI : 0)
           | ((flags & PERFMON_EF_KERN) ? MODEL_FIXED_OS : 0)
           | ((flags & PERFMON_EF_USER) ? MODEL_FIXED_USR : 0);
}

static uint64_t
pmu_test_fixed_ctrl_field(unsigned int j)
{
    return (model_msr(MODEL_MSR_FIXED_CTRL) >> (4 * j)) & 0xf;
}


/* The counter exists, counts code with flags, and is enabled. */
static void
pmu_test_assert_programmed(unsigned int pmc_id, uint64_t code,
                           unsigned int flags)
{
    struct perfmon_dev *dev = pmu_test_dev();

    HOST_ASSERT(model_counter_exists(pmc_id));

    if (pmc_id >= MODEL_FIXED_BASE) {
        unsigned int j = pmc_id - MODEL_FIXED_BASE;

        HOST_ASSERT(j < 3);
        HOST_ASSERT_EQ(code, model_event_code(pmu_test_fixed_events[j]));
        HOST_ASSERT_EQ(pmu_test_fixed_ctrl_field(j),
                       pmu_test_fixed_field(flags));
    } else {
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(pmc_id)),
                       pmu_test_evtsel(code, flags));
    }

    HOST_ASSERT_EQ(pmu_test_global_enabled(pmc_id), PMU_TEST_HAS_PMI);

    for (unsigned int i = 0; i < dev->nr_pmcs; i++) {
        unsigned int id, width;

        if (perfmon_dev_pmc(dev, i, &id, &width) && id == pmc_id) {
            HOST_ASSERT_EQ(width, model_counter_width(pmc_id));
        }
    }
}

static void
pmu_test_deliver_pmi(void)
{
    HOST_ASSERT(model_pmi_take());
    host_env_raise_trap(TRAP_PMI);
}

/*
 * Let perfmon see the counters, as the hardware would make it: the pending
 * PMI with an interrupt, the poll timer's next firing without.
 */
static void
pmu_test_catch_up(void)
{
    if (PMU_TEST_HAS_PMI) {
        if (model_pmi_pending()) {
            pmu_test_deliver_pmi();
        }
    } else {
        host_env_advance(PMU_TEST_POLL_TICKS);
    }
}

/* Events from one wrap of counter pmc_id to the next. */
static uint64_t
pmu_test_period(unsigned int pmc_id)
{
    return 1ULL << model_counter_width(pmc_id);
}

/* A counter's expected position, to know when it wraps. */
struct pmu_test_ref {
    uint64_t period;
    uint64_t pos;
    uint64_t wraps;
};

static void
pmu_test_ref_init(struct pmu_test_ref *ref, unsigned int pmc_id)
{
    ref->period = pmu_test_period(pmc_id);
    ref->pos = 0;
    ref->wraps = 0;
}

/* The counter (re)starts gap events before a wrap. */
static void
pmu_test_ref_start(struct pmu_test_ref *ref, uint64_t gap)
{
    ref->pos = (ref->period - gap) & (ref->period - 1);
}

static void
pmu_test_ref_add(struct pmu_test_ref *ref, uint64_t n)
{
    ref->pos += n;

    while (ref->pos >= ref->period) {
        ref->pos -= ref->period;
        ref->wraps++;
    }
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

HOST_TEST(setup_registers_device_and_idles_pmu)
{
    const struct pmu_intel_info *info;
    struct model_regs expected;
    struct perfmon_dev *dev;
    uint64_t value;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_test_perfmon_setup_error, 0);
    HOST_ASSERT_EQ(pmu_test_setup_error, 0);
    HOST_ASSERT_EQ(pmu_test_boot_faults, 0);

    info = pmu_intel_get_info();
    HOST_ASSERT_EQ(info->version, PMU_TEST_VERSION);
    HOST_ASSERT_EQ(info->nr_gp, PMU_TEST_NR_GP);
    HOST_ASSERT_EQ(info->gp_width, PMU_TEST_GP_WIDTH);
    HOST_ASSERT_EQ(info->fixed_mask, PMU_TEST_FIXED_MASK);
    HOST_ASSERT_EQ(info->fixed_width, PMU_TEST_FIXED_WIDTH);
    HOST_ASSERT_EQ(info->events_available, PMU_TEST_EVENTS);
    HOST_ASSERT_EQ(info->full_width_writes, PMU_TEST_FULL_WIDTH);

    dev = pmu_test_dev();
    HOST_ASSERT_STREQ(dev->name, "pmu_intel");
    HOST_ASSERT_EQ(dev->sw, false);
    HOST_ASSERT_EQ(dev->nr_pmcs, PMU_TEST_NR_PMCS);
    HOST_ASSERT_EQ(dev->min_width, PMU_TEST_MIN_WIDTH);
    HOST_ASSERT_EQ(perfmon_dev_poll_ticks(dev), PMU_TEST_POLL_TICKS);
    HOST_ASSERT_EQ(dev->overflow_intr, PMU_TEST_HAS_PMI);
    HOST_ASSERT(dev->ops->handle_overflow_intr != NULL);

    /* The statistics are registered system counters. */
    value = ~0ULL;
    HOST_ASSERT_EQ(syscnt_lookup("pmu_intel_pmis/0", &value), 0);
    HOST_ASSERT_EQ(value, pmu_intel_nr_pmis(0));
    value = ~0ULL;
    HOST_ASSERT_EQ(syscnt_lookup("pmu_intel_spurious/0", &value), 0);
    HOST_ASSERT_EQ(value, pmu_intel_nr_spurious(0));
    value = ~0ULL;
    HOST_ASSERT_EQ(syscnt_lookup("pmu_intel_pmi_giveup/0", &value), 0);
    HOST_ASSERT_EQ(value, pmu_intel_nr_pmi_giveups(0));
    value = ~0ULL;
    HOST_ASSERT_EQ(syscnt_lookup("perfmon_overflows/0", &value), 0);
    HOST_ASSERT_EQ(value, perfmon_nr_overflows(0));

    /*
     * Every event select cleared; with global registers, counting off
     * globally, stale status acknowledged, the PMI vector set up and the
     * freeze on PMI off (other DEBUGCTL bits left as they were). The
     * probe leaves the first general and fixed counters at zero; other
     * counter values are left alone: starting a counter writes it.
     */
    expected = pmu_test_regs_before_setup;
    expected.pmc[0] = 0;

    if (PMU_TEST_FIXED_MASK != 0) {
        expected.fixed_ctr[__builtin_ctz(PMU_TEST_FIXED_MASK)] = 0;
    }

    for (unsigned int i = 0; i < MODEL_MAX_GP; i++) {
        expected.evtsel[i] = 0;
    }

    if (PMU_TEST_HAS_PMI) {
        expected.fixed_ctrl = 0;
        expected.global_ctrl = 0;
        expected.global_status = 0;
        expected.lvt_pmc = PMU_TEST_LVT;
        expected.debugctl &= ~MODEL_DEBUGCTL_FREEZE_PERFMON;
    }

    pmu_test_assert_regs_eq(&pmu_test_regs_after_setup, &expected);
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Event programming and allocation                                    */
/* ------------------------------------------------------------------ */

/* A generic event, and where it must go: a counter id, or -errno. */
struct pmu_test_generic {
    unsigned int id;
    struct model_event event;
    struct model_event decoy;   /* a close event it must not count */
    int alone;                  /* attached by itself */
    int together;               /* attached after the rows above */
};

static const struct pmu_test_generic pmu_test_generics[] = {
#if PMU_TEST_VERSION == 1
    { PERFMON_EV_CYCLE, MODEL_EV_CYCLES, MODEL_EV_REF_CYCLES, 0, 0 },
    { PERFMON_EV_REF_CYCLE, MODEL_EV_REF_CYCLES, MODEL_EV_CYCLES, 0, 1 },
    { PERFMON_EV_INSTRUCTION, MODEL_EV_INSTRUCTIONS, MODEL_EV_BRANCHES,
      0, -EAGAIN },
    { PERFMON_EV_CACHE_REF, MODEL_EV_LLC_REFS, MODEL_EV_LLC_MISSES,
      -ENODEV, -ENODEV },
    { PERFMON_EV_CACHE_MISS, MODEL_EV_LLC_MISSES, MODEL_EV_LLC_REFS,
      0, -EAGAIN },
    { PERFMON_EV_BRANCH, MODEL_EV_BRANCHES, MODEL_EV_BRANCH_MISSES,
      0, -EAGAIN },
    { PERFMON_EV_BRANCH_MISS, MODEL_EV_BRANCH_MISSES, MODEL_EV_BRANCHES,
      0, -EAGAIN },
#elif PMU_TEST_VERSION == 2
    { PERFMON_EV_CYCLE, MODEL_EV_CYCLES, MODEL_EV_REF_CYCLES,
      PMU_TEST_FIXED(1), PMU_TEST_FIXED(1) },
    { PERFMON_EV_REF_CYCLE, MODEL_EV_REF_CYCLES, MODEL_EV_CYCLES,
      PMU_TEST_FIXED(2), PMU_TEST_FIXED(2) },
    { PERFMON_EV_INSTRUCTION, MODEL_EV_INSTRUCTIONS, MODEL_EV_BRANCHES,
      PMU_TEST_FIXED(0), PMU_TEST_FIXED(0) },
    { PERFMON_EV_CACHE_REF, MODEL_EV_LLC_REFS, MODEL_EV_LLC_MISSES, 0, 0 },
    { PERFMON_EV_CACHE_MISS, MODEL_EV_LLC_MISSES, MODEL_EV_LLC_REFS, 0, 1 },
    { PERFMON_EV_BRANCH, MODEL_EV_BRANCHES, MODEL_EV_BRANCH_MISSES, 0, 2 },
    { PERFMON_EV_BRANCH_MISS, MODEL_EV_BRANCH_MISSES, MODEL_EV_BRANCHES,
      -ENODEV, -ENODEV },
#elif PMU_TEST_VERSION == 5
    /* No fixed counter 1: cycles take a general counter. */
    { PERFMON_EV_CYCLE, MODEL_EV_CYCLES, MODEL_EV_REF_CYCLES, 0, 0 },
    { PERFMON_EV_REF_CYCLE, MODEL_EV_REF_CYCLES, MODEL_EV_CYCLES,
      PMU_TEST_FIXED(2), PMU_TEST_FIXED(2) },
    { PERFMON_EV_INSTRUCTION, MODEL_EV_INSTRUCTIONS, MODEL_EV_BRANCHES,
      PMU_TEST_FIXED(0), PMU_TEST_FIXED(0) },
    { PERFMON_EV_CACHE_REF, MODEL_EV_LLC_REFS, MODEL_EV_LLC_MISSES, 0, 1 },
    { PERFMON_EV_CACHE_MISS, MODEL_EV_LLC_MISSES, MODEL_EV_LLC_REFS,
      -ENODEV, -ENODEV },
    { PERFMON_EV_BRANCH, MODEL_EV_BRANCHES, MODEL_EV_BRANCH_MISSES, 0, 2 },
    { PERFMON_EV_BRANCH_MISS, MODEL_EV_BRANCH_MISSES, MODEL_EV_BRANCHES,
      0, 3 },
#endif
};

HOST_TEST(generic_events_program_documented_codes)
{
    pmu_test_begin();

    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_generics); k++) {
        const struct pmu_test_generic *row = &pmu_test_generics[k];
        struct perfmon_event *event;
        unsigned int pmc_id;

        event = pmu_test_event(row->id, PERFMON_EF_KERN);

        if (row->alone < 0) {
            HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), -row->alone);
            continue;
        }

        HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
        pmc_id = pmu_test_pmc_id(event);
        HOST_ASSERT_EQ(pmc_id, row->alone);
        pmu_test_assert_programmed(pmc_id, model_event_code(row->event),
                                   PERFMON_EF_KERN);

        /* Counted: the event in the kernel; not: user ring, decoy. */
        model_retire(row->event, 1000, MODEL_RING_KERN);
        model_retire(row->event, 50, MODEL_RING_USER);
        model_retire(row->decoy, 70, MODEL_RING_KERN);
        HOST_ASSERT_EQ(pmu_test_read(event), 1000);

        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
        pmu_test_assert_disabled(pmc_id);
        HOST_ASSERT_EQ(pmu_test_read(event), 1000);
    }

    pmu_test_end();
}

/* Whether an attached event's slot holds a counter (not multiplexed out). */
static bool
pmu_test_holds_counter(const struct perfmon_event *event)
{
    unsigned int pmc_id, width;

    return perfmon_dev_pmc(pmu_test_dev(), perfmon_event_pmc_index(event),
                           &pmc_id, &width);
}

/*
 * The general counter the driver hands out i-th to events that any
 * counter counts: in order, but on Haswell counter 2, which
 * L1D_PEND_MISS.PENDING counts on alone, last. Fixed counters as they are.
 */
static unsigned int
pmu_test_gp_order(unsigned int id)
{
    static const unsigned int haswell[] = { 0, 1, 3, 2 };

    return (PMU_TEST_HASWELL && id < 4) ? haswell[id] : id;
}

HOST_TEST(generic_events_together_get_distinct_counters)
{
    struct perfmon_event *events[ARRAY_SIZE(pmu_test_generics)];
    uint64_t global_ctrl = 0;

    pmu_test_begin();

    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_generics); k++) {
        const struct pmu_test_generic *row = &pmu_test_generics[k];
        unsigned int flags = PERFMON_EF_KERN | PERFMON_EF_USER;
        struct model_regs before, after;

        events[k] = pmu_test_event(row->id, flags);
        model_snapshot(&before);

        if (row->together < 0) {
            /* No counter free: it attaches, multiplexed, and waits. */
            if (row->together == -EAGAIN) {
                HOST_ASSERT_EQ(perfmon_event_attach_cpu(events[k], 0), 0);
                HOST_ASSERT(!pmu_test_holds_counter(events[k]));
            } else {
                HOST_ASSERT_EQ(perfmon_event_attach_cpu(events[k], 0),
                               -row->together);
            }

            model_snapshot(&after);
            pmu_test_assert_regs_eq(&before, &after);
            continue;
        }

        HOST_ASSERT_EQ(perfmon_event_attach_cpu(events[k], 0), 0);
        HOST_ASSERT_EQ(pmu_test_pmc_id(events[k]),
                       pmu_test_gp_order(row->together));
        pmu_test_assert_programmed(pmu_test_gp_order(row->together),
                                   model_event_code(row->event), flags);
        global_ctrl |= 1ULL << pmu_test_gp_order(row->together);
    }

    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL),
                   PMU_TEST_HAS_PMI ? global_ctrl : 0);

    /* Each counter counts its own event, in both rings. */
    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_generics); k++) {
        model_retire(pmu_test_generics[k].event, 100 * (k + 1),
                     MODEL_RING_KERN);
        model_retire(pmu_test_generics[k].event, k + 1, MODEL_RING_USER);
    }

    /*
     * Multiplexed out all along: nothing counted. Detached first, so that
     * the counters freed next are not handed to them.
     */
    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_generics); k++) {
        if (pmu_test_generics[k].together == -EAGAIN) {
            HOST_ASSERT_EQ(pmu_test_read(events[k]), 0);
            HOST_ASSERT_EQ(perfmon_event_detach(events[k]), 0);
        }
    }

    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_generics); k++) {
        if (pmu_test_generics[k].together >= 0) {
            HOST_ASSERT_EQ(pmu_test_read(events[k]), 101 * (k + 1));
            HOST_ASSERT_EQ(perfmon_event_detach(events[k]), 0);
            pmu_test_assert_disabled(pmu_test_generics[k].together);
        }
    }

    pmu_test_end();
}

HOST_TEST(ring_flags_select_os_and_usr)
{
    static const unsigned int flag_sets[] = {
        PERFMON_EF_KERN,
        PERFMON_EF_USER,
        PERFMON_EF_KERN | PERFMON_EF_USER,
    };
    const uint64_t branches = model_event_code(MODEL_EV_BRANCHES);

    pmu_test_begin();

    for (unsigned int k = 0; k < ARRAY_SIZE(flag_sets); k++) {
        unsigned int flags = flag_sets[k];
        struct perfmon_event *insns, *raw;
        unsigned int insns_id, raw_id;
        uint64_t expected;

        /* A fixed counter where one exists, and a raw event. */
        insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, flags);
        raw = pmu_test_attach_cpu((unsigned int)branches,
                                  PERFMON_EF_RAW | flags);
        insns_id = pmu_test_pmc_id(insns);
        raw_id = pmu_test_pmc_id(raw);
        HOST_ASSERT_EQ(insns_id, (PMU_TEST_FIXED_MASK & 1)
                                 ? PMU_TEST_FIXED(0) : 0);
        HOST_ASSERT_EQ(raw_id, (PMU_TEST_FIXED_MASK & 1) ? 0 : 1);
        pmu_test_assert_programmed(insns_id,
                                   model_event_code(MODEL_EV_INSTRUCTIONS),
                                   flags);
        pmu_test_assert_programmed(raw_id, branches, flags);

        model_retire(MODEL_EV_INSTRUCTIONS, 100, MODEL_RING_KERN);
        model_retire(MODEL_EV_INSTRUCTIONS, 7, MODEL_RING_USER);
        model_retire(MODEL_EV_BRANCHES, 100, MODEL_RING_KERN);
        model_retire(MODEL_EV_BRANCHES, 7, MODEL_RING_USER);
        expected = ((flags & PERFMON_EF_KERN) ? 100 : 0)
                   + ((flags & PERFMON_EF_USER) ? 7 : 0);
        HOST_ASSERT_EQ(pmu_test_read(insns), expected);
        HOST_ASSERT_EQ(pmu_test_read(raw), expected);

        HOST_ASSERT_EQ(perfmon_event_detach(insns), 0);
        HOST_ASSERT_EQ(perfmon_event_detach(raw), 0);
        pmu_test_assert_disabled(insns_id);
        pmu_test_assert_disabled(raw_id);
    }

    pmu_test_end();
}

#if PMU_TEST_FIXED_MASK & 1
HOST_TEST(same_code_other_rings_falls_back_to_gp)
{
    const uint64_t code = model_event_code(MODEL_EV_INSTRUCTIONS);
    struct perfmon_event *kern, *user, *both, *kern2;

    pmu_test_begin();
    kern = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    user = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_USER);
    both = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION,
                               PERFMON_EF_KERN | PERFMON_EF_USER);
    kern2 = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);

    HOST_ASSERT_EQ(pmu_test_pmc_id(kern), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_pmc_id(user), 0);
    HOST_ASSERT_EQ(pmu_test_pmc_id(both), 1);
    HOST_ASSERT_EQ(perfmon_event_pmc_index(kern2),
                   perfmon_event_pmc_index(kern));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 3);
    pmu_test_assert_programmed(PMU_TEST_FIXED(0), code, PERFMON_EF_KERN);
    pmu_test_assert_programmed(0, code, PERFMON_EF_USER);
    pmu_test_assert_programmed(1, code, PERFMON_EF_KERN | PERFMON_EF_USER);

    model_retire(MODEL_EV_INSTRUCTIONS, 100, MODEL_RING_KERN);
    model_retire(MODEL_EV_INSTRUCTIONS, 7, MODEL_RING_USER);
    HOST_ASSERT_EQ(pmu_test_read(kern), 100);
    HOST_ASSERT_EQ(pmu_test_read(user), 7);
    HOST_ASSERT_EQ(pmu_test_read(both), 107);
    HOST_ASSERT_EQ(pmu_test_read(kern2), 100);

    HOST_ASSERT_EQ(perfmon_event_detach(kern), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(user), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(both), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(kern2), 0);
    pmu_test_end();
}
#endif

/*
 * Generic ref-cycles only ever use fixed counter 2 when it exists (the
 * architectural event on a general counter may count a slower clock): a
 * second ref-cycles event with other ring bits finds it taken and gets
 * EAGAIN, touching nothing, while a raw 0x013c code, which asks for the
 * architectural event itself, takes a general counter.
 */
HOST_TEST(ref_cycles_use_only_fixed_counter_2)
{
    const uint64_t code = model_event_code(MODEL_EV_REF_CYCLES);
    struct perfmon_event *kern, *user, *raw;
    struct model_regs before, after;

    pmu_test_begin();
    raw = pmu_test_attach_cpu(0x013c, PERFMON_EF_RAW | PERFMON_EF_KERN);

    if (!(PMU_TEST_FIXED_MASK & 0x4)) {
        /* No fixed counter 2: the generic event is the general one. */
        HOST_ASSERT_EQ(pmu_test_pmc_id(raw), 0);
        kern = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_KERN);
        HOST_ASSERT_EQ(perfmon_event_pmc_index(kern),
                       perfmon_event_pmc_index(raw));
        pmu_test_detach_all();
        pmu_test_end();
        return;
    }

    HOST_ASSERT_EQ(pmu_test_pmc_id(raw), 0);
    pmu_test_assert_programmed(0, code, PERFMON_EF_KERN);
    kern = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(kern), PMU_TEST_FIXED(2));
    HOST_ASSERT(perfmon_event_pmc_index(kern)
                != perfmon_event_pmc_index(raw));

    /* Fixed counter 2 taken: the user event waits (multiplexed). */
    model_snapshot(&before);
    user = pmu_test_event(PERFMON_EV_REF_CYCLE, PERFMON_EF_USER);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(user, 0), 0);
    model_snapshot(&after);
    pmu_test_assert_regs_eq(&before, &after);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 3);
    HOST_ASSERT(!pmu_test_holds_counter(user));

    model_retire(MODEL_EV_REF_CYCLES, 25, MODEL_RING_KERN);
    model_retire(MODEL_EV_REF_CYCLES, 5, MODEL_RING_USER);
    HOST_ASSERT_EQ(pmu_test_read(kern), 25);
    HOST_ASSERT_EQ(pmu_test_read(raw), 25);
    HOST_ASSERT_EQ(pmu_test_read(user), 0);
    pmu_test_detach_all();
    pmu_test_end();
}

/* Fixed-counter events after the general counters are full. */
static const struct {
    unsigned int id;
    int result;                 /* counter id, or -errno */
} pmu_test_fixed_after_full[] = {
#if PMU_TEST_VERSION == 1
    { PERFMON_EV_INSTRUCTION, -EAGAIN },
    { PERFMON_EV_CYCLE, -EAGAIN },
    { PERFMON_EV_REF_CYCLE, -EAGAIN },
#elif PMU_TEST_VERSION == 2
    { PERFMON_EV_INSTRUCTION, PMU_TEST_FIXED(0) },
    { PERFMON_EV_CYCLE, PMU_TEST_FIXED(1) },
    { PERFMON_EV_REF_CYCLE, PMU_TEST_FIXED(2) },
#elif PMU_TEST_VERSION == 5
    { PERFMON_EV_INSTRUCTION, PMU_TEST_FIXED(0) },
    { PERFMON_EV_CYCLE, -EAGAIN },      /* no fixed counter 1 */
    { PERFMON_EV_REF_CYCLE, PMU_TEST_FIXED(2) },
#endif
};

/* Attach a distinct raw event that no fixed counter counts. */
static int
pmu_test_attach_raw(unsigned int i, struct perfmon_event **eventp)
{
    *eventp = pmu_test_event(0x0100 | (0xd0 + i),
                             PERFMON_EF_RAW | PERFMON_EF_KERN);
    return perfmon_event_attach_cpu(*eventp, 0);
}

HOST_TEST(exhausted_counters_multiplex)
{
    struct perfmon_dev *dev;
    struct perfmon_event *event, *waiting;
    struct model_regs before, after;
    unsigned long accesses;
    unsigned int i;

    pmu_test_begin();
    dev = pmu_test_dev();

    for (i = 0; i < PMU_TEST_NR_GP; i++) {
        HOST_ASSERT_EQ(pmu_test_attach_raw(i, &event), 0);
        HOST_ASSERT_EQ(pmu_test_pmc_id(event), pmu_test_gp_order(i));
        pmu_test_assert_programmed(pmu_test_gp_order(i), 0x0100 | (0xd0 + i),
                                   PERFMON_EF_KERN);
    }

    /*
     * No general counter left: the raw event attaches and waits for its
     * turn, with no register touched.
     */
    model_snapshot(&before);
    accesses = model_nr_accesses();
    HOST_ASSERT_EQ(pmu_test_attach_raw(i++, &waiting), 0);
    model_snapshot(&after);
    pmu_test_assert_regs_eq(&before, &after);
    HOST_ASSERT_EQ(model_nr_accesses(), accesses);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), PMU_TEST_NR_GP + 1);
    HOST_ASSERT(!pmu_test_holds_counter(waiting));

    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_fixed_after_full); k++) {
        int result = pmu_test_fixed_after_full[k].result;

        event = pmu_test_event(pmu_test_fixed_after_full[k].id,
                               PERFMON_EF_KERN);

        if (result < 0) {
            /* Generic, on a general counter: it waits too. */
            HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
            HOST_ASSERT(!pmu_test_holds_counter(event));
        } else {
            HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
            HOST_ASSERT_EQ(pmu_test_pmc_id(event), result);
            HOST_ASSERT(model_counter_exists(pmu_test_pmc_id(event)));
        }
    }

    /*
     * A rotation gives the waiting raw event, first in turn, a general
     * counter, programmed with its code, and it counts from there.
     */
    HOST_ASSERT(perfmon_mux_rotate(dev));
    HOST_ASSERT(pmu_test_holds_counter(waiting));
    HOST_ASSERT(pmu_test_pmc_id(waiting) < PMU_TEST_NR_GP);
    pmu_test_assert_programmed(pmu_test_pmc_id(waiting),
                               0x0100 | (0xd0 + PMU_TEST_NR_GP),
                               PERFMON_EF_KERN);
    pmu_test_detach_all();
    pmu_test_end();
}

HOST_TEST(detach_disables_freed_counter)
{
    const uint64_t code = model_event_code(MODEL_EV_BRANCHES);
    struct perfmon_event *insns, *branches, *branches2, *ref = NULL;
    unsigned int insns_id, branches_id;

    pmu_test_begin();
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    branches2 = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    insns_id = pmu_test_pmc_id(insns);
    branches_id = pmu_test_pmc_id(branches);
    HOST_ASSERT_EQ(perfmon_event_pmc_index(branches2),
                   perfmon_event_pmc_index(branches));

    /* A second fixed counter, which must outlive its neighbour. */
    if (PMU_TEST_FIXED_MASK & 0x4) {
        ref = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE,
                                  PERFMON_EF_KERN | PERFMON_EF_USER);
        HOST_ASSERT_EQ(pmu_test_pmc_id(ref), PMU_TEST_FIXED(2));
    }

    model_retire(MODEL_EV_BRANCHES, 40, MODEL_RING_KERN);
    model_retire(MODEL_EV_INSTRUCTIONS, 30, MODEL_RING_KERN);

    /* A shared counter runs until its last user leaves. */
    HOST_ASSERT_EQ(perfmon_event_detach(branches2), 0);
    pmu_test_assert_programmed(branches_id, code, PERFMON_EF_KERN);

    HOST_ASSERT_EQ(perfmon_event_detach(branches), 0);
    pmu_test_assert_disabled(branches_id);
    pmu_test_assert_programmed(insns_id,
                               model_event_code(MODEL_EV_INSTRUCTIONS),
                               PERFMON_EF_KERN);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);

    HOST_ASSERT_EQ(perfmon_event_detach(insns), 0);
    pmu_test_assert_disabled(insns_id);

    if (ref != NULL) {
        pmu_test_assert_programmed(PMU_TEST_FIXED(2),
                                   model_event_code(MODEL_EV_REF_CYCLES),
                                   PERFMON_EF_KERN | PERFMON_EF_USER);
        model_retire(MODEL_EV_REF_CYCLES, 8, MODEL_RING_USER);
        HOST_ASSERT_EQ(pmu_test_read(ref), 8);
        HOST_ASSERT_EQ(perfmon_event_detach(ref), 0);
        pmu_test_assert_disabled(PMU_TEST_FIXED(2));
    }

    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 0);
    HOST_ASSERT_EQ(pmu_test_read(branches), 40);
    HOST_ASSERT_EQ(pmu_test_read(branches2), 40);
    HOST_ASSERT_EQ(pmu_test_read(insns), 30);
    pmu_test_end();
}

/* Raw codes the driver must refuse: reserved or its own bits. */
static const uint64_t pmu_test_bad_raws[] = {
    0xc0 | (1U << 16),      /* USR: rings come from the flags */
    0xc0 | (1U << 17),      /* OS */
    0xc0 | (1U << 19),      /* PC */
    0xc0 | (1U << 20),      /* INT */
    0xc0 | (1U << 21),      /* ANY */
    0xc0 | (1U << 22),      /* EN */
    0x4f00,                 /* a unit mask without event select */
    0xc0 | (1U << 23),      /* invert without a counter mask */
    0xc0 | (1ULL << 32),    /* reserved: PERFEVTSELx is 32 bits of code */
    0xc0 | (1ULL << 63),
};

/* Raw codes with the documented modifiers, which must be accepted. */
static const unsigned int pmu_test_good_raws[] = {
    0xc0 | (1U << 23) | (1U << 24),     /* invert, counter mask 1 */
    0xc4 | (1U << 18),                  /* edge detect */
    0x01c0,                             /* not the fixed counter's code */
};

/* Both attach paths fail with error and change nothing. */
static void
pmu_test_assert_rejected(struct perfmon_event *event, struct thread *thread,
                         int error)
{
    struct model_regs before, after;
    unsigned long accesses = model_nr_accesses();

    model_snapshot(&before);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), error);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), error);
    model_snapshot(&after);
    pmu_test_assert_regs_eq(&before, &after);
    HOST_ASSERT_EQ(model_nr_accesses(), accesses);
    HOST_ASSERT(!model_pmi_pending());
    HOST_ASSERT(!perfmon_event_attached(event));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_pmcs(0), 0);
    HOST_ASSERT(perfmon_td_unused(&thread->perfmon_td));
    HOST_ASSERT_EQ(thread->refs, 1);
}

HOST_TEST(rejected_events_touch_nothing)
{
    struct perfmon_event *event;
    struct thread *thread;

    pmu_test_begin();
    thread = pmu_test_thread();
    host_env_switch_in(thread);

    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_bad_raws); k++) {
        event = pmu_test_event(pmu_test_bad_raws[k],
                               PERFMON_EF_RAW | PERFMON_EF_KERN);
        pmu_test_assert_rejected(event, thread, EINVAL);
        pmu_test_nr_events--;
    }

    event = pmu_test_event(PMU_TEST_UNAVAILABLE, PERFMON_EF_KERN);
    pmu_test_assert_rejected(event, thread, ENODEV);

    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_good_raws); k++) {
        unsigned int id = pmu_test_good_raws[k];

        event = pmu_test_attach_cpu(id, PERFMON_EF_RAW | PERFMON_EF_KERN);
        HOST_ASSERT_EQ(pmu_test_pmc_id(event), 0);
        pmu_test_assert_programmed(0, id, PERFMON_EF_KERN);
        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    }

    host_env_switch_out(thread);
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Counting through perfmon                                            */
/* ------------------------------------------------------------------ */

HOST_TEST(cpu_event_counts_exactly)
{
    struct perfmon_event *event;
    struct thread *thread;

    pmu_test_begin();
    thread = pmu_test_thread();
    model_retire(MODEL_EV_BRANCHES, 500, MODEL_RING_KERN);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);

    /* Only a device without an overflow interrupt is polled. */
    HOST_ASSERT_EQ(host_env_nr_timers_pending(), PMU_TEST_HAS_PMI ? 0 : 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 0);

    model_retire(MODEL_EV_BRANCHES, 1234, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 1234);
    model_retire(MODEL_EV_BRANCHES, 99, MODEL_RING_USER);
    HOST_ASSERT_EQ(pmu_test_read(event), 1234);

    /* Whatever thread runs, a CPU event counts. */
    host_env_switch_in(thread);
    model_retire(MODEL_EV_BRANCHES, 10, MODEL_RING_KERN);
    host_env_switch_out(thread);
    model_retire(MODEL_EV_BRANCHES, 6, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 1250);

    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    model_retire(MODEL_EV_BRANCHES, 7, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 1250);
    pmu_test_end();
}

HOST_TEST(thread_event_counts_only_while_switched_in)
{
    const uint64_t code = model_event_code(MODEL_EV_BRANCHES);
    struct perfmon_event *event;
    struct thread *thread;

    pmu_test_begin();
    thread = pmu_test_thread();
    event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);
    HOST_ASSERT_EQ(thread->refs, 2);
    HOST_ASSERT_EQ(pmu_test_pmc_id(event), 0);

    /* Off every CPU: the slot is reserved but no counter runs. */
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_pmcs(0), 0);
    pmu_test_assert_disabled(0);
    model_retire(MODEL_EV_BRANCHES, 1000, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 0);

    host_env_switch_in(thread);
    pmu_test_assert_programmed(0, code, PERFMON_EF_KERN);
    model_retire(MODEL_EV_BRANCHES, 300, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_USER);
    HOST_ASSERT_EQ(pmu_test_read(event), 300);

    host_env_switch_out(thread);
    pmu_test_assert_disabled(0);
    model_retire(MODEL_EV_BRANCHES, 1000, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 300);

    host_env_switch_in(thread);
    model_retire(MODEL_EV_BRANCHES, 20, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 320);

    /* Detaching a loaded thread's event stops its counter. */
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_assert_disabled(0);
    HOST_ASSERT_EQ(thread->refs, 1);
    host_env_switch_out(thread);
    model_retire(MODEL_EV_BRANCHES, 9, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 320);
    pmu_test_end();
}

HOST_TEST(threads_sharing_a_counter_count_their_own)
{
    struct perfmon_event *event_a, *event_b;
    struct thread *a, *b;

    pmu_test_begin();
    a = pmu_test_thread();
    b = pmu_test_thread();
    event_a = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    event_b = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event_a, a), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(event_b, b), 0);
    HOST_ASSERT_EQ(perfmon_event_pmc_index(event_a),
                   perfmon_event_pmc_index(event_b));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 1);

    host_env_switch_in(a);
    model_retire(MODEL_EV_BRANCHES, 10, MODEL_RING_KERN);
    host_env_switch_out(a);
    host_env_switch_in(b);
    model_retire(MODEL_EV_BRANCHES, 20, MODEL_RING_KERN);
    host_env_switch_out(b);
    model_retire(MODEL_EV_BRANCHES, 40, MODEL_RING_KERN);
    host_env_switch_in(a);
    model_retire(MODEL_EV_BRANCHES, 1, MODEL_RING_KERN);
    host_env_switch_out(a);

    HOST_ASSERT_EQ(pmu_test_read(event_a), 11);
    HOST_ASSERT_EQ(pmu_test_read(event_b), 20);
    HOST_ASSERT_EQ(perfmon_event_detach(event_a), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(event_b), 0);
    pmu_test_end();
}

/*
 * Events to retire between two chances perfmon has to see a counter: less
 * than a period, so at most one wrap. With an interrupt, over half a
 * period (a wrap every other chunk); without, the most perfmon's poll
 * period allows, at 100 events per cycle.
 */
static uint64_t
pmu_test_chunk(unsigned int pmc_id)
{
    if (PMU_TEST_HAS_PMI) {
        return pmu_test_period(pmc_id) / 2 + 777;
    }

    return PMU_TEST_POLL_TICKS * (HOST_ENV_CPU_FREQ / CLOCK_HZ * 100);
}

/*
 * Hundreds of wraps: a CPU event on instructions and a thread event on
 * branches, the thread switched out and back in every 10 chunks (its
 * counter restarts gap events before a wrap each time). perfmon sees
 * every wrap through the PMI taken after the chunk, or the poll timer.
 */
static void
pmu_test_many_wraps(uint64_t gap)
{
    const unsigned int nr_chunks = 400;
    struct pmu_test_ref cpu_ref, td_ref;
    uint64_t overflows, pmis, spurious, cpu_wraps, td_wraps;
    uint64_t cpu_chunk, td_chunk, cpu_expected = 0, td_expected = 0;
    unsigned int cpu_pmc, td_pmc, nr_pmis = 0, expected_pmis = 0;
    struct perfmon_event *cpu_event, *td_event;
    struct thread *thread;
    bool loaded = true;

    thread = pmu_test_thread();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(gap), 0);
    overflows = perfmon_nr_overflows(0);
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);

    cpu_event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    host_env_switch_in(thread);
    td_event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(td_event, thread), 0);
    cpu_pmc = pmu_test_pmc_id(cpu_event);
    td_pmc = pmu_test_pmc_id(td_event);
    cpu_chunk = pmu_test_chunk(cpu_pmc);
    td_chunk = pmu_test_chunk(td_pmc);
    HOST_ASSERT(cpu_chunk < pmu_test_period(cpu_pmc));
    HOST_ASSERT(td_chunk < pmu_test_period(td_pmc));
    cpu_wraps = model_nr_wraps(cpu_pmc);
    td_wraps = model_nr_wraps(td_pmc);
    pmu_test_ref_init(&cpu_ref, cpu_pmc);
    pmu_test_ref_init(&td_ref, td_pmc);
    pmu_test_ref_start(&cpu_ref, gap);
    pmu_test_ref_start(&td_ref, gap);

    for (unsigned int i = 0; i < nr_chunks; i++) {
        uint64_t wraps_before = cpu_ref.wraps + td_ref.wraps;

        model_retire(MODEL_EV_INSTRUCTIONS, cpu_chunk, MODEL_RING_KERN);
        model_retire(MODEL_EV_BRANCHES, td_chunk, MODEL_RING_KERN);
        pmu_test_ref_add(&cpu_ref, cpu_chunk);
        cpu_expected += cpu_chunk;

        if (loaded) {
            pmu_test_ref_add(&td_ref, td_chunk);
            td_expected += td_chunk;
        }

        /* With an interrupt, one PMI for the wraps of a chunk. */
        if (PMU_TEST_HAS_PMI && cpu_ref.wraps + td_ref.wraps != wraps_before) {
            expected_pmis++;
        }

        nr_pmis += model_pmi_pending();
        pmu_test_catch_up();

        if (i % 10 == 9) {
            if (loaded) {
                host_env_switch_out(thread);
            } else {
                host_env_switch_in(thread);
                pmu_test_ref_start(&td_ref, gap);
            }

            loaded = !loaded;
        }
    }

    /* The premise: hundreds of wraps happened. */
    HOST_ASSERT(cpu_ref.wraps >= 150);
    HOST_ASSERT(td_ref.wraps >= 100);

    HOST_ASSERT_EQ(pmu_test_read(cpu_event), cpu_expected);
    HOST_ASSERT_EQ(pmu_test_read(td_event), td_expected);
    HOST_ASSERT_EQ(model_nr_wraps(cpu_pmc) - cpu_wraps, cpu_ref.wraps);
    HOST_ASSERT_EQ(model_nr_wraps(td_pmc) - td_wraps, td_ref.wraps);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows,
                   cpu_ref.wraps + td_ref.wraps);
    HOST_ASSERT_EQ(nr_pmis, expected_pmis);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, expected_pmis);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 0);

    HOST_ASSERT_EQ(perfmon_event_detach(cpu_event), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(td_event), 0);

    if (loaded) {
        host_env_switch_out(thread);
    }
}

#if PMU_TEST_HAS_PMI

/*
 * Firmware left FREEZE_PERFMON_ON_PMI set: setup clears it, or every PMI
 * request would stop all counters until the handler runs, and the events
 * of each chunk after its wrap would go uncounted.
 */
HOST_TEST(firmware_freeze_on_pmi_is_cleared_at_setup)
{
    pmu_test_begin();
    HOST_ASSERT(pmu_test_regs_before_setup.debugctl
                & MODEL_DEBUGCTL_FREEZE_PERFMON);
    HOST_ASSERT(!(model_msr(MODEL_MSR_DEBUGCTL)
                  & MODEL_DEBUGCTL_FREEZE_PERFMON));
    pmu_test_many_wraps(1000);
    pmu_test_end();
}

HOST_TEST(hundreds_of_wraps_stay_exact_with_pmi)
{
    /* With full-width writes, a gap only they can program. */
    uint64_t gap = PMU_TEST_FULL_WIDTH ? (1ULL << 35) : 1000;

    pmu_test_begin();
    pmu_test_many_wraps(gap);
    pmu_test_end();
}

#else /* PMU_TEST_HAS_PMI */

HOST_TEST(hundreds_of_wraps_stay_exact_with_polling)
{
    pmu_test_begin();
    pmu_test_many_wraps(1000);
    HOST_ASSERT_EQ(model_nr_pmi_requests(), 0);
    pmu_test_end();
}

HOST_TEST(poll_timer_runs_while_counters_are_used)
{
    uint64_t now, overflows;
    struct perfmon_event *event;

    pmu_test_begin();
    HOST_ASSERT_EQ(host_env_nr_timers_pending(), 0);
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(100), 0);
    now = clock_get_time();
    overflows = perfmon_nr_overflows(0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(host_env_nr_timers_pending(), 1);
    HOST_ASSERT_EQ(host_env_next_expiry(), now + PMU_TEST_POLL_TICKS);

    /* No interrupt: the wrap waits for the poll. */
    model_retire(MODEL_EV_BRANCHES, 150, MODEL_RING_KERN);
    HOST_ASSERT(!model_pmi_pending());
    host_env_advance(PMU_TEST_POLL_TICKS - 1);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0), overflows);
    host_env_advance(1);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0), overflows + 1);
    HOST_ASSERT_EQ(host_env_next_expiry(), now + 2 * PMU_TEST_POLL_TICKS);
    HOST_ASSERT_EQ(pmu_test_read(event), 150);

    /* perfmon never cancels it: the next firing finds nothing, lapses. */
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(host_env_nr_timers_pending(), 1);
    host_env_advance(PMU_TEST_POLL_TICKS);
    HOST_ASSERT_EQ(host_env_nr_timers_pending(), 0);
    HOST_ASSERT_EQ(model_nr_pmi_requests(), 0);
    pmu_test_end();
}

#endif /* PMU_TEST_HAS_PMI */

HOST_TEST(start_gap_limits_and_start_values)
{
    /*
     * Up to the narrowest counter's period, or without full-width writes
     * to what a sign-extended 32-bit start value allows.
     */
    const uint64_t max_gap = PMU_TEST_FULL_WIDTH
                             ? (1ULL << PMU_TEST_MIN_WIDTH) - 1
                             : 1ULL << 31;
    unsigned long pmc_writes, a_pmc_writes;
    struct perfmon_event *branches, *insns = NULL;
    uint64_t overflows;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(max_gap + 1), EINVAL);
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(max_gap), 0);
    pmc_writes = model_nr_writes(MODEL_MSR_PMC(0));
    a_pmc_writes = model_nr_writes(MODEL_MSR_A_PMC(0));
    overflows = perfmon_nr_overflows(0);

    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(branches), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), PMU_TEST_GP_PERIOD - max_gap);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_PMC(0)) - pmc_writes,
                   PMU_TEST_FULL_WIDTH ? 0 : 1);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_A_PMC(0)) - a_pmc_writes,
                   PMU_TEST_FULL_WIDTH ? 1 : 0);

    if (PMU_TEST_FIXED_MASK & 1) {
        insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
        HOST_ASSERT_EQ(pmu_test_pmc_id(insns), PMU_TEST_FIXED(0));
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_FIXED_CTR(0)),
                       (1ULL << PMU_TEST_FIXED_WIDTH) - max_gap);
    }

    /* The wrap comes exactly gap events after the start. */
    model_retire(MODEL_EV_BRANCHES, max_gap - 1, MODEL_RING_KERN);
    model_retire(MODEL_EV_INSTRUCTIONS, max_gap - 1, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT(!model_pmi_pending());
    HOST_ASSERT_EQ(pmu_test_read(branches), max_gap - 1);
    model_retire(MODEL_EV_BRANCHES, 1, MODEL_RING_KERN);
    model_retire(MODEL_EV_INSTRUCTIONS, 1, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 0);
    pmu_test_catch_up();
    HOST_ASSERT_EQ(pmu_test_read(branches), max_gap);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows,
                   (insns != NULL) ? 2 : 1);

    if (insns != NULL) {
        HOST_ASSERT_EQ(pmu_test_read(insns), max_gap);
    }

    pmu_test_detach_all();
    pmu_test_end();
}

HOST_TEST(start_gap_below_minimum_is_refused)
{
    pmu_test_begin();
    HOST_ASSERT(PMU_INTEL_START_GAP_MIN >= 2);

    for (uint64_t gap = 1; gap < PMU_INTEL_START_GAP_MIN; gap++) {
        HOST_ASSERT_EQ(pmu_intel_set_start_gap(gap), EINVAL);
    }

    HOST_ASSERT_EQ(pmu_intel_set_start_gap(PMU_INTEL_START_GAP_MIN), 0);
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(0), 0);
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Counters that keep counting while the driver runs                   */
/* ------------------------------------------------------------------ */

/*
 * With drift, every driver access counts events on the running counters.
 * A counter started a few events before its wrap wraps before perfmon's
 * first read of it: perfmon must count from the value start programmed,
 * not from a read after it, so what it reports is what the counter
 * counted from its programming (model_counted_at_write) to perfmon's
 * read (model_counted_at_read).
 */
HOST_TEST(thread_counts_exactly_when_counter_wraps_before_first_read)
{
    /* Driver accesses in perfmon's first sync: a status check, a read. */
    const uint64_t first_sync_accesses = PMU_TEST_HAS_PMI ? 2 : 1;
    struct perfmon_event *event;
    struct thread *thread;
    uint64_t expected = 0;
    unsigned int pmc_id;

    pmu_test_begin();
    thread = pmu_test_thread();
    event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);
    pmc_id = pmu_test_pmc_id(event);

    for (uint64_t drift = 2; drift <= 6; drift++) {
        /* Wraps at the status check, or between it and the read. */
        const uint64_t gaps[] = {
            PMU_INTEL_START_GAP_MIN, drift, first_sync_accesses * drift,
        };

        for (unsigned int k = 0; k < ARRAY_SIZE(gaps); k++) {
            uint64_t wraps, start;

            HOST_ASSERT_EQ(pmu_intel_set_start_gap(gaps[k]), 0);
            model_set_drift(drift);
            wraps = model_nr_wraps(pmc_id);
            host_env_switch_in(thread);
            start = model_counted_at_write(pmc_id);

            /* The premise: the wrap comes by perfmon's first sync. */
            pmu_test_read(event);
            HOST_ASSERT_EQ(model_nr_wraps(pmc_id) - wraps, 1);
            pmu_test_catch_up();

            model_retire(MODEL_EV_BRANCHES, 100 + drift, MODEL_RING_KERN);
            pmu_test_catch_up();
            host_env_switch_out(thread);
            pmu_test_catch_up();
            expected += model_counted_at_read(pmc_id) - start;
            model_set_drift(0);
            HOST_ASSERT_EQ(pmu_test_read(event), expected);
        }
    }

    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/* CPU events: counted from perfmon's read at attach, drift and all. */
HOST_TEST(cpu_events_count_exactly_when_counters_wrap_at_attach)
{
    for (uint64_t drift = 1; drift <= 6; drift++) {
        struct perfmon_event *insns, *branches;
        uint64_t insns_start, branches_start;
        uint64_t insns_wraps, branches_wraps;
        unsigned int insns_id, branches_id;

        pmu_test_begin();
        HOST_ASSERT_EQ(pmu_intel_set_start_gap(PMU_INTEL_START_GAP_MIN), 0);
        model_set_drift(drift);
        insns = pmu_test_event(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
        branches = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
        insns_id = (PMU_TEST_FIXED_MASK & 1) ? PMU_TEST_FIXED(0) : 0;
        branches_id = (PMU_TEST_FIXED_MASK & 1) ? 0 : 1;
        insns_wraps = model_nr_wraps(insns_id);
        branches_wraps = model_nr_wraps(branches_id);

        HOST_ASSERT_EQ(perfmon_event_attach_cpu(insns, 0), 0);
        HOST_ASSERT_EQ(pmu_test_pmc_id(insns), insns_id);
        insns_start = model_counted_at_read(insns_id);
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(branches, 0), 0);
        HOST_ASSERT_EQ(pmu_test_pmc_id(branches), branches_id);
        branches_start = model_counted_at_read(branches_id);
        pmu_test_catch_up();
        HOST_ASSERT_EQ(model_nr_wraps(insns_id) - insns_wraps, 1);
        HOST_ASSERT_EQ(model_nr_wraps(branches_id) - branches_wraps, 1);

        model_retire(MODEL_EV_BRANCHES, 1000, MODEL_RING_KERN);
        model_retire(MODEL_EV_INSTRUCTIONS, 2000, MODEL_RING_KERN);
        pmu_test_catch_up();
        HOST_ASSERT_EQ(pmu_test_read(insns),
                       model_counted_at_read(insns_id) - insns_start);
        HOST_ASSERT_EQ(pmu_test_read(branches),
                       model_counted_at_read(branches_id) - branches_start);
        pmu_test_catch_up();
        model_set_drift(0);
        pmu_test_detach_all();
        pmu_test_end();
    }
}

/* ------------------------------------------------------------------ */
/* Overflow interrupt                                                  */
/* ------------------------------------------------------------------ */

#if PMU_TEST_HAS_PMI

HOST_TEST(pmi_acknowledges_gp_and_fixed_overflow_once)
{
    const uint64_t bits = (1ULL << 0) | MODEL_GLOBAL_FIXED(0);
    uint64_t ctrl, pmis, spurious, overflows;
    struct perfmon_event *insns, *branches;
    unsigned long acks[64], eois;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_pmc_id(branches), 0);

    model_retire(MODEL_EV_INSTRUCTIONS, 15, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), bits);
    HOST_ASSERT(model_pmi_pending());
    HOST_ASSERT_EQ(model_lvt_pmc(), PMU_TEST_LVT | MODEL_LVT_MASKED);
    ctrl = model_msr(MODEL_MSR_GLOBAL_CTRL);
    HOST_ASSERT_EQ(ctrl, bits);

    for (unsigned int bit = 0; bit < 64; bit++) {
        acks[bit] = model_nr_acks(bit);
    }

    eois = model_nr_eois();
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);
    overflows = perfmon_nr_overflows(0);
    pmu_test_deliver_pmi();

    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), ctrl);
    HOST_ASSERT_EQ(model_lvt_pmc(), PMU_TEST_LVT);

    for (unsigned int bit = 0; bit < 64; bit++) {
        HOST_ASSERT_EQ(model_nr_acks(bit) - acks[bit], (bits >> bit) & 1);
    }

    HOST_ASSERT_EQ(model_nr_eois() - eois, PMU_TEST_EOIS);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 0);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(pmu_test_read(insns), 15);
    HOST_ASSERT_EQ(pmu_test_read(branches), 12);

    /* Counting goes on after the handler. */
    model_retire(MODEL_EV_INSTRUCTIONS, 5, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(insns), 20);
    HOST_ASSERT_EQ(pmu_test_read(branches), 17);
    pmu_test_detach_all();
    pmu_test_end();
}

/*
 * The PMI as an NMI (the LVT entry in NMI delivery mode) landing while a
 * perfmon section is open on the CPU (perfmon_nmi_enter, as the context
 * switch or a read): the handler touches nothing: the status bit stays
 * set (unacknowledged), the LVT entry masked as the PMI left it, no PMI
 * counted, nothing reported. The section's end runs the handler: status
 * acknowledged, the entry unmasked (still NMI delivery), the wrap counted
 * once, the count exact.
 */
HOST_TEST(nmi_inside_a_section_is_handled_at_its_end)
{
    struct perfmon_event *branches;
    uint64_t pmis, overflows;
    unsigned long flags, eois;

    HOST_ASSERT(perfmon_pmi_nmi());
    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(branches), 0);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI);

    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI | MODEL_LVT_MASKED);
    pmis = pmu_intel_nr_pmis(0);
    overflows = perfmon_nr_overflows(0);
    eois = model_nr_eois();

    flags = cpu_intr_save();
    perfmon_nmi_enter();
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI | MODEL_LVT_MASKED);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0), pmis);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0), overflows);
    perfmon_nmi_leave();
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    cpu_intr_restore(flags);

    HOST_ASSERT_EQ(model_nr_eois(), eois);
    HOST_ASSERT_EQ(pmu_test_read(branches), 12);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(branches), 17);
    pmu_test_detach_all();
    pmu_test_end();
}

HOST_TEST(pmi_without_status_is_spurious)
{
    uint64_t pmis, spurious;
    struct model_regs before, after;
    struct perfmon_event *event;
    unsigned long eois, acks;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(3), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    model_snapshot(&before);
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);
    eois = model_nr_eois();
    acks = model_nr_writes(MODEL_MSR_GLOBAL_OVF);

    /* Nothing overflowed. */
    host_env_raise_trap(TRAP_PMI);
    model_snapshot(&after);
    pmu_test_assert_regs_eq(&before, &after);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(model_nr_eois() - eois, PMU_TEST_EOIS);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_GLOBAL_OVF), acks);

    /* A real one: counted, not spurious. */
    model_retire(MODEL_EV_BRANCHES, 3, MODEL_RING_KERN);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 2);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 3);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(read_between_wrap_and_pmi_counts_wrap_once)
{
    struct perfmon_event *event;
    uint64_t overflows;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(100), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    overflows = perfmon_nr_overflows(0);
    model_retire(MODEL_EV_BRANCHES, 150, MODEL_RING_KERN);
    HOST_ASSERT(model_pmi_pending());

    /* The read sees the counter go down before the PMI is taken. */
    HOST_ASSERT_EQ(pmu_test_read(event), 150);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_read(event), 150);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);

    /* The next wrap, a whole period with no read before its PMI. */
    model_retire(MODEL_EV_BRANCHES, PMU_TEST_GP_PERIOD, MODEL_RING_KERN);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_GP_PERIOD + 150);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(full_period_before_pmi_counts_a_wrap)
{
    struct perfmon_event *event;
    uint64_t overflows;

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 5);
    overflows = perfmon_nr_overflows(0);

    /* Back at the value perfmon last read: only the PMI tells. */
    model_retire(MODEL_EV_BRANCHES, PMU_TEST_GP_PERIOD, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 5);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_GP_PERIOD + 5);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(overflow_pending_at_detach_is_not_reported)
{
    struct perfmon_event *event;
    uint64_t overflows, spurious;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    overflows = perfmon_nr_overflows(0);
    spurious = pmu_intel_nr_spurious(0);
    model_retire(MODEL_EV_BRANCHES, 15, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << 0);

    /* Stopping acknowledges the overflow; the late PMI finds nothing. */
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    pmu_test_assert_disabled(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 15);
    pmu_test_end();
}

HOST_TEST(stray_overflow_bits_are_never_reported)
{
    struct perfmon_event *first, *second, *insns, *event;
    uint64_t overflows, pmis, spurious;
    unsigned long acks;

    pmu_test_begin();

    /* General counter 0 is left free after serving the slot insns gets. */
    first = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    second = pmu_test_attach_cpu(0x01d0, PERFMON_EF_RAW | PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(first), 0);
    HOST_ASSERT_EQ(pmu_test_pmc_id(second), 1);
    HOST_ASSERT_EQ(perfmon_event_detach(first), 0);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(perfmon_event_pmc_index(insns),
                   perfmon_event_pmc_index(first));
    model_retire(MODEL_EV_INSTRUCTIONS, 20, MODEL_RING_KERN);

    /* An overflow of the free counter: acknowledged, reported to no one. */
    overflows = perfmon_nr_overflows(0);
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);
    acks = model_nr_acks(0);
    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << 0);
    host_env_raise_trap(TRAP_PMI);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_nr_acks(0) - acks, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 0);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0), overflows);
    HOST_ASSERT_EQ(pmu_test_read(insns), 20);

    /* Starting the counter again clears an overflow left from before. */
    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(event), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    host_env_raise_trap(TRAP_PMI);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0), overflows);
    HOST_ASSERT_EQ(pmu_test_read(event), 0);
    HOST_ASSERT_EQ(pmu_test_read(insns), 20);
    pmu_test_detach_all();
    pmu_test_end();
}

/* What the WRMSR hooks below saw and do. */
static uint64_t pmu_test_hook_bits;     /* status bits to (re)raise */
static bool pmu_test_hook_stuck;        /* on every acknowledgment */
static unsigned int pmu_test_hook_acks;
static uint64_t pmu_test_hook_ctrl;     /* GLOBAL_CTRL bits at any ack */

/*
 * On acknowledgments: raise hook_bits in GLOBAL_STATUS, after the first
 * one only (an overflow that shows up while the handler runs) or after
 * every one (a stuck status bit).
 */
static void
pmu_test_status_hook(uint32_t msr, uint64_t value)
{
    (void)value;

    if (msr != MODEL_MSR_GLOBAL_OVF) {
        return;
    }

    pmu_test_hook_ctrl |= model_msr(MODEL_MSR_GLOBAL_CTRL);

    if (pmu_test_hook_acks++ == 0 || pmu_test_hook_stuck) {
        model_poke(MODEL_MSR_GLOBAL_STATUS,
                   model_msr(MODEL_MSR_GLOBAL_STATUS) | pmu_test_hook_bits);
    }
}

static void
pmu_test_set_status_hook(uint64_t bits, bool stuck)
{
    pmu_test_hook_bits = bits;
    pmu_test_hook_stuck = stuck;
    pmu_test_hook_acks = 0;
    pmu_test_hook_ctrl = 0;
    model_set_wrmsr_hook(pmu_test_status_hook);
}

HOST_TEST(pmi_handler_stops_counting_and_rereads_status)
{
    struct perfmon_event *insns, *branches;
    uint64_t ctrl, overflows;
    unsigned long acks0, acks32;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_pmc_id(branches), 0);
    model_retire(MODEL_EV_INSTRUCTIONS, 15, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    ctrl = model_msr(MODEL_MSR_GLOBAL_CTRL);
    overflows = perfmon_nr_overflows(0);
    acks0 = model_nr_acks(0);
    acks32 = model_nr_acks(32);

    /* The fixed counter's bit appears only after the first pass's ack. */
    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << 0);
    pmu_test_set_status_hook(MODEL_GLOBAL_FIXED(0), false);
    pmu_test_deliver_pmi();
    model_set_wrmsr_hook(NULL);

    HOST_ASSERT_EQ(pmu_test_hook_acks, 2);
    HOST_ASSERT_EQ(pmu_test_hook_ctrl, 0);
    HOST_ASSERT_EQ(model_nr_acks(0) - acks0, 1);
    HOST_ASSERT_EQ(model_nr_acks(32) - acks32, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), ctrl);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(pmu_test_read(insns), 15);
    HOST_ASSERT_EQ(pmu_test_read(branches), 12);
    pmu_test_detach_all();
    pmu_test_end();
}

/* The driver's bound on handler passes (PMU_INTEL_PMI_MAX_LOOPS). */
#define PMU_TEST_PMI_MAX_PASSES 16

/* PMIs whose handler gave up on a stuck status, as the syscnt says. */
static uint64_t
pmu_test_nr_giveups(void)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(syscnt_lookup("pmu_intel_pmi_giveup/0", &value), 0);
    HOST_ASSERT_EQ(value, pmu_intel_nr_pmi_giveups(0));
    return value;
}

HOST_TEST(pmi_with_stuck_status_bit_returns)
{
    const unsigned int stray = PMU_TEST_NR_GP - 1;  /* a free counter */
    struct perfmon_event *event;
    unsigned long acks, acks62, acks63;
    uint64_t ctrl, giveups, pmis;

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT(pmu_test_pmc_id(event) != stray);
    ctrl = model_msr(MODEL_MSR_GLOBAL_CTRL);
    giveups = pmu_test_nr_giveups();
    pmis = pmu_intel_nr_pmis(0);
    acks = model_nr_acks(stray);
    acks62 = model_nr_acks(62);
    acks63 = model_nr_acks(63);

    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << stray);
    pmu_test_set_status_hook(1ULL << stray, true);
    host_env_raise_trap(TRAP_PMI);
    model_set_wrmsr_hook(NULL);

    /* Each pass acknowledges it, then one acknowledgment of everything. */
    HOST_ASSERT_EQ(pmu_test_hook_acks, PMU_TEST_PMI_MAX_PASSES + 1);
    HOST_ASSERT_EQ(model_nr_acks(stray) - acks, PMU_TEST_PMI_MAX_PASSES + 1);
    HOST_ASSERT_EQ(model_nr_acks(62) - acks62, 1);
    HOST_ASSERT_EQ(model_nr_acks(63) - acks63, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), ctrl);
    HOST_ASSERT_EQ(model_lvt_pmc(), PMU_TEST_LVT);
    HOST_ASSERT_EQ(pmu_test_nr_giveups() - giveups, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);

    /* The bit is still stuck in the model; counting goes on. */
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << stray);
    model_poke(MODEL_MSR_GLOBAL_STATUS, 0);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 5);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * The driver keeps what GLOBAL_CTRL and FIXED_CTR_CTRL should hold and
 * only ever writes them: starting, stopping and the PMI never read them
 * back (a freeze clears GLOBAL_CTRL behind the driver's back).
 */
HOST_TEST(control_registers_are_written_never_read_back)
{
    unsigned long global_reads, fixed_reads;
    struct perfmon_event *insns, *branches, *ref = NULL;
    struct thread *thread;

    pmu_test_begin();
    global_reads = model_nr_reads(MODEL_MSR_GLOBAL_CTRL);
    fixed_reads = model_nr_reads(MODEL_MSR_FIXED_CTRL);
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    thread = pmu_test_thread();
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(branches, thread), 0);

    if (PMU_TEST_FIXED_MASK & 0x4) {
        ref = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_USER);
    }

    for (unsigned int i = 0; i < 3; i++) {
        host_env_switch_in(thread);
        model_retire(MODEL_EV_BRANCHES, 20, MODEL_RING_KERN);
        model_retire(MODEL_EV_INSTRUCTIONS, 30, MODEL_RING_KERN);
        model_retire(MODEL_EV_REF_CYCLES, 40, MODEL_RING_USER);
        pmu_test_catch_up();
        host_env_switch_out(thread);
    }

    HOST_ASSERT_EQ(pmu_test_read(branches), 60);
    HOST_ASSERT_EQ(pmu_test_read(insns), 90);

    if (ref != NULL) {
        HOST_ASSERT_EQ(pmu_test_read(ref), 120);
    }

    pmu_test_detach_all();
    HOST_ASSERT_EQ(model_nr_reads(MODEL_MSR_GLOBAL_CTRL), global_reads);
    HOST_ASSERT_EQ(model_nr_reads(MODEL_MSR_FIXED_CTRL), fixed_reads);
    pmu_test_end();
}

/*
 * FREEZE_PERFMON_ON_PMI left on where the driver cannot clear it (a
 * hypervisor ignoring the DEBUGCTL write): every PMI request freezes the
 * counters (version 2 clears GLOBAL_CTRL, version 4 on sets CTR_Frz), and
 * each PMI must start them again, from the driver's copy of GLOBAL_CTRL
 * and by acknowledging CTR_Frz. Each batch of events ends exactly at a
 * wrap, so the freeze loses none and the counts stay exact over many PMIs.
 */
HOST_TEST(freeze_left_on_does_not_stop_counting)
{
    const uint64_t gap = 1000;
    const uint64_t fixed_period = 1ULL << PMU_TEST_FIXED_WIDTH;
    struct perfmon_event *insns, *branches;
    uint64_t pmis, overflows, counted;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(gap), 0);
    model_poke(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_FREEZE_PERFMON);
    model_set_debugctl_sticky(MODEL_DEBUGCTL_FREEZE_PERFMON);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_pmc_id(branches), 0);
    pmis = pmu_intel_nr_pmis(0);
    overflows = perfmon_nr_overflows(0);

    /* The premise: the first wrap freezes every counter. */
    model_retire(MODEL_EV_BRANCHES, gap, MODEL_RING_KERN);
    HOST_ASSERT(model_pmi_pending());

    if (PMU_TEST_VERSION >= 4) {
        HOST_ASSERT(model_msr(MODEL_MSR_GLOBAL_STATUS)
                    & MODEL_STATUS_CTR_FRZ);
    } else {
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), 0);
    }

    counted = model_nr_counted(PMU_TEST_FIXED(0));
    model_retire(MODEL_EV_INSTRUCTIONS, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_nr_counted(PMU_TEST_FIXED(0)), counted);
    pmu_test_deliver_pmi();
    model_retire(MODEL_EV_INSTRUCTIONS, gap, MODEL_RING_KERN);
    pmu_test_deliver_pmi();

    for (unsigned int i = 0; i < 50; i++) {
        model_retire(MODEL_EV_BRANCHES, PMU_TEST_GP_PERIOD, MODEL_RING_KERN);
        pmu_test_deliver_pmi();
        model_retire(MODEL_EV_INSTRUCTIONS, fixed_period, MODEL_RING_KERN);
        pmu_test_deliver_pmi();
    }

    HOST_ASSERT_EQ(pmu_test_read(branches), gap + 50 * PMU_TEST_GP_PERIOD);
    HOST_ASSERT_EQ(pmu_test_read(insns), gap + 50 * fixed_period);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 102);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 102);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_DEBUGCTL),
                   MODEL_DEBUGCTL_FREEZE_PERFMON);
    pmu_test_detach_all();
    pmu_test_end();
}

/*
 * Counting is off while the handler runs, so a status bit that stays set
 * or comes back during one PMI is still the overflow it already saw: a
 * counter in use gets one report, 2^width once, and the forced clear of
 * the give-up path reports nothing.
 */
HOST_TEST(pmi_reports_a_stuck_bit_of_a_counter_in_use_once)
{
    struct perfmon_event *event;
    uint64_t overflows, giveups;
    unsigned int pmc_id;
    unsigned long acks;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    pmc_id = pmu_test_pmc_id(event);
    model_retire(MODEL_EV_BRANCHES, 15, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << pmc_id);
    overflows = perfmon_nr_overflows(0);
    acks = model_nr_acks(pmc_id);

    /* No acknowledgment clears it during this PMI. */
    giveups = pmu_test_nr_giveups();
    model_set_stuck_status(1ULL << pmc_id);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(model_nr_acks(pmc_id) - acks, PMU_TEST_PMI_MAX_PASSES + 1);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(pmu_test_nr_giveups() - giveups, 1);

    /* Then the bit lets go; the count holds one wrap, no more. */
    model_set_stuck_status(0);
    model_poke(MODEL_MSR_GLOBAL_STATUS, 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 15);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 20);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(pmi_reports_a_reappearing_bit_once)
{
    struct perfmon_event *event;
    uint64_t overflows, giveups;
    unsigned int pmc_id;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    pmc_id = pmu_test_pmc_id(event);
    model_retire(MODEL_EV_BRANCHES, 15, MODEL_RING_KERN);
    overflows = perfmon_nr_overflows(0);

    /* Set again after the first acknowledgment, once: no give-up. */
    giveups = pmu_test_nr_giveups();
    pmu_test_set_status_hook(1ULL << pmc_id, false);
    pmu_test_deliver_pmi();
    model_set_wrmsr_hook(NULL);
    HOST_ASSERT_EQ(pmu_test_hook_acks, 2);
    HOST_ASSERT_EQ(pmu_test_nr_giveups(), giveups);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 15);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

#endif /* PMU_TEST_HAS_PMI */

/* ------------------------------------------------------------------ */
/* Sampling support: preset and max_period                             */
/* ------------------------------------------------------------------ */

/*
 * The longest preset (SDM vol. 3B, 21.2.6): through IA32_PMCx writes are
 * 32 bits sign-extended, so 2^31; full-width writes and fixed counters
 * take 2^(width - 1); the device gives the smallest. No PMI, no sampling.
 */
#if PMU_TEST_VERSION == 1
#define PMU_TEST_MAX_PERIOD     0
#elif PMU_TEST_VERSION == 2
#define PMU_TEST_MAX_PERIOD     (1ULL << 31)
#else
#define PMU_TEST_MAX_PERIOD     (1ULL << (PMU_TEST_FIXED_WIDTH - 1))
#endif

HOST_TEST(max_period_follows_write_width)
{
    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_test_dev()->max_period, PMU_TEST_MAX_PERIOD);
    HOST_ASSERT_EQ(pmu_test_dev()->ops->preset != NULL, true);
    pmu_test_end();
}

/*
 * The reports the driver makes, seen through the linker's --wrap of
 * perfmon_report_overflow (the Makefile's HOST_LDFLAGS_pmu_intel_*): the
 * slot and the context of each, then perfmon's own handling. With
 * pmu_test_reload set, the wrapper first presets the counter to that
 * many events, as perfmon does for a sampling event.
 */
#define PMU_TEST_MAX_REPORTS    16

struct pmu_test_report {
    unsigned int pmc_id;
    bool has_ctx;
    struct perfmon_intr_ctx ctx;
};

static struct pmu_test_report pmu_test_reports[PMU_TEST_MAX_REPORTS];
static unsigned int pmu_test_nr_reports;
static uint64_t pmu_test_reload;

void __real_perfmon_report_overflow(struct perfmon_dev *dev,
                                    unsigned int pmc_id,
                                    const struct perfmon_intr_ctx *ctx);
void __wrap_perfmon_report_overflow(struct perfmon_dev *dev,
                                    unsigned int pmc_id,
                                    const struct perfmon_intr_ctx *ctx);

void
__wrap_perfmon_report_overflow(struct perfmon_dev *dev,
                               unsigned int pmc_id,
                               const struct perfmon_intr_ctx *ctx)
{
    if (pmu_test_nr_reports < PMU_TEST_MAX_REPORTS) {
        struct pmu_test_report *report;

        report = &pmu_test_reports[pmu_test_nr_reports];
        report->pmc_id = pmc_id;
        report->has_ctx = (ctx != NULL);

        if (ctx != NULL) {
            report->ctx = *ctx;
        }
    }

    pmu_test_nr_reports++;
    __real_perfmon_report_overflow(dev, pmc_id, ctx);

    if (pmu_test_reload != 0) {
        dev->ops->preset(pmc_id, pmu_test_reload);
    }
}

#if PMU_TEST_HAS_PMI

static void
pmu_test_reports_reset(void)
{
    pmu_test_nr_reports = 0;
    pmu_test_reload = 0;
}

/* The counter an attached event's slot holds. */
static unsigned int
pmu_test_event_pmc_id(const struct perfmon_event *event)
{
    unsigned int pmc_id, width;

    HOST_ASSERT(perfmon_dev_pmc(perfmon_get_dev(false),
                                perfmon_event_pmc_index(event), &pmc_id,
                                &width));
    return pmc_id;
}

/* Report k was for event's counter, at ip and fp. */
static void
pmu_test_assert_report(unsigned int k, const struct perfmon_event *event,
                       uintptr_t ip, uintptr_t fp)
{
    HOST_ASSERT(k < pmu_test_nr_reports);
    HOST_ASSERT_EQ(pmu_test_reports[k].pmc_id, pmu_test_event_pmc_id(event));
    HOST_ASSERT(pmu_test_reports[k].has_ctx);
    HOST_ASSERT_EQ(pmu_test_reports[k].ctx.ip, ip);
    HOST_ASSERT_EQ(pmu_test_reports[k].ctx.fp, fp);
}

/* Preset event's counter to n, as perfmon does, interrupts disabled. */
static uint64_t
pmu_test_preset(const struct perfmon_event *event, uint64_t n)
{
    unsigned long flags = cpu_intr_save();
    uint64_t value = pmu_test_dev()->ops->preset(pmu_test_pmc_id(event), n);

    cpu_intr_restore(flags);
    return value;
}

/* Writes to the register a general counter's preset must go through. */
static unsigned long
pmu_test_gp_preset_writes(unsigned int i)
{
    return model_nr_writes(PMU_TEST_FULL_WIDTH ? MODEL_MSR_A_PMC(i)
                                               : MODEL_MSR_PMC(i));
}

/*
 * A preset of n leaves 2^width - n in the counter, returned, on a general
 * counter (through IA32_A_PMCx with full-width writes, else IA32_PMCx,
 * whose sign extension gives the same value up to n = 2^31) and on a
 * fixed counter (full width); n is 2 at least (never an overflow on the
 * next event).
 */
HOST_TEST(preset_writes_two_to_the_width_minus_n)
{
    const uint64_t ns[] = { 1, 2, 1000, 0x7fffffff, 1ULL << 31,
                            PMU_TEST_MAX_PERIOD };
    struct perfmon_event *gp, *fixed;
    unsigned int gp_id, fixed_id;

    pmu_test_begin();
    gp = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    fixed = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    gp_id = pmu_test_pmc_id(gp);
    fixed_id = pmu_test_pmc_id(fixed);
    HOST_ASSERT_EQ(fixed_id, PMU_TEST_FIXED(0));

    for (unsigned int k = 0; k < ARRAY_SIZE(ns); k++) {
        uint64_t n = MAX(ns[k], 2);
        uint64_t gp_value = -n & (PMU_TEST_GP_PERIOD - 1);
        uint64_t fixed_value = -n & (pmu_test_period(fixed_id) - 1);
        unsigned long writes = pmu_test_gp_preset_writes(gp_id);

        HOST_ASSERT_EQ(pmu_test_preset(gp, ns[k]), gp_value);
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(gp_id)), gp_value);
        HOST_ASSERT_EQ(pmu_test_gp_preset_writes(gp_id) - writes, 1);
        HOST_ASSERT_EQ(pmu_test_preset(fixed, ns[k]), fixed_value);
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_FIXED_CTR(0)), fixed_value);
    }

    /* Without full-width writes, 2^31 is 0x80000000 sign-extended. */
    if (!PMU_TEST_FULL_WIDTH) {
        HOST_ASSERT_EQ(pmu_test_preset(gp, 1ULL << 31),
                       0xffffffff80000000ULL & (PMU_TEST_GP_PERIOD - 1));
    }

    pmu_test_detach_all();
    pmu_test_end();
}

/*
 * n beyond max_period is limited to it, and 0 to 2: the write never needs
 * bits the register does not take (a full-width alias would #GP, a 32-bit
 * write would sign-extend to a short period).
 */
HOST_TEST(preset_beyond_max_period_is_limited)
{
    const uint64_t ns[] = { PMU_TEST_MAX_PERIOD + 1, 2 * PMU_TEST_MAX_PERIOD,
                            PMU_TEST_GP_PERIOD, UINT64_MAX };
    struct perfmon_event *gp, *fixed;
    uint64_t gp_max, fixed_max;

    pmu_test_begin();
    gp = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    fixed = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    gp_max = -PMU_TEST_MAX_PERIOD & (PMU_TEST_GP_PERIOD - 1);
    fixed_max = -PMU_TEST_MAX_PERIOD
                & (pmu_test_period(PMU_TEST_FIXED(0)) - 1);

    for (unsigned int k = 0; k < ARRAY_SIZE(ns); k++) {
        HOST_ASSERT_EQ(pmu_test_preset(gp, ns[k]), gp_max);
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), gp_max);
        HOST_ASSERT_EQ(pmu_test_preset(fixed, ns[k]), fixed_max);
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_FIXED_CTR(0)), fixed_max);
    }

    HOST_ASSERT_EQ(pmu_test_preset(gp, 0), PMU_TEST_GP_PERIOD - 2);
    HOST_ASSERT_EQ(pmu_test_preset(fixed, 0),
                   pmu_test_period(PMU_TEST_FIXED(0)) - 2);
    pmu_test_assert_no_fault();
    pmu_test_detach_all();
    pmu_test_end();
}

/* A preset counter overflows after exactly n events: one PMI, one report. */
HOST_TEST(preset_counter_overflow_reports_it_with_the_context)
{
    struct perfmon_event *event;
    uint64_t overflows;

    pmu_test_begin();
    pmu_test_reports_reset();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    overflows = perfmon_nr_overflows(0);
    pmu_test_preset(event, 100);
    model_retire(MODEL_EV_BRANCHES, 99, MODEL_RING_KERN);
    HOST_ASSERT(!model_pmi_pending());
    model_retire(MODEL_EV_BRANCHES, 1, MODEL_RING_KERN);
    HOST_ASSERT(model_pmi_pending());
    host_env_set_intr_ctx(0xffffffff80123456ULL, 0xffff800000001230ULL);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT_EQ(pmu_test_nr_reports, 1);
    pmu_test_assert_report(0, event, 0xffffffff80123456ULL,
                           0xffff800000001230ULL);
    HOST_ASSERT_EQ(perfmon_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(pmu_test_pmc_id(event))), 0);
    pmu_test_detach_all();
    pmu_test_end();
}

/*
 * Counters preset to different periods all overflow before the PMI is
 * taken (the first request masks the LVT entry; the others only set their
 * status bits): one PMI reports each once, with its context.
 */
HOST_TEST(several_preset_counters_in_one_pmi_are_each_reported_once)
{
    struct perfmon_event *events[3];
    const uint64_t ns[3] = { 10, 20, 30 };
    bool seen[3] = { false, false, false };
    uint64_t pmis;

    pmu_test_begin();
    pmu_test_reports_reset();
    events[0] = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    events[1] = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    events[2] = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    pmis = pmu_intel_nr_pmis(0);

    for (unsigned int k = 0; k < 3; k++) {
        pmu_test_preset(events[k], ns[k]);
    }

    model_retire(MODEL_EV_BRANCHES, 10, MODEL_RING_KERN);
    model_retire(MODEL_EV_INSTRUCTIONS, 20, MODEL_RING_KERN);
    model_retire(MODEL_EV_CYCLES, 30, MODEL_RING_KERN);
    host_env_set_intr_ctx(0x1000, 0x2000);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT(!model_pmi_pending());
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(pmu_test_nr_reports, 3);

    for (unsigned int r = 0; r < 3; r++) {
        for (unsigned int k = 0; k < 3; k++) {
            if (pmu_test_reports[r].pmc_id
                == pmu_test_event_pmc_id(events[k])) {
                HOST_ASSERT(!seen[k]);
                seen[k] = true;
                pmu_test_assert_report(r, events[k], 0x1000, 0x2000);
            }
        }
    }

    HOST_ASSERT(seen[0] && seen[1] && seen[2]);
    pmu_test_detach_all();
    pmu_test_end();
}

/* Retire reload_events branches when the handler enables counting again. */
static uint64_t pmu_test_hook_events;

static void
pmu_test_reenable_hook(uint32_t msr, uint64_t value)
{
    if (msr == MODEL_MSR_GLOBAL_CTRL && value != 0
        && pmu_test_hook_events != 0) {
        uint64_t n = pmu_test_hook_events;

        pmu_test_hook_events = 0;
        model_retire(MODEL_EV_BRANCHES, n, MODEL_RING_KERN);
    }
}

/*
 * A counter reloaded from the report (as perfmon does for a sampling
 * event) with a short period overflows again the moment the handler
 * counts again: that overflow must give a new PMI (the LVT entry unmasked
 * before counting resumes) and be reported by it, not be lost or
 * acknowledged with the old one.
 */
HOST_TEST(reloaded_counter_overflowing_at_once_gets_its_own_pmi)
{
    struct perfmon_event *event;
    uint64_t pmis, wraps;
    unsigned int pmc_id;

    pmu_test_begin();
    pmu_test_reports_reset();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    pmc_id = pmu_test_pmc_id(event);
    pmis = pmu_intel_nr_pmis(0);
    wraps = model_nr_wraps(pmc_id);
    pmu_test_preset(event, 50);
    model_retire(MODEL_EV_BRANCHES, 50, MODEL_RING_KERN);

    pmu_test_reload = 3;
    pmu_test_hook_events = 3;
    model_set_wrmsr_hook(pmu_test_reenable_hook);
    host_env_set_intr_ctx(0x10, 0x20);
    pmu_test_deliver_pmi();
    model_set_wrmsr_hook(NULL);
    HOST_ASSERT_EQ(pmu_test_hook_events, 0);
    HOST_ASSERT_EQ(pmu_test_nr_reports, 1);
    HOST_ASSERT_EQ(model_nr_wraps(pmc_id) - wraps, 2);

    /* The second overflow: its bit, and a PMI of its own. */
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << pmc_id);
    HOST_ASSERT(model_pmi_pending());
    host_env_set_intr_ctx(0x30, 0x40);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 2);
    HOST_ASSERT_EQ(pmu_test_nr_reports, 2);
    pmu_test_assert_report(0, event, 0x10, 0x20);
    pmu_test_assert_report(1, event, 0x30, 0x40);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(pmc_id)), -3ULL
                   & (PMU_TEST_GP_PERIOD - 1));
    pmu_test_reports_reset();
    pmu_test_detach_all();
    pmu_test_end();
}

#endif /* PMU_TEST_HAS_PMI */

/* ------------------------------------------------------------------ */
/* Switch budget                                                       */
/* ------------------------------------------------------------------ */

/* Reads of every counter register (general, full-width alias, fixed). */
static unsigned long
pmu_test_counter_reads(void)
{
    unsigned long n = 0;

    for (unsigned int i = 0; i < PMU_INTEL_MAX_GP; i++) {
        n += model_nr_reads(0xc1 + i) + model_nr_reads(0x4c1 + i);
    }

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        n += model_nr_reads(0x309 + j);
    }

    return n;
}

/*
 * A switch between two threads counting the same events (up to 4; nothing
 * else keeps the counters in use) costs exactly one counter read per
 * event, plus, with a PMI, one IA32_PERF_GLOBAL_STATUS read for the
 * overflow check: no write, and no other register read.
 */
HOST_TEST(switch_between_threads_with_same_events_only_reads)
{
    unsigned int max = MIN(4, pmu_test_dev()->nr_pmcs), n = 0;
    unsigned long accesses, counter_reads, status_reads;
    struct thread *a, *b;
    unsigned long flags;

    pmu_test_begin();
    a = pmu_test_thread();
    b = pmu_test_thread();

    /* The first events this PMU counts, each on its own counter. */
    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS && n < max;
         id++) {
        if (id == PERFMON_EV_REF_CYCLE
            || perfmon_event_check(id, PERFMON_EF_KERN) != 0) {
            continue;
        }

        HOST_ASSERT_EQ(perfmon_event_attach(pmu_test_event(id,
                                                           PERFMON_EF_KERN),
                                            a), 0);
        HOST_ASSERT_EQ(perfmon_event_attach(pmu_test_event(id,
                                                           PERFMON_EF_KERN),
                                            b), 0);
        n++;
    }

    HOST_ASSERT_EQ(n, max);

    host_env_switch_in(a);
    accesses = model_nr_accesses();
    counter_reads = pmu_test_counter_reads();
    status_reads = model_nr_reads(0x38e);

    flags = cpu_intr_save();
    perfmon_td_switch(&a->perfmon_td, &b->perfmon_td, cpu_get_tsc());
    perfmon_td_switch(&b->perfmon_td, &a->perfmon_td, cpu_get_tsc());
    cpu_intr_restore(flags);

    counter_reads = pmu_test_counter_reads() - counter_reads;
    status_reads = model_nr_reads(0x38e) - status_reads;
    HOST_ASSERT_EQ(counter_reads, 2 * n);
    HOST_ASSERT_EQ(status_reads, PMU_TEST_HAS_PMI ? 2 : 0);
    HOST_ASSERT_EQ(model_nr_accesses() - accesses,
                   counter_reads + status_reads);
    host_env_switch_out(a);
    pmu_test_detach_all();
    pmu_test_end();
}

/* Reads of the PMU control registers, which a switch must not read. */
static unsigned long
pmu_test_control_reads(void)
{
    unsigned long n = model_nr_reads(MODEL_MSR_GLOBAL_CTRL)
                      + model_nr_reads(MODEL_MSR_FIXED_CTRL)
                      + model_nr_reads(MODEL_MSR_GLOBAL_OVF);

    for (unsigned int i = 0; i < PMU_INTEL_MAX_GP; i++) {
        n += model_nr_reads(MODEL_MSR_EVTSEL(i));
    }

    return n;
}

/* Writes to every PMU register. */
static unsigned long
pmu_test_pmu_writes(void)
{
    unsigned long n = model_nr_writes(MODEL_MSR_GLOBAL_CTRL)
                      + model_nr_writes(MODEL_MSR_FIXED_CTRL)
                      + model_nr_writes(MODEL_MSR_GLOBAL_OVF)
                      + model_nr_writes(MODEL_MSR_GLOBAL_STATUS)
                      + model_nr_writes(MODEL_MSR_DEBUGCTL);

    for (unsigned int i = 0; i < PMU_INTEL_MAX_GP; i++) {
        n += model_nr_writes(MODEL_MSR_EVTSEL(i))
             + model_nr_writes(MODEL_MSR_PMC(i))
             + model_nr_writes(MODEL_MSR_A_PMC(i));
    }

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        n += model_nr_writes(MODEL_MSR_FIXED_CTR(j));
    }

    return n;
}

/* The model event behind a generic event. */
static struct model_event
pmu_test_model_event(unsigned int id)
{
    for (unsigned int i = 0; i < ARRAY_SIZE(pmu_test_generics); i++) {
        if (pmu_test_generics[i].id == id) {
            return pmu_test_generics[i].event;
        }
    }

    HOST_FAIL("no model event for generic event %u", id);
}

/*
 * The budget of a switch between threads with different events: at most
 * one MSR write per counter started or stopped, plus one
 * IA32_PERF_GLOBAL_CTRL write, and no control register read (the driver
 * works from its per-CPU shadows). The first nr_shared available generic
 * events go to both threads, the others alternately to a and b, as many
 * as there are counters. Every switch is checked, the first ones on this
 * CPU included, and the counts stay exact.
 */
static void
pmu_test_switch_budget(unsigned int nr_shared)
{
    struct perfmon_event *events[PERFMON_NR_GENERIC_EVENTS][2];
    uint64_t expected[PERFMON_NR_GENERIC_EVENTS][2];
    unsigned int ids[PERFMON_NR_GENERIC_EVENTS];
    unsigned int owner[PERFMON_NR_GENERIC_EVENTS];
    unsigned int nr_only[2] = { 0, 0 }, nr = 0;
    unsigned int max = pmu_test_dev()->nr_pmcs;
    unsigned long writes[2], global_writes[2], control_reads[2];
    struct thread *threads[2];

    pmu_test_begin();
    threads[0] = pmu_test_thread();
    threads[1] = pmu_test_thread();

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS && nr < max;
         id++) {
        if (id == PERFMON_EV_REF_CYCLE
            || perfmon_event_check(id, PERFMON_EF_KERN) != 0) {
            continue;
        }

        /* 2: both threads; else the thread that has it. */
        ids[nr] = id;
        owner[nr] = (nr < nr_shared) ? 2 : (nr - nr_shared) % 2;

        for (unsigned int t = 0; t < 2; t++) {
            events[nr][t] = NULL;
            expected[nr][t] = 0;

            if (owner[nr] == 2 || owner[nr] == t) {
                events[nr][t] = pmu_test_event(id, PERFMON_EF_KERN);
                HOST_ASSERT_EQ(perfmon_event_attach(events[nr][t],
                                                    threads[t]), 0);
            }
        }

        if (owner[nr] != 2) {
            nr_only[owner[nr]]++;
        }

        nr++;
    }

    HOST_ASSERT(nr_only[0] != 0 && nr_only[1] != 0);
    host_env_switch_in(threads[0]);

    /*
     * Switches go a -> b -> a, and the checks wait for a to be back, so
     * that a failed one leaves the threads as host_env knows them.
     */
    for (unsigned int i = 0; i < 6; i++) {
        unsigned int from = i % 2, to = 1 - from;
        unsigned long flags;

        /* Each counter of the thread running counts 7 + i events. */
        for (unsigned int k = 0; k < nr; k++) {
            if (events[k][from] != NULL) {
                model_retire(pmu_test_model_event(ids[k]), 7 + i,
                             MODEL_RING_KERN);
                expected[k][from] += 7 + i;
            }
        }

        /* A counter started from a value near its wrap may have wrapped. */
        if (PMU_TEST_HAS_PMI && model_pmi_pending()) {
            pmu_test_deliver_pmi();
        }

        writes[from] = pmu_test_pmu_writes();
        global_writes[from] = model_nr_writes(MODEL_MSR_GLOBAL_CTRL);
        control_reads[from] = pmu_test_control_reads();

        flags = cpu_intr_save();
        perfmon_td_switch(&threads[from]->perfmon_td,
                          &threads[to]->perfmon_td, cpu_get_tsc());
        cpu_intr_restore(flags);

        writes[from] = pmu_test_pmu_writes() - writes[from];
        global_writes[from] = model_nr_writes(MODEL_MSR_GLOBAL_CTRL)
                              - global_writes[from];
        control_reads[from] = pmu_test_control_reads() - control_reads[from];

        if (to == 1) {
            continue;
        }

        for (unsigned int t = 0; t < 2; t++) {
            HOST_ASSERT_EQ(control_reads[t], 0);
            HOST_ASSERT(global_writes[t] <= (PMU_TEST_HAS_PMI ? 1 : 0));

            if (writes[t] > nr_only[0] + nr_only[1]
                            + (PMU_TEST_HAS_PMI ? 1 : 0)) {
                HOST_FAIL("switch %u: %lu MSR writes, %u counters stopped "
                          "and %u started", i - 1 + t, writes[t], nr_only[t],
                          nr_only[1 - t]);
            }
        }
    }

    host_env_switch_out(threads[0]);

    for (unsigned int k = 0; k < nr; k++) {
        for (unsigned int t = 0; t < 2; t++) {
            if (events[k][t] != NULL) {
                HOST_ASSERT_EQ(pmu_test_read(events[k][t]), expected[k][t]);
            }
        }
    }

    pmu_test_detach_all();
    pmu_test_end();
}

HOST_TEST(switch_between_threads_with_different_events_within_budget)
{
    pmu_test_switch_budget(0);
}

#if PMU_TEST_NR_PMCS >= 3
HOST_TEST(switch_between_threads_sharing_some_events_within_budget)
{
    pmu_test_switch_budget(1);
}
#endif

/* ------------------------------------------------------------------ */
/* Sampling end to end (pmu_sample_test.c)                             */
/* ------------------------------------------------------------------ */

static void
pmu_test_sample_retire(unsigned int id, uint64_t n)
{
    model_retire(pmu_test_model_event(id), n, MODEL_RING_KERN);
}

static uint64_t
pmu_test_sample_counter(unsigned int pmc_id)
{
    return model_msr((pmc_id >= MODEL_FIXED_BASE)
                     ? MODEL_MSR_FIXED_CTR(pmc_id - MODEL_FIXED_BASE)
                     : MODEL_MSR_PMC(pmc_id));
}

/* IA32_PMCx, IA32_A_PMCx and IA32_FIXED_CTRx read counters. */
static int
pmu_test_sample_counter_of_msr(uint32_t msr)
{
    if (msr >= MODEL_MSR_PMC(0) && msr < MODEL_MSR_PMC(PMU_TEST_NR_GP)) {
        return (int)(msr - MODEL_MSR_PMC(0));
    }

    if (msr >= MODEL_MSR_A_PMC(0) && msr < MODEL_MSR_A_PMC(PMU_TEST_NR_GP)) {
        return (int)(msr - MODEL_MSR_A_PMC(0));
    }

    if (msr >= MODEL_MSR_FIXED_CTR(0) && msr < MODEL_MSR_FIXED_CTR(3)) {
        return (int)(MODEL_FIXED_BASE + msr - MODEL_MSR_FIXED_CTR(0));
    }

    return -1;
}

static struct perfmon_event *
pmu_test_sample_event(uint64_t id, unsigned int flags)
{
    return pmu_test_event(id, flags);
}

#define PMU_TEST_MSRS_GP(msr) \
    msr(0), msr(1), msr(2), msr(3), msr(4), msr(5), msr(6), msr(7)

/* Every PMU register of the model. */
static const uint32_t pmu_test_msrs[] = {
    PMU_TEST_MSRS_GP(MODEL_MSR_PMC), PMU_TEST_MSRS_GP(MODEL_MSR_A_PMC),
    PMU_TEST_MSRS_GP(MODEL_MSR_EVTSEL), MODEL_MSR_FIXED_CTR(0),
    MODEL_MSR_FIXED_CTR(1), MODEL_MSR_FIXED_CTR(2), MODEL_MSR_FIXED_CTRL,
    MODEL_MSR_GLOBAL_STATUS, MODEL_MSR_GLOBAL_CTRL, MODEL_MSR_GLOBAL_OVF,
    MODEL_MSR_DEBUGCTL, MODEL_MSR_PERF_CAP,
};

static const struct pmu_sample_env pmu_test_sample_env = {
    .retire = pmu_test_sample_retire,
    .pmi_pending = model_pmi_pending,
    .pmi_take = model_pmi_take,
    .counter = pmu_test_sample_counter,
    .counter_width = model_counter_width,
    .counter_of_msr = pmu_test_sample_counter_of_msr,
    .update_counter_reads = 1,
    .set_rdmsr_hook = model_set_rdmsr_hook,
    .event = pmu_test_sample_event,
    .thread = pmu_test_thread,
    .nr_accesses = model_nr_accesses,
    .nr_msr_reads = model_nr_reads,
    .nr_msr_writes = model_nr_writes,
    .msrs = pmu_test_msrs,
    .nr_msrs = ARRAY_SIZE(pmu_test_msrs),
};

#if PMU_TEST_HAS_PMI

/*
 * The sampling tests on a general counter (branches) and on fixed
 * counter 0 (instructions), through perfmon's API.
 */
HOST_TEST(sampling_cpu_event_one_sample_per_period_with_skid)
{
    pmu_test_begin();
    pmu_sample_check_cpu_event(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_sample_check_cpu_event(&pmu_test_sample_env, PERFMON_EV_INSTRUCTION);
    pmu_test_end();
}

HOST_TEST(sampling_thread_event_only_while_it_runs)
{
    pmu_test_begin();
    pmu_sample_check_thread_event(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_sample_check_thread_event(&pmu_test_sample_env,
                                  PERFMON_EV_INSTRUCTION);
    pmu_test_end();
}

/*
 * Two threads' samplers of one event on one counter, a general one
 * (branches) and fixed counter 0 (instructions): a switch between them
 * reads the counter once and presets it once, nothing else.
 */
HOST_TEST(switch_between_samplers_of_one_event_reads_once_presets_once)
{
    pmu_test_begin();
    pmu_sample_check_switch_samplers(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_sample_check_switch_samplers(&pmu_test_sample_env,
                                     PERFMON_EV_INSTRUCTION);
    pmu_test_end();
}

HOST_TEST(switch_between_samplers_when_the_counter_wraps_around_it)
{
    pmu_test_begin();
    pmu_sample_check_switch_samplers_wraps(&pmu_test_sample_env,
                                           PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(switch_between_samplers_after_a_longest_preset_wrapped)
{
    pmu_test_begin();
    pmu_sample_check_switch_longest_preset(&pmu_test_sample_env,
                                           PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(sampling_several_counters_in_one_pmi_one_sample_each)
{
    const unsigned int ids[3] = {
        PERFMON_EV_BRANCH, PERFMON_EV_INSTRUCTION, PERFMON_EV_CYCLE,
    };

    pmu_test_begin();
    pmu_sample_check_several_in_one_pmi(&pmu_test_sample_env, ids);
    pmu_test_end();
}

HOST_TEST(sampling_period_beyond_max_period_samples_once)
{
    pmu_test_begin();
    pmu_sample_check_long_period(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_sample_check_long_period(&pmu_test_sample_env,
                                 PERFMON_EV_INSTRUCTION);
    pmu_test_end();
}

HOST_TEST(sampling_refresh_and_set_period)
{
    pmu_test_begin();
    pmu_sample_check_refresh_and_period(&pmu_test_sample_env,
                                        PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(sampling_overflow_before_preset_is_discarded)
{
    pmu_test_begin();
    pmu_sample_check_overflow_before_preset(&pmu_test_sample_env,
                                            PERFMON_EV_BRANCH);
    pmu_sample_check_overflow_before_preset(&pmu_test_sample_env,
                                            PERFMON_EV_INSTRUCTION);
    pmu_test_end();
}

/*
 * The driver's half of the preset contract: outside the PMI, a preset of
 * a counting counter is the counter write alone, and the overflow bit
 * pending on the counter stays in the status, stale: the PMI already
 * requested clears it and reports nothing (the counter's top bit is set:
 * it has not wrapped since the preset); a status read outside the PMI
 * (overflow_consume) returns nothing and leaves the bit to the PMI; a
 * short period preset that way still overflows and interrupts. In the PMI the preset is the counter
 * write alone too (counting is off, the bit acknowledged before the
 * report).
 */
HOST_TEST(preset_discards_an_overflow_pending_on_its_counter)
{
    struct perfmon_event *event;
    unsigned long ctrl_writes, ovf_writes, spurious;
    unsigned int pmc_id;
    uint64_t bit, ctrl;
    unsigned long flags;

    pmu_test_begin();
    pmu_test_reports_reset();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    pmc_id = pmu_test_pmc_id(event);
    bit = 1ULL << pmc_id;
    ctrl = model_msr(MODEL_MSR_GLOBAL_CTRL);
    HOST_ASSERT(ctrl & bit);
    pmu_test_preset(event, 10);
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    HOST_ASSERT(model_pmi_pending());
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS) & bit, bit);

    ctrl_writes = model_nr_writes(MODEL_MSR_GLOBAL_CTRL);
    ovf_writes = model_nr_writes(MODEL_MSR_GLOBAL_OVF);
    HOST_ASSERT_EQ(pmu_test_preset(event, 2),
                   -2ULL & (PMU_TEST_GP_PERIOD - 1));
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS) & bit, bit);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), ctrl);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_GLOBAL_CTRL) - ctrl_writes, 0);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_GLOBAL_OVF) - ovf_writes, 0);

    /* The PMI requested by the discarded overflow reports nothing. */
    spurious = pmu_intel_nr_spurious(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(pmu_test_nr_reports, 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS) & bit, 0);

    /*
     * The same stale bit met by a status read outside the PMI: left to
     * the PMI, which tells it with counting off.
     */
    pmu_test_preset(event, 10);
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    pmu_test_preset(event, 2);
    flags = cpu_intr_save();
    HOST_ASSERT_EQ(pmu_test_dev()->ops->overflow_consume(bit), 0);
    cpu_intr_restore(flags);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS) & bit, bit);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS) & bit, 0);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 2);
    HOST_ASSERT_EQ(pmu_test_nr_reports, 0);

    /* The period of 2 is whole: its second event overflows, interrupts. */
    model_retire(MODEL_EV_BRANCHES, 1, MODEL_RING_KERN);
    HOST_ASSERT(!model_pmi_pending());
    model_retire(MODEL_EV_BRANCHES, 1, MODEL_RING_KERN);
    HOST_ASSERT(model_pmi_pending());

    /* Reloaded from the report: the counter write, nothing else. */
    pmu_test_reload = 40;
    ctrl_writes = model_nr_writes(MODEL_MSR_GLOBAL_CTRL);
    ovf_writes = model_nr_writes(MODEL_MSR_GLOBAL_OVF);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_nr_reports, 1);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_GLOBAL_CTRL) - ctrl_writes, 2);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_GLOBAL_OVF) - ovf_writes, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(pmc_id)),
                   -40ULL & (PMU_TEST_GP_PERIOD - 1));
    pmu_test_reports_reset();
    pmu_test_detach_all();
    pmu_test_end();
}

/* Retire two branches at the first GLOBAL_CTRL write that enables PMC0. */
static bool pmu_test_batch_hook_done;

static void
pmu_test_batch_hook(uint32_t msr, uint64_t value)
{
    if (msr == MODEL_MSR_GLOBAL_CTRL && (value & 1)
        && !pmu_test_batch_hook_done) {
        pmu_test_batch_hook_done = true;
        model_retire(MODEL_EV_BRANCHES, 2, MODEL_RING_KERN);
    }
}

/*
 * In one batch (a context switch), a counter started for one slot, then
 * stopped and started again for another: what a CPU does when another
 * CPU changed the schedule during the switch, and the next slot follows
 * it (the counter moves to a pinned sampling slot). Preset short, it
 * overflows between batch_end's write of IA32_PERF_GLOBAL_CTRL, which
 * enables it, and its clear of the stopped counters' overflow bits: the
 * overflow of the new use must stay (SDM vol. 3B, 21.2.2: a status bit
 * cleared is an overflow lost), and its PMI report the counter.
 */
HOST_TEST(batch_restart_of_a_stopped_counter_keeps_its_new_overflow)
{
    const struct perfmon_dev_ops *ops;
    uint64_t config = model_event_code(MODEL_EV_BRANCHES) | MODEL_EVTSEL_OS;
    unsigned long flags;
    uint64_t wraps;

    pmu_test_begin();
    pmu_test_reports_reset();
    ops = pmu_test_dev()->ops;
    pmu_test_batch_hook_done = false;

    wraps = model_nr_wraps(0);
    flags = cpu_intr_save();
    ops->batch_begin();
    ops->start(0, config);
    ops->stop(0);
    ops->start(0, config);
    ops->preset(0, 2);
    model_set_wrmsr_hook(pmu_test_batch_hook);
    ops->batch_end();
    model_set_wrmsr_hook(NULL);
    HOST_ASSERT(pmu_test_batch_hook_done);
    HOST_ASSERT_EQ(model_nr_wraps(0) - wraps, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS) & 1, 1);
    cpu_intr_restore(flags);

    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_nr_reports, 1);
    HOST_ASSERT_EQ(pmu_test_reports[0].pmc_id, 0);

    flags = cpu_intr_save();
    ops->stop(0);
    cpu_intr_restore(flags);
    pmu_test_reports_reset();
    pmu_test_end();
}

/*
 * A sampling period shorter than the device presets is EINVAL, at attach
 * and for a new period of an attached event, never silently raised: 2
 * at least for any event; on Haswell and Broadwell 128 at least for
 * INST_RETIRED.ALL (errata HSW11, BDM11: below 100 a wrong PMI or
 * count), whose remainders of a period are raised to 128 at a preset.
 */
HOST_TEST(sampling_period_below_the_device_minimum_is_einval)
{
    struct perfmon_sample_attr attr = { 0 };
    struct perfmon_session *session;
    struct perfmon_event *insns;
    uint64_t min = PMU_TEST_HASWELL ? 128 : 2;

    pmu_test_begin();
    pmu_sample_check_least_period(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    HOST_ASSERT_EQ(perfmon_session_create(&session, 4096), 0);
    attr.session = session;

    insns = pmu_test_event(model_event_code(MODEL_EV_INST_RETIRED_ALL),
                           PERFMON_EF_RAW | PERFMON_EF_KERN);
    attr.period = min - 1;
    HOST_ASSERT_EQ(perfmon_event_set_sampling(insns, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(insns, 0), EINVAL);
    attr.period = min;
    HOST_ASSERT_EQ(perfmon_event_set_sampling(insns, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(insns, 0), 0);
    HOST_ASSERT_EQ(perfmon_event_set_period(insns, min - 1), EINVAL);

    /* A remainder of 5 events is preset as the least period. */
    HOST_ASSERT_EQ(pmu_test_preset(insns, 5),
                   -MAX(min, 5) & (PMU_TEST_GP_PERIOD - 1));
    pmu_test_assert_no_fault();

    pmu_test_detach_all();
    HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    pmu_test_end();
}

#else /* !PMU_TEST_HAS_PMI */

/* Version 1 has no PMI, so no sampling: attach refuses a sampling event. */
HOST_TEST(sampling_event_attach_is_einval_without_pmi)
{
    pmu_test_begin();
    pmu_sample_check_refused(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_test_end();
}

#endif /* PMU_TEST_HAS_PMI */

/*
 * L1D_PEND_MISS.PENDING counts on general counter 2 only on Haswell and
 * Broadwell (the version 2 PMU here has Haswell's model): attached first,
 * it still gets counter 2 and counts there, the other events take the
 * other counters, and a second use of it (other rings) waits for that
 * counter rather than take one that does not count it; multiplexing
 * moves it to no other counter. Elsewhere it takes the first free one.
 */
HOST_TEST(constrained_event_gets_only_a_counter_that_counts_it)
{
    const uint64_t code = model_event_code(MODEL_EV_L1D_PEND_MISS);
    struct perfmon_event *pend, *other, *second;
    unsigned int pmc_id, width;

    pmu_test_begin();
    pend = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_KERN);

    if (!PMU_TEST_HASWELL) {
        HOST_ASSERT_EQ(pmu_test_pmc_id(pend), 0);
        pmu_test_detach_all();
        pmu_test_end();
        return;
    }

    HOST_ASSERT_EQ(pmu_test_pmc_id(pend), 2);
    other = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_pmc_id(other), 0);
    model_retire(MODEL_EV_L1D_PEND_MISS, 100, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(pend), 100);

    second = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_USER);
    HOST_ASSERT(!perfmon_dev_pmc(pmu_test_dev(),
                                 perfmon_event_pmc_index(second), &pmc_id,
                                 &width));

    /* Its turn: counter 2, taken from the first use. */
    HOST_ASSERT(perfmon_mux_rotate(pmu_test_dev()));
    HOST_ASSERT_EQ(pmu_test_pmc_id(second), 2);
    HOST_ASSERT(!perfmon_dev_pmc(pmu_test_dev(),
                                 perfmon_event_pmc_index(pend), &pmc_id,
                                 &width));
    model_retire(MODEL_EV_L1D_PEND_MISS, 10, MODEL_RING_USER);
    HOST_ASSERT_EQ(pmu_test_read(second), 10);
    HOST_ASSERT_EQ(pmu_test_read(pend), 100);
    pmu_test_detach_all();
    pmu_test_end();
}

/*
 * A pinned group that the counter count lets through but the counters
 * themselves cannot hold (the driver's constraints) is refused with
 * EAGAIN, and undone whole. Undone one member at a time, a schedule in
 * between saw members left pinned and unlinked that fit no better, and
 * asserted. First a fixed-counter event whose one counter is taken, then
 * more general-counter events than general counters.
 */
HOST_TEST(refused_pinned_group_is_undone_whole)
{
    struct perfmon_group group;
    struct perfmon_event *event;

    pmu_test_begin();

    if (PMU_TEST_FIXED_MASK & 0x4) {
        event = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE,
                                    PERFMON_EF_KERN | PERFMON_EF_PINNED);
        HOST_ASSERT_EQ(pmu_test_pmc_id(event), PMU_TEST_FIXED(2));
        HOST_ASSERT_EQ(perfmon_group_init(&group), 0);
        HOST_ASSERT_EQ(perfmon_group_add(&group,
                                         pmu_test_event(PERFMON_EV_REF_CYCLE,
                                                        PERFMON_EF_USER
                                                        | PERFMON_EF_PINNED)),
                       0);
        HOST_ASSERT_EQ(perfmon_group_add(&group,
                                         pmu_test_event(PERFMON_EV_INSTRUCTION,
                                                        PERFMON_EF_KERN)),
                       0);
        HOST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), EAGAIN);
        HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 1);
        pmu_test_detach_all();
    }

    if (PMU_TEST_NR_PMCS > PMU_TEST_NR_GP + 1
        && PMU_TEST_NR_GP + 1 <= PERFMON_GROUP_MAX) {
        (void)pmu_test_attach_cpu(0x11, PERFMON_EF_RAW | PERFMON_EF_KERN
                                        | PERFMON_EF_PINNED);
        HOST_ASSERT_EQ(perfmon_group_init(&group), 0);

        for (unsigned int i = 0; i < PMU_TEST_NR_GP + 1; i++) {
            event = pmu_test_event(0x21 + i, PERFMON_EF_RAW | PERFMON_EF_KERN
                                             | PERFMON_EF_PINNED);
            HOST_ASSERT_EQ(perfmon_group_add(&group, event), 0);
        }

        HOST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), EAGAIN);
        HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(pmu_test_dev()), 1);
        pmu_test_detach_all();
    }

    pmu_test_end();
}

HOST_TEST_MAIN()
