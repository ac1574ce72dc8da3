/*
 * perfmon groups, enable/disable/reset and times, with the software PMU:
 * counts are exact, times are checked against the clock and against the
 * scheduler's run time accounting; concurrent group reads stay
 * consistent. Suite perfmon_group, with test_perfmon_group.c.
 *
 * Runs with every counter width of the narrow-counter boots; emitting
 * threads keep each CPU to the rate the software PMU promises
 * (test_emit_paced, test_emit_paced_pair).
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

#define TEST_PG_TICK_NS         (1000000000ULL / CLOCK_HZ)
#define TEST_PG_PAIRS_PER_TICK  8

static uint64_t
test_pg_abs_diff(uint64_t a, uint64_t b)
{
    return (a > b) ? a - b : b - a;
}

/* ------------------------------------------------------------------ */
/* Enable, disable, reset                                              */
/* ------------------------------------------------------------------ */

/*
 * Units emitted while an event is disabled are not counted; reset zeroes
 * it, enabled or not; counts are exact afterwards; its times stop while
 * it is disabled and after detach. attach_cpu: a CPU event of this CPU,
 * else a thread event of this thread.
 */
static void
test_pg_enable_disable_reset(bool cpu_event)
{
    struct perfmon_event event;
    struct perfmon_value v1, v2;
    uint64_t start, span;
    unsigned long flags;

    thread_set_affinity(thread_self(), 1ULL << 0);
    test_pm_init_emit(&event, 0);
    TEST_ASSERT_EQ(perfmon_event_enable(&event), EINVAL);    /* detached */
    TEST_ASSERT_EQ(perfmon_event_disable(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_reset(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v1), EINVAL);

    if (cpu_event) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), 0);
    } else {
        TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), 0);
    }

    /* A failure leaves nothing attached for the tests after it. */
    test_detach_on_failure(&event);
    pmu_soft_emit(10);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 10);
    TEST_ASSERT_EQ(perfmon_event_enable(&event), 0);        /* no-op */
    TEST_ASSERT_EQ(perfmon_event_read(&event), 10);
    TEST_ASSERT_EQ(perfmon_event_disable(&event), 0);
    pmu_soft_emit(20);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 10);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v1), 0);
    TEST_ASSERT_EQ(v1.count, 10);

    /* Disabled: the times stand still. */
    thread_delay(2);
    pmu_soft_emit(20);
    TEST_ASSERT_EQ(perfmon_event_disable(&event), 0);       /* no-op */
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v2), 0);
    TEST_ASSERT_EQ(v2.count, 10);
    TEST_ASSERT_EQ(v2.time_enabled, v1.time_enabled);
    TEST_ASSERT_EQ(v2.time_running, v1.time_running);
    TEST_ASSERT_GT(v1.time_enabled, 0);

    /* Enabled again: counts on from the frozen count, times grow. */
    TEST_ASSERT_EQ(perfmon_event_enable(&event), 0);
    pmu_soft_emit(5);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 15);
    thread_delay(1);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v2), 0);
    TEST_ASSERT_EQ(v2.count, 15);
    TEST_ASSERT_GT(v2.time_enabled, v1.time_enabled);
    TEST_ASSERT_GT(v2.time_running, v1.time_running);

    /* Reset, enabled: zero, then exact. */
    TEST_ASSERT_EQ(perfmon_event_reset(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 0);
    pmu_soft_emit(7);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 7);

    /* Reset, disabled: zero, stays zero, counts from zero once enabled. */
    TEST_ASSERT_EQ(perfmon_event_disable(&event), 0);
    pmu_soft_emit(9);
    TEST_ASSERT_EQ(perfmon_event_reset(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 0);
    pmu_soft_emit(3);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_enable(&event), 0);
    pmu_soft_emit(4);

    /* Interrupts off: a CPU event of this CPU reads in place. */
    flags = cpu_intr_save();
    pmu_soft_emit(1);
    cpu_intr_restore(flags);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 5);

    /* Detached disabled: the final count is the frozen one. */
    TEST_ASSERT_EQ(perfmon_event_disable(&event), 0);
    pmu_soft_emit(8);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 5);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v1), 0);
    TEST_ASSERT_EQ(v1.count, 5);
    thread_delay(1);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v2), 0);
    TEST_ASSERT_EQ(v2.time_enabled, v1.time_enabled);
    TEST_ASSERT_EQ(perfmon_event_enable(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_reset(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 5);

    /*
     * Attached again: enabled, from zero, times from zero: within the
     * time the attach and the read took (a bound that holds however long
     * the host stalls this virtual CPU; the first attachment's time
     * does not).
     */
    start = cpu_get_tsc();
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), 0);
    pmu_soft_emit(2);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v2), 0);
    span = perfmon_tsc_to_ns(cpu_get_tsc() - start);
    TEST_ASSERT_EQ(v2.count, 2);
    TEST_ASSERT_LE(v2.time_enabled, span);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

