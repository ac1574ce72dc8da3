/*
 * perfmon's global tier: the device registry and slot allocation. A slot
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
#include <kern/perfmon/perfmon_i.h>
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
 * Poll period: a counter must be read before it can advance 2^width. Poll
 * twice per shortest wrap time at the device's maximum rate, so that a
 * poll timer late by less than a period still comes in time.
 */
#define PERFMON_POLL_SAFETY             2

/*
 * The registry: devices in registration order, the index of each its
 * index in every per-CPU and per-thread array. Devices are never
 * unregistered, so readers take no lock: perfmon_nr_devs is published
 * (release) after the device's entry and state are ready.
 */
static struct spinlock perfmon_devs_lock = SPINLOCK_INITIALIZER;
struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
unsigned int perfmon_nr_devs;
static struct perfmon_dev_state perfmon_dev_states[PERFMON_MAX_DEVS];

static bool
perfmon_dev_is_registered(const struct perfmon_dev *dev)
{
    unsigned int n = READ_ONCE(perfmon_nr_devs);

    for (unsigned int i = 0; i < n; i++) {
        if (perfmon_devs[i] == dev) {
            return true;
        }
    }

    return false;
}

struct perfmon_dev *
perfmon_get_dev(bool sw)
{
    unsigned int n = __atomic_load_n(&perfmon_nr_devs, __ATOMIC_ACQUIRE);

    for (unsigned int i = 0; i < n; i++) {
        if (perfmon_devs[i]->sw == sw) {
            return perfmon_devs[i];
        }
    }

    return NULL;
}

int
perfmon_dev_find(uint64_t id, unsigned int flags, struct perfmon_dev **devp,
                 uint64_t *configp)
{
    unsigned int n = __atomic_load_n(&perfmon_nr_devs, __ATOMIC_ACQUIRE);
    bool sw = (flags & PERFMON_EF_SW) != 0;
    int error = ENODEV;

    for (unsigned int i = 0; i < n; i++) {
        struct perfmon_dev *dev = perfmon_devs[i];
        int dev_error;

        if (dev->sw != sw) {
            continue;
        }

        dev_error = dev->ops->translate(configp, id, flags);

        if (!dev_error) {
            *devp = dev;
            return 0;
        }

        /* The first refusal says why, as with one device. */
        if (error == ENODEV) {
            error = dev_error;
        }
    }

    return error;
}

/*
 * Drop a reference on slot index (pin: a pinning one; enabled: an
 * enabled event's), freeing the slot with the last; the caller schedules
 * again. Return whether it was the last. Device lock held, interrupts
 * disabled.
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
    last = (--slot->nr_refs == 0);

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
 * held.
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
    int error = 0;
    bool any;

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
    }

    /* Before anything changes: a refusal moves no counter. */
    if ((unit & ~state->sched_mask) != 0 && !perfmon_mux_fits(dev, unit)) {
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

        slot->nr_refs++;
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

    changed = perfmon_sched_end(state);

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
    changed = perfmon_sched_end(state);
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

    if (READ_ONCE(slot->nr_refs) == 0
        || !(READ_ONCE(dev->state->sched_mask) & (1U << index))) {
        return false;
    }

    *counterp = slot->counter;
    *widthp = slot->width;
    return true;
}

uint64_t
perfmon_dev_poll_ticks(const struct perfmon_dev *dev)
{
    return dev->state->poll_ticks;
}

unsigned int
perfmon_dev_nr_used_slots(struct perfmon_dev *dev)
{
    unsigned int n = 0;

    /*
     * No lock: the device lock is taken with interrupts enabled, so an
     * interrupt handler taking it on a CPU that holds it would deadlock.
     * Each count is read once; the total is a snapshot.
     */
    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        n += (READ_ONCE(dev->state->slots[i].nr_refs) != 0);
    }

    return n;
}

/*
 * The poll period of a device in ticks: 0 for a device that needs none,
 * else at least 1; EINVAL when no period is safe.
 */
static int
perfmon_poll_period(const struct perfmon_dev *dev, uint64_t *ticksp)
{
    uint64_t ticks;

    if (dev->overflow_intr || dev->min_width >= 64) {
        *ticksp = 0;    /* interrupts, or a counter that never wraps */
        return 0;
    }

    if (dev->max_rate == 0) {
        return EINVAL;
    }

    ticks = ((1ULL << dev->min_width) / dev->max_rate) / PERFMON_POLL_SAFETY;

    if (ticks == 0) {
        return EINVAL;
    }

    *ticksp = ticks;
    return 0;
}

int
perfmon_register(struct perfmon_dev *dev)
{
    const struct perfmon_dev_ops *ops = dev->ops;
    uint64_t poll_ticks;

    if (dev->nr_counters == 0 || dev->nr_counters > PERFMON_MAX_COUNTERS
        || dev->min_width == 0 || dev->min_width > 64 || ops == NULL
        || ops->translate == NULL || ops->alloc == NULL || ops->free == NULL
        || ops->start == NULL || ops->stop == NULL || ops->read == NULL
        || (dev->overflow_intr && (ops->handle_overflow_intr == NULL
                                   || ops->overflow_consume == NULL))
        || ((ops->batch_begin == NULL) != (ops->batch_end == NULL))
        || (dev->preset_ends_overflows
            && dev->max_period > (1ULL << (dev->min_width - 1)))) {
        return EINVAL;
    }

    if (perfmon_poll_period(dev, &poll_ticks) != 0) {
        return EINVAL;
    }

    spinlock_lock(&perfmon_devs_lock);

    /* Software events name no device: one software device at most. */
    if (perfmon_nr_devs == PERFMON_MAX_DEVS
        || (dev->sw && perfmon_get_dev(true) != NULL)
        || perfmon_dev_is_registered(dev)) {
        spinlock_unlock(&perfmon_devs_lock);
        return EBUSY;
    }

    dev->state = &perfmon_dev_states[perfmon_nr_devs];
    dev->state->index = perfmon_nr_devs;
    spinlock_init(&dev->state->lock);

    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        dev->state->slots[i].nr_refs = 0;
        dev->state->link_masks[i] = 0;
    }

    dev->state->used_mask = 0;
    dev->state->sched_mask = 0;

    dev->state->poll_ticks = poll_ticks;

    perfmon_cpu_dev_init(dev);
    perfmon_devs[dev->state->index] = dev;
    __atomic_store_n(&perfmon_nr_devs, perfmon_nr_devs + 1,
                     __ATOMIC_RELEASE);
    spinlock_unlock(&perfmon_devs_lock);

    if (dev->state->poll_ticks != 0) {
        log_info("perfmon: %s: %u counters of %u bits, polled every %llu "
                 "ticks", dev->name, dev->nr_counters, dev->min_width,
                 (unsigned long long)dev->state->poll_ticks);
    } else {
        log_info("perfmon: %s: %u counters of %u bits, %s", dev->name,
                 dev->nr_counters, dev->min_width,
                 !dev->overflow_intr ? "never wrap"
                 : dev->nmi ? "overflow interrupt (NMI)"
                 : "overflow interrupt");
    }

    return 0;
}

void
perfmon_test_dev_lock(struct perfmon_dev *dev)
{
    spinlock_lock(&dev->state->lock);
}

void
perfmon_test_dev_unlock(struct perfmon_dev *dev)
{
    spinlock_unlock(&dev->state->lock);
}
