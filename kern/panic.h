/*
 * Fatal errors.
 */
#ifndef KERN_PANIC_H
#define KERN_PANIC_H

#include <kern/macros.h>

struct trap_frame;

/*
 * Print the message, the CPU, the registers and a symbolized backtrace,
 * stop the other CPUs, and end the run (QEMU exits with the panic status;
 * with panic=halt on the command line the CPU halts instead, for gdb).
 * Any context.
 */
void panic(const char *fmt, ...) __noreturn __format_printf(1, 2);

/* Same, reporting the registers of a trap frame. Trap handlers only. */
void panic_frame(const struct trap_frame *frame, const char *fmt, ...)
    __noreturn __format_printf(2, 3);

/* Print a backtrace starting at the given frame pointer. Any context. */
void panic_backtrace(const void *frame_pointer);

/* True once some CPU has panicked. */
extern volatile int panic_in_progress;

#endif /* KERN_PANIC_H */