TEST_DEFINE(perfmon_group, thread_event_enable_disable_reset_exact)
{
    test_pg_enable_disable_reset(false);
}

TEST_DEFINE(perfmon_group, cpu_event_enable_disable_reset_exact)
{
    test_pg_enable_disable_reset(true);
}

/*
 * A group enabled and disabled as a unit: every member freezes at the
 * same instant and shares the times, so members fed in lockstep stay
 * equal; a group reset zeroes them all.
 */
TEST_DEFINE(perfmon_group, group_enable_disable_reset)
{
    struct perfmon_event events[3];
    struct perfmon_group group;
    struct perfmon_group_value value;
    struct perfmon_value v[3];

    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int i = 0; i < ARRAY_SIZE(events); i++) {
        test_pm_init_emit(&events[i], i);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_group_attach(&group, thread_self()), 0);
    test_emit_paced_pair(0, 6);
    pmu_soft_emit_channel(2, 1);
    TEST_ASSERT_EQ(perfmon_group_disable(&group), 0);
    test_emit_paced_pair(0, 9);
    pmu_soft_emit_channel(2, 1);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], 6);
    TEST_ASSERT_EQ(value.counts[1], 6);
    TEST_ASSERT_EQ(value.counts[2], 1);

    /* Each member read alone has the group's times. */
    for (unsigned int i = 0; i < ARRAY_SIZE(events); i++) {
        TEST_ASSERT_EQ(perfmon_event_read_value(&events[i], &v[i]), 0);
        TEST_ASSERT_EQ(v[i].time_enabled, value.time_enabled);
        TEST_ASSERT_EQ(v[i].time_running, value.time_running);
    }

    TEST_ASSERT_EQ(perfmon_group_reset(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_enable(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_enable(&group), 0);        /* no-op */
    test_emit_paced_pair(0, 4);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], 4);
    TEST_ASSERT_EQ(value.counts[1], 4);
    TEST_ASSERT_EQ(value.counts[2], 0);
    TEST_ASSERT_GE(value.time_enabled, v[0].time_enabled);
    TEST_ASSERT_EQ(perfmon_group_reset(&group), 0);
    test_emit_paced_pair(0, 2);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], 2);
    TEST_ASSERT_EQ(value.counts[1], 2);
    TEST_ASSERT_EQ(perfmon_event_read(&events[1]), 2);
}

/* ------------------------------------------------------------------ */
/* Times                                                               */
/* ------------------------------------------------------------------ */

/* A call's time: the clock before it, the TSC around it, the clock after. */
struct test_pg_span {
    uint64_t clock0, tsc0, tsc1, clock1;
};

#define TEST_PG_SPAN(span, call)                                        \
    do {                                                                \
        (span)->clock0 = clock_get_time();                              \
        (span)->tsc0 = cpu_get_tsc();                                   \
        call;                                                           \
        (span)->tsc1 = cpu_get_tsc();                                   \
        (span)->clock1 = clock_get_time();                              \
    } while (0)

/* The TSCs of two CPUs may differ by a little. */
#define TEST_PG_SKEW_NS     100000

/*
 * A time measured from one call to another lies between the end of the
 * first and the start of the second, and the beginning of the first and
 * the end of the second (the calls' own time, long when the host stalls
 * a virtual CPU); and within one tick, plus the calls' time, of the
 * clock's ticks around both.
 */
