/*
 * The kernel's own interrupt vectors: cross-CPU calls, reschedule
 * requests, the PMU's overflow interrupt and the software PMU's emulated
 * one. The arch owns the vectors and the EOI, and calls the core's entry
 * for each (xcall_intr, perfmon_pmi_intr, perfmon_pmu_soft_intr); the core
 * raises them through machine/cpu.h (cpu_send_xcall, ...), never through
 * the interrupt controller.
 */
#ifndef X86_IPI_H
#define X86_IPI_H

/* Install the handlers of the kernel's vectors. Boot, after trap_setup. */
void ipi_setup(void);

#endif /* X86_IPI_H */
