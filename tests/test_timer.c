/*
 * Timers.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <machine/cpu.h>

#include "test_util.h"

#define TEST_TIMER_N 8

struct test_timer_rec {
    struct timer timer;
    unsigned int index;
    uint64_t expiry;
    uint64_t fired_at;
    unsigned int fired_cpu;
    unsigned int nr_fired;
};

static unsigned int test_timer_order[TEST_TIMER_N];
static unsigned int test_timer_nr_order;

static void
test_timer_record(struct timer *timer)
{
    struct test_timer_rec *rec = timer_arg(timer);
    unsigned int slot;

    rec->fired_at = clock_get_time();
    rec->fired_cpu = cpu_id();
    rec->nr_fired++;
    slot = __atomic_fetch_add(&test_timer_nr_order, 1, __ATOMIC_RELAXED);

    if (slot < TEST_TIMER_N) {
        test_timer_order[slot] = rec->index;
    }
}

/*
 * Timers armed in shuffled order fire in expiry order, never early. The
 * test waits for the runs themselves, not for a time past the last
 * expiry: CPU 0, which runs them, may lag the test's CPU by seconds when
 * a loaded host stalls its vCPU.
 */
TEST_DEFINE(timer, fire_in_expiry_order_never_early)
{
    static const unsigned int delays[TEST_TIMER_N] = { 9, 3, 14, 1, 6, 11,
                                                       2, 5 };
    struct test_timer_rec recs[TEST_TIMER_N] = { 0 };
    uint64_t now;

    test_timer_nr_order = 0;
    now = clock_get_time();

    for (unsigned int i = 0; i < TEST_TIMER_N; i++) {
        /* One CPU for all, so they share one list and one order. */
        timer_init(&recs[i].timer, test_timer_record, &recs[i], 0);
        recs[i].index = i;
        recs[i].expiry = now + delays[i];
        timer_schedule(&recs[i].timer, recs[i].expiry);
    }

    while (READ_ONCE(test_timer_nr_order) < TEST_TIMER_N) {
        thread_delay(1);
    }

    TEST_ASSERT_EQ(test_timer_nr_order, TEST_TIMER_N);

    for (unsigned int i = 0; i < TEST_TIMER_N; i++) {
        TEST_ASSERT_EQ(recs[i].nr_fired, 1);
        TEST_ASSERT_GE(recs[i].fired_at, recs[i].expiry);
        TEST_ASSERT_EQ(recs[i].fired_cpu, 0);
        TEST_ASSERT(!timer_active(&recs[i].timer));
    }

    for (unsigned int i = 1; i < TEST_TIMER_N; i++) {
        TEST_ASSERT_LE(recs[test_timer_order[i - 1]].expiry,
                       recs[test_timer_order[i]].expiry);
    }
}

struct test_timer_periodic {
    struct timer timer;
    uint64_t period;
    uint64_t next;
    unsigned int count;
    bool stop;
};

static void
test_timer_periodic_fn(struct timer *timer)
{
    struct test_timer_periodic *p = timer_arg(timer);

    p->count++;

    if (!p->stop) {
        p->next += p->period;
        timer_schedule(timer, p->next);
    }
}

/*
 * A handler that re-arms itself one period on fires once per period: it
 * keeps firing, and its n-th run is never before n periods from the
 * start. The count is read before the clock, so the clock bounds every
 * run counted; read after it, a reader stalled by a loaded host (seconds,
 * at 64 vCPUs) would count runs past its window. A timer's lateness is
 * not bounded: how slow it may be is left to the runner's timeout.
 */
TEST_DEFINE(timer, periodic_fires_expected_count)
{
    struct test_timer_periodic p = { .period = 2 };
    const unsigned int n = 20;
    uint64_t start, now;
    unsigned int count;

    timer_init(&p.timer, test_timer_periodic_fn, &p, TIMER_CPU_ANY);
    start = clock_get_time();
    p.next = start + p.period;
    timer_schedule(&p.timer, p.next);

    while (READ_ONCE(p.count) < n) {
        thread_delay(1);
    }

    count = READ_ONCE(p.count);
    now = clock_get_time();
    p.stop = true;
    timer_cancel(&p.timer);
    TEST_ASSERT_GE(count, n);
    TEST_ASSERT_GE(now - start, count * p.period);
}