static void
test_pg_check_time(uint64_t time, const struct test_pg_span *from,
                   const struct test_pg_span *to)
{
    uint64_t lo = perfmon_tsc_to_ns(to->tsc0 - from->tsc1);
    uint64_t hi = perfmon_tsc_to_ns(to->tsc1 - from->tsc0);
    uint64_t ticks = to->clock1 - from->clock0;

    TEST_ASSERT_GE(time + TEST_PG_SKEW_NS, lo);
    TEST_ASSERT_LE(time, hi + TEST_PG_SKEW_NS);
    TEST_ASSERT_LE(test_pg_abs_diff(time, ticks * TEST_PG_TICK_NS),
                   TEST_PG_TICK_NS + (hi - lo) + TEST_PG_SKEW_NS);
}

/*
 * A CPU event on an otherwise idle CPU (the last one; the test runs on
 * CPU 0) runs all the time it is enabled (running == enabled), and that
 * time follows the clock (test_pg_check_time); it stands still while the
 * event is disabled and after detach. The ticks it counts are no more
 * than that time allows.
 */
TEST_DEFINE(perfmon_group, cpu_event_times_follow_the_clock)
{
    unsigned int c = cpu_count() - 1;
    struct test_pg_span attach, read, disable, enable, detach;
    struct perfmon_event event;
    struct perfmon_value v, w;
    int error = 0;

    thread_set_affinity(thread_self(), 1ULL << 0);
    test_pm_init(&event, PMU_SOFT_EV_TICK);
    test_detach_on_failure(&event);

    TEST_PG_SPAN(&attach, error = perfmon_event_attach_cpu(&event, c));
    TEST_ASSERT_EQ(error, 0);
    thread_delay(10);
    TEST_PG_SPAN(&read, error = perfmon_event_read_value(&event, &v));
    TEST_ASSERT_EQ(error, 0);
    TEST_ASSERT_EQ(v.time_running, v.time_enabled);
    test_pg_check_time(v.time_enabled, &attach, &read);
    TEST_ASSERT_LE(v.count * TEST_PG_TICK_NS,
                   v.time_enabled + TEST_PG_TICK_NS);

    TEST_PG_SPAN(&disable, error = perfmon_event_disable(&event));
    TEST_ASSERT_EQ(error, 0);
    thread_delay(10);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v), 0);
    TEST_ASSERT_EQ(v.time_running, v.time_enabled);
    test_pg_check_time(v.time_enabled, &attach, &disable);

    TEST_PG_SPAN(&enable, error = perfmon_event_enable(&event));
    TEST_ASSERT_EQ(error, 0);
    thread_delay(5);
    TEST_PG_SPAN(&detach, error = perfmon_event_detach(&event));
    TEST_ASSERT_EQ(error, 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &w), 0);
    TEST_ASSERT_EQ(w.time_running, w.time_enabled);
    test_pg_check_time(w.time_enabled - v.time_enabled, &enable, &detach);

    /* Detached: frozen. */
    thread_delay(2);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &v), 0);
    TEST_ASSERT_EQ(v.time_enabled, w.time_enabled);
    TEST_ASSERT_EQ(v.count, w.count);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

struct test_pg_worker {
    unsigned int rounds;
    uint64_t spin_tsc;          /* its spins' TSC time, measured itself */
    uint64_t emitted;
};

/*
 * Spin a few ticks and sleep as long, rounds times, emitting as it
 * spins; measure the spins' time itself.
 */
static void
test_pg_worker_run(void *arg)
{
    struct test_pg_worker *w = arg;

    for (unsigned int i = 0; i < w->rounds; i++) {
        uint64_t start = cpu_get_tsc();

        w->emitted += test_emit_paced_busy(0, 3);
        test_spin_ticks(3);
        w->spin_tsc += cpu_get_tsc() - start;
        thread_delay(3);
    }
}

/*
 * A thread event runs while its thread is on a CPU: its running time is
 * exactly the thread's run time (the scheduler's accounting) while it was
 * attached, here its whole life, since it is attached before the thread
 * first runs and read after it exited; that run time covers the spins
 * the thread measured itself. Enabled is the same run time: a thread
 * event's time enabled grows only while its thread runs (the sleeps, at
 * least 2 ticks each, add nothing). How far the run time exceeds the
 * spins (wake-ups and exit) is not checked: microseconds, but as long as
 * the host stalls the virtual CPU there (65 ms seen beside busy
 * processes).
 */
