/*
 * perfmon multiplexing with the software PMU: more raw events than
 * counters take turns on the counters.
 *
 * Every test emits in steps, each on all of its channels with interrupts
 * disabled, noting which events count on the CPU at that instant
 * (perfmon_cpu_event_counting): a rotation reaches a CPU through an
 * interrupt, so the answer holds for the whole step, and an event's count
 * must equal exactly the units of the steps it counted in. Steps come
 * every quarter tick (TSC), a sixteenth of the rate polled narrow
 * counters count exactly, and each test runs through about
 * TEST_PX_ROTATIONS rotations.
 *
 * Stated tolerances (the rest is exact):
 * - with S counters and 2S raw events taking turns, each event's running
 *   time is 1/2 of its enabled time +- (0.1 of it + the longest turn the
 *   steps saw). Turns go to the raw events that have held counters the
 *   least, so running times differ by about one turn at most: a fifteenth
 *   of the time on an idle host, where the shares come within 0.04 of 1/2;
 *   a host that stalls virtual CPUs (test boots beside busy processes on
 *   few cores) makes turns longer, the shares wider (0.38 seen) and the
 *   bound with them; each test prints its shares, longest turn and the
 *   time its steps were held off;
 * - the scaled estimate (count * enabled / running) is within 25% of the
 *   units emitted (a step falls on either side of a rotation), checked
 *   where the steps came at their pace (held off at most 5% of the time:
 *   the estimate assumes a constant rate);
 * - both only up to 4 CPUs (test_px_timing_checked);
 * - the running times of all events add up to S times the elapsed time
 *   within 2%, plus S times the time the attaches and the reads took (the
 *   events are attached and read one after the other).
 * A test that fails leaves nothing attached for the next ones: what it
 * attaches lives in test_px_set, which test_px_init clears.
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
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "mux_util.h"
#include "perfmon_util.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

/*
 * S counters, 2S CPU events on distinct raw events: half of them count at
 * any time, each about half of the time, exactly what was emitted while
 * it counted; running times add up to S times the elapsed time.
 */
TEST_DEFINE(perfmon_mux, cpu_events_take_fair_turns)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = cpu_count() - 1;

    test_px_pin_self(cpu);
    test_px_init(set, 2 * nr_slots, 0);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 2 * nr_slots);
    test_px_run_rotations(set, false);
    test_px_finish(set);
    test_px_assert_exact(set);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        test_px_assert_half_share(set, i);
    }

    test_px_report(set);
    test_px_assert_sum(set, nr_slots, set->values[0].time_enabled);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * A pinned event among S more raw events than counters: it counts
 * everything, its running time is its enabled time exactly; the others
 * take turns on the other counters, exactly.
 */
TEST_DEFINE(perfmon_mux, pinned_event_never_loses_time)
{
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = 0;

    test_px_pin_self(cpu);
    test_px_init(set, nr_slots + 1, 0);
    TEST_ASSERT_EQ(test_pm_emit_event_init(&set->events[0], 0,
                                           PERFMON_EF_PINNED), 0);

    /* Attached last, it takes a counter from a multiplexed event. */
    for (unsigned int i = set->nr_events; i-- > 0;) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    test_px_run_rotations(set, false);
    test_px_finish(set);
    test_px_assert_exact(set);
    TEST_ASSERT_EQ(set->values[0].count, set->emitted);
    TEST_ASSERT_EQ(set->values[0].time_running, set->values[0].time_enabled);

    for (unsigned int i = 1; i < set->nr_events; i++) {
        TEST_ASSERT_LT(set->values[i].time_running,
                       set->values[i].time_enabled);
    }

    /* Elapsed: since the first attach, the last event's. */
    test_px_assert_sum(set, nr_slots,
                       set->values[set->nr_events - 1].time_enabled);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * A recording shaped like perf record all (a tick sampler on every CPU)
 * holds one counter whatever the number of CPUs; 2(S-1) counting events
 * take turns on the S-1 left, each counting exactly what was emitted in
 * its turns, about half of the time; each sampler takes one sample per
 * tick its CPU accounted.
 */
TEST_DEFINE(perfmon_mux, turns_stay_exact_while_a_recording_holds_a_counter)
{
    static struct perfmon_event samplers[CPU_MAX];
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters() - 1;
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_session *session;
    uint64_t count, nr;

    test_pm_require_soft("software PMU only: the recording's tick samplers "
                         "share the counting events' device");
    test_px_pin_self(cpu);
    test_px_init(set, 2 * nr_slots, 0);
    TEST_ASSERT_EQ(perfmon_session_create(&session, 1U << 16), 0);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        struct perfmon_sample_attr attr = {
            .session = session, .period = 1, .cookie = c,
        };

        TEST_ASSERT_EQ(perfmon_event_init(&samplers[c], PMU_SOFT_EV_TICK,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_set_sampling(&samplers[c], &attr), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&samplers[c], c), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 1);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 1 + 2 * nr_slots);
    test_px_run_rotations(set, false);
    test_px_finish(set);
    test_px_assert_exact(set);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        test_px_assert_half_share(set, i);
    }

    test_px_report(set);
    test_px_assert_sum(set, nr_slots, set->values[0].time_enabled);

    /* A tick a period: never throttled, every period a sample. */
    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&samplers[c]), 0);
        TEST_ASSERT_EQ(perfmon_event_get(&samplers[c], &count), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&samplers[c], &nr), 0);
        TEST_ASSERT_EQ(nr, count);
        TEST_ASSERT_GT(count, 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * 2S thread events on the test thread, which hops over the CPUs: on each
 * CPU it counts on what that CPU's schedule gives it, exactly; each event
 * runs about half of the thread's run time, and their running times add
 * up to S times it.
 */
TEST_DEFINE(perfmon_mux, thread_events_take_turns_across_cpus)
{
    struct test_px_set *set = &test_px_set;
    struct thread *self = thread_self();
    unsigned int nr_slots = test_pm_nr_counters();
    uint64_t run;

    test_px_init(set, 2 * nr_slots, 2);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach(&set->events[i], self), 0);
    }

    run = test_px_run_time();
    test_px_run_rotations(set, true);
    thread_set_affinity(self, THREAD_AFFINITY_ALL);
    run = perfmon_tsc_to_ns(test_px_run_time() - run);
    test_px_finish(set);
    test_px_assert_exact(set);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        test_px_assert_share(set, set->values[i].time_running, run);
    }

    test_px_report(set);
    test_px_assert_sum(set, nr_slots, run);
}

