/*
 * One-shot timers with an absolute expiry in clock ticks.
 *
 * Every timer runs from the tick interrupt of its CPU, in interrupt
 * context with interrupts disabled: handlers must be short and must not
 * sleep. A timer is either bound to a CPU at init, or runs on the CPU that
 * schedules it. A handler may re-arm its own timer (periodic use).
 *
 * A timer armed from a handler (its own or another's) to an expiry the
 * running tick has already reached is deferred to the next tick, not run
 * again in the same interrupt. So a handler that re-arms at the current
 * time or earlier runs once per tick instead of holding the CPU, and a
 * periodic timer that fell behind (a late tick) catches up by one run per
 * tick.
 */
#ifndef KERN_TIMER_H
#define KERN_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <kern/list.h>

#define TIMER_CPU_ANY   (~0U)

struct timer;

typedef void (*timer_fn_t)(struct timer *timer);

struct timer {
    struct list node;
    uint64_t expiry;
    timer_fn_t fn;
    void *arg;
    unsigned int bound_cpu;     /* TIMER_CPU_ANY or a CPU index */
    unsigned int cpu;           /* CPU whose list holds or runs it */
    int state;
};

/*
 * Initialize a timer that calls fn(timer) on cpu (TIMER_CPU_ANY: on the
 * CPU that schedules it). Return 0, or EINVAL, the timer left untouched,
 * when cpu is neither TIMER_CPU_ANY nor a CPU index below cpu_count()
 * (one that has no per-CPU area). Any context.
 */
int timer_init(struct timer *timer, timer_fn_t fn, void *arg,
               unsigned int cpu);

/*
 * The expiry ticks after now, saturated at UINT64_MAX, which the clock
 * never reaches (never): a sum that wrapped would be due at once. Any
 * context.
 */
static inline uint64_t
timer_expiry_after(uint64_t now, uint64_t ticks)
{
    return (ticks > UINT64_MAX - now) ? UINT64_MAX : now + ticks;
}

static inline void *
timer_arg(const struct timer *timer)
{
    return timer->arg;
}

/*
 * Arm (or re-arm) a timer to run at the first tick at or after expiry
 * (from a handler, after the running tick: see above). A pending timer is
 * moved to the new expiry. Any context.
 */
void timer_schedule(struct timer *timer, uint64_t expiry);

/*
 * Disarm a timer. When its handler is running on another CPU, wait for it
 * to return (and disarm it if the handler re-armed it). Called from the
 * timer's own handler, it only disarms. Return true when the timer was
 * pending. Any context; from a thread, the handler's CPU must not be
 * waiting on the caller.
 */
bool timer_cancel(struct timer *timer);

/* True while the timer is pending or its handler runs. Any context. */
bool timer_active(const struct timer *timer);

/* Run the calling CPU's expired timers. Called by the clock. */
void timer_tick_intr(uint64_t now);

/* Set up the calling CPU's timer list. Boot and AP bring-up. */
void timer_setup_local(void);

INIT_OP_DECLARE(timer_setup);

#endif /* KERN_TIMER_H */
