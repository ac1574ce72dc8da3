/*
 * Host shadow of arch/x86/machine/cpu.h for the PMU tests: one CPU, index
 * 0. The interrupt flag lives in the host environment (host_env.c), CPUID
 * and MSRs in the PMU model (pmu_model.c), safe accessors included. Only
 * what perfmon and the Intel PMU driver use is declared.
 */
#ifndef X86_CPU_H
#define X86_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/macros.h>

#define CPU_MAX                 64

#define CPU_RFLAGS_IF           (1UL << 9)

#define CPU_CPUID1_ECX_PDCM     (1U << 15)

void cpu_intr_enable(void);
void cpu_intr_disable(void);
bool cpu_intr_enabled(void);

/* Disable interrupts and return the previous flags for cpu_intr_restore. */
unsigned long cpu_intr_save(void);
void cpu_intr_restore(unsigned long flags);

static inline void
cpu_pause(void)
{
}

void cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax, uint32_t *ebx,
               uint32_t *ecx, uint32_t *edx);
uint64_t cpu_get_msr(uint32_t msr);
void cpu_set_msr(uint32_t msr, uint64_t value);

/*
 * As the kernel's: a #GP (the model's fault) returns EIO instead of being
 * an unhandled fault, and a failed read stores 0.
 */
int cpu_get_msr_safe(uint32_t msr, uint64_t *valuep);
int cpu_set_msr_safe(uint32_t msr, uint64_t value);

static inline unsigned int
cpu_id(void)
{
    return 0;
}

unsigned int cpu_count(void);

/*
 * A byte of the calling CPU's copy of a per-CPU variable, as the kernel's:
 * with one CPU, the variable itself.
 */
#define cpu_local_inc8(lval)            ((void)(lval)++)
#define cpu_local_dec8(lval)            ((void)(lval)--)
#define cpu_local_read8(lval)           ((uint8_t)(lval))
#define cpu_local_write8(lval, value)   ((void)((lval) = (uint8_t)(value)))

/* Where an interrupt landed, and the handlers' registration (host_env.c). */
struct cpu_intr_site {
    uintptr_t ip;
    uintptr_t fp;
};

typedef void (*cpu_intr_fn_t)(const struct cpu_intr_site *site);

void cpu_pmi_register(cpu_intr_fn_t fn);
void cpu_pmu_soft_register(cpu_intr_fn_t fn);
void cpu_nmi_register(cpu_intr_fn_t fn);

/* perfmon's request from an NMI: never made on the host (no NMI mode). */
void cpu_send_self_pmu_soft_from_nmi(void);
bool cpu_online(unsigned int cpu);

/*
 * A time stamp: the host clock's ticks, times 1000, plus reads so far;
 * or, once a test holds it (host_env_tsc_hold), what the test set.
 */
uint64_t cpu_get_tsc(void);
uint64_t cpu_get_freq(void);

#endif /* X86_CPU_H */
