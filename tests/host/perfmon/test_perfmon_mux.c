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
 *   16 PERFMON_MAX_PMCS counters of 64 bits (never wrap).
 * Tests are written for S counters; a test that needs more than the
 * device has says so and passes.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/init.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <machine/cpu.h>

#include "host_env.h"
#include "host_test.h"
#include "pmu_fake.h"

#if PX_CONFIG == 1
#define PX_NR_PMCS      1
#define PX_WIDTH        16
#define PX_INTR         true
#elif PX_CONFIG == 2
#define PX_NR_PMCS      2
#define PX_WIDTH        48
#define PX_INTR         true
#elif PX_CONFIG == 4
#define PX_NR_PMCS      4
#define PX_WIDTH        32
#define PX_INTR         false
#elif PX_CONFIG == 16
#define PX_NR_PMCS      PERFMON_MAX_PMCS
#define PX_WIDTH        64
#define PX_INTR         false
#else
#error "PX_CONFIG must be 1, 2, 4 or 16"
#endif

#define PX_S            PX_NR_PMCS
#define PX_STEP         1000            /* TSC cycles (ns) per step */
#define PX_UNITS        7               /* events per step and raw event */
#define PX_MAX_EVENTS   (PERFMON_MAX_SLOTS + 2)
#define PX_FLAGS        (PERFMON_EF_RAW | PERFMON_EF_KERN)
#define PX_CODE(i)      (0x10 + (i))    /* raw event i's code */
#define PX_CONFIG_OF(i) PMU_FAKE_CONFIG(PX_CODE(i), PX_FLAGS)

/*
 * Events and groups come from a pool, not from test stacks, so that
 * px_begin() can detach what a failed test left behind.
 */
static struct perfmon_event px_events[PX_MAX_EVENTS];
static struct perfmon_group px_groups[3];
static bool px_booted;
static int px_setup_error;
static int px_register_error;

static struct perfmon_dev *
px_dev(void)
{
    return pmu_fake_dev();
}

static void
px_boot(void)
{
    if (px_booted) {
        return;
    }

    px_booted = true;
    host_env_tsc_hold();
    px_setup_error = init_op_perfmon_setup.fn();
    px_register_error = pmu_fake_register(&(struct pmu_fake_config){
        .nr_pmcs = PX_NR_PMCS,
        .width = PX_WIDTH,
        .overflow_intr = PX_INTR,
        .max_rate = 1ULL << 20,
    });
}

/* Every test starts with nothing attached and no constraint. */
static void
px_begin(void)
{
    px_boot();
    host_env_recover();
    HOST_ASSERT_EQ(px_setup_error, 0);
    HOST_ASSERT_EQ(px_register_error, 0);

    for (unsigned int g = 0; g < ARRAY_SIZE(px_groups); g++) {
        perfmon_group_detach(&px_groups[g]);
    }

    for (unsigned int i = 0; i < PX_MAX_EVENTS; i++) {
        if (perfmon_event_attached(&px_events[i])) {
            perfmon_event_detach(&px_events[i]);
        }
    }

    for (unsigned int i = 0; i < PX_MAX_EVENTS; i++) {
        pmu_fake_constrain(PX_CONFIG_OF(i), 0);
    }

    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(px_dev()), 0);
    HOST_ASSERT_EQ(pmu_fake_reserved(), 0);
}

/* Whatever a test did, the device is left as it found it. */
static void
px_end(void)
{
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(px_dev()), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_pmcs(0), 0);
    HOST_ASSERT_EQ(pmu_fake_reserved(), 0);
    HOST_ASSERT_EQ(pmu_fake_started(), 0);
    HOST_ASSERT_EQ(pmu_fake_nr_bad_frees(), 0);
    HOST_ASSERT_EQ(host_env_nr_locks_held(), 0);
    HOST_ASSERT(cpu_intr_enabled());
}

/* Event i, initialized on raw event i (flags added to PX_FLAGS). */
static struct perfmon_event *
px_event(unsigned int i, unsigned int flags)
{
    struct perfmon_event *event = &px_events[i];

    HOST_ASSERT(i < PX_MAX_EVENTS);
    HOST_ASSERT_EQ(perfmon_event_init(event, PX_CODE(i), PX_FLAGS | flags),
                   0);
    return event;
}

/* Events first to first + nr - 1 attached to CPU 0, on their raw events. */
static void
px_attach_cpu(unsigned int first, unsigned int nr, unsigned int flags)
{
    for (unsigned int i = first; i < first + nr; i++) {
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(i, flags), 0), 0);
    }
}

static void
px_detach(unsigned int first, unsigned int nr)
{
    for (unsigned int i = first; i < first + nr; i++) {
        HOST_ASSERT_EQ(perfmon_event_detach(&px_events[i]), 0);
    }
}

