/*
 * Timers: a sorted list per CPU, protected by a per-CPU lock that is only
 * taken with interrupts disabled. A timer's state says whether it is idle,
 * waiting in a list, or running its handler; its cpu field says which
 * CPU's lock protects it and stays fixed while it is pending or running.
 * Each CPU also records the timer whose handler it is running, which
 * stays true while that handler re-arms or cancels its own timer.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/list.h>
#include <kern/percpu.h>
#include <kern/spinlock.h>
#include <kern/timer.h>
#include <machine/cpu.h>

#define TIMER_INACTIVE  0
#define TIMER_PENDING   1
#define TIMER_RUNNING   2

struct timer_cpu {
    struct spinlock lock;
    struct list timers;     /* pending, by expiry */
    struct timer *running;  /* whose handler runs now, or NULL */
    uint64_t now;           /* time of the tick running the handlers */
    bool ready;
};

static struct timer_cpu timer_cpu __percpu;

/*
 * A timer's state and its CPU's running field are written under the CPU's
 * timer lock and read without it by timer_active: release stores and
 * acquire loads (plain moves on x86). An acquire load that sees the
 * state a tick wrote after setting running sees running as the tick left
 * it; a running of NULL, stored last, tells that the handler returned
 * (the timer's owner may free it then).
 */
static void
timer_set_state(struct timer *timer, int state)
{
    __atomic_store_n(&timer->state, state, __ATOMIC_RELEASE);
}

static void
timer_set_running(struct timer_cpu *tc, struct timer *timer)
{
    __atomic_store_n(&tc->running, timer, __ATOMIC_RELEASE);
}

static struct timer *
timer_running(const struct timer_cpu *tc)
{
    return __atomic_load_n(&tc->running, __ATOMIC_ACQUIRE);
}

int
timer_init(struct timer *timer, timer_fn_t fn, void *arg, unsigned int cpu)
{
    /* Beyond cpu_count() there is no per-CPU area to lock or list on. */
    if (cpu != TIMER_CPU_ANY && cpu >= cpu_count()) {
        return EINVAL;
    }

    list_node_init(&timer->node);
    timer->expiry = 0;
    timer->fn = fn;
    timer->arg = arg;
    timer->bound_cpu = cpu;
    timer->cpu = (cpu == TIMER_CPU_ANY) ? 0 : cpu;
    timer_set_state(timer, TIMER_INACTIVE);
    return 0;
}

/*
 * Lock the list that protects the timer. The cpu field only changes while
 * the timer is inactive, so re-check it once locked.
 */
static struct timer_cpu *
timer_lock(struct timer *timer, unsigned long *flags)
{
    for (;;) {
        unsigned int cpu = READ_ONCE(timer->cpu);
        struct timer_cpu *tc = percpu_ptr(timer_cpu, cpu);

        spinlock_lock_intr_save(&tc->lock, flags);

        if (READ_ONCE(timer->cpu) == cpu) {
            return tc;
        }

        spinlock_unlock_intr_restore(&tc->lock, *flags);
    }
}

static void
timer_insert(struct timer_cpu *tc, struct timer *timer)
{
    struct list *node;

    /* After every timer with an earlier or equal expiry: FIFO on ties. */
    list_for_each(&tc->timers, node) {
        struct timer *other = list_entry(node, struct timer, node);

        if (other->expiry > timer->expiry) {
            break;
        }
    }

    list_insert_before(node, &timer->node);
    timer_set_state(timer, TIMER_PENDING);
}

/*
 * A handler that arms a timer (its own or another) to an expiry its tick
 * has already reached would have that tick run the timer again, and a
 * handler that always does so (or two that arm each other) would keep the
 * CPU in the interrupt for good. Such an expiry becomes the next tick:
 * what handlers arm, a later tick runs. Interrupts disabled: this CPU's
 * running field is then set only when the caller is a handler on it.
 */
