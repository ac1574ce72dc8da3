/*
 * Host tests of the Intel PMU driver: sampling support (preset,
 * max_period, the overflow reports) and the budget of a context switch.
 * The fixture and the PMU configurations are pmu_test_intel.h's;
 * test_pmu_intel.c says which binary has which PMU.
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

#if PMU_TEST_HAS_PMI


/* The counter an attached event's slot holds. */
static unsigned int
pmu_test_event_counter(const struct perfmon_event *event)
{
    unsigned int counter, width;

    HOST_ASSERT(perfmon_slot_counter(perfmon_dev_get(false),
                                perfmon_event_slot_index(event), &counter,
                                &width));
    return counter;
}

/* Report k was for event's counter, at ip and fp. */
static void
pmu_test_assert_report(unsigned int k, const struct perfmon_event *event,
                       uintptr_t ip, uintptr_t fp)
{
    HOST_ASSERT(k < pmu_test_nr_reports);
    HOST_ASSERT_EQ(pmu_test_reports[k].counter, pmu_test_event_counter(event));
    HOST_ASSERT(pmu_test_reports[k].has_ctx);
    HOST_ASSERT_EQ(pmu_test_reports[k].ctx.ip, ip);
    HOST_ASSERT_EQ(pmu_test_reports[k].ctx.fp, fp);
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
    gp_id = pmu_test_counter(gp);
    fixed_id = pmu_test_counter(fixed);
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
    overflows = perfmon_cpu_nr_overflows(0);
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
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(pmu_test_counter(event))), 0);
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
            if (pmu_test_reports[r].counter
                == pmu_test_event_counter(events[k])) {
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
    unsigned int counter;

    pmu_test_begin();
    pmu_test_reports_reset();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    counter = pmu_test_counter(event);
    pmis = pmu_intel_nr_pmis(0);
    wraps = model_nr_wraps(counter);
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
    HOST_ASSERT_EQ(model_nr_wraps(counter) - wraps, 2);

    /* The second overflow: its bit, and a PMI of its own. */
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << counter);
    HOST_ASSERT(model_pmi_pending());
    host_env_set_intr_ctx(0x30, 0x40);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 2);
    HOST_ASSERT_EQ(pmu_test_nr_reports, 2);
    pmu_test_assert_report(0, event, 0x10, 0x20);
    pmu_test_assert_report(1, event, 0x30, 0x40);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(counter)), -3ULL
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
    unsigned int max = MIN(4, pmu_test_dev()->nr_counters), n = 0;
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
    unsigned int max = pmu_test_dev()->nr_counters;
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

#if PMU_TEST_NR_COUNTERS >= 3
HOST_TEST(switch_between_threads_sharing_some_events_within_budget)
{
    pmu_test_switch_budget(1);
}
#endif
