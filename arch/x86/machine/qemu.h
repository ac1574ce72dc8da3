/*
 * Leaving the machine: QEMU's isa-debug-exit device turns a write of v to
 * its port into QEMU's exit status (v << 1) | 1.
 */
#ifndef X86_QEMU_H
#define X86_QEMU_H

#include <stdbool.h>
#include <stddef.h>

#define QEMU_EXIT_PASS      0   /* QEMU exits with 1 */
#define QEMU_EXIT_FAIL      1   /* QEMU exits with 3 */
#define QEMU_EXIT_PANIC     2   /* QEMU exits with 5 */

/*
 * Stop the machine with a status. Without the debug-exit device (not under
 * QEMU, or started without it) the calling CPU halts instead. Any context.
 */
void qemu_exit(unsigned int status) __attribute__((noreturn));

/*
 * QEMU's debug console (-debugcon file:PATH, port 0xe9): an output-only
 * byte channel to a host file, apart from the serial console, which
 * perf script --capture writes its dump to. Whether it is there: a read
 * of its port returns 0xe9 (QEMU's answer), 0xff without it. Any context.
 */
bool qemu_debugcon_present(void);

/*
 * Write len bytes to the debug console (nothing happens without it). Any
 * context; callers serialize their own lines.
 */
void qemu_debugcon_write(const char *s, size_t len);

#endif /* X86_QEMU_H */