TEST_DEFINE(perfmon_group, thread_event_running_is_its_run_time)
{
    unsigned int c = cpu_count() - 1;
    struct test_pg_worker w = { .rounds = 3 };
    struct thread_attr attr = {
        .name = "pg-worker", .affinity = 1ULL << c,
        .priority = THREAD_PRIO_MIN,
    };
    struct perfmon_event events[2];
    struct perfmon_group group;
    struct perfmon_group_value value;
    struct thread *worker;
    uint64_t run_ns;

    /*
     * The worker, at the lowest priority on this thread's CPU, cannot run
     * before this thread sleeps: it is attached before its first slice.
     */
    TEST_ASSERT_GT(thread_self()->priority, THREAD_PRIO_MIN);
    thread_set_affinity(thread_self(), 1ULL << c);
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    test_group_detach_on_failure(&group);
    test_pm_init(&events[0], PMU_SOFT_EV_EMIT);
    test_pm_init(&events[1], PMU_SOFT_EV_CSWITCH);

    for (unsigned int i = 0; i < ARRAY_SIZE(events); i++) {
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    TEST_ASSERT_EQ(test_helper_start(&worker, &attr, test_pg_worker_run, &w),
                   0);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, worker), 0);
    TEST_ASSERT_EQ(worker->run_total, 0);
    thread_join(worker);

    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], w.emitted);
    TEST_ASSERT_GE(value.counts[1], w.rounds);      /* one per sleep */
    run_ns = perfmon_tsc_to_ns(thread_run_total(worker));
    TEST_ASSERT_EQ(value.time_running, run_ns);
    TEST_ASSERT_GE(value.time_running, perfmon_tsc_to_ns(w.spin_tsc));
    TEST_ASSERT_EQ(value.time_enabled, run_ns);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);   /* frees worker */
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* ------------------------------------------------------------------ */
/* Consistency                                                         */
/* ------------------------------------------------------------------ */

/* Emits on channels 0 and 1 in lockstep, interrupts off around each pair. */
struct test_pg_pairs {
    uint64_t total;             /* units per channel */
    uint64_t emitted;           /* published after each pair */
    uint64_t seed;
    bool go;
    struct thread *thread;
};

