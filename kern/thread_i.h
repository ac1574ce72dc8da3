/*
 * The threads' private header: what kern/thread.c (the lifecycle and the
 * registry) and kern/thread_sched.c (the run queues and the scheduler)
 * share. Nothing else includes it.
 */
#ifndef KERN_THREAD_I_H
#define KERN_THREAD_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/list.h>
#include <kern/percpu.h>
#include <kern/spinlock.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>

struct thread_runq {
    struct spinlock lock;
    unsigned int cpu;
    struct thread *current;
    struct thread *idle;
    struct list queues[THREAD_NR_PRIOS];
    unsigned int ready_mask;        /* bit p: queues[p] is not empty */
    unsigned int nr_ready;
    bool need_resched;
    struct thread *migrate;         /* prev, to enqueue elsewhere */
    struct thread *dead;            /* prev, whose reference to drop */
    struct syscnt sc_switches;
};

/* A thread's cpu while it moves between run queues (thread_sched.c). */
#define THREAD_CPU_TRANSIT (~0U)

/* Each CPU's run queue (thread_sched.c). */
extern struct thread_runq thread_runq __percpu;

/*
 * The online CPUs, bit i for CPU i. Any context. Static, not inline: each
 * file inlines it where it did when the two were one (both use it, so
 * neither warns of an unused function).
 */
static uint64_t
thread_online_mask(void)
{
    uint64_t mask = 0;

    for (unsigned int i = 0; i < cpu_count(); i++) {
        if (cpu_online(i)) {
            mask |= 1ULL << i;
        }
    }

    return mask;
}

/* thread_sched.c, for thread.c */

/*
 * An allowed online CPU, preferring the one it last ran on. Any context.
 */
unsigned int thread_pick_cpu(const struct thread *thread);

/*
 * Queue a thread in transit (THREAD_CPU_TRANSIT, ready, neither queued nor
 * running) on an allowed CPU. Interrupts disabled, no run queue lock held.
 */
void thread_enqueue(struct thread *thread);

/* thread.c, for thread_sched.c */

/*
 * Drop the reference a dead thread held on itself and wake its joiner,
 * once it is off its CPU. Interrupts disabled, no run queue lock held.
 */
void thread_reap(struct thread *thread);

/*
 * Complete a context switch in the thread switched to (a new thread's
 * first act): release the run queue lock, finish the previous thread's
 * migration or exit. Interrupts disabled.
 */
void thread_switch_finish(void);

/*
 * Put the current thread back as its state says and run the best ready
 * thread. Run queue of the calling CPU locked (taken with spinlock_lock),
 * interrupts disabled; returns with the lock released and interrupts
 * still disabled.
 */
void thread_schedule_locked(struct thread_runq *rq);

#endif /* KERN_THREAD_I_H */
