/*
 * perfmon sampling in frequency mode (suite perfmon_sample, with
 * test_perfmon_sample.c, whose header states the method): a sampler asked
 * for a frequency reaches it from a period far off, on a CPU and for a
 * thread that leaves its CPU often; its records' periods account for its
 * count; a burst is still throttled; and the API refuses a bad frequency,
 * changing nothing. The emitter is paced by the TSC, the clock the
 * estimates and the records use, so its rate is steady whatever the
 * host's load does to the ticks.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_session.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "sample_util.h"
#include "test_util.h"

#define TEST_PSF_RATE       40000   /* events a second */
#define TEST_PSF_FREQ       200     /* samples a second: periods of 200 */
#define TEST_PSF_START      20      /* the first period, 10 times off */
#define TEST_PSF_TRIES      3

/*
 * The emitter catches up at most a tick of units after the host held its
 * CPU, and gives the rest up: so no tick window sees more than two ticks'
 * worth, 800 units, and even at period 1 the sampler stays below the
 * throttle's 1000 samples a tick (its records then account for every
 * unit).
 */
#define TEST_PSF_BACKLOG    (TEST_PSF_RATE / CLOCK_HZ)

/* A frequency sampler on the emit event, starting with period start. */
static void
test_psf_init(struct perfmon_event *event, struct perfmon_session *session,
              uint64_t freq, uint64_t start)
{
    struct perfmon_sample_attr attr = {
        .session = session,
        .period = start,
        .freq = freq,
        .cookie = 0xc0de0000 + PMU_SOFT_EV_EMIT,
    };

    TEST_ASSERT_EQ(perfmon_event_init(event, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
}

/* A paced emitter: its units and the units it gave up. */
struct test_psf_emitter {
    uint64_t busy;              /* TSC time spent emitting before start */
    uint64_t emitted;
    uint64_t given_up;
};

/*
 * Emit at TEST_PSF_RATE units a second of busy time from start (TSC) to
 * end: what the rate asks for by now, in emits the counter takes exactly,
 * a backlog caught up to TEST_PSF_BACKLOG units.
 */
static void
test_psf_emit_until(struct test_psf_emitter *e, uint64_t start, uint64_t end)
{
    uint64_t hz = cpu_get_freq();
    uint64_t now;

    while ((now = cpu_get_tsc()) < end) {
        uint64_t want = TEST_PSF_RATE * (e->busy + now - start) / hz
                        - e->given_up;

        if (want > e->emitted + TEST_PSF_BACKLOG) {
            e->given_up += want - e->emitted - TEST_PSF_BACKLOG;
            want = e->emitted + TEST_PSF_BACKLOG;
        }

        while (e->emitted < want) {
            uint64_t n = MIN(test_ps_max_emit(), want - e->emitted);

            test_ps_emit(n);
            e->emitted += n;
        }

        cpu_pause();
    }

    e->busy += end - start;
}

/* What a CPU's ring held for a frequency sampler. */
struct test_psf_drain {
    uint64_t nr_samples;
    uint64_t period_sum;
    uint64_t nr_late;           /* samples at or after the time asked */
};

/*
 * Read cpu's ring: samples only (no throttling, no loss), each with a
 * period, their periods standing for the count: at most the count, short
 * of it by no more than 2% (the period under way when the sampler
 * stopped).
 */
static void
test_psf_drain(struct perfmon_session *session, unsigned int cpu,
               uint64_t late, uint64_t count, struct test_psf_drain *d)
{
    size_t size;

    while (perfmon_session_read(session, cpu, &test_ps_buf,
                                sizeof(test_ps_buf), &size) == 0) {
        TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
        TEST_ASSERT_EQ(test_ps_buf.sample.cookie,
                       0xc0de0000 + PMU_SOFT_EV_EMIT);
        TEST_ASSERT_GE(test_ps_buf.sample.period, 1);
        d->nr_samples++;
        d->period_sum += test_ps_buf.sample.period;
        d->nr_late += test_ps_buf.sample.time >= late;
    }

    TEST_ASSERT_LE(d->period_sum, count);
    TEST_ASSERT_LE((count - d->period_sum) * 50, count);
}

/*
 * One try: the samples taken from 1 s on, the samples TEST_PSF_FREQ
 * would give then, and whether the emitter kept its rate then.
 */
struct test_psf_try {
    uint64_t nr_late;
    uint64_t want;
    bool steady;
};

/*
 * Whether the emitter kept its rate since mark (a copy of it then): the
 * host may hold it off its CPU for a tick now and then, not for more than
 * 5% of the units asked. (A loaded 2-core host running 2 or 4 vCPUs gives
 * up 1% to 40%; past 10%, the catch-up bursts after the stalls can put
 * the samples 10% off the frequency: the rate was not the one asked.)
 */
static bool
test_psf_steady(const struct test_psf_emitter *e,
                const struct test_psf_emitter *mark)
{
    uint64_t given_up = e->given_up - mark->given_up;

    return given_up * 100 <= (e->emitted - mark->emitted + given_up) * 5;
}

/*
 * Check a convergence test's tries (run until one had a steady emitter,
 * TEST_PSF_TRIES at most): its samples came at the frequency within 10%;
 * skip the test when the host never let the emitter keep its rate. At
 * every CPU count: the emitter is paced by the TSC and the steady check
 * sees the ticks the host held it off, however many vCPUs share the
 * host's cores.
 */
static void
test_psf_check_tries(void (*try_fn)(struct test_psf_try *t))
{
    struct test_psf_try t = { .steady = false };
    unsigned int i;

    TEST_ASSERT_NE(cpu_get_freq(), 0);
    test_ps_pin(cpu_id());

    for (i = 0; i < TEST_PSF_TRIES && !t.steady; i++) {
        try_fn(&t);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    test_diag("%llu samples from 1 s on, %llu at the frequency, %u CPUs, "
              "%u tr%s", (unsigned long long)t.nr_late,
              (unsigned long long)t.want, cpu_count(), i,
              (i == 1) ? "y" : "ies");

    if (!t.steady) {
        test_skip("the host never let the emitter keep its rate");
    }

    TEST_ASSERT_LE(t.nr_late * 10, t.want * 11);
    TEST_ASSERT_GE(t.nr_late * 10, t.want * 9);
}

/* ------------------------------------------------------------------ */
/* API                                                                 */
/* ------------------------------------------------------------------ */

/*
 * A frequency of 0 without a period, or above PERFMON_FREQ_MAX, is
 * EINVAL; so is a period set by hand on a frequency sampler; each leaves
 * the event as it was. A frequency sampler without a period starts at 1.
 */
TEST_DEFINE(perfmon_sample, freq_errors_change_nothing)
{
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct perfmon_sample_attr attr = { .session = session };
    struct perfmon_event event, copy;
    uint64_t period;

    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    memcpy(&copy, &event, sizeof(event));
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
    attr.freq = PERFMON_FREQ_MAX + 1;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
    attr.period = PERFMON_PERIOD_MAX + 1;
    attr.freq = 100;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
    TEST_ASSERT_EQ(perfmon_event_get_period(&event, &period), EINVAL);

    attr.period = 0;
    attr.freq = PERFMON_FREQ_MAX;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    TEST_ASSERT_EQ(perfmon_event_get_period(&event, &period), 0);
    TEST_ASSERT_EQ(period, 1);
    memcpy(&copy, &event, sizeof(event));
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 10), EINVAL);
    TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Convergence                                                         */
/* ------------------------------------------------------------------ */

/*
 * One try of a CPU sampler at TEST_PSF_FREQ on an event at TEST_PSF_RATE,
 * starting 10 times too short, for 1.5 s. Its records account for its
 * count, whatever the host did; t: its samples from 1 s on.
 */
static void
test_psf_cpu_try(struct test_psf_try *t)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(1U << 20);
    struct test_psf_emitter e = { 0 }, mark;
    struct test_psf_drain d = { 0 };
    struct perfmon_event event;
    uint64_t hz = cpu_get_freq(), start, late, end;

    test_psf_init(&event, session, TEST_PSF_FREQ, TEST_PSF_START);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    start = cpu_get_tsc();
    late = start + hz;
    end = start + hz * 3 / 2;
    test_psf_emit_until(&e, start, late);
    mark = e;
    test_psf_emit_until(&e, late, end);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);

    test_psf_drain(session, c, late, perfmon_event_read(&event), &d);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    t->nr_late = d.nr_late;
    t->want = TEST_PSF_FREQ * (end - late) / hz;
    t->steady = test_psf_steady(&e, &mark);
}

