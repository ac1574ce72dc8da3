/*
 * perfmon's hooks for the scheduler (kern/thread.c): each thread's
 * perfmon state (struct perfmon_td, kern/perfmon_types.h, embedded in
 * struct thread) is initialized with the thread, and loaded and unloaded
 * on every context switch; a new thread joins its creator's inherited
 * events (perfmon_td_create) and a dead one leaves them
 * (perfmon_td_exit).
 */
#ifndef KERN_PERFMON_TD_H
#define KERN_PERFMON_TD_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon_types.h>

struct thread;

/* A new thread's state: nothing used, off every CPU. Any context. */
void perfmon_td_init(struct perfmon_td *td);

/*
 * Inheritance (PERFMON_EF_INHERIT, kern/perfmon.h): child, a thread being
 * created (initialized, not yet queued or published), joins the families
 * of its creator parent, with a record allocated here for each. Return 0
 * or ENOMEM, having joined none: the creation must then fail. Thread
 * context (thread_create).
 */
int perfmon_td_create(struct thread *parent, struct thread *child);

/*
 * A thread off its CPU for good (dead, unloaded): its share of each
 * family it belongs to is folded into the family and its references
 * given back (its root events are their owner's to detach). Interrupts
 * disabled, no run queue lock held (thread_reap).
 */
void perfmon_td_exit(struct thread *thread);

/* True when no event uses the thread. Any context. */
bool perfmon_td_unused(const struct perfmon_td *td);

/*
 * The context switch from prev to next on the calling CPU, at TSC now
 * (the scheduler's, which its run times use too): what prev's counters
 * counted is added to prev, next's counters are loaded. Slots both use
 * keep counting (one counter read each); only slots that differ are
 * stopped or started. Interrupts and preemption disabled.
 */
void perfmon_td_switch(struct perfmon_td *prev, struct perfmon_td *next,
                       uint64_t now);

/*
 * Load a thread's counters on the calling CPU when no thread was loaded
 * there before (a CPU's first thread). Interrupts disabled.
 */
void perfmon_td_load(struct perfmon_td *td);

#endif /* KERN_PERFMON_TD_H */
