/*
 * A minimal single-CPU kernel environment for the host PMU tests. See
 * host_env.h.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/kmem.h>
#include <kern/list.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_td.h>
#include <kern/pmu_soft.h>
#include <kern/spinlock.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <machine/trap.h>

#include "host_env.h"

#define HOST_ENV_TIMER_IDLE     0
#define HOST_ENV_TIMER_PENDING  1
#define HOST_ENV_TIMER_RUNNING  2

static bool host_env_intr = true;
static unsigned int host_env_locks_held;
static uint64_t host_env_now = HOST_ENV_START_TIME;
static bool host_env_tsc_held;
static uint64_t host_env_tsc;
static struct list host_env_timers = LIST_INITIALIZER(host_env_timers);
static struct list host_env_syscnts = LIST_INITIALIZER(host_env_syscnts);
static trap_handler_fn_t host_env_traps[TRAP_NR_VECTORS];

uint64_t
cpu_get_tsc(void)
{
    static uint64_t nr_reads;

    if (host_env_tsc_held) {
        return host_env_tsc;
    }

    return host_env_now * 1000 + nr_reads++;
}

void
host_env_tsc_hold(void)
{
    if (!host_env_tsc_held) {
        host_env_tsc = cpu_get_tsc();
        host_env_tsc_held = true;
    }
}

void
host_env_tsc_advance(uint64_t cycles)
{
    if (!host_env_tsc_held) {
        panic("host_env: TSC advanced while it runs on its own");
    }

    host_env_tsc += cycles;
}

void
thread_delay(uint64_t ticks)
{
    host_env_advance(ticks);
}

int
thread_create(struct thread **threadp, const struct thread_attr *attr,
              void (*fn)(void *arg), void *arg)
{
    static struct thread host_env_created;

    (void)attr;
    (void)fn;
    (void)arg;
    if (threadp != NULL) {
        *threadp = &host_env_created;
    }

    return 0;
}

void
thread_sleep(struct spinlock *interlock, unsigned long flags)
{
    (void)interlock;
    (void)flags;
    abort();
}

void
thread_wakeup(struct thread *thread)
{
    (void)thread;
}

void *
kmem_alloc(size_t size)
{
    return malloc(size);
}

void *
kmem_zalloc(size_t size)
{
    return calloc(1, size);
}

void
kmem_free(void *ptr)
{
    free(ptr);
}

/* Where host_env_raise_trap's interrupts come from (host_env_set_intr_ctx). */
static struct cpu_intr_site host_env_intr_ctx;

void
host_env_set_intr_ctx(uintptr_t ip, uintptr_t fp)
{
    host_env_intr_ctx.ip = ip;
    host_env_intr_ctx.fp = fp;
}

/* The init operations perfmon_setup and pmu_intel_setup depend on. */
const struct init_op init_op_clock_setup = { .name = "clock_setup" };
const struct init_op init_op_cpu_mp_setup = { .name = "cpu_mp_setup" };
const struct init_op init_op_syscnt_setup = { .name = "syscnt_setup" };
const struct init_op init_op_thread_setup = { .name = "thread_setup" };
const struct init_op init_op_timer_setup = { .name = "timer_setup" };
const struct init_op init_op_xcall_setup = { .name = "xcall_setup" };

/* ------------------------------------------------------------------ */
/* CPU                                                                 */
/* ------------------------------------------------------------------ */

void
cpu_intr_enable(void)
{
    host_env_intr = true;
}

void
cpu_intr_disable(void)
{
    host_env_intr = false;
}

bool
cpu_intr_enabled(void)
{
    return host_env_intr;
}

unsigned long
cpu_intr_save(void)
{
    unsigned long flags = host_env_intr ? CPU_RFLAGS_IF : 0;

    host_env_intr = false;
    return flags;
}

void
cpu_intr_restore(unsigned long flags)
{
    if (flags & CPU_RFLAGS_IF) {
        host_env_intr = true;
    }
}

void
cpu_send_self_pmu_soft_from_nmi(void)
{
    panic("host_env: no NMI on the host");
}

unsigned int
cpu_count(void)
{
    return 1;
}

bool
cpu_online(unsigned int cpu)
{
    return cpu == 0;
}

