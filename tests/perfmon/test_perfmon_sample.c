/*
 * perfmon sampling with the software PMU: exact sample counts, where each
 * sample lands (the emitting function, the emitting thread and CPU), call
 * chains, period changes and refresh, throttling and lost records. Every
 * emit here stays below 2^width, so counts are exact at every width and
 * in both overflow modes; a sampling event's wraps are reported at once.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/ksym.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/syscnt.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"

#define TEST_PS_RING        (1U << 17)
#define TEST_PS_RECORD_MAX  PERFMON_SESSION_RECORD_MAX

static union {
    struct perfmon_record_header header;
    struct perfmon_record_sample sample;
    struct perfmon_record_lost lost;
    struct perfmon_record_throttle throttle;
    uint8_t bytes[TEST_PS_RECORD_MAX];
} test_ps_buf;

static struct perfmon_session *
test_ps_session(size_t size)
{
    struct perfmon_session *session;

    TEST_ASSERT_EQ(perfmon_session_create(&session, size), 0);
    return session;
}

static void
test_ps_init(struct perfmon_event *event, unsigned int id,
             struct perfmon_session *session, uint64_t period,
             unsigned int nr_frames)
{
    struct perfmon_sample_attr attr = {
        .session = session,
        .period = period,
        .cookie = 0xc0de0000 + id,
        .nr_frames = nr_frames,
    };

    TEST_ASSERT_EQ(perfmon_event_init(event, id, PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
}

/* Largest emit that cannot wrap a counter twice. */
static uint64_t
test_ps_max_emit(void)
{
    return MIN(200, (1ULL << MIN(pmu_soft_width(), 32)) - 1);
}

/*
 * Emit n units on channel 0 from a function of its own: samples must
 * point into it. The barrier keeps the call from becoming a tail jump.
 */
static __attribute__((noinline)) void
test_ps_emit(uint64_t n)
{
    pmu_soft_emit(n);
    __asm__ volatile("" : : : "memory");
}

static bool
test_ps_in(uintptr_t ip, const char *fn)
{
    uintptr_t offset;
    const char *name = ksym_lookup(ip, &offset);

    return name != NULL && strcmp(name, fn) == 0;
}

/* A random emit size, at most left. */
static uint64_t
test_ps_rand_emit(uint64_t *seed, uint64_t left)
{
    uint64_t n = 1 + test_rand(seed) % test_ps_max_emit();

    return MIN(n, left);
}

/* Samples in a count of n after total, for period. */
static uint64_t
test_ps_ends(uint64_t total, uint64_t n, uint64_t period)
{
    return (total + n) / period - total / period;
}

/*
 * What a CPU's ring holds: sample records (checked against want_cookie,
 * want_tid unless ~0, and the emitting function fn unless NULL), LOST and
 * THROTTLE totals.
 */
struct test_ps_drain {
    uint64_t nr_samples;
    uint64_t nr_lost;
    uint64_t nr_throttle_records;
    uint64_t throttled_periods;
    uint64_t period_sum;
};

static void
test_ps_drain(struct perfmon_session *session, unsigned int cpu,
              uint64_t want_cookie, uint32_t want_tid, const char *fn,
              struct test_ps_drain *d)
{
    size_t size;

