/*
 * System counter registry.
 */
#include <stdint.h>

#include <kern/errno.h>
#include <kern/init.h>
#include <kern/list.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/syscnt.h>

static struct spinlock syscnt_lock = SPINLOCK_INITIALIZER;
static struct list syscnt_list = LIST_INITIALIZER(syscnt_list);

void
syscnt_register(struct syscnt *syscnt, const char *name)
{
    unsigned long flags;

    syscnt->value = 0;
    strlcpy(syscnt->name, name, sizeof(syscnt->name));
    spinlock_lock_intr_save(&syscnt_lock, &flags);
    list_insert_tail(&syscnt_list, &syscnt->node);
    spinlock_unlock_intr_restore(&syscnt_lock, flags);
}

int
syscnt_lookup(const char *name, uint64_t *valuep)
{
    unsigned long flags;
    struct list *node;
    int error = ENOENT;

    spinlock_lock_intr_save(&syscnt_lock, &flags);

    list_for_each(&syscnt_list, node) {
        struct syscnt *syscnt = list_entry(node, struct syscnt, node);

        if (strcmp(syscnt->name, name) == 0) {
            *valuep = syscnt_read(syscnt);
            error = 0;
            break;
        }
    }

    spinlock_unlock_intr_restore(&syscnt_lock, flags);
    return error;
}

void
syscnt_for_each(const char *prefix,
                void (*fn)(const struct syscnt *syscnt, void *arg), void *arg)
{
    size_t len = strlen(prefix);
    unsigned long flags;
    struct list *node;

    spinlock_lock_intr_save(&syscnt_lock, &flags);

    list_for_each(&syscnt_list, node) {
        struct syscnt *syscnt = list_entry(node, struct syscnt, node);

        if (strncmp(syscnt->name, prefix, len) == 0) {
            fn(syscnt, arg);
        }
    }

    spinlock_unlock_intr_restore(&syscnt_lock, flags);
}

static int
syscnt_setup(void)
{
    return 0;
}

INIT_OP_DEFINE(syscnt_setup);
