/*
 * The processors, as the machine-independent kernel and its clients (the
 * shell's perf tool) use them: CPU_MAX, cpu_count() and cpu_online(), the
 * time stamp counter (cpu_get_tsc, cpu_get_freq: its rate in Hz) and the
 * spin-wait hint cpu_pause(). Code outside arch/ includes this header for
 * those; the rest of machine/cpu.h (descriptor tables, MSRs, interrupt
 * stacks) is the machine's own.
 */
#ifndef KERN_CPU_H
#define KERN_CPU_H

#include <machine/cpu.h>

#endif /* KERN_CPU_H */
