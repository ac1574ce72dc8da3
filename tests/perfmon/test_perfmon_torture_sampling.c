/*
 * perfmon torture, sampling (suite perfmon_torture, with
 * test_perfmon_torture.c): sessions, sampling events and target threads
 * come and go on every CPU, and every sample is accounted for.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
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

#include "test_util.h"
#include "torture_util.h"

/*
 * Sampling torture: on every CPU a worker creates and destroys sessions
 * (small rings, so records are lost), attaches sampling events with
 * random periods and call chain depths to random CPUs and to target
 * threads that emit, migrate and exit, reads them, drains its session
 * late or not at all, and detaches. Each event's samples are exact: with
 * C counted, floor(C / P) periods ended, each a sample or a throttled
 * period. When a session is destroyed, its records account for every
 * sample: received + reported lost == produced, and samples plus
 * throttled periods == periods ended. At the end nothing is left: slots,
 * sessions (destroy succeeds), thread references.
 */

#define TORTURE_S_EVENTS        2
#define TORTURE_S_CHANNEL       4       /* targets emit on 4 and 5 */

static const unsigned int torture_s_ids[] = {
    PMU_SOFT_EV_EMIT + TORTURE_S_CHANNEL,
    PMU_SOFT_EV_EMIT + TORTURE_S_CHANNEL + 1,
    PMU_SOFT_EV_CSWITCH, PMU_SOFT_EV_TICK,
};

struct torture_s_target {
    struct thread *thread;
    uint64_t seed;
    unsigned int lifetime;
    volatile bool stop;
};

struct torture_s_worker {
    struct thread *thread;
    unsigned int cpu;
    uint64_t seed;
    uint64_t ops;
    struct perfmon_session *session;
    struct perfmon_event events[TORTURE_S_EVENTS];
    uint64_t ended;         /* periods ended, over the session's events */
    uint64_t produced;      /* samples the events produced */
    uint64_t received;
    uint64_t lost;
    uint64_t throttled;
    uint64_t nr_throttle_records;
    uint64_t nr_sessions, nr_attach, nr_refused, nr_samples;
};

static struct torture_s_target torture_s_targets[TORTURE_MAX_TARGETS];
static unsigned int torture_s_nr_targets;

static void
torture_s_target_main(void *arg)
{
    struct torture_s_target *t = arg;

    for (unsigned int i = 1; i <= t->lifetime && !t->stop; i++) {
        uint64_t r = test_rand(&t->seed);
        uint64_t n = 1 + (r >> 8) % TORTURE_BURST_MAX;

        test_emit_paced(TORTURE_S_CHANNEL + r % 2, n);

        if (i % 10 == 0) {
            thread_delay(1);
        } else if (r % 3 == 0) {
            thread_yield();
        }

        if (r % 13 == 0) {
            torture_migrate(r);
        }
    }
}

/* Read up to max records of the worker's session (all CPUs). */
static void
torture_s_drain(struct torture_s_worker *w, uint64_t max)
{
    static union {
        struct perfmon_record_header header;
        struct perfmon_record_sample sample;
        struct perfmon_record_lost lost;
        struct perfmon_record_throttle throttle;
        uint8_t bytes[PERFMON_SESSION_RECORD_MAX];
    } bufs[CPU_MAX];
    __typeof__(&bufs[0]) buf = &bufs[w->cpu];
    uint64_t n = 0;
    size_t size;

    for (unsigned int c = 0; c < cpu_count() && n < max; c++) {
        while (n < max && perfmon_session_read(w->session, c, buf,
                                               sizeof(*buf), &size) == 0) {
            TEST_ASSERT_EQ(buf->header.cpu, c);
            n++;

            switch (buf->header.type) {
            case PERFMON_RECORD_SAMPLE:
                TEST_ASSERT_EQ(buf->sample.cookie >> 8, w->cpu);
                /* A chain of the depth asked (0 to 8): room for it. */
                TEST_ASSERT_LE(size, sizeof(buf->sample)
                                     + sizeof(struct perfmon_record_callchain)
                                     + 8 * sizeof(uint64_t));
                TEST_ASSERT(buf->sample.ext_size == 0
                            || perfmon_record_sample_callchain(&buf->sample,
                                                               size)
                               != NULL);
                w->received++;
                break;
            case PERFMON_RECORD_LOST:
                w->lost += buf->lost.nr_lost;
                break;
            case PERFMON_RECORD_THROTTLE:
                w->throttled += buf->throttle.nr_periods;
                w->nr_throttle_records++;
                break;
            default:
                TEST_ASSERT(false);
            }
        }
    }
}

