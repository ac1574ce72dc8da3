/*
 * perfmon multiplexing with the software PMU, found by review: units that
 * come and go (attach, detach, enable, disable, a refused attach) while
 * others take turns move no counter they should not, and leave every
 * count and time exact. Suite perfmon_mux, with test_perfmon_mux.c, whose
 * header states the method and the tolerances.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "mux_util.h"
#include "perfmon_util.h"
#include "test_util.h"

/*
 * S + 1 CPU events take turns; one that counts is detached, so the S
 * left fit on the S counters and no rotation comes any more. The CPU,
 * which has no switch or attach to come, must count all of them at once:
 * a schedule change reaches every CPU.
 */
TEST_DEFINE(perfmon_mux, detach_frees_a_counter_for_a_waiting_event)
{
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = cpu_count() - 1;
    unsigned int gone = nr_slots + 1, idle = 0;
    unsigned long flags;

    test_px_pin_self(cpu);
    test_px_init(set, nr_slots + 1, 0);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    thread_delay(3 * perfmon_mux_ticks());
    flags = cpu_intr_save();

    for (unsigned int i = 0; i < set->nr_events; i++) {
        if (perfmon_cpu_event_counting(&set->events[i])) {
            gone = i;
            break;
        }
    }

    cpu_intr_restore(flags);
    TEST_ASSERT(gone <= nr_slots);
    TEST_ASSERT_EQ(perfmon_event_detach(&set->events[gone]), 0);

    /* Any rotation under way is over; no other comes. */
    thread_delay(3 * perfmon_mux_ticks());
    flags = cpu_intr_save();

    for (unsigned int i = 0; i < set->nr_events; i++) {
        if (i != gone && !perfmon_cpu_event_counting(&set->events[i])) {
            idle++;
        }
    }

    cpu_intr_restore(flags);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        if (i != gone) {
            TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
        }
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(idle, 0);
}

/*
 * A unit that could never hold its counters (a group of S events beside a
 * pinned event) is refused (EAGAIN), changing nothing, and the single
 * events beside the pinned one all get turns.
 */