/*
 * Two groups that cannot hold counters together take turns as units:
 * events emitted in lockstep read equal within each group, at every read,
 * and each group runs about half of the time.
 */
TEST_DEFINE(perfmon_mux, groups_take_turns_as_units)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int size = test_pm_nr_counters() / 2 + 1;
    struct perfmon_group *groups = set->groups;
    struct perfmon_group_value value;
    unsigned int cpu = cpu_count() - 1;
    uint64_t rotations;

    test_px_pin_self(cpu);
    test_px_init(set, 2 * size, 0);

    for (unsigned int g = 0; g < 2; g++) {
        TEST_ASSERT_EQ(perfmon_group_init(&groups[g]), 0);

        for (unsigned int i = 0; i < size; i++) {
            TEST_ASSERT_EQ(perfmon_group_add(&groups[g],
                                             &set->events[g * size + i]), 0);
        }

        TEST_ASSERT_EQ(perfmon_group_attach_cpu(&groups[g], cpu), 0);
    }

    rotations = perfmon_mux_nr_rotations(dev);

    while (perfmon_mux_nr_rotations(dev) - rotations < TEST_PX_ROTATIONS) {
        test_px_run(set, 1, false);

        for (unsigned int g = 0; g < 2; g++) {
            TEST_ASSERT_EQ(perfmon_group_read(&groups[g], &value), 0);

            for (unsigned int i = 0; i < size; i++) {
                TEST_ASSERT_EQ(value.counts[i], value.counts[0]);
                TEST_ASSERT_EQ(value.counts[i], set->expected[g * size + i]);
            }
        }
    }

    test_px_end_turns(set, cpu_get_tsc());

    for (unsigned int g = 0; g < 2; g++) {
        TEST_ASSERT_EQ(perfmon_group_read(&groups[g], &value), 0);
        TEST_ASSERT_EQ(perfmon_group_detach(&groups[g]), 0);
        test_px_assert_share(set, value.time_running, value.time_enabled);
    }

    test_px_report(set);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Wait, up to TEST_PX_PATIENCE rotation intervals, until a rotation
 * comes (rotated) or until three intervals pass without one: a loaded
 * host may run the rotation thread late. Return whether it came to pass.
 */
static bool
test_px_await_rotations(struct perfmon_dev *dev, bool rotated)
{
    uint64_t ticks = perfmon_mux_ticks();

    for (unsigned int k = 0; k < TEST_PX_PATIENCE; k++) {
        uint64_t start = perfmon_mux_nr_rotations(dev);

        thread_delay(rotated ? ticks : 3 * ticks);

        if ((perfmon_mux_nr_rotations(dev) != start) == rotated) {
            return true;
        }
    }

    return false;
}

/*
 * Rotations happen only while a raw event waits: none with as many raw
 * events as counters, and none once the extra one is detached (one under
 * way then may still complete).
 */
TEST_DEFINE(perfmon_mux, rotation_only_while_needed)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    uint64_t rotations;

    test_px_init(set, nr_slots + 1, 0);

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], 0), 0);
    }

    rotations = perfmon_mux_nr_rotations(dev);
    thread_delay(3 * perfmon_mux_ticks());
    TEST_ASSERT_EQ(perfmon_mux_nr_rotations(dev), rotations);

    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[nr_slots], 0), 0);
    TEST_ASSERT(test_px_await_rotations(dev, true));
    TEST_ASSERT_EQ(perfmon_event_detach(&set->events[nr_slots]), 0);
    TEST_ASSERT(test_px_await_rotations(dev, false));

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 0);
}

