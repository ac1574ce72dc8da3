/*
 * perfmon sampling at its limits (suite perfmon_sample, with
 * test_perfmon_sample.c, whose header states the method, and
 * test_perfmon_sample_period.c): throttling at the per-tick budget and
 * the THROTTLE records that report it, lost records, the tick event as a
 * timer profiler, and sampling events that start on a throttled CPU.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/ksym.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_session.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/syscnt.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "sample_util.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Limits                                                              */
/* ------------------------------------------------------------------ */

/*
 * Period 1 past the per-tick budget: sampling stops until the next tick,
 * the periods that end meanwhile come back in THROTTLE records, samples
 * plus throttled periods account for every unit, and the count is exact.
 */
TEST_DEFINE(perfmon_sample, throttled_periods_are_reported)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(1U << 20);
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    const uint64_t want = 5000;
    uint64_t total = 0, nr;
    unsigned long flags;

    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 1, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    flags = cpu_intr_save();

    while (total < want) {
        uint64_t n = MIN(test_ps_max_emit(), want - total);

        test_ps_emit(n);
        total += n;
    }

    cpu_intr_restore(flags);
    thread_delay(3);    /* the throttle timer ends the throttling */
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), want);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);

    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U,
                  "test_ps_emit", &d);
    TEST_ASSERT_EQ(d.nr_samples, nr);
    TEST_ASSERT_EQ(d.nr_lost, 0);
    TEST_ASSERT_GE(d.nr_throttle_records, 1);
    TEST_ASSERT_LT(nr, want);
    TEST_ASSERT_EQ(nr + d.throttled_periods, want);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

#define TEST_PS_SPIN_MAX    15000   /* 720 KB of samples at most */

struct test_ps_spinner {
    struct thread *thread;
    uint64_t emitted;
    uint64_t max;
    volatile bool stop;
};

static void
test_ps_spinner_main(void *arg)
{
    struct test_ps_spinner *sp = arg;

    while (!sp->stop && sp->emitted < sp->max) {
        pmu_soft_emit_channel(6, 1);
        sp->emitted++;
    }
}

/* A spinner on every CPU, each emitting at most max units. */
static void
test_ps_spinners_start(struct test_ps_spinner *spinners, uint64_t max)
{
    for (unsigned int c = 0; c < cpu_count(); c++) {
        spinners[c] = (struct test_ps_spinner){ .max = max };
        spinners[c].thread = test_thread_start("ps-spin", 1ULL << c,
                                               test_ps_spinner_main,
                                               &spinners[c]);
    }
}

static void
test_ps_spinners_stop(struct test_ps_spinner *spinners)
{
    for (unsigned int c = 0; c < cpu_count(); c++) {
        spinners[c].stop = true;
        thread_join(spinners[c].thread);
    }
}

/* Ticks that five sleeps of 2 ticks take. */
static uint64_t
test_ps_sleep_ticks(void)
{
    uint64_t start = clock_get_time();

    for (unsigned int i = 0; i < 5; i++) {
        thread_delay(2);
    }

    return clock_get_time() - start;
}

/*
 * Period 1 on every CPU (the samplers share one slot) while a thread on
 * each emits as fast as it can:
 * the CPUs get throttled and say so, the test thread still sleeps and
 * wakes on time, and on each CPU samples plus throttled periods are the
 * count, exactly.
 */
