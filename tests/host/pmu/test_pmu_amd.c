/*
 * Host tests of the AMD PMU driver (arch/x86/pmu/pmu_amd.c) through
 * perfmon (kern/perfmon*.c), both compiled unchanged, against the register
 * model of pmu_model_amd.c in the single-CPU environment of host_env.c.
 *
 * One PMU per binary (perfmon registers one device per process), chosen
 * by PMU_TEST_CONFIG:
 *   1  legacy: family 10h, four legacy counters, PMI by the top bit.
 *   2  extcore: Zen 1 (17h model 01h), six PerfCtrExtCore counters, PMI
 *      by the top bit.
 *   3  v2: Zen 3 (19h model 01h) under a hypervisor exposing PerfMonV2
 *      with five counters, whose PMI masks the LVT entry (KVM's bug).
 *   4  zen4: 19h model 11h, PerfMonV2 with six counters.
 *   5  poll: Zen 2 (17h model 31h), PerfCtrExtCore, pmu_amd.pmi=0.
 *   6  fam15h: Piledriver (15h model 02h), six PerfCtrExtCore counters,
 *      PMI by the top bit, events confined to counters (pmu_model_amd.h).
 *
 * Expected event codes come from the tables below, written from the PPRs
 * (and the facts sheet quoting them), not from the driver.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <pmu/pmu_amd.h>
#include <pmu/pmu_x86_test.h>
#include <machine/trap.h>

#include "host_env.h"
#include "host_test.h"
#include <pmu/model/pmu_model_amd.h>
#include "pmu_sample_test.h"
#include "pmu_test_amd.h"


/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

HOST_TEST(setup_registers_device_and_idles_pmu)
{
    const struct pmu_amd_info *info;
    struct perfmon_dev *dev;
    uint64_t value;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_test_setup_error, 0);
    HOST_ASSERT_EQ(pmu_test_boot_faults, 0);

    info = pmu_amd_get_info();
    HOST_ASSERT_EQ(info->family, pmu_test_config.family);
    HOST_ASSERT_EQ(info->model, pmu_test_config.model);
    HOST_ASSERT_EQ(info->gen, PMU_TEST_GEN);
    HOST_ASSERT_EQ(info->ext_core, pmu_test_config.ext_core);
    HOST_ASSERT_EQ(info->perfmon_v2, pmu_test_config.perfmon_v2);
    HOST_ASSERT_EQ(info->nr_counters, PMU_TEST_NR);
    HOST_ASSERT_EQ(pmu_amd_get_ovf_mode(), PMU_TEST_OVF);

    dev = pmu_test_dev();
    HOST_ASSERT_STREQ(dev->name, "pmu_amd");
    HOST_ASSERT_EQ(dev->sw, false);
    HOST_ASSERT_EQ(dev->nr_counters, PMU_TEST_NR);
    HOST_ASSERT_EQ(dev->min_width, PMU_TEST_WIDTH);
    HOST_ASSERT_EQ(dev->overflow_intr, PMU_TEST_HAS_PMI);
    HOST_ASSERT_EQ(perfmon_dev_poll_ticks(dev), PMU_TEST_POLL_TICKS);

    /* What firmware left running is off, legacy aliases included. */
    for (unsigned int n = 0; n < PMU_TEST_NR; n++) {
        pmu_test_assert_disabled(n);
    }

    for (unsigned int n = 0; n < 4; n++) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_LEGACY_CTL(n)), 0);
    }

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL), 0);
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
    }

    if (PMU_TEST_HAS_PMI) {
        HOST_ASSERT_EQ(model_amd_lvt_pmc(),
                       perfmon_nmi_enabled() ? MODEL_AMD_LVT_NMI : TRAP_PMI);
    } else {
        HOST_ASSERT(model_amd_lvt_pmc() & MODEL_AMD_LVT_MASKED);
    }

    value = ~0ULL;
    HOST_ASSERT_EQ(syscnt_lookup("pmu_amd_pmis/0", &value), 0);
    HOST_ASSERT_EQ(value, pmu_amd_nr_pmis(0));
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

HOST_TEST(generic_events_program_the_family_codes)
{
    unsigned int flags = PERFMON_EF_KERN | PERFMON_EF_USER;

    pmu_test_begin();

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        uint64_t code = pmu_test_generic[PMU_TEST_GEN][id];
        struct perfmon_event *event;
        unsigned int n;

        if (code == 0) {
            HOST_ASSERT_EQ(perfmon_event_check(id, flags), ENODEV);
            continue;
        }

        HOST_ASSERT_EQ(pmu_amd_generic_code(PMU_TEST_GEN, id), code);
        event = pmu_test_attach_cpu(id, flags);
        n = pmu_test_counter(event);
        pmu_test_assert_programmed(n, code, flags);
        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
        pmu_test_assert_disabled(n);
    }

    pmu_test_end();
}

