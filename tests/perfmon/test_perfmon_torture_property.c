/*
 * perfmon torture, the sampling property (suite perfmon_torture, with
 * test_perfmon_torture.c and test_perfmon_torture_sampling.c): after
 * every operation the fuzzer makes, each sampling event's records account
 * for its count.
 *
 * On every CPU a worker attaches sampling events (fixed periods, or a
 * frequency) to random CPUs and to target threads that emit, migrate and
 * exit, and changes them (set_period, refresh, the enable and disable a
 * sampler refuses) while the targets and its own bursts make them sample,
 * hand their counters off and get throttled. All events write into one
 * session whose rings are large enough that nothing is lost (checked).
 * After each operation the worker drains every ring (records go to their
 * event by cookie), then checks each of its events:
 *
 *   - every sample's period is one its event had (fixed periods), its CPU
 *     the event's CPU or its thread the event's target;
 *   - the samples' periods plus its THROTTLE records' events never exceed
 *     its count (records are written after their events are counted);
 *   - at detach, nothing is left in flight but one period: the count
 *     minus those sums is below the longest period that can be in flight
 *     (that of the latest sample read, or one set after it; an
 *     event whose refresh budget ran out, or in frequency mode, only has
 *     the lower bound: its counting goes on without periods), and its
 *     samples (perfmon_event_get_samples) are exactly those read;
 *   - no record of an event arrives after its detach returned.
 *
 * Reset is left out on purpose: it zeroes a sampler's count in the middle
 * of its period, so the count no longer holds the events its periods
 * cover (its count semantics are tested by the perfmon_sample suite).
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
#include <kern/spinlock.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"
#include "torture_util.h"

#define TP_EVENTS           2       /* per worker */
#define TP_CHANNEL          4       /* targets and bursts emit on 4 and 5 */
#define TP_PERIODS_MAX      8       /* periods one attach may have */
#define TP_RING_SIZE        PERFMON_SESSION_RING_MAX

/* A worker's event, and what the records read so far say of it. */
struct tp_event {
    struct perfmon_event event;
    uint64_t cookie;            /* this attach's: worker, k, generation */
    unsigned int cpu;           /* a CPU event's, else ~0U */
    uint32_t tid;               /* a thread event's target, else 0 */
    bool freq;
    bool budgeted;              /* a refresh budget ran out, or may have */
    uint64_t periods[TP_PERIODS_MAX];   /* in the order they were set */
    unsigned int nr_periods;
    unsigned int last_set;      /* the latest that the samples read had */
    uint64_t period_sum;        /* of its samples read */
    uint64_t throttled_events;  /* of its THROTTLE records read */
    uint64_t nr_samples;
};

struct tp_target {
    struct thread *thread;
    uint64_t seed;
    unsigned int lifetime;
    volatile bool stop;
};

struct tp_worker {
    struct thread *thread;
    unsigned int cpu;
    uint64_t seed;
    uint64_t ops;
    uint32_t generation;
    struct tp_event events[TP_EVENTS];
    uint64_t nr_attach, nr_refused, nr_samples, nr_throttled, nr_changes;
};

static struct tp_target tp_targets[TORTURE_MAX_TARGETS];
static unsigned int tp_nr_targets;
static struct tp_worker tp_workers[CPU_MAX];
static struct perfmon_session *tp_session;

/* Serializes the rings' reads and the events' sums they update. */
static struct spinlock tp_drain_lock = SPINLOCK_INITIALIZER;

