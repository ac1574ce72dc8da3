/*
 * perfmon's global tier: slot allocation. A slot
 * is one raw event of one device, shared (reference counted) by the
 * counting events of that raw event; sampling events of a raw event share
 * a sampling slot of their own wherever they can never need its counter at
 * once on one CPU (perfmon_slot_sampler_fits). Allocation and release take
 * the device's lock with interrupts disabled and call the schedule
 * (perfmon_mux.c) before they release it; whether a unit of slots could
 * ever run is decided before anything changes, so that a refusal moves no
 * counter. Thread context, except the queries.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/assert.h>
#include <kern/bitops.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/perfmon/perfmon_cpu_i.h>
#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon/perfmon_slot_i.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/printf.h>
#include <kern/spinlock.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/cpu_mp.h>

/*
 * Drop a reference on slot index (pin: a pinning one; enabled: an
 * enabled event's), freeing the slot with the last; the caller schedules
 * again. Return whether it was the last. Device lock held, interrupts
 * disabled: by perfmon_slot_acquire and perfmon_slot_release, its
 * callers, which take the lock (not asserted on the attach's path; the
 * schedule asserts it, perfmon_mux_schedule).
 */
static bool
perfmon_slot_unref(struct perfmon_dev *dev, unsigned int index, bool pin,
                   bool enabled)
{
    struct perfmon_dev_state *state = dev->state;
    struct perfmon_slot *slot = &state->slots[index];
    bool last;

    slot->nr_pinned -= pin;
    slot->nr_enabled -= enabled;
    /* Relaxed: nr_refs changes under the device lock; lockless readers
       (perfmon_dev_nr_used_slots, the tiers' checks) take a snapshot. */
    __atomic_store_n(&slot->nr_refs, slot->nr_refs - 1, __ATOMIC_RELAXED);
    last = (slot->nr_refs == 0);

    if (last) {
        perfmon_mux_drop(dev, 1U << index);
        state->used_mask &= ~(1U << index);
        slot->sampling = false;
    }

    return last;
}

/*
 * Whether a sampler of thread td (or, td NULL, of CPU cpu) may share
 * sampling slot index of dev: no sampler of the slot could be live on a
 * CPU at the same time as it. Device lock held.
 */
static bool
perfmon_slot_sampler_fits(const struct perfmon_dev_state *state,
                          unsigned int index, const struct perfmon_td *td,
                          unsigned int cpu)
{
    const struct perfmon_slot *slot = &state->slots[index];

    spinlock_assert_held(&state->lock);

    if (td != NULL) {
        return slot->sampler_cpus == 0
               && !(td->sampler_slots[state->index] & (1U << index));
    }

    return slot->nr_td_samplers == 0 && !(slot->sampler_cpus & (1ULL << cpu));
}

/*
 * Count (delta 1) or no longer count (delta -1) a sampler of td (or, td
 * NULL, of CPU cpu) on sampling slot index. Device lock held.
 */
static void
perfmon_slot_sampler_add(struct perfmon_dev_state *state, unsigned int index,
                         struct perfmon_td *td, unsigned int cpu, int delta)
{
    struct perfmon_slot *slot = &state->slots[index];

    spinlock_assert_held(&state->lock);

    if (td != NULL) {
        slot->nr_td_samplers += delta;

        if (delta > 0) {
            td->sampler_slots[state->index] |= 1U << index;
        } else {
            td->sampler_slots[state->index] &= ~(1U << index);
        }
    } else if (delta > 0) {
        slot->sampler_cpus |= 1ULL << cpu;
    } else {
        slot->sampler_cpus &= ~(1ULL << cpu);
    }
}

/*
 * The slot for config: one counting it already that the event may share
 * (a counting slot for a counting event; a sampling slot whose samplers
 * can never be live beside it for a sampler of td, or of CPU cpu when td
 * is NULL), else a free one that none of the slots chosen for the same
 * call (new) takes; PERFMON_MAX_SLOTS when there is none. Device lock
 * held by perfmon_slot_acquire, its caller, which takes it (not asserted
 * on the attach's path).
 */
static unsigned int
perfmon_slot_find(const struct perfmon_dev_state *state, uint64_t config,
                  bool sampler, const struct perfmon_td *td, unsigned int cpu,
                  uint32_t new)
{
    unsigned int free = PERFMON_MAX_SLOTS;

    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        const struct perfmon_slot *slot = &state->slots[i];

        if (slot->nr_refs != 0 && slot->config == config
            && slot->sampling == sampler
            && (!sampler || perfmon_slot_sampler_fits(state, i, td, cpu))) {
            return i;
        }

        if (slot->nr_refs == 0 && !(new & (1U << i))
            && free == PERFMON_MAX_SLOTS) {
            free = i;
        }
    }

    return free;
}

/*
 * Take a slot for each of nr events (configs[k], pins[k]: it pins its
 * slot), linked into one unit when there are several (a group's: they
 * hold counters together), and schedule them. Events of one
 * configuration share its slot, each with a reference. A sampling event
 * (sampler, nr 1, of thread td or, td NULL, of CPU cpu) shares only a
 * sampling slot, with samplers that can never be live on a CPU beside it,
 * else takes a free one: its counter is preset for its period on each
 * CPU, for the sampler live there; like a pinned event's, its slot must
 * hold a counter at once.
 *
 * Whether the unit could ever run is decided before anything changes, so
 * that a refusal moves no counter of any other unit (a unit found too
 * large once linked would otherwise drop the counters of the units it
 * joins while it is scheduled and unlinked again). Only a pinned unit
 * that the driver's constraints leave no room for is found out by the
 * schedule itself, and undone after.
 *
 * Return 0 with the slots in indexes, or EAGAIN: no free slot, or no
 * counters the unit could ever hold while the pinned units hold theirs.
 * Thread context.
 */
