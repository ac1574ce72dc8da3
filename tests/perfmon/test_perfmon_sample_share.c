/*
 * Samplers sharing slots (suite perfmon_sample): sampling events of one
 * raw event that can never need its counter at once on one CPU share one
 * slot, so that one sampler per CPU (perf record all) or per thread takes
 * one counter whatever the number of CPUs or threads, and each sampler
 * still samples exactly (its own period, session records, CPU and
 * thread); samplers that may be live together on a CPU take slots apart.
 * Every emit is made with interrupts off, so each thread knows which of
 * its period ends fell on which CPU.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "sample_util.h"
#include "test_util.h"

#define TEST_SS_COOKIE      0x5a000000

/* An emitter: a thread that emits total units, then waits to be joined. */
struct test_ss_emitter {
    struct thread *thread;
    uint64_t total;
    uint64_t period;            /* its sampler's (thread samplers) */
    uint64_t seed;
    bool migrate;               /* hop over the CPUs as it emits */
    uint64_t want[CPU_MAX];     /* period ends that fell on each CPU */
    volatile bool go;
};

static void
test_ss_emitter_main(void *arg)
{
    struct test_ss_emitter *e = arg;
    uint64_t done = 0;

    while (!e->go) {
        thread_delay(1);
    }

    for (unsigned int i = 0; done < e->total; i++) {
        uint64_t n = 1 + test_rand(&e->seed) % test_ps_max_emit();
        unsigned long flags;

        n = MIN(n, e->total - done);

        if (e->migrate && i % 8 == 0) {
            thread_set_affinity(thread_self(),
                                1ULL << (test_rand(&e->seed) % cpu_count()));
        }

        flags = cpu_intr_save();

        if (e->period != 0) {
            e->want[cpu_id()] += (done + n) / e->period - done / e->period;
        }

        test_ps_emit(n);
        cpu_intr_restore(flags);
        done += n;

        if (i % 3 == 0) {
            thread_yield();
        }
    }
}

/*
 * Per cookie, the samples the rings of every CPU hold: each must carry
 * the tid tids[k] (unless ~0) and point into test_ps_emit; LOST records
 * fail the test (the rings are sized for every sample).
 */
static void
test_ss_drain(struct perfmon_session *session, unsigned int nr_cookies,
              const uint32_t *tids, uint64_t (*per_cpu)[CPU_MAX])
{
    size_t size;

    for (unsigned int c = 0; c < cpu_count(); c++) {
        while (perfmon_session_read(session, c, &test_ps_buf,
                                    sizeof(test_ps_buf), &size) == 0) {
            uint64_t k;

            TEST_ASSERT_EQ(test_ps_buf.header.cpu, c);
            TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
            k = test_ps_buf.sample.cookie - TEST_SS_COOKIE;
            TEST_ASSERT_LT(k, nr_cookies);

            if (tids[k] != ~0U) {
                TEST_ASSERT_EQ(test_ps_buf.sample.tid, tids[k]);
            }

            TEST_ASSERT(test_ps_in(test_ps_buf.sample.ip, "test_ps_emit"));
            per_cpu[k][c]++;
        }
    }
}

/*
 * Each test takes fewer samples per CPU than a CPU's budget for a tick
 * (perfmon.max_samples_per_tick, 1000): none is throttled if it starts a
 * budget window of its own, which a tick without samples ensures.
 */
static void
test_ss_fresh_window(void)
{
    thread_delay(2);
}

/* Undo of a failed test: detach every event of an array still attached. */
struct test_ss_array {
    struct perfmon_event *events;
    unsigned int nr;
};

static void
test_ss_detach_all(void *arg)
{
    const struct test_ss_array *a = arg;

    for (unsigned int k = 0; k < a->nr; k++) {
        perfmon_event_detach(&a->events[k]);
    }
}

