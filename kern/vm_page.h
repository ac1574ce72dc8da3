/*
 * Physical page allocator over the memory the boot loader reported free,
 * handing out blocks of 2^order contiguous pages, reached through the
 * direct mapping of physical memory.
 */
#ifndef KERN_VM_PAGE_H
#define KERN_VM_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include <kern/init.h>

#define VM_PAGE_SIZE        4096
#define VM_PAGE_SHIFT       12
#define VM_PAGE_ORDER_MAX   10      /* 4 MiB blocks at most */

/* Per-page descriptor, used by kmem to find an object's size class. */
struct vm_page {
    uint8_t kmem_class;
    uint8_t order;
};

/*
 * Allocate 2^order contiguous pages aligned on their size. Return their
 * direct-mapped address, or NULL when no such block is free or order is
 * above VM_PAGE_ORDER_MAX. Any context (never sleeps).
 */
void *vm_page_alloc(unsigned int order);

/*
 * Free a block from vm_page_alloc with the same order. Any context.
 */
void vm_page_free(void *addr, unsigned int order);

/* Return the descriptor of the page holding addr. Any context. */
struct vm_page *vm_page_lookup(const void *addr);

/* Return the number of free pages. Any context. */
size_t vm_page_nr_free(void);

INIT_OP_DECLARE(vm_page_setup);

#endif /* KERN_VM_PAGE_H */
