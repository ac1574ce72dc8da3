/*
 * Console output.
 *
 * A call's output is formatted through a small stack buffer and written
 * out each time it fills, all under the console lock: no message is cut
 * at the buffer's size, and none is interleaved with another CPU's.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <kern/log.h>
#include <kern/printf.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <machine/uart.h>

#define LOG_BUFSIZE 128

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

/* vprintf_flush's flush: the console lock is held (or a panic owns it). */
static void
log_flush_locked(void *arg, const char *s, size_t len)
{
    (void)arg;
    log_write_locked(s, len);
}

/*
 * Take the console, unless a panic took it over; return whether the lock
 * was taken, so that a takeover meanwhile does not skip the unlock.
 */
static bool
log_lock_console(unsigned long *flagsp)
{
    if (log_panic_mode) {
        return false;
    }

    spinlock_lock_intr_save(&log_lock, flagsp);
    return true;
}

static void
log_unlock_console(bool locked, unsigned long flags)
{
    if (locked) {
        spinlock_unlock_intr_restore(&log_lock, flags);
    }
}

void
log_write(const char *s, unsigned long len)
{
    unsigned long flags = 0;
    bool locked;

    locked = log_lock_console(&flags);
    log_write_locked(s, len);
    log_unlock_console(locked, flags);
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
    unsigned long flags = 0;
    bool locked;
    int n;

    locked = log_lock_console(&flags);
    n = vprintf_flush(buf, sizeof(buf), log_flush_locked, NULL, fmt, ap);
    log_unlock_console(locked, flags);
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
    const char *prefix;
    char buf[LOG_BUFSIZE];
    unsigned long flags = 0;
    bool locked;

    if (level > log_level || level < 0) {
        return;
    }

    prefix = log_prefixes[level];
    locked = log_lock_console(&flags);
    log_write_locked(prefix, strlen(prefix));
    vprintf_flush(buf, sizeof(buf), log_flush_locked, NULL, fmt, ap);
    log_write_locked("\n", 1);
    log_unlock_console(locked, flags);
}

void
log_msg(int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}