/* A session whose events are all detached: its records add up. */
static void
torture_s_end_session(struct torture_s_worker *w)
{
    struct perfmon_session_stats stats;

    /* Drops after the last record that fitted have no LOST record. */
    torture_s_drain(w, UINT64_MAX);
    TEST_ASSERT_EQ(perfmon_session_stats(w->session, PERFMON_SESSION_ALL_CPUS,
                                         &stats), 0);
    TEST_ASSERT_EQ(stats.lost, w->lost);
    TEST_ASSERT_EQ(stats.read, w->received + w->nr_throttle_records);
    TEST_ASSERT_EQ(w->received + w->lost + stats.dropped, w->produced);
    TEST_ASSERT_EQ(w->produced + w->throttled, w->ended);
    TEST_ASSERT_EQ(perfmon_session_destroy(w->session), 0);
    w->nr_samples += w->produced;
    w->session = NULL;
    w->ended = w->produced = w->received = w->lost = w->throttled = 0;
    w->nr_throttle_records = 0;
}

static void
torture_s_detach(struct torture_s_worker *w, unsigned int k)
{
    struct perfmon_event *event = &w->events[k];
    uint64_t count, nr;

    TEST_ASSERT_EQ(perfmon_event_detach(event), 0);
    TEST_ASSERT_EQ(perfmon_event_get(event, &count), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);
    TEST_ASSERT_LE(nr, count / event->period);
    w->ended += count / event->period;
    w->produced += nr;
}

