/*
 * Host shadow of kern/thread.h for the PMU tests: a thread is only what
 * perfmon uses of it. Tests play the scheduler with host_env_switch_in()
 * and host_env_switch_out().
 */
#ifndef KERN_THREAD_H
#define KERN_THREAD_H

#include <stdbool.h>

#include <kern/perfmon_types.h>

struct thread {
    struct perfmon_td perfmon_td;
    unsigned int refs;
    bool exited;
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

#endif /* KERN_THREAD_H */
