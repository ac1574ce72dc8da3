/*
 * Host tests of perfmon's multiplexing, continued (with
 * test_perfmon_mux.c, whose header states the method, in the same
 * binaries): groups as units and refused attaches that move no counter,
 * regressions found by the QEMU suite and by review, constraints, exact
 * times, and sampling events beside counting ones.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <machine/cpu.h>

#include "host_env.h"
#include "host_test.h"
#include "mux_fixture.h"
#include "pmu_fake.h"

/* ------------------------------------------------------------------ */
/* Groups                                                              */
/* ------------------------------------------------------------------ */

/* Group g of events first to first + nr - 1 (flags added), attached. */
static struct perfmon_group *
px_group(unsigned int g, unsigned int first, unsigned int nr,
         unsigned int flags)
{
    struct perfmon_group *group = &px_groups[g];

    HOST_ASSERT_EQ(perfmon_group_init(group), 0);

    for (unsigned int i = first; i < first + nr; i++) {
        HOST_ASSERT_EQ(perfmon_group_add(group, px_event(i, flags)), 0);
    }

    return group;
}

/*
 * Two groups of S / 2 + 1 raw events cannot hold counters together: they
 * take turns as units, all of a group's events counting or none, exactly
 * every other step, and a group read shows equal times for its members.
 */
HOST_TEST(groups_take_turns_as_units)
{
    enum { N = 6, SIZE = PX_S / 2 + 1 };
    uint64_t expected[2 * SIZE] = { 0 }, all = (1ULL << SIZE) - 1;
    unsigned int turns[2 * SIZE] = { 0 };
    struct perfmon_dev *dev = px_dev();
    struct perfmon_group_value value;

    if (PX_S < 2) {
        printf("# groups of 2 need 2 counters\n");
        return;
    }

    px_begin();

    for (unsigned int g = 0; g < 2; g++) {
        HOST_ASSERT_EQ(perfmon_group_attach_cpu(px_group(g, g * SIZE, SIZE,
                                                         0), 0), 0);
    }

    for (unsigned int k = 0; k < 2 * N; k++) {
        uint64_t mask = px_counting_mask(0, 2 * SIZE);

        HOST_ASSERT_EQ(mask, (k % 2 == 0) ? all : all << SIZE);
        px_step(2 * SIZE, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    for (unsigned int g = 0; g < 2; g++) {
        HOST_ASSERT_EQ(perfmon_group_read(&px_groups[g], &value), 0);
        HOST_ASSERT_EQ(value.time_enabled, 2 * N * PX_STEP);
        HOST_ASSERT_EQ(value.time_running, N * PX_STEP);

        for (unsigned int i = 0; i < SIZE; i++) {
            HOST_ASSERT_EQ(value.counts[i], expected[g * SIZE + i]);
            HOST_ASSERT_EQ(value.counts[i], N * PX_UNITS);
        }

        HOST_ASSERT_EQ(perfmon_group_detach(&px_groups[g]), 0);
    }

    px_end();
}

/*
 * A group A of S raw events holds every counter; a group B of 2 whose
 * first event shares A's last raw event would link them into a unit of
 * S + 1 slots: EAGAIN, and A keeps its counters (it lost them once: B
 * was scheduled linked, then unlinked). The schedule's version does not
 * move, and A counts every unit.
 */
HOST_TEST(refused_group_attach_moves_no_counter)
{
    struct perfmon_dev *dev = px_dev();
    struct perfmon_group *a, *b;
    struct perfmon_group_value value;
    uint64_t seq;

    if (PX_S < 2) {
        printf("# a group of 2 needs 2 counters\n");
        return;
    }

    px_begin();
    a = px_group(0, 0, PX_S, 0);
    HOST_ASSERT_EQ(perfmon_group_attach_cpu(a, 0), 0);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);
    b = &px_groups[1];
    HOST_ASSERT_EQ(perfmon_group_init(b), 0);
    HOST_ASSERT_EQ(perfmon_event_init(&px_events[PX_S], PX_CODE(PX_S - 1),
                                      PX_FLAGS), 0);
    HOST_ASSERT_EQ(perfmon_group_add(b, &px_events[PX_S]), 0);
    HOST_ASSERT_EQ(perfmon_group_add(b, px_event(PX_S + 1, 0)), 0);
    seq = perfmon_mux_sched_seq(dev);
    HOST_ASSERT_EQ(perfmon_group_attach_cpu(b, 0), EAGAIN);
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), PX_S);
    HOST_ASSERT(!perfmon_event_attached(&px_events[PX_S]));
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);

    for (unsigned int i = 0; i < PX_S; i++) {
        pmu_fake_count(PX_CONFIG_OF(i), 10);
    }

    HOST_ASSERT_EQ(perfmon_group_read(a, &value), 0);

    for (unsigned int i = 0; i < PX_S; i++) {
        HOST_ASSERT_EQ(value.counts[i], 10);
    }

    HOST_ASSERT_EQ(perfmon_group_detach(a), 0);
    px_end();
}

