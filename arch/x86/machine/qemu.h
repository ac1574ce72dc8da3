/*
 * Leaving the machine: QEMU's isa-debug-exit device turns a write of v to
 * its port into QEMU's exit status (v << 1) | 1.
 */
#ifndef X86_QEMU_H
#define X86_QEMU_H

#define QEMU_EXIT_PASS      0   /* QEMU exits with 1 */
#define QEMU_EXIT_FAIL      1   /* QEMU exits with 3 */
#define QEMU_EXIT_PANIC     2   /* QEMU exits with 5 */

/*
 * Stop the machine with a status. Without the debug-exit device (not under
 * QEMU, or started without it) the calling CPU halts instead. Any context.
 */
void qemu_exit(unsigned int status) __attribute__((noreturn));

#endif /* X86_QEMU_H */
