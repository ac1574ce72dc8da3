/*
 * The kernel's own interrupt vectors: cross-CPU calls, reschedule
 * requests, the PMU's overflow interrupt and the software PMU's emulated
 * one; and the NMI. The arch owns the vectors and the EOI, and calls the
 * core's entry for each: xcall_intr, and for the PMU's interrupts and the
 * NMI the handlers the core registers through machine/cpu.h
 * (cpu_pmi_register, ...); the core raises them through machine/cpu.h
 * too (cpu_send_xcall, ...), never through the interrupt controller.
 */
#ifndef X86_IPI_H
#define X86_IPI_H

/* Install the handlers of the kernel's vectors. Boot, after trap_setup. */
void ipi_setup(void);

#endif /* X86_IPI_H */