TEST_DEFINE(perfmon_sample, period_one_everywhere_is_throttled)
{
    static struct test_ps_spinner spinners[CPU_MAX];
    static struct perfmon_event events[CPU_MAX];
    struct perfmon_session *session = test_ps_session(1U << 20);
    struct perfmon_sample_attr attr = { .session = session, .period = 1 };
    uint64_t control, elapsed, nr_throttle_records = 0;

    const unsigned int nr_cpus = cpu_count();

    /*
     * The control: the same sleeps while every CPU spins without an
     * event. It measures what the host takes from this thread (an
     * emulator with more vCPUs than host cores leaves each a share of
     * one), so that the storm is judged by what it adds.
     */
    test_ps_spinners_start(spinners, UINT64_MAX);
    control = test_ps_sleep_ticks();
    test_ps_spinners_stop(spinners);

    for (unsigned int c = 0; c < nr_cpus; c++) {
        attr.cookie = 0xc0de0000 + PMU_SOFT_EV_EMIT + 6;
        TEST_ASSERT_EQ(perfmon_event_init(&events[c], PMU_SOFT_EV_EMIT + 6,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_set_sampling(&events[c], &attr), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[c], c), 0);
    }

    /* Bounded, so that the samples fit the ring: none is lost. */
    test_ps_spinners_start(spinners, TEST_PS_SPIN_MAX);

    /* The storm does not keep this thread from its ticks; checked once
       the spinners stop and the events are detached, so that a failure
       leaves nothing to the suites that follow. */
    elapsed = test_ps_sleep_ticks();
    test_ps_spinners_stop(spinners);
    thread_delay(3);    /* every throttle ends */

    for (unsigned int c = 0; c < nr_cpus; c++) {
        struct perfmon_session_stats stats;
        struct test_ps_drain d = { 0 };
        uint64_t nr;

        TEST_ASSERT_EQ(perfmon_event_detach(&events[c]), 0);
        TEST_ASSERT_EQ(perfmon_event_read(&events[c]), spinners[c].emitted);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&events[c], &nr), 0);
        test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT + 6, ~0U,
                      "test_ps_spinner_main", &d);

        TEST_ASSERT_EQ(perfmon_session_stats(session, c, &stats), 0);
        TEST_ASSERT_EQ(stats.dropped, 0);
        TEST_ASSERT_EQ(d.nr_lost, 0);
        TEST_ASSERT_EQ(d.nr_samples, nr);
        TEST_ASSERT_EQ(nr + d.throttled_periods, spinners[c].emitted);
        nr_throttle_records += d.nr_throttle_records;
    }

    /* Per CPU, a host that stalls a vCPU can stretch the storm over
       several ticks; all together, throttling is certain. */
    TEST_ASSERT_GE(nr_throttle_records, 1);

    test_diag("10 ticks of sleep took %llu ticks in the storm, %llu in "
              "the control", (unsigned long long)elapsed,
              (unsigned long long)control);

    /* At most 90 ticks beyond twice the control: under 110 where the
       control sleeps its 10 ticks, as on a host with a core per vCPU. */
    TEST_ASSERT_LT(elapsed, 2 * control + 90);

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * Records that do not fit are lost, and reported: what the consumer
 * reads plus what LOST records report is every sample produced.
 */
TEST_DEFINE(perfmon_sample, lost_samples_are_accounted)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session;
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    uint64_t nr, fit;

    session = test_ps_session(PERFMON_SESSION_RING_MIN * 4);
    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 1, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    for (unsigned int i = 0; i < 100; i++) {
        test_ps_emit(1);
    }

    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U,
                  "test_ps_emit", &d);

    /*
     * Every sample is the same size (the same call chain): the empty ring
     * takes as many as fit whole, from its first byte, and no more.
     */
    TEST_ASSERT_NE(d.sample_size_min, 0);
    TEST_ASSERT_EQ(d.sample_size_min, d.sample_size_max);
    fit = PERFMON_SESSION_RING_MIN * 4 / d.sample_size_min;
    TEST_ASSERT_LT(fit, 100);
    TEST_ASSERT_EQ(d.nr_samples, fit);
    TEST_ASSERT_EQ(d.nr_lost, 0);

    /* Room again: the next sample comes after one LOST record. */
    test_ps_emit(1);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U,
                  "test_ps_emit", &d);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, 101);
    TEST_ASSERT_EQ(d.nr_samples, fit + 1);
    TEST_ASSERT_EQ(d.nr_lost, 100 - fit);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * The tick event with period 1 is a timer profiler: one sample per tick
 * the CPU accounts, at the code the tick interrupted.
 */
