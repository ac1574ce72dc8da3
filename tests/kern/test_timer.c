/*
 * Timers.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/string.h>
#include <kern/spinlock.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <machine/cpu.h>

#include "test_util.h"

#define TEST_TIMER_N 8

/* Runs of the periodic timer the test waits for. */
#define TEST_TIMER_PERIODIC_RUNS 20

/* Something a handler signals and one test thread waits for. */
struct test_timer_event {
    struct spinlock lock;
    struct thread *waiter;
    bool done;
};

static void
test_timer_event_init(struct test_timer_event *event)
{
    spinlock_init(&event->lock);
    event->waiter = thread_self();
    event->done = false;
}

/* Any context. */
static void
test_timer_event_signal(struct test_timer_event *event)
{
    unsigned long flags;

    spinlock_lock_intr_save(&event->lock, &flags);
    event->done = true;
    thread_wakeup(event->waiter);
    spinlock_unlock_intr_restore(&event->lock, flags);
}

/* The thread that initialized the event. */
static void
test_timer_event_wait(struct test_timer_event *event)
{
    unsigned long flags;

    spinlock_lock_intr_save(&event->lock, &flags);

    while (!event->done) {
        thread_sleep(&event->lock, flags);
    }

    spinlock_unlock_intr_restore(&event->lock, flags);
}

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
    uint64_t next;              /* the expiry armed last */
    unsigned int count;
    unsigned int early;         /* runs before their expiry */
    struct test_timer_event done;
};

static void
test_timer_periodic_fn(struct timer *timer)
{
    struct test_timer_periodic *p = timer_arg(timer);

    p->early += (clock_get_time() < p->next);
    p->count++;

    if (p->count == TEST_TIMER_PERIODIC_RUNS) {
        test_timer_event_signal(&p->done);
        return;
    }

    p->next += p->period;
    timer_schedule(timer, p->next);
}

/*
 * A handler that re-arms itself one period on fires once per period: no
 * run before its expiry, so the last of N runs comes N periods after the
 * start or later. A late tick does not make up for the periods it missed
 * at once (a due re-arm waits for the next tick), so the test waits for
 * the runs instead of counting them over a window.
 */
