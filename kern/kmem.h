/*
 * Kernel heap: objects of up to 2 KiB come from per-size caches carved out
 * of pages; larger ones are whole page blocks.
 */
#ifndef KERN_KMEM_H
#define KERN_KMEM_H

#include <stddef.h>

#include <kern/init.h>

/*
 * Allocate size bytes aligned on 16 bytes (on the power of two at or
 * above size, up to the page size). Return NULL when size is 0 or memory
 * is exhausted. Never sleeps. Thread or interrupt context, not an NMI
 * (asserted, cpu_in_nmi): each size class has a spinlock taken with
 * interrupts disabled, which an NMI landing while its CPU holds it would
 * wait on for good.
 */
void *kmem_alloc(size_t size);

/* Same, zero-filled. */
void *kmem_zalloc(size_t size);

/*
 * Free an object from kmem_alloc. NULL is ignored. Thread or interrupt
 * context, not an NMI (as kmem_alloc, asserted).
 */
void kmem_free(void *ptr);

INIT_OP_DECLARE(kmem_setup);

#endif /* KERN_KMEM_H */
