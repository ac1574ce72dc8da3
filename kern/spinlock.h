/*
 * Spin locks.
 *
 * spinlock_lock() disables preemption for as long as the lock is held; it
 * may be called in thread context, or with interrupts disabled. A lock that
 * an interrupt handler also takes must be taken with the _intr_save variant
 * everywhere else, which disables interrupts too. Locks do not nest
 * recursively.
 */
#ifndef KERN_SPINLOCK_H
#define KERN_SPINLOCK_H

#include <stdbool.h>

#include <kern/assert.h>

struct spinlock {
    unsigned int locked;
    unsigned int owner;     /* 1 + the owner's CPU index, for assertions */
};

#define SPINLOCK_INITIALIZER { 0, 0 }

void spinlock_init(struct spinlock *lock);

void spinlock_lock(struct spinlock *lock);
void spinlock_unlock(struct spinlock *lock);

/* Return true and hold the lock, or false without waiting. */
bool spinlock_trylock(struct spinlock *lock);

void spinlock_lock_intr_save(struct spinlock *lock, unsigned long *flags);
void spinlock_unlock_intr_restore(struct spinlock *lock,
                                  unsigned long flags);

/* True when the calling CPU holds the lock. For assertions. */
bool spinlock_held(const struct spinlock *lock);

/* A calling-context rule: the calling CPU holds lock. */
#define spinlock_assert_held(lock)                                      \
    assert_msg(spinlock_held(lock), "lock %p not held", (void *)(lock))

#endif /* KERN_SPINLOCK_H */