TEST_DEFINE(timer, periodic_fires_once_per_period)
{
    struct test_timer_periodic p = { .period = 2 };
    uint64_t start;

    test_timer_event_init(&p.done);
    timer_init(&p.timer, test_timer_periodic_fn, &p, TIMER_CPU_ANY);
    start = clock_get_time();
    p.next = start + p.period;
    timer_schedule(&p.timer, p.next);
    test_timer_event_wait(&p.done);

    /* The handler may still be returning. */
    timer_cancel(&p.timer);
    TEST_ASSERT_EQ(p.count, TEST_TIMER_PERIODIC_RUNS);
    TEST_ASSERT_EQ(p.early, 0);
    TEST_ASSERT_GE(clock_get_time() - start,
                   TEST_TIMER_PERIODIC_RUNS * p.period);
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

/* Runs the test waits for, and the safety stop for a tick that loops. */
#define TEST_TIMER_DUE_RUNS     20
#define TEST_TIMER_DUE_LIMIT    1000

/*
 * One timer of the two is pending or running at any time: each handler
 * arms exactly one timer until the chain ends.
 */
struct test_timer_due {
    struct timer timers[2];
    bool pair;                  /* each handler arms the other timer */
    uint64_t first_expiry;
    struct test_timer_event reached;    /* runs reached the count */
    struct test_timer_event ended;      /* a handler armed nothing */
    volatile bool stop;
    volatile unsigned int runs; /* of both timers: they share one CPU */
};

/*
 * Arms its timer (or in pair mode the other one) to an expiry already
 * due: alternately the current time and the first expiry. The limit only
 * ends a tick that would otherwise run it forever, so that such a tick
 * fails the test instead of hanging it.
 */
static void
test_timer_due_fn(struct timer *timer)
{
    struct test_timer_due *d = timer_arg(timer);
    unsigned int runs = d->runs + 1;
    struct timer *next = timer;

    d->runs = runs;

    if (runs == TEST_TIMER_DUE_RUNS) {
        test_timer_event_signal(&d->reached);
    }

    if (d->stop || runs >= TEST_TIMER_DUE_LIMIT) {
        test_timer_event_signal(&d->ended);
        return;
    }

    if (d->pair) {
        next = &d->timers[timer == &d->timers[0]];
    }

    timer_schedule(next, (runs % 2 == 0) ? clock_get_time()
                                         : d->first_expiry);
}

static void
test_timer_note_cpu(void *arg)
{
    unsigned int *cpu = arg;

    *cpu = cpu_id();
}

/*
 * Start the chain at an expiry already due, wait until it ran
 * TEST_TIMER_DUE_RUNS times, check that the timer's CPU still runs a
 * thread while the handlers keep re-arming, stop the chain, and check
 * that all runs took distinct ticks between start and end.
 */
static void
test_timer_due_check(bool pair)
{
    struct test_timer_due d = { .pair = pair };
    unsigned int cpu = cpu_count() - 1;
    unsigned int helper_cpu = ~0U;
    struct thread *helper;
    uint64_t start, end;

    test_timer_event_init(&d.reached);
    test_timer_event_init(&d.ended);
    timer_init(&d.timers[0], test_timer_due_fn, &d, cpu);
    timer_init(&d.timers[1], test_timer_due_fn, &d, cpu);
    start = clock_get_time();
    d.first_expiry = start;
    timer_schedule(&d.timers[0], start);
    test_timer_event_wait(&d.reached);

    helper = test_thread_start("due-helper", 1ULL << cpu,
                               test_timer_note_cpu, &helper_cpu);
    thread_join(helper);

    d.stop = true;
    test_timer_event_wait(&d.ended);

    /* The last handler may still be returning. */
    timer_cancel(&d.timers[0]);
    timer_cancel(&d.timers[1]);
    end = clock_get_time();
    TEST_ASSERT_EQ(helper_cpu, cpu);
    TEST_ASSERT_GE(d.runs, TEST_TIMER_DUE_RUNS);
    TEST_ASSERT_LE(d.runs, end - start + 1);
}

/*
 * A handler that re-arms its own timer at an expiry already due runs at
 * most once per tick (the tick defers the timer to the next one), and the
 * CPU leaves the interrupt to run threads.
 */
TEST_DEFINE(timer, rearm_own_timer_at_due_expiry_runs_once_per_tick)
{
    test_timer_due_check(false);
}

/* Two handlers arming each other at a due expiry: one run per tick. */
TEST_DEFINE(timer, handlers_arming_each_other_when_due_run_once_per_tick)
{
    test_timer_due_check(true);
}

/*
 * An expiry past the clock's range saturates to never (UINT64_MAX): one
 * that wrapped would be due at once, and thread_delay(UINT64_MAX) would
 * return at the next tick.
 */
TEST_DEFINE(timer, expiry_after_saturates_instead_of_wrapping)
{
    uint64_t now = clock_get_time();

    TEST_ASSERT_EQ(timer_expiry_after(now, 5), now + 5);
    TEST_ASSERT_EQ(timer_expiry_after(now, UINT64_MAX), UINT64_MAX);
    TEST_ASSERT_EQ(timer_expiry_after(now, UINT64_MAX - now + 5), UINT64_MAX);
    TEST_ASSERT_EQ(timer_expiry_after(UINT64_MAX, 1), UINT64_MAX);
    TEST_ASSERT_EQ(timer_expiry_after(UINT64_MAX - 1, 1), UINT64_MAX);
}

/* A CPU with no per-CPU area is EINVAL, and the timer is left as it was. */
TEST_DEFINE(timer, init_rejects_a_cpu_out_of_range)
{
    const unsigned int bad[] = { cpu_count(), CPU_MAX, 64, TIMER_CPU_ANY - 1 };
    struct timer timer, copy;

    memset(&timer, 0x5a, sizeof(timer));
    copy = timer;

    for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
        TEST_ASSERT_EQ(timer_init(&timer, test_timer_record, NULL, bad[i]),
                       EINVAL);
        TEST_ASSERT_EQ(memcmp(&timer, &copy, sizeof(timer)), 0);
    }

    TEST_ASSERT_EQ(timer_init(&timer, test_timer_record, NULL,
                              cpu_count() - 1), 0);
    TEST_ASSERT(!timer_active(&timer));
    TEST_ASSERT_EQ(timer_init(&timer, test_timer_record, NULL,
                              TIMER_CPU_ANY), 0);
    TEST_ASSERT(!timer_active(&timer));
}