HOST_TEST(ring_flags_select_os_and_usr)
{
    static const unsigned int rings[] = {
        PERFMON_EF_KERN, PERFMON_EF_USER, PERFMON_EF_KERN | PERFMON_EF_USER,
    };

    pmu_test_begin();

    for (unsigned int i = 0; i < ARRAY_SIZE(rings); i++) {
        struct perfmon_event *event;

        event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, rings[i]);
        pmu_test_assert_programmed(pmu_test_counter(event),
                                   PMU_TEST_INSTRUCTIONS, rings[i]);
        model_amd_retire(PMU_TEST_INSTRUCTIONS, 10, MODEL_AMD_RING_KERN);
        model_amd_retire(PMU_TEST_INSTRUCTIONS, 1000, MODEL_AMD_RING_USER);
        HOST_ASSERT_EQ(pmu_test_read(event),
                       ((rings[i] & PERFMON_EF_KERN) ? 10 : 0)
                       + ((rings[i] & PERFMON_EF_USER) ? 1000 : 0));
        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    }

    pmu_test_end();
}

HOST_TEST(raw_codes_with_modifiers_are_programmed)
{
    /* Event 0xC0, unit mask 0x01, edge, counter mask 2 with invert. */
    uint64_t code = 0xc0 | (0x01 << 8) | MODEL_AMD_EVTSEL_EDGE
                    | MODEL_AMD_EVTSEL_INV | MODEL_AMD_EVTSEL_CMASK(2);
    struct perfmon_event *event;

    pmu_test_begin();
    event = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_KERN);
    pmu_test_assert_programmed(pmu_test_counter(event), code,
                               PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * Event select bits 11:8 sit in PerfEvtSel bits 35:32 (AMD APM vol. 2,
 * 13.2.1): a raw code carrying them reaches the register whole.
 */
HOST_TEST(raw_code_with_extended_event_select_is_programmed)
{
    uint64_t code = (0x1ULL << 32) | 0x20 | (0x01 << 8);
    struct perfmon_event *event;

    pmu_test_begin();
    event = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_KERN);
    pmu_test_assert_programmed(pmu_test_counter(event), code,
                               PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(refused_raw_codes_touch_no_register)
{
    static const uint64_t refused[] = {
        0xc0 | (1U << 16),              /* USR */
        0xc0 | (1U << 17),              /* OS */
        0xc0 | (1U << 19),              /* reserved */
        0xc0 | (1U << 20),              /* INT */
        0xc0 | (1U << 21),              /* reserved */
        0xc0 | (1U << 22),              /* EN */
        0xc0 | (1U << 23),              /* invert without counter mask */
        0xc0 | (1ULL << 40),            /* guest only */
        0xc0 | (1ULL << 41),            /* host only */
    };
    struct model_amd_regs before, after;
    unsigned long writes;
    const char *diff;

    pmu_test_begin();
    model_amd_snapshot(&before);
    writes = model_amd_nr_all_writes();

    for (unsigned int i = 0; i < ARRAY_SIZE(refused); i++) {
        struct perfmon_event *event;

        HOST_ASSERT_EQ(perfmon_event_check(refused[i], PERFMON_EF_RAW
                                                       | PERFMON_EF_KERN),
                       EINVAL);
        event = pmu_test_event(refused[i], PERFMON_EF_RAW | PERFMON_EF_KERN);
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), EINVAL);
    }

    model_amd_snapshot(&after);
    diff = model_amd_regs_diff(&before, &after);

    if (diff != NULL) {
        HOST_FAIL("a refused code changed a register: %s", diff);
    }

    HOST_ASSERT_EQ(model_amd_nr_all_writes(), writes);
    pmu_test_end();
}

