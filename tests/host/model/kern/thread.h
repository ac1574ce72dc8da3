/*
 * Host shadow of kern/thread.h for the PMU tests: a thread is only what
 * perfmon uses of it. Tests play the scheduler with host_env_switch_in()
 * and host_env_switch_out().
 */
#ifndef KERN_THREAD_H
#define KERN_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <kern/perfmon_types.h>

#define THREAD_STACK_SIZE   16384
#define THREAD_PRIO_MAX     7

struct spinlock;

struct thread_attr {
    const char *name;
    unsigned int priority;
    uint64_t affinity;
};

struct thread {
    struct perfmon_td perfmon_td;
    unsigned int refs;
    bool exited;
    uint32_t id;
    void *stack;        /* NULL: samples carry no call chain */
    uint64_t run_total; /* time on a CPU: the host has no scheduler */
};

void thread_ref(struct thread *thread);

/* The thread the host environment last switched in. */
struct thread *thread_self(void);

static inline bool
thread_exited(const struct thread *thread)
{
    return __atomic_load_n(&thread->exited, __ATOMIC_RELAXED);
}

static inline struct perfmon_td *
thread_perfmon_td(struct thread *thread)
{
    return &thread->perfmon_td;
}
void thread_unref(struct thread *thread);

/* Sleep: on the host, the clock moves on by ticks (host_env_advance). */
void thread_delay(uint64_t ticks);

/*
 * perfmon's rotation thread: the host runs no threads, so creating one
 * only records it; tests rotate with perfmon_mux_rotate(). Sleeping is
 * never reached, a wakeup does nothing.
 */
int thread_create(struct thread **threadp, const struct thread_attr *attr,
                  void (*fn)(void *arg), void *arg);
void thread_sleep(struct spinlock *interlock, unsigned long flags);
void thread_wakeup(struct thread *thread);

/* A host thread's run time is what a test set in run_total. */
static inline uint64_t
thread_run_total(const struct thread *thread)
{
    return thread->run_total;
}

static inline uint64_t
thread_run_time(const struct thread *thread, uint64_t now)
{
    (void)now;
    return thread->run_total;
}

static inline uint32_t
thread_id(const struct thread *thread)
{
    return thread->id;
}

static inline void *
thread_stack(const struct thread *thread)
{
    return thread->stack;
}

INIT_OP_DECLARE(thread_setup);

#endif /* KERN_THREAD_H */