int
perfmon_slot_acquire(struct perfmon_dev *dev, const uint64_t *configs,
                     const bool *pins, unsigned int nr, bool sampler,
                     struct perfmon_td *td, unsigned int cpu,
                     unsigned int *indexes)
{
    struct perfmon_dev_state *state = dev->state;
    uint32_t new = 0, unit = 0, changed = 0;
    uint64_t least, most;
    unsigned long flags;
    bool any, pin = sampler;
    int error = 0;

    assert(nr >= 1 && nr <= PERFMON_GROUP_MAX && (!sampler || nr == 1));
    spinlock_lock_intr_save(&state->lock, &flags);

    for (unsigned int k = 0; k < nr; k++) {
        unsigned int j, index;

        /* A configuration met earlier in the call shares its slot. */
        for (j = 0; j < k && configs[j] != configs[k]; j++) {
            continue;
        }

        index = (j < k) ? indexes[j]
                        : perfmon_slot_find(state, configs[k], sampler, td,
                                            cpu, new);

        if (index == PERFMON_MAX_SLOTS) {
            error = EAGAIN;
            goto out;
        }

        indexes[k] = index;

        if (state->slots[index].nr_refs == 0) {
            new |= 1U << index;
        }

        unit |= perfmon_mux_unit(state, index);
        pin |= pins[k];
    }

    /* Before anything changes: a refusal moves no counter. */
    if (!perfmon_mux_fits(dev, unit, pin)) {
        error = EAGAIN;
        goto out;
    }

    perfmon_mux_account(state);
    any = perfmon_mux_range(state, &least, &most);

    for (unsigned int k = 0; k < nr; k++) {
        struct perfmon_slot *slot = &state->slots[indexes[k]];

        if (slot->nr_refs == 0) {
            assert(!(state->sched_mask & (1U << indexes[k])));
            state->used_mask |= 1U << indexes[k];
            slot->config = configs[k];
            slot->sampling = sampler;
            slot->sampler_cpus = 0;
            slot->nr_td_samplers = 0;
            slot->nr_pinned = 0;
            slot->nr_enabled = 0;
            slot->sched_time = perfmon_mux_level(0, any, least, most);
        } else if (!perfmon_mux_slot_wanted(slot)) {
            slot->sched_time = perfmon_mux_level(slot->sched_time, any, least,
                                                 most);
        }

        __atomic_store_n(&slot->nr_refs, slot->nr_refs + 1, __ATOMIC_RELAXED);
        slot->nr_pinned += pins[k];
        slot->nr_enabled++;          /* events attach enabled */
    }

    perfmon_mux_links_add(state, indexes, nr, 1);
    error = perfmon_mux_schedule(dev, false);

    /*
     * A pinned unit the driver's constraints leave no room for: undo it
     * all, then schedule once. A schedule in between would see members
     * left pinned and unlinked, which may fit no better (an assertion).
     * The units the failed schedule dropped take counters again by time
     * served, which may not give each the counter it held.
     */
    if (error) {
        perfmon_mux_links_add(state, indexes, nr, -1);

        for (unsigned int k = nr; k-- > 0;) {
            perfmon_slot_unref(dev, indexes[k], pins[k], true);
        }

        perfmon_mux_reschedule(dev);
    } else if (sampler) {
        perfmon_slot_sampler_add(state, indexes[0], td, cpu, 1);
    }

    changed = perfmon_mux_sched_end(state);

out:
    spinlock_unlock_intr_restore(&state->lock, flags);

    /* No CPU uses a new slot yet: each checks before it does. */
    perfmon_mux_publish(dev, changed & ~new);
    return error;
}

void
perfmon_slot_release(struct perfmon_dev *dev, unsigned int index, bool pin,
                     bool enabled, bool sampler, struct perfmon_td *td,
                     unsigned int cpu)
{
    struct perfmon_dev_state *state = dev->state;
    struct perfmon_slot *slot = &state->slots[index];
    unsigned long flags;
    uint32_t changed;
    bool last;

    spinlock_lock_intr_save(&state->lock, &flags);
    assert(slot->nr_refs != 0 && slot->nr_pinned >= (unsigned int)pin
           && slot->nr_enabled >= (unsigned int)enabled
           && slot->sampling == sampler);

    if (sampler) {
        perfmon_slot_sampler_add(state, index, td, cpu, -1);
    }

    last = perfmon_slot_unref(dev, index, pin, enabled);
    perfmon_mux_reschedule(dev);
    changed = perfmon_mux_sched_end(state);
    spinlock_unlock_intr_restore(&state->lock, flags);

    /* No CPU uses a slot released by its last event. */
    perfmon_mux_publish(dev, last ? changed & ~(1U << index) : changed);
}

bool
perfmon_slot_counter(const struct perfmon_dev *dev, unsigned int index,
                     unsigned int *counterp, unsigned int *widthp)
{
    const struct perfmon_slot *slot;

    if (index >= PERFMON_MAX_SLOTS) {
        return false;
    }

    slot = &dev->state->slots[index];

    if (__atomic_load_n(&slot->nr_refs, __ATOMIC_RELAXED) == 0
        || !(__atomic_load_n(&dev->state->sched_mask, __ATOMIC_RELAXED)
             & (1U << index))) {
        return false;
    }

    *counterp = slot->counter;
    *widthp = slot->width;
    return true;
}