HOST_TEST(exhausted_counters_multiplex)
{
    struct perfmon_event *extra;
    unsigned int counter, width;
    uint32_t seen = 0;

    pmu_test_begin();

    for (unsigned int i = 0; i < PMU_TEST_NR; i++) {
        struct perfmon_event *event;

        event = pmu_test_attach_cpu(0x10 + i, PERFMON_EF_RAW
                                              | PERFMON_EF_KERN);
        seen |= 1U << pmu_test_counter(event);
    }

    HOST_ASSERT_EQ(seen, (1U << PMU_TEST_NR) - 1);

    /* It waits for its turn, then a rotation gives it a counter. */
    extra = pmu_test_event(0x40, PERFMON_EF_RAW | PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(extra, 0), 0);
    HOST_ASSERT(!perfmon_slot_counter(pmu_test_dev(),
                                 perfmon_event_slot_index(extra), &counter,
                                 &width));
    HOST_ASSERT(perfmon_mux_rotate(pmu_test_dev()));
    HOST_ASSERT(perfmon_slot_counter(pmu_test_dev(),
                                perfmon_event_slot_index(extra), &counter,
                                &width));

    for (unsigned int i = 0; i < pmu_test_nr_events; i++) {
        HOST_ASSERT_EQ(perfmon_event_detach(&pmu_test_events[i]), 0);
    }

    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Counting                                                            */
/* ------------------------------------------------------------------ */

HOST_TEST(cpu_event_counts_exactly_with_drift)
{
    struct perfmon_event *event;
    uint64_t before;
    unsigned int n;

    pmu_test_begin();
    model_amd_set_drift(3);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    before = model_amd_nr_counted(n);
    model_amd_retire(PMU_TEST_CYCLES, 12345, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event),
                   model_amd_counted_at_read(n) - before);
    HOST_ASSERT(model_amd_counted_at_read(n) - before > 12345);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(thread_event_counts_only_while_switched_in)
{
    struct perfmon_event *event;
    struct thread *thread;

    pmu_test_begin();
    thread = pmu_test_thread();
    event = pmu_test_event(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 100, MODEL_AMD_RING_KERN);
    host_env_switch_in(thread);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 700, MODEL_AMD_RING_KERN);
    host_env_switch_out(thread);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 100, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 700);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * Many wraps with drift: each round retires most of a period, so the
 * counter wraps every round or two; perfmon's count must equal what the
 * counter counted, exactly.
 */
HOST_TEST(hundreds_of_wraps_stay_exact)
{
    uint64_t before_pmis = pmu_amd_nr_pmis(0);
    uint64_t counted, wraps;
    struct perfmon_event *event;
    unsigned int n;

    pmu_test_begin();
    model_amd_set_drift(5);
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(1000), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    counted = model_amd_nr_counted(n);
    wraps = model_amd_nr_wraps(n);

    for (unsigned int round = 0; round < 300; round++) {
        model_amd_retire(PMU_TEST_CYCLES, PMU_TEST_PERIOD / 2 + round * 7,
                         MODEL_AMD_RING_KERN);
        pmu_test_catch_up();
    }

    HOST_ASSERT(model_amd_nr_wraps(n) - wraps >= 140);
    HOST_ASSERT_EQ(pmu_test_read(event),
                   model_amd_counted_at_read(n) - counted);

    if (PMU_TEST_HAS_PMI) {
        HOST_ASSERT(pmu_amd_nr_pmis(0) - before_pmis >= 140);
    }

    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(thread_counts_exactly_through_wraps_and_switches)
{
    struct perfmon_event *event;
    struct thread *thread;
    uint64_t expected = 0;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(50), 0);
    thread = pmu_test_thread();
    event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);

    for (unsigned int round = 0; round < 50; round++) {
        host_env_switch_in(thread);
        model_amd_retire(MODEL_AMD_EV_BRANCHES, 40 + round,
                         MODEL_AMD_RING_KERN);
        expected += 40 + round;
        pmu_test_catch_up();
        host_env_switch_out(thread);
        model_amd_retire(MODEL_AMD_EV_BRANCHES, 1000, MODEL_AMD_RING_KERN);
    }

    HOST_ASSERT_EQ(pmu_test_read(event), expected);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Overflow interrupt                                                  */
/* ------------------------------------------------------------------ */

