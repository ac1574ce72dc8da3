/*
 * perfmon state embedded in other structures (struct thread), split from
 * kern/perfmon.h because kern/thread.h needs it and perfmon.h needs
 * struct thread.
 */
#ifndef KERN_PERFMON_TYPES_H
#define KERN_PERFMON_TYPES_H

struct perfmon_td {
    int unused;
};

#endif /* KERN_PERFMON_TYPES_H */