    while (perfmon_session_read(session, cpu, &test_ps_buf,
                                sizeof(test_ps_buf), &size) == 0) {
        TEST_ASSERT_EQ(size, test_ps_buf.header.size);
        TEST_ASSERT_EQ(test_ps_buf.header.cpu, cpu);

        switch (test_ps_buf.header.type) {
        case PERFMON_RECORD_SAMPLE:
            TEST_ASSERT_EQ(test_ps_buf.sample.fixed_size,
                           sizeof(test_ps_buf.sample));
            TEST_ASSERT_EQ(size, sizeof(test_ps_buf.sample)
                                 + test_ps_buf.sample.ext_size);
            TEST_ASSERT_EQ(test_ps_buf.sample.cookie, want_cookie);

            if (want_tid != ~0U) {
                TEST_ASSERT_EQ(test_ps_buf.sample.tid, want_tid);
            }

            if (fn != NULL && !test_ps_in(test_ps_buf.sample.ip, fn)) {
                test_fail_at(__FILE__, __LINE__, "sample at %lx, not in %s",
                             (unsigned long)test_ps_buf.sample.ip, fn);
            }

            d->nr_samples++;
            d->period_sum += test_ps_buf.sample.period;
            break;
        case PERFMON_RECORD_LOST:
            d->nr_lost += test_ps_buf.lost.nr_lost;
            break;
        case PERFMON_RECORD_THROTTLE:
            TEST_ASSERT_LE(test_ps_buf.throttle.time_start,
                           test_ps_buf.throttle.time_end);
            d->nr_throttle_records++;
            d->throttled_periods += test_ps_buf.throttle.nr_periods;
            break;
        default:
            test_fail_at(__FILE__, __LINE__, "record type %u",
                         test_ps_buf.header.type);
        }
    }
}

static void
test_ps_pin(unsigned int cpu)
{
    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), 1ULL << cpu), 0);
}

/* ------------------------------------------------------------------ */
/* API errors                                                          */
/* ------------------------------------------------------------------ */

TEST_DEFINE(perfmon_sample, api_errors_change_nothing)
{
    struct perfmon_session *session = test_ps_session(4096);
    struct perfmon_sample_attr attr = { .session = session, .period = 10 };
    struct perfmon_event event, counting;
    uint64_t n;

    /* Not initialized. */
    memset(&event, 0, sizeof(event));
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(NULL, &attr), EINVAL);

    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    attr.session = NULL;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    attr.session = session;
    attr.period = 0;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    attr.period = PERFMON_PERIOD_MAX + 1;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    attr.period = 10;
    attr.nr_frames = PERFMON_MAX_FRAMES + 1;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);

    /* Still a counting event: the sampling calls refuse it. */
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 5), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_refresh(&event, 1), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), EINVAL);

    attr.nr_frames = PERFMON_MAX_FRAMES;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, PERFMON_PERIOD_MAX + 1),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_event_refresh(&event, 0), EINVAL);

    /* Attached: no change of sampling, and the session is in use. */
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_id()), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), EBUSY);

    /* A sampling event does not share its slot with a counting one. */
    TEST_ASSERT_EQ(perfmon_event_init(&counting, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&counting, cpu_id()), 0);
    TEST_ASSERT_NE(perfmon_event_pmc_index(&counting),
                   perfmon_event_pmc_index(&event));
    TEST_ASSERT_EQ(perfmon_event_detach(&counting), 0);

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), 0);
    TEST_ASSERT_EQ(n, 0);

    /* Back to counting, detached. */
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, NULL), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* A hardware sampling event without a PMU is ENODEV, as counting. */
TEST_DEFINE(perfmon_sample, hardware_event_without_pmu_is_enodev)
{
    struct perfmon_session *session = test_ps_session(4096);
    struct perfmon_sample_attr attr = { .session = session, .period = 1000 };
    struct perfmon_event event;

    if (perfmon_get_dev(false) != NULL) {
        TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
        test_skip("a hardware PMU is present");
    }

    TEST_ASSERT_EQ(perfmon_event_init(&event, PERFMON_EV_INSTRUCTION,
                                      PERFMON_EF_KERN), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), ENODEV);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Exact samples                                                       */
/* ------------------------------------------------------------------ */

/*
 * A CPU event with period P samples exactly floor(N / P) times over N
 * units emitted in random sizes, each sample in the emitting function,
 * with the owner's cookie, the CPU, the thread and the period; what is
 * emitted on other CPUs is not its business.
 */
