/*
 * perfmon's clocks (PERFMON_EF_CLOCK, kern/perfmon.h): events that count
 * the nanoseconds they are enabled (a thread's run time, a CPU's time)
 * and hold no counter, so that they are never multiplexed, never take a
 * counter from the counting events and attach even when pinned events
 * hold every counter. A clock's count and times come from one snapshot:
 * time_running equals time_enabled, and the count equals time_enabled
 * until a reset. Exact where the times are (equalities); the times
 * themselves are bounded by the run times or TSC values read around the
 * attach and the read. Suite perfmon_mux, whose events and steps
 * (mux_util.h) the multiplexed cases use.
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

#include "mux_util.h"
#include "perfmon_util.h"
#include "test_util.h"

#define TEST_PC_CHANNEL     4
#define TEST_PC_UNITS       100
#define TEST_PC_SLEEP       3       /* ticks */

/* A clock's value: its three figures are one time (no reset yet). */
static void
test_pc_assert_clock(const struct perfmon_value *value)
{
    TEST_ASSERT_EQ(value->count, value->time_enabled);
    TEST_ASSERT_EQ(value->time_running, value->time_enabled);
    TEST_ASSERT_EQ(perfmon_scale(value->count, value->time_enabled,
                                 value->time_running), value->count);
}

/*
 * A time (ns) measured between a start taken in [start_lo, start_hi] and
 * an end in [end_lo, end_hi] (TSC cycles or run times).
 */
static void
test_pc_assert_between(uint64_t ns, uint64_t start_lo, uint64_t start_hi,
                       uint64_t end_lo, uint64_t end_hi)
{
    TEST_ASSERT_GE(ns, perfmon_tsc_to_ns(end_lo - start_hi));
    TEST_ASSERT_LE(ns, perfmon_tsc_to_ns(end_hi - start_lo));
}

/*
 * Bad input: each is EINVAL and changes nothing (an event initialized
 * before a refused init stays as it was, byte for byte).
 */
TEST_DEFINE(perfmon_mux, clock_bad_input_is_refused)
{
    static const unsigned int bad_flags[] = {
        PERFMON_EF_CLOCK | PERFMON_EF_RAW,
        PERFMON_EF_CLOCK | PERFMON_EF_SW,
        PERFMON_EF_CLOCK | PERFMON_EF_PINNED,
    };
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    struct perfmon_event copy;
    struct perfmon_session *session;
    struct perfmon_sample_attr attr;
    struct perfmon_group group;
    struct perfmon_value value;
    uint64_t v;

    test_px_init(set, 0, TEST_PC_CHANNEL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    memcpy(&copy, clock, sizeof(copy));

    for (unsigned int i = 0; i < ARRAY_SIZE(bad_flags); i++) {
        TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                          bad_flags[i]), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_check(PERFMON_CLOCK, bad_flags[i]),
                       EINVAL);
    }

    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK + 1,
                                      PERFMON_EF_CLOCK), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_check(PERFMON_CLOCK + 1, PERFMON_EF_CLOCK),
                   EINVAL);
    TEST_ASSERT(memcmp(&copy, clock, sizeof(copy)) == 0);

    /* KERN and USER are ignored, as for software events. */
    TEST_ASSERT_EQ(perfmon_event_check(PERFMON_CLOCK, PERFMON_EF_CLOCK), 0);
    TEST_ASSERT_EQ(perfmon_event_check(PERFMON_CLOCK, PERFMON_EF_CLOCK
                                       | PERFMON_EF_KERN | PERFMON_EF_USER),
                   0);

    /* Never attached: no count to read. */
    TEST_ASSERT_EQ(perfmon_event_get(clock, &v), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_detach(clock), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_enable(clock), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_disable(clock), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_reset(clock), EINVAL);

    /* No sampling: a clock has no counter to sample. */
    TEST_ASSERT_EQ(perfmon_session_create(&session, 4096), 0);
    attr = (struct perfmon_sample_attr){ .session = session, .period = 10 };
    TEST_ASSERT_EQ(perfmon_event_set_sampling(clock, &attr), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_period(clock, 10), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_get_period(clock, &v), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_refresh(clock, 1), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_get_samples(clock, &v), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);

    /* No group. */
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, clock), EINVAL);
    TEST_ASSERT_EQ(group.nr_events, 0);
    TEST_ASSERT(memcmp(&copy, clock, sizeof(copy)) == 0);

    /* Targets that are not. */
    TEST_ASSERT_EQ(perfmon_event_attach(clock, NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(clock, cpu_count()), EINVAL);
    TEST_ASSERT(!perfmon_event_attached(clock));

    /* Attached: a second attach, and a re-init, are refused. */
    TEST_ASSERT_EQ(perfmon_event_attach(clock, thread_self()), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(clock, thread_self()), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(clock, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(clock, &attr), EINVAL);
    TEST_ASSERT(perfmon_event_attached(clock));
    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(clock), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_enable(clock), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_disable(clock), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_reset(clock), EINVAL);
}

