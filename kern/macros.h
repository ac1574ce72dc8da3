/*
 * Small helpers shared by every module.
 */
#ifndef KERN_MACROS_H
#define KERN_MACROS_H

#define ARRAY_SIZE(a)       (sizeof(a) / sizeof((a)[0]))

#define P2ALIGN(x, a)       ((x) & -(a))
#define P2ROUND(x, a)       (-(-(x) & -(a)))
#define DIV_CEIL(n, d)      (((n) + (d) - 1) / (d))

#define MIN(a, b)           ((a) < (b) ? (a) : (b))
#define MAX(a, b)           ((a) > (b) ? (a) : (b))

#define STRINGIFY_(x)       #x
#define STRINGIFY(x)        STRINGIFY_(x)

#define likely(expr)        __builtin_expect(!!(expr), 1)
#define unlikely(expr)      __builtin_expect(!!(expr), 0)

#define __unused            __attribute__((unused))
#define __used              __attribute__((used))
#define __noreturn          __attribute__((noreturn))
#define __aligned(x)        __attribute__((aligned(x)))
#define __packed            __attribute__((packed))
#define __section(s)        __attribute__((section(s)))
#define __format_printf(fmt, args) \
    __attribute__((format(printf, fmt, args)))

#define barrier()           __asm__ volatile("" : : : "memory")

#define READ_ONCE(x)        (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)    (*(volatile __typeof__(x) *)&(x) = (v))

#define structof(ptr, type, member) \
    ((type *)((char *)(ptr) - __builtin_offsetof(type, member)))

#endif /* KERN_MACROS_H */
