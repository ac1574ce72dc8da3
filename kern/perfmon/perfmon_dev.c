/*
 * perfmon's device registry: the devices drivers register, in order, and
 * the queries on them. Thread context for registration; the queries in
 * any context (the registry is published with release order and devices
 * never leave it), perfmon_dev_info among them: the clients' query
 * (kern/perfmon.h), so that a client reads no device structure.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/log.h>
#include <kern/perfmon.h>
#include <kern/perfmon/perfmon_cpu_i.h>
#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon/perfmon_slot_i.h>
#include <kern/spinlock.h>

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
struct spinlock perfmon_devs_lock = SPINLOCK_INITIALIZER;
struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
unsigned int perfmon_nr_devs;
static struct perfmon_dev_state perfmon_dev_states[PERFMON_MAX_DEVS];

static bool
perfmon_dev_is_registered(const struct perfmon_dev *dev)
{
    unsigned int n = perfmon_dev_count();

    for (unsigned int i = 0; i < n; i++) {
        if (perfmon_devs[i] == dev) {
            return true;
        }
    }

    return false;
}

struct perfmon_dev *
perfmon_dev_get(bool sw)
{
    unsigned int n = perfmon_dev_count();

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
    unsigned int n = perfmon_dev_count();
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
     * No lock: the device lock may be held with interrupts enabled (by
     * perfmon_dev_test_lock; the core takes it with them disabled), so an
     * interrupt handler taking it on a CPU that holds it would deadlock.
     * Each count is read once; the total is a snapshot.
     */
    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        n += (__atomic_load_n(&dev->state->slots[i].nr_refs,
                              __ATOMIC_RELAXED) != 0);
    }

    return n;
}

/*
 * The poll period of a device in ticks: 0 for a device that needs none,
 * else at least 1; EINVAL when no period is safe.
 */
static int
perfmon_dev_poll_period(const struct perfmon_dev *dev, uint64_t *ticksp)
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
perfmon_dev_register(struct perfmon_dev *dev)
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

    if (perfmon_dev_poll_period(dev, &poll_ticks) != 0) {
        return EINVAL;
    }

    spinlock_lock(&perfmon_devs_lock);

    /* Software events name no device: one software device at most. */
    if (perfmon_nr_devs == PERFMON_MAX_DEVS
        || (dev->sw && perfmon_dev_get(true) != NULL)
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
perfmon_dev_test_lock(struct perfmon_dev *dev)
{
    spinlock_lock(&dev->state->lock);
}

void
perfmon_dev_test_unlock(struct perfmon_dev *dev)
{
    spinlock_unlock(&dev->state->lock);
}

int
perfmon_dev_info(bool sw, struct perfmon_dev_info *info)
{
    const struct perfmon_dev *dev = perfmon_dev_get(sw);

    if (dev == NULL) {
        return ENODEV;
    }

    *info = (struct perfmon_dev_info){
        .name = dev->name,
        .nr_counters = dev->nr_counters,
        .min_width = dev->min_width,
        .fw_counters = dev->fw_counters,
    };
    return 0;
}
