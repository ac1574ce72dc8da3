/*
 * Software PMU: counters of kernel events, and a perfmon device over them.
 * It makes thread and CPU counts exactly predictable, so the perfmon core
 * is tested exactly on machines without a hardware PMU. Two parts: the
 * counter bank (pmu_soft.c: this header; of perfmon only the plain types
 * of kern/perfmon_types.h), which the kernel's hooks in clock, thread and
 * xcall count into, and the perfmon device (pmu_soft_dev.c).
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
 * The device has PMU_SOFT_NR_COUNTERS counters. Their width comes from the
 * command line, pmu_soft.width=N (8 to 64, default 64); with
 * pmu_soft.intr=1 a counter that wraps raises an emulated overflow
 * interrupt, a self-IPI on its own vector, as a real PMI would; with
 * pmu_soft.intr=0 (default) perfmon polls the counters.
 *
 * When counts are exact. perfmon brings a counter up to date ("syncs"
 * it) when it is read, when a thread using it switches in or out, when
 * its poll timer fires (polling) and when its overflow interrupt is taken
 * (interrupt mode). Counts are exact as long as, between two syncs of a
 * counter:
 * - polling: the counter advances less than 2^width. The device promises
 *   perfmon a rate of at most pmu_soft_max_rate() = 2^(width-2) units per
 *   counter per tick, for which perfmon polls every 2 ticks. A tick here
 *   is what separates two tick interrupts of the counter's CPU (where the
 *   poll runs), not clock time: on a loaded host the interrupts can lag
 *   the clock. An emitter keeping to the rate (at most that much after
 *   each tick interrupt; clock_nr_intrs() of its CPU counts them) adds at
 *   most 3 * 2^(width-2) between two polls, even with a poll a tick late;
 * - interrupt mode: the counter wraps at most once. With interrupts
 *   enabled every wrap's interrupt is taken at once, so any sequence of
 *   emits below 2^width each is exact; with interrupts disabled (or in one
 *   emit of 2^width or more) a second wrap before the next sync is lost.
 * A wrap lost either way is counted in the per-CPU syscnt
 * pmu_soft_lost/<cpu> (pmu_soft_nr_lost()), which tests check is zero: a
 * violation is always visible, never a silent miscount.
 */
#ifndef KERN_PMU_SOFT_H
#define KERN_PMU_SOFT_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <kern/percpu.h>
#include <kern/perfmon_types.h>

#define PMU_SOFT_EV_CSWITCH     0
#define PMU_SOFT_EV_MIGRATION   1
#define PMU_SOFT_EV_TICK        2
#define PMU_SOFT_EV_XCALL       3
#define PMU_SOFT_EV_EMIT        4
#define PMU_SOFT_NR_CHANNELS    30
#define PMU_SOFT_NR_EVENTS      (PMU_SOFT_EV_EMIT + PMU_SOFT_NR_CHANNELS)

#define PMU_SOFT_NR_COUNTERS        8

/*
 * A counter id that reads 0 forever: what perfmon reads for a slot that
 * holds no counter (multiplexed out), so that its reads need no test.
 */
#define PMU_SOFT_NULL_COUNTER       PMU_SOFT_NR_COUNTERS

/*
 * Count n occurrences of an event on the calling CPU. Any context; called
 * by the kernel's own hooks. Exact within the limits above.
 */
void pmu_soft_count(unsigned int event, uint64_t n);

/* Count n units on emit channel 0. Any context. */
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

/*
 * The counters of a CPU: a perfmon counter bank (kern/perfmon_types.h),
 * which the device declares, so that perfmon reads them inline on its hot
 * paths instead of through the driver's read operation, and reloads a
 * preset one with a store. values[PMU_SOFT_NULL_COUNTER] stays 0; hooked:
 * counters whose read needs pmu_soft_read_hooked.
 */
extern struct perfmon_bank pmu_soft_bank __percpu;

_Static_assert(PMU_SOFT_NR_COUNTERS <= PERFMON_MAX_COUNTERS,
               "the software PMU's counters fit a perfmon bank");

/* The read of a hooked counter (a tick counter, or any counter polled
 * at a narrow width). Local, interrupts disabled: per slot on perfmon's
 * hot paths (the switch, the poll), asserted by their entries, not here. */
uint64_t pmu_soft_read_hooked(unsigned int id);

/*
 * A counter's raw value on the calling CPU: a load, unless the counter
 * needs more on a read (tick accounting brought up to date, the count of
 * unread units reset). Local, interrupts disabled, as
 * pmu_soft_read_hooked.
 */