TEST_DEFINE(perfmon_sample, tick_samples_where_the_tick_came)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    uint64_t count, nr, t0, t1, t2, t3;
    size_t size;

    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_TICK, session, 1, 4);
    t0 = clock_nr_ticks(c);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    t1 = clock_nr_ticks(c);
    test_spin_ticks(5);
    thread_delay(5);
    t2 = clock_nr_ticks(c);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    t3 = clock_nr_ticks(c);
    count = perfmon_event_read(&event);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, count);

    /* Exactly the ticks the CPU accounted while attached: bracketed. */
    TEST_ASSERT_GE(count, t2 - t1);
    TEST_ASSERT_LE(count, t3 - t0);
    TEST_ASSERT_GE(count, 9);

    while (perfmon_session_read(session, c, &test_ps_buf,
                                sizeof(test_ps_buf), &size) == 0) {
        uintptr_t offset;

        TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
        TEST_ASSERT_EQ(test_ps_buf.sample.period, 1);
        TEST_ASSERT(ksym_lookup(test_ps_buf.sample.ip, &offset) != NULL);
        d.nr_samples++;
    }

    TEST_ASSERT_EQ(d.nr_samples, count);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* ------------------------------------------------------------------ */
/* Starting on a throttled CPU                                         */
/* ------------------------------------------------------------------ */

/*
 * Units that wrap narrow counters, in fewer periods than a tick's budget
 * of samples: the event alone does not throttle the CPU.
 */
#define TEST_PS_THROTTLED_N         10000
#define TEST_PS_THROTTLED_PERIOD    97

/* Emit n units in bursts that cannot wrap a counter twice each. */
static void
test_ps_emit_bursts(uint64_t n)
{
    while (n > 0) {
        uint64_t k = MIN(test_ps_max_emit(), n);

        test_ps_emit(k);
        n -= k;
    }
}

/*
 * Throttle this CPU, interrupts disabled: period-1 samples of an event on
 * channel 1 until the CPU's budget for a tick is spent (within a tick of
 * TSC time: a host that stalls this virtual CPU may need a few budgets'
 * worth). Return the units emitted.
 */
static uint64_t
test_ps_throttle_here(void)
{
    uint64_t budget = 1000, before, now, units = 0;
    char name[32];

    arg_get_u64("perfmon.max_samples_per_tick", &budget);
    snprintf(name, sizeof(name), "perfmon_throttles/%u", cpu_id());
    TEST_ASSERT_EQ(syscnt_lookup(name, &before), 0);

    do {
        uint64_t k = test_ps_max_emit();

        pmu_soft_emit_channel(1, k);
        units += k;
        TEST_ASSERT_EQ(syscnt_lookup(name, &now), 0);
    } while (now == before && units < 10 * budget);

    TEST_ASSERT_NE(now, before);

    /* A period that ends throttled shows in the event's records. */
    pmu_soft_emit_channel(1, 1);
    return units + 1;
}

/*
 * The end of a test where the sampling event b (channel 0, session sb)
 * started on CPU c while the period-1 event a (channel 1, session sa)
 * had throttled it with units, and then counted TEST_PS_THROTTLED_N units: both
 * counts exact, no wrap lost, and samples plus throttled periods are the
 * periods that ended. Return whether b's periods ended while the CPU was
 * throttled (else the throttle ended before b started).
 */
static bool
test_ps_check_throttled(struct perfmon_session *sa, struct perfmon_event *a,
                        uint64_t units, struct perfmon_session *sb,
                        struct perfmon_event *b, unsigned int c, uint64_t lost)
{
    const uint64_t n = TEST_PS_THROTTLED_N;
    struct test_ps_drain da = { 0 }, db = { 0 };
    uint64_t nr;

    TEST_ASSERT_EQ(perfmon_event_read(b), n);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    TEST_ASSERT_EQ(perfmon_event_get_samples(b, &nr), 0);
    test_ps_drain(sb, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U, "test_ps_emit",
                  &db);
    TEST_ASSERT_EQ(db.nr_lost, 0);
    TEST_ASSERT_EQ(db.nr_samples, nr);
    TEST_ASSERT_EQ(nr + db.throttled_periods, n / TEST_PS_THROTTLED_PERIOD);