/*
 * S - 1 pinned events and a multiplexed one on the counter left: a
 * pinned group of 2 cannot fit and is refused before anything changes;
 * the multiplexed event keeps its counter.
 */
HOST_TEST(refused_pinned_group_moves_no_counter)
{
    struct perfmon_dev *dev = px_dev();
    uint64_t seq;

    if (PX_S < 2) {
        printf("# a group of 2 needs 2 counters\n");
        return;
    }

    px_begin();
    px_attach_cpu(0, PX_S - 1, PERFMON_EF_PINNED);
    px_attach_cpu(PX_S - 1, 1, 0);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);
    seq = perfmon_mux_sched_seq(dev);
    HOST_ASSERT_EQ(perfmon_group_attach_cpu(px_group(0, PX_S, 2,
                                                     PERFMON_EF_PINNED), 0),
                   EAGAIN);
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), PX_S);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);
    px_detach(0, PX_S);
    px_end();
}

/* ------------------------------------------------------------------ */
/* Regressions found by the QEMU suite and by review                   */
/* ------------------------------------------------------------------ */

/*
 * S + 1 events take turns; one that counts is detached: the S left fit,
 * and all of them count at once, with no rotation to come (the schedule
 * change reached the CPU).
 */
HOST_TEST(detach_gives_a_waiting_event_the_counter_at_once)
{
    struct perfmon_dev *dev = px_dev();
    unsigned int waiting = PX_S + 1;

    px_begin();
    px_attach_cpu(0, PX_S + 1, 0);
    HOST_ASSERT(perfmon_mux_rotate(dev));

    for (unsigned int i = 0; i < PX_S + 1; i++) {
        if (!px_counting(i)) {
            HOST_ASSERT_EQ(waiting, PX_S + 1);
            waiting = i;
        }
    }

    HOST_ASSERT(waiting < PX_S + 1);
    px_detach(waiting == 0 ? 1 : 0, 1);

    for (unsigned int i = 0; i < PX_S + 1; i++) {
        if (perfmon_event_attached(&px_events[i])) {
            HOST_ASSERT(px_counting(i));
        }
    }

    HOST_ASSERT(!perfmon_mux_rotate(dev));

    for (unsigned int i = 0; i < PX_S + 1; i++) {
        if (perfmon_event_attached(&px_events[i])) {
            px_detach(i, 1);
        }
    }

    px_end();
}

/*
 * A group of S raw events beside a pinned event could never hold its
 * counters: EAGAIN, changing nothing; single events attached beside the
 * pinned one then all take turns, exactly.
 */
