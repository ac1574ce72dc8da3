/*
 * perfmon torture: worker threads on every CPU attach, read and detach
 * thread and CPU events on random targets, with a seeded PRNG, while the
 * target threads emit, migrate and exit. At the end every slot is free on
 * every tier, every thread reference is dropped, and no assertion fired.
 * test=all runs a bounded number of operations (about 6000 in all, so a
 * 64-CPU run under TCG stays short); `make torture` sets torture.ops (per
 * CPU) for a run of minutes.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"

#define TORTURE_OPS_TOTAL       6000    /* default, spread over the CPUs */
#define TORTURE_OPS_MIN         200     /* default floor per CPU */
#define TORTURE_TARGETS_PER_CPU 2
#define TORTURE_EVENTS          6
#define TORTURE_MAX_TARGETS     (CPU_MAX * TORTURE_TARGETS_PER_CPU)

static const unsigned int torture_event_ids[] = {
    PMU_SOFT_EV_EMIT, PMU_SOFT_EV_EMIT + 1, PMU_SOFT_EV_EMIT + 2,
    PMU_SOFT_EV_CSWITCH, PMU_SOFT_EV_MIGRATION, PMU_SOFT_EV_TICK,
    PMU_SOFT_EV_XCALL,
};

struct torture_target {
    struct thread *thread;      /* reference held until the end */
    uint64_t seed;
    unsigned int lifetime;      /* bursts before exiting on its own */
    volatile bool stop;
};

struct torture_worker {
    struct thread *thread;
    uint64_t seed;
    uint64_t ops;
    struct perfmon_event events[TORTURE_EVENTS];
    uint64_t last[TORTURE_EVENTS];
    uint64_t nr_attach, nr_refused, nr_read, nr_detach;
};

static struct torture_target torture_targets[TORTURE_MAX_TARGETS];
static unsigned int torture_nr_targets;

static void
torture_target_main(void *arg)
{
    struct torture_target *t = arg;

    for (unsigned int i = 1; i <= t->lifetime && !t->stop; i++) {
        uint64_t r = test_rand(&t->seed);

        pmu_soft_emit_channel(r % 3, 1 + (r >> 8) % 50);

        if (i % 10 == 0) {
            thread_delay(1);
        } else if (r % 5 == 0) {
            thread_yield();
        }

        if (r % 13 == 0) {
            uint64_t mask = (r >> 16) & ((1ULL << cpu_count()) - 1);

            if (cpu_count() == 64) {
                mask = r >> 16;
            }

            if (mask != 0) {
                TEST_ASSERT_EQ(thread_set_affinity(thread_self(), mask), 0);
            }
        }
    }
}

static void
torture_op(struct torture_worker *w)
{
    uint64_t r = test_rand(&w->seed);
    unsigned int k = r % TORTURE_EVENTS;
    struct perfmon_event *event = &w->events[k];
    uint64_t value;
    int error;

    if (!perfmon_event_attached(event)) {
        unsigned int id = torture_event_ids[(r >> 8)
                                            % ARRAY_SIZE(torture_event_ids)];

        TEST_ASSERT_EQ(perfmon_event_init(event, id, PERFMON_EF_SW), 0);

        if ((r >> 16) % 3 == 0) {
            error = perfmon_event_attach_cpu(event,
                                             (r >> 20) % cpu_count());
        } else {
            struct torture_target *t;

            t = &torture_targets[(r >> 20) % torture_nr_targets];
            error = perfmon_event_attach(event, t->thread);
        }

        /* Allowed refusals: all slots taken, or the target has exited. */
        if (error == EAGAIN || error == EINVAL) {
            w->nr_refused++;
            return;
        }

        TEST_ASSERT_EQ(error, 0);
        w->last[k] = 0;
        w->nr_attach++;
    } else if ((r >> 8) % 4 != 0) {
        TEST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
        TEST_ASSERT_GE(value, w->last[k]);     /* counts never go back */
        w->last[k] = value;
        w->nr_read++;
    } else {
        TEST_ASSERT_EQ(perfmon_event_detach(event), 0);
        TEST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
        TEST_ASSERT_GE(value, w->last[k]);
        w->nr_detach++;
    }

    if (r % 17 == 0) {
        thread_yield();
    } else if (r % 97 == 0) {
        thread_delay(1);
    }
}

static void
torture_worker_main(void *arg)
{
    struct torture_worker *w = arg;

    for (uint64_t i = 0; i < w->ops; i++) {
        torture_op(w);
    }

    for (unsigned int k = 0; k < TORTURE_EVENTS; k++) {
        if (perfmon_event_attached(&w->events[k])) {
            TEST_ASSERT_EQ(perfmon_event_detach(&w->events[k]), 0);
        }
    }
}

TEST_DEFINE(perfmon_torture, random_ops_leave_nothing_behind)
{
    static struct torture_worker workers[CPU_MAX];
    unsigned int alive = thread_nr_alive();
    struct perfmon_dev *soft = perfmon_get_dev(true);
    uint64_t ops = MAX(TORTURE_OPS_TOTAL / cpu_count(), TORTURE_OPS_MIN);
    uint64_t seed = 0x5eed;
    uint64_t totals[4] = { 0 };

    arg_get_u64("torture.ops", &ops);
    arg_get_u64("torture.seed", &seed);
    test_diag("torture: %llu operations per CPU, seed 0x%llx",
              (unsigned long long)ops, (unsigned long long)seed);
    TEST_ASSERT(soft != NULL);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(soft), 0);

    torture_nr_targets = cpu_count() * TORTURE_TARGETS_PER_CPU;

    for (unsigned int i = 0; i < torture_nr_targets; i++) {
        struct torture_target *t = &torture_targets[i];

        t->seed = seed * 1000 + i + 1;
        t->lifetime = 50 + test_rand(&t->seed) % (20 * ops / 10 + 1);
        t->stop = false;
        t->thread = test_thread_start("torture-target", 0,
                                      torture_target_main, t);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        struct torture_worker *w = &workers[c];

        *w = (struct torture_worker){ .seed = seed + 7 * c + 1, .ops = ops };
        w->thread = test_thread_start("torture-worker", 1ULL << c,
                                      torture_worker_main, w);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        thread_join(workers[c].thread);
        totals[0] += workers[c].nr_attach;
        totals[1] += workers[c].nr_refused;
        totals[2] += workers[c].nr_read;
        totals[3] += workers[c].nr_detach;
    }

    for (unsigned int i = 0; i < torture_nr_targets; i++) {
        torture_targets[i].stop = true;
        thread_join(torture_targets[i].thread);
    }

    test_diag("torture: %llu attaches, %llu refused, %llu reads, "
              "%llu detaches", (unsigned long long)totals[0],
              (unsigned long long)totals[1], (unsigned long long)totals[2],
              (unsigned long long)totals[3]);
    TEST_ASSERT_GT(totals[0], 0);
    TEST_ASSERT_GT(totals[2], 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_pmcs(soft), 0);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_cpu_nr_used_pmcs(c), 0);
    }

    TEST_ASSERT_EQ(thread_nr_alive(), alive);
}