static void
tp_target_main(void *arg)
{
    struct tp_target *t = arg;

    for (unsigned int i = 1; i <= t->lifetime && !t->stop; i++) {
        uint64_t r = test_rand(&t->seed);

        test_emit_paced(TP_CHANNEL + r % 2, 1 + (r >> 8) % TORTURE_BURST_MAX);

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

static uint64_t
tp_cookie(unsigned int cpu, unsigned int k, uint32_t generation)
{
    return ((uint64_t)cpu << 40) | ((uint64_t)k << 32) | generation;
}

/*
 * The event a record's cookie names, which must be attached or being
 * checked at its detach: else (an old generation: a record written after
 * its event's detach returned) a failure, and NULL.
 */
static struct tp_event *
tp_event_of(uint64_t cookie)
{
    unsigned int w = cookie >> 40, k = (cookie >> 32) & 0xff;

    if (w >= cpu_count() || k >= TP_EVENTS
        || tp_workers[w].events[k].cookie != cookie) {
        test_fail_at(__FILE__, __LINE__, "a record of cookie %llx, whose "
                     "event is not attached", (unsigned long long)cookie);
        return NULL;
    }

    return &tp_workers[w].events[k];
}

/*
 * Note a sample's period: one the event had (the periods of one attach
 * are distinct, so it names the one). The drain reads the CPUs' rings one
 * after the other, not in time order: last_set is the latest of them.
 * Return false when the event never had it.
 */
static bool
tp_note_period(struct tp_event *e, uint64_t period)
{
    for (unsigned int i = 0; i < e->nr_periods; i++) {
        if (e->periods[i] == period) {
            e->last_set = MAX(e->last_set, i);
            return true;
        }
    }

    return false;
}

static bool
tp_had_period(const struct tp_event *e, uint64_t period)
{
    for (unsigned int i = 0; i < e->nr_periods; i++) {
        if (e->periods[i] == period) {
            return true;
        }
    }

    return false;
}

/*
 * The longest period that can be in flight: the one that ended in the
 * latest sample read, or one set after it, whichever took effect at that
 * sample's end.
 */
static uint64_t
tp_inflight_max(const struct tp_event *e)
{
    uint64_t max = 0;

    for (unsigned int i = e->last_set; i < e->nr_periods; i++) {
        max = MAX(max, e->periods[i]);
    }

    return max;
}

/* Read every ring; each record goes to its event. Drain lock held. */
static void
tp_drain_locked(void)
{
    static union {
        struct perfmon_record_header header;
        struct perfmon_record_sample sample;
        struct perfmon_record_throttle throttle;
        uint8_t bytes[PERFMON_SESSION_RECORD_MAX];
    } buf;
    struct tp_event *e;
    size_t size;

    for (unsigned int c = 0; c < cpu_count(); c++) {
        while (perfmon_session_read(tp_session, c, &buf, sizeof(buf),
                                    &size) == 0) {
            TEST_ASSERT_EQ(buf.header.cpu, c);

            switch (buf.header.type) {
            case PERFMON_RECORD_SAMPLE:
                e = tp_event_of(buf.sample.cookie);

                if (e == NULL) {
                    break;
                }

                TEST_ASSERT_GT(buf.sample.period, 0);

                if (!e->freq && !tp_note_period(e, buf.sample.period)) {
                    test_fail_at(__FILE__, __LINE__, "a sample of period "
                                 "%llu, not one its event had",
                                 (unsigned long long)buf.sample.period);
                }

                if (e->cpu != ~0U) {
                    TEST_ASSERT_EQ(c, e->cpu);
                } else {
                    TEST_ASSERT_EQ(buf.sample.tid, e->tid);
                }

                e->period_sum += buf.sample.period;
                e->nr_samples++;
                break;
            case PERFMON_RECORD_THROTTLE:
                TEST_ASSERT_EQ(size, sizeof(buf.throttle));
                e = tp_event_of(buf.throttle.cookie);

                if (e == NULL) {
                    break;
                }

                TEST_ASSERT_GT(buf.throttle.nr_periods, 0);
                TEST_ASSERT_GE(buf.throttle.nr_events,
                               buf.throttle.nr_periods);
                e->throttled_events += buf.throttle.nr_events;
                tp_workers[buf.throttle.cookie >> 40].nr_throttled +=
                    buf.throttle.nr_periods;
                break;
            default:
                /* A LOST record: the rings were sized never to lose. */
                test_fail_at(__FILE__, __LINE__, "record type %u on cpu %u",
                             buf.header.type, c);
                return;
            }
        }
    }
}

/*
 * Drain, then check each attached event of the worker: what its records
 * account for never exceeds its count, read after them. The sums are
 * copied under the lock and the count read after it (a read may wait for
 * another CPU, not with preemption disabled): sums only grow, so the
 * copy is at most what the later count holds.
 */
static void
tp_check(struct tp_worker *w)
{
    uint64_t accounted[TP_EVENTS], nr_read[TP_EVENTS];

    spinlock_lock(&tp_drain_lock);
    tp_drain_locked();

    for (unsigned int k = 0; k < TP_EVENTS; k++) {
        accounted[k] = w->events[k].period_sum
                       + w->events[k].throttled_events;
        nr_read[k] = w->events[k].nr_samples;
    }

    spinlock_unlock(&tp_drain_lock);

    for (unsigned int k = 0; k < TP_EVENTS; k++) {
        struct tp_event *e = &w->events[k];
        uint64_t count, nr;

        if (!perfmon_event_attached(&e->event)) {
            continue;
        }

        TEST_ASSERT_EQ(perfmon_event_get(&e->event, &count), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&e->event, &nr), 0);
        TEST_ASSERT_LE(accounted[k], count);
        TEST_ASSERT_GE(nr, nr_read[k]);
    }
}

/* Detach event k; once every record is read, one period at most is left. */
static void
tp_detach(struct tp_worker *w, unsigned int k)
{
    struct tp_event *e = &w->events[k];
    uint64_t count, nr, accounted;

    TEST_ASSERT_EQ(perfmon_event_detach(&e->event), 0);
    TEST_ASSERT_EQ(perfmon_event_get(&e->event, &count), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&e->event, &nr), 0);

    spinlock_lock(&tp_drain_lock);
    tp_drain_locked();
    accounted = e->period_sum + e->throttled_events;
    TEST_ASSERT_EQ(nr, e->nr_samples);
    TEST_ASSERT_LE(accounted, count);

    if (!e->freq && !e->budgeted) {
        TEST_ASSERT_LT(count - accounted, tp_inflight_max(e));
    }

    w->nr_samples += e->nr_samples;
    /* Later records of this attach must fail tp_event_of. */
    e->cookie = 0;
    spinlock_unlock(&tp_drain_lock);
}

