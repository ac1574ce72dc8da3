/*
 * Host kernel environment of the session ring's stress test (ring_env.h).
 */
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kern/clock.h>
#include <kern/kmem.h>
#include <kern/panic.h>
#include <kern/perfmon_nmi.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "ring_env.h"

__thread unsigned int ring_env_cpu;

/* Each thread's interrupt flag; the signal handler saves and restores it. */
static __thread bool ring_env_intr = true;

static unsigned int ring_env_nr_cpus = 1;
static void (*ring_env_handle)(void);

/* The name of the per-CPU variable; each thread uses its own copy. */
struct perfmon_nmi_cpu perfmon_nmi_cpu;
static __thread struct perfmon_nmi_cpu ring_env_nmi_cpu;
static __thread unsigned long ring_env_deferred;

void
panic(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "panic: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

void *
ring_env_local(const void *var)
{
    uintptr_t offset = (uintptr_t)var - (uintptr_t)&perfmon_nmi_cpu;

    if (offset >= sizeof(perfmon_nmi_cpu)) {
        panic("ring_env: %p is no per-CPU variable of the test", var);
    }

    return (char *)&ring_env_nmi_cpu + offset;
}

void
ring_env_set_nr_cpus(unsigned int nr_cpus)
{
    ring_env_nr_cpus = nr_cpus;
}

unsigned int
cpu_count(void)
{
    return ring_env_nr_cpus;
}

void
ring_env_set_cpu(unsigned int cpu)
{
    ring_env_cpu = cpu;
    ring_env_intr = true;
}

bool
cpu_intr_enabled(void)
{
    return ring_env_intr;
}

unsigned long
cpu_intr_save(void)
{
    unsigned long flags = ring_env_intr ? CPU_RFLAGS_IF : 0;

    ring_env_intr = false;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return flags;
}

void
cpu_intr_restore(unsigned long flags)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);

    if (flags & CPU_RFLAGS_IF) {
        ring_env_intr = true;
    }
}

/* Sessions are aligned on their cache lines, as kmem's are. */
void *
kmem_alloc(size_t size)
{
    return aligned_alloc(64, (size + 63) & ~(size_t)63);
}

void *
kmem_zalloc(size_t size)
{
    void *ptr = kmem_alloc(size);

    if (ptr != NULL) {
        memset(ptr, 0, size);
    }

    return ptr;
}

void
kmem_free(void *ptr)
{
    free(ptr);
}

static uint64_t ring_env_ticks;

uint64_t
clock_get_time(void)
{
    return __atomic_load_n(&ring_env_ticks, __ATOMIC_RELAXED);
}

void
thread_delay(uint64_t ticks)
{
    __atomic_fetch_add(&ring_env_ticks, ticks, __ATOMIC_RELAXED);
    sched_yield();
}

void
ring_env_set_nmi_handler(void (*handle)(void))
{
    ring_env_handle = handle;
}

unsigned long
ring_env_nr_nmis_deferred(void)
{
    return ring_env_deferred;
}

static void
ring_env_handle_nmi(void)
{
    bool intr = ring_env_intr;

    ring_env_intr = false;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ring_env_handle();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ring_env_intr = intr;
}

/* As perfmon_nmi_intr: the place it landed is not kept (no samples). */
void
ring_env_nmi(void)
{
    if (perfmon_nmi_nest() != 0) {
        ring_env_deferred++;
        perfmon_nmi_set_deferred(true);
        return;
    }

    if (perfmon_nmi_deferred()) {
        perfmon_nmi_set_deferred(false);
    }

    ring_env_handle_nmi();
}

/* As the kernel's: the section count raised while the work runs. */
void
perfmon_nmi_run_deferred(void)
{
    struct perfmon_nmi_cpu *nmi = cpu_local_ptr(perfmon_nmi_cpu);

    if (cpu_intr_enabled()) {
        panic("ring_env: a section ended with interrupts enabled");
    }

    if (nmi->in_deferred) {
        return;
    }

    do {
        nmi->in_deferred = 1;
        barrier();

        do {
            perfmon_nmi_set_nest(1);

            while (perfmon_nmi_deferred()) {
                perfmon_nmi_set_deferred(false);
                ring_env_handle_nmi();
            }

            perfmon_nmi_set_nest(0);
        } while (perfmon_nmi_deferred());

        barrier();
        nmi->in_deferred = 0;
        barrier();
    } while (perfmon_nmi_deferred() && (perfmon_nmi_nest() == 0));
}