TEST_DEFINE(perfmon_mux, unit_that_could_never_run_is_refused)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_group *group = &set->groups[0];

    test_px_pin_self(cpu);
    test_px_init(set, 1 + 2 * nr_slots, 0);
    TEST_ASSERT_EQ(test_pm_emit_event_init(&set->events[0], 0,
                                           PERFMON_EF_PINNED), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[0], cpu), 0);
    TEST_ASSERT_EQ(perfmon_group_init(group), 0);

    for (unsigned int i = 1; i <= nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_group_add(group, &set->events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_group_attach_cpu(group, cpu), EAGAIN);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 1);
    TEST_ASSERT(!perfmon_event_attached(&set->events[1]));

    for (unsigned int i = nr_slots + 1; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    test_px_run_rotations(set, false);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        if (perfmon_event_attached(&set->events[i])) {
            TEST_ASSERT_EQ(perfmon_event_read_value(&set->events[i],
                                                    &set->values[i]), 0);
            TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
        }
    }

    TEST_ASSERT_EQ(set->values[0].count, set->emitted);

    for (unsigned int i = nr_slots + 1; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(set->values[i].count, set->expected[i]);
        TEST_ASSERT_GT(set->values[i].time_running, 0);
        TEST_ASSERT_LT(set->values[i].time_running,
                       set->values[i].time_enabled);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* Whether every attached event of the set counts on this CPU now. */
static bool
test_px_all_counting_here(const struct test_px_set *set, unsigned int first,
                          unsigned int nr)
{
    unsigned long flags = cpu_intr_save();
    bool all = true;

    for (unsigned int i = first; i < first + nr; i++) {
        all &= perfmon_cpu_event_counting(&set->events[i]);
    }

    cpu_intr_restore(flags);
    return all;
}

/*
 * A refused group attach changes nothing, not even which counters the
 * other units hold. A group A of S - 2 raw events holds counters; a group
 * B of S - 2 sharing one of A's raw events would link them into a unit of
 * 2S - 5 > S slots: EAGAIN, and A must not lose its counters on the way
 * (it did: B was scheduled linked, which dropped A's counters, then
 * unlinked, when B's new slots went first). Then a pinned group that
 * finds no room beside S - 2 pinned events is refused without moving the
 * multiplexed unit that holds the counter left. The schedule's version
 * does not move, and A counts every unit.
 */
TEST_DEFINE(perfmon_mux, refused_group_attach_moves_no_counter)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters(), nr_a = nr_slots - 2;
    unsigned int cpu = cpu_count() - 1;
    uint64_t seq;
    struct perfmon_group *a = &set->groups[0], *b = &set->groups[1];
    struct perfmon_group_value value;

    test_px_pin_self(cpu);
    test_px_init(set, 2 * nr_a, 0);
    TEST_ASSERT_EQ(perfmon_group_init(a), 0);
    TEST_ASSERT_EQ(perfmon_group_init(b), 0);

    /* B's first event counts A's last raw event. */
    TEST_ASSERT_EQ(test_pm_emit_event_init(&set->events[nr_a], nr_a - 1,
                                           0), 0);

    for (unsigned int i = 0; i < nr_a; i++) {
        TEST_ASSERT_EQ(perfmon_group_add(a, &set->events[i]), 0);
        TEST_ASSERT_EQ(perfmon_group_add(b, &set->events[nr_a + i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_group_attach_cpu(a, cpu), 0);
    TEST_ASSERT(test_px_all_counting_here(set, 0, nr_a));
    seq = perfmon_mux_sched_seq(dev);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(b, cpu), EAGAIN);
    TEST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), nr_a);
    TEST_ASSERT(!perfmon_event_attached(&set->events[nr_a]));
    TEST_ASSERT(test_px_all_counting_here(set, 0, nr_a));

    for (unsigned int i = 0; i < nr_a; i++) {
        TEST_ASSERT_EQ(test_emit_paced(i, 10), 10);
    }

    TEST_ASSERT_EQ(perfmon_group_read(a, &value), 0);

    for (unsigned int i = 0; i < nr_a; i++) {
        TEST_ASSERT_EQ(value.counts[i], 10);
    }

    TEST_ASSERT_EQ(perfmon_group_detach(a), 0);

    /*
     * S - 2 pinned single events and a multiplexed one on the counter
     * left: a pinned group of 3 new raw events cannot fit.
     */
    test_px_init(set, nr_a + 4, 0);

    for (unsigned int i = 0; i < nr_a; i++) {
        TEST_ASSERT_EQ(test_pm_emit_event_init(&set->events[i], i,
                                               PERFMON_EF_PINNED), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[nr_a], cpu), 0);
    TEST_ASSERT_EQ(perfmon_group_init(b), 0);

    for (unsigned int i = nr_a + 1; i < nr_a + 4; i++) {
        TEST_ASSERT_EQ(test_pm_emit_event_init(&set->events[i], i,
                                               PERFMON_EF_PINNED), 0);
        TEST_ASSERT_EQ(perfmon_group_add(b, &set->events[i]), 0);
    }

    TEST_ASSERT(test_px_all_counting_here(set, 0, nr_a + 1));
    seq = perfmon_mux_sched_seq(dev);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(b, cpu), EAGAIN);
    TEST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), nr_a + 1);
    TEST_ASSERT(test_px_all_counting_here(set, 0, nr_a + 1));

    for (unsigned int i = 0; i <= nr_a; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

struct test_px_spinner {
    volatile bool started;
    volatile bool go;
};

static void
test_px_spinner_main(void *arg)
{
    struct test_px_spinner *s = arg;

    s->started = true;

    while (!s->go) {
        cpu_pause();
    }
}

/*
 * A thread event counts on its counter while its thread spins on CPU 1;
 * pinned events attached on CPU 0 take every other counter, and a
 * multiplexed event attached there waits; the rotation gives it the
 * counter (it has served less), which CPU 1 gives up at once or at the
 * switch away from the thread. The thread ran two ticks with its
 * counter: its event's running time shows it (a loss applied at the
 * switch once made it wrap to 0), and it then waited.
 */
TEST_DEFINE(perfmon_mux, counter_lost_by_a_running_thread_keeps_its_time)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    struct test_px_spinner spinner = { .started = false, .go = false };
    struct perfmon_event *event = &set->extra;
    struct perfmon_value value;
    struct thread *thread;
    uint64_t rotations;

    test_require_cpus(2);
    test_px_pin_self(0);
    test_px_init(set, nr_slots, 1);

    for (unsigned int i = 0; i + 1 < nr_slots; i++) {
        TEST_ASSERT_EQ(test_pm_emit_event_init(&set->events[i], 1 + i,
                                               PERFMON_EF_PINNED),
                       0);
    }

    TEST_ASSERT_EQ(test_pm_emit_event_init(event, 0, 0), 0);
    thread = test_thread_start("px-spin", 1ULL << 1, test_px_spinner_main,
                               &spinner);
    TEST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);

    while (!spinner.started) {
        thread_delay(1);
    }

    thread_delay(2);

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], 0), 0);
    }

    /* The multiplexed one waits; a rotation (ours or the thread's) gives
       it the counter, the thread's event having served more. */
    rotations = perfmon_mux_nr_rotations(dev);
    perfmon_mux_rotate(dev);
    TEST_ASSERT_GT(perfmon_mux_nr_rotations(dev), rotations);
    spinner.go = true;
    thread_join(thread);
    TEST_ASSERT_EQ(perfmon_event_read_value(event, &value), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(event), 0);

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    TEST_ASSERT_GT(value.time_running, 0);
    TEST_ASSERT_LT(value.time_running, value.time_enabled);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Attach decides the same whatever the order (issue: a pinned event
 * attached after a group of S raw events was accepted and the group never
 * ran again, while the group attached second got EAGAIN). A group holding
 * every counter: a pinned event of another raw event, on the CPU or on a
 * thread, is refused, changing nothing; pinned on one of the group's raw
 * events it pins the group's unit, which fits, and the group counts every
 * unit. Detached and attached the other way round: the group is refused.
 */