TEST_DEFINE(perfmon_sample, cpu_event_samples_exactly)
{
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    uint64_t seed = 77, total = 0, nr, lost;
    const uint64_t period = 97, want = 30011;

    test_ps_pin(c);
    lost = pmu_soft_nr_lost(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, period, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    while (total < want) {
        uint64_t n = test_ps_rand_emit(&seed, want - total);

        test_ps_emit(n);
        total += n;
    }

    TEST_ASSERT_EQ(perfmon_event_read(&event), want);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, want / period);

    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT,
                  thread_id(thread_self()), "test_ps_emit", &d);
    TEST_ASSERT_EQ(d.nr_samples, want / period);
    TEST_ASSERT_EQ(d.period_sum, d.nr_samples * period);
    TEST_ASSERT_EQ(d.nr_lost, 0);
    TEST_ASSERT_EQ(d.nr_throttle_records, 0);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        struct test_ps_drain other = { 0 };

        test_ps_drain(session, i, 0, 0, NULL, &other);
        TEST_ASSERT_EQ(other.nr_samples, 0);
    }

    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * A thread event samples its thread only, wherever it runs: the thread
 * migrates over every CPU between emits while other threads emit on the
 * same channel everywhere. It knows, per CPU, which period ends fell
 * into its emits there (interrupts off around each emit keep it on one
 * CPU): each ring must hold exactly those samples, all its own.
 */
struct test_ps_target {
    struct thread *thread;
    uint64_t total;
    uint64_t period;
    uint64_t want[CPU_MAX];
    volatile bool go;
};

static void
test_ps_target_main(void *arg)
{
    struct test_ps_target *t = arg;
    uint64_t seed = 5, done = 0;

    while (!t->go) {
        thread_delay(1);
    }

    for (unsigned int i = 0; done < t->total; i++) {
        uint64_t n = test_ps_rand_emit(&seed, t->total - done);
        unsigned long flags;

        if (i % 16 == 0) {
            thread_set_affinity(thread_self(), 1ULL << (i / 16 % cpu_count()));
        }

        flags = cpu_intr_save();
        t->want[cpu_id()] += test_ps_ends(done, n, t->period);
        test_ps_emit(n);
        cpu_intr_restore(flags);
        done += n;

        if (i % 7 == 0) {
            thread_yield();
        }
    }
}

struct test_ps_other {
    struct thread *thread;
    uint64_t total;
    volatile bool go;
};

static void
test_ps_other_main(void *arg)
{
    struct test_ps_other *o = arg;
    uint64_t seed = 9;

    while (!o->go) {
        thread_delay(1);
    }

    for (uint64_t done = 0; done < o->total;) {
        uint64_t n = 1 + test_rand(&seed) % test_ps_max_emit();

        test_ps_emit(n);
        done += n;

        if (done % 5 == 0) {
            thread_yield();
        }
    }
}

TEST_DEFINE(perfmon_sample, thread_event_samples_only_its_thread)
{
    static struct test_ps_target target;
    static struct test_ps_other others[CPU_MAX];
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct perfmon_event event;
    uint64_t nr, total_want = 0, total_got = 0;

    target = (struct test_ps_target){ .total = 40000, .period = 61 };
    target.thread = test_thread_start("ps-target", 0, test_ps_target_main,
                                      &target);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, target.period, 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, target.thread), 0);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        others[i] = (struct test_ps_other){ .total = 10000 };
        others[i].thread = test_thread_start("ps-other", 1ULL << i,
                                             test_ps_other_main, &others[i]);
    }

    target.go = true;

    for (unsigned int i = 0; i < cpu_count(); i++) {
        others[i].go = true;
    }

    /* Read before join: the event holds its own reference. */
    while (!thread_exited(target.thread)) {
        thread_delay(1);
    }

    TEST_ASSERT_EQ(perfmon_event_read(&event), target.total);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    thread_join(target.thread);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, target.total / target.period);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        struct test_ps_drain d = { 0 };

        test_ps_drain(session, i, 0xc0de0000 + PMU_SOFT_EV_EMIT,
                      thread_id(target.thread), "test_ps_emit", &d);
        TEST_ASSERT_EQ(d.nr_samples, target.want[i]);
        TEST_ASSERT_EQ(d.nr_lost, 0);
        total_want += target.want[i];
        total_got += d.nr_samples;
    }

    TEST_ASSERT_EQ(total_got, target.total / target.period);
    TEST_ASSERT_EQ(total_want, total_got);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        thread_join(others[i].thread);
    }

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * A new period takes effect where the current one ends; refresh allows
 * exactly n more samples, the event counting on after them; a refresh of
 * a stopped event starts a new period from where the count is.
 */
