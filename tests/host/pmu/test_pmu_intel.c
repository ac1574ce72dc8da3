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
#include <pmu/model/pmu_model.h>
#include "pmu_sample_test.h"

#include "pmu_test_intel.h"

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
    HOST_ASSERT_EQ(dev->nr_counters, PMU_TEST_NR_COUNTERS);
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
    HOST_ASSERT_EQ(value, perfmon_cpu_nr_overflows(0));

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

HOST_TEST(generic_events_program_documented_codes)
{
    pmu_test_begin();

    for (unsigned int k = 0; k < ARRAY_SIZE(pmu_test_generics); k++) {
        const struct pmu_test_generic *row = &pmu_test_generics[k];
        struct perfmon_event *event;
        unsigned int counter;

        event = pmu_test_event(row->id, PERFMON_EF_KERN);

        if (row->alone < 0) {
            HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), -row->alone);
            continue;
        }

        HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
        counter = pmu_test_counter(event);
        HOST_ASSERT_EQ(counter, row->alone);
        pmu_test_assert_programmed(counter, model_event_code(row->event),
                                   PERFMON_EF_KERN);

        /* Counted: the event in the kernel; not: user ring, decoy. */
        model_retire(row->event, 1000, MODEL_RING_KERN);
        model_retire(row->event, 50, MODEL_RING_USER);
        model_retire(row->decoy, 70, MODEL_RING_KERN);
        HOST_ASSERT_EQ(pmu_test_read(event), 1000);

        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
        pmu_test_assert_disabled(counter);
        HOST_ASSERT_EQ(pmu_test_read(event), 1000);
    }

    pmu_test_end();
}

/* Whether an attached event's slot holds a counter (not multiplexed out). */
static bool
pmu_test_holds_counter(const struct perfmon_event *event)
{
    unsigned int counter, width;

    return perfmon_slot_counter(pmu_test_dev(), perfmon_event_slot_index(event),
                           &counter, &width);
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
        HOST_ASSERT_EQ(pmu_test_counter(events[k]),
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
        insns_id = pmu_test_counter(insns);
        raw_id = pmu_test_counter(raw);
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

    HOST_ASSERT_EQ(pmu_test_counter(kern), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_counter(user), 0);
    HOST_ASSERT_EQ(pmu_test_counter(both), 1);
    HOST_ASSERT_EQ(perfmon_event_slot_index(kern2),
                   perfmon_event_slot_index(kern));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 3);
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
        HOST_ASSERT_EQ(pmu_test_counter(raw), 0);
        kern = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_KERN);
        HOST_ASSERT_EQ(perfmon_event_slot_index(kern),
                       perfmon_event_slot_index(raw));
        pmu_test_detach_all();
        pmu_test_end();
        return;
    }

    HOST_ASSERT_EQ(pmu_test_counter(raw), 0);
    pmu_test_assert_programmed(0, code, PERFMON_EF_KERN);
    kern = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(kern), PMU_TEST_FIXED(2));
    HOST_ASSERT(perfmon_event_slot_index(kern)
                != perfmon_event_slot_index(raw));

    /* Fixed counter 2 taken: the user event waits (multiplexed). */
    model_snapshot(&before);
    user = pmu_test_event(PERFMON_EV_REF_CYCLE, PERFMON_EF_USER);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(user, 0), 0);
    model_snapshot(&after);
    pmu_test_assert_regs_eq(&before, &after);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 3);
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
        HOST_ASSERT_EQ(pmu_test_counter(event), pmu_test_gp_order(i));
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
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), PMU_TEST_NR_GP + 1);
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
            HOST_ASSERT_EQ(pmu_test_counter(event), result);
            HOST_ASSERT(model_counter_exists(pmu_test_counter(event)));
        }
    }

    /*
     * A rotation gives the waiting raw event, first in turn, a general
     * counter, programmed with its code, and it counts from there.
     */
    HOST_ASSERT(perfmon_mux_rotate(dev));
    HOST_ASSERT(pmu_test_holds_counter(waiting));
    HOST_ASSERT(pmu_test_counter(waiting) < PMU_TEST_NR_GP);
    pmu_test_assert_programmed(pmu_test_counter(waiting),
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
    insns_id = pmu_test_counter(insns);
    branches_id = pmu_test_counter(branches);
    HOST_ASSERT_EQ(perfmon_event_slot_index(branches2),
                   perfmon_event_slot_index(branches));

    /* A second fixed counter, which must outlive its neighbour. */
    if (PMU_TEST_FIXED_MASK & 0x4) {
        ref = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE,
                                  PERFMON_EF_KERN | PERFMON_EF_USER);
        HOST_ASSERT_EQ(pmu_test_counter(ref), PMU_TEST_FIXED(2));
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

    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 0);
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
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_slots(0), 0);
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
        HOST_ASSERT_EQ(pmu_test_counter(event), 0);
        pmu_test_assert_programmed(0, id, PERFMON_EF_KERN);
        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    }

    host_env_switch_out(thread);
    pmu_test_end();
}

HOST_TEST_MAIN()
