/*
 * Host shadow of kern/percpu.h for the PMU tests: with one CPU a per-CPU
 * variable is the variable itself. percpu_ptr() checks the CPU index.
 */
#ifndef KERN_PERCPU_H
#define KERN_PERCPU_H

#include <machine/cpu.h>

#define __percpu

/* Return 0 for CPU 0; panic for any other index. */
unsigned int host_env_percpu_offset(unsigned int cpu);

#define percpu_ptr(var, cpu)    (&(var) + host_env_percpu_offset(cpu))
#define cpu_local_ptr(var)      (&(var))
#define cpu_local_var(var)      (var)

#endif /* KERN_PERCPU_H */
