/*
 * Host tests of the Intel PMU driver: counting through perfmon, wraps,
 * start gaps, and counters that keep counting while the driver runs.
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
    HOST_ASSERT_EQ(pmu_test_counter(event), 0);

    /* Off every CPU: the slot is reserved but no counter runs. */
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_slots(0), 0);
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
    HOST_ASSERT_EQ(perfmon_event_slot_index(event_a),
                   perfmon_event_slot_index(event_b));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 1);

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
pmu_test_chunk(unsigned int counter)
{
    if (PMU_TEST_HAS_PMI) {
        return pmu_test_period(counter) / 2 + 777;
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
    unsigned int cpu_slot, td_slot, nr_pmis = 0, expected_pmis = 0;
    struct perfmon_event *cpu_event, *td_event;
    struct thread *thread;
    bool loaded = true;

    thread = pmu_test_thread();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(gap), 0);
    overflows = perfmon_cpu_nr_overflows(0);
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);

    cpu_event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    host_env_switch_in(thread);
    td_event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(td_event, thread), 0);
    cpu_slot = pmu_test_counter(cpu_event);
    td_slot = pmu_test_counter(td_event);
    cpu_chunk = pmu_test_chunk(cpu_slot);
    td_chunk = pmu_test_chunk(td_slot);
    HOST_ASSERT(cpu_chunk < pmu_test_period(cpu_slot));
    HOST_ASSERT(td_chunk < pmu_test_period(td_slot));
    cpu_wraps = model_nr_wraps(cpu_slot);
    td_wraps = model_nr_wraps(td_slot);
    pmu_test_ref_init(&cpu_ref, cpu_slot);
    pmu_test_ref_init(&td_ref, td_slot);
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
    HOST_ASSERT_EQ(model_nr_wraps(cpu_slot) - cpu_wraps, cpu_ref.wraps);
    HOST_ASSERT_EQ(model_nr_wraps(td_slot) - td_wraps, td_ref.wraps);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows,
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
    overflows = perfmon_cpu_nr_overflows(0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(host_env_nr_timers_pending(), 1);
    HOST_ASSERT_EQ(host_env_next_expiry(), now + PMU_TEST_POLL_TICKS);

    /* No interrupt: the wrap waits for the poll. */
    model_retire(MODEL_EV_BRANCHES, 150, MODEL_RING_KERN);
    HOST_ASSERT(!model_pmi_pending());
    host_env_advance(PMU_TEST_POLL_TICKS - 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);
    host_env_advance(1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows + 1);
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
    overflows = perfmon_cpu_nr_overflows(0);

    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(branches), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), PMU_TEST_GP_PERIOD - max_gap);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_PMC(0)) - pmc_writes,
                   PMU_TEST_FULL_WIDTH ? 0 : 1);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_A_PMC(0)) - a_pmc_writes,
                   PMU_TEST_FULL_WIDTH ? 1 : 0);

    if (PMU_TEST_FIXED_MASK & 1) {
        insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
        HOST_ASSERT_EQ(pmu_test_counter(insns), PMU_TEST_FIXED(0));
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
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows,
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
    unsigned int counter;

    pmu_test_begin();
    thread = pmu_test_thread();
    event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);
    counter = pmu_test_counter(event);

    for (uint64_t drift = 2; drift <= 6; drift++) {
        /* Wraps at the status check, or between it and the read. */
        const uint64_t gaps[] = {
            PMU_INTEL_START_GAP_MIN, drift, first_sync_accesses * drift,
        };

        for (unsigned int k = 0; k < ARRAY_SIZE(gaps); k++) {
            uint64_t wraps, start;

            HOST_ASSERT_EQ(pmu_intel_set_start_gap(gaps[k]), 0);
            model_set_drift(drift);
            wraps = model_nr_wraps(counter);
            host_env_switch_in(thread);
            start = model_counted_at_write(counter);

            /* The premise: the wrap comes by perfmon's first sync. */
            pmu_test_read(event);
            HOST_ASSERT_EQ(model_nr_wraps(counter) - wraps, 1);
            pmu_test_catch_up();

            model_retire(MODEL_EV_BRANCHES, 100 + drift, MODEL_RING_KERN);
            pmu_test_catch_up();
            host_env_switch_out(thread);
            pmu_test_catch_up();
            expected += model_counted_at_read(counter) - start;
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
        HOST_ASSERT_EQ(pmu_test_counter(insns), insns_id);
        insns_start = model_counted_at_read(insns_id);
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(branches, 0), 0);
        HOST_ASSERT_EQ(pmu_test_counter(branches), branches_id);
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