HOST_TEST(unit_that_could_never_run_is_refused_and_others_take_turns)
{
    enum { N = 4 };
    uint64_t expected[1 + 2 * PX_S] = { 0 };
    unsigned int turns[1 + 2 * PX_S] = { 0 };
    struct perfmon_dev *dev = px_dev();
    unsigned int nr = 1 + 2 * PX_S, singles = PX_S;
    uint64_t seq;

    if (PX_S < 2) {
        printf("# the pinned event leaves no counter to share\n");
        return;
    }

    px_begin();
    px_attach_cpu(0, 1, PERFMON_EF_PINNED);
    seq = perfmon_mux_sched_seq(dev);
    HOST_ASSERT_EQ(perfmon_group_attach_cpu(px_group(0, 1, PX_S, 0), 0),
                   EAGAIN);
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 1);
    HOST_ASSERT(!perfmon_event_attached(&px_events[1]));

    /* The singles: PX_S of them on the S - 1 counters left. */
    for (unsigned int i = PX_S + 1; i < nr; i++) {
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(i, 0), 0), 0);
    }

    for (unsigned int k = 0; k < N * singles; k++) {
        px_step(nr, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    HOST_ASSERT_EQ(px_value(0).count, N * singles * PX_UNITS);

    for (unsigned int i = PX_S + 1; i < nr; i++) {
        HOST_ASSERT_EQ(turns[i], N * (singles - 1));
        HOST_ASSERT_EQ(px_value(i).count, expected[i]);
        px_detach(i, 1);
    }

    px_detach(0, 1);
    px_end();
}

/* ------------------------------------------------------------------ */
/* Constraints                                                         */
/* ------------------------------------------------------------------ */

/*
 * A group of two raw events that only counter 0 can count passes the
 * count of counters but never gets in: it waits at every rotation
 * without holding the S single events back, which count at every step;
 * the group never runs.
 */
HOST_TEST(unit_kept_out_by_constraints_holds_no_one_back)
{
    enum { N = 5 };
    uint64_t expected[PX_S + 2] = { 0 };
    unsigned int turns[PX_S + 2] = { 0 };
    struct perfmon_dev *dev = px_dev();
    struct perfmon_group_value value;

    if (PX_S < 2) {
        printf("# a group of 2 needs 2 counters\n");
        return;
    }

    px_begin();
    pmu_fake_constrain(PX_CONFIG_OF(PX_S), 1U << 0);
    pmu_fake_constrain(PX_CONFIG_OF(PX_S + 1), 1U << 0);
    px_attach_cpu(0, PX_S, 0);
    HOST_ASSERT_EQ(perfmon_group_attach_cpu(px_group(0, PX_S, 2, 0), 0), 0);

    for (unsigned int k = 0; k < N; k++) {
        HOST_ASSERT_EQ(px_counting_mask(0, PX_S + 2), (1ULL << PX_S) - 1);
        px_step(PX_S + 2, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    for (unsigned int i = 0; i < PX_S; i++) {
        HOST_ASSERT_EQ(turns[i], N);
        HOST_ASSERT_EQ(px_value(i).count, N * PX_UNITS);
    }

    HOST_ASSERT_EQ(perfmon_group_read(&px_groups[0], &value), 0);
    HOST_ASSERT_EQ(value.time_running, 0);
    HOST_ASSERT_EQ(value.time_enabled, N * PX_STEP);
    HOST_ASSERT_EQ(value.counts[0], 0);
    HOST_ASSERT_EQ(perfmon_group_detach(&px_groups[0]), 0);
    px_detach(0, PX_S);
    px_end();
}

/*
 * A pinned event holds counter 0, the only one its raw event may use; a
 * pinned group whose first raw event may only use counter 0 too passes
 * the count of counters (S >= 3) but the schedule finds no room: it is
 * undone whole (no member left pinned or linked: the core asserted),
 * EAGAIN, the pinned event keeps its counter and the multiplexed events
 * all count again.
 */
HOST_TEST(pinned_group_refused_for_constraints_is_undone_whole)
{
    struct perfmon_dev *dev = px_dev();
    unsigned int id;

    if (PX_S < 3) {
        printf("# a pinned event and a pinned group of 2 need 3 counters\n");
        return;
    }

    px_begin();
    pmu_fake_constrain(PX_CONFIG_OF(0), 1U << 0);
    pmu_fake_constrain(PX_CONFIG_OF(PX_S), 1U << 0);
    px_attach_cpu(0, 1, PERFMON_EF_PINNED);
    HOST_ASSERT(px_held(0, &id));
    HOST_ASSERT_EQ(id, 0);
    px_attach_cpu(1, PX_S - 1, 0);
    HOST_ASSERT_EQ(perfmon_group_attach_cpu(px_group(0, PX_S, 2,
                                                     PERFMON_EF_PINNED), 0),
                   EAGAIN);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), PX_S);
    HOST_ASSERT(!perfmon_event_attached(&px_events[PX_S]));
    HOST_ASSERT(px_held(0, &id));
    HOST_ASSERT_EQ(id, 0);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);
    HOST_ASSERT(!perfmon_mux_rotate(dev));
    px_detach(0, PX_S);
    px_end();
}

/* ------------------------------------------------------------------ */
/* Time accounting                                                     */
/* ------------------------------------------------------------------ */

/*
 * A CPU event alone: time_enabled and time_running are the TSC cycles
 * since attach, exactly; disabled they stand still, enabled they go on;
 * detached they stay as they were at detach.
 */