static void
test_pg_pairs_run(void *arg)
{
    struct test_pg_pairs *p = arg;

    while (!__atomic_load_n(&p->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    for (unsigned int i = 1; p->emitted < p->total; i++) {
        uint64_t n = 1 + test_rand(&p->seed) % 8;

        n = test_emit_paced_pair(0, MIN(n, p->total - p->emitted));
        __atomic_store_n(&p->emitted, p->emitted + n, __ATOMIC_RELEASE);

        /* A few pairs a tick: the readers see it run, on one CPU too. */
        if (i % TEST_PG_PAIRS_PER_TICK == 0) {
            thread_delay(1);
        }
    }
}

struct test_pg_reader {
    struct perfmon_group *group;
    const struct test_pg_pairs *pairs;
    uint64_t nr_reads;
    uint64_t last;
};

/* Read the group until the pairs are all emitted: counts always equal. */
static void
test_pg_reader_run(void *arg)
{
    struct test_pg_reader *r = arg;
    struct perfmon_group_value value;

    do {
        TEST_ASSERT_EQ(perfmon_group_read(r->group, &value), 0);
        TEST_ASSERT_EQ(value.counts[0], value.counts[1]);
        TEST_ASSERT_GE(value.counts[0], r->last);
        r->last = value.counts[0];
        r->nr_reads++;
        cpu_pause();
    } while (__atomic_load_n(&r->pairs->emitted, __ATOMIC_ACQUIRE)
             < r->pairs->total);
}

/*
 * Group reads show equal counts for channels fed in lockstep, from any
 * CPU and while other CPUs read the same group; the same two channels as
 * separate events, read one after the other, differ when a pair comes
 * between the reads. cpu_group: a group of the emitter's CPU, else of the
 * emitter thread, which runs anywhere.
 */
static void
test_pg_consistency(bool cpu_group)
{
    static struct test_pg_reader readers[CPU_MAX];
    static struct thread *reader_threads[CPU_MAX];
    unsigned int c = cpu_count() - 1, nr_readers = 0;
    struct test_pg_pairs p = { .total = 1500, .seed = 0x9e37 };
    struct perfmon_event events[2], ev0, ev1;
    struct perfmon_group group;
    struct perfmon_group_value value;
    uint64_t a, b;

    thread_set_affinity(thread_self(), 1ULL << 0);
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int i = 0; i < 2; i++) {
        test_pm_init_emit(&events[i], i);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    test_pm_init_emit(&ev0, 0);
    test_pm_init_emit(&ev1, 1);
    p.thread = test_thread_start("pg-pairs",
                                 cpu_group ? 1ULL << c : 0,
                                 test_pg_pairs_run, &p);

    if (cpu_group) {
        TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, c), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&ev0, c), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&ev1, c), 0);
    } else {
        TEST_ASSERT_EQ(perfmon_group_attach(&group, p.thread), 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&ev0, p.thread), 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&ev1, p.thread), 0);
    }

    /* Readers on the CPUs between the test's and the emitter's. */
    for (unsigned int cpu = 1; cpu + 1 < cpu_count(); cpu++) {
        struct test_pg_reader *r = &readers[nr_readers];

        *r = (struct test_pg_reader){ .group = &group, .pairs = &p };
        reader_threads[nr_readers++] = test_thread_start("pg-reader",
                                                         1ULL << cpu,
                                                         test_pg_reader_run,
                                                         r);
    }

    /*
     * Separate reads differ with pairs between them: ev0 read before the
     * emitter starts, ev1 once two pairs (16 units at most) are out.
     */
    a = perfmon_event_read(&ev0);
    __atomic_store_n(&p.go, true, __ATOMIC_RELEASE);

    while (__atomic_load_n(&p.emitted, __ATOMIC_ACQUIRE) < 16) {
        thread_delay(1);
    }

    b = perfmon_event_read(&ev1);
    TEST_ASSERT_EQ(a, 0);
    TEST_ASSERT_GE(b, 16);

    /* This CPU's reads, while the others read too. */
    {
        struct test_pg_reader mine = { .group = &group, .pairs = &p };

        test_pg_reader_run(&mine);
        TEST_ASSERT_GT(mine.nr_reads, 0);
    }

    thread_join(p.thread);

    /* The readers end once every pair is out. */
    for (unsigned int i = 0; i < nr_readers; i++) {
        thread_join(reader_threads[i]);
        TEST_ASSERT_GT(readers[i].nr_reads, 0);
    }

    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], p.total);
    TEST_ASSERT_EQ(value.counts[1], p.total);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&ev0), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&ev1), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&ev0), p.total);
    TEST_ASSERT_EQ(perfmon_event_read(&ev1), p.total);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

TEST_DEFINE(perfmon_group, cpu_group_reads_are_consistent)
{
    test_pg_consistency(true);
}

TEST_DEFINE(perfmon_group, thread_group_reads_are_consistent)
{
    test_pg_consistency(false);
}

/*
 * Reads while the owner changes the events: a group (channels 0 and 1 in
 * lockstep) disabled, enabled and reset over and over, and a single event
 * likewise. Each read sees each change wholly or not at all: the group's
 * members are equal, and times never go back nor running above enabled.
 * (Reads that applied a change's snapshot by halves saw members unequal
 * just after a reset, and times back by a whole enabled interval.)
 */
struct test_pg_watch {
    struct perfmon_group *group;
    struct perfmon_event *single;
    const bool *stop;
    uint64_t nr_reads;
};

static void
test_pg_watch_run(void *arg)
{
    struct test_pg_watch *w = arg;
    uint64_t group_enabled = 0, group_running = 0;
    uint64_t enabled = 0, running = 0;
    struct perfmon_group_value gv;
    struct perfmon_value v;

    do {
        TEST_ASSERT_EQ(perfmon_group_read(w->group, &gv), 0);
        TEST_ASSERT_EQ(gv.counts[0], gv.counts[1]);
        TEST_ASSERT_GE(gv.time_enabled, group_enabled);
        TEST_ASSERT_GE(gv.time_running, group_running);
        TEST_ASSERT_LE(gv.time_running, gv.time_enabled);
        group_enabled = gv.time_enabled;
        group_running = gv.time_running;

        TEST_ASSERT_EQ(perfmon_event_read_value(w->single, &v), 0);
        TEST_ASSERT_GE(v.time_enabled, enabled);
        TEST_ASSERT_GE(v.time_running, running);
        TEST_ASSERT_LE(v.time_running, v.time_enabled);
        enabled = v.time_enabled;
        running = v.time_running;
        w->nr_reads++;
    } while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE));
}