/* Whether event i counts on CPU 0 now (as a step with interrupts off). */
static bool
px_counting(unsigned int i)
{
    unsigned long flags = cpu_intr_save();
    bool counting = perfmon_event_counting_here(&px_events[i]);

    cpu_intr_restore(flags);
    return counting;
}

/* Events counting among first to first + nr - 1, as a bit mask. */
static uint64_t
px_counting_mask(unsigned int first, unsigned int nr)
{
    uint64_t mask = 0;

    for (unsigned int i = first; i < first + nr; i++) {
        mask |= (uint64_t)px_counting(i) << (i - first);
    }

    return mask;
}

/* Whether the slot of event i holds a counter (the schedule). */
static bool
px_held(unsigned int i, unsigned int *pmc_idp)
{
    unsigned int pmc_id, width;
    bool held;

    held = perfmon_dev_pmc(px_dev(), perfmon_event_pmc_index(&px_events[i]),
                           &pmc_id, &width);

    if (held) {
        HOST_ASSERT_EQ(width, PX_WIDTH);
    }

    if (pmc_idp != NULL) {
        *pmc_idp = held ? pmc_id : UINT32_MAX;
    }

    return held;
}

/*
 * One step of PX_STEP cycles: every raw event of events 0 to nr - 1
 * happens PX_UNITS times, and the events that count (noted before) are
 * expected to count them. turns[i] counts the steps event i counted in.
 */
static void
px_step(unsigned int nr, uint64_t *expected, unsigned int *turns)
{
    for (unsigned int i = 0; i < nr; i++) {
        if (px_counting(i)) {
            expected[i] += PX_UNITS;
            turns[i]++;
        }
    }

    for (unsigned int i = 0; i < nr; i++) {
        pmu_fake_count(PX_CONFIG_OF(i), PX_UNITS);
    }

    host_env_tsc_advance(PX_STEP);
}

static struct perfmon_value
px_value(unsigned int i)
{
    struct perfmon_value value;

    HOST_ASSERT_EQ(perfmon_event_read_value(&px_events[i], &value), 0);
    return value;
}

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
    unsigned int seq;

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
    unsigned int seq;
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
 * counting every unit. The S others share the S - 1 counters left.
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
    px_attach_cpu(PX_S, 1, PERFMON_EF_PINNED);
    HOST_ASSERT(px_counting(PX_S));
    HOST_ASSERT_EQ(__builtin_popcountll(px_counting_mask(0, PX_S)),
                   PX_S - 1);

    for (unsigned int k = 0; k < N * PX_S; k++) {
        HOST_ASSERT(px_counting(PX_S));
        px_step(PX_S + 1, expected, turns);
        /* With one counter the others wait for ever: still rotations. */
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
    unsigned int seq, ids[PX_S];

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
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), PX_S);
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
    unsigned int seq;

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
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), PX_S);
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
    unsigned int seq;

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
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), PX_S);
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
    unsigned int seq;

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
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), 1);
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
    HOST_ASSERT_EQ(perfmon_event_pmc_index(b), perfmon_event_pmc_index(a));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), 1);
    HOST_ASSERT_EQ(pmu_fake_nr_allocs() - pmu_fake_nr_frees(), 1);
    pmu_fake_count(PX_CONFIG_OF(0), 3);
    HOST_ASSERT_EQ(perfmon_event_read(a), 8);
    HOST_ASSERT_EQ(perfmon_event_read(b), 3);

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(c, 0), 0);
    HOST_ASSERT(perfmon_event_pmc_index(c) != perfmon_event_pmc_index(a));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), 2);

    px_detach(0, 1);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), 2);
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
    unsigned int seq;

    px_begin();
    px_attach_cpu(0, PERFMON_MAX_SLOTS, 0);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), PERFMON_MAX_SLOTS);
    seq = perfmon_mux_sched_seq(dev);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(PERFMON_MAX_SLOTS, 0),
                                            0), EAGAIN);
    HOST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    HOST_ASSERT_EQ(perfmon_event_init(&px_events[PERFMON_MAX_SLOTS + 1],
                                      PX_CODE(3), PX_FLAGS), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(&px_events[PERFMON_MAX_SLOTS + 1],
                                            0), 0);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), PERFMON_MAX_SLOTS);
    HOST_ASSERT_EQ(perfmon_event_detach(&px_events[PERFMON_MAX_SLOTS + 1]),
                   0);
    px_detach(0, PERFMON_MAX_SLOTS);
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
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(dev), PX_S);
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
 * the counting event counts them all (with one counter it has none: the
 * sampling event took it). A refresh of 3 gives 3 more samples, then
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
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(sampler, 0), 0);
    HOST_ASSERT(perfmon_event_pmc_index(sampler)
                != perfmon_event_pmc_index(&px_events[0]));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(px_dev()), 2);
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

HOST_TEST_MAIN()
