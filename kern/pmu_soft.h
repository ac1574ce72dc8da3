/*
 * Software PMU: a perfmon device whose counters count kernel events. It
 * makes thread and CPU counts exactly predictable, so the perfmon core is
 * tested exactly on machines without a hardware PMU.
 *
 * Events (ids for perfmon_event_init with PERFMON_EF_SW):
 *   PMU_SOFT_EV_CSWITCH    context switches (counted for the thread that
 *                          leaves the CPU, before its counters unload)
 *   PMU_SOFT_EV_MIGRATION  a thread starting to run on a CPU other than the
 *                          one it last ran on (counted after it loads)
 *   PMU_SOFT_EV_TICK       clock ticks as the CPU accounts them (in its
 *                          tick interrupt, and brought up to date when the
 *                          counter starts or is read)
 *   PMU_SOFT_EV_XCALL      cross-CPU calls received through an IPI
 *   PMU_SOFT_EV_EMIT + ch  the n of every pmu_soft_emit_channel(ch, n) on
 *                          the CPU where the counter is loaded (channel 0
 *                          is pmu_soft_emit(n))
 *
 * The device has PMU_SOFT_NR_PMCS counters. Their width comes from the
 * command line, pmu_soft.width=N (8 to 64, default 64); with
 * pmu_soft.intr=1 a counter that wraps raises an emulated overflow
 * interrupt, delivered as a self-IPI on the PMI vector like a real PMI;
 * with pmu_soft.intr=0 (default) perfmon polls the counters.
 */
#ifndef KERN_PMU_SOFT_H
#define KERN_PMU_SOFT_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>

#define PMU_SOFT_EV_CSWITCH     0
#define PMU_SOFT_EV_MIGRATION   1
#define PMU_SOFT_EV_TICK        2
#define PMU_SOFT_EV_XCALL       3
#define PMU_SOFT_EV_EMIT        4
#define PMU_SOFT_NR_CHANNELS    8
#define PMU_SOFT_NR_EVENTS      (PMU_SOFT_EV_EMIT + PMU_SOFT_NR_CHANNELS)

#define PMU_SOFT_NR_PMCS        8

/*
 * Count n occurrences of an event on the calling CPU. Any context; called
 * by the kernel's own hooks. One call counts at most one wrap of the
 * counters: n must stay below 2^width for counts to be exact.
 */
void pmu_soft_count(unsigned int event, uint64_t n);

/* Count n units on emit channel 0 (n below 2^width). Any context. */
static inline void
pmu_soft_emit(uint64_t n)
{
    pmu_soft_count(PMU_SOFT_EV_EMIT, n);
}

/* Count n units on an emit channel (< PMU_SOFT_NR_CHANNELS). */
static inline void
pmu_soft_emit_channel(unsigned int channel, uint64_t n)
{
    if (channel < PMU_SOFT_NR_CHANNELS) {
        pmu_soft_count(PMU_SOFT_EV_EMIT + channel, n);
    }
}

/* The configured counter width and overflow mode. Any context. */
unsigned int pmu_soft_width(void);
bool pmu_soft_intr_mode(void);

/* Name of a software event ("cswitch", "emit3"), or NULL. */
const char *pmu_soft_event_name(unsigned int event);

INIT_OP_DECLARE(pmu_soft_setup);

#endif /* KERN_PMU_SOFT_H */
