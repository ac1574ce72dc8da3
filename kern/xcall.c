/*
 * Cross-CPU calls: one request slot per target CPU, serialized by its
 * lock; the caller spins with interrupts enabled until the target's IPI
 * handler has run the function.
 */
#include <stdbool.h>

#include <kern/assert.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/percpu.h>
#include <kern/pmu_soft.h>
#include <kern/spinlock.h>
#include <kern/thread.h>
#include <kern/xcall.h>
#include <machine/cpu.h>

struct xcall_slot {
    struct spinlock lock;       /* one caller at a time */
    xcall_fn_t fn;
    void *arg;
    bool pending;
};

static struct xcall_slot xcall_slot __percpu;

void
xcall_intr(void)
{
    struct xcall_slot *slot = cpu_local_ptr(xcall_slot);

    if (__atomic_load_n(&slot->pending, __ATOMIC_ACQUIRE)) {
        /* Counted before the call, so a call that reads this CPU's
         * counters sees itself. */
        pmu_soft_count(PMU_SOFT_EV_XCALL, 1);
        slot->fn(slot->arg);
        __atomic_store_n(&slot->pending, false, __ATOMIC_RELEASE);
    }
}

int
xcall_call(unsigned int cpu, xcall_fn_t fn, void *arg)
{
    struct xcall_slot *slot;
    unsigned long flags;

    if (cpu >= cpu_count() || !cpu_online(cpu)) {
        return EINVAL;
    }

    assert(cpu_intr_enabled());
    thread_preempt_disable();

    if (cpu == cpu_id()) {
        flags = cpu_intr_save();
        fn(arg);
        cpu_intr_restore(flags);
        thread_preempt_enable();
        return 0;
    }

    slot = percpu_ptr(xcall_slot, cpu);
    spinlock_lock(&slot->lock);
    slot->fn = fn;
    slot->arg = arg;
    __atomic_store_n(&slot->pending, true, __ATOMIC_RELEASE);
    cpu_send_xcall(cpu);

    while (__atomic_load_n(&slot->pending, __ATOMIC_ACQUIRE)) {
        cpu_pause();
    }

    spinlock_unlock(&slot->lock);
    thread_preempt_enable();
    return 0;
}

void
xcall_broadcast(xcall_fn_t fn, void *arg)
{
    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        if (cpu_online(cpu)) {
            xcall_call(cpu, fn, arg);
        }
    }
}

/* The arch delivers the call interrupt from boot on (machine/ipi.h). */
static int
xcall_setup(void)
{
    return 0;
}

INIT_OP_DEFINE(xcall_setup);
