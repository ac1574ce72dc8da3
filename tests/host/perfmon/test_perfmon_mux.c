/*
 * Host tests of perfmon's core (kern/perfmon*.c, compiled unchanged) on a
 * fake PMU device (pmu_fake.c), in the single-CPU environment of
 * host_env.c with its TSC held: the multiplexing policy, slot allocation
 * and time accounting with exact expectations. Nothing here waits on
 * time: a test moves the TSC by PX_STEP between steps, rotates as the
 * rotation thread would (perfmon_mux_rotate), and says what happened on
 * the device (pmu_fake_count), so that every count, turn and time is known
 * exactly. The QEMU suite (tests/perfmon/test_perfmon_mux.c) checks the same
 * policy on the software PMU with real rotations and SMP, with stated
 * tolerances.
 *
 * perfmon registers one device per process: one binary per device
 * configuration, chosen by PX_CONFIG:
 *   1  1 counter of 16 bits, overflow interrupt;
 *   2  2 counters of 48 bits, overflow interrupt;
 *   4  4 counters of 32 bits, polled;
 *   16 PERFMON_MAX_COUNTERS counters of 64 bits (never wrap).
 * Tests are written for S counters; a test that needs more than the
 * device has says so and passes.
 *
 * This file has fair turns, pinned and idle units, and slots;
 * test_perfmon_mux_groups.c, linked into the same binaries, the rest;
 * mux_fixture.c/.h what they share.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <machine/cpu.h>

#include "host_env.h"
#include "host_test.h"
#include "mux_fixture.h"
#include "pmu_fake.h"

/* ------------------------------------------------------------------ */
/* Fair turns                                                          */
/* ------------------------------------------------------------------ */

/*
 * 2S CPU events on S counters, a rotation after every step: the S
 * attached first hold the counters at the even steps, the others at the
 * odd ones, so after 2N steps each ran exactly N steps (time_running N
 * steps, time_enabled 2N) and counted exactly the units of those steps.
 * Every rotation moves every counter.
 */
HOST_TEST(fair_turns_halve_each_event_exactly)
{
    enum { N = 10 };
    uint64_t expected[2 * PX_S] = { 0 }, all = (1ULL << PX_S) - 1;
    unsigned int turns[2 * PX_S] = { 0 };
    struct perfmon_dev *dev = px_dev();
    uint64_t rotations;
    uint64_t seq;

    px_begin();
    px_attach_cpu(0, 2 * PX_S, 0);
    rotations = perfmon_mux_nr_rotations(dev);

    for (unsigned int k = 0; k < 2 * N; k++) {
        HOST_ASSERT_EQ(px_counting_mask(0, 2 * PX_S),
                       (k % 2 == 0) ? all : all << PX_S);
        px_step(2 * PX_S, expected, turns);

        if (k + 1 < 2 * N) {
            seq = perfmon_mux_sched_seq(dev);
            HOST_ASSERT(perfmon_mux_rotate(dev));
            HOST_ASSERT(perfmon_mux_sched_seq(dev) != seq);
            HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev) % 2, 0);
        }
    }

    HOST_ASSERT_EQ(perfmon_mux_nr_rotations(dev) - rotations, 2 * N - 1);

    for (unsigned int i = 0; i < 2 * PX_S; i++) {
        struct perfmon_value value = px_value(i);

        HOST_ASSERT_EQ(turns[i], N);
        HOST_ASSERT_EQ(value.count, expected[i]);
        HOST_ASSERT_EQ(value.count, N * PX_UNITS);
        HOST_ASSERT_EQ(value.time_enabled, 2 * N * PX_STEP);
        HOST_ASSERT_EQ(value.time_running, N * PX_STEP);
        HOST_ASSERT_EQ(perfmon_scale(value.count, value.time_enabled,
                                     value.time_running),
                       2 * N * PX_UNITS);
    }

    px_detach(0, 2 * PX_S);
    px_end();
}

/*
 * S + 1 events on S counters: every rotation the one left out the
 * longest comes in, so over S + 1 rotations each event misses exactly
 * one step.
 */
