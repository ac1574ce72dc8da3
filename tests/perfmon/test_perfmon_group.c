/*
 * perfmon groups with the software PMU: every misuse of a group is refused
 * and changes nothing, a group takes counters as a unit, and the scaling
 * and time conversion are exact. What groups and events read (enable,
 * disable, reset, times, consistent group reads) is in
 * test_perfmon_group_read.c, same suite.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "perfmon_util.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* Every misuse of a group is refused and leaves everything as it was. */
TEST_DEFINE(perfmon_group, group_errors_change_nothing)
{
    struct perfmon_dev *soft = test_pm_dev();
    struct perfmon_group group, other, garbage;
    struct perfmon_event a, b, alone, hw, ev_garbage;
    struct perfmon_group_value value;
    struct thread *self = thread_self();
    unsigned int refs = self->refs;

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(perfmon_group_init(NULL), EINVAL);
    memset(&garbage, 0xa5, sizeof(garbage));
    memset(&ev_garbage, 0xa5, sizeof(ev_garbage));
    TEST_ASSERT_EQ(perfmon_group_add(&garbage, &a), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_attach(&garbage, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(&garbage, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_detach(&garbage), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_read(&garbage, &value), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_enable(&garbage), EINVAL);

    /* Empty, never attached. */
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_init(&other), 0);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_enable(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_disable(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_reset(&group), EINVAL);

    /* Bad events. */
    TEST_ASSERT_EQ(perfmon_group_add(&group, NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &ev_garbage), EINVAL);
    test_pm_init_emit(&a, 0);
    test_pm_init_emit(&b, 1);
    test_pm_init_emit(&alone, 2);
    TEST_ASSERT_EQ(perfmon_event_attach(&alone, self), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &alone), EINVAL);   /* attached */
    TEST_ASSERT_EQ(perfmon_group_add(&group, &a), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &a), EINVAL);       /* twice */
    TEST_ASSERT_EQ(perfmon_group_add(&other, &a), EINVAL);       /* taken */

    /*
     * Mixed devices: a hardware event in a software group or, in a model
     * boot, a software event in a hardware group.
     */
    if (test_pm_on_model()) {
        test_pm_init(&hw, PMU_SOFT_EV_TICK);
    } else {
        TEST_ASSERT_EQ(perfmon_event_init(&hw, PERFMON_EV_CYCLE,
                                          PERFMON_EF_KERN), 0);
    }

    TEST_ASSERT_EQ(perfmon_group_add(&group, &hw), EINVAL);
    TEST_ASSERT_EQ(group.nr_events, 1);
    TEST_ASSERT(hw.group == NULL);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &b), 0);

    /* Members go through their group. */
    TEST_ASSERT_EQ(perfmon_event_attach(&a, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&a, 0), EINVAL);

    /* Bad targets. */
    TEST_ASSERT_EQ(perfmon_group_attach(&group, NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, cpu_count()), EINVAL);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);
    TEST_ASSERT_EQ(self->refs, refs + 1);

    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), 0);
    TEST_ASSERT_EQ(self->refs, refs + 3);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 3);

    /* Attached: no second attach, no add, no member alone, no init. */
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_init(&group), EINVAL);
    test_pm_init(&hw, PMU_SOFT_EV_TICK);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &hw), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_detach(&a), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_disable(&b), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_enable(&b), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_init(&a, PMU_SOFT_EV_TICK,
                                      PERFMON_EF_SW), EINVAL);
    TEST_ASSERT_EQ(self->refs, refs + 3);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 3);

    /* Still counting, read at one instant. */
    pmu_soft_emit_channel(0, 3);
    pmu_soft_emit_channel(1, 4);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.nr_events, 2);
    TEST_ASSERT_EQ(value.counts[0], 3);
    TEST_ASSERT_EQ(value.counts[1], 4);
    TEST_ASSERT_EQ(perfmon_event_reset(&b), 0);     /* a member alone */
    TEST_ASSERT_EQ(perfmon_event_read(&b), 0);

    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_enable(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);  /* finals */
    TEST_ASSERT_EQ(value.counts[0], 3);
    TEST_ASSERT_EQ(value.counts[1], 0);
    TEST_ASSERT_EQ(self->refs, refs + 1);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);

    /* A member initialized again has left: the group cannot attach. */
    test_pm_init_emit(&b, 1);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);
    TEST_ASSERT_EQ(self->refs, refs + 1);

    TEST_ASSERT_EQ(perfmon_event_detach(&alone), 0);
    TEST_ASSERT_EQ(self->refs, refs);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
}

