/*
 * A fake PMU device for host tests of perfmon's core: no registers, only
 * counters whose values the test sets and moves, registered through
 * perfmon_dev_register with an ops table of its own, so that the core's
 * policies (multiplexing, slots, times, sampling) are tested with exact
 * values and nothing of a vendor's driver in between.
 *
 * The device has nr_counters counters (ids 0 to nr_counters - 1) of one width,
 * with an overflow interrupt or polled. A configuration word is the
 * event's raw code (PERFMON_EF_RAW, 1 to 0xffffffff) or PMU_FAKE_GENERIC
 * plus a generic id, with the ring flags above (PMU_FAKE_CONFIG), so that
 * one code counted in other rings is another raw event, as on hardware.
 * A configuration may be constrained to some counter ids
 * (pmu_fake_constrain), as a fixed counter constrains an event on x86.
 *
 * Counters count only what the test says happened (pmu_fake_count):
 * every started counter programmed with the event advances. A counter
 * that wraps with the interrupt on raises it at once when interrupts are
 * enabled, else it stays pending until pmu_fake_deliver. Single CPU, as
 * host_env.
 */
#ifndef PMU_FAKE_H
#define PMU_FAKE_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>

#define PMU_FAKE_GENERIC        0x100000000ULL
#define PMU_FAKE_RING_SHIFT     40

/* The configuration word of an event, as the fake's translate makes it. */
#define PMU_FAKE_CONFIG(code, flags)                                    \
    ((uint64_t)(code)                                                   \
     | ((uint64_t)((flags) & (PERFMON_EF_KERN | PERFMON_EF_USER))       \
        << PMU_FAKE_RING_SHIFT))

struct pmu_fake_config {
    unsigned int nr_counters;       /* 1 to PERFMON_MAX_COUNTERS */
    unsigned int width;         /* 1 to 64 */
    bool overflow_intr;         /* else perfmon polls (max_rate) */
    uint64_t max_rate;          /* polled: events per tick at most */
};

/*
 * Register the fake device with perfmon (perfmon_setup must have run).
 * Once per process: perfmon has one hardware device. Return
 * perfmon_dev_register's error.
 */
int pmu_fake_register(const struct pmu_fake_config *config);

struct perfmon_dev *pmu_fake_dev(void);

/*
 * Let config go only on the counters of ids (bit counter); 0 lifts the
 * constraint. At most 8 constrained configurations; set them while no
 * slot holds config.
 */
void pmu_fake_constrain(uint64_t config, uint32_t ids);

/*
 * n occurrences of the event of config: every started counter programmed
 * with it advances by n (wrapping at its width). Thread context,
 * interrupts enabled or not.
 */
void pmu_fake_count(uint64_t config, uint64_t n);

/* Set or read a counter's raw value directly (it need not be started). */
void pmu_fake_set(unsigned int counter, uint64_t raw);
uint64_t pmu_fake_get(unsigned int counter);

/*
 * Raise the overflow interrupt for the overflows left pending (counted
 * with interrupts disabled); return whether any was.
 */
bool pmu_fake_deliver(void);

/*
 * What the device saw: counters reserved (alloc, less free), started,
 * with their configuration, and how many allocs and frees the core made.
 * A free of a counter that was not reserved is a failure of the core:
 * counted in nr_bad_frees.
 */
uint32_t pmu_fake_reserved(void);
uint32_t pmu_fake_started(void);
uint64_t pmu_fake_counter_config(unsigned int counter);
unsigned int pmu_fake_nr_allocs(void);
unsigned int pmu_fake_nr_frees(void);
unsigned int pmu_fake_nr_bad_frees(void);
uint32_t pmu_fake_pending(void);

#endif /* PMU_FAKE_H */