static struct test_pg_watch test_pg_watchers[CPU_MAX];
static struct thread *test_pg_watcher_threads[CPU_MAX];
static unsigned int test_pg_nr_watching;   /* started, not joined yet */
static bool test_pg_watch_stop;

/*
 * Stop and join the watchers still running: at the test's end, or as its
 * undo before what they read is detached (once: a thread is joined once).
 */
static void
test_pg_watchers_stop(void *arg)
{
    (void)arg;
    __atomic_store_n(&test_pg_watch_stop, true, __ATOMIC_RELEASE);

    while (test_pg_nr_watching > 0) {
        thread_join(test_pg_watcher_threads[--test_pg_nr_watching]);
    }
}

static void
test_pg_reads_during_changes(bool cpu_group)
{
    struct test_pg_watch *watchers = test_pg_watchers;
    unsigned int c = cpu_count() - 1, nr_watchers = cpu_count();
    struct test_pg_pairs p = { .total = 2000, .seed = 0x51ed };
    struct perfmon_event events[2], single;
    struct perfmon_group group;
    struct perfmon_group_value value;
    unsigned int k;

    thread_set_affinity(thread_self(), 1ULL << 0);
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int i = 0; i < 2; i++) {
        test_pm_init_emit(&events[i], i);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    test_pm_init_emit(&single, 0);
    p.thread = test_thread_start("pg-pairs", cpu_group ? 1ULL << c : 0,
                                 test_pg_pairs_run, &p);

    if (cpu_group) {
        TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, c), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&single, c), 0);
    } else {
        TEST_ASSERT_EQ(perfmon_group_attach(&group, p.thread), 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&single, p.thread), 0);
    }

    test_group_detach_on_failure(&group);
    test_detach_on_failure(&single);
    __atomic_store_n(&p.go, true, __ATOMIC_RELEASE);
    test_pg_watch_stop = false;
    test_pg_nr_watching = 0;
    test_undo_on_failure(test_pg_watchers_stop, NULL);

    /* A watcher on every CPU, this one's too (on one CPU: preempted). */
    for (unsigned int i = 0; i < nr_watchers; i++) {
        watchers[i] = (struct test_pg_watch){
            .group = &group, .single = &single, .stop = &test_pg_watch_stop,
        };
        test_pg_watcher_threads[i] = test_thread_start("pg-watch", 1ULL << i,
                                                       test_pg_watch_run,
                                                       &watchers[i]);
        test_pg_nr_watching++;
    }

    /* At least one round of changes, however fast the pairs go out. */
    k = 0;

    do {
        TEST_ASSERT_EQ(perfmon_group_disable(&group), 0);
        TEST_ASSERT_EQ(perfmon_event_disable(&single), 0);
        TEST_ASSERT_EQ(perfmon_group_enable(&group), 0);
        TEST_ASSERT_EQ(perfmon_event_enable(&single), 0);
        TEST_ASSERT_EQ(perfmon_group_reset(&group), 0);
        TEST_ASSERT_EQ(perfmon_event_reset(&single), 0);

        if (++k % 4 == 0) {
            thread_delay(1);
        }
    } while (__atomic_load_n(&p.emitted, __ATOMIC_ACQUIRE) < p.total);

    thread_join(p.thread);
    test_pg_watchers_stop(NULL);

    for (unsigned int i = 0; i < nr_watchers; i++) {
        TEST_ASSERT_GT(watchers[i].nr_reads, 0);
    }

    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], value.counts[1]);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&single), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

TEST_DEFINE(perfmon_group, cpu_reads_during_owner_changes)
{
    test_pg_reads_during_changes(true);
}

TEST_DEFINE(perfmon_group, thread_reads_during_owner_changes)
{
    test_pg_reads_during_changes(false);
}
