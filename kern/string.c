/*
 * Freestanding string functions.
 */
#include <stdint.h>

#include <kern/errno.h>
#include <kern/string.h>

void *
memcpy(void *dest, const void *src, size_t n)
{
    char *d = dest;
    const char *s = src;

    while (n-- != 0) {
        *d++ = *s++;
    }

    return dest;
}

void *
memmove(void *dest, const void *src, size_t n)
{
    char *d = dest;
    const char *s = src;

    if (d <= s || d >= s + n) {
        return memcpy(dest, src, n);
    }

    while (n-- != 0) {
        d[n] = s[n];
    }

    return dest;
}

void *
memset(void *s, int c, size_t n)
{
    unsigned char *p = s;

    while (n-- != 0) {
        *p++ = (unsigned char)c;
    }

    return s;
}

int
memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *p = a, *q = b;

    for (size_t i = 0; i < n; i++) {
        if (p[i] != q[i]) {
            return (int)p[i] - (int)q[i];
        }
    }

    return 0;
}

size_t
strlen(const char *s)
{
    size_t n = 0;

    while (s[n] != '\0') {
        n++;
    }

    return n;
}

int
strcmp(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }

    return (int)(unsigned char)*a - (int)(unsigned char)*b;
}

int
strncmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i] || a[i] == '\0') {
            return (int)(unsigned char)a[i] - (int)(unsigned char)b[i];
        }
    }

    return 0;
}

char *
strchr(const char *s, int c)
{
    for (;; s++) {
        if (*s == (char)c) {
            return (char *)s;
        }

        if (*s == '\0') {
            return NULL;
        }
    }
}

size_t
strlcpy(char *dest, const char *src, size_t size)
{
    size_t len = strlen(src);

    if (size != 0) {
        size_t n = (len < size) ? len : size - 1;

        memcpy(dest, src, n);
        dest[n] = '\0';
    }

    return len;
}

int
string_parse_u64(const char *s, unsigned long long *valuep)
{
    unsigned long long value = 0;
    unsigned int base = 10;

    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }

    if (*s == '\0') {
        return EINVAL;
    }

    for (; *s != '\0'; s++) {
        unsigned int digit;

        if (*s >= '0' && *s <= '9') {
            digit = *s - '0';
        } else if (base == 16 && *s >= 'a' && *s <= 'f') {
            digit = *s - 'a' + 10;
        } else if (base == 16 && *s >= 'A' && *s <= 'F') {
            digit = *s - 'A' + 10;
        } else {
            return EINVAL;
        }

        if (value > (UINT64_MAX - digit) / base) {
            return ERANGE;
        }

        value = value * base + digit;
    }

    *valuep = value;
    return 0;
}