static void
tp_attach(struct tp_worker *w, unsigned int k, uint64_t r)
{
    struct tp_event *e = &w->events[k];
    struct perfmon_sample_attr attr = { .session = tp_session };
    unsigned int id = PMU_SOFT_EV_EMIT + TP_CHANNEL + r % 2;
    int error;

    /* The records start from nothing, under the lock the drains take. */
    spinlock_lock(&tp_drain_lock);
    e->cookie = tp_cookie(w->cpu, k, ++w->generation);
    e->freq = (r >> 4) % 4 == 0;
    e->budgeted = false;
    e->period_sum = e->throttled_events = e->nr_samples = 0;
    e->nr_periods = e->last_set = 0;
    spinlock_unlock(&tp_drain_lock);

    attr.cookie = e->cookie;
    attr.nr_frames = (r >> 8) % 3;

    if (e->freq) {
        static const uint32_t freqs[] = { 100, 1000, 4000 };

        attr.freq = freqs[(r >> 12) % ARRAY_SIZE(freqs)];
    } else {
        /* Short periods make bursts on one CPU trip its throttle. */
        attr.period = ((r >> 12) % 3 == 0) ? 1 + (r >> 16) % 4
                                            : 20 + (r >> 16) % 500;
        e->periods[e->nr_periods++] = attr.period;
    }

    TEST_ASSERT_EQ(perfmon_event_init(&e->event, id, PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&e->event, &attr), 0);

    if ((r >> 20) % 5 < 2) {
        e->cpu = (r >> 24) % cpu_count();
        e->tid = 0;
        error = perfmon_event_attach_cpu(&e->event, e->cpu);
    } else {
        struct tp_target *t = &tp_targets[(r >> 24) % tp_nr_targets];

        e->cpu = ~0U;
        e->tid = thread_id(t->thread);
        error = perfmon_event_attach(&e->event, t->thread);

        if (error == EINVAL) {
            TEST_ASSERT(READ_ONCE(t->thread->exited));
        }
    }

    if (error != 0) {
        /* Slots may run out (samplers of one CPU take slots apart). */
        TEST_ASSERT(error == EINVAL || error == EAGAIN);
        w->nr_refused++;
        return;
    }

    w->nr_attach++;
}