/*
 * A CPU sampler converges: from 1 s on, its samples come at the frequency
 * within 10% (tried again when the host held the emitter off its CPU for
 * long: its rate was not the one asked; skipped when it always did).
 */
TEST_DEFINE(perfmon_sample, freq_cpu_sampler_converges)
{
    test_psf_check_tries(test_psf_cpu_try);
}

/*
 * One try of a thread sampler at TEST_PSF_FREQ on its own thread, which
 * emits at TEST_PSF_RATE a second of its run time and sleeps a tick after
 * every 3, for 1.5 s of run time. The estimate counts the sampler's live
 * time only (what it counted on the CPU it left goes on where it comes
 * back). Its records account for its count; t: its samples after 1 s of
 * run time, against its run time then (its thread's, which is more than
 * the time it emits: its sleeps and wakes run too).
 */
static void
test_psf_thread_try(struct test_psf_try *t)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(1U << 20);
    struct test_psf_emitter e = { 0 }, mark = { 0 };
    struct test_psf_drain d = { 0 };
    struct perfmon_event event;
    struct perfmon_value late_value = { 0 }, end_value;
    uint64_t hz = cpu_get_freq(), late = UINT64_MAX;

    test_psf_init(&event, session, TEST_PSF_FREQ, TEST_PSF_START);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), 0);

    while (e.busy < hz * 3 / 2) {
        uint64_t start = cpu_get_tsc();

        test_psf_emit_until(&e, start, start + 3 * clock_tsc_per_tick());

        if (e.busy >= hz && late == UINT64_MAX) {
            TEST_ASSERT_EQ(perfmon_event_read_value(&event, &late_value), 0);
            late = cpu_get_tsc();
            mark = e;
        }

        thread_delay(1);
    }

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &end_value), 0);
    TEST_ASSERT_EQ(end_value.count, e.emitted);
    test_psf_drain(session, c, late, e.emitted, &d);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    t->nr_late = d.nr_late;
    t->want = TEST_PSF_FREQ
              * (end_value.time_running - late_value.time_running)
              / 1000000000;
    t->steady = test_psf_steady(&e, &mark);
}

/*
 * A thread sampler that leaves its CPU often converges: after 1 s of its
 * run time, its samples come at the frequency of its run time within 10%
 * (tried again, or skipped, as freq_cpu_sampler_converges).
 */
TEST_DEFINE(perfmon_sample, freq_thread_sampler_converges)
{
    test_psf_check_tries(test_psf_thread_try);
}

/*
 * A frequency sampler starting at period 1 meets a burst (interrupts
 * disabled, so no tick estimates a period in between): the per-tick
 * budget still stops it, and samples plus throttled periods are the
 * count, exactly.
 */
TEST_DEFINE(perfmon_sample, freq_burst_is_throttled)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(1U << 20);
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    const uint64_t want = 5000;
    uint64_t total = 0, nr;
    unsigned long flags;

    test_ps_pin(c);
    test_psf_init(&event, session, PERFMON_FREQ_MAX, 0);
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
    TEST_ASSERT_EQ(d.period_sum, nr);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
