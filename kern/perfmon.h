/*
 * perfmon: performance monitoring. The scheduler hooks are no-ops until
 * the perfmon core lands.
 */
#ifndef KERN_PERFMON_H
#define KERN_PERFMON_H

#include <stdbool.h>

#include <kern/perfmon_types.h>

struct thread;

static inline void
perfmon_td_init(struct perfmon_td *td)
{
    (void)td;
}

static inline bool
perfmon_td_unused(const struct perfmon_td *td)
{
    (void)td;
    return true;
}

static inline void
perfmon_td_load(struct thread *thread)
{
    (void)thread;
}

static inline void
perfmon_td_unload(struct thread *thread)
{
    (void)thread;
}

#endif /* KERN_PERFMON_H */