/* A change of an attached sampler: every one the API allows it. */
static void
tp_change(struct tp_worker *w, unsigned int k, uint64_t r)
{
    struct tp_event *e = &w->events[k];
    uint64_t period = ((r >> 12) % 3 == 0) ? 1 + (r >> 16) % 4
                                            : 20 + (r >> 16) % 500;

    switch ((r >> 8) % 4) {
    case 0:
        if (e->freq) {
            TEST_ASSERT_EQ(perfmon_event_set_period(&e->event, period),
                           EINVAL);
        } else if (e->nr_periods < TP_PERIODS_MAX
                   && !tp_had_period(e, period)) {
            /* Recorded first: a drain may see its samples at once. */
            spinlock_lock(&tp_drain_lock);
            e->periods[e->nr_periods++] = period;
            spinlock_unlock(&tp_drain_lock);
            TEST_ASSERT_EQ(perfmon_event_set_period(&e->event, period), 0);
        }

        break;
    case 1:
        /* A budget may run out: counting then goes on without periods. */
        e->budgeted = true;
        TEST_ASSERT_EQ(perfmon_event_refresh(&e->event, 1 + (r >> 16) % 30),
                       0);
        break;
    case 2:
        TEST_ASSERT_EQ(perfmon_event_disable(&e->event), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_enable(&e->event), EINVAL);
        break;
    default:
        /* A burst on this CPU: its CPU samplers sample, or throttle. */
        test_emit_paced_busy(TP_CHANNEL + r % 2, 1000 + (r >> 16) % 4000);
        break;
    }

    w->nr_changes++;
}

static void
tp_op(struct tp_worker *w)
{
    uint64_t r = test_rand(&w->seed);
    unsigned int k = r % TP_EVENTS;

    if (!perfmon_event_attached(&w->events[k].event)) {
        tp_attach(w, k, r >> 1);
    } else if ((r >> 1) % 6 == 0) {
        tp_detach(w, k);
    } else {
        tp_change(w, k, r >> 3);
    }

    tp_check(w);

    if (r % 17 == 0) {
        thread_yield();
    } else if (r % 97 == 0) {
        thread_delay(1);
    }
}

static void
tp_worker_main(void *arg)
{
    struct tp_worker *w = arg;

    for (uint64_t i = 0; i < w->ops; i++) {
        tp_op(w);
    }

    for (unsigned int k = 0; k < TP_EVENTS; k++) {
        if (perfmon_event_attached(&w->events[k].event)) {
            tp_detach(w, k);
        }
    }
}

TEST_DEFINE(perfmon_torture, sampling_records_account_after_every_op)
{
    unsigned int alive = thread_nr_alive();
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_session_stats stats;
    uint64_t ops = MAX(TORTURE_OPS_TOTAL / cpu_count(), TORTURE_OPS_MIN);
    uint64_t seed = 0x7e57;
    uint64_t totals[5] = { 0 };

    arg_get_u64("torture.ops", &ops);
    arg_get_u64("torture.seed", &seed);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
    TEST_ASSERT_EQ(perfmon_session_create(&tp_session, TP_RING_SIZE), 0);
    tp_nr_targets = cpu_count() * TORTURE_TARGETS_PER_CPU;

    for (unsigned int i = 0; i < tp_nr_targets; i++) {
        struct tp_target *t = &tp_targets[i];

        t->seed = seed * 1000 + i + 1;
        t->lifetime = 50 + test_rand(&t->seed) % (20 * ops / 10 + 1);
        t->stop = false;
        t->thread = test_thread_start("torture-p-target", 0,
                                      tp_target_main, t);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        struct tp_worker *w = &tp_workers[c];

        *w = (struct tp_worker){
            .cpu = c, .seed = seed + 11 * c + 1, .ops = ops,
        };
        w->thread = test_thread_start("torture-p-worker", 1ULL << c,
                                      tp_worker_main, w);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        thread_join(tp_workers[c].thread);
        totals[0] += tp_workers[c].nr_attach;
        totals[1] += tp_workers[c].nr_refused;
        totals[2] += tp_workers[c].nr_changes;
        totals[3] += tp_workers[c].nr_samples;
        totals[4] += tp_workers[c].nr_throttled;
    }

    for (unsigned int i = 0; i < tp_nr_targets; i++) {
        tp_targets[i].stop = true;
        thread_join(tp_targets[i].thread);
    }

    test_diag("torture: %llu attaches, %llu refused, %llu changes, "
              "%llu samples, %llu throttled periods",
              (unsigned long long)totals[0], (unsigned long long)totals[1],
              (unsigned long long)totals[2], (unsigned long long)totals[3],
              (unsigned long long)totals[4]);
    TEST_ASSERT_GT(totals[0], 0);
    TEST_ASSERT_GT(totals[3], 0);
    TEST_ASSERT_EQ(perfmon_session_stats(tp_session, PERFMON_SESSION_ALL_CPUS,
                                         &stats), 0);
    TEST_ASSERT_EQ(stats.lost + stats.dropped, 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(tp_session), 0);
    tp_session = NULL;
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_cpu_nr_used_slots(c), 0);
    }

    TEST_ASSERT_EQ(thread_nr_alive(), alive);
}
