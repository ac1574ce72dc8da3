/*
 * Formatted output into buffers (vsnprintf) and onto the console (printf).
 *
 * Conversions: %d %i %u %x %X %o %c %s %p %%, with the flags '-' (left
 * justify) and '0' (zero pad), a field width (digits or '*'), a precision
 * for %s (digits or '*'), and the length modifiers hh h l ll z j t.
 * %s of NULL prints "(null)". %p prints 0x followed by 16 hex digits.
 * An unknown conversion is copied through verbatim.
 */
#ifndef KERN_PRINTF_H
#define KERN_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

#include <kern/macros.h>

/*
 * Format into buf, writing at most size bytes including the terminating
 * NUL (none when size is 0). Return the length the full output would have,
 * as C99 does. Any context.
 */
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...)
    __format_printf(3, 4);

/*
 * Format through buf (size bytes, at least 1), calling flush with each
 * full buffer and with the rest at the end: output of any length, in
 * pieces of at most size bytes. Return the length of the whole output.
 * Any context (flush's own).
 */
int vprintf_flush(char *buf, size_t size,
                  void (*flush)(void *arg, const char *s, size_t len),
                  void *arg, const char *fmt, va_list ap);

/*
 * Print to the console, whole, whatever its length. Output of one call is
 * never interleaved with the output of a call on another CPU. Any
 * context. Return the number of characters printed.
 */
int printf(const char *fmt, ...) __format_printf(1, 2);
int vprintf(const char *fmt, va_list ap);

#endif /* KERN_PRINTF_H */