/*
 * A thread's clock counts its run time, sleeping or not, and takes no
 * slot: the same figures at a read and after the detach, each within the
 * thread's run time around the attach and the read.
 */
TEST_DEFINE(perfmon_mux, clock_of_a_thread_counts_its_run_time)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    struct perfmon_dev *soft = test_pm_soft_dev();
    unsigned int slots = perfmon_dev_nr_used_slots(soft);
    struct perfmon_value value;
    uint64_t r0, r1, r2, r3, count;

    test_px_init(set, 0, TEST_PC_CHANNEL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    r0 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_attach(clock, thread_self()), 0);
    r1 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), slots);

    for (unsigned int k = 0; k < 4; k++) {
        test_emit_paced(TEST_PC_CHANNEL, TEST_PC_UNITS);
        thread_delay(TEST_PC_SLEEP);
    }

    r2 = test_px_run_time();
    count = perfmon_event_read(clock);
    r3 = test_px_run_time();
    test_pc_assert_between(count, r0, r1, r2, r3);

    r2 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    r3 = test_px_run_time();
    test_diag("count %llu ns, enabled %llu ns, running %llu ns",
              (unsigned long long)value.count,
              (unsigned long long)value.time_enabled,
              (unsigned long long)value.time_running);
    test_pc_assert_clock(&value);
    test_pc_assert_between(value.time_enabled, r0, r1, r2, r3);
    TEST_ASSERT_GE(value.count, count);

    r2 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);
    r3 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    test_pc_assert_clock(&value);
    test_pc_assert_between(value.time_enabled, r0, r1, r2, r3);
    TEST_ASSERT_EQ(perfmon_event_read(clock), value.count);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), slots);
}

/* A worker that runs and sleeps, its clock read from the test's thread. */
struct test_pc_worker {
    bool go;
    bool done;
};

