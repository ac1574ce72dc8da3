/*
 * perfmon groups: events attached, read, enabled, disabled, reset and
 * detached as a unit, at one instant, and multiplexed as one unit of
 * linked slots. The group and its events are the owner's memory and its
 * calls are serialized by the owner, except reads. Thread context.
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
#include <kern/perfmon/perfmon_family_i.h>
#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon/perfmon_slot_i.h>
#include <kern/perfmon/perfmon_td_i.h>
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

#define PERFMON_GROUP_MAGIC     0x70666d67U

static bool
perfmon_group_valid(const struct perfmon_group *group)
{
    return group != NULL && group->magic == PERFMON_GROUP_MAGIC
           && group->nr_events <= PERFMON_GROUP_MAX;
}

static bool
perfmon_group_attached(const struct perfmon_group *group)
{
    return perfmon_group_valid(group)
           && (group->state == PERFMON_EVENT_THREAD
               || group->state == PERFMON_EVENT_CPU
               || group->state == PERFMON_EVENT_FAMILY);
}

int
perfmon_group_init(struct perfmon_group *group)
{
    if (group == NULL || perfmon_group_attached(group)) {
        return EINVAL;
    }

    group->magic = PERFMON_GROUP_MAGIC;
    group->state = PERFMON_EVENT_INIT;
    group->nr_events = 0;
    return 0;
}

/* Whether an event is initialized and detached (or never attached). */
static bool
perfmon_group_event_idle(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && (event->state == PERFMON_EVENT_INIT
               || event->state == PERFMON_EVENT_DETACHED);
}

int
perfmon_group_add(struct perfmon_group *group, struct perfmon_event *event)
{
    unsigned int i;

    if (!perfmon_group_valid(group) || perfmon_group_attached(group)
        || !perfmon_group_event_idle(event) || event->period != 0
        || perfmon_event_is_clock(event) || event->group != NULL) {
        return EINVAL;
    }

    /*
     * A member initialized again left the group (its group is NULL) but
     * keeps its place in events[]: added back, it takes that place again,
     * rather than a second one (which would attach it twice).
     */
    for (i = 0; i < group->nr_events && group->events[i] != event; i++) {
        continue;
    }

    /* One device: hardware and software events never mix. */
    for (unsigned int j = 0; j < group->nr_events; j++) {
        if (j != i && group->events[j]->group == group
            && ((event->flags ^ group->events[j]->flags)
                & (PERFMON_EF_SW | PERFMON_EF_INHERIT))) {
            return EINVAL;
        }
    }

    if (i == PERFMON_GROUP_MAX) {
        return E2BIG;
    }

    if (i == group->nr_events) {
        group->events[group->nr_events++] = event;
    }

    event->group = group;
    return 0;
}

/*
 * Check a group can be attached and take a slot for each of its events,
 * all or none, into indexes, as one unit decided before anything changes
 * (perfmon_slot_acquire); nothing of the events changes.
 */
static int
perfmon_group_prepare(struct perfmon_group *group, struct perfmon_dev **devp,
                      unsigned int *indexes)
{
    uint64_t configs[PERFMON_GROUP_MAX];
    bool pins[PERFMON_GROUP_MAX];
    unsigned int nr_configs = 0, i;
    struct perfmon_dev *dev;
    int error;

    if (!perfmon_group_valid(group) || perfmon_group_attached(group)
        || group->nr_events == 0) {
        return EINVAL;
    }

    for (i = 0; i < group->nr_events; i++) {
        const struct perfmon_event *event = group->events[i];

        if (!perfmon_group_event_idle(event) || event->group != group
            || event->period != 0
            || ((event->flags ^ group->events[0]->flags)
                & (PERFMON_EF_SW | PERFMON_EF_INHERIT))) {
            return EINVAL;      /* initialized again, or attached alone */
        }
    }

    /* The leader's device counts the group, or none. */
    error = perfmon_dev_find(group->events[0]->id, group->events[0]->flags,
                             &dev, &configs[0]);

    if (error) {
        return error;
    }

    /* Events with equal configurations share a counter. */
    for (i = 0; i < group->nr_events; i++) {
        const struct perfmon_event *event = group->events[i];
        unsigned int j;

        error = dev->ops->translate(&configs[i], event->id, event->flags);

        if (error) {
            return error;
        }

        pins[i] = (event->flags & PERFMON_EF_PINNED) != 0;

        for (j = 0; j < i && configs[j] != configs[i]; j++) {
            continue;
        }

        nr_configs += (j == i);
    }

    if (nr_configs > dev->nr_counters) {
        return E2BIG;
    }

    error = perfmon_slot_acquire(dev, configs, pins, group->nr_events, false,
                                 NULL, 0, indexes);

    if (error) {
        return error;
    }

    *devp = dev;
    return 0;
}

/* Attach the group to thread, or to CPU cpu when thread is NULL. */
static int
perfmon_group_attach_target(struct perfmon_group *group,
                            struct thread *thread, unsigned int cpu)
{
    unsigned int indexes[PERFMON_GROUP_MAX];
    unsigned int state = (thread != NULL) ? PERFMON_EVENT_THREAD
                                          : PERFMON_EVENT_CPU;
    struct perfmon_family *family = NULL;
    struct perfmon_dev *dev;
    int error;

