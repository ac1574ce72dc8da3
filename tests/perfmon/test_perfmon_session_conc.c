/*
 * perfmon sessions under concurrency and waiting (suite perfmon_session,
 * with test_perfmon_session.c, whose header states the method): producers
 * on every other CPU filling and overflowing their rings while a consumer
 * drains them, and waits that return at the watermark or time out.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon_session.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "session_util.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Concurrent producers and consumer                                   */
/* ------------------------------------------------------------------ */

#define TEST_SS_CONC_RING       512
#define TEST_SS_CONC_BURST      100     /* before the consumer starts */
#define TEST_SS_CONC_RECORDS    6000    /* per producer */
#define TEST_SS_CONC_BATCH      4       /* records per interrupts-off run */

struct test_ss_producer {
    struct perfmon_session *session;
    struct thread *thread;
    volatile bool *go;
    const struct test_ss_stream *stream;   /* the consumer's view */
    volatile bool burst_done;
    volatile bool done;
    uint64_t nr_fitted;
};

static size_t
test_ss_conc_size(uint64_t seq)
{
    return TEST_SS_REC + 8 * (seq % 7);
}

static void
test_ss_producer_main(void *arg)
{
    struct test_ss_producer *p = arg;
    uint64_t seq = 0, rng = 0x9e37 + cpu_id();

    /* A burst the ring cannot hold: some records are surely dropped. */
    for (; seq < TEST_SS_CONC_BURST; seq++) {
        p->nr_fitted += test_ss_produce_n(p->session, seq, 1,
                                          test_ss_conc_size(seq));
    }

    p->burst_done = true;

    while (!*p->go) {
        cpu_pause();
    }

    while (seq < TEST_SS_CONC_RECORDS) {
        unsigned long flags = cpu_intr_save();

        for (unsigned int i = 0; (i < TEST_SS_CONC_BATCH)
                                 && (seq < TEST_SS_CONC_RECORDS); i++) {
            p->nr_fitted += test_ss_produce(p->session, seq,
                                            test_ss_conc_size(seq));
            seq++;
        }

        cpu_intr_restore(flags);

        /*
         * Now and then let the consumer come within a random distance
         * (bounded wait: after drops it cannot see the last records), so
         * the ring goes from full to not full many times.
         */
        if ((test_rand(&rng) & 3) == 0) {
            uint64_t behind = test_rand(&rng) % 48;

            for (unsigned int i = 0; (i < 20000)
                                     && (READ_ONCE(p->stream->next_seq)
                                         + behind < seq); i++) {
                cpu_pause();
            }
        }
    }

    p->done = true;
}

/*
 * Producers on CPUs 1 to n-1, the consumer on CPU 0 draining their rings
 * as they fill: no record torn or out of order, every gap announced by
 * the LOST record before it. Once the producers are done and the rings
 * drained, one more record on each CPU reports the last drops: then
 * received + lost == produced, exactly, per CPU and in total.
 */
TEST_DEFINE(perfmon_session, concurrent_consumer_sees_every_record)
{
    static struct test_ss_producer producers[CPU_MAX];
    static struct test_ss_stream streams[CPU_MAX];
    struct perfmon_session *session = test_ss_create(TEST_SS_CONC_RING);
    unsigned int n = cpu_count();
    volatile bool go = false;
    uint64_t received = 0, lost = 0, nr_lost_records = 0;
    bool all_done;

    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        producers[cpu] = (struct test_ss_producer){ .session = session,
                                                    .go = &go,
                                                    .stream = &streams[cpu] };
        streams[cpu] = (struct test_ss_stream){ 0 };
        producers[cpu].thread = test_thread_start("ps-producer", 1ULL << cpu,
                                                  test_ss_producer_main,
                                                  &producers[cpu]);
    }

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        while (!producers[cpu].burst_done) {
            thread_delay(1);
        }
    }

    go = true;

    do {
        all_done = true;

        for (unsigned int cpu = 1; cpu < n; cpu++) {
            all_done = all_done && producers[cpu].done;
        }

        for (unsigned int cpu = 1; cpu < n; cpu++) {
            test_ss_drain(session, cpu, &streams[cpu]);
        }
    } while (!all_done);

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        thread_join(producers[cpu].thread);
    }

    /* Drained: one more record on each CPU fits and reports what is left. */
    for (unsigned int cpu = 1; cpu < n; cpu++) {
        thread_set_affinity(thread_self(), 1ULL << cpu);
        TEST_ASSERT_EQ(test_ss_produce_n(session, TEST_SS_CONC_RECORDS, 1,
                                         TEST_SS_REC), 1);
    }

    thread_set_affinity(thread_self(), 1ULL << 0);

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        struct test_ss_stream *s = &streams[cpu];

        test_ss_drain(session, cpu, s);
        TEST_ASSERT_EQ(s->next_seq, TEST_SS_CONC_RECORDS + 1);
        TEST_ASSERT_EQ(s->received + s->lost, TEST_SS_CONC_RECORDS + 1);
        TEST_ASSERT_EQ(s->received, producers[cpu].nr_fitted + 1);
        TEST_ASSERT_GE(s->lost, TEST_SS_CONC_BURST
                                - TEST_SS_CONC_RING / TEST_SS_REC);
        test_ss_expect_stats(session, cpu, TEST_SS_CONC_RECORDS + 1,
                             s->received, s->lost, 0, s->nr_lost_records);
        received += s->received;
        lost += s->lost;
        nr_lost_records += s->nr_lost_records;
    }

    TEST_ASSERT_EQ(received + lost, (n - 1) * (TEST_SS_CONC_RECORDS + 1));
    test_ss_expect_stats(session, PERFMON_SESSION_ALL_CPUS,
                         (n - 1) * (TEST_SS_CONC_RECORDS + 1), received,
                         lost, 0, nr_lost_records);
    test_diag("%llu records read, %llu lost in %llu LOST records",
              (unsigned long long)received, (unsigned long long)lost,
              (unsigned long long)nr_lost_records);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