static void
test_pc_worker_main(void *arg)
{
    struct test_pc_worker *w = arg;

    while (!__atomic_load_n(&w->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    for (unsigned int k = 0; k < 4; k++) {
        test_spin_ticks(1);
        thread_delay(TEST_PC_SLEEP);
    }

    __atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
}

/*
 * Another thread's clock, read while it runs or sleeps on another CPU
 * (cross-CPU snapshots), and after it exited: one time in its three
 * figures, never going back, at most the thread's run time.
 */
TEST_DEFINE(perfmon_mux, clock_of_another_thread_read_anywhere)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    struct test_pc_worker w = { .go = false, .done = false };
    struct perfmon_value value, last = { 0 };
    struct thread *thread;
    uint64_t affinity;
    bool ok;

    test_px_init(set, 0, TEST_PC_CHANNEL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    affinity = (cpu_count() > 1) ? 1ULL << (cpu_count() - 1) : 0;
    thread = test_thread_start("test_pc_worker", affinity,
                               test_pc_worker_main, &w);
    ok = (perfmon_event_attach(clock, thread) == 0);
    __atomic_store_n(&w.go, true, __ATOMIC_RELEASE);

    /* No assertion while the worker runs: it reads the stack's w. */
    while (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE)) {
        ok = ok && perfmon_event_read_value(clock, &value) == 0
             && value.count == value.time_enabled
             && value.time_running == value.time_enabled
             && value.time_enabled >= last.time_enabled;
        last = value;
        thread_yield();
    }

    thread_join(thread);
    TEST_ASSERT(ok);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    test_pc_assert_clock(&value);
    TEST_ASSERT_GE(value.time_enabled, last.time_enabled);
    TEST_ASSERT_LE(value.time_enabled,
                   perfmon_tsc_to_ns(thread_run_total(thread)));
    TEST_ASSERT_GT(value.time_enabled, 0);
    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    test_pc_assert_clock(&value);
}

/*
 * A CPU's clock counts its time since the attach, whatever runs there,
 * read from that CPU and from another one.
 */
TEST_DEFINE(perfmon_mux, clock_of_a_cpu_counts_its_time)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_value value;
    uint64_t t0, t1, t2, t3;

    test_px_init(set, 0, TEST_PC_CHANNEL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    test_px_pin_self(cpu);
    t0 = cpu_get_tsc();
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(clock, cpu), 0);
    t1 = cpu_get_tsc();
    thread_delay(TEST_PC_SLEEP);
    t2 = cpu_get_tsc();
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    t3 = cpu_get_tsc();
    test_pc_assert_clock(&value);
    test_pc_assert_between(value.time_enabled, t0, t1, t2, t3);

    /* From another CPU: a cross-CPU snapshot, the same kind of figures. */
    test_px_pin_self(0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    test_pc_assert_clock(&value);
    TEST_ASSERT_GE(value.time_enabled, perfmon_tsc_to_ns(t2 - t1));
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    test_pc_assert_clock(&value);
    TEST_ASSERT_GE(value.time_enabled, perfmon_tsc_to_ns(t2 - t1));
}

/*
 * Disable stops the count and the times, read without a snapshot as the
 * same figures; reset zeroes the count and leaves the times, disabled or
 * enabled; enable counts on from the count where it stood.
 */
TEST_DEFINE(perfmon_mux, clock_disable_enable_reset)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    struct perfmon_value v1, v2, v3;
    uint64_t r0, r1, r2, r3;

    test_px_init(set, 0, TEST_PC_CHANNEL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(clock, thread_self()), 0);
    test_spin_ticks(1);
    TEST_ASSERT_EQ(perfmon_event_disable(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_disable(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &v1), 0);
    test_pc_assert_clock(&v1);
    TEST_ASSERT_GT(v1.count, 0);

    /* Disabled: nothing moves while the thread runs. */
    test_spin_ticks(1);
    TEST_ASSERT_EQ(perfmon_event_read(clock), v1.count);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &v2), 0);
    TEST_ASSERT_EQ(v2.count, v1.count);
    TEST_ASSERT_EQ(v2.time_enabled, v1.time_enabled);
    TEST_ASSERT_EQ(v2.time_running, v1.time_running);

    /* Reset while disabled: count 0, times kept. */
    TEST_ASSERT_EQ(perfmon_event_reset(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &v2), 0);
    TEST_ASSERT_EQ(v2.count, 0);
    TEST_ASSERT_EQ(v2.time_enabled, v1.time_enabled);

    /* Enabled again: the count goes on from 0 as the times from v1's. */
    r0 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_enable(clock), 0);
    r1 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_enable(clock), 0);
    test_spin_ticks(1);
    r2 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &v2), 0);
    r3 = test_px_run_time();
    TEST_ASSERT_EQ(v2.time_running, v2.time_enabled);
    test_pc_assert_between(v2.count, r0, r1, r2, r3);
    /* One conversion of a difference against a difference of two: 1 ns. */
    TEST_ASSERT_LE(v2.count, v2.time_enabled - v1.time_enabled + 1);
    TEST_ASSERT_GE(v2.count + 1, v2.time_enabled - v1.time_enabled);

    /* Reset while enabled: the count starts again, the times go on. */
    TEST_ASSERT_EQ(perfmon_event_reset(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &v3), 0);
    TEST_ASSERT_LT(v3.count, v2.count);
    TEST_ASSERT_GE(v3.time_enabled, v2.time_enabled);
    TEST_ASSERT_EQ(v3.time_running, v3.time_enabled);
    TEST_ASSERT_LE(v3.count, v3.time_enabled - v2.time_enabled + 1);

    /* Detached while disabled: the count as it was frozen. */
    TEST_ASSERT_EQ(perfmon_event_disable(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &v2), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &v3), 0);
    TEST_ASSERT_EQ(v3.count, v2.count);
    TEST_ASSERT_EQ(v3.time_enabled, v2.time_enabled);
    TEST_ASSERT_EQ(v3.time_running, v2.time_enabled);
    TEST_ASSERT_EQ(perfmon_event_read(clock), v2.count);
}

/*
 * As many events as counters, and a clock, on one thread: the clock
 * takes no counter, so nothing waits (no rotation has anything to do)
 * and every event runs all its time enabled, exactly counted. Were the
 * clock a counter's event, S + 1 raw events would take turns.
 */
TEST_DEFINE(perfmon_mux, clock_takes_no_counter_from_the_events)
{
    struct perfmon_dev *soft = test_pm_soft_dev();
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    struct thread *self = thread_self();
    struct perfmon_value value;

    test_px_init(set, soft->nr_counters, TEST_PC_CHANNEL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach(&set->events[i], self), 0);
    }

    TEST_ASSERT_EQ(perfmon_event_attach(clock, self), 0);
    TEST_ASSERT(!perfmon_mux_rotate(soft));
    test_px_run(set, 4, true);
    TEST_ASSERT(!perfmon_mux_rotate(soft));
    thread_set_affinity(self, THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    test_pc_assert_clock(&value);
    test_px_finish(set);
    test_px_assert_exact(set);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(set->values[i].count, set->emitted);
        TEST_ASSERT_EQ(set->values[i].time_running,
                       set->values[i].time_enabled);
    }

    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);
}