TEST_DEFINE(perfmon_sample, period_change_and_refresh)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    uint64_t nr;

    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 100, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    for (unsigned int i = 0; i < 20; i++) {
        test_ps_emit(50);                       /* 1000: 10 samples */
    }

    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 50), 0);

    for (unsigned int i = 0; i < 20; i++) {
        test_ps_emit(10);                       /* 1200: 1100 1150 1200 */
    }

    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, 13);
    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U,
                  "test_ps_emit", &d);
    TEST_ASSERT_EQ(d.nr_samples, 13);
    TEST_ASSERT_EQ(d.period_sum, 10 * 100 + 100 + 50 + 50);

    TEST_ASSERT_EQ(perfmon_event_refresh(&event, 2), 0);

    for (unsigned int i = 0; i < 50; i++) {
        test_ps_emit(10);                       /* 1700: 1250 1300, stop */
    }

    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, 15);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 1700);

    TEST_ASSERT_EQ(perfmon_event_refresh(&event, PERFMON_SAMPLES_UNLIMITED),
                   0);

    for (unsigned int i = 0; i < 10; i++) {
        test_ps_emit(10);                       /* 1800: 1750 1800 */
    }

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 1800);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, 17);
    memset(&d, 0, sizeof(d));
    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U,
                  "test_ps_emit", &d);
    TEST_ASSERT_EQ(d.nr_samples, 4);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * A period longer than a preset can reach (2^width at narrow widths)
 * goes through overflows that take no sample.
 */
TEST_DEFINE(perfmon_sample, period_beyond_counter_width)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    const uint64_t period = 5003, want = 26000;
    uint64_t total = 0, nr, lost;

    test_ps_pin(c);
    lost = pmu_soft_nr_lost(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, period, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    while (total < want) {
        uint64_t n = MIN(test_ps_max_emit(), want - total);

        test_ps_emit(n);
        total += n;
    }

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), want);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, want / period);
    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT,
                  thread_id(thread_self()), "test_ps_emit", &d);
    TEST_ASSERT_EQ(d.nr_samples, want / period);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * The periods of the sample records in a CPU's ring, in order (every
 * record a sample with the cookie, thread and emitting function wanted).
 * Return how many, at most max.
 */
static unsigned int
test_ps_periods(struct perfmon_session *session, unsigned int cpu,
                uint64_t want_cookie, uint32_t want_tid, uint64_t *periods,
                unsigned int max)
{
    unsigned int n = 0;
    size_t size;

    while (perfmon_session_read(session, cpu, &test_ps_buf,
                                sizeof(test_ps_buf), &size) == 0) {
        TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
        TEST_ASSERT_EQ(test_ps_buf.sample.cookie, want_cookie);
        TEST_ASSERT_EQ(test_ps_buf.sample.tid, want_tid);
        TEST_ASSERT(test_ps_in(test_ps_buf.sample.ip, "test_ps_emit"));
        TEST_ASSERT_LT(n, max);
        periods[n++] = test_ps_buf.sample.period;
    }

    return n;
}

/* A thread that emits in steps, each when the test says. */
struct test_ps_stepper {
    struct thread *thread;
    volatile unsigned int go;       /* steps the test allowed */
    volatile unsigned int done;     /* steps finished */
};

