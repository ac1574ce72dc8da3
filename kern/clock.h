/*
 * System time in clock ticks, derived from the TSC so that every CPU reads
 * the same time, and the per-CPU tick interrupt that drives timers and
 * time slices.
 */
#ifndef KERN_CLOCK_H
#define KERN_CLOCK_H

#include <stdint.h>

#include <kern/init.h>
#include <kern/macros.h>

#define CLOCK_HZ 100U

/* Ticks since boot. Any context, once clock_setup has run. */
uint64_t clock_get_time(void);

/* TSC cycles per tick. Any context, once clock_setup has run. */
uint64_t clock_tsc_per_tick(void);

/* Convert durations, rounding ticks up so a delay is never shorter. */
static inline uint64_t
clock_ticks_from_ms(uint64_t ms)
{
    return DIV_CEIL(ms * CLOCK_HZ, 1000);
}

static inline uint64_t
clock_ms_from_ticks(uint64_t ticks)
{
    return ticks * 1000 / CLOCK_HZ;
}

/*
 * Start counting ticks on the calling CPU (its tick interrupt must not
 * report the ticks before this call). Boot and AP bring-up.
 */
void clock_start_local(void);

/*
 * Account on the calling CPU the ticks elapsed since its last accounting
 * (a tick interrupt delayed past several tick boundaries accounts for
 * every one), counting them as software PMU tick events. The tick
 * interrupt calls it, and so does a read of a tick counter, so counts
 * are current to the tick. Interrupts disabled.
 */
void clock_account_local(void);

/*
 * The tick interrupt of the calling CPU: accounts ticks, runs expired
 * timers and time slices. Interrupt context.
 */
void clock_tick_intr(void);

/*
 * Ticks accounted on a CPU since it started: by its tick interrupt, and by
 * reads of tick counters (clock_account_local). Any context; cpu below
 * cpu_count() (asserted).
 */
uint64_t clock_nr_ticks(unsigned int cpu);

/*
 * Tick interrupts a CPU has taken. Unlike clock time, they can lag on a
 * loaded host, and the poll timers run in them. Any context; cpu below
 * cpu_count() (asserted).
 */
uint64_t clock_nr_intrs(unsigned int cpu);

INIT_OP_DECLARE(clock_setup);

#endif /* KERN_CLOCK_H */