    /* The CPU was throttled. */
    TEST_ASSERT_EQ(perfmon_event_read(a), units);
    TEST_ASSERT_EQ(perfmon_event_get_samples(a, &nr), 0);
    test_ps_drain(sa, c, 0xc0de0000 + PMU_SOFT_EV_EMIT + 1, ~0U, NULL, &da);
    TEST_ASSERT_EQ(da.nr_lost, 0);
    TEST_ASSERT_EQ(da.nr_samples, nr);
    TEST_ASSERT_GT(da.throttled_periods, 0);
    TEST_ASSERT_EQ(nr + da.throttled_periods, units);
    return db.throttled_periods != 0;
}

/*
 * A sampling CPU event attached to a CPU throttled for the rest of the
 * tick counts exactly: its counter reports each wrap even though it is
 * not preset for a sample then (a polled narrow counter would lose the
 * wraps of units emitted faster than it is polled, here with interrupts
 * off). The throttle ends at the CPU's next tick: the test starts just
 * after one, and tries again when that tick still came before the
 * attach.
 */
TEST_DEFINE(perfmon_sample, cpu_event_attached_while_throttled)
{
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *sa = test_ps_session(1U << 20);
    struct perfmon_session *sb = test_ps_session(TEST_PS_RING);
    struct perfmon_event a, b;
    unsigned int attempt;
    bool throttled = false;

    test_ps_pin(c);
    test_detach_on_failure(&a);
    test_detach_on_failure(&b);

    for (attempt = 1; attempt <= 5 && !throttled; attempt++) {
        uint64_t lost = pmu_soft_nr_lost(c), intrs, units;
        unsigned long flags;

        test_ps_init(&a, PMU_SOFT_EV_EMIT + 1, sa, 1, 0);
        test_ps_init(&b, PMU_SOFT_EV_EMIT, sb, TEST_PS_THROTTLED_PERIOD, 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&a, c), 0);

        /* A tick of this CPU just came: the next one is a tick away. */
        intrs = clock_nr_intrs(c);

        while (clock_nr_intrs(c) == intrs) {
            cpu_pause();
        }

        flags = cpu_intr_save();
        units = test_ps_throttle_here();
        cpu_intr_restore(flags);

        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&b, c), 0);
        flags = cpu_intr_save();
        test_ps_emit_bursts(TEST_PS_THROTTLED_N);
        cpu_intr_restore(flags);

        thread_delay(3);    /* the throttle ends */
        TEST_ASSERT_EQ(perfmon_event_detach(&b), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&a), 0);
        throttled = test_ps_check_throttled(sa, &a, units, sb, &b, c, lost);
    }

    test_diag("attached while throttled at attempt %u", attempt - 1);
    TEST_ASSERT(throttled);
    TEST_ASSERT_EQ(perfmon_session_destroy(sa), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(sb), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * The same for a thread event loaded on a throttled CPU: a throttler
 * thread throttles the CPU with interrupts off and yields, still with
 * interrupts off, to the target, which was waiting in its own yield with
 * interrupts off: the target loads with the CPU throttled and emits
 * before any tick can end the throttle.
 */
struct test_ps_throttled {
    struct thread *target;
    struct thread *throttler;
    uint64_t units;             /* what throttled the CPU */
    volatile bool go;
    volatile bool ready;        /* the target yields, interrupts off */
};

static void
test_ps_throttler_main(void *arg)
{
    struct test_ps_throttled *t = arg;
    unsigned long flags;

    /* Runnable, so that the target's yield comes here. */
    while (!t->ready) {
        thread_yield();
    }

    flags = cpu_intr_save();
    t->units = test_ps_throttle_here();
    thread_yield();
    cpu_intr_restore(flags);
}

static void
test_ps_throttled_target_main(void *arg)
{
    struct test_ps_throttled *t = arg;
    unsigned long flags;

    while (!t->go) {
        thread_delay(1);
    }

    flags = cpu_intr_save();
    t->ready = true;
    thread_yield();     /* back here loaded on a throttled CPU */
    test_ps_emit_bursts(TEST_PS_THROTTLED_N);
    cpu_intr_restore(flags);
}

TEST_DEFINE(perfmon_sample, thread_event_loaded_while_throttled)
{
    static struct test_ps_throttled t;
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *sa = test_ps_session(1U << 20);
    struct perfmon_session *sb = test_ps_session(TEST_PS_RING);
    struct perfmon_event a, b;
    unsigned int attempt;
    bool throttled = false;

    test_detach_on_failure(&a);
    test_detach_on_failure(&b);

    /* Again if the throttler's yield went to another thread that let a
       tick end the throttle. */
    for (attempt = 1; attempt <= 3 && !throttled; attempt++) {
        uint64_t lost = pmu_soft_nr_lost(c);

        t = (struct test_ps_throttled){ .go = false };
        test_ps_init(&a, PMU_SOFT_EV_EMIT + 1, sa, 1, 0);
        test_ps_init(&b, PMU_SOFT_EV_EMIT, sb, TEST_PS_THROTTLED_PERIOD, 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&a, c), 0);
        t.target = test_thread_start("ps-throttled", 1ULL << c,
                                     test_ps_throttled_target_main, &t);
        TEST_ASSERT_EQ(perfmon_event_attach(&b, t.target), 0);
        t.throttler = test_thread_start("ps-throttler", 1ULL << c,
                                        test_ps_throttler_main, &t);
        t.go = true;
        thread_join(t.target);
        thread_join(t.throttler);
        thread_delay(3);        /* the throttle ends */
        TEST_ASSERT_EQ(perfmon_event_detach(&b), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&a), 0);
        throttled = test_ps_check_throttled(sa, &a, t.units, sb, &b, c, lost);
    }

    test_diag("loaded while throttled at attempt %u", attempt - 1);
    TEST_ASSERT(throttled);
    TEST_ASSERT_EQ(perfmon_session_destroy(sa), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(sb), 0);
}

