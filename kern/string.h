/*
 * The freestanding subset of <string.h> the kernel needs. The compiler may
 * emit calls to memcpy/memset/memmove/memcmp itself, so they keep their
 * standard names. All may be called in any context.
 */
#ifndef KERN_STRING_H
#define KERN_STRING_H

#include <stddef.h>

void *memcpy(void *dest, const void *src, size_t n);
void *memmove(void *dest, const void *src, size_t n);
void *memset(void *s, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);

/*
 * Copy at most size - 1 characters of src into dest and terminate it.
 * Return strlen(src), so a result >= size means truncation.
 */
size_t strlcpy(char *dest, const char *src, size_t size);

/*
 * Parse an unsigned integer (decimal, or hexadecimal with 0x) that spans
 * the whole string. Return 0 on success, EINVAL on malformed input and
 * ERANGE on overflow; *valuep is only written on success.
 */
int string_parse_u64(const char *s, unsigned long long *valuep);

#endif /* KERN_STRING_H */