/* A cancelled pending timer never fires. */
TEST_DEFINE(timer, cancel_pending_never_fires)
{
    struct test_timer_rec rec = { 0 };

    timer_init(&rec.timer, test_timer_record, &rec, TIMER_CPU_ANY);
    test_timer_nr_order = TEST_TIMER_N;     /* do not record the order */
    timer_schedule(&rec.timer, clock_get_time() + 3);
    TEST_ASSERT(timer_active(&rec.timer));
    TEST_ASSERT(timer_cancel(&rec.timer));
    TEST_ASSERT(!timer_active(&rec.timer));
    thread_delay(8);
    TEST_ASSERT_EQ(rec.nr_fired, 0);
    TEST_ASSERT(!timer_cancel(&rec.timer));
}

/* A timer bound to a CPU runs there, whoever arms it. */
TEST_DEFINE(timer, bound_timer_runs_on_its_cpu)
{
    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct test_timer_rec rec = { 0 };

        test_timer_nr_order = TEST_TIMER_N;
        timer_init(&rec.timer, test_timer_record, &rec, cpu);
        timer_schedule(&rec.timer, clock_get_time() + 1);

        while (READ_ONCE(rec.nr_fired) == 0) {
            thread_delay(1);
        }

        timer_cancel(&rec.timer);
        TEST_ASSERT_EQ(rec.nr_fired, 1);
        TEST_ASSERT_EQ(rec.fired_cpu, cpu);
    }
}

#define TEST_TIMER_SLOW_PLAIN   0   /* the handler just runs */
#define TEST_TIMER_SLOW_REARM   1   /* it re-arms itself first */
#define TEST_TIMER_SLOW_CANCEL  2   /* it cancels itself first */

struct test_timer_slow {
    struct timer timer;
    unsigned int mode;
    volatile bool started;
    volatile bool release;      /* lets the handler return */
    volatile bool done;
    volatile unsigned int runs;
};

static void
test_timer_slow_fn(struct timer *timer)
{
    struct test_timer_slow *slow = timer_arg(timer);

    if (slow->mode == TEST_TIMER_SLOW_REARM) {
        timer_schedule(timer, clock_get_time() + 1);
    } else if (slow->mode == TEST_TIMER_SLOW_CANCEL) {
        timer_cancel(timer);
    }

    slow->runs++;
    slow->started = true;

    /* Hold the handler until the releaser thread says so. */
    while (!slow->release) {
        cpu_pause();
    }

    slow->done = true;
}

/* Releases the handler a little later, while the test waits in cancel. */
static void
test_timer_releaser(void *arg)
{
    struct test_timer_slow *slow = arg;

    thread_delay(2);
    slow->release = true;
}

/*
 * Cancelling a timer whose handler runs on another CPU waits for the
 * handler to return, also when the handler re-armed or cancelled its own
 * timer; afterwards the timer is idle and never runs again.
 */
TEST_DEFINE(timer, cancel_waits_for_running_handler)
{
    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);

    for (unsigned int mode = 0; mode < 3; mode++) {
        struct test_timer_slow slow = { .mode = mode };
        struct thread *releaser;
        unsigned int runs;

        timer_init(&slow.timer, test_timer_slow_fn, &slow, 1);
        timer_schedule(&slow.timer, clock_get_time() + 1);

        while (!slow.started) {
            cpu_pause();
        }

        TEST_ASSERT(timer_active(&slow.timer));
        releaser = test_thread_start("releaser", 1ULL << 0,
                                     test_timer_releaser, &slow);
        timer_cancel(&slow.timer);
        TEST_ASSERT(slow.done);
        thread_join(releaser);
        TEST_ASSERT(!timer_active(&slow.timer));
        runs = slow.runs;
        thread_delay(3);
        TEST_ASSERT_EQ(slow.runs, runs);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
