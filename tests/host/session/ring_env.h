/*
 * The kernel functions kern/perfmon/perfmon_session.c calls, on the host,
 * with threads for CPUs and a signal for the NMI (see model/machine/cpu.h),
 * and the NMI's rule of kern/perfmon_nmi.h played as the kernel does: an
 * NMI that lands in a marked section leaves its work to the section's
 * end (perfmon_nmi_run_deferred, defined here), one that lands outside
 * does it at once.
 */
#ifndef RING_ENV_H
#define RING_ENV_H

#include <stdbool.h>

/* CPUs cpu_count() says there are (before a session is created). */
void ring_env_set_nr_cpus(unsigned int nr_cpus);

/* Make the calling thread stand for cpu, interrupts enabled. */
void ring_env_set_cpu(unsigned int cpu);

/*
 * The overflow handling an NMI runs with no marked section open (at once
 * or at the section's end), with interrupts disabled: the test's.
 */
void ring_env_set_nmi_handler(void (*handle)(void));

/*
 * The NMI as perfmon_nmi_intr takes it, from the signal handler of the
 * thread it is delivered to: deferred when a section is open, else
 * handled (with the deferred work it finds, if it landed as a section
 * ended). Counts of what became of NMIs, per thread.
 */
void ring_env_nmi(void);
unsigned long ring_env_nr_nmis_deferred(void);

#endif /* RING_ENV_H */
