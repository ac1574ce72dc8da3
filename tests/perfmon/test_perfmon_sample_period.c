/*
 * perfmon sampling, periods and call chains (suite perfmon_sample, with
 * test_perfmon_sample.c, whose header states the method, and
 * test_perfmon_sample_throttle.c): a period changed or refreshed where the
 * current one ends, periods beyond the counter's width, the period each
 * record says ended, and the call chains of samples and their reader.
 */
#include <stdbool.h>
#include <stdint.h>

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

/* ------------------------------------------------------------------ */
/* Periods and refresh                                                 */
/* ------------------------------------------------------------------ */

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
