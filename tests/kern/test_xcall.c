/*
 * Cross-CPU calls.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/xcall.h>
#include <machine/cpu.h>

#include "test_util.h"

struct test_xcall_probe {
    unsigned int target;
    unsigned int ran_on;
    bool intr_enabled;
    unsigned int calls;
};

static void
test_xcall_probe_fn(void *arg)
{
    struct test_xcall_probe *probe = arg;

    probe->ran_on = cpu_id();
    probe->intr_enabled = cpu_intr_enabled();
    probe->calls++;
}

/*
 * From a thread pinned on CPU src, call every CPU. A failed assertion here
 * fails the running test (helper threads report to the harness).
 */
static void
test_xcall_from(void *arg)
{
    unsigned int src = (unsigned int)(uintptr_t)arg;

    for (unsigned int dst = 0; dst < cpu_count(); dst++) {
        struct test_xcall_probe probe = { .target = dst };

        TEST_ASSERT_EQ(cpu_id(), src);
        TEST_ASSERT_EQ(xcall_call(dst, test_xcall_probe_fn, &probe), 0);
        TEST_ASSERT_EQ(probe.calls, 1);
        TEST_ASSERT_EQ(probe.ran_on, dst);
        TEST_ASSERT(!probe.intr_enabled);
    }
}

TEST_DEFINE(xcall, each_cpu_to_each_cpu)
{
    for (unsigned int src = 0; src < cpu_count(); src++) {
        thread_join(test_thread_start("xcall", 1ULL << src, test_xcall_from,
                                      (void *)(uintptr_t)src));
    }
}

/* Every CPU calls every other at once: nobody deadlocks. */
TEST_DEFINE(xcall, concurrent_calls_do_not_deadlock)
{
    struct thread *threads[CPU_MAX];

    for (unsigned int src = 0; src < cpu_count(); src++) {
        threads[src] = test_thread_start("xcall", 1ULL << src,
                                         test_xcall_from,
                                         (void *)(uintptr_t)src);
    }

    for (unsigned int src = 0; src < cpu_count(); src++) {
        thread_join(threads[src]);
    }
}

static unsigned int test_xcall_hits[CPU_MAX];

static void
test_xcall_count(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&test_xcall_hits[cpu_id()], 1, __ATOMIC_RELAXED);
}

TEST_DEFINE(xcall, broadcast_reaches_each_cpu_once)
{
    for (unsigned int i = 0; i < CPU_MAX; i++) {
        test_xcall_hits[i] = 0;
    }

    xcall_broadcast(test_xcall_count, NULL);

    for (unsigned int i = 0; i < CPU_MAX; i++) {
        TEST_ASSERT_EQ(test_xcall_hits[i], (i < cpu_count()) ? 1 : 0);
    }
}

TEST_DEFINE(xcall, bad_cpu_is_refused)
{
    struct test_xcall_probe probe = { 0 };

    TEST_ASSERT_EQ(xcall_call(cpu_count(), test_xcall_probe_fn, &probe),
                   EINVAL);
    TEST_ASSERT_EQ(xcall_call(~0U, test_xcall_probe_fn, &probe), EINVAL);
    TEST_ASSERT_EQ(probe.calls, 0);
}
