/*
 * Formatting core. Pure code, also compiled into the host unit tests.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/printf.h>

/*
 * Where formatted characters go: into buf, cut at size (vsnprintf), or,
 * with flush set, through buf in chunks of size bytes (vprintf_flush).
 */
struct printf_out {
    char *buf;
    size_t size;
    size_t len;     /* length of the full output so far */
    size_t pos;     /* bytes of buf not yet flushed (flush only) */
    void (*flush)(void *arg, const char *s, size_t len);
    void *arg;
};

static void
printf_putc(struct printf_out *out, char c)
{
    if (out->flush != NULL) {
        out->buf[out->pos++] = c;

        if (out->pos == out->size) {
            out->flush(out->arg, out->buf, out->pos);
            out->pos = 0;
        }
    } else if (out->len + 1 < out->size) {
        out->buf[out->len] = c;
    }

    out->len++;
}

static void
printf_pad(struct printf_out *out, char c, int n)
{
    while (n-- > 0) {
        printf_putc(out, c);
    }
}

/*
 * Emit a field made of a sign/prefix, digits and padding. Zero padding
 * goes between the prefix and the digits; it is ignored when left
 * justifying, as in C.
 */
static void
printf_field(struct printf_out *out, const char *prefix, const char *body,
             int body_len, int width, bool left, bool zero)
{
    int prefix_len = 0;
    int pad;

    while (prefix[prefix_len] != '\0') {
        prefix_len++;
    }

    pad = width - prefix_len - body_len;

    if (!left && !zero) {
        printf_pad(out, ' ', pad);
    }

    for (int i = 0; i < prefix_len; i++) {
        printf_putc(out, prefix[i]);
    }

    if (!left && zero) {
        printf_pad(out, '0', pad);
    }

    for (int i = 0; i < body_len; i++) {
        printf_putc(out, body[i]);
    }

    if (left) {
        printf_pad(out, ' ', pad);
    }
}

/* Write the digits of value in base into the end of tmp; return the start. */
static char *
printf_digits(char *end, unsigned long long value, unsigned int base,
              bool upper)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char *p = end;

    do {
        *--p = digits[value % base];
        value /= base;
    } while (value != 0);

    return p;
}

enum printf_len {
    PRINTF_LEN_INT,
    PRINTF_LEN_CHAR,
    PRINTF_LEN_SHORT,
    PRINTF_LEN_LONG,
    PRINTF_LEN_LLONG,
    PRINTF_LEN_SIZE,
};

static unsigned long long
printf_arg_unsigned(va_list *ap, enum printf_len len)
{
    switch (len) {
    case PRINTF_LEN_CHAR:
        return (unsigned char)va_arg(*ap, unsigned int);
    case PRINTF_LEN_SHORT:
        return (unsigned short)va_arg(*ap, unsigned int);
    case PRINTF_LEN_LONG:
        return va_arg(*ap, unsigned long);
    case PRINTF_LEN_LLONG:
        return va_arg(*ap, unsigned long long);
    case PRINTF_LEN_SIZE:
        return va_arg(*ap, size_t);
    default:
        return va_arg(*ap, unsigned int);
    }
}

static long long
printf_arg_signed(va_list *ap, enum printf_len len)
{
    switch (len) {
    case PRINTF_LEN_CHAR:
        return (signed char)va_arg(*ap, int);
    case PRINTF_LEN_SHORT:
        return (short)va_arg(*ap, int);
    case PRINTF_LEN_LONG:
        return va_arg(*ap, long);
    case PRINTF_LEN_LLONG:
        return va_arg(*ap, long long);
    case PRINTF_LEN_SIZE:
        return (long long)va_arg(*ap, size_t);
    default:
        return va_arg(*ap, int);
    }
}