    /* Inherited: its family first, so that a failure moves no slot. */
    if (perfmon_group_valid(group) && group->nr_events != 0
        && (group->events[0]->flags & PERFMON_EF_INHERIT)) {
        if (thread == NULL || perfmon_group_attached(group)) {
            return EINVAL;
        }

        error = perfmon_family_create(group->events, group->nr_events,
                                      &family);

        if (error) {
            return error;
        }

        state = PERFMON_EVENT_FAMILY;
    }

    error = perfmon_group_prepare(group, &dev, indexes);

    if (error) {
        perfmon_family_destroy(family);
        return error;
    }

    for (unsigned int i = 0; i < group->nr_events; i++) {
        perfmon_snap_bind(group->events[i], dev, indexes[i], thread, cpu);
    }

    perfmon_snap_attach(group->events, group->nr_events);

    if (family != NULL) {
        perfmon_family_start(family, thread);
    }

    for (unsigned int i = 0; i < group->nr_events; i++) {
        /* Release: publishes the attach to perfmon_event_read. */
        __atomic_store_n(&group->events[i]->state, state, __ATOMIC_RELEASE);
    }

    group->state = state;
    return 0;
}

int
perfmon_group_attach(struct perfmon_group *group, struct thread *thread)
{
    if (thread == NULL || thread_exited(thread)) {
        return EINVAL;
    }

    return perfmon_group_attach_target(group, thread, 0);
}

int
perfmon_group_attach_cpu(struct perfmon_group *group, unsigned int cpu)
{
    if (cpu >= cpu_count() || !cpu_online(cpu)) {
        return EINVAL;
    }

    return perfmon_group_attach_target(group, NULL, cpu);
}

int
perfmon_group_detach(struct perfmon_group *group)
{
    if (!perfmon_group_attached(group)) {
        return EINVAL;
    }

    if (group->events[0]->family != NULL) {
        perfmon_family_detach(group->events[0]->family);
    } else {
        perfmon_snap_detach(group->events, group->nr_events);
    }

    group->state = PERFMON_EVENT_DETACHED;
    return 0;
}

int
perfmon_group_read(struct perfmon_group *group,
                   struct perfmon_group_value *valuep)
{
    const struct perfmon_event *leader;
    struct perfmon_snap snap;
    uint64_t enabled, running;

    if (!perfmon_group_valid(group) || group->nr_events == 0) {
        return EINVAL;
    }

    leader = group->events[0];

    switch (group->state) {
    case PERFMON_EVENT_THREAD:
    case PERFMON_EVENT_CPU:
        perfmon_snap_take(&snap, group->events, group->nr_events,
                          PERFMON_SNAP_READ, NULL);

        for (unsigned int i = 0; i < group->nr_events; i++) {
            valuep->counts[i] = snap.counts[i];
        }

        enabled = snap.enabled;
        running = snap.running;
        break;
    case PERFMON_EVENT_FAMILY:
        perfmon_family_read(leader->family, valuep->counts, &enabled,
                            &running, NULL, 0, NULL, 0);
        break;
    case PERFMON_EVENT_DETACHED:
        for (unsigned int i = 0; i < group->nr_events; i++) {
            valuep->counts[i] = group->events[i]->final;
        }

        enabled = leader->time_enabled;
        running = leader->time_running;
        break;
    default:
        return EINVAL;
    }

    valuep->nr_events = group->nr_events;
    valuep->time_enabled = perfmon_tsc_to_ns(enabled);
    valuep->time_running = perfmon_tsc_to_ns(running);
    return 0;
}

/*
 * Apply a change to every event of an attached group at one snapshot;
 * delta: the change enables (1) or disables (-1) events, or neither (0),
 * for the slots of the events it toggles.
 */
static int
perfmon_group_change(struct perfmon_group *group,
                     void (*apply)(struct perfmon_event *event,
                                   const struct perfmon_snap *snap,
                                   unsigned int i),
                     int delta)
{
    unsigned int indexes[PERFMON_GROUP_MAX], nr_indexes = 0;
    bool disabled[PERFMON_GROUP_MAX];
    struct perfmon_snap snap;

    if (!perfmon_group_attached(group)
        || group->state == PERFMON_EVENT_FAMILY) {
        return EINVAL;
    }

    /* The owner's calls are serialized: only this one changes them. */
    for (unsigned int i = 0; i < group->nr_events; i++) {
        disabled[i] = group->events[i]->disabled;
    }

    perfmon_snap_take(&snap, group->events, group->nr_events,
                      PERFMON_SNAP_READ, apply);

    for (unsigned int i = 0; i < group->nr_events; i++) {
        if (delta != 0 && disabled[i] != group->events[i]->disabled) {
            indexes[nr_indexes++] = group->events[i]->slot_index;
        }
    }

    perfmon_mux_enabled_add(group->events[0]->dev, indexes, nr_indexes,
                            delta);
    return 0;
}

int
perfmon_group_enable(struct perfmon_group *group)
{
    return perfmon_group_change(group, perfmon_snap_apply_enable, 1);
}

int
perfmon_group_disable(struct perfmon_group *group)
{
    return perfmon_group_change(group, perfmon_snap_apply_disable, -1);
}

int
perfmon_group_reset(struct perfmon_group *group)
{
    return perfmon_group_change(group, perfmon_snap_apply_reset, 0);
}