HOST_TEST(pmi_acknowledges_overflow_and_reports_once)
{
    uint64_t pmis, spurious, wraps;
    struct perfmon_event *event;
    unsigned int n;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(100), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    wraps = model_amd_nr_wraps(n);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 150, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(model_amd_nr_wraps(n) - wraps, 1);
    HOST_ASSERT(model_amd_pmi_pending());

    if (PMU_TEST_V2) {
        HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & (1ULL << n));
    } else {
        HOST_ASSERT(!(model_amd_msr(pmu_test_msr_ctr(n)) & PMU_TEST_TOP_BIT));
    }

    pmis = pmu_amd_nr_pmis(0);
    spurious = pmu_amd_nr_spurious(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0), pmis + 1);
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0), spurious);

    /* Acknowledged, and the LVT entry open for the next one. */
    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
        pmu_test_assert_programmed(n, PMU_TEST_INSTRUCTIONS,
                                   PERFMON_EF_KERN);
    } else {
        HOST_ASSERT(model_amd_msr(pmu_test_msr_ctr(n)) & PMU_TEST_TOP_BIT);
        pmu_test_assert_programmed(n, PMU_TEST_INSTRUCTIONS,
                                   PERFMON_EF_KERN);
    }

    HOST_ASSERT_EQ(model_amd_lvt_pmc() & MODEL_AMD_LVT_MASKED, 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 150);

    /* A second PMI with nothing new reports nothing. */
    host_env_raise_trap(TRAP_PMI);
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0), spurious + 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 150);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(read_between_wrap_and_pmi_counts_wrap_once)
{
    struct perfmon_event *event;
    uint64_t spurious;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(100), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, PMU_TEST_PERIOD + 50,
                     MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());

    /* The interrupt is held back; the read consumes the overflow. */
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_PERIOD + 50);
    spurious = pmu_amd_nr_spurious(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0), spurious + 1);
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_PERIOD + 50);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(overflow_pending_at_detach_is_not_reported)
{
    struct perfmon_event *event, *next;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 20);

    /* The next user of the counter starts clean. */
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(0), 0);
    next = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    pmu_test_deliver_pmi();
    model_amd_retire(PMU_TEST_CYCLES, 5, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(next), 5);
    HOST_ASSERT_EQ(perfmon_event_detach(next), 0);
    pmu_test_end();
}

HOST_TEST(pmi_with_stuck_status_bit_gives_up_and_returns)
{
    struct perfmon_event *event;
    uint64_t giveups;
    unsigned int n;

    if (!PMU_TEST_V2) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    model_amd_set_stuck_status(1ULL << n);
    giveups = pmu_amd_nr_pmi_giveups(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_pmi_giveups(0), giveups + 1);

    /* Reported once, not once per pass; counting goes on. */
    HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL) & (1ULL << n));
    model_amd_set_stuck_status(0);
    model_amd_poke(MODEL_AMD_MSR_GLOBAL_STATUS, 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 20);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Switch budget                                                       */
/* ------------------------------------------------------------------ */

/*
 * A switch between two threads counting the same event (nothing else
 * keeps the counter in use) costs exactly one counter read, and no write
 * and no control register read (the driver's shadows stand in for them).
 * The overflow check adds one global status read per switch with
 * PerfMonV2, one more counter read (bit 47) in top-bit mode.
 */
HOST_TEST(switch_between_threads_with_same_events_only_reads)
{
    const unsigned long per_switch = 1 + (PMU_TEST_OVF == PMU_AMD_OVF_TOP_BIT);
    unsigned long writes, reads, counter_reads, status_reads = 0;
    struct perfmon_event *ea, *eb;
    struct thread *a, *b;
    unsigned long flags;

    pmu_test_begin();
    a = pmu_test_thread();
    b = pmu_test_thread();
    ea = pmu_test_event(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    eb = pmu_test_event(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(ea, a), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(eb, b), 0);
    host_env_switch_in(a);
    model_amd_retire(PMU_TEST_CYCLES, 10, MODEL_AMD_RING_KERN);

    writes = model_amd_nr_all_writes();
    reads = model_amd_nr_all_reads();
    counter_reads = model_amd_nr_counter_reads();

    if (PMU_TEST_V2) {
        status_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS);
    }

    flags = cpu_intr_save();
    perfmon_td_switch(&a->perfmon_td, &b->perfmon_td, cpu_get_tsc());
    cpu_intr_restore(flags);
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    flags = cpu_intr_save();
    perfmon_td_switch(&b->perfmon_td, &a->perfmon_td, cpu_get_tsc());
    cpu_intr_restore(flags);

    HOST_ASSERT_EQ(model_amd_nr_all_writes(), writes);
    counter_reads = model_amd_nr_counter_reads() - counter_reads;
    HOST_ASSERT_EQ(counter_reads, 2 * per_switch);

    if (PMU_TEST_V2) {
        status_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS)
                       - status_reads;
        HOST_ASSERT_EQ(status_reads, 2);
    }

    HOST_ASSERT_EQ(model_amd_nr_all_reads() - reads,
                   counter_reads + status_reads);

    model_amd_retire(PMU_TEST_CYCLES, 5, MODEL_AMD_RING_KERN);
    host_env_switch_out(a);
    HOST_ASSERT_EQ(pmu_test_read(ea), 15);
    HOST_ASSERT_EQ(pmu_test_read(eb), 20);
    HOST_ASSERT_EQ(perfmon_event_detach(ea), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(eb), 0);
    pmu_test_end();
}

