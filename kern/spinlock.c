/*
 * Spin locks: test-and-test-and-set with an owner field for assertions.
 */
#include <stdbool.h>

#include <kern/assert.h>
#include <kern/spinlock.h>
#include <kern/thread.h>
#include <machine/cpu.h>

void
spinlock_init(struct spinlock *lock)
{
    lock->locked = 0;
    lock->owner = 0;
}

static bool
spinlock_try_raw(struct spinlock *lock)
{
    return !__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE);
}

static void
spinlock_lock_raw(struct spinlock *lock)
{
    while (!spinlock_try_raw(lock)) {
        while (__atomic_load_n(&lock->locked, __ATOMIC_RELAXED)) {
            cpu_pause();
        }
    }

    /*
     * Relaxed: spinlock_held on another CPU compares it with its own id,
     * a value only this CPU writes; what the lock protects is ordered by
     * locked's acquire and release.
     */
    __atomic_store_n(&lock->owner, cpu_id() + 1, __ATOMIC_RELAXED);
}

static void
spinlock_unlock_raw(struct spinlock *lock)
{
    assert(spinlock_held(lock));
    __atomic_store_n(&lock->owner, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

void
spinlock_lock(struct spinlock *lock)
{
    thread_preempt_disable();
    spinlock_lock_raw(lock);
}

void
spinlock_unlock(struct spinlock *lock)
{
    spinlock_unlock_raw(lock);
    thread_preempt_enable();
}

bool
spinlock_trylock(struct spinlock *lock)
{
    thread_preempt_disable();

    if (!spinlock_try_raw(lock)) {
        thread_preempt_enable();
        return false;
    }

    __atomic_store_n(&lock->owner, cpu_id() + 1, __ATOMIC_RELAXED);
    return true;
}

void
spinlock_lock_intr_save(struct spinlock *lock, unsigned long *flags)
{
    thread_preempt_disable();
    *flags = cpu_intr_save();
    spinlock_lock_raw(lock);
}

void
spinlock_unlock_intr_restore(struct spinlock *lock, unsigned long flags)
{
    spinlock_unlock_raw(lock);
    cpu_intr_restore(flags);
    thread_preempt_enable();
}

bool
spinlock_held(const struct spinlock *lock)
{
    return __atomic_load_n(&lock->locked, __ATOMIC_RELAXED)
           && __atomic_load_n(&lock->owner, __ATOMIC_RELAXED)
              == cpu_id() + 1;
}