uint64_t
cpu_get_freq(void)
{
    return HOST_ENV_CPU_FREQ;
}

/*
 * perfmon reads the software PMU's counters inline; the host tests
 * register no software PMU, so these are never reached.
 */
struct perfmon_bank pmu_soft_bank;

uint64_t
pmu_soft_read_hooked(unsigned int id)
{
    panic("host_env: no software PMU (counter %u)", id);
}

uint64_t
pmu_soft_counter_preset(unsigned int id, uint64_t n)
{
    panic("host_env: no software PMU (counter %u, %llu)", id,
          (unsigned long long)n);
}

unsigned int
host_env_percpu_offset(unsigned int cpu)
{
    if (cpu != 0) {
        panic("host_env: per-CPU access to CPU %u of 1", cpu);
    }

    return 0;
}

void
host_env_recover(void)
{
    host_env_intr = true;
}

/* ------------------------------------------------------------------ */
/* Spin locks: one CPU, so a lock found held would never be released   */
/* ------------------------------------------------------------------ */

void
spinlock_init(struct spinlock *lock)
{
    lock->locked = 0;
    lock->owner = 0;
}

void
spinlock_lock(struct spinlock *lock)
{
    if (lock->locked) {
        panic("host_env: spin lock %p taken twice (deadlock)", (void *)lock);
    }

    lock->locked = 1;
    lock->owner = 1;
    host_env_locks_held++;
}

void
spinlock_unlock(struct spinlock *lock)
{
    if (!lock->locked) {
        panic("host_env: spin lock %p released while free", (void *)lock);
    }

    lock->locked = 0;
    lock->owner = 0;
    host_env_locks_held--;
}

void
spinlock_lock_intr_save(struct spinlock *lock, unsigned long *flags)
{
    *flags = cpu_intr_save();
    spinlock_lock(lock);
}

void
spinlock_unlock_intr_restore(struct spinlock *lock, unsigned long flags)
{
    spinlock_unlock(lock);
    cpu_intr_restore(flags);
}

bool
spinlock_held(const struct spinlock *lock)
{
    return lock->locked && lock->owner == 1;
}

unsigned int
host_env_nr_locks_held(void)
{
    return host_env_locks_held;
}

/* ------------------------------------------------------------------ */
/* Clock and timers                                                    */
/* ------------------------------------------------------------------ */

uint64_t
clock_tsc_per_tick(void)
{
    return 1000;    /* as cpu_get_tsc counts */
}

uint64_t
clock_get_time(void)
{
    return host_env_now;
}

int
timer_init(struct timer *timer, timer_fn_t fn, void *arg, unsigned int cpu)
{
    if (cpu != 0 && cpu != TIMER_CPU_ANY) {
        panic("host_env: timer bound to CPU %u of 1", cpu);
    }

    list_node_init(&timer->node);
    timer->expiry = 0;
    timer->fn = fn;
    timer->arg = arg;
    timer->bound_cpu = cpu;
    timer->cpu = 0;
    timer->state = HOST_ENV_TIMER_IDLE;
    return 0;
}

void
timer_schedule(struct timer *timer, uint64_t expiry)
{
    if (timer->fn == NULL) {
        panic("host_env: timer %p scheduled before timer_init",
              (void *)timer);
    }

    if (timer->state == HOST_ENV_TIMER_PENDING) {
        list_remove(&timer->node);
    }

    timer->expiry = expiry;
    timer->state = HOST_ENV_TIMER_PENDING;
    list_insert_tail(&host_env_timers, &timer->node);
}

static struct timer *
host_env_first_timer(void)
{
    struct timer *first = NULL;
    struct list *node;

    list_for_each(&host_env_timers, node) {
        struct timer *timer = list_entry(node, struct timer, node);

        if (first == NULL || timer->expiry < first->expiry) {
            first = timer;
        }
    }

    return first;
}

