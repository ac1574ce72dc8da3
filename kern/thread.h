/*
 * Kernel threads and the scheduler.
 *
 * Every CPU has a run queue of ready threads in priority levels (higher
 * runs first, round robin within a level, preemption on the clock tick)
 * and an idle thread that halts when nothing is ready. A thread may be
 * pinned to a set of CPUs; changing that set migrates it. A thread's
 * memory lives until its last reference goes: thread_create() hands one
 * reference to the caller (released by thread_join() or thread_unref()),
 * and the running thread holds one until it has exited.
 *
 * The context switch calls perfmon_td_switch(prev, next, now) with interrupts
 * and preemption disabled, and accounts each thread's time on a CPU with
 * one TSC read (thread_run_time).
 */
#ifndef KERN_THREAD_H
#define KERN_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <kern/list.h>
#include <kern/macros.h>
#include <kern/perfmon_types.h>
#include <kern/spinlock.h>
#include <machine/cpu.h>
#include <machine/tcb.h>

#define THREAD_NAME_SIZE    24
#define THREAD_STACK_ORDER  2               /* 16 KiB stacks */
#define THREAD_STACK_SIZE   (4096 << THREAD_STACK_ORDER)

#define THREAD_PRIO_IDLE    0   /* the idle threads only */
#define THREAD_PRIO_MIN     1
#define THREAD_PRIO_DEFAULT 4
#define THREAD_PRIO_MAX     7
#define THREAD_NR_PRIOS     (THREAD_PRIO_MAX + 1)

#define THREAD_AFFINITY_ALL (~(uint64_t)0)

enum thread_state {
    THREAD_RUNNING,     /* running or ready to run */
    THREAD_SLEEPING,
    THREAD_DEAD,
};

struct thread {
    struct tcb tcb;                 /* saved context, first for assembly */
    unsigned int preempt_level;     /* > 0: preemption disabled */
    enum thread_state state;
    unsigned int cpu;               /* run queue the thread belongs to */
    unsigned int last_cpu;          /* where it last ran */
    bool on_rq;                     /* queued in cpu's run queue */
    bool on_cpu;                    /* currently running on cpu */
    unsigned int priority;
    uint64_t affinity;              /* bit i: may run on CPU i */
    struct list rq_node;
    unsigned int refs;
    void (*fn)(void *arg);
    void *arg;
    void *stack;
    char name[THREAD_NAME_SIZE];
    uint32_t id;                    /* 0 for idle threads, else unique */

    struct spinlock join_lock;
    bool exited;                    /* it ended: never runs its code again */
    bool released;                  /* its own reference dropped (join) */
    struct thread *joiner;

    uint64_t nr_switches;           /* times switched in */
    uint64_t nr_migrations;

    /* Time on a CPU, in TSC cycles (thread_run_time). */
    uint64_t run_total;             /* up to the last switch out */
    uint64_t run_start;             /* TSC at the last switch in */

    struct list all_node;           /* in the list of all threads */

    struct perfmon_td perfmon_td;
};

struct thread_attr {
    const char *name;
    unsigned int priority;          /* 0 means THREAD_PRIO_DEFAULT */
    uint64_t affinity;              /* 0 means every CPU */
};

/* The calling thread. Any context (in an interrupt: the interrupted one). */
static inline struct thread *
thread_self(void)
{
    struct thread *thread;

    __asm__ volatile("movq %%gs:" STRINGIFY(CPU_HEAD_OFFSET_THREAD) ", %0"
                     : "=r"(thread));
    return thread;
}

/*
 * Preemption control: while the level is above zero the scheduler does not
 * take the CPU from the thread on the tick. Any context.
 */
static inline void
thread_preempt_disable(void)
{
    thread_self()->preempt_level++;
    barrier();
}

void thread_preempt_enable(void);

/* Decrement without rescheduling. For code that reschedules itself. */
static inline void
thread_preempt_enable_no_resched(void)
{
    barrier();
    thread_self()->preempt_level--;
}

static inline unsigned int
thread_preempt_level(void)
{
    return thread_self()->preempt_level;
}

/* For the test harness, which unwinds out of failed tests. */
static inline void
thread_preempt_level_set(unsigned int level)
{
    thread_self()->preempt_level = level;
}

static inline bool
thread_preempt_enabled(void)
{
    return thread_preempt_level() == 0;
}

/*
 * Called on interrupt exit when the interrupted code had interrupts
 * enabled: switch threads if a reschedule is pending and preemption is
 * enabled. Interrupts disabled.
 */
void thread_preempt_check(void);

/*
 * Create a thread running fn(arg) and store it in *threadp with a
 * reference for the caller (threadp may be NULL: then no reference is
 * returned). The thread is queued before it is published (on the thread
 * list, to the lookups and thread_nr_alive, in *threadp): it may start
 * running before then, but whoever finds it finds it on a run queue.
 * Return 0, EINVAL for a bad priority, an affinity naming no online CPU
 * or a NULL fn, ENOMEM (also when perfmon has no memory for the thread's
 * records in its creator's inherited events, kern/perfmon.h). The new
 * thread joins those events' families before it is queued. Thread
 * context.
 */
int thread_create(struct thread **threadp, const struct thread_attr *attr,
                  void (*fn)(void *arg), void *arg);

/*
 * For the thread tests only: have thread_create call fn (NULL: nothing)
 * on the creating thread, preemption enabled, once the new thread is set
 * up and before it is queued, so that a test can run other threads in
 * that window. Thread context.
 */
void thread_set_create_hook(void (*fn)(void));

/* End the calling thread. Thread context. */
void thread_exit(void) __noreturn;

