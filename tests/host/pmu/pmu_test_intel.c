/*
 * The fixture of the Intel PMU driver's host tests, see pmu_test_intel.h.
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
#include <pmu/model/pmu_model.h>
#include "pmu_sample_test.h"

#include "pmu_test_intel.h"

#if PMU_TEST_VERSION == 1
static const struct model_config pmu_test_config = {
    .max_leaf = 0xd,
    .a_eax = MODEL_CPUID_A_EAX(1, 2, 40, 7),
    .a_ebx = 1U << 3,
};

#elif PMU_TEST_VERSION == 2
static const struct model_config pmu_test_config = {
    .max_leaf = 0xd,
    .cpuid1_eax = MODEL_CPUID1_EAX_FAM6(MODEL_HASWELL),
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(2, 4, 40, 6),
    .a_edx = MODEL_CPUID_A_EDX(3, 40),
};

#elif PMU_TEST_VERSION == 5
static const struct model_config pmu_test_config = {
    .max_leaf = 0x23,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
    .a_ebx = 1U << 4,
    .a_ecx = 0x5,
    .a_edx = MODEL_CPUID_A_EDX(0, 40),
    .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
};

#endif

/* The architectural event each fixed counter counts (SDM vol. 3B 21.2.2). */
static const struct model_event pmu_test_fixed_events[] = {
    MODEL_EV_INSTRUCTIONS,
    MODEL_EV_CYCLES,
    MODEL_EV_REF_CYCLES,
};

static bool pmu_test_booted;
int pmu_test_perfmon_setup_error;
int pmu_test_setup_error;
unsigned int pmu_test_boot_faults;
struct model_regs pmu_test_regs_before_setup;
struct model_regs pmu_test_regs_after_setup;

static struct perfmon_event pmu_test_events[PMU_TEST_MAX_EVENTS];
unsigned int pmu_test_nr_events;
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

struct perfmon_dev *
pmu_test_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);

    HOST_ASSERT(dev != NULL);
    return dev;
}

void
pmu_test_assert_no_fault(void)
{
    if (model_nr_faults() != 0) {
        HOST_FAIL("%u #GP, first: %s", model_nr_faults(),
                  model_first_fault());
    }
}

void
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

    pmu_sample_release(pmu_test_threads, pmu_test_nr_threads,
                       pmu_test_events, pmu_test_nr_events);

    pmu_test_nr_events = 0;
    pmu_test_nr_threads = 0;
    pmu_intel_set_start_gap(0);

    /* A poll timer with nothing left to poll lapses at its next firing. */
    host_env_advance(PMU_TEST_POLL_TICKS);
    model_clear_faults();
    pmu_test_dev();
}

bool
pmu_test_global_enabled(unsigned int counter)
{
    return (model_msr(MODEL_MSR_GLOBAL_CTRL) & (1ULL << counter)) != 0;
}

void
pmu_test_assert_disabled(unsigned int counter)
{
    if (PMU_TEST_HAS_PMI) {
        HOST_ASSERT(!pmu_test_global_enabled(counter));
    } else {
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(counter))
                       & MODEL_EVTSEL_EN, 0);
    }
}

void
pmu_test_end(void)
{
    pmu_test_assert_no_fault();
    HOST_ASSERT(!model_pmi_pending());
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_slots(0), 0);
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

struct perfmon_event *
pmu_test_event(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event;

    HOST_ASSERT(pmu_test_nr_events < PMU_TEST_MAX_EVENTS);
    event = &pmu_test_events[pmu_test_nr_events++];
    HOST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    return event;
}

struct perfmon_event *
pmu_test_attach_cpu(unsigned int id, unsigned int flags)
{
    struct perfmon_event *event = pmu_test_event(id, flags);

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    return event;
}

void
pmu_test_detach_all(void)
{
    for (unsigned int i = 0; i < pmu_test_nr_events; i++) {
        if (perfmon_event_attached(&pmu_test_events[i])) {
            HOST_ASSERT_EQ(perfmon_event_detach(&pmu_test_events[i]), 0);
        }
    }
}

struct thread *
pmu_test_thread(void)
{
    struct thread *thread;

    HOST_ASSERT(pmu_test_nr_threads < PMU_TEST_MAX_THREADS);
    thread = &pmu_test_threads[pmu_test_nr_threads++];
    host_env_thread_init(thread);
    return thread;
}

uint64_t
pmu_test_read(struct perfmon_event *event)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
    return value;
}

unsigned int
pmu_test_counter(const struct perfmon_event *event)
{
    struct perfmon_dev *dev = pmu_test_dev();

    unsigned int counter, width;

    HOST_ASSERT(perfmon_slot_counter(dev, perfmon_event_slot_index(event),
                                     &counter,
                                &width));
    return counter;
}

uint64_t
pmu_test_evtsel(uint64_t code, unsigned int flags)
{
    return code | MODEL_EVTSEL_EN
           | (PMU_TEST_HAS_PMI ? MODEL_EVTSEL_INT : 0)
           | ((flags & PERFMON_EF_KERN) ? MODEL_EVTSEL_OS : 0)
           | ((flags & PERFMON_EF_USER) ? MODEL_EVTSEL_USR : 0);
}

