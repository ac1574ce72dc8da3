/*
 * perfmon's global tier, private to kern/perfmon/: a device's slots and
 * schedule (struct perfmon_dev_state), the registry, and the functions of
 * perfmon_dev.c, perfmon_slot.c and perfmon_mux.c that the tiers above
 * them call. Locking: perfmon_i.h.
 */
#ifndef KERN_PERFMON_PERFMON_SLOT_I_H
#define KERN_PERFMON_PERFMON_SLOT_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_td.h>
#include <kern/spinlock.h>
#include <machine/cpu.h>

/*
 * A slot: a raw event and, while it is scheduled (its bit in the device's
 * sched_mask), the counter it holds on every CPU (the CPUs follow the
 * schedule when they next look at it).
 */
struct perfmon_slot {
    unsigned int nr_refs;
    unsigned int nr_pinned;     /* references that pin it */
    unsigned int nr_enabled;    /* references by enabled events */
    unsigned int counter;
    unsigned int width;
    uint64_t mask;              /* 2^width - 1 */
    uint64_t config;
    uint64_t sched_time;        /* TSC time scheduled, for fair turns */

    /*
     * A sampling slot holds sampling events only, each counting on its
     * own CPU or thread with its own period: samplers that can never need
     * the counter at once on one CPU share it. Either CPU samplers, one
     * per CPU (sampler_cpus), or thread samplers, one per thread (each
     * thread's sampler_slots): a CPU sampler and a thread sampler could
     * both be live on a CPU, as could two samplers of one thread.
     */
    bool sampling;
    uint64_t sampler_cpus;      /* CPUs with a CPU sampler here */
    unsigned int nr_td_samplers;    /* threads with a sampler here */
};

_Static_assert(CPU_MAX <= 64, "a slot's CPUs are bits of a 64-bit mask");

/*
 * perfmon's state of a device (struct perfmon_dev's state points to it),
 * one per registered device.
 */
struct perfmon_dev_state {
    unsigned int index;
    uint64_t poll_ticks;        /* poll timer period, 0 with an interrupt */
    struct spinlock lock;       /* the global tier: slots, the schedule */
    uint32_t sched_changed;     /* slots changed by the current write */
    uint32_t used_mask;         /* slots with references */
    uint32_t sched_mask;        /* slots holding counters (the schedule) */
    unsigned int mux_next;      /* multiplexing: the slot whose unit
                                   comes first at the next rotation */
    bool mux_waiting;           /* a unit waits for counters */
    uint64_t sched_stamp;       /* TSC of the last schedule change */
    uint64_t nr_rotations;
    struct perfmon_slot slots[PERFMON_MAX_SLOTS];

    /*
     * Per slot, the CPUs that may be using it (every CPU whose per-CPU
     * tier holds a reference, and some that did since the last change
     * that reached them): a schedule change reaches those of its changed
     * slots only. Each CPU sets and clears its own bit, atomically,
     * without the device lock (perfmon_cpu_slot_user).
     */
    uint64_t users[PERFMON_MAX_SLOTS];

    /* Per pair of slots, the attached groups holding both. */
    uint16_t links[PERFMON_MAX_SLOTS][PERFMON_MAX_SLOTS];
    uint32_t link_masks[PERFMON_MAX_SLOTS];     /* links[i][j] != 0 */

    /*
     * Schedule version, odd while written: read by every context switch
     * that involves the device, on a line of its own, away from the
     * lock's traffic.
     */
    uint64_t sched_seq __attribute__((aligned(64)));
};

/*
 * The registered devices, by index, and the lock of their registration
 * (perfmon_dev.c).
 */
extern struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
extern unsigned int perfmon_nr_devs;
extern struct spinlock perfmon_devs_lock;

/*
 * The number of registered devices. Acquire: pairs with the release that
 * publishes it (perfmon_dev_register), so the entries below it are ready;
 * a plain move on x86. Any context.
 */
static inline unsigned int
perfmon_dev_count(void)
{
    return __atomic_load_n(&perfmon_nr_devs, __ATOMIC_ACQUIRE);
}

/* The least period dev samples config at (its min_period). Any context. */
static inline uint64_t
perfmon_dev_min_period(const struct perfmon_dev *dev, uint64_t config)
{
    return (dev->ops->min_period == NULL) ? 1 : dev->ops->min_period(config);
}

/*
 * Whether dev samples config every period events (at least its least
 * period). Any context.
 */
static inline bool
perfmon_dev_period_ok(const struct perfmon_dev *dev, uint64_t config,
                      uint64_t period)
{
    return period >= perfmon_dev_min_period(dev, config);
}

/* Whether dev can sample: a period it can preset. Any context. */
static inline bool
perfmon_dev_can_sample(const struct perfmon_dev *dev)
{
    return dev->max_period != 0 && dev->ops->preset != NULL;
}

/* perfmon_slot.c: devices and slots */
int perfmon_slot_acquire(struct perfmon_dev *dev, const uint64_t *configs,
                         const bool *pins, unsigned int nr, bool sampler,
                         struct perfmon_td *td, unsigned int cpu,
                         unsigned int *indexes);
void perfmon_slot_release(struct perfmon_dev *dev, unsigned int index, bool pin,
                          bool enabled, bool sampler, struct perfmon_td *td,
                          unsigned int cpu);

/* perfmon_mux.c: the schedule */
uint32_t perfmon_mux_sched_end(struct perfmon_dev_state *state);
bool perfmon_mux_slot_wanted(const struct perfmon_slot *slot);
uint32_t perfmon_mux_unit(const struct perfmon_dev_state *state,
                          unsigned int index);
void perfmon_mux_drop(struct perfmon_dev *dev, uint32_t unit);
void perfmon_mux_account(struct perfmon_dev_state *state);
bool perfmon_mux_range(const struct perfmon_dev_state *state, uint64_t *leastp,
                       uint64_t *mostp);
uint64_t perfmon_mux_level(uint64_t own, bool any, uint64_t least,
                           uint64_t most);
int perfmon_mux_schedule(struct perfmon_dev *dev, bool rotate);
void perfmon_mux_reschedule(struct perfmon_dev *dev);
void perfmon_mux_publish(struct perfmon_dev *dev, uint32_t changed);
bool perfmon_mux_fits(struct perfmon_dev *dev, uint32_t unit, bool pin);
void perfmon_mux_links_add(struct perfmon_dev_state *state,
                           const unsigned int *indexes, unsigned int nr_indexes,
                           int delta);
void perfmon_mux_unlink(struct perfmon_dev *dev, const unsigned int *indexes,
                        unsigned int nr_indexes);
void perfmon_mux_enabled_add(struct perfmon_dev *dev,
                             const unsigned int *indexes,
                             unsigned int nr_indexes, int delta);
void perfmon_mux_main(void *arg);

#endif /* KERN_PERFMON_PERFMON_SLOT_I_H */
