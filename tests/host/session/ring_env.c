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

#include <kern/arg.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "ring_env.h"

__thread unsigned int ring_env_cpu;

/* Each thread's interrupt flag; the signal handler saves and restores it. */
static __thread bool ring_env_intr = true;

static unsigned int ring_env_nr_cpus = 1;
static void (*ring_env_handle)(void);

/* perfmon_nmi.c's per-CPU variable: each thread uses its own copy. */
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

/* The test's handling, as perfmon_nmi.c's test hook calls it. */
static void
ring_env_hook(const struct perfmon_intr_ctx *ctx)
{
    (void)ctx;
    ring_env_handle();
}

void
ring_env_set_nmi_handler(void (*handle)(void))
{
    ring_env_handle = handle;
    __atomic_store_n(&perfmon_nmi_test_hook, ring_env_hook, __ATOMIC_RELEASE);
}

unsigned long
ring_env_nr_nmis_deferred(void)
{
    return ring_env_deferred;
}

/*
 * The NMI: kern/perfmon/perfmon_nmi.c's own entry, with interrupts off
 * for its duration as the machine's NMI has them.
 */
void
ring_env_nmi(void)
{
    struct perfmon_intr_ctx ctx = { 0 };
    bool intr = ring_env_intr;

    if (perfmon_nmi_nest() != 0) {
        ring_env_deferred++;
    }

    ring_env_intr = false;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    perfmon_nmi_intr(&ctx);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ring_env_intr = intr;
}

/*
 * What perfmon_nmi.c calls besides: no device is registered (the test's
 * hook is the only handling), no boot argument is given, no call chain
 * is walked (the test takes no samples, so a context is copied whole).
 */
struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
unsigned int perfmon_nr_devs;

bool
arg_is_set(const char *key, const char *value)
{
    (void)key;
    (void)value;
    return false;
}

int
arg_get_u64(const char *key, uint64_t *valuep)
{
    (void)key;
    (void)valuep;
    return ENOENT;
}

void
log_msg(int level, const char *fmt, ...)
{
    va_list ap;

    (void)level;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

void
perfmon_sample_chain_capture(struct perfmon_chain *chain,
                             const struct perfmon_intr_ctx *ctx,
                             struct perfmon_intr_ctx *capturedp)
{
    (void)chain;
    *capturedp = *ctx;
}

void
perfmon_sample_chain_copy(struct perfmon_chain *chain,
                          const struct perfmon_intr_ctx *ctx,
                          struct perfmon_intr_ctx *copyp)
{
    (void)chain;
    *copyp = *ctx;
}

void
cpu_nmi_register(cpu_intr_fn_t fn)
{
    (void)fn;
}

uint64_t
cpu_get_tsc(void)
{
    return 0;
}