/*
 * Disable (enable) the events of the last unit of a test of
 * test_px_disabled_units: the last event, or the second group.
 */
typedef int (*test_px_toggle_fn)(struct test_px_set *set, bool enable,
                                 unsigned int first);

static int
test_px_toggle_event(struct test_px_set *set, bool enable, unsigned int first)
{
    struct perfmon_event *event = &set->events[first];

    return enable ? perfmon_event_enable(event) : perfmon_event_disable(event);
}

static int
test_px_toggle_group(struct test_px_set *set, bool enable, unsigned int first)
{
    (void)first;
    return enable ? perfmon_group_enable(&set->groups[1])
                  : perfmon_group_disable(&set->groups[1]);
}

/*
 * Whether events 0 to nr - 1 all count on this CPU now, or within
 * TEST_PX_PATIENCE ticks: a change that moves no counter sends no call,
 * and a rotation's call to this CPU, its schedule already written, may
 * still be on its way (late on a loaded host).
 */
static bool
test_px_await_all_counting(const struct test_px_set *set, unsigned int nr)
{
    for (unsigned int k = 0; k < TEST_PX_PATIENCE; k++) {
        unsigned long flags = cpu_intr_save();
        bool all = true;

        for (unsigned int i = 0; i < nr; i++) {
            all &= perfmon_cpu_event_counting(&set->events[i]);
        }

        cpu_intr_restore(flags);

        if (all) {
            return true;
        }

        thread_delay(1);
    }

    return false;
}

/*
 * Units take turns; the last one is disabled (toggle, its events from
 * first on): the others hold counters at once, all of them (this CPU
 * follows as soon as the calls reach it), then at every step, and
 * rotations stop; the disabled events count nothing. Enabled again, they
 * take turns again. Counts exact throughout.
 */
static void
test_px_disabled_units(struct test_px_set *set, unsigned int first,
                       test_px_toggle_fn toggle)
{
    struct perfmon_dev *dev = test_px_dev();
    uint64_t rotations, emitted, before[TEST_PX_MAX_EVENTS];

    test_px_run_rotations(set, false);
    TEST_ASSERT_EQ(toggle(set, false, first), 0);

    for (unsigned int i = first; i < set->nr_events; i++) {
        set->disabled[i] = true;
    }

    TEST_ASSERT(test_px_await_all_counting(set, first));
    TEST_ASSERT(test_px_await_rotations(dev, false));
    rotations = perfmon_mux_nr_rotations(dev);
    emitted = set->emitted;

    for (unsigned int i = 0; i < set->nr_events; i++) {
        before[i] = set->expected[i];
    }

    test_px_run(set, 4, false);
    TEST_ASSERT_EQ(perfmon_mux_nr_rotations(dev), rotations);

    for (unsigned int i = 0; i < first; i++) {
        TEST_ASSERT_EQ(set->expected[i] - before[i], set->emitted - emitted);
    }

    TEST_ASSERT_EQ(toggle(set, true, first), 0);

    for (unsigned int i = first; i < set->nr_events; i++) {
        set->disabled[i] = false;
    }

    test_px_run_rotations(set, false);
    test_px_finish(set);
    test_px_assert_exact(set);

    for (unsigned int i = first; i < set->nr_events; i++) {
        TEST_ASSERT_GT(set->expected[i], before[i]);
        TEST_ASSERT_LT(set->values[i].time_running,
                       set->values[i].time_enabled);
    }
}

/* S + 1 CPU events; the last one disabled gives up its turns. */
TEST_DEFINE(perfmon_mux, disabled_event_gives_up_its_turns)
{
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = cpu_count() - 1;

    test_px_pin_self(cpu);
    test_px_init(set, nr_slots + 1, 0);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    test_px_disabled_units(set, nr_slots, test_px_toggle_event);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* Two groups of S/2 + 1; the second one disabled gives up its turns. */
TEST_DEFINE(perfmon_mux, disabled_group_gives_up_its_turns)
{
    struct test_px_set *set = &test_px_set;
    unsigned int size = test_pm_nr_counters() / 2 + 1;
    unsigned int cpu = cpu_count() - 1;

    test_px_pin_self(cpu);
    test_px_init(set, 2 * size, 0);

    for (unsigned int g = 0; g < 2; g++) {
        TEST_ASSERT_EQ(perfmon_group_init(&set->groups[g]), 0);

        for (unsigned int i = 0; i < size; i++) {
            TEST_ASSERT_EQ(perfmon_group_add(&set->groups[g],
                                             &set->events[g * size + i]), 0);
        }

        TEST_ASSERT_EQ(perfmon_group_attach_cpu(&set->groups[g], cpu), 0);
        set->nr_groups++;
    }

    test_px_disabled_units(set, size, test_px_toggle_group);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