/* Start and stop write, and never read, control registers. */
HOST_TEST(start_and_stop_never_read_control_registers)
{
    struct perfmon_event *event;
    unsigned long reads, ctl_reads, global_reads, counter_reads;
    unsigned long status_reads;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    reads = model_amd_nr_all_reads();
    ctl_reads = model_amd_nr_reads(pmu_test_msr_ctl(0));
    global_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_CTL);
    counter_reads = model_amd_nr_counter_reads();
    status_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);

    /* Attach and detach read counters and the status, nothing else. */
    HOST_ASSERT_EQ(model_amd_nr_all_reads() - reads,
                   model_amd_nr_counter_reads() - counter_reads
                   + model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS)
                   - status_reads);
    HOST_ASSERT_EQ(model_amd_nr_reads(pmu_test_msr_ctl(0)), ctl_reads);
    HOST_ASSERT_EQ(model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_CTL),
                   global_reads);

    pmu_test_end();
}

#ifdef PMU_TEST_FAM15H

/* Every attached event that holds a counter holds one that counts it. */
static void
pmu_test_assert_confined(struct perfmon_event *const *events,
                         unsigned int nr, uint32_t confined)
{
    unsigned int counter, width;

    for (unsigned int k = 0; k < nr; k++) {
        if ((confined & (1U << k))
            && perfmon_slot_counter(pmu_test_dev(),
                               perfmon_event_slot_index(events[k]), &counter,
                               &width)) {
            HOST_ASSERT(counter <= 2);
        }
    }
}

/*
 * Family 15h: cycles (PMCx076) counts on PERF_CTL[2:0] only. Attached
 * after instructions, branches and branch misses, which any counter
 * counts, it still gets one of those three, and counts exactly. Then
 * more events confined there than the three counters (PMCx0D0, PMCx080,
 * PMCx081): they take turns, and no rotation moves one to a counter
 * that does not count it; a floating-point one (PMCx003) gets one of
 * PERF_CTL[5:3] once the others leave room.
 */
HOST_TEST(fam15h_events_get_only_counters_that_count_them)
{
    struct perfmon_event *events[7], *fp;
    uint64_t before;

    pmu_test_begin();
    events[0] = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    events[1] = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    events[2] = pmu_test_attach_cpu(PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    events[3] = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT(pmu_test_counter(events[3]) <= 2);
    model_amd_retire(MODEL_AMD_EV_CYCLES, 1000, MODEL_AMD_RING_KERN);
    model_amd_retire(MODEL_AMD_EV_INSTRUCTIONS, 500, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(events[3]), 1000);
    HOST_ASSERT_EQ(pmu_test_read(events[0]), 500);

    events[4] = pmu_test_attach_cpu(MODEL_AMD_CODE(0x0d0, 0x00),
                                    PERFMON_EF_RAW | PERFMON_EF_KERN);
    events[5] = pmu_test_attach_cpu(MODEL_AMD_CODE(0x080, 0x00),
                                    PERFMON_EF_RAW | PERFMON_EF_KERN);
    events[6] = pmu_test_attach_cpu(MODEL_AMD_CODE(0x081, 0x00),
                                    PERFMON_EF_RAW | PERFMON_EF_KERN);
    pmu_test_assert_confined(events, 7, 0x78);

    for (unsigned int r = 0; r < 8; r++) {
        HOST_ASSERT(perfmon_mux_rotate(pmu_test_dev()));
        pmu_test_assert_confined(events, 7, 0x78);

        /* Cycles counts exactly while it holds a counter. */
        before = pmu_test_read(events[3]);
        model_amd_retire(MODEL_AMD_EV_CYCLES, 10, MODEL_AMD_RING_KERN);

        if (pmu_test_read(events[3]) != before) {
            HOST_ASSERT_EQ(pmu_test_read(events[3]) - before, 10);
            HOST_ASSERT(pmu_test_counter(events[3]) <= 2);
        }
    }

    for (unsigned int k = 0; k < 7; k++) {
        HOST_ASSERT_EQ(perfmon_event_detach(events[k]), 0);
    }

    fp = pmu_test_attach_cpu(MODEL_AMD_CODE(0x003, 0x01),
                             PERFMON_EF_RAW | PERFMON_EF_KERN);
    HOST_ASSERT(pmu_test_counter(fp) >= 3);
    model_amd_retire(MODEL_AMD_CODE(0x003, 0x01), 7, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(fp), 7);
    HOST_ASSERT_EQ(perfmon_event_detach(fp), 0);
    pmu_test_end();
}

#endif /* PMU_TEST_FAM15H */

HOST_TEST_MAIN()
