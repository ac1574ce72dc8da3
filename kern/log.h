/*
 * Console output and log levels.
 *
 * Messages at a level above the current one (loglevel=N on the command
 * line, default LOG_INFO) are dropped. Every function here may be called
 * in any context; output of one call is never interleaved with another's.
 */
#ifndef KERN_LOG_H
#define KERN_LOG_H

#include <stdarg.h>

#include <kern/macros.h>

#define LOG_EMERG   0
#define LOG_ERR     3
#define LOG_WARNING 4
#define LOG_NOTICE  5
#define LOG_INFO    6
#define LOG_DEBUG   7

void log_msg(int level, const char *fmt, ...) __format_printf(2, 3);
void log_vmsg(int level, const char *fmt, va_list ap);

#define log_err(...)        log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...)    log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)     log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)       log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)      log_msg(LOG_DEBUG, __VA_ARGS__)

/* Set the level above which messages are dropped. */
void log_set_level(int level);

/*
 * Write raw bytes to the console under the console lock. Used by printf
 * and by the shell's line editor.
 */
void log_write(const char *s, unsigned long len);

/*
 * Take the console for a panic: from now on output bypasses the lock, so
 * a CPU that died holding it cannot silence the panic message.
 */
void log_panic_takeover(void);

#endif /* KERN_LOG_H */
