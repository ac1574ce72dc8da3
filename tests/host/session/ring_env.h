/*
 * The kernel functions kern/perfmon/perfmon_session.c calls, on the host,
 * with threads for CPUs and a signal for the NMI (see model/machine/cpu.h).
 * The NMI's rule of kern/perfmon_nmi.h is kern/perfmon/perfmon_nmi.c's
 * own, compiled in: an NMI that lands in a marked section leaves its work
 * to the section's end, one that lands outside does it at once; the
 * test's handling is its test hook.
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
 * The NMI, from the signal handler of the thread it is delivered to:
 * perfmon_nmi_intr, with interrupts off. The number of NMIs that landed
 * in a marked section (deferred), per thread.
 */
void ring_env_nmi(void);
unsigned long ring_env_nr_nmis_deferred(void);

#endif /* RING_ENV_H */
