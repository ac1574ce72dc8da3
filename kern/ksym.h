/*
 * The kernel's own function symbols, embedded at build time, for
 * backtraces.
 */
#ifndef KERN_KSYM_H
#define KERN_KSYM_H

#include <stdint.h>

/*
 * Return the name of the function containing addr and store the offset
 * into it, or return NULL when addr is outside the kernel text. Any
 * context.
 */
const char *ksym_lookup(uintptr_t addr, uintptr_t *offsetp);

/*
 * Find a function by name: store its address and its size (up to the
 * next symbol) and return 0, or return ENOENT. Any context.
 */
int ksym_find(const char *name, uintptr_t *addrp, uintptr_t *sizep);

#endif /* KERN_KSYM_H */