/* ------------------------------------------------------------------ */
/* The budget, a period changed under a throttle, and empty throttles  */
/* ------------------------------------------------------------------ */

/* Throttles of CPU c so far. */
static uint64_t
test_ps_nr_throttles(unsigned int c)
{
    char name[32];
    uint64_t value;

    snprintf(name, sizeof(name), "perfmon_throttles/%u", c);
    TEST_ASSERT_EQ(syscnt_lookup(name, &value), 0);
    return value;
}

/* Wait for a tick of CPU c: the next one is a tick away. Its count. */
static uint64_t
test_ps_after_tick(unsigned int c)
{
    uint64_t intrs = clock_nr_intrs(c);

    while (clock_nr_intrs(c) == intrs) {
        cpu_pause();
    }

    return clock_nr_intrs(c);
}

/* n units on an emit channel, in bursts that cannot wrap twice each. */
static void
test_ps_emit_channel(unsigned int channel, uint64_t n)
{
    while (n > 0) {
        uint64_t k = MIN(test_ps_max_emit(), n);

        pmu_soft_emit_channel(channel, k);
        n -= k;
    }
}

/*
 * The budget is perfmon.max_samples_per_tick samples a tick, exactly:
 * period 1 from just after a tick, interrupts disabled, that many units
 * are all sampled and do not throttle the CPU; the unit after them does,
 * its period reported in a THROTTLE record of one period and one event.
 * (Before: the throttle tripped on the last sample of the budget.) Again
 * when the host stretched the units over a tick of TSC time, which opens
 * a new window for the last one.
 */