HOST_TEST(cpu_event_times_are_exact)
{
    struct perfmon_value value;

    px_begin();
    px_attach_cpu(0, 1, 0);
    host_env_tsc_advance(3 * PX_STEP);
    pmu_fake_count(PX_CONFIG_OF(0), 11);
    value = px_value(0);
    HOST_ASSERT_EQ(value.count, 11);
    HOST_ASSERT_EQ(value.time_enabled, 3 * PX_STEP);
    HOST_ASSERT_EQ(value.time_running, 3 * PX_STEP);

    HOST_ASSERT_EQ(perfmon_event_disable(&px_events[0]), 0);
    host_env_tsc_advance(5 * PX_STEP);
    pmu_fake_count(PX_CONFIG_OF(0), 13);
    value = px_value(0);
    HOST_ASSERT_EQ(value.count, 11);
    HOST_ASSERT_EQ(value.time_enabled, 3 * PX_STEP);
    HOST_ASSERT_EQ(value.time_running, 3 * PX_STEP);

    HOST_ASSERT_EQ(perfmon_event_enable(&px_events[0]), 0);
    host_env_tsc_advance(2 * PX_STEP);
    pmu_fake_count(PX_CONFIG_OF(0), 17);
    HOST_ASSERT_EQ(perfmon_event_detach(&px_events[0]), 0);
    host_env_tsc_advance(PX_STEP);
    value = px_value(0);
    HOST_ASSERT_EQ(value.count, 28);
    HOST_ASSERT_EQ(value.time_enabled, 5 * PX_STEP);
    HOST_ASSERT_EQ(value.time_running, 5 * PX_STEP);
    px_end();
}

/*
 * Turns of uneven length (a late rotation thread): 2S events, the first
 * turn 3 steps, the second 1 step. The S that ran 3 steps wait until the
 * others catch up: the others hold the counters for the next 2 turns of
 * 1 step too, then it is even (the least served go first).
 */
HOST_TEST(uneven_turns_even_out_by_time_served)
{
    struct perfmon_dev *dev = px_dev();
    uint64_t first = (1ULL << PX_S) - 1, second = first << PX_S;

    px_begin();
    px_attach_cpu(0, 2 * PX_S, 0);
    HOST_ASSERT_EQ(px_counting_mask(0, 2 * PX_S), first);
    host_env_tsc_advance(3 * PX_STEP);
    HOST_ASSERT(perfmon_mux_rotate(dev));
    HOST_ASSERT_EQ(px_counting_mask(0, 2 * PX_S), second);

    for (unsigned int k = 0; k < 2; k++) {
        host_env_tsc_advance(PX_STEP);
        HOST_ASSERT(perfmon_mux_rotate(dev));
        HOST_ASSERT_EQ(px_counting_mask(0, 2 * PX_S), second);
    }

    host_env_tsc_advance(PX_STEP);
    HOST_ASSERT(perfmon_mux_rotate(dev));
    HOST_ASSERT_EQ(px_counting_mask(0, 2 * PX_S), first);
    host_env_tsc_advance(PX_STEP);

    for (unsigned int i = 0; i < 2 * PX_S; i++) {
        struct perfmon_value value = px_value(i);

        HOST_ASSERT_EQ(value.time_enabled, 7 * PX_STEP);
        HOST_ASSERT_EQ(value.time_running, ((i < PX_S) ? 4 : 3) * PX_STEP);
    }

    px_detach(0, 2 * PX_S);
    px_end();
}

/* ------------------------------------------------------------------ */
/* Sampling                                                            */
/* ------------------------------------------------------------------ */

#define PX_PERIOD       100
#define PX_RING         8192

/* Event i made a sampling event of session with PX_PERIOD. */
static struct perfmon_event *
px_sampling_event(unsigned int i, struct perfmon_session *session)
{
    struct perfmon_event *event = px_event(i, 0);
    struct perfmon_sample_attr attr = {
        .session = session, .period = PX_PERIOD,
    };

    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    return event;
}

static uint64_t
px_nr_samples(struct perfmon_event *event)
{
    uint64_t n = UINT64_MAX;

    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &n), 0);
    return n;
}

/*
 * A sampling event shares no slot: beside a counting event of its raw
 * event it takes a slot of its own, pinned (it holds a counter at once).
 * Each period of PX_PERIOD events, one overflow, is one sample, exactly;
 * the counting event counts them all (with one counter the sampling
 * event would leave it none for ever: refused, perfmon_mux_fits). A
 * refresh of 3 gives 3 more samples, then
 * none, while it keeps counting.
 */