TEST_DEFINE(perfmon_session, wait_times_out)
{
    struct perfmon_session *session = test_ss_create(4096);
    uint64_t t0;

    t0 = clock_get_time();
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);
    t0 = clock_get_time();
    TEST_ASSERT_EQ(perfmon_session_wait(session, 5), ETIMEDOUT);
    TEST_ASSERT_GE(clock_get_time() - t0, 5);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* Watermarks checked without waiting: records, then bytes. */
TEST_DEFINE(perfmon_session, watermark_counts_records_and_bytes)
{
    struct perfmon_session *session = test_ss_create(4096);
    struct test_ss_stream stream = { 0 };
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    /* Default: any record. */
    TEST_ASSERT_EQ(test_ss_produce_n(session, 0, 1, TEST_SS_REC), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);
    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);

    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 3, 0), 0);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 1, 2, TEST_SS_REC), 2);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 3, 1, TEST_SS_REC), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);
    TEST_ASSERT_EQ(test_ss_read_one(session, cpu, &stream), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);

    /* 2 records of 16 bytes held; 64 bytes wanted. */
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 0, 64), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 4, 1, 32), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);

    /* Either criterion wakes. */
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 3,
                   PERFMON_SESSION_WM_BYTES_MAX(4096)), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4,
                   PERFMON_SESSION_WM_BYTES_MAX(4096)), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);

    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 3);
    TEST_ASSERT_EQ(stream.next_seq, 5);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

struct test_ss_waker {
    struct perfmon_session *session;
    volatile unsigned int nr_committed;
};

/* Three records, a pause, the fourth that reaches the watermark. */
static void
test_ss_waker_main(void *arg)
{
    struct test_ss_waker *w = arg;

    thread_delay(2);

    for (uint64_t seq = 0; seq < 3; seq++) {
        TEST_ASSERT_EQ(test_ss_produce_n(w->session, seq, 1, TEST_SS_REC),
                       1);
        w->nr_committed++;
    }

    thread_delay(3);
    TEST_ASSERT_EQ(test_ss_produce_n(w->session, 3, 1, TEST_SS_REC), 1);
    w->nr_committed++;
}

/*
 * A waiter on CPU 0, a producer on the last CPU (the same one with one
 * CPU): wait returns once, and only once, 4 records are there.
 */
TEST_DEFINE(perfmon_session, wait_returns_at_watermark)
{
    struct perfmon_session *session = test_ss_create(4096);
    struct test_ss_waker w = { .session = session };
    unsigned int cpu = cpu_count() - 1;
    struct test_ss_stream stream = { 0 };
    struct thread *thread;
    uint64_t t0;

    thread_set_affinity(thread_self(), 1ULL << 0);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4, 0), 0);
    t0 = clock_get_time();
    thread = test_thread_start("ps-waker", 1ULL << cpu, test_ss_waker_main,
                               &w);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 1000), 0);
    TEST_ASSERT_LT(clock_get_time() - t0, 1000);

    /* Never early: the 4 records are readable now. */
    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 4);
    TEST_ASSERT_EQ(stream.next_seq, 4);
    thread_join(thread);
    TEST_ASSERT_EQ(w.nr_committed, 4);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}