static void
test_ps_stepper_main(void *arg)
{
    struct test_ps_stepper *s = arg;
    static const uint64_t steps[][2] = { { 50, 0 }, { 50, 60 } };

    for (unsigned int i = 0; i < ARRAY_SIZE(steps); i++) {
        /* Asleep, it is off the CPU: its period waits in the thread. */
        while (s->go <= i) {
            thread_delay(1);
        }

        for (unsigned int j = 0; j < ARRAY_SIZE(steps[i]); j++) {
            if (steps[i][j] != 0) {
                test_ps_emit(steps[i][j]);
            }
        }

        s->done = i + 1;
    }
}

/*
 * A sample record says the period that it ends: after set_period the
 * current period runs to its end with its own length, and the samples
 * after it have the new one. Period 100, 50 units, then period 30 and
 * 110 units: samples at 100 (a period of 100), 130 and 160 (of 30). For
 * a CPU event, and for a thread event whose thread was off the CPU when
 * the period changed (its remainder of the old period was kept in the
 * thread, and armed when it came back).
 */
TEST_DEFINE(perfmon_sample, set_period_records_the_period_that_ended)
{
    static const uint64_t want[] = { 100, 30, 30 };
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct test_ps_stepper s = { .go = 0 };
    struct perfmon_event event;
    uint64_t periods[8], nr;
    unsigned int n;
    uint32_t tid;

    /* A CPU event. */
    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 100, 0);
    test_detach_on_failure(&event);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    test_ps_emit(50);
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 30), 0);
    test_ps_emit(50);
    test_ps_emit(60);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 160);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, ARRAY_SIZE(want));
    n = test_ps_periods(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT,
                        thread_id(thread_self()), periods,
                        ARRAY_SIZE(periods));
    TEST_ASSERT_EQ(n, ARRAY_SIZE(want));

    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT_EQ(periods[i], want[i]);
    }

    /* A thread event, its thread asleep when the period changes. */
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 100, 0);
    s.thread = test_thread_start("ps-stepper", 1ULL << c,
                                 test_ps_stepper_main, &s);
    tid = thread_id(s.thread);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, s.thread), 0);
    s.go = 1;

    while (s.done < 1) {
        thread_delay(1);
    }

    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 30), 0);
    s.go = 2;
    thread_join(s.thread);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 160);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, ARRAY_SIZE(want));
    n = test_ps_periods(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT,
                        tid, periods, ARRAY_SIZE(periods));
    TEST_ASSERT_EQ(n, ARRAY_SIZE(want));

    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT_EQ(periods[i], want[i]);
    }

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Call chains                                                         */
/* ------------------------------------------------------------------ */

static __attribute__((noinline)) void
test_ps_chain3(void)
{
    test_ps_emit(1);
    __asm__ volatile("" : : : "memory");
}

static __attribute__((noinline)) void
test_ps_chain2(void)
{
    test_ps_chain3();
    __asm__ volatile("" : : : "memory");
}

static __attribute__((noinline)) void
test_ps_chain1(void)
{
    test_ps_chain2();
    __asm__ volatile("" : : : "memory");
}

/*
 * A sample's call chain names the callers from the innermost out, up to
 * the event's depth.
 */
TEST_DEFINE(perfmon_sample, call_chain_frames)
{
    static const char *const want[] = {
        "test_ps_chain3", "test_ps_chain2", "test_ps_chain1",
        "test_fn_perfmon_sample_call_chain_frames",
    };
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    const struct perfmon_record_callchain *chain;
    struct perfmon_event event;
    size_t size;

    test_ps_pin(c);

    for (unsigned int depth = 2; depth <= 8; depth += 6) {
        test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 1, depth);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
        test_ps_chain1();
        TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);

        TEST_ASSERT_EQ(perfmon_session_read(session, c, &test_ps_buf,
                                             sizeof(test_ps_buf), &size), 0);
        TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
        TEST_ASSERT(test_ps_in(test_ps_buf.sample.ip, "test_ps_emit"));
        TEST_ASSERT_EQ(test_ps_buf.sample.fixed_size,
                       sizeof(test_ps_buf.sample));
        TEST_ASSERT_EQ(test_ps_buf.sample.ext_size, 8 + depth * 8);
        TEST_ASSERT_EQ(size, sizeof(test_ps_buf.sample) + 8 + depth * 8);
        chain = perfmon_record_sample_callchain(&test_ps_buf.sample, size);
        TEST_ASSERT(chain == (const void *)(&test_ps_buf.sample + 1));
        TEST_ASSERT_EQ(chain->chunk.type, PERFMON_CHUNK_CALLCHAIN);
        TEST_ASSERT_EQ(chain->chunk.size, 8 + depth * 8);
        TEST_ASSERT_EQ(chain->chunk.nr, depth);

        for (unsigned int i = 0; i < MIN(depth, ARRAY_SIZE(want)); i++) {
            if (!test_ps_in(chain->frames[i], want[i])) {
                test_fail_at(__FILE__, __LINE__, "frame %u at %lx, not in %s",
                             i, (unsigned long)chain->frames[i], want[i]);
            }
        }

        TEST_ASSERT_EQ(perfmon_session_read(session, c, &test_ps_buf,
                                            sizeof(test_ps_buf), &size),
                       EAGAIN);
    }

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

