/*
 * perfmon's hooks for the scheduler (kern/thread.c): each thread's
 * perfmon state (struct perfmon_td, kern/perfmon_types.h, embedded in
 * struct thread) is initialized with the thread, and loaded and unloaded
 * on every context switch.
 */
#ifndef KERN_PERFMON_TD_H
#define KERN_PERFMON_TD_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon_types.h>

/* A new thread's state: nothing used, off every CPU. Any context. */
void perfmon_td_init(struct perfmon_td *td);

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
