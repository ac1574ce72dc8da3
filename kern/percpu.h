/*
 * Per-CPU variables.
 *
 * A variable declared __percpu lives in the .percpu section, which is a
 * template: every CPU gets its own zero-filled copy of that section (CPU 0
 * uses the section itself), and its GS base points at its copy (its head,
 * struct cpu_head). Per-CPU variables must therefore be zero-initialized.
 * cpu_load_tables also sets the FS base to the copy's offset from the
 * template, so %fs:var is this CPU's copy of var: one instruction for a
 * per-CPU byte (machine/cpu.h: cpu_local_inc8, cpu_local_read8, ...).
 *
 * percpu_ptr(var, cpu) reaches any CPU's copy; cpu_local_ptr(var) reaches
 * the calling CPU's copy, which is only meaningful while the caller cannot
 * migrate (interrupts or preemption disabled).
 */
#ifndef KERN_PERCPU_H
#define KERN_PERCPU_H

#include <stdint.h>

#include <kern/macros.h>
#include <machine/cpu.h>

#define __percpu __section(".bss.percpu")

extern char percpu_start[];
extern char percpu_end[];

extern void *percpu_areas[CPU_MAX];

static inline uintptr_t
percpu_local_base(void)
{
    uintptr_t base;

    __asm__ volatile("movq %%gs:0, %0" : "=r"(base));
    return base;
}

#define percpu_offset(var)  ((uintptr_t)&(var) - (uintptr_t)percpu_start)

#define percpu_ptr(var, cpu) \
    ((__typeof__(&(var)))((uintptr_t)percpu_areas[cpu] + percpu_offset(var)))

#define cpu_local_ptr(var) \
    ((__typeof__(&(var)))(percpu_local_base() + percpu_offset(var)))

#define cpu_local_var(var)  (*cpu_local_ptr(var))

/*
 * Give a CPU its per-CPU area (zero-filled, with its head initialized).
 * Return 0 (also for CPU 0, whose area is the template), EINVAL for a CPU
 * at or past CPU_MAX, EEXIST for one that has its area (nothing changes),
 * or ENOMEM. Boot, thread context.
 */
int percpu_area_create(unsigned int cpu);

/* Return the size in bytes of one per-CPU area. */
static inline uintptr_t
percpu_size(void)
{
    return (uintptr_t)percpu_end - (uintptr_t)percpu_start;
}

#endif /* KERN_PERCPU_H */