/*
 * A member initialized again and added back goes back to its place: the
 * group keeps its size, attaches the member once (one slot reference, one
 * thread reference, both dropped at detach) and reads one count per
 * member, in add order. Initialized again and not added back, it fails
 * the group's attach, which then changes nothing.
 */
TEST_DEFINE(perfmon_group, member_initialized_again_is_added_back)
{
    static struct perfmon_event many[PERFMON_GROUP_MAX];
    struct perfmon_dev *soft = test_pm_dev();
    struct perfmon_event events[3];
    const unsigned int nr = ARRAY_SIZE(events);
    struct perfmon_group group, copy;
    struct perfmon_group_value value;
    struct thread *self = thread_self();
    unsigned int refs = self->refs;

    /* CPU 0 runs this thread: its CPU group counts this thread's units. */
    thread_set_affinity(self, 1ULL << 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    test_group_detach_on_failure(&group);

    for (unsigned int i = 0; i < nr; i++) {
        test_pm_init_emit(&events[i], i);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    /* Attached and detached once: its members are detached events. */
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), 0);
    pmu_soft_emit_channel(1, 9);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(self->refs, refs);

    /* Not added back: the attach is refused and takes nothing. */
    test_pm_init_emit(&events[1], 1);
    copy = group;
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), EINVAL);
    TEST_ASSERT_EQ(memcmp(&group, &copy, sizeof(group)), 0);

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT(!perfmon_event_attached(&events[i]));
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(self->refs, refs);

    /* Added back, it takes its old place, once; so does the leader. */
    TEST_ASSERT_EQ(perfmon_group_add(&group, &events[1]), 0);
    TEST_ASSERT_EQ(group.nr_events, nr);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &events[1]), EINVAL);
    test_pm_init_emit(&events[0], 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &events[0]), 0);
    TEST_ASSERT_EQ(group.nr_events, nr);

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT(group.events[i] == &events[i]);
    }

    /* A thread group, then a CPU group: each member counts once. */
    for (unsigned int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            TEST_ASSERT_EQ(perfmon_group_attach(&group, self), 0);
            TEST_ASSERT_EQ(self->refs, refs + nr);
        } else {
            TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), 0);
            TEST_ASSERT_EQ(self->refs, refs);
        }

        TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), nr);

        for (unsigned int i = 0; i < nr; i++) {
            pmu_soft_emit_channel(i, 4 + i + pass);
        }

        TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
        TEST_ASSERT_EQ(value.nr_events, nr);

        for (unsigned int i = 0; i < nr; i++) {
            TEST_ASSERT_EQ(value.counts[i], 4 + i + pass);
        }

        TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
        TEST_ASSERT_EQ(self->refs, refs);
        TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
        TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);  /* finals */

        for (unsigned int i = 0; i < nr; i++) {
            TEST_ASSERT_EQ(value.counts[i], 4 + i + pass);
            TEST_ASSERT_EQ(perfmon_event_read(&events[i]), 4 + i + pass);
        }
    }

    /* A full group takes its member back too: its place is kept. */
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int i = 0; i < PERFMON_GROUP_MAX; i++) {
        test_pm_init_emit(&many[i], i % 2);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &many[i]), 0);
    }

    test_pm_init_emit(&many[5], 2);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &many[5]), 0);
    TEST_ASSERT_EQ(group.nr_events, PERFMON_GROUP_MAX);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), 0);
    TEST_ASSERT_EQ(self->refs, refs + PERFMON_GROUP_MAX);
    pmu_soft_emit_channel(0, 5);
    pmu_soft_emit_channel(1, 6);
    pmu_soft_emit_channel(2, 7);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.nr_events, PERFMON_GROUP_MAX);

    for (unsigned int i = 0; i < PERFMON_GROUP_MAX; i++) {
        TEST_ASSERT_EQ(value.counts[i], (i == 5) ? 7 : (i % 2) ? 6 : 5);
    }

    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(self->refs, refs);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    thread_set_affinity(self, THREAD_AFFINITY_ALL);
}

/* Whether an attached event's slot holds a counter (not multiplexed out). */
static bool
test_pg_holds_counter(const struct perfmon_event *event)
{
    unsigned int counter, width;

    return perfmon_slot_counter(test_pm_soft_dev(),
                                perfmon_event_slot_index(event), &counter,
                                &width);
}