static void
torture_s_op(struct torture_s_worker *w)
{
    uint64_t r = test_rand(&w->seed);
    unsigned int k = r % TORTURE_S_EVENTS;
    struct perfmon_event *event = &w->events[k];
    int error;

    if (w->session == NULL) {
        size_t size = PERFMON_SESSION_RING_MIN << ((r >> 8) % 6);

        TEST_ASSERT_EQ(perfmon_session_create(&w->session, size), 0);
        w->nr_sessions++;
        return;
    }

    if (!perfmon_event_attached(event)) {
        unsigned int id = torture_s_ids[(r >> 8) % ARRAY_SIZE(torture_s_ids)];
        bool fast = id == PMU_SOFT_EV_CSWITCH || id == PMU_SOFT_EV_TICK;
        struct perfmon_sample_attr attr = {
            .session = w->session,
            .period = fast ? 1 + (r >> 12) % 4 : 200 + (r >> 12) % 1800,
            .cookie = ((uint64_t)w->cpu << 8) | k,
            .nr_frames = (r >> 24) % 9,
        };

        if ((r >> 30) % 7 == 0) {
            bool busy = perfmon_event_attached(&w->events[1 - k]);

            /* Only a session no event uses may go. */
            if (busy) {
                TEST_ASSERT_EQ(perfmon_session_destroy(w->session), EBUSY);
            } else {
                torture_s_end_session(w);
            }

            return;
        }

        TEST_ASSERT_EQ(perfmon_event_init(event, id, PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);

        if ((r >> 16) % 3 == 0) {
            error = perfmon_event_attach_cpu(event, (r >> 20) % cpu_count());
        } else {
            struct torture_s_target *t;

            t = &torture_s_targets[(r >> 20) % torture_s_nr_targets];
            error = perfmon_event_attach(event, t->thread);

            if (error == EINVAL) {
                TEST_ASSERT(READ_ONCE(t->thread->exited));
            }
        }

        /*
         * Samplers share a slot only where they cannot be live together
         * (a CPU's and a thread's, two of one thread or CPU take slots
         * apart): 32 slots may run out.
         */
        if (error != 0) {
            TEST_ASSERT(error == EINVAL || error == EAGAIN);
            w->nr_refused++;
            return;
        }

        w->nr_attach++;
    } else if ((r >> 8) % 4 != 0) {
        uint64_t count, nr;

        TEST_ASSERT_EQ(perfmon_event_get(event, &count), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);

        /* A consumer that lags: it reads a little, now and then. */
        if ((r >> 12) % 5 == 0) {
            torture_s_drain(w, (r >> 16) % 8);
        }
    } else {
        torture_s_detach(w, k);
    }

    if (r % 17 == 0) {
        thread_yield();
    } else if (r % 97 == 0) {
        thread_delay(1);
    }
}

static void
torture_s_worker_main(void *arg)
{
    struct torture_s_worker *w = arg;

    for (uint64_t i = 0; i < w->ops; i++) {
        torture_s_op(w);
    }

    for (unsigned int k = 0; k < TORTURE_S_EVENTS; k++) {
        if (perfmon_event_attached(&w->events[k])) {
            torture_s_detach(w, k);
        }
    }

    if (w->session != NULL) {
        torture_s_end_session(w);
    }
}

TEST_DEFINE(perfmon_torture, sampling_accounts_for_every_sample)
{
    static struct torture_s_worker workers[CPU_MAX];
    unsigned int alive = thread_nr_alive();
    struct perfmon_dev *soft = perfmon_dev_get(true);
    uint64_t ops = MAX(TORTURE_OPS_TOTAL / cpu_count(), TORTURE_OPS_MIN);
    uint64_t seed = 0x5a3e;
    uint64_t totals[4] = { 0 };

    arg_get_u64("torture.ops", &ops);
    arg_get_u64("torture.seed", &seed);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    torture_s_nr_targets = cpu_count() * TORTURE_TARGETS_PER_CPU;

    for (unsigned int i = 0; i < torture_s_nr_targets; i++) {
        struct torture_s_target *t = &torture_s_targets[i];

        t->seed = seed * 1000 + i + 1;
        t->lifetime = 50 + test_rand(&t->seed) % (20 * ops / 10 + 1);
        t->stop = false;
        t->thread = test_thread_start("torture-s-target", 0,
                                      torture_s_target_main, t);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        struct torture_s_worker *w = &workers[c];

        *w = (struct torture_s_worker){
            .cpu = c, .seed = seed + 7 * c + 1, .ops = ops,
        };
        w->thread = test_thread_start("torture-s-worker", 1ULL << c,
                                      torture_s_worker_main, w);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        thread_join(workers[c].thread);
        totals[0] += workers[c].nr_sessions;
        totals[1] += workers[c].nr_attach;
        totals[2] += workers[c].nr_refused;
        totals[3] += workers[c].nr_samples;
    }

    for (unsigned int i = 0; i < torture_s_nr_targets; i++) {
        torture_s_targets[i].stop = true;
        thread_join(torture_s_targets[i].thread);
    }

    test_diag("torture: %llu sessions, %llu attaches, %llu refused, "
              "%llu samples", (unsigned long long)totals[0],
              (unsigned long long)totals[1], (unsigned long long)totals[2],
              (unsigned long long)totals[3]);
    TEST_ASSERT_GT(totals[1], 0);
    TEST_ASSERT_GT(totals[3], 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_cpu_nr_used_slots(c), 0);
    }

    TEST_ASSERT_EQ(thread_nr_alive(), alive);
}
