/*
 * perfmon multiplexing with the software PMU: how far a schedule change
 * reaches. A rotation, attach or detach interrupts only the CPUs that use
 * a slot whose counter changed; the others follow the schedule when they
 * next take one of those slots into use. Suite perfmon_mux, with
 * test_perfmon_mux.c, whose header states the method.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "mux_util.h"
#include "perfmon_util.h"
#include "test_util.h"

#define TEST_PR_ROTATIONS   10

/* One pinned CPU event per CPU counting the cross-CPU calls it receives. */
static struct perfmon_event test_pr_xcalls[CPU_MAX];

static void
test_pr_detach_xcalls(void *arg)
{
    (void)arg;

    for (unsigned int c = 0; c < cpu_count(); c++) {
        if (perfmon_event_attached(&test_pr_xcalls[c])) {
            perfmon_event_detach(&test_pr_xcalls[c]);
        }
    }
}

static void
test_pr_detach_own(void *arg)
{
    struct perfmon_event *own = arg;

    for (unsigned int i = 0; i < 2 * PMU_SOFT_NR_COUNTERS; i++) {
        if (perfmon_event_attached(&own[i])) {
            perfmon_event_detach(&own[i]);
        }
    }
}

static void
test_pr_attach_xcalls(void)
{
    TEST_ASSERT_EQ(test_undo_on_failure(test_pr_detach_xcalls, NULL), 0);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_event_init(&test_pr_xcalls[c],
                                          PMU_SOFT_EV_XCALL,
                                          PERFMON_EF_SW | PERFMON_EF_PINNED),
                       0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&test_pr_xcalls[c], c), 0);
    }
}

/*
 * Each CPU's count of received calls. A read of another CPU's event is
 * itself such a call, counted before it reads: each read adds one.
 */
static void
test_pr_read_xcalls(uint64_t *counts)
{
    for (unsigned int c = 0; c < cpu_count(); c++) {
        counts[c] = perfmon_event_read(&test_pr_xcalls[c]);
    }
}

/*
 * 2(S - 1) CPU events on the last CPU take turns on the S - 1 counters
 * the pinned call counters leave (those share one slot, which no
 * rotation moves). Every rotation changes the busy CPU's slots only: it
 * gets one call per rotation, every other CPU none but the reads'.
 * Before the fix, every rotation called every CPU.
 */
TEST_DEFINE(perfmon_mux, rotation_reaches_only_the_cpus_that_count)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int busy = cpu_count() - 1;
    unsigned int nr = 2 * (test_pm_nr_counters() - 1);
    uint64_t before[CPU_MAX], after[CPU_MAX];
    uint64_t rotations;

    test_require_cpus(2);
    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), 1ULL << 0), 0);
    test_px_init(set, nr, 0);

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], busy), 0);
    }

    /*
     * A CPU that let a slot go is told of the slot's next change once (it
     * keeps its bit until then, so that its switches write no shared
     * line): two rotations move every slot, after the earlier tests.
     */
    TEST_ASSERT(perfmon_mux_rotate(dev));
    TEST_ASSERT(perfmon_mux_rotate(dev));
    test_pr_attach_xcalls();
    test_pr_read_xcalls(before);
    rotations = perfmon_mux_nr_rotations(dev);

    for (unsigned int r = 0; r < TEST_PR_ROTATIONS; r++) {
        TEST_ASSERT(perfmon_mux_rotate(dev));
    }

    test_pr_read_xcalls(after);
    TEST_ASSERT_GE(perfmon_mux_nr_rotations(dev) - rotations,
                   TEST_PR_ROTATIONS);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        if (c == busy) {
            TEST_ASSERT_GE(after[c] - before[c], TEST_PR_ROTATIONS + 1);
        } else {
            /* The test's CPU reads its own event without a call. */
            TEST_ASSERT_EQ(after[c] - before[c], (c == 0) ? 0 : 1);
        }
    }

    test_pr_detach_xcalls(NULL);

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(dev), 0);
    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL), 0);
}

/*
 * A CPU that missed changes (it used none of the changed slots) follows
 * the schedule when it takes a slot into use. While only the busy CPU
 * counts, 2S raw events take turns; then this CPU takes all their slots
 * into use at once (thread events of its own on the same raw events),
 * with a copy of the schedule many rotations old: were it trusted, two
 * slots could start one counter. Each own event counts exactly what was
 * emitted while it counted here, turn after turn.
 */
TEST_DEFINE(perfmon_mux, quiet_cpu_follows_at_first_use)
{
    static struct perfmon_event own[2 * PMU_SOFT_NR_COUNTERS];
    static uint64_t counted[2 * PMU_SOFT_NR_COUNTERS];
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    unsigned int busy = cpu_count() - 1;
    unsigned int nr = 2 * test_pm_nr_counters();
    unsigned long flags;

    test_require_cpus(2);
    TEST_ASSERT(nr <= ARRAY_SIZE(own));
    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), 1ULL << 0), 0);
    test_px_init(set, nr, 0);

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&set->events[i], busy), 0);
    }

    for (unsigned int r = 0; r < TEST_PR_ROTATIONS; r++) {
        TEST_ASSERT(perfmon_mux_rotate(dev));
    }

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT_EQ(test_pm_emit_event_init(&own[i], i, 0), 0);
        counted[i] = 0;
    }

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach(&own[i], thread_self()), 0);
    }

    TEST_ASSERT_EQ(test_undo_on_failure(test_pr_detach_own, own), 0);

    for (unsigned int r = 0; r < TEST_PR_ROTATIONS; r++) {
        flags = cpu_intr_save();

        for (unsigned int i = 0; i < nr; i++) {
            if (perfmon_cpu_event_counting(&own[i])) {
                pmu_soft_emit_channel(i, 3);
                counted[i] += 3;
            } else {
                pmu_soft_emit_channel(i, 5);
            }
        }

        cpu_intr_restore(flags);
        TEST_ASSERT(perfmon_mux_rotate(dev));
    }

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT_EQ(perfmon_event_read(&own[i]), counted[i]);
    }

    test_pr_detach_own(own);

    for (unsigned int i = 0; i < nr; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&set->events[i]), 0);
    }

    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL), 0);
}