static void
printf_format(struct printf_out *out, const char *fmt, va_list ap_in)
{
    char tmp[24];   /* 22 octal digits of a 64-bit value, plus slack */
    char *end = tmp + sizeof(tmp);
    va_list ap;

    va_copy(ap, ap_in);

    for (const char *p = fmt; *p != '\0'; p++) {
        const char *spec = p;
        bool left = false, zero = false;
        int width = 0, precision = -1;
        enum printf_len len = PRINTF_LEN_INT;
        unsigned long long u;
        const char *s;
        char *digits;

        if (*p != '%') {
            printf_putc(out, *p);
            continue;
        }

        p++;

        for (;; p++) {
            if (*p == '-') {
                left = true;
            } else if (*p == '0') {
                zero = true;
            } else {
                break;
            }
        }

        if (*p == '*') {
            width = va_arg(ap, int);

            if (width < 0) {
                left = true;
                width = -width;
            }

            p++;
        } else {
            while (*p >= '0' && *p <= '9') {
                width = width * 10 + (*p - '0');
                p++;
            }
        }

        if (*p == '.') {
            p++;
            precision = 0;

            if (*p == '*') {
                precision = va_arg(ap, int);
                p++;
            } else {
                while (*p >= '0' && *p <= '9') {
                    precision = precision * 10 + (*p - '0');
                    p++;
                }
            }
        }

        switch (*p) {
        case 'h':
            len = (p[1] == 'h') ? PRINTF_LEN_CHAR : PRINTF_LEN_SHORT;
            p += (p[1] == 'h') ? 2 : 1;
            break;
        case 'l':
            len = (p[1] == 'l') ? PRINTF_LEN_LLONG : PRINTF_LEN_LONG;
            p += (p[1] == 'l') ? 2 : 1;
            break;
        case 'j':
            len = PRINTF_LEN_LLONG;
            p++;
            break;
        case 'z':
        case 't':
            len = PRINTF_LEN_SIZE;
            p++;
            break;
        }

        switch (*p) {
        case 'd':
        case 'i': {
            long long v = printf_arg_signed(&ap, len);

            /* Negate in unsigned arithmetic so INT64_MIN is safe. */
            u = (v < 0) ? -(unsigned long long)v : (unsigned long long)v;
            digits = printf_digits(end, u, 10, false);
            printf_field(out, (v < 0) ? "-" : "", digits,
                         (int)(end - digits), width, left, zero);
            break;
        }
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            unsigned int base = (*p == 'u') ? 10 : (*p == 'o') ? 8 : 16;

            u = printf_arg_unsigned(&ap, len);
            digits = printf_digits(end, u, base, *p == 'X');
            printf_field(out, "", digits, (int)(end - digits), width,
                         left, zero);
            break;
        }
        case 'p': {
            u = (uintptr_t)va_arg(ap, void *);
            digits = printf_digits(end, u, 16, false);

            while (end - digits < 16) {
                *--digits = '0';
            }

            printf_field(out, "0x", digits, 16, width, left, false);
            break;
        }
        case 'c':
            tmp[0] = (char)va_arg(ap, int);
            printf_field(out, "", tmp, 1, width, left, false);
            break;
        case 's': {
            int n = 0;

            s = va_arg(ap, const char *);

            if (s == NULL) {
                s = "(null)";
            }

            while (s[n] != '\0' && (precision < 0 || n < precision)) {
                n++;
            }

            printf_field(out, "", s, n, width, left, false);
            break;
        }
        case '%':
            printf_putc(out, '%');
            break;
        default:
            /* Unknown or truncated conversion: copy it through. */
            for (; spec <= p && *spec != '\0'; spec++) {
                printf_putc(out, *spec);
            }

            if (*p == '\0') {
                p--;
            }

            break;
        }
    }

    va_end(ap);
}

int
vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct printf_out out = { .buf = buf, .size = size };

    printf_format(&out, fmt, ap);

    if (out.size != 0) {
        out.buf[(out.len < out.size) ? out.len : out.size - 1] = '\0';
    }

    return (out.len > INT32_MAX) ? INT32_MAX : (int)out.len;
}

int
vprintf_flush(char *buf, size_t size,
              void (*flush)(void *arg, const char *s, size_t len), void *arg,
              const char *fmt, va_list ap)
{
    struct printf_out out = {
        .buf = buf, .size = size, .flush = flush, .arg = arg,
    };

    printf_format(&out, fmt, ap);

    if (out.pos != 0) {
        flush(arg, buf, out.pos);
    }

    return (out.len > INT32_MAX) ? INT32_MAX : (int)out.len;
}

int
snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}