/*
 * Wait for a thread to exit and leave its CPU, then release the reference
 * thread_create() gave: unless a lookup still holds one, the structure is
 * freed when this returns (thread_nr_alive() counts it no more). Thread
 * context; a thread cannot join itself, and only one thread may join a
 * given thread.
 */
void thread_join(struct thread *thread);

/* Take and release references on a thread. Any context. */
void thread_ref(struct thread *thread);
void thread_unref(struct thread *thread);

/*
 * Give up the CPU to another ready thread of the same or higher priority.
 * Thread context.
 */
void thread_yield(void);

/*
 * Sleep until thread_wakeup(). The caller holds interlock, taken with
 * spinlock_lock_intr_save() and flags; it is released while sleeping and
 * held again on return. Wakeups may be spurious: re-check the condition
 * in a loop. Thread context, preemption enabled apart from the interlock.
 */
void thread_sleep(struct spinlock *interlock, unsigned long flags);

/*
 * Make a sleeping thread ready (no effect on a ready or running thread).
 * Any context.
 */
void thread_wakeup(struct thread *thread);

/*
 * Sleep until the clock's tick count (clock_get_time) has advanced by at
 * least ticks from its value at the call. The call may come late in a
 * tick, so the time slept in TSC cycles is more than ticks - 1 tick
 * periods but may be less than ticks of them (thread_delay(1) can last a
 * fraction of a tick). A delay past the clock's range (UINT64_MAX, say)
 * saturates and never returns. Thread context.
 */
void thread_delay(uint64_t ticks);

/*
 * Restrict a thread to a set of CPUs (bit i for CPU i). A thread that is
 * outside the set moves: at once when it is ready or sleeping, at its next
 * reschedule (forced now) when it runs; when the caller restricts itself,
 * it returns running on a CPU its affinity allows at that time (when
 * another thread changes the affinity meanwhile, the last change wins).
 * Return 0 or EINVAL when the mask names no online CPU. Thread context.
 */
int thread_set_affinity(struct thread *thread, uint64_t mask);

/* Whether a thread has exited (it never runs again). Any context. */
static inline bool
thread_exited(const struct thread *thread)
{
    /* Acquire: pairs with thread_exit's release, after the thread's work. */
    return __atomic_load_n(&thread->exited, __ATOMIC_ACQUIRE);
}

/* The thread's perfmon state, for perfmon. Any context. */
static inline struct perfmon_td *
thread_perfmon_td(struct thread *thread)
{
    return &thread->perfmon_td;
}

/* The CPUs a thread may run on now (bit i for CPU i). Any context. */
static inline uint64_t
thread_affinity(const struct thread *thread)
{
    return READ_ONCE(thread->affinity);
}

/*
 * A thread's time on a CPU, in TSC cycles (the switch itself counts for
 * the thread switched to). thread_run_total: every slice up to its last
 * switch out, exact once it is off its CPU (or from the thread itself);
 * thread_run_time: that plus its current slice up to the TSC value now,
 * for a running thread, from itself or from its CPU with interrupts
 * disabled, now read there. Any context.
 */
static inline uint64_t
thread_run_total(const struct thread *thread)
{
    /* Relaxed: see thread_switch (the caller orders it by how it knows). */
    return __atomic_load_n(&thread->run_total, __ATOMIC_RELAXED);
}

static inline uint64_t
thread_run_time(const struct thread *thread, uint64_t now)
{
    return thread_run_total(thread)
           + (now - __atomic_load_n(&thread->run_start, __ATOMIC_RELAXED));
}

/* The CPU a thread runs on or last ran on. Any context. */
unsigned int thread_cpu(const struct thread *thread);

/*
 * The thread's identifier: 0 for the idle threads (as the idle task of
 * other kernels), else unique since boot, never reused. Any context.
 */
static inline uint32_t
thread_id(const struct thread *thread)
{
    return thread->id;
}

/*
 * The lowest address of the thread's stack (THREAD_STACK_SIZE bytes), or
 * NULL for an idle thread, which runs on its CPU's boot stack. Any
 * context.
 */
static inline void *
thread_stack(const struct thread *thread)
{
    return thread->stack;
}

/* The thread's name. Any context. */
static inline const char *
thread_name(const struct thread *thread)
{
    return thread->name;
}

/*
 * Find a live thread by name and return it with a reference, or NULL.
 * Thread context.
 */
struct thread *thread_lookup(const char *name);

/*
 * Find a live thread by its id (thread_id, as the perf dumps print it) and
 * return it with a reference, or NULL (also for 0: the idle threads are
 * not in the thread list). Thread context.
 */
struct thread *thread_lookup_id(uint32_t id);

/*
 * Call fn for every thread that has not been destroyed, under the thread
 * list lock (fn must not sleep or create threads). Thread context.
 */
void thread_for_each(void (*fn)(struct thread *thread, void *arg),
                     void *arg);

/* "running", "ready", "sleeping" or "dead". Any context. */
const char *thread_state_name(const struct thread *thread);

/* Time slice accounting. The tick interrupt, interrupts disabled. */
void thread_tick_intr(void);

/*
 * Number of thread structures alive (for leak checks in tests). Any
 * context.
 */
unsigned int thread_nr_alive(void);

/*
 * Set up the calling boot context as its CPU's first thread, which becomes
 * the idle thread. Boot processor: before anything takes a lock; APs:
 * first thing after their tables are loaded.
 */
void thread_bootstrap(void);

/*
 * Turn the calling boot context into its CPU's idle loop. Each CPU's boot
 * context, once, after thread_bootstrap().
 */
void thread_run_idle(void) __noreturn;

INIT_OP_DECLARE(thread_setup);

#endif /* KERN_THREAD_H */