HOST_TEST(one_more_event_than_counters_misses_one_step_in_s_plus_one)
{
    uint64_t expected[PX_S + 1] = { 0 };
    unsigned int turns[PX_S + 1] = { 0 };
    struct perfmon_dev *dev = px_dev();

    px_begin();
    px_attach_cpu(0, PX_S + 1, 0);

    for (unsigned int k = 0; k < PX_S + 1; k++) {
        HOST_ASSERT_EQ(__builtin_popcountll(px_counting_mask(0, PX_S + 1)),
                       PX_S);
        px_step(PX_S + 1, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    for (unsigned int i = 0; i < PX_S + 1; i++) {
        struct perfmon_value value = px_value(i);

        HOST_ASSERT_EQ(turns[i], PX_S);
        HOST_ASSERT_EQ(value.count, expected[i]);
        HOST_ASSERT_EQ(value.time_enabled, (PX_S + 1) * PX_STEP);
        HOST_ASSERT_EQ(value.time_running, PX_S * PX_STEP);
    }

    px_detach(0, PX_S + 1);
    px_end();
}

/*
 * Rotations only while a raw event waits: with S events none (a rotation
 * moves nothing); an extra event rotates; once detached, rotations stop.
 * (Whether the rotation thread is woken is not seen here: the host never
 * runs it, so after its first wakeup it is never asleep again.)
 */
HOST_TEST(rotation_only_while_an_event_waits)
{
    struct perfmon_dev *dev = px_dev();
    uint64_t seq;
    uint64_t rotations;

    px_begin();
    px_attach_cpu(0, PX_S, 0);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);
    seq = perfmon_mux_sched_seq(dev);
    rotations = perfmon_mux_nr_rotations(dev);
    HOST_ASSERT(!perfmon_mux_rotate(dev));
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    HOST_ASSERT_EQ(perfmon_mux_nr_rotations(dev), rotations);

    px_attach_cpu(PX_S, 1, 0);
    HOST_ASSERT(!px_counting(PX_S));
    HOST_ASSERT(perfmon_mux_rotate(dev));
    HOST_ASSERT(px_counting(PX_S));
    HOST_ASSERT_EQ(perfmon_mux_nr_rotations(dev), rotations + 1);

    px_detach(PX_S, 1);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);
    seq = perfmon_mux_sched_seq(dev);
    HOST_ASSERT(!perfmon_mux_rotate(dev));
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    px_detach(0, PX_S);
    px_end();
}

/* ------------------------------------------------------------------ */
/* Pinned units                                                        */
/* ------------------------------------------------------------------ */

/*
 * S multiplexed events hold every counter; a pinned event attached then
 * takes one at once (the multiplexed event that would run last gives it
 * up) and keeps it through every rotation: running all its enabled time,
 * counting every unit. The S others share the S - 1 counters left. With
 * one counter, none would be left to them: the pinned attach is refused.
 */
