/*
 * The console as the kernel's commands see it: the serial line the shell
 * reads and writes, and the capture channel, a second output-only byte
 * channel to the host (QEMU's debugcon) for output a host tool reads
 * apart from the console's. Output to the console itself goes through
 * printf and the log (kern/printf.h, kern/log.h).
 */
#ifndef KERN_CONSOLE_H
#define KERN_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Remove the first byte equal to c from the console input that has
 * arrived and not been read yet: return whether there was one (the rest
 * stays for the shell, in order). Never waits. Shell thread only (the
 * console has one reader).
 */
bool console_take(char c);

/* Whether the capture channel is there. Any context. */
bool console_capture_present(void);

/*
 * Write len bytes to the capture channel (nothing happens without it).
 * Any context; callers serialize their own lines.
 */
void console_capture_write(const char *s, size_t len);

#endif /* KERN_CONSOLE_H */