/*
 * 2S + 1 events on S counters and a clock, on one thread hopping over the
 * CPUs: the events take turns (some run less than enabled) and count
 * exactly what they were emitted while counting, while the clock is
 * never held off: its three figures are one time at every read.
 */
TEST_DEFINE(perfmon_mux, clock_never_multiplexed_among_waiting_events)
{
    struct perfmon_dev *soft = test_pm_soft_dev();
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    struct thread *self = thread_self();
    struct perfmon_value value;
    uint64_t r0, r1, r2, r3;
    unsigned int nr_cut = 0;

    test_px_init(set, 2 * soft->nr_counters + 1, TEST_PC_CHANNEL);
    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    r0 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_attach(clock, self), 0);
    r1 = test_px_run_time();

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach(&set->events[i], self), 0);
    }

    for (unsigned int k = 0; k < 3; k++) {
        test_px_run(set, TEST_PX_ROTATIONS / 3, true);
        TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
        test_pc_assert_clock(&value);
    }

    thread_set_affinity(self, THREAD_AFFINITY_ALL);
    test_px_finish(set);
    r2 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);
    r3 = test_px_run_time();
    test_px_assert_exact(set);

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_LE(set->values[i].time_running,
                       set->values[i].time_enabled);
        nr_cut += (set->values[i].time_running < set->values[i].time_enabled);
    }

    /* S + 1 events cannot all hold S counters: at least one waited. */
    TEST_ASSERT_GE(nr_cut, 1);
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    test_diag("clock %llu ns; %u of %u events ran less than enabled",
              (unsigned long long)value.count, nr_cut, set->nr_events);
    test_pc_assert_clock(&value);
    test_pc_assert_between(value.time_enabled, r0, r1, r2, r3);
}

/*
 * Every counter held by pinned CPU events: a pinned event more is
 * refused, but a clock attaches to that CPU (and to a thread) and counts
 * all its time enabled.
 */
TEST_DEFINE(perfmon_mux, clock_attaches_when_pinned_events_hold_every_counter)
{
    struct perfmon_dev *soft = test_pm_soft_dev();
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *clock = &set->extra;
    struct perfmon_event *more = &set->events[soft->nr_counters];
    struct perfmon_event thread_clock = { .magic = 0 };
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_value value;
    uint64_t t0, t1, t2, t3, r0, r1, r2, r3;

    test_px_init(set, soft->nr_counters + 1, TEST_PC_CHANNEL);
    test_detach_on_failure(&thread_clock);

    for (unsigned int i = 0; i <= soft->nr_counters; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&set->events[i],
                                          PMU_SOFT_EV_EMIT + TEST_PC_CHANNEL
                                          + i, PERFMON_EF_SW
                                          | PERFMON_EF_PINNED), 0);
    }

    for (unsigned int i = 0; i < soft->nr_counters; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], cpu), 0);
    }

    TEST_ASSERT_EQ(perfmon_event_attach_cpu(more, cpu), EAGAIN);
    TEST_ASSERT(!perfmon_event_attached(more));

    TEST_ASSERT_EQ(perfmon_event_init(clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    TEST_ASSERT_EQ(perfmon_event_init(&thread_clock, PERFMON_CLOCK,
                                      PERFMON_EF_CLOCK), 0);
    test_px_pin_self(cpu);
    t0 = cpu_get_tsc();
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(clock, cpu), 0);
    t1 = cpu_get_tsc();
    r0 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_attach(&thread_clock, thread_self()), 0);
    r1 = test_px_run_time();
    test_spin_ticks(2);
    t2 = cpu_get_tsc();
    TEST_ASSERT_EQ(perfmon_event_read_value(clock, &value), 0);
    t3 = cpu_get_tsc();
    test_pc_assert_clock(&value);
    test_pc_assert_between(value.time_enabled, t0, t1, t2, t3);
    r2 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_read_value(&thread_clock, &value), 0);
    r3 = test_px_run_time();
    test_pc_assert_clock(&value);
    test_pc_assert_between(value.time_enabled, r0, r1, r2, r3);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);

    TEST_ASSERT_EQ(perfmon_event_detach(&thread_clock), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(clock), 0);

    for (unsigned int i = 0; i < soft->nr_counters; i++) {
        TEST_ASSERT_EQ(perfmon_event_read_value(&set->events[i], &value), 0);
        TEST_ASSERT_EQ(value.time_running, value.time_enabled);
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }
}