HOST_TEST(pinned_event_takes_a_counter_at_attach_and_keeps_it)
{
    enum { N = 12 };
    uint64_t expected[PX_S + 1] = { 0 };
    unsigned int turns[PX_S + 1] = { 0 };
    struct perfmon_dev *dev = px_dev();
    struct perfmon_value value;

    px_begin();
    px_attach_cpu(0, PX_S, 0);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S), (1ULL << PX_S) - 1);

    if (PX_S == 1) {
        /* It would leave the other no counter ever: refused, nothing
           moved (perfmon_mux_fits). */
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(PX_S,
                                                         PERFMON_EF_PINNED),
                                                0), EAGAIN);
        HOST_ASSERT(px_counting(0));
        HOST_ASSERT(!perfmon_mux_rotate(dev));
        px_detach(0, PX_S);
        px_end();
        return;
    }

    px_attach_cpu(PX_S, 1, PERFMON_EF_PINNED);
    HOST_ASSERT(px_counting(PX_S));
    HOST_ASSERT_EQ(__builtin_popcountll(px_counting_mask(0, PX_S)),
                   PX_S - 1);

    for (unsigned int k = 0; k < N * PX_S; k++) {
        HOST_ASSERT(px_counting(PX_S));
        px_step(PX_S + 1, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    value = px_value(PX_S);
    HOST_ASSERT_EQ(value.count, N * PX_S * PX_UNITS);
    HOST_ASSERT_EQ(value.time_enabled, N * PX_S * PX_STEP);
    HOST_ASSERT_EQ(value.time_running, N * PX_S * PX_STEP);

    for (unsigned int i = 0; i < PX_S; i++) {
        value = px_value(i);
        HOST_ASSERT_EQ(value.count, expected[i]);
        HOST_ASSERT_EQ(value.time_running, turns[i] * PX_STEP);

        /* S events on S - 1 counters, N S steps: N (S - 1) turns each. */
        HOST_ASSERT_EQ(turns[i], N * (PX_S - 1));
    }

    px_detach(0, PX_S + 1);
    px_end();
}

/*
 * With S pinned events, another pinned one finds no room: EAGAIN, and
 * nothing changes (no slot taken, the schedule's version as it was, the
 * same counters). A multiplexed one could never run either: EAGAIN too.
 * Once a pinned event is detached, the pinned attach succeeds.
 */
HOST_TEST(pinned_attach_without_room_is_eagain_and_moves_nothing)
{
    struct perfmon_dev *dev = px_dev();
    unsigned int ids[PX_S];
    uint64_t seq;

    px_begin();
    px_attach_cpu(0, PX_S, PERFMON_EF_PINNED);

    for (unsigned int i = 0; i < PX_S; i++) {
        HOST_ASSERT(px_held(i, &ids[i]));
    }

    seq = perfmon_mux_sched_seq(dev);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(PX_S,
                                                     PERFMON_EF_PINNED), 0),
                   EAGAIN);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(PX_S + 1, 0), 0),
                   EAGAIN);
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), PX_S);
    HOST_ASSERT(!perfmon_event_attached(&px_events[PX_S]));

    for (unsigned int i = 0; i < PX_S; i++) {
        unsigned int id;

        HOST_ASSERT(px_held(i, &id));
        HOST_ASSERT_EQ(id, ids[i]);
        HOST_ASSERT(px_counting(i));
    }

    px_detach(0, 1);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(&px_events[PX_S], 0), 0);
    HOST_ASSERT(px_counting(PX_S));
    HOST_ASSERT_EQ(perfmon_event_detach(&px_events[PX_S]), 0);
    px_detach(1, PX_S - 1);
    px_end();
}

/* ------------------------------------------------------------------ */
/* Idle units                                                          */
/* ------------------------------------------------------------------ */

/*
 * S + 1 events; the last disabled: the S others hold every counter at
 * once, no rotation comes, the disabled event counts nothing and its
 * times stand still. Enabled again, it takes turns again.
 */
HOST_TEST(disabled_event_takes_no_turns)
{
    uint64_t expected[PX_S + 1] = { 0 };
    unsigned int turns[PX_S + 1] = { 0 };
    struct perfmon_dev *dev = px_dev();
    struct perfmon_value before, after;
    uint64_t rotations;

    px_begin();
    px_attach_cpu(0, PX_S + 1, 0);
    px_step(PX_S + 1, expected, turns);
    HOST_ASSERT(perfmon_mux_rotate(dev));
    HOST_ASSERT_EQ(perfmon_event_disable(&px_events[PX_S]), 0);
    HOST_ASSERT_EQ(px_counting_mask(0, PX_S + 1), (1ULL << PX_S) - 1);
    before = px_value(PX_S);
    rotations = perfmon_mux_nr_rotations(dev);

    for (unsigned int k = 0; k < 4; k++) {
        px_step(PX_S + 1, expected, turns);
        HOST_ASSERT(!perfmon_mux_rotate(dev));
    }

    HOST_ASSERT_EQ(perfmon_mux_nr_rotations(dev), rotations);
    after = px_value(PX_S);
    HOST_ASSERT_EQ(after.count, before.count);
    HOST_ASSERT_EQ(after.time_enabled, before.time_enabled);
    HOST_ASSERT_EQ(after.time_running, before.time_running);

    for (unsigned int i = 0; i < PX_S; i++) {
        HOST_ASSERT_EQ(px_value(i).count, expected[i]);
    }

    HOST_ASSERT_EQ(perfmon_event_enable(&px_events[PX_S]), 0);
    HOST_ASSERT(perfmon_mux_rotate(dev));
    HOST_ASSERT(px_counting(PX_S));
    px_detach(0, PX_S + 1);
    px_end();
}

