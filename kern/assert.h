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

/*
 * An assertion whose message carries the values that broke it:
 * assert_msg(n <= max, "n %u max %u", n, max).
 */
#define assert_msg(expr, fmt, ...)                                      \
    do {                                                                \
        if (unlikely(!(expr))) {                                        \
            panic("assertion (%s) failed in %s:%d, function %s(): " fmt, \
                  #expr, __FILE__, __LINE__, __func__, ##__VA_ARGS__);  \
        }                                                               \
    } while (0)

/*
 * A calling-context rule: the caller has interrupts disabled. The file
 * that uses it includes machine/cpu.h (cpu_intr_enabled), which this
 * header does not, to stay free of the machine's headers.
 */
#define assert_intr_disabled()                                          \
    assert_msg(!cpu_intr_enabled(), "interrupts enabled")

#endif /* KERN_ASSERT_H */