static __attribute__((noinline)) void
test_ps_recurse(unsigned int depth)
{
    if (depth == 0) {
        test_ps_emit(1);
    } else {
        test_ps_recurse(depth - 1);
    }

    __asm__ volatile("" : : : "memory");
}

/* The deepest chain an event may ask for fits a record: none is lost. */
TEST_DEFINE(perfmon_sample, deepest_call_chain_is_recorded)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    const struct perfmon_record_callchain *chain;
    struct perfmon_session_stats stats;
    struct perfmon_event event;
    size_t size;

    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 1, PERFMON_MAX_FRAMES);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    test_ps_recurse(PERFMON_MAX_FRAMES + 10);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);

    TEST_ASSERT_EQ(perfmon_session_read(session, c, &test_ps_buf,
                                        sizeof(test_ps_buf), &size), 0);
    TEST_ASSERT_EQ(size, PERFMON_SESSION_RECORD_MAX);
    chain = perfmon_record_sample_callchain(&test_ps_buf.sample, size);
    TEST_ASSERT(chain != NULL);
    TEST_ASSERT_EQ(chain->chunk.nr, PERFMON_MAX_FRAMES);

    for (unsigned int i = 0; i < PERFMON_MAX_FRAMES; i++) {
        TEST_ASSERT(test_ps_in(chain->frames[i], "test_ps_recurse"));
    }

    TEST_ASSERT_EQ(perfmon_session_stats(session, c, &stats), 0);
    TEST_ASSERT_EQ(stats.produced, 1);
    TEST_ASSERT_EQ(stats.dropped, 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* A sample of an event that asks for no call chain is its fixed part. */
TEST_DEFINE(perfmon_sample, sample_without_call_chain_has_no_chunk)
{
    unsigned int c = cpu_id();
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct perfmon_event event;
    size_t size;

    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 1, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    test_ps_chain1();
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);

    TEST_ASSERT_EQ(perfmon_session_read(session, c, &test_ps_buf,
                                        sizeof(test_ps_buf), &size), 0);
    TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
    TEST_ASSERT_EQ(size, 48);
    TEST_ASSERT_EQ(sizeof(test_ps_buf.sample), 48);
    TEST_ASSERT_EQ(test_ps_buf.sample.fixed_size, 48);
    TEST_ASSERT_EQ(test_ps_buf.sample.ext_size, 0);
    TEST_ASSERT(test_ps_in(test_ps_buf.sample.ip, "test_ps_emit"));
    TEST_ASSERT(perfmon_record_sample_callchain(&test_ps_buf.sample, size)
                == NULL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * What a later kernel may write: a field appended to the fixed part, a
 * chunk of a type this one does not know before the call chain, unused
 * bytes after the extension area. The reader finds the chain by the
 * sizes, and refuses framing that does not hold.
 */
TEST_DEFINE(perfmon_sample, reader_skips_what_it_does_not_know)
{
    /* Fixed part 56, chunk 0x7f of 16, call chain 2 of 3 frames, 8. */
    static const uint64_t later[] = {
        PERFMON_RECORD_SAMPLE | (112 << 16) | (1ULL << 32),
        56 | (48 << 16) | (7ULL << 32),
        42, 1000, 0xffffffff80101234, 1, 0xabcdef,
        0x7f | (16 << 16), 0x5555,
        PERFMON_CHUNK_CALLCHAIN | (32 << 16) | (2ULL << 32),
        0xffffffff80100010, 0xffffffff80100020, 0, 0,
    };
    union {
        struct perfmon_record_sample sample;
        uint64_t words[ARRAY_SIZE(later)];
    } rec;
    const struct perfmon_record_callchain *chain;

    memcpy(&rec, later, sizeof(later));
    TEST_ASSERT_EQ(rec.sample.header.size, sizeof(later));
    TEST_ASSERT_EQ(rec.sample.tid, 7);
    TEST_ASSERT_EQ(rec.sample.ip, 0xffffffff80101234);
    chain = perfmon_record_sample_callchain(&rec.sample, sizeof(later));
    TEST_ASSERT(chain == (const void *)&rec.words[9]);
    TEST_ASSERT_EQ(chain->chunk.nr, 2);
    TEST_ASSERT_EQ(chain->frames[0], 0xffffffff80100010);
    TEST_ASSERT_EQ(chain->frames[1], 0xffffffff80100020);
    TEST_ASSERT(perfmon_record_sample_chunk(&rec.sample, sizeof(later), 0x7f)
                == (const void *)&rec.words[7]);
    TEST_ASSERT(perfmon_record_sample_chunk(&rec.sample, sizeof(later), 9)
                == NULL);

    /* The extension area past the record read. */
    TEST_ASSERT(perfmon_record_sample_callchain(&rec.sample, 96) == NULL);

    /* A fixed part shorter than this kernel's. */
    rec.sample.fixed_size = 40;
    TEST_ASSERT(perfmon_record_sample_callchain(&rec.sample, sizeof(later))
                == NULL);
    rec.sample.fixed_size = 56;

    /* A chunk of size 0 (the walk would not advance) or beyond the area. */
    rec.words[7] = 0x7f;
    TEST_ASSERT(perfmon_record_sample_callchain(&rec.sample, sizeof(later))
                == NULL);
    rec.words[7] = 0x7f | (56 << 16);
    TEST_ASSERT(perfmon_record_sample_callchain(&rec.sample, sizeof(later))
                == NULL);
    rec.words[7] = 0x7f | (16 << 16);

    /* More frames announced than the chunk holds. */
    rec.words[9] = PERFMON_CHUNK_CALLCHAIN | (32 << 16) | (4ULL << 32);
    TEST_ASSERT(perfmon_record_sample_callchain(&rec.sample, sizeof(later))
                == NULL);
}

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
    volatile bool stop;
};

static void
test_ps_spinner_main(void *arg)
{
    struct test_ps_spinner *sp = arg;

    /* Bounded, so that the samples fit the ring: none is lost. */
    while (!sp->stop && sp->emitted < TEST_PS_SPIN_MAX) {
        pmu_soft_emit_channel(6, 1);
        sp->emitted++;
    }
}

/*
 * Period 1 on every CPU (the first 4: each sampling event takes a slot)
 * while a thread on each emits as fast as it can:
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
    uint64_t start, nr_throttle_records = 0;

    /* A sampling event takes a slot of its own: at most 4 CPUs' worth. */
    const unsigned int nr_cpus = MIN(cpu_count(), 4);

    for (unsigned int c = 0; c < nr_cpus; c++) {
        attr.cookie = 0xc0de0000 + PMU_SOFT_EV_EMIT + 6;
        TEST_ASSERT_EQ(perfmon_event_init(&events[c], PMU_SOFT_EV_EMIT + 6,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_set_sampling(&events[c], &attr), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[c], c), 0);
    }

    for (unsigned int c = 0; c < nr_cpus; c++) {
        spinners[c] = (struct test_ps_spinner){ .stop = false };
        spinners[c].thread = test_thread_start("ps-spin", 1ULL << c,
                                               test_ps_spinner_main,
                                               &spinners[c]);
    }

    /* The storm does not keep this thread from its ticks. */
    start = clock_get_time();

    for (unsigned int i = 0; i < 5; i++) {
        thread_delay(2);
    }

    TEST_ASSERT_LT(clock_get_time() - start, 10 + 100);

    for (unsigned int c = 0; c < nr_cpus; c++) {
        spinners[c].stop = true;
        thread_join(spinners[c].thread);
    }

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
    uint64_t nr;

    session = test_ps_session(PERFMON_SESSION_RING_MIN * 4);
    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 1, 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    for (unsigned int i = 0; i < 100; i++) {
        test_ps_emit(1);
    }

    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U,
                  "test_ps_emit", &d);
    TEST_ASSERT_LT(d.nr_samples, 100);
    TEST_ASSERT_EQ(d.nr_lost, 0);

    /* Room again: the next sample comes after one LOST record. */
    test_ps_emit(1);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT, ~0U,
                  "test_ps_emit", &d);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, 101);
    TEST_ASSERT_EQ(d.nr_samples + d.nr_lost, 101);
    TEST_ASSERT_GT(d.nr_lost, 0);
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
    uint64_t count, nr;
    size_t size;

    test_ps_pin(c);
    test_ps_init(&event, PMU_SOFT_EV_TICK, session, 1, 4);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    test_spin_ticks(5);
    thread_delay(5);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    count = perfmon_event_read(&event);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, count);
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
/* An event in no valid state                                          */
/* ------------------------------------------------------------------ */