/*
 * A disabled event keeps its counter while no one waits for one: a new
 * raw event given a free counter moves nothing (no free, the same
 * counter); once every counter is taken, the next raw event takes the
 * idle one's counter at attach, with no rotation.
 */
HOST_TEST(idle_event_keeps_its_counter_only_while_no_one_waits)
{
    struct perfmon_dev *dev = px_dev();
    unsigned int id, again, frees;

    px_begin();
    px_attach_cpu(0, 1, 0);
    HOST_ASSERT_EQ(perfmon_event_disable(&px_events[0]), 0);
    HOST_ASSERT(px_held(0, &id));
    frees = pmu_fake_nr_frees();

    if (PX_S > 1) {
        px_attach_cpu(1, PX_S - 1, 0);
        HOST_ASSERT(px_held(0, &again));
        HOST_ASSERT_EQ(again, id);
        HOST_ASSERT_EQ(pmu_fake_nr_frees(), frees);
        HOST_ASSERT_EQ(px_counting_mask(1, PX_S - 1),
                       (1ULL << (PX_S - 1)) - 1);
    }

    px_attach_cpu(PX_S, 1, 0);
    HOST_ASSERT(!px_held(0, NULL));
    HOST_ASSERT(px_held(PX_S, &again));
    HOST_ASSERT_EQ(again, id);
    HOST_ASSERT_EQ(px_counting_mask(1, PX_S), (1ULL << PX_S) - 1);
    HOST_ASSERT(!perfmon_mux_rotate(dev));
    px_detach(0, PX_S + 1);
    px_end();
}

/*
 * An event holds its counter alone for 100 steps, then is disabled; S
 * new raw events attach and it is enabled again. It starts level with
 * them (not 100 steps ahead, which would keep it waiting for 100 S
 * steps of their turns): with S + 1 raw events on S counters it misses
 * at most one step of any S + 1.
 */
