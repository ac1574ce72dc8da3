/*
 * What the register models (pmu_model.c, pmu_model_count.c,
 * pmu_model_amd.c) take from their environment, the one difference
 * between their two builds: the host tests (tests/host/pmu/, a hosted
 * compiler, one modelled CPU) and the model kernel (pmu_model_kern.c,
 * freestanding, one modelled PMU per CPU). __STDC_HOSTED__ tells them
 * apart, so neither build needs a flag of its own.
 *
 * MODEL_PERCPU marks a model's state; MODEL_LOCAL(var) is the calling
 * CPU's copy of it: the kernel's per-CPU variable, which the model kernel
 * reaches with interrupts disabled (pmu_model_kern.c's entries).
 */
#ifndef PMU_MODEL_ENV_H
#define PMU_MODEL_ENV_H

#include <kern/macros.h>

#if __STDC_HOSTED__

#include <stdio.h>
#include <string.h>

#define MODEL_PERCPU
#define MODEL_LOCAL(var)    (&(var))

#else /* __STDC_HOSTED__ */

#include <kern/percpu.h>
#include <kern/printf.h>
#include <kern/string.h>

#define MODEL_PERCPU        __percpu
#define MODEL_LOCAL(var)    cpu_local_ptr(var)

#endif /* __STDC_HOSTED__ */

#endif /* PMU_MODEL_ENV_H */