TEST_DEFINE(perfmon_sample, throttle_allows_the_budget_exactly)
{
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *session = test_ps_session(1U << 20);
    uint64_t budget = 1000;
    struct perfmon_event a;
    unsigned int attempt;
    bool tripped = false;

    arg_get_u64("perfmon.max_samples_per_tick", &budget);
    test_ps_pin(c);
    test_detach_on_failure(&a);

    for (attempt = 1; attempt <= 5 && !tripped; attempt++) {
        struct test_ps_drain d = { 0 };
        uint64_t before, mid, after, nr;
        unsigned long flags;

        test_ps_init(&a, PMU_SOFT_EV_EMIT + 1, session, 1, 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&a, c), 0);
        test_ps_after_tick(c);
        flags = cpu_intr_save();
        before = test_ps_nr_throttles(c);
        test_ps_emit_channel(1, budget);
        mid = test_ps_nr_throttles(c);
        pmu_soft_emit_channel(1, 1);
        after = test_ps_nr_throttles(c);
        cpu_intr_restore(flags);
        thread_delay(3);    /* the throttle, if any, ends */
        TEST_ASSERT_EQ(perfmon_event_detach(&a), 0);

        TEST_ASSERT_EQ(perfmon_event_read(&a), budget + 1);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&a, &nr), 0);
        test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT + 1, ~0U,
                      NULL, &d);
        TEST_ASSERT_EQ(d.nr_lost, 0);
        TEST_ASSERT_EQ(d.nr_samples, nr);
        TEST_ASSERT_EQ(nr + d.throttled_periods, budget + 1);
        TEST_ASSERT_EQ(d.period_sum + d.throttled_events, budget + 1);

        /* The budget's samples never throttle, in any window. */
        TEST_ASSERT_EQ(mid, before);
        TEST_ASSERT_EQ(nr, budget + 1 - (after - before));
        tripped = after != before;

        if (tripped) {
            TEST_ASSERT_EQ(after, before + 1);
            TEST_ASSERT_EQ(d.nr_throttle_records, 1);
            TEST_ASSERT_EQ(d.throttled_periods, 1);
            TEST_ASSERT_EQ(d.throttled_events, 1);
        }
    }

    test_diag("the unit past the budget throttled at attempt %u",
              attempt - 1);
    TEST_ASSERT(tripped);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * A period set while the CPU is throttled applies from the period after
 * the one in flight, including the periods the throttle drops: period 1
 * throttled by U units, 199 more, set_period(100), then 1000 units: the
 * period in flight (1 unit) and 9 of 100 end throttled, so samples plus
 * throttled periods are U + 199 + 10 (before: U + 1199, the 1000 units
 * counted in periods of 1), the THROTTLE records' events are what the
 * dropped periods held, and the samples after the throttle carry 100.
 * 301 units then end the period in flight and 3 more: the periods of the
 * samples plus the throttled events are the count, exactly. Again when a
 * tick came during the test (the throttle may have ended).
 */