HOST_TEST(enabled_again_starts_level_with_new_slots)
{
    uint64_t expected[PX_S + 1] = { 0 };
    unsigned int turns[PX_S + 1] = { 0 };
    struct perfmon_dev *dev = px_dev();

    px_begin();
    px_attach_cpu(0, 1, 0);
    host_env_tsc_advance(100 * PX_STEP);
    HOST_ASSERT_EQ(perfmon_event_disable(&px_events[0]), 0);
    px_attach_cpu(1, PX_S, 0);
    HOST_ASSERT_EQ(perfmon_event_enable(&px_events[0]), 0);

    for (unsigned int k = 0; k < PX_S + 1; k++) {
        px_step(PX_S + 1, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    for (unsigned int i = 0; i < PX_S + 1; i++) {
        HOST_ASSERT_EQ(turns[i], PX_S);
    }

    px_detach(0, PX_S + 1);
    px_end();
}

/*
 * The other bound: S + 1 events take turns for 10 (S + 1) steps while a
 * new one is disabled, with nothing served; enabled, it starts at the
 * least served, not below (it would take every turn until it caught up):
 * it too misses at most one step of any S + 1 from then on.
 */
HOST_TEST(enabled_again_starts_at_the_least_served)
{
    uint64_t expected[PX_S + 2] = { 0 };
    unsigned int turns[PX_S + 2] = { 0 };
    struct perfmon_dev *dev = px_dev();

    px_begin();
    px_attach_cpu(0, PX_S + 1, 0);
    px_attach_cpu(PX_S + 1, 1, 0);
    HOST_ASSERT_EQ(perfmon_event_disable(&px_events[PX_S + 1]), 0);

    for (unsigned int k = 0; k < 10 * (PX_S + 1); k++) {
        px_step(PX_S + 1, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    HOST_ASSERT_EQ(perfmon_event_enable(&px_events[PX_S + 1]), 0);

    for (unsigned int i = 0; i < PX_S + 2; i++) {
        turns[i] = 0;
    }

    for (unsigned int k = 0; k < 10 * (PX_S + 2); k++) {
        px_step(PX_S + 2, expected, turns);
        HOST_ASSERT(perfmon_mux_rotate(dev));
    }

    /* S + 2 events on S counters over 10 (S + 2) steps: 10 S turns. */
    for (unsigned int i = 0; i < PX_S + 2; i++) {
        HOST_ASSERT_EQ(turns[i], 10 * PX_S);
        HOST_ASSERT_EQ(px_value(i).count, expected[i]);
    }

    px_detach(0, PX_S + 2);
    px_end();
}

/* ------------------------------------------------------------------ */
/* Slots                                                               */
/* ------------------------------------------------------------------ */

/*
 * Events of one raw event share a slot (one counter, each counting from
 * its attach); the same code in other rings is another raw event; a
 * slot lives until its last event detaches.
 */
HOST_TEST(events_of_one_raw_event_share_a_slot)
{
    struct perfmon_dev *dev = px_dev();
    struct perfmon_event *a, *b, *c;

    px_begin();
    a = px_event(0, 0);
    b = &px_events[1];
    c = &px_events[2];
    HOST_ASSERT_EQ(perfmon_event_init(b, PX_CODE(0), PX_FLAGS), 0);
    HOST_ASSERT_EQ(perfmon_event_init(c, PX_CODE(0),
                                      PERFMON_EF_RAW | PERFMON_EF_USER), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(a, 0), 0);
    pmu_fake_count(PX_CONFIG_OF(0), 5);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(b, 0), 0);
    HOST_ASSERT_EQ(perfmon_event_slot_index(b), perfmon_event_slot_index(a));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 1);
    HOST_ASSERT_EQ(pmu_fake_nr_allocs() - pmu_fake_nr_frees(), 1);
    pmu_fake_count(PX_CONFIG_OF(0), 3);
    HOST_ASSERT_EQ(perfmon_event_read(a), 8);
    HOST_ASSERT_EQ(perfmon_event_read(b), 3);

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(c, 0), 0);
    HOST_ASSERT(perfmon_event_slot_index(c) != perfmon_event_slot_index(a));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 2);

    px_detach(0, 1);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 2);
    pmu_fake_count(PX_CONFIG_OF(0), 4);
    HOST_ASSERT_EQ(perfmon_event_read(a), 8);
    HOST_ASSERT_EQ(perfmon_event_read(b), 7);
    px_detach(1, 2);
    px_end();
}

/*
 * PERFMON_MAX_SLOTS raw events attach (most of them waiting for a
 * counter); one more is EAGAIN and changes nothing, while an event of a
 * raw event already there still attaches, sharing its slot.
 */
HOST_TEST(slots_run_out_at_perfmon_max_slots)
{
    struct perfmon_dev *dev = px_dev();
    uint64_t seq;

    px_begin();
    px_attach_cpu(0, PERFMON_MAX_SLOTS, 0);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), PERFMON_MAX_SLOTS);
    seq = perfmon_mux_sched_seq(dev);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(PERFMON_MAX_SLOTS, 0),
                                            0), EAGAIN);
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    HOST_ASSERT_EQ(perfmon_event_init(&px_events[PERFMON_MAX_SLOTS + 1],
                                      PX_CODE(3), PX_FLAGS), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(&px_events[PERFMON_MAX_SLOTS + 1],
                                            0), 0);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), PERFMON_MAX_SLOTS);
    HOST_ASSERT_EQ(perfmon_event_detach(&px_events[PERFMON_MAX_SLOTS + 1]),
                   0);
    px_detach(0, PERFMON_MAX_SLOTS);
    px_end();
}

HOST_TEST_MAIN()
