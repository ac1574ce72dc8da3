/*
 * Frequency mode: a frequency sampler's period, estimated from its events
 * and time while it is live on a CPU, so that it takes about freq samples
 * a second. The CPU's frequency timer (perfmon_cpu.c) runs the estimate
 * each tick; the sampling path reads only the period it publishes.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/clock.h>
#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/perfmon/perfmon_cpu_i.h>
#include <kern/perfmon/perfmon_i.h>
#include <machine/cpu.h>

/*
 * A frequency sampler's period is estimated here, in maskable context
 * only: on the CPU where the sampler is live, with interrupts disabled
 * (its arm, its thread's switch away, the CPU's frequency timer), so the
 * event's freq_* fields need no lock. The overflow path never reads them;
 * it reads the period it publishes, event->period, once at the end of
 * each period (relaxed loads against this relaxed store, as for
 * perfmon_event_set_period), so an overflow that lands between any two
 * instructions here sees the old period or the new one.
 */

/*
 * A frequency sampler becomes live on this CPU (cslot, up to date, now
 * serves it): its count and time go on from here, and the CPU's timer
 * runs while it is live. Local, interrupts disabled.
 */
void
perfmon_freq_load(struct perfmon_cpu *cpu, struct perfmon_cpu_slot *cslot)
{
    struct perfmon_event *event = cslot->sampler;

    assert_intr_disabled();
    event->freq_value = cslot->value;
    event->freq_tsc = cpu_get_tsc();

    if (!cpu->freq_armed) {
        cpu->freq_armed = true;
        timer_schedule(&cpu->freq_timer, clock_get_time() + 1);
    }
}

/*
 * A thread's frequency sampler leaves this CPU (cslot, up to date, served
 * it): keep what it counted here, and for how long, for its next
 * estimate. Local, interrupts disabled.
 */
void
perfmon_freq_unload(struct perfmon_cpu_slot *cslot)
{
    struct perfmon_event *event = cslot->sampler;

    assert_intr_disabled();
    event->freq_count += cslot->value - event->freq_value;
    event->freq_time += cpu_get_tsc() - event->freq_tsc;
}

/*
 * The period that gives event freq samples a second at the rate of count
 * events in time TSC cycles, or 0 when the rate is unknown (no event, no
 * time, no calibrated TSC).
 */
static uint64_t
perfmon_freq_period(const struct perfmon_event *event, uint64_t count,
                    uint64_t time)
{
    uint64_t tsc_hz = cpu_get_freq();
    uint64_t rate;

    if (count == 0 || time == 0 || tsc_hz == 0) {
        return 0;
    }

    rate = perfmon_muldiv(count, tsc_hz, time);    /* events a second */
    return MAX(event->period_min, MIN(rate / event->freq, PERFMON_PERIOD_MAX));
}

/*
 * Estimate a live frequency sampler's period from what it counted since
 * the last estimate (value: its slot's, up to date, at TSC time now), once
 * it was live half a tick or more: so at most once per tick of its own
 * time, and never from a sliver of time, whose rate says little.
 *
 * The rate is a ratio of decaying sums, of counts and of times (each
 * estimate keeps three quarters of the last): a ratio of sums, not a mean
 * of each tick's rate, so a tick stretched by a stall and the burst that
 * catches up after it weigh as the time they cover, with no bias. The
 * first estimate after attach is the first tick's rate; a steady rate is
 * then held. A stretch without events changes nothing: an event that
 * stops and starts again resumes at its rate. Local, interrupts disabled
 * (the frequency timer's).
 */
void
perfmon_freq_adjust(struct perfmon_event *event, uint64_t value, uint64_t now)
{
    uint64_t count = event->freq_count + (value - event->freq_value);
    uint64_t time = event->freq_time + (now - event->freq_tsc);
    uint64_t period;

    assert_intr_disabled();

    if (time < clock_tsc_per_tick() / 2) {
        return;
    }

    event->freq_count = 0;
    event->freq_time = 0;
    event->freq_value = value;
    event->freq_tsc = now;

    if (count == 0) {
        return;
    }

    event->freq_sum_count += count - event->freq_sum_count / 4;
    event->freq_sum_time += time - event->freq_sum_time / 4;
    period = perfmon_freq_period(event, event->freq_sum_count,
                                 event->freq_sum_time);

    /* Read where the current period ends, by the overflow path. */
    if (period != 0) {
        __atomic_store_n(&event->period, period, __ATOMIC_RELAXED);
    }
}
