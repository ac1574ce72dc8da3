/*
 * Console output.
 */
#include <stdarg.h>
#include <stdbool.h>

#include <kern/log.h>
#include <kern/printf.h>
#include <kern/spinlock.h>
#include <machine/uart.h>

#define LOG_BUFSIZE 256

static struct spinlock log_lock = SPINLOCK_INITIALIZER;
static int log_level = LOG_INFO;
static volatile bool log_panic_mode;

static const char *const log_prefixes[] = {
    [LOG_EMERG] = "emerg: ",
    [1] = "alert: ",
    [2] = "crit: ",
    [LOG_ERR] = "error: ",
    [LOG_WARNING] = "warning: ",
    [LOG_NOTICE] = "",
    [LOG_INFO] = "",
    [LOG_DEBUG] = "debug: ",
};

static void
log_write_locked(const char *s, unsigned long len)
{
    for (unsigned long i = 0; i < len; i++) {
        if (s[i] == '\n') {
            uart_putc('\r');
        }

        uart_putc(s[i]);
    }
}

void
log_write(const char *s, unsigned long len)
{
    unsigned long flags;

    if (log_panic_mode) {
        log_write_locked(s, len);
        return;
    }

    spinlock_lock_intr_save(&log_lock, &flags);
    log_write_locked(s, len);
    spinlock_unlock_intr_restore(&log_lock, flags);
}

void
log_panic_takeover(void)
{
    log_panic_mode = true;
}

void
log_set_level(int level)
{
    log_level = level;
}

int
vprintf(const char *fmt, va_list ap)
{
    char buf[LOG_BUFSIZE];
    int n;

    n = vsnprintf(buf, sizeof(buf), fmt, ap);

    if (n >= (int)sizeof(buf)) {
        n = sizeof(buf) - 1;
    }

    log_write(buf, n);
    return n;
}

int
printf(const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vprintf(fmt, ap);
    va_end(ap);
    return n;
}

void
log_vmsg(int level, const char *fmt, va_list ap)
{
    char buf[LOG_BUFSIZE];
    int n;

    if (level > log_level || level < 0) {
        return;
    }

    n = snprintf(buf, sizeof(buf), "%s", log_prefixes[level]);
    n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);

    if (n > (int)sizeof(buf) - 2) {
        n = sizeof(buf) - 2;
    }

    buf[n++] = '\n';
    log_write(buf, n);
}

void
log_msg(int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}
