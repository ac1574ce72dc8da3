/*
 * System counters: named 64-bit counters updated atomically, listed by the
 * shell's `syscnt` command.
 */
#ifndef KERN_SYSCNT_H
#define KERN_SYSCNT_H

#include <stdint.h>

#include <kern/init.h>
#include <kern/list.h>

#define SYSCNT_NAME_SIZE 40

struct syscnt {
    uint64_t value;
    struct list node;
    char name[SYSCNT_NAME_SIZE];
};

/*
 * Register a counter under a name ("perfmon_overflows/2"). The counter
 * must live as long as the kernel. Thread context or boot.
 */
void syscnt_register(struct syscnt *syscnt, const char *name);

static inline void
syscnt_add(struct syscnt *syscnt, uint64_t delta)
{
    __atomic_fetch_add(&syscnt->value, delta, __ATOMIC_RELAXED);
}

static inline void
syscnt_inc(struct syscnt *syscnt)
{
    syscnt_add(syscnt, 1);
}

static inline uint64_t
syscnt_read(const struct syscnt *syscnt)
{
    return __atomic_load_n(&syscnt->value, __ATOMIC_RELAXED);
}

/*
 * Find a registered counter by exact name; return 0 and its value, or
 * ENOENT. Any context.
 */
int syscnt_lookup(const char *name, uint64_t *valuep);

/*
 * Call fn for each registered counter whose name starts with prefix ("" for
 * all), in registration order, under the registry lock. Any context.
 */
void syscnt_for_each(const char *prefix,
                     void (*fn)(const struct syscnt *syscnt, void *arg),
                     void *arg);

INIT_OP_DECLARE(syscnt_setup);

#endif /* KERN_SYSCNT_H */
