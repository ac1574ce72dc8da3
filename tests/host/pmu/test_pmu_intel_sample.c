/*
 * Host tests of the Intel PMU driver: sampling end to end
 * (pmu_sample_test.c), and counter constraints.
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
/* Sampling end to end (pmu_sample_test.c)                             */
/* ------------------------------------------------------------------ */

static void
pmu_test_sample_retire(unsigned int id, uint64_t n)
{
    model_retire(pmu_test_model_event(id), n, MODEL_RING_KERN);
}

static uint64_t
pmu_test_sample_counter(unsigned int counter)
{
    return model_msr((counter >= MODEL_FIXED_BASE)
                     ? MODEL_MSR_FIXED_CTR(counter - MODEL_FIXED_BASE)
                     : MODEL_MSR_PMC(counter));
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

/* The events the tests that cover every kind of counter run with. */
static const unsigned int pmu_test_sample_ids[] = {
    PERFMON_EV_BRANCH, PERFMON_EV_INSTRUCTION,
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
    .begin = pmu_test_begin,
    .end = pmu_test_end,
    .can_sample = PMU_TEST_HAS_PMI,
    .ids = pmu_test_sample_ids,
    .nr_ids = ARRAY_SIZE(pmu_test_sample_ids),
    .least_period_test = NULL,      /* sampling_period_below_the_... */
    .refused_test = "sampling_event_attach_is_einval_without_pmi",
};

/*
 * The shared sampling tests (pmu_sample_table.c), through perfmon's API;
 * those that cover every kind of counter on a general counter (branches)
 * and on fixed counter 0 (instructions). Version 1 has no PMI, so no
 * sampling: its test is that attach refuses a sampling event.
 */
__attribute__((constructor)) static void
pmu_test_sample_register(void)
{
    pmu_sample_tests_register(&pmu_test_sample_env);
}

#if PMU_TEST_HAS_PMI

/*
 * The driver's half of the preset contract: outside the PMI, a preset of
 * a counting counter is the counter write alone, and the overflow bit
 * pending on the counter stays in the status, stale: the PMI already
 * requested clears it and reports nothing (the counter's top bit is set:
 * it has not wrapped since the preset); a status read outside the PMI
 * (overflow_consume) returns nothing and leaves the bit to the PMI; a
 * short period preset that way still overflows and interrupts. In the PMI
 * the preset is the counter write alone too (counting is off, the bit
 * acknowledged before the report).
 */
HOST_TEST(preset_discards_an_overflow_pending_on_its_counter)
{
    struct perfmon_event *event;
    unsigned long ctrl_writes, ovf_writes, spurious;
    unsigned int counter;
    uint64_t bit, ctrl;
    unsigned long flags;

    pmu_test_begin();
    pmu_test_reports_reset();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    counter = pmu_test_counter(event);
    bit = 1ULL << counter;
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
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(counter)),
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
    HOST_ASSERT_EQ(pmu_test_reports[0].counter, 0);

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
    unsigned int counter, width;

    pmu_test_begin();
    pend = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_KERN);

    if (!PMU_TEST_HASWELL) {
        HOST_ASSERT_EQ(pmu_test_counter(pend), 0);
        pmu_test_detach_all();
        pmu_test_end();
        return;
    }

    HOST_ASSERT_EQ(pmu_test_counter(pend), 2);
    other = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(other), 0);
    model_retire(MODEL_EV_L1D_PEND_MISS, 100, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(pend), 100);

    second = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_USER);
    HOST_ASSERT(!perfmon_slot_counter(pmu_test_dev(),
                                 perfmon_event_slot_index(second), &counter,
                                 &width));

    /* Its turn: counter 2, taken from the first use. */
    HOST_ASSERT(perfmon_mux_rotate(pmu_test_dev()));
    HOST_ASSERT_EQ(pmu_test_counter(second), 2);
    HOST_ASSERT(!perfmon_slot_counter(pmu_test_dev(),
                                 perfmon_event_slot_index(pend), &counter,
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
        HOST_ASSERT_EQ(pmu_test_counter(event), PMU_TEST_FIXED(2));
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
        HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 1);
        pmu_test_detach_all();
    }

    if (PMU_TEST_NR_COUNTERS > PMU_TEST_NR_GP + 1
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
        HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 1);
        pmu_test_detach_all();
    }

    pmu_test_end();
}