HOST_TEST(sampling_event_takes_its_own_slot_one_sample_per_period)
{
    uint64_t shared = (PX_S > 1);   /* the counting event counts too */
    struct perfmon_session *session;
    struct perfmon_event *sampler;

    if (!PX_INTR) {
        printf("# sampling needs the overflow interrupt\n");
        return;
    }

    px_begin();
    host_env_advance(1);
    HOST_ASSERT_EQ(perfmon_session_create(&session, PX_RING), 0);
    px_attach_cpu(0, 1, 0);
    sampler = &px_events[1];
    HOST_ASSERT_EQ(perfmon_event_init(sampler, PX_CODE(0), PX_FLAGS), 0);
    HOST_ASSERT_EQ(perfmon_event_set_sampling(sampler,
                                              &(struct perfmon_sample_attr){
                                                  .session = session,
                                                  .period = PX_PERIOD,
                                              }), 0);

    if (!shared) {
        /* One counter: the counting event would never run again. */
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(sampler, 0), EAGAIN);
        HOST_ASSERT(px_counting(0));
        HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(px_dev()), 1);
        px_detach(0, 1);
        HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
        px_end();
        return;
    }

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(sampler, 0), 0);
    HOST_ASSERT(perfmon_event_slot_index(sampler)
                != perfmon_event_slot_index(&px_events[0]));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(px_dev()), 2);
    HOST_ASSERT(px_counting(1));
    HOST_ASSERT_EQ(px_counting(0), shared);

    for (unsigned int k = 0; k < 7; k++) {
        pmu_fake_count(PX_CONFIG_OF(0), PX_PERIOD);
    }

    HOST_ASSERT_EQ(px_nr_samples(sampler), 7);
    HOST_ASSERT_EQ(perfmon_event_read(sampler), 7 * PX_PERIOD);
    HOST_ASSERT_EQ(perfmon_event_read(&px_events[0]),
                   shared * 7 * PX_PERIOD);

    /* Half a period: no sample yet. */
    pmu_fake_count(PX_CONFIG_OF(0), PX_PERIOD / 2);
    HOST_ASSERT_EQ(px_nr_samples(sampler), 7);
    pmu_fake_count(PX_CONFIG_OF(0), PX_PERIOD / 2);
    HOST_ASSERT_EQ(px_nr_samples(sampler), 8);

    HOST_ASSERT_EQ(perfmon_event_refresh(sampler, 3), 0);

    for (unsigned int k = 0; k < 5; k++) {
        pmu_fake_count(PX_CONFIG_OF(0), PX_PERIOD);
    }

    HOST_ASSERT_EQ(px_nr_samples(sampler), 11);
    HOST_ASSERT_EQ(perfmon_event_read(sampler), 13 * PX_PERIOD);
    HOST_ASSERT_EQ(perfmon_event_read(&px_events[0]),
                   shared * 13 * PX_PERIOD);
    px_detach(0, 2);
    HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    px_end();
}

/*
 * More samples in one tick than perfmon.max_samples_per_tick (1000): the
 * TSC held, every period falls in one tick, so exactly 1000 samples, then
 * none until the tick ends; after it, one per period again. The count
 * stays exact throughout.
 */
HOST_TEST(sampling_throttles_at_the_tick_budget)
{
    struct perfmon_session *session;
    struct perfmon_event *sampler;

    if (!PX_INTR) {
        printf("# sampling needs the overflow interrupt\n");
        return;
    }

    px_begin();
    host_env_advance(1);
    HOST_ASSERT_EQ(perfmon_session_create(&session, PX_RING), 0);
    sampler = px_sampling_event(0, session);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(sampler, 0), 0);

    for (unsigned int k = 0; k < 1005; k++) {
        pmu_fake_count(PX_CONFIG_OF(0), PX_PERIOD);
    }

    HOST_ASSERT_EQ(px_nr_samples(sampler), 1000);
    host_env_advance(1);

    for (unsigned int k = 0; k < 3; k++) {
        pmu_fake_count(PX_CONFIG_OF(0), PX_PERIOD);
    }

    HOST_ASSERT_EQ(px_nr_samples(sampler), 1003);
    HOST_ASSERT_EQ(perfmon_event_read(sampler), 1008 * PX_PERIOD);
    px_detach(0, 1);
    HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    px_end();
}