static uint64_t
timer_expiry_defer(uint64_t expiry)
{
    const struct timer_cpu *local = cpu_local_ptr(timer_cpu);

    if (local->running != NULL && expiry <= local->now) {
        return local->now + 1;
    }

    return expiry;
}

void
timer_schedule(struct timer *timer, uint64_t expiry)
{
    struct timer_cpu *tc;
    unsigned long flags;

    tc = timer_lock(timer, &flags);
    expiry = timer_expiry_defer(expiry);

    /*
     * An idle unbound timer moves to the scheduling CPU: the new owner is
     * written under the old lock, so a concurrent scheduler either sees
     * the move or is seen pending here. One whose handler still runs
     * stays, so it never runs on two CPUs at once.
     */
    if (timer->state == TIMER_INACTIVE && timer->bound_cpu == TIMER_CPU_ANY
        && timer->cpu != cpu_id() && tc->running != timer) {
        WRITE_ONCE(timer->cpu, cpu_id());
        spinlock_unlock_intr_restore(&tc->lock, flags);
        tc = timer_lock(timer, &flags);
    }

    if (timer->state == TIMER_PENDING) {
        list_remove(&timer->node);
    }

    timer->expiry = expiry;
    timer_insert(tc, timer);
    spinlock_unlock_intr_restore(&tc->lock, flags);
}

bool
timer_cancel(struct timer *timer)
{
    struct timer_cpu *tc;
    unsigned long flags;
    bool was_pending;

    for (;;) {
        tc = timer_lock(timer, &flags);

        /*
         * A handler running on this CPU is the caller itself (handlers run
         * with interrupts disabled, so nothing else can): do not wait.
         */
        if (tc->running != timer || timer->cpu == cpu_id()) {
            break;
        }

        spinlock_unlock_intr_restore(&tc->lock, flags);

        while (timer_running(tc) == timer) {
            cpu_pause();
        }
    }

    was_pending = (timer->state == TIMER_PENDING);

    if (was_pending) {
        list_remove(&timer->node);
    }

    timer_set_state(timer, TIMER_INACTIVE);
    spinlock_unlock_intr_restore(&tc->lock, flags);
    return was_pending;
}

bool
timer_active(const struct timer *timer)
{
    const struct timer_cpu *tc = percpu_ptr(timer_cpu, READ_ONCE(timer->cpu));

    return __atomic_load_n(&timer->state, __ATOMIC_ACQUIRE) != TIMER_INACTIVE
           || timer_running(tc) == timer;
}

void
timer_tick_intr(uint64_t now)
{
    struct timer_cpu *tc = cpu_local_ptr(timer_cpu);

    if (!tc->ready) {
        return;
    }

    spinlock_lock(&tc->lock);
    tc->now = now;

    while (!list_empty(&tc->timers)) {
        struct timer *timer = list_first_entry(&tc->timers, struct timer,
                                               node);

        if (timer->expiry > now) {
            break;
        }

        list_remove(&timer->node);
        timer_set_state(timer, TIMER_RUNNING);
        timer_set_running(tc, timer);
        spinlock_unlock(&tc->lock);

        timer->fn(timer);

        spinlock_lock(&tc->lock);

        /* The handler may have re-armed (pending) or cancelled it. */
        if (timer->state == TIMER_RUNNING) {
            timer_set_state(timer, TIMER_INACTIVE);
        }

        /* Last touch of the timer: its owner may free it after this. */
        timer_set_running(tc, NULL);
    }

    spinlock_unlock(&tc->lock);
}

void
timer_setup_local(void)
{
    struct timer_cpu *tc = cpu_local_ptr(timer_cpu);

    spinlock_init(&tc->lock);
    list_init(&tc->timers);
    tc->ready = true;
}

static int
timer_setup(void)
{
    timer_setup_local();
    return 0;
}

INIT_OP_DEFINE(timer_setup);
