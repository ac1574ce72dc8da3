/*
 * Host shadow of arch/x86/machine/cpu.h for the session ring's stress
 * test: each host thread stands for a CPU (ring_env_cpu, set by the
 * thread itself), with its own interrupt flag; a signal delivered to the
 * thread stands for an NMI. The per-CPU bytes of perfmon_nmi.h are the
 * thread's own copy (ring_env_local), reached in one instruction each,
 * as the kernel's are, so that a signal sees each access whole. Only
 * what kern/perfmon/perfmon_session.c, kern/perfmon/perfmon_nmi.c and
 * their headers use is declared.
 */
#ifndef X86_CPU_H
#define X86_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/macros.h>

#define CPU_MAX                 64

#define CPU_RFLAGS_IF           (1UL << 9)

/* The CPU the calling thread stands for (ring_env.c). */
extern __thread unsigned int ring_env_cpu;

static inline unsigned int
cpu_id(void)
{
    return ring_env_cpu;
}

unsigned int cpu_count(void);

/* The calling thread's interrupt flag. */
bool cpu_intr_enabled(void);
unsigned long cpu_intr_save(void);
void cpu_intr_restore(unsigned long flags);

/* Where an NMI landed, and its handler's registration (never called). */
struct cpu_intr_site {
    uintptr_t ip;
    uintptr_t fp;
};

typedef void (*cpu_intr_fn_t)(const struct cpu_intr_site *site);

void cpu_nmi_register(cpu_intr_fn_t fn);

/* A time stamp, for perfmon's private headers (never read by the test). */
uint64_t cpu_get_tsc(void);

/* The calling thread's copy of a byte of a per-CPU variable. */
void *ring_env_local(const void *var);

/* One instruction each, and a compiler barrier, as the kernel's. */
static inline void
ring_env_inc8(void *byte)
{
    __asm__ volatile("incb %0" : "+m" (*(uint8_t *)byte) : : "memory");
}

static inline void
ring_env_dec8(void *byte)
{
    __asm__ volatile("decb %0" : "+m" (*(uint8_t *)byte) : : "memory");
}

static inline uint8_t
ring_env_read8(const void *byte)
{
    uint8_t value;

    __asm__ volatile("movb %1, %0" : "=q" (value)
                     : "m" (*(const uint8_t *)byte) : "memory");
    return value;
}

static inline void
ring_env_write8(void *byte, uint8_t value)
{
    __asm__ volatile("movb %1, %0" : "=m" (*(uint8_t *)byte)
                     : "q" (value) : "memory");
}

#define cpu_local_inc8(lval)        ring_env_inc8(ring_env_local(&(lval)))
#define cpu_local_dec8(lval)        ring_env_dec8(ring_env_local(&(lval)))
#define cpu_local_read8(lval)       ring_env_read8(ring_env_local(&(lval)))
#define cpu_local_write8(lval, value) \
    ring_env_write8(ring_env_local(&(lval)), (uint8_t)(value))

#endif /* X86_CPU_H */
