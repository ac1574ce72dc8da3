/*
 * Helpers shared by the in-kernel tests.
 */
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"

struct thread *
test_thread_start(const char *name, uint64_t affinity,
                  void (*fn)(void *arg), void *arg)
{
    struct thread_attr attr = { .name = name, .affinity = affinity };
    struct thread *thread = NULL;

    TEST_ASSERT_EQ(test_helper_start(&thread, &attr, fn, arg), 0);
    return thread;
}

void
test_spin_ticks(uint64_t ticks)
{
    uint64_t end = clock_get_time() + ticks;

    while (clock_get_time() < end) {
        cpu_pause();
    }
}

uint64_t
test_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

void
test_require_cpus(unsigned int n)
{
    if (cpu_count() < n) {
        test_skip("needs more CPUs");
    }
}