/*
 * An event with the right magic but a state that is none of perfmon's
 * (its owner's memory overwritten) is refused by every call that takes
 * an event, sampling calls included, which leave its bytes as they were.
 * Only perfmon_event_init accepts it: it makes an event of any memory.
 */
TEST_DEFINE(perfmon_sample, event_in_no_valid_state_is_refused)
{
    struct perfmon_dev *soft = perfmon_get_dev(true);
    struct perfmon_session *session = test_ps_session(4096);
    struct perfmon_sample_attr attr = { .session = session, .period = 10 };
    struct thread *self = thread_self();
    unsigned int refs = self->refs;
    struct perfmon_event event, copy;
    struct perfmon_group group;
    struct perfmon_value value;
    unsigned long flags;
    uint64_t n;

    TEST_ASSERT(soft != NULL);
    test_detach_on_failure(&event);

    /* A sampling event, then a counting one. */
    for (unsigned int pass = 0; pass < 2; pass++) {
        TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_EMIT,
                                          PERFMON_EF_SW), 0);

        if (pass == 0) {
            TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
        }

        event.state = 77;
        memcpy(&copy, &event, sizeof(event));

        TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, NULL), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_event_set_period(&event, 5), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_event_refresh(&event, 3), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        n = 12345;
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), EINVAL);
        TEST_ASSERT_EQ(n, 12345);
        TEST_ASSERT_EQ(perfmon_event_attach(&event, self), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_id()), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_detach(&event), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_read(&event), 0);
        TEST_ASSERT_EQ(perfmon_event_get(&event, &n), EINVAL);
        TEST_ASSERT_EQ(n, 12345);
        TEST_ASSERT_EQ(perfmon_event_read_value(&event, &value), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_enable(&event), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_disable(&event), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_reset(&event), EINVAL);
        TEST_ASSERT(!perfmon_event_attached(&event));
        flags = cpu_intr_save();
        TEST_ASSERT(!perfmon_event_counting_here(&event));
        cpu_intr_restore(flags);
        TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &event), EINVAL);
        TEST_ASSERT_EQ(group.nr_events, 0);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(soft), 0);
        TEST_ASSERT_EQ(self->refs, refs);
    }

    /* The session was never taken. */
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}