static inline uint64_t
pmu_soft_bank_read(const struct perfmon_bank *bank, unsigned int id)
{
    if (bank->hooked & (1U << id)) {
        return pmu_soft_read_hooked(id);
    }

    return bank->values[id];
}

/* The same, for the calling CPU's bank. */
static inline uint64_t
pmu_soft_read_local(unsigned int id)
{
    return pmu_soft_bank_read(cpu_local_ptr(pmu_soft_bank), id);
}

/*
 * The counter bank's interface to its perfmon device (pmu_soft_dev.c).
 * Local, interrupts disabled: asserted by pmu_soft_intr_take; start, stop
 * and pmu_soft_take_overflows run per slot or per switch on perfmon's hot
 * paths, whose entries assert it.
 *
 * pmu_soft_counter_start: make counter id count event and return its
 * value, with no wrap pending. pmu_soft_counter_stop: stop it and forget
 * a pending wrap. pmu_soft_take_overflows: clear and return the pending
 * wraps of the counters in mask (bit id). pmu_soft_intr_take: the same
 * for all counters, from the emulated interrupt (counted in
 * pmu_soft_intrs/<cpu> when it finds one).
 */
uint64_t pmu_soft_counter_start(unsigned int id, unsigned int event);
void pmu_soft_counter_stop(unsigned int id);

/*
 * Preset a started counter so it wraps after n more units (1 <= n <=
 * 2^width, at most 2^63), and return its new value. From then on its
 * wraps are reported at once, from pmu_soft_count, to the report function
 * (not by the emulated interrupt, in either mode), with where the units
 * were counted: the caller of pmu_soft_count, or for ticks where the tick
 * interrupt came. So a sample lands exactly on the unit that ends a
 * period, in the code that counted it. Local, interrupts disabled.
 */
uint64_t pmu_soft_counter_preset(unsigned int id, uint64_t n);

/*
 * Called with interrupts disabled on the counter's CPU, with where the
 * units were counted (ctx, on pmu_soft_count's stack, never NULL).
 */
typedef void (*pmu_soft_report_fn_t)(unsigned int id,
                                     const struct perfmon_intr_ctx *ctx);

/* Set the report function of preset counters. Boot only. */
void pmu_soft_set_report_fn(pmu_soft_report_fn_t fn);
uint32_t pmu_soft_take_overflows(uint32_t mask);
uint32_t pmu_soft_intr_take(void);

/*
 * NMI mode: where the pending overflow of counter id happened (the call of
 * pmu_soft_count, or the tick's interrupted code). Local, interrupts
 * disabled.
 */
const struct perfmon_intr_ctx *pmu_soft_intr_where(unsigned int id);

/*
 * The configured counter width and overflow mode. With pmu_soft.intr=1
 * the emulated interrupt is an NMI to the CPU's own APIC ID unless
 * perfmon.pmi=irq (pmu_soft_nmi_mode), else a self-IPI on the software
 * PMU's vector. A counting counter's wrap is reported by that interrupt.
 * A preset (sampling) counter's wrap is reported at once, in the count,
 * as an interrupt taken at the counting instruction would be: the
 * software PMU is precise. In NMI mode, a count made inside one of
 * perfmon's marked sections (kern/perfmon_nmi.h) leaves it to that
 * section's end, as an NMI landing there does; and with pmu_soft.nmi=ipi
 * (pmu_soft_nmi_ipi_mode; the default is pmu_soft.nmi=precise) every
 * wrap is an NMI taken when delivery brings it, as with a PMU whose
 * interrupt comes some instructions after the overflow. Any context.
 */
unsigned int pmu_soft_width(void);
bool pmu_soft_intr_mode(void);
bool pmu_soft_nmi_mode(void);
bool pmu_soft_nmi_ipi_mode(void);

/*
 * Units per counter per tick that polling counts exactly: 2^(width-2) when
 * polling narrow counters, UINT64_MAX with the overflow interrupt or 64-bit
 * counters (no rate limit). Any context.
 */
uint64_t pmu_soft_max_rate(void);

/*
 * Wraps lost on a CPU because the limits above were exceeded (syscnt
 * pmu_soft_lost/<cpu>), and emulated overflow interrupts that found a
 * counter to report (pmu_soft_intrs/<cpu>). Any context.
 */
uint64_t pmu_soft_nr_lost(unsigned int cpu);
uint64_t pmu_soft_nr_intrs(unsigned int cpu);

/* Name of a software event ("cswitch", "emit3"), or NULL. */
const char *pmu_soft_event_name(unsigned int event);

INIT_OP_DECLARE(pmu_soft_setup);
INIT_OP_DECLARE(pmu_soft_dev_setup);

#endif /* KERN_PMU_SOFT_H */