void
host_env_advance(uint64_t ticks)
{
    uint64_t end = host_env_now + ticks;
    struct timer *timer;

    while ((timer = host_env_first_timer()) != NULL && timer->expiry <= end) {
        unsigned long flags;

        if (timer->expiry > host_env_now) {
            host_env_tsc += (timer->expiry - host_env_now) * 1000;
            host_env_now = timer->expiry;
        }

        list_remove(&timer->node);
        list_node_init(&timer->node);
        timer->state = HOST_ENV_TIMER_RUNNING;
        flags = cpu_intr_save();
        timer->fn(timer);
        cpu_intr_restore(flags);

        if (timer->state == HOST_ENV_TIMER_RUNNING) {
            timer->state = HOST_ENV_TIMER_IDLE;
        }
    }

    host_env_tsc += (end - host_env_now) * 1000;
    host_env_now = end;
}

unsigned int
host_env_nr_timers_pending(void)
{
    unsigned int n = 0;
    struct list *node;

    list_for_each(&host_env_timers, node) {
        n++;
    }

    return n;
}

uint64_t
host_env_next_expiry(void)
{
    struct timer *timer = host_env_first_timer();

    return (timer != NULL) ? timer->expiry : UINT64_MAX;
}

/* ------------------------------------------------------------------ */
/* Cross-CPU calls: CPU 0 calling itself                               */
/* ------------------------------------------------------------------ */

int
xcall_call(unsigned int cpu, xcall_fn_t fn, void *arg)
{
    unsigned long flags;

    if (!host_env_intr) {
        panic("host_env: xcall_call with interrupts disabled");
    }

    if (!cpu_online(cpu)) {
        return EINVAL;
    }

    flags = cpu_intr_save();
    fn(arg);
    cpu_intr_restore(flags);
    return 0;
}

void
xcall_broadcast(xcall_fn_t fn, void *arg)
{
    xcall_call(0, fn, arg);
}

/* ------------------------------------------------------------------ */
/* System counters                                                     */
/* ------------------------------------------------------------------ */

void
syscnt_register(struct syscnt *syscnt, const char *name)
{
    syscnt->value = 0;
    snprintf(syscnt->name, sizeof(syscnt->name), "%s", name);
    list_insert_tail(&host_env_syscnts, &syscnt->node);
}

int
syscnt_lookup(const char *name, uint64_t *valuep)
{
    struct list *node;

    list_for_each(&host_env_syscnts, node) {
        struct syscnt *syscnt = list_entry(node, struct syscnt, node);

        if (strcmp(syscnt->name, name) == 0) {
            *valuep = syscnt_read(syscnt);
            return 0;
        }
    }

    return ENOENT;
}

/* ------------------------------------------------------------------ */
/* Traps                                                               */
/* ------------------------------------------------------------------ */

void
trap_register(unsigned int vector, trap_handler_fn_t handler)
{
    if (vector >= TRAP_NR_VECTORS) {
        panic("host_env: trap_register of vector %u", vector);
    }

    host_env_traps[vector] = handler;
}

/* Without a PMU model, the PMI is never an NMI. */
__attribute__((weak)) bool
host_env_pmi_nmi(void)
{
    return false;
}

/* The handlers registered as with the arch's (machine/ipi.c). */
static cpu_intr_fn_t host_env_pmi_fn;
static cpu_intr_fn_t host_env_pmu_soft_fn;
static cpu_intr_fn_t host_env_nmi_fn;

void
cpu_pmi_register(cpu_intr_fn_t fn)
{
    host_env_pmi_fn = fn;
}

void
cpu_pmu_soft_register(cpu_intr_fn_t fn)
{
    host_env_pmu_soft_fn = fn;
}

void
cpu_nmi_register(cpu_intr_fn_t fn)
{
    host_env_nmi_fn = fn;
}