TEST_DEFINE(perfmon_mux, pinned_attach_cannot_starve_an_attached_unit)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_group *group = &set->groups[0];
    struct perfmon_event *pinned = &set->extra;
    struct perfmon_event *member_pin = &set->events[nr_slots];
    uint64_t seq;

    test_px_pin_self(cpu);
    test_px_init(set, nr_slots + 2, 0);
    TEST_ASSERT_EQ(perfmon_group_init(group), 0);

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_group_add(group, &set->events[i]), 0);
    }

    TEST_ASSERT_EQ(test_pm_emit_event_init(pinned, nr_slots,
                                           PERFMON_EF_PINNED), 0);
    TEST_ASSERT_EQ(test_pm_emit_event_init(member_pin, 0,
                                           PERFMON_EF_PINNED), 0);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(group, cpu), 0);
    TEST_ASSERT(test_px_all_counting_here(set, 0, nr_slots));
    seq = perfmon_mux_sched_seq(dev);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(pinned, cpu), EAGAIN);
    TEST_ASSERT_EQ(perfmon_event_attach(pinned, thread_self()), EAGAIN);
    TEST_ASSERT(!perfmon_event_attached(pinned));
    TEST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), nr_slots);
    TEST_ASSERT(test_px_all_counting_here(set, 0, nr_slots));

    /* Pinning the group's own raw event pins its unit: room enough. */
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(member_pin, cpu), 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), nr_slots);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(pinned, cpu), EAGAIN);

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(test_emit_paced(i, 10), 10);
    }

    TEST_ASSERT(test_px_all_counting_here(set, 0, nr_slots + 1));
    TEST_ASSERT_EQ(perfmon_event_detach(member_pin), 0);

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_event_read_value(&set->events[i],
                                                &set->values[i]), 0);
        TEST_ASSERT_EQ(set->values[i].count, 10);
    }

    /* The other order: the pinned event first, then the group. */
    TEST_ASSERT_EQ(perfmon_group_detach(group), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(pinned, cpu), 0);
    seq = perfmon_mux_sched_seq(dev);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(group, cpu), EAGAIN);
    TEST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 1);
    TEST_ASSERT_EQ(perfmon_event_detach(pinned), 0);

    /*
     * An unpinned group that shares a pinned event's raw event joins its
     * pinned unit: refused when it would leave an attached single event
     * no counter (it was accepted, then refused the other way round).
     */
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(member_pin, cpu), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[nr_slots + 1], cpu),
                   0);
    seq = perfmon_mux_sched_seq(dev);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(group, cpu), EAGAIN);
    TEST_ASSERT_EQ(perfmon_mux_sched_seq(dev), seq);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 2);
    TEST_ASSERT(test_px_all_counting_here(set, nr_slots, 2));
    TEST_ASSERT_EQ(perfmon_event_detach(&set->events[nr_slots + 1]), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(member_pin), 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * An event holds its counter alone a quarter second, then is disabled;
 * S new raw events attach, and it is enabled again: it must start level
 * with the least served of them and get a turn within a few rotations.
 * (It kept the time it had served alone, while the new slots started
 * from the least served slot that wants a counter, none: it waited until
 * they had caught up on it, a quarter second of turns with no running
 * time.)
 */
TEST_DEFINE(perfmon_mux, enabled_again_starts_level_with_new_slots)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_event *event = &set->events[0];
    bool counted = false;

    test_px_pin_self(cpu);
    test_px_init(set, nr_slots + 1, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(event, cpu), 0);
    thread_delay(CLOCK_HZ / 4);
    TEST_ASSERT_EQ(perfmon_event_disable(event), 0);

    for (unsigned int i = 1; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    TEST_ASSERT_EQ(perfmon_event_enable(event), 0);

    /* Rotations at once: the new slots gain almost nothing meanwhile. */
    for (unsigned int k = 0; k < 2 * set->nr_events && !counted; k++) {
        unsigned long flags;

        perfmon_mux_rotate(dev);
        flags = cpu_intr_save();
        counted = perfmon_cpu_event_counting(event);
        cpu_intr_restore(flags);
    }

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT(counted);
}

/*
 * S + 1 CPU events; the last one is disabled and waits without a counter
 * for a quarter second while the S others hold theirs. A new event
 * attached on its raw event makes the slot want a counter again: level
 * with the least served, as an enable would, it must wait its turn like
 * the others within TEST_PX_ROTATIONS rotations. (Attach did not level
 * it: that far behind, it held its counter for the next 2 seconds, about
 * 100 rotations.) Once it first counts, its times tell whether it waited
 * since (enabled grew more than running): glimpses of it between ticks
 * alone can miss a turn of one interval in nine when this thread gets
 * few ticks (64 CPUs on a loaded host).
 */
TEST_DEFINE(perfmon_mux, attach_to_disabled_slot_does_not_catch_up)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int nr_slots = test_pm_nr_counters();
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_event *last = &set->events[nr_slots];
    struct perfmon_value mark, now;
    bool waited = false, marked = false;
    unsigned long flags;
    uint64_t start;

    test_px_pin_self(cpu);
    test_px_init(set, nr_slots + 1, 0);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    TEST_ASSERT_EQ(perfmon_event_disable(last), 0);
    thread_delay(CLOCK_HZ / 4);
    TEST_ASSERT_EQ(test_pm_emit_event_init(&set->extra, nr_slots, 0), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->extra, cpu), 0);
    start = perfmon_mux_nr_rotations(dev);

    for (unsigned int k = 0; k < TEST_PX_PATIENCE * perfmon_mux_ticks()
                             && !waited; k++) {
        if (perfmon_mux_nr_rotations(dev) - start >= TEST_PX_ROTATIONS) {
            break;
        }

        thread_delay(1);

        /* After the first rotation, which may not have come yet. */
        if (perfmon_mux_nr_rotations(dev) != start) {
            bool counting;

            flags = cpu_intr_save();
            counting = perfmon_cpu_event_counting(&set->extra);
            cpu_intr_restore(flags);
            waited = !counting;

            if (counting && !marked) {
                TEST_ASSERT_EQ(perfmon_event_read_value(&set->extra,
                                                        &mark), 0);
                marked = true;
            }
        }
    }

    /* Never counting is waiting too; else the times since it first did. */
    TEST_ASSERT_EQ(perfmon_event_read_value(&set->extra, &now), 0);
    waited = waited || !marked
             || (now.time_enabled - mark.time_enabled
                 > now.time_running - mark.time_running);
    TEST_ASSERT_EQ(perfmon_event_detach(&set->extra), 0);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT(waited);
}

/*
 * A disabled event keeps its counter while nothing waits; a new raw
 * event attached beside it, with free counters left, takes one of those:
 * the disabled event's counter must not move (every move is a cross-CPU
 * call to every CPU, which an attach given a free counter does not need).
 */
TEST_DEFINE(perfmon_mux, attach_beside_disabled_event_moves_nothing)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int cpu = cpu_count() - 1;
    unsigned int before, after, width;
    bool held_before, held_after;

    test_px_pin_self(cpu);
    test_px_init(set, 2, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[0], cpu), 0);
    TEST_ASSERT_EQ(perfmon_event_disable(&set->events[0]), 0);
    held_before = perfmon_slot_counter(dev, set->events[0].slot_index, &before,
                                       &width);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[1], cpu), 0);
    held_after = perfmon_slot_counter(dev, set->events[0].slot_index, &after,
                                      &width);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT(held_before);
    TEST_ASSERT(held_after);
    TEST_ASSERT_EQ(after, before);
}