/*
 * A group with more distinct raw events than the device has counters can
 * never be attached (E2BIG); one that fits but finds counters taken waits
 * for its turn, all its events together; one that could not have a turn
 * while the pinned events hold their counters, or that is pinned and
 * finds no room, gets EAGAIN; errors take nothing. Equal raw events share
 * a counter.
 */
TEST_DEFINE(perfmon_group, group_too_big_or_no_room)
{
    struct perfmon_dev *soft = test_pm_soft_dev();
    static struct perfmon_event events[PERFMON_GROUP_MAX + 1];
    static struct perfmon_event blockers[PERFMON_MAX_COUNTERS];
    static const unsigned int ids[] = {
        PMU_SOFT_EV_CSWITCH, PMU_SOFT_EV_MIGRATION, PMU_SOFT_EV_TICK,
        PMU_SOFT_EV_XCALL, PMU_SOFT_EV_EMIT, PMU_SOFT_EV_EMIT + 1,
        PMU_SOFT_EV_EMIT + 2, PMU_SOFT_EV_EMIT + 3, PMU_SOFT_EV_EMIT + 4,
        PMU_SOFT_EV_EMIT + 5, PMU_SOFT_EV_EMIT + 6, PMU_SOFT_EV_EMIT + 7,
    };
    struct perfmon_group group;
    struct perfmon_group_value value;
    struct thread *self = thread_self();
    unsigned int refs = self->refs;
    unsigned int nr_counters = soft->nr_counters;

    TEST_ASSERT_LT(nr_counters, ARRAY_SIZE(ids));

    /* nr_counters + 1 distinct raw events. */
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int i = 0; i <= nr_counters; i++) {
        test_pm_init(&events[i], ids[i]);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), E2BIG);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), E2BIG);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(self->refs, refs);
    TEST_ASSERT(!perfmon_event_attached(&events[0]));

    /* PERFMON_GROUP_MAX events on two raw events fit; one more does not. */
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int i = 0; i <= PERFMON_GROUP_MAX; i++) {
        test_pm_init(&events[i], PMU_SOFT_EV_EMIT + (i % 2));
    }

    for (unsigned int i = 0; i < PERFMON_GROUP_MAX; i++) {
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_group_add(&group, &events[PERFMON_GROUP_MAX]),
                   E2BIG);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 2);
    pmu_soft_emit_channel(0, 5);
    pmu_soft_emit_channel(1, 6);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);

    for (unsigned int i = 0; i < PERFMON_GROUP_MAX; i++) {
        TEST_ASSERT_EQ(value.counts[i], (i % 2) ? 6 : 5);
    }

    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(self->refs, refs);

    /*
     * Every counter but one pinned by other raw events: a group of two new
     * ones could never hold both: EAGAIN, and it releases what it took.
     */
    for (unsigned int i = 0; i < nr_counters - 1; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&blockers[i], ids[i],
                                          PERFMON_EF_SW | PERFMON_EF_PINNED),
                       0);
        TEST_ASSERT_EQ(perfmon_event_attach(&blockers[i], self), 0);
    }

    /* Pinned (the second time), it gets EAGAIN all the same. */
    for (unsigned int pin = 0; pin < 2; pin++) {
        TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
        TEST_ASSERT_EQ(perfmon_event_init(&events[0], ids[nr_counters - 1],
                                          PERFMON_EF_SW
                                          | (pin ? PERFMON_EF_PINNED : 0)),
                       0);
        test_pm_init(&events[1], ids[nr_counters]);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[0]), 0);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[1]), 0);
        TEST_ASSERT_EQ(perfmon_group_attach(&group, self), EAGAIN);
        TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), EAGAIN);
        TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), nr_counters - 1);
        TEST_ASSERT_EQ(self->refs, refs + nr_counters - 1);
        TEST_ASSERT(!perfmon_event_attached(&events[0]));
    }

    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), EINVAL);

    /* Room again: the same group attaches, on counters. */
    TEST_ASSERT_EQ(perfmon_event_detach(&blockers[0]), 0);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, self), 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), nr_counters);
    TEST_ASSERT(test_pg_holds_counter(&events[0]));
    TEST_ASSERT(test_pg_holds_counter(&events[1]));
    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);

    for (unsigned int i = 1; i < nr_counters - 1; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&blockers[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(self->refs, refs);
}

/* Hardware groups need a PMU; sampling events stay out of groups. */
TEST_DEFINE(perfmon_group, hardware_and_sampling_events)
{
    struct perfmon_sample_attr attr = { .period = 10 };
    struct perfmon_session *session;
    struct perfmon_group group;
    struct perfmon_event hw, sampler;
    uint64_t count;

    if (test_pm_on_model() && !test_pm_intr_mode()) {
        test_skip("a modelled PMU samples only with its overflow interrupt "
                  "(polled here)");
    }

    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    TEST_ASSERT_EQ(perfmon_event_init(&hw, PERFMON_EV_INSTRUCTION,
                                      PERFMON_EF_KERN), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &hw), 0);

    if (perfmon_dev_get(false) == NULL) {
        TEST_ASSERT_EQ(perfmon_group_attach(&group, thread_self()), ENODEV);
        TEST_ASSERT(!perfmon_event_attached(&hw));
    }

    TEST_ASSERT_EQ(perfmon_session_create(&session, 4096), 0);
    attr.session = session;
    test_pm_init_emit(&sampler, 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&sampler, &attr), 0);
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &sampler), EINVAL);

    /* A member cannot become a sampling event. */
    test_pm_init_emit(&hw, 1);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &hw), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&hw, &attr), EINVAL);

    /* A sampling event is reset, never disabled or enabled. */
    TEST_ASSERT_EQ(perfmon_event_attach(&sampler, thread_self()), 0);
    pmu_soft_emit(4);
    TEST_ASSERT_EQ(perfmon_event_disable(&sampler), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_enable(&sampler), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read(&sampler), 4);
    TEST_ASSERT_EQ(perfmon_event_reset(&sampler), 0);
    pmu_soft_emit(25);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&sampler, &count), 0);
    TEST_ASSERT_EQ(count, 2);       /* periods go on: 29 units */
    TEST_ASSERT_EQ(perfmon_event_read(&sampler), 25);
    TEST_ASSERT_EQ(perfmon_event_detach(&sampler), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Scaling                                                             */
/* ------------------------------------------------------------------ */

TEST_DEFINE(perfmon_group, scale_and_time_conversion)
{
    uint64_t freq = cpu_get_freq();

    TEST_ASSERT_EQ(perfmon_scale(100, 200, 100), 200);
    TEST_ASSERT_EQ(perfmon_scale(100, 300, 200), 150);
    TEST_ASSERT_EQ(perfmon_scale(7, 10, 3), 23);            /* floor */
    TEST_ASSERT_EQ(perfmon_scale(100, 100, 100), 100);
    TEST_ASSERT_EQ(perfmon_scale(100, 100, 0), 0);          /* never ran */
    TEST_ASSERT_EQ(perfmon_scale(100, 0, 0), 0);
    TEST_ASSERT_EQ(perfmon_scale(100, 90, 100), 100);       /* running > */
    TEST_ASSERT_EQ(perfmon_scale(0, 1000, 1), 0);

    /* Products beyond 64 bits: 3^30 * (10^9 + 7) / 10^9. */
    TEST_ASSERT_EQ(perfmon_scale(205891132094649ULL, 1000000007ULL,
                                 1000000000ULL), 205891133535886ULL);
    TEST_ASSERT_EQ(perfmon_scale(UINT64_MAX, UINT64_MAX, UINT64_MAX - 1),
                   UINT64_MAX);                             /* saturates */
    TEST_ASSERT_EQ(perfmon_scale(UINT64_MAX / 2, 2, 1), UINT64_MAX - 1);
    TEST_ASSERT_EQ(perfmon_scale(1ULL << 63, 1ULL << 62, 1ULL << 63),
                   1ULL << 63);
    TEST_ASSERT_EQ(perfmon_scale(1ULL << 62, 3, 2), 3ULL << 61);

    TEST_ASSERT_NE(freq, 0);
    TEST_ASSERT_EQ(perfmon_tsc_to_ns(0), 0);
    TEST_ASSERT_EQ(perfmon_tsc_to_ns(freq), 1000000000ULL);
    TEST_ASSERT_EQ(perfmon_tsc_to_ns(freq * 3600), 3600000000000ULL);
    TEST_ASSERT_EQ(perfmon_tsc_to_ns(freq / 2),
                   (freq % 2) ? 499999999ULL : 500000000ULL);
}
