/*
 * Tests that fail or hang on purpose, so that `make check` can verify the
 * runner reports a failure, a panic and a hang (they are manual tests,
 * never part of test=all).
 */
#include <stdbool.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"

TEST_DEFINE_MANUAL(selftest, deliberate_failure)
{
    TEST_ASSERT_EQ(1 + 1, 3);
}

TEST_DEFINE_MANUAL(selftest, hang)
{
    test_diag("hanging on purpose");
    cpu_halt_forever();
}

struct test_selftest_shared {
    volatile unsigned long counter;
};

/* Keeps writing into the failed test's stack frame until told to stop. */
static void
test_selftest_scribbler(void *arg)
{
    struct test_selftest_shared *shared = arg;

    for (;;) {
        shared->counter++;
        thread_yield();
    }
}

/*
 * A test that fails while its helper still runs on the test's stack data:
 * the harness must end the run there, with a report, before another test
 * reuses that stack (the runner checks neither a panic nor a later test
 * follows).
 */
TEST_DEFINE_MANUAL(selftest, failure_with_running_helper)
{
    struct test_selftest_shared shared = { 0 };

    test_thread_start("scribbler", 0, test_selftest_scribbler, &shared);

    while (shared.counter == 0) {
        thread_yield();
    }

    TEST_ASSERT_EQ(shared.counter, 0);
}

/* Selected after failure_with_running_helper: the aborted run skips it. */
TEST_DEFINE_MANUAL(selftest, after_an_aborted_run)
{
    TEST_ASSERT(true);
}

struct test_selftest_undo {
    unsigned int nr;
    const unsigned int *order;      /* the last action run, on the stack */
};

static void
test_selftest_undo(void *arg)
{
    struct test_selftest_undo *undo = arg;

    test_diag("undo %u: interrupts %s, after %u", undo->nr,
              cpu_intr_enabled() ? "on" : "off", *undo->order);
}

/*
 * Fails with interrupts disabled after registering two undo actions on
 * its stack: they run last first, with interrupts on, the stack intact
 * (the runner checks their lines).
 */
TEST_DEFINE_MANUAL(selftest, failure_runs_its_undo_actions)
{
    unsigned int last = 0;
    struct test_selftest_undo undo[2] = {
        { .nr = 1, .order = &last }, { .nr = 2, .order = &last },
    };

    TEST_ASSERT_EQ(test_undo_on_failure(NULL, NULL), EINVAL);

    for (unsigned int i = 0; i < ARRAY_SIZE(undo); i++) {
        TEST_ASSERT_EQ(test_undo_on_failure(test_selftest_undo, &undo[i]), 0);
    }

    last = 7;
    cpu_intr_disable();
    TEST_ASSERT_EQ(last, 0);
}

/* Fails a few ticks after it starts, outside the harness's tracking. */
static bool test_selftest_next_started;
static bool test_selftest_late_failed;

static void
test_selftest_late_failer(void *arg)
{
    (void)arg;

    /* Not before the next test runs: a loaded host may stretch this
       test past any fixed delay. */
    while (!__atomic_load_n(&test_selftest_next_started, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    TEST_ASSERT_EQ(2 + 2, 5);
    __atomic_store_n(&test_selftest_late_failed, true, __ATOMIC_RELEASE);
}

/*
 * Passes, leaving behind a thread the harness does not track, which fails
 * after the test ended: while the next test runs (which then fails) or
 * between tests (a failure of the run). Either way the run fails; the
 * failure is never lost.
 */
TEST_DEFINE_MANUAL(selftest, failure_after_its_test_ended)
{
    struct thread_attr attr = { .name = "late_failer" };
    struct thread *thread;

    TEST_ASSERT_EQ(thread_create(&thread, &attr, test_selftest_late_failer,
                                 NULL), 0);
    thread_unref(thread);
}

/* Selected after failure_after_its_test_ended: runs while it fails. */
TEST_DEFINE_MANUAL(selftest, waits_a_while)
{
    __atomic_store_n(&test_selftest_next_started, true, __ATOMIC_RELEASE);

    /* Until the failure is in, or a second at most. */
    for (unsigned int i = 0;
         i < 100 && !__atomic_load_n(&test_selftest_late_failed,
                                     __ATOMIC_ACQUIRE);
         i++) {
        thread_delay(1);
    }
}
