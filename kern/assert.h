/*
 * Assertions of internal invariants. A failed assertion panics: it means a
 * kernel bug, never bad input (bad input returns an error code).
 */
#ifndef KERN_ASSERT_H
#define KERN_ASSERT_H

#include <kern/macros.h>
#include <kern/panic.h>

#define assert(expr)                                                    \
    do {                                                                \
        if (unlikely(!(expr))) {                                        \
            panic("assertion (%s) failed in %s:%d, function %s()",      \
                  #expr, __FILE__, __LINE__, __func__);                 \
        }                                                               \
    } while (0)

#endif /* KERN_ASSERT_H */