uint64_t
pmu_test_fixed_field(unsigned int flags)
{
    return (PMU_TEST_HAS_PMI ? MODEL_FIXED_PMI : 0)
           | ((flags & PERFMON_EF_KERN) ? MODEL_FIXED_OS : 0)
           | ((flags & PERFMON_EF_USER) ? MODEL_FIXED_USR : 0);
}

uint64_t
pmu_test_fixed_ctrl_field(unsigned int j)
{
    return (model_msr(MODEL_MSR_FIXED_CTRL) >> (4 * j)) & 0xf;
}

void
pmu_test_assert_programmed(unsigned int counter, uint64_t code,
                           unsigned int flags)
{
    struct perfmon_dev *dev = pmu_test_dev();

    HOST_ASSERT(model_counter_exists(counter));

    if (counter >= MODEL_FIXED_BASE) {
        unsigned int j = counter - MODEL_FIXED_BASE;

        HOST_ASSERT(j < 3);
        HOST_ASSERT_EQ(code, model_event_code(pmu_test_fixed_events[j]));
        HOST_ASSERT_EQ(pmu_test_fixed_ctrl_field(j),
                       pmu_test_fixed_field(flags));
    } else {
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(counter)),
                       pmu_test_evtsel(code, flags));
    }

    HOST_ASSERT_EQ(pmu_test_global_enabled(counter), PMU_TEST_HAS_PMI);

    for (unsigned int i = 0; i < dev->nr_counters; i++) {
        unsigned int id, width;

        if (perfmon_slot_counter(dev, i, &id, &width) && id == counter) {
            HOST_ASSERT_EQ(width, model_counter_width(counter));
        }
    }
}

void
pmu_test_deliver_pmi(void)
{
    HOST_ASSERT(model_pmi_take());
    host_env_raise_trap(TRAP_PMI);
}

void
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

uint64_t
pmu_test_period(unsigned int counter)
{
    return 1ULL << model_counter_width(counter);
}

void
pmu_test_ref_init(struct pmu_test_ref *ref, unsigned int counter)
{
    ref->period = pmu_test_period(counter);
    ref->pos = 0;
    ref->wraps = 0;
}

void
pmu_test_ref_start(struct pmu_test_ref *ref, uint64_t gap)
{
    ref->pos = (ref->period - gap) & (ref->period - 1);
}

void
pmu_test_ref_add(struct pmu_test_ref *ref, uint64_t n)
{
    ref->pos += n;

    while (ref->pos >= ref->period) {
        ref->pos -= ref->period;
        ref->wraps++;
    }
}

const struct pmu_test_generic pmu_test_generics[PMU_TEST_NR_GENERICS] = {
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

struct pmu_test_report pmu_test_reports[PMU_TEST_MAX_REPORTS];
unsigned int pmu_test_nr_reports;
uint64_t pmu_test_reload;

void __real_perfmon_sample_report_overflow(struct perfmon_dev *dev,
                                           unsigned int counter,
                                           const struct perfmon_intr_ctx *ctx);
void __wrap_perfmon_sample_report_overflow(struct perfmon_dev *dev,
                                           unsigned int counter,
                                           const struct perfmon_intr_ctx *ctx);

void
__wrap_perfmon_sample_report_overflow(struct perfmon_dev *dev,
                                      unsigned int counter,
                                      const struct perfmon_intr_ctx *ctx)
{
    if (pmu_test_nr_reports < PMU_TEST_MAX_REPORTS) {
        struct pmu_test_report *report;

        report = &pmu_test_reports[pmu_test_nr_reports];
        report->counter = counter;
        report->has_ctx = (ctx != NULL);

        if (ctx != NULL) {
            report->ctx = *ctx;
        }
    }

    pmu_test_nr_reports++;
    __real_perfmon_sample_report_overflow(dev, counter, ctx);

    if (pmu_test_reload != 0) {
        dev->ops->preset(counter, pmu_test_reload);
    }
}

#if PMU_TEST_HAS_PMI

void
pmu_test_reports_reset(void)
{
    pmu_test_nr_reports = 0;
    pmu_test_reload = 0;
}

uint64_t
pmu_test_preset(const struct perfmon_event *event, uint64_t n)
{
    unsigned long flags = cpu_intr_save();
    uint64_t value = pmu_test_dev()->ops->preset(pmu_test_counter(event), n);

    cpu_intr_restore(flags);
    return value;
}

#endif /* PMU_TEST_HAS_PMI */

struct model_event
pmu_test_model_event(unsigned int id)
{
    for (unsigned int i = 0; i < ARRAY_SIZE(pmu_test_generics); i++) {
        if (pmu_test_generics[i].id == id) {
            return pmu_test_generics[i].event;
        }
    }

    HOST_FAIL("no model event for generic event %u", id);
}
