/*
 * Host shadow of kern/percpu.h for the session ring's stress test: a
 * per-CPU variable's copy is the calling thread's (machine/cpu.h).
 */
#ifndef KERN_PERCPU_H
#define KERN_PERCPU_H

#include <machine/cpu.h>

#define __percpu

#define cpu_local_ptr(var)  ((__typeof__(&(var)))ring_env_local(&(var)))

#endif /* KERN_PERCPU_H */