void
host_env_raise_trap(unsigned int vector)
{
    struct trap_frame frame = { .vector = vector };
    unsigned long flags;

    /*
     * The PMI as an NMI, when the PMU model's LVT entry says so: the arch's
     * NMI handler (machine/ipi.c) calls the one registered, with no EOI.
     */
    if (vector == TRAP_PMI && host_env_pmi_nmi()) {
        if (host_env_nmi_fn == NULL) {
            panic("host_env: an NMI with no handler");
        }

        flags = cpu_intr_save();
        host_env_nmi_fn(&host_env_intr_ctx);
        cpu_intr_restore(flags);
        return;
    }

    /* The PMI vector is the arch's (machine/ipi.c): do what it does. */
    if (vector == TRAP_PMI && host_env_traps[vector] == NULL) {
        flags = cpu_intr_save();

        if (host_env_pmi_fn != NULL) {
            host_env_pmi_fn(&host_env_intr_ctx);
        }

        lapic_eoi();
        cpu_intr_restore(flags);
        return;
    }

    if (vector >= TRAP_NR_VECTORS || host_env_traps[vector] == NULL) {
        panic("host_env: no handler for vector %u", vector);
    }

    flags = cpu_intr_save();
    host_env_traps[vector](&frame);
    cpu_intr_restore(flags);
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

void
thread_ref(struct thread *thread)
{
    thread->refs++;
}

void
thread_unref(struct thread *thread)
{
    if (thread->refs == 0) {
        panic("host_env: thread %p unreferenced below zero", (void *)thread);
    }

    thread->refs--;
}

void
host_env_thread_init(struct thread *thread)
{
    perfmon_td_init(&thread->perfmon_td);
    thread->refs = 1;
    thread->exited = false;
}

/*
 * The CPU always runs some thread: an idle thread stands for "no test
 * thread". A switch is what the scheduler does: perfmon_td_switch from
 * the thread leaving to the next one, interrupts off.
 */
static struct thread host_env_idle;
static struct thread *host_env_current;

/* Before any switch, the idle thread (id 0) runs, as on a booted CPU. */
struct thread *
thread_self(void)
{
    return (host_env_current != NULL) ? host_env_current : &host_env_idle;
}

static void
host_env_switch(struct thread *prev, struct thread *next)
{
    unsigned long flags = cpu_intr_save();

    perfmon_td_switch(&prev->perfmon_td, &next->perfmon_td, cpu_get_tsc());
    host_env_current = next;
    cpu_intr_restore(flags);
}

static void
host_env_idle_start(void)
{
    unsigned long flags;

    if (host_env_current != NULL) {
        return;
    }

    host_env_thread_init(&host_env_idle);
    flags = cpu_intr_save();
    perfmon_td_load(&host_env_idle.perfmon_td);
    cpu_intr_restore(flags);
    host_env_current = &host_env_idle;
}

void
host_env_switch_in(struct thread *thread)
{
    host_env_idle_start();

    if (host_env_current != &host_env_idle) {
        panic("host_env: switch in while another thread runs");
    }

    host_env_switch(&host_env_idle, thread);
}

void
host_env_switch_out(struct thread *thread)
{
    if (host_env_current != thread) {
        panic("host_env: switch out of a thread that does not run");
    }

    host_env_switch(thread, &host_env_idle);
}

void
host_env_switch_to(struct thread *next)
{
    if (host_env_current == NULL || host_env_current == &host_env_idle) {
        panic("host_env: switch to a thread while no test thread runs");
    }

    if (next == host_env_current) {
        panic("host_env: switch to the thread that runs");
    }

    host_env_switch(host_env_current, next);
}

/* ------------------------------------------------------------------ */
/* Log and panic                                                       */
/* ------------------------------------------------------------------ */

#define HOST_ENV_LOG_KEPT       64
#define HOST_ENV_LOG_SIZE       256

static unsigned int host_env_log_lines;
static char host_env_log_kept[HOST_ENV_LOG_KEPT][HOST_ENV_LOG_SIZE];

/* Messages become KTAP diagnostic lines; the last ones are kept. */
void
log_msg(int level, const char *fmt, ...)
{
    char *line = host_env_log_kept[host_env_log_lines % HOST_ENV_LOG_KEPT];
    va_list ap;

    (void)level;
    host_env_log_lines++;
    va_start(ap, fmt);
    vsnprintf(line, HOST_ENV_LOG_SIZE, fmt, ap);
    va_end(ap);
    printf("# %s\n", line);
}

unsigned int
host_env_nr_log_lines(void)
{
    return host_env_log_lines;
}

unsigned int
host_env_nr_log_lines_with(const char *text)
{
    unsigned int n = 0, kept = host_env_log_lines;

    if (kept > HOST_ENV_LOG_KEPT) {
        kept = HOST_ENV_LOG_KEPT;
    }

    for (unsigned int i = 0; i < kept; i++) {
        n += (strstr(host_env_log_kept[i], text) != NULL);
    }

    return n;
}

void
panic(const char *fmt, ...)
{
    va_list ap;

    printf("# panic: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    abort();
}
