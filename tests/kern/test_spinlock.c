/*
 * Spin locks.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/spinlock.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"

#define TEST_SPINLOCK_ITERS 20000

static struct spinlock test_spinlock_lock = SPINLOCK_INITIALIZER;
static volatile uint64_t test_spinlock_counter;

static void
test_spinlock_worker(void *arg)
{
    bool intr = (uintptr_t)arg & 1;

    for (unsigned int i = 0; i < TEST_SPINLOCK_ITERS; i++) {
        unsigned long flags;
        uint64_t value;

        if (intr) {
            spinlock_lock_intr_save(&test_spinlock_lock, &flags);
        } else {
            spinlock_lock(&test_spinlock_lock);
        }

        /* A read-modify-write with a gap: lost updates show a broken lock. */
        value = test_spinlock_counter;
        cpu_pause();
        test_spinlock_counter = value + 1;

        if (intr) {
            spinlock_unlock_intr_restore(&test_spinlock_lock, flags);
        } else {
            spinlock_unlock(&test_spinlock_lock);
        }
    }
}

/* One thread per CPU (two on one CPU) increments a shared counter. */
TEST_DEFINE(spinlock, contention_total_is_exact)
{
    unsigned int n = cpu_count() + 1;
    struct thread *threads[CPU_MAX + 1];

    test_spinlock_counter = 0;

    for (unsigned int i = 0; i < n; i++) {
        threads[i] = test_thread_start("spin", 1ULL << (i % cpu_count()),
                                       test_spinlock_worker,
                                       (void *)(uintptr_t)i);
    }

    for (unsigned int i = 0; i < n; i++) {
        thread_join(threads[i]);
    }

    TEST_ASSERT_EQ(test_spinlock_counter, (uint64_t)TEST_SPINLOCK_ITERS * n);
}

TEST_DEFINE(spinlock, intr_save_restores_state_and_preemption)
{
    struct spinlock lock = SPINLOCK_INITIALIZER;
    unsigned int level = thread_preempt_level();
    unsigned long flags;

    TEST_ASSERT(cpu_intr_enabled());
    spinlock_lock_intr_save(&lock, &flags);
    TEST_ASSERT(!cpu_intr_enabled());
    TEST_ASSERT(spinlock_held(&lock));
    TEST_ASSERT_EQ(thread_preempt_level(), level + 1);
    TEST_ASSERT(!spinlock_trylock(&lock));
    spinlock_unlock_intr_restore(&lock, flags);
    TEST_ASSERT(cpu_intr_enabled());
    TEST_ASSERT(!spinlock_held(&lock));
    TEST_ASSERT_EQ(thread_preempt_level(), level);

    TEST_ASSERT(spinlock_trylock(&lock));
    TEST_ASSERT(cpu_intr_enabled());
    TEST_ASSERT_EQ(thread_preempt_level(), level + 1);
    spinlock_unlock(&lock);
    TEST_ASSERT_EQ(thread_preempt_level(), level);
}