static void
test_ss_init(struct perfmon_event *event, struct perfmon_session *session,
             uint64_t period, unsigned int k)
{
    struct perfmon_sample_attr attr = {
        .session = session,
        .period = period,
        .cookie = TEST_SS_COOKIE + k,
    };

    TEST_ASSERT_EQ(perfmon_event_init(event, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
}

/*
 * perf record all: a sampler on every CPU, each with its own period, one
 * emitter pinned to each CPU. All share one slot, so every CPU holds one
 * counter for them and the device keeps the others for counting: pinned
 * counting events take every other counter at once. Each sampler counts
 * its CPU's emits exactly, takes floor(count / period) samples, and its
 * records are all on its CPU (one cookie per CPU).
 */
TEST_DEFINE(perfmon_sample, cpu_samplers_share_one_slot)
{
    static struct perfmon_event events[CPU_MAX];
    static struct test_ss_emitter emitters[CPU_MAX];
    static uint64_t got[CPU_MAX][CPU_MAX];
    static uint32_t tids[CPU_MAX];
    struct perfmon_event others[PMU_SOFT_NR_COUNTERS];
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    unsigned int n = cpu_count();
    struct test_ss_array all = { .events = events, .nr = n };

    TEST_ASSERT_EQ(test_undo_on_failure(test_ss_detach_all, &all), 0);

    for (unsigned int c = 0; c < n; c++) {
        test_ss_init(&events[c], session, 41 + c, c);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[c], c), 0);
        TEST_ASSERT_EQ(perfmon_event_slot_index(&events[c]),
                       perfmon_event_slot_index(&events[0]));
        tids[c] = ~0U;
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);

    for (unsigned int c = 0; c < n; c++) {
        TEST_ASSERT_EQ(perfmon_cpu_nr_used_slots(c), 1);
    }

    /* The other counters are free for counting, pinned even. */
    for (unsigned int i = 0; i + 1 < soft->nr_counters; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&others[i], PMU_SOFT_EV_EMIT + 1 + i,
                                          PERFMON_EF_SW | PERFMON_EF_PINNED),
                       0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&others[i], 0), 0);
    }

    for (unsigned int i = 0; i + 1 < soft->nr_counters; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&others[i]), 0);
    }

    for (unsigned int c = 0; c < n; c++) {
        emitters[c] = (struct test_ss_emitter){
            .total = 3000 + 37 * c,
            .seed = 11 + c,
        };
        emitters[c].thread = test_thread_start("ss-cpu", 1ULL << c,
                                               test_ss_emitter_main,
                                               &emitters[c]);
    }

    test_ss_fresh_window();

    for (unsigned int c = 0; c < n; c++) {
        emitters[c].go = true;
    }

    for (unsigned int c = 0; c < n; c++) {
        thread_join(emitters[c].thread);
    }

    for (unsigned int c = 0; c < n; c++) {
        uint64_t nr;

        TEST_ASSERT_EQ(perfmon_event_detach(&events[c]), 0);
        TEST_ASSERT_EQ(perfmon_event_read(&events[c]), emitters[c].total);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&events[c], &nr), 0);
        TEST_ASSERT_EQ(nr, emitters[c].total / (41 + c));
    }

    test_ss_drain(session, n, tids, got);

    for (unsigned int k = 0; k < n; k++) {
        for (unsigned int c = 0; c < n; c++) {
            TEST_ASSERT_EQ(got[k][c],
                           (c == k) ? emitters[k].total / (41 + k) : 0);
        }
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

#define TEST_SS_NR_THREADS  64

/*
 * 64 threads, each with a sampler of its own period on one raw event,
 * hopping over the CPUs and yielding as they emit: one slot serves them
 * all (a switch between two of them passes the counter from one sampler
 * to the other), and each takes exactly its floor(total / period)
 * samples, on the CPUs where its periods ended, all with its tid.
 */
TEST_DEFINE(perfmon_sample, thread_samplers_share_one_slot)
{
    static struct perfmon_event events[TEST_SS_NR_THREADS];
    static struct test_ss_emitter emitters[TEST_SS_NR_THREADS];
    static uint64_t got[TEST_SS_NR_THREADS][CPU_MAX];
    static uint32_t tids[TEST_SS_NR_THREADS];
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct test_ss_array all = { .events = events,
                                 .nr = TEST_SS_NR_THREADS };

    TEST_ASSERT_EQ(test_undo_on_failure(test_ss_detach_all, &all), 0);

    for (unsigned int k = 0; k < TEST_SS_NR_THREADS; k++) {
        emitters[k] = (struct test_ss_emitter){
            .total = 1500 + 13 * k,
            .period = 150 + k,
            .seed = 101 + k,
            .migrate = true,
        };
        emitters[k].thread = test_thread_start("ss-td", 0,
                                               test_ss_emitter_main,
                                               &emitters[k]);
        tids[k] = thread_id(emitters[k].thread);
        test_ss_init(&events[k], session, emitters[k].period, k);
        TEST_ASSERT_EQ(perfmon_event_attach(&events[k], emitters[k].thread),
                       0);
        TEST_ASSERT_EQ(perfmon_event_slot_index(&events[k]),
                       perfmon_event_slot_index(&events[0]));
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);

    test_ss_fresh_window();

    for (unsigned int k = 0; k < TEST_SS_NR_THREADS; k++) {
        emitters[k].go = true;
    }

    for (unsigned int k = 0; k < TEST_SS_NR_THREADS; k++) {
        uint64_t nr;

        /* Read before join: the event holds its own reference. */
        while (!thread_exited(emitters[k].thread)) {
            thread_delay(1);
        }

        TEST_ASSERT_EQ(perfmon_event_read(&events[k]), emitters[k].total);
        TEST_ASSERT_EQ(perfmon_event_detach(&events[k]), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&events[k], &nr), 0);
        TEST_ASSERT_EQ(nr, emitters[k].total / emitters[k].period);
        thread_join(emitters[k].thread);
    }

    test_ss_drain(session, TEST_SS_NR_THREADS, tids, got);

    for (unsigned int k = 0; k < TEST_SS_NR_THREADS; k++) {
        for (unsigned int c = 0; c < cpu_count(); c++) {
            TEST_ASSERT_EQ(got[k][c], emitters[k].want[c]);
        }
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * Samplers that could be live on one CPU at once take slots apart: a CPU
 * sampler and a thread sampler of one raw event, two samplers of one
 * thread, two samplers of one CPU. Each samples exactly: on the last CPU,
 * a thread with two samplers emits a, a thread without any emits b; the
 * CPU's samplers count a + b, the thread's a.
 */
TEST_DEFINE(perfmon_sample, samplers_live_together_take_slots_apart)
{
    static const uint64_t periods[4] = { 23, 29, 31, 37 };
    struct perfmon_event events[4];
    struct test_ss_emitter sampled, plain;
    uint64_t got[4][CPU_MAX] = { { 0 } };
    uint32_t tids[4];
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    unsigned int c = cpu_count() - 1;
    uint64_t want[4];

    sampled = (struct test_ss_emitter){ .total = 4000, .seed = 3 };
    plain = (struct test_ss_emitter){ .total = 2500, .seed = 4 };
    sampled.thread = test_thread_start("ss-sampled", 1ULL << c,
                                       test_ss_emitter_main, &sampled);
    plain.thread = test_thread_start("ss-plain", 1ULL << c,
                                     test_ss_emitter_main, &plain);

    /* 0, 1: CPU samplers of c; 2, 3: samplers of the sampled thread. */
    for (unsigned int k = 0; k < 4; k++) {
        test_ss_init(&events[k], session, periods[k], k);

        if (k < 2) {
            TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[k], c), 0);
            tids[k] = ~0U;
        } else {
            TEST_ASSERT_EQ(perfmon_event_attach(&events[k], sampled.thread),
                           0);
            tids[k] = thread_id(sampled.thread);
        }

        test_detach_on_failure(&events[k]);

        for (unsigned int j = 0; j < k; j++) {
            TEST_ASSERT_NE(perfmon_event_slot_index(&events[k]),
                           perfmon_event_slot_index(&events[j]));
        }
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 4);
    test_ss_fresh_window();
    sampled.go = true;
    plain.go = true;

    while (!thread_exited(sampled.thread)) {
        thread_delay(1);
    }

    thread_join(plain.thread);

    for (unsigned int k = 0; k < 4; k++) {
        uint64_t count = (k < 2) ? sampled.total + plain.total
                                 : sampled.total;
        uint64_t nr;

        TEST_ASSERT_EQ(perfmon_event_read(&events[k]), count);
        TEST_ASSERT_EQ(perfmon_event_detach(&events[k]), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&events[k], &nr), 0);
        want[k] = count / periods[k];
        TEST_ASSERT_EQ(nr, want[k]);
    }

    thread_join(sampled.thread);
    test_ss_drain(session, 4, tids, got);

    for (unsigned int k = 0; k < 4; k++) {
        for (unsigned int i = 0; i < cpu_count(); i++) {
            TEST_ASSERT_EQ(got[k][i], (i == c) ? want[k] : 0);
        }
    }

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}
