/*
 * Intrusive circular doubly-linked lists.
 */
#ifndef KERN_LIST_H
#define KERN_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include <kern/macros.h>

struct list {
    struct list *prev;
    struct list *next;
};

#define LIST_INITIALIZER(l) { &(l), &(l) }

static inline void
list_init(struct list *list)
{
    list->prev = list;
    list->next = list;
}

/* A node that is in no list points to itself; list_node_unlinked() tells. */
static inline void
list_node_init(struct list *node)
{
    list_init(node);
}

static inline bool
list_node_unlinked(const struct list *node)
{
    return node->next == node;
}

static inline bool
list_empty(const struct list *list)
{
    return list->next == list;
}

static inline struct list *
list_first(const struct list *list)
{
    return list->next;
}

static inline struct list *
list_last(const struct list *list)
{
    return list->prev;
}

static inline bool
list_end(const struct list *list, const struct list *node)
{
    return list == node;
}

static inline void
list_add_between(struct list *prev, struct list *next, struct list *node)
{
    node->prev = prev;
    node->next = next;
    prev->next = node;
    next->prev = node;
}

static inline void
list_insert_head(struct list *list, struct list *node)
{
    list_add_between(list, list->next, node);
}

static inline void
list_insert_tail(struct list *list, struct list *node)
{
    list_add_between(list->prev, list, node);
}

/* Insert node before pos. */
static inline void
list_insert_before(struct list *pos, struct list *node)
{
    list_add_between(pos->prev, pos, node);
}

static inline void
list_remove(struct list *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    list_node_init(node);
}

#define list_entry(node, type, member)  structof(node, type, member)

#define list_first_entry(list, type, member) \
    list_entry(list_first(list), type, member)

#define list_for_each(list, node) \
    for (node = list_first(list); !list_end(list, node); node = node->next)

#define list_for_each_safe(list, node, tmp)                     \
    for (node = list_first(list), tmp = node->next;             \
         !list_end(list, node);                                 \
         node = tmp, tmp = node->next)

#endif /* KERN_LIST_H */