TEST_DEFINE(perfmon_sample, set_period_while_throttled)
{
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *session = test_ps_session(1U << 20);
    struct perfmon_event a;
    unsigned int attempt;
    bool held = false;

    test_ps_pin(c);
    test_detach_on_failure(&a);

    for (attempt = 1; attempt <= 5 && !held; attempt++) {
        uint64_t intrs, units, nr, count, throttled = 0, events = 0;
        uint64_t nr_samples = 0, nr_new = 0, period_sum = 0;
        unsigned long flags;
        size_t size;

        test_ps_init(&a, PMU_SOFT_EV_EMIT + 1, session, 1, 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&a, c), 0);
        intrs = test_ps_after_tick(c);
        flags = cpu_intr_save();
        units = test_ps_throttle_here() + 199;
        pmu_soft_emit_channel(1, 199);
        cpu_intr_restore(flags);
        TEST_ASSERT_EQ(perfmon_event_set_period(&a, 100), 0);
        flags = cpu_intr_save();
        test_ps_emit_channel(1, 1000);
        held = clock_nr_intrs(c) == intrs;
        cpu_intr_restore(flags);
        thread_delay(3);    /* the throttle ends */

        flags = cpu_intr_save();
        test_ps_emit_channel(1, 301);
        cpu_intr_restore(flags);
        TEST_ASSERT_EQ(perfmon_event_detach(&a), 0);
        count = perfmon_event_read(&a);
        TEST_ASSERT_EQ(count, units + 1000 + 301);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&a, &nr), 0);

        while (perfmon_session_read(session, c, &test_ps_buf,
                                    sizeof(test_ps_buf), &size) == 0) {
            switch (test_ps_buf.header.type) {
            case PERFMON_RECORD_SAMPLE:
                TEST_ASSERT_EQ(test_ps_buf.sample.cookie, a.cookie);

                /* Period 1 until the change, 100 after it. */
                if (test_ps_buf.sample.period == 100) {
                    nr_new++;
                } else {
                    TEST_ASSERT_EQ(test_ps_buf.sample.period, 1);
                    TEST_ASSERT_EQ(nr_new, 0);
                }

                nr_samples++;
                period_sum += test_ps_buf.sample.period;
                break;
            case PERFMON_RECORD_THROTTLE:
                TEST_ASSERT_EQ(size, sizeof(test_ps_buf.throttle));
                TEST_ASSERT_EQ(test_ps_buf.throttle.cookie, a.cookie);
                TEST_ASSERT_NE(test_ps_buf.throttle.nr_periods, 0);
                throttled += test_ps_buf.throttle.nr_periods;
                events += test_ps_buf.throttle.nr_events;
                break;
            default:
                TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
            }
        }

        TEST_ASSERT_EQ(nr_samples, nr);
        TEST_ASSERT_EQ(nr + throttled, units + 10 + 4);
        TEST_ASSERT_EQ(period_sum + events, count);

        if (held) {
            /* Every period of 100 before the throttle's end dropped;
               the first after it ends the period in flight. */
            TEST_ASSERT_EQ(nr_new, 4);
        }
    }

    test_diag("the throttle held through the change at attempt %u",
              attempt - 1);
    TEST_ASSERT(held);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * A THROTTLE record only when a period was dropped: events attached to a
 * throttled CPU whose periods do not end there, one detached while the
 * CPU is throttled (the slot's last put), one kept past the throttle's
 * end (the throttle timer), leave no record in their sessions (before:
 * an empty one each); the throttling event's periods still come back.
 */
TEST_DEFINE(perfmon_sample, throttle_without_drops_writes_nothing)
{
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *sa = test_ps_session(1U << 20);
    struct perfmon_session *sb = test_ps_session(TEST_PS_RING);
    struct perfmon_session *sc = test_ps_session(TEST_PS_RING);
    struct perfmon_event a, b, e;
    unsigned int attempt;
    bool held = false;

    test_ps_pin(c);
    test_detach_on_failure(&a);
    test_detach_on_failure(&b);
    test_detach_on_failure(&e);

    for (attempt = 1; attempt <= 5 && !held; attempt++) {
        struct test_ps_drain da = { 0 }, db = { 0 }, dc = { 0 };
        uint64_t intrs, units, nr;
        unsigned long flags;

        test_ps_init(&a, PMU_SOFT_EV_EMIT + 1, sa, 1, 0);
        test_ps_init(&b, PMU_SOFT_EV_EMIT + 2, sb, 1000000, 0);
        test_ps_init(&e, PMU_SOFT_EV_EMIT + 3, sc, 1000000, 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&a, c), 0);
        intrs = test_ps_after_tick(c);
        flags = cpu_intr_save();
        units = test_ps_throttle_here();
        cpu_intr_restore(flags);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&b, c), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&e, c), 0);
        pmu_soft_emit_channel(2, 10);
        pmu_soft_emit_channel(3, 10);
        TEST_ASSERT_EQ(perfmon_event_detach(&b), 0);
        held = clock_nr_intrs(c) == intrs;
        thread_delay(3);    /* the throttle ends */
        TEST_ASSERT_EQ(perfmon_event_detach(&e), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&a), 0);

        TEST_ASSERT_EQ(perfmon_event_read(&b), 10);
        TEST_ASSERT_EQ(perfmon_event_read(&e), 10);
        test_ps_drain(sb, c, b.cookie, ~0U, NULL, &db);
        test_ps_drain(sc, c, e.cookie, ~0U, NULL, &dc);
        TEST_ASSERT_EQ(db.nr_samples + db.nr_throttle_records, 0);
        TEST_ASSERT_EQ(dc.nr_samples + dc.nr_throttle_records, 0);

        TEST_ASSERT_EQ(perfmon_event_get_samples(&a, &nr), 0);
        test_ps_drain(sa, c, a.cookie, ~0U, NULL, &da);
        TEST_ASSERT_EQ(da.nr_samples, nr);
        TEST_ASSERT_GT(da.throttled_periods, 0);
        TEST_ASSERT_EQ(nr + da.throttled_periods, units);
        TEST_ASSERT_EQ(da.period_sum + da.throttled_events, units);
    }

    test_diag("detached while throttled at attempt %u", attempt - 1);
    TEST_ASSERT(held);
    TEST_ASSERT_EQ(perfmon_session_destroy(sa), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(sb), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(sc), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
