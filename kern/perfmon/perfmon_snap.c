/*
 * perfmon snapshots: the state of the events of one target (a thread or
 * a CPU, one event or a group) at one instant on the owning CPU, taken to
 * attach, detach, read with times, or change (enable, disable, reset),
 * and the CPU events' operations that run there. A change is applied and
 * a read computed inside the snapshot, where they are serialized with
 * each other. Thread context; the operations run with interrupts
 * disabled on the owning CPU, asserted at their entries
 * (perfmon_snap_cpu_op_remote, perfmon_snap_td_op) or disabled just
 * before (perfmon_snap_take).
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

/* A CPU event's attach on its CPU (interrupts disabled: perfmon_snap_cpu). */
static void
perfmon_snap_cpu_attach(void *arg)
{
    struct perfmon_event *event = arg;
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    struct perfmon_cpu_slot *cslot;

    perfmon_cpu_sched_check(cpu, event->dev, perfmon_cpu_loaded_td());
    cslot = perfmon_cpu_slot_get(cpu, event->dev, event->slot_index,
                                 perfmon_cpu_loaded_td(),
                                 (event->period != 0) ? event : NULL);
    perfmon_cpu_slot_update(cpu, event->dev, event->slot_index);
    event->start = cslot->value;

    if (cslot->sampler != NULL) {
        perfmon_sample_arm(event->dev, cslot, event->period, event->period);
    }
}

/*
 * The detach's: return the slot's value at the detach, and let it go
 * (interrupts disabled: perfmon_snap_cpu).
 */
static uint64_t
perfmon_snap_cpu_detach(struct perfmon_event *event)
{
    uint64_t value = perfmon_cpu_op_update(event)->value;

    perfmon_cpu_slot_put(cpu_local_ptr(perfmon_cpu), event->dev,
                         event->slot_index);
    return value;
}

static void perfmon_snap_end(struct perfmon_snap *snap);
static void perfmon_snap_clock(struct perfmon_snap *snap, bool loaded);

/*
 * A thread's snapshot, its td operation: through perfmon_td_run, or in
 * place for the thread's own read (perfmon_snap_take). Interrupts
 * disabled.
 */
static void
perfmon_snap_td_op(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_snap *snap = structof(op, struct perfmon_snap, op);
    void (*fn)(struct perfmon_td_op *op, bool loaded);

    assert_intr_disabled();

    if (perfmon_event_is_clock(snap->events[0])) {
        perfmon_snap_clock(snap, loaded);
        return;
    }

    if (snap->action == PERFMON_SNAP_ATTACH) {
        fn = perfmon_td_op_attach;
    } else if (snap->action == PERFMON_SNAP_DETACH) {
        fn = perfmon_td_op_detach;
    } else {
        fn = perfmon_td_op_read;
    }

    for (unsigned int i = 0; i < snap->nr_events; i++) {
        struct perfmon_event *event = snap->events[i];

        op->dev = event->dev;
        op->index = event->slot_index;
        op->event = (event->period != 0) ? event : NULL;
        fn(op, loaded);
        snap->values[i] = op->value;
    }

    /* Loaded: the thread is this CPU's current one, its slice counts. */
    snap->now = cpu_get_tsc();
    snap->run = loaded ? thread_run_time(snap->events[0]->thread, snap->now)
                       : thread_run_total(snap->events[0]->thread);

    for (unsigned int i = 0; i < snap->nr_events; i++) {
        const struct perfmon_event *event = snap->events[i];
        unsigned int d = event->dev->state->index;
        const struct perfmon_cpu_slot *cslot;

        snap->offs[i] = op->td->off[d][event->slot_index];
        cslot = perfmon_cpu_slot(cpu_local_ptr(perfmon_cpu), event->dev,
                                 event->slot_index);

        /* Still without its counter here: the time since its mark. */
        if (loaded && !cslot->sched) {
            snap->offs[i] += snap->now - cslot->off_mark;
        }
    }

    perfmon_snap_end(snap);
}

/*
 * A CPU's snapshot: interrupts disabled, by perfmon_snap_take just before
 * its call, or asserted by perfmon_snap_cpu_op_remote.
 */
static void
perfmon_snap_cpu(void *arg)
{
    struct perfmon_snap *snap = arg;
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

    if (perfmon_event_is_clock(snap->events[0])) {
        perfmon_snap_clock(snap, false);
        return;
    }

    for (unsigned int i = 0; i < snap->nr_events; i++) {
        struct perfmon_event *event = snap->events[i];

        if (snap->action == PERFMON_SNAP_ATTACH) {
            perfmon_snap_cpu_attach(event);
            snap->values[i] = event->start;
        } else if (snap->action == PERFMON_SNAP_DETACH) {
            snap->values[i] = perfmon_snap_cpu_detach(event);
        } else {
            snap->values[i] = perfmon_cpu_slot_update(cpu, event->dev,
                                                      event->slot_index)->value;
        }
    }

    snap->now = cpu_get_tsc();
    snap->run = 0;

    for (unsigned int i = 0; i < snap->nr_events; i++) {
        const struct perfmon_cpu_slot *cslot;

        cslot = perfmon_cpu_slot(cpu, snap->events[i]->dev,
                                 snap->events[i]->slot_index);
        snap->offs[i] = cslot->off_total;

        if (!cslot->sched) {
            snap->offs[i] += snap->now - cslot->off_since;
        }
    }

    perfmon_snap_end(snap);
}

/*
 * A CPU's snapshot, a marked section (kern/perfmon_nmi.h), in place on
 * the CPU: perfmon_snap_take disables interrupts just before (not
 * asserted, on the attach's path), or perfmon_snap_cpu_op_remote.
 */
static void
perfmon_snap_cpu_op(void *arg)
{
    perfmon_nmi_enter();
    perfmon_snap_cpu(arg);
    perfmon_nmi_leave();
}

/* The same, as the cross-CPU call. */
static void
perfmon_snap_cpu_op_remote(void *arg)
{
    assert_intr_disabled();
    perfmon_snap_cpu_op(arg);
}

/*
 * Take a snapshot of events attached (or being attached) to one thread or
 * CPU, the first one's: through the thread's operation, or on the CPU,
 * in place when it is this one. A read (PERFMON_SNAP_READ) applies apply
 * to each event there, or without one computes the counts and times.
 */
void
perfmon_snap_take(struct perfmon_snap *snap,
                  struct perfmon_event *const *events,
                  unsigned int nr_events, unsigned int action,
                  void (*apply)(struct perfmon_event *event,
                                const struct perfmon_snap *snap,
                                unsigned int i))
{
    const struct perfmon_event *leader = events[0];
    unsigned long flags;

    assert(nr_events >= 1 && nr_events <= PERFMON_GROUP_MAX);
    snap->events = events;
    snap->nr_events = nr_events;
    snap->action = action;
    snap->apply = apply;

    if (leader->thread != NULL) {
        snap->op = (struct perfmon_td_op){
            .td = thread_perfmon_td(leader->thread),
            .fn = perfmon_snap_td_op,
        };

        /* One's own thread: read in place, as perfmon_event_read. */
        if (action == PERFMON_SNAP_READ && leader->thread == thread_self()) {
            flags = cpu_intr_save();
            perfmon_nmi_enter();
            perfmon_snap_td_op(&snap->op, true);
            perfmon_nmi_leave();
            cpu_intr_restore(flags);
        } else {
            perfmon_td_run(&snap->op);
        }

        return;
    }

    flags = cpu_intr_save();

    if (leader->cpu == cpu_id()) {
        perfmon_snap_cpu_op(snap);
        cpu_intr_restore(flags);
        return;
    }

    cpu_intr_restore(flags);
    xcall_call(leader->cpu, perfmon_snap_cpu_op_remote, snap);
}

/*
 * An attached event's times (TSC cycles) at a snapshot, given its slot's
 * time without a counter then (off). A CPU event is enabled all the time
 * since its enable; a thread event only while its thread runs (its run
 * time since then, as Linux's task events are), so that scaling by
 * enabled / running estimates what the thread would have counted with a
 * counter all the time it ran. Either runs while enabled, less the time
 * its slot held no counter. Every difference is taken on one CPU's TSC:
 * a CPU event's snapshots all run on its CPU, and a thread's run time and
 * time without a counter add up slices each measured on the CPU it ran
 * on, so neither time goes back whatever the TSCs of two CPUs read (a
 * thread event migrates). The clamps keep running within enabled.
 */
static void
perfmon_snap_times_at(const struct perfmon_event *event,
                      const struct perfmon_snap *snap, uint64_t off,
                      uint64_t *enabledp, uint64_t *runningp)
{
    uint64_t enabled = 0, running;

    if (!event->disabled) {
        if (event->thread != NULL) {
            if (snap->run > event->enabled_run) {
                enabled = snap->run - event->enabled_run;
            }
        } else if (snap->now > event->enabled_tsc) {
            enabled = snap->now - event->enabled_tsc;
        }

        off = (off > event->enabled_off) ? off - event->enabled_off : 0;
        running = (enabled > off) ? enabled - off : 0;
    } else {
        running = 0;
    }

    *enabledp = event->time_enabled + enabled;
    *runningp = event->time_running + running;
}

/*
 * An attached event's count at a snapshot, given its tier value (value)
 * and its time enabled (enabled, TSC cycles) then. A counting event's is
 * its tier's since its start; a clock's is its time enabled in
 * nanoseconds since its start, the time enabled at its attach or last
 * reset (so equal to its time enabled until a reset). A disabled one's is
 * frozen, in the count's unit.
 */
static uint64_t
perfmon_snap_count_at(const struct perfmon_event *event, uint64_t value,
                      uint64_t enabled)
{
    if (!perfmon_event_is_clock(event)) {
        return perfmon_event_count_at(event, value);
    }

    return event->disabled ? event->frozen
                           : perfmon_tsc_to_ns(enabled - event->start);
}

/*
 * A read's end, where its snapshot was taken: apply the change, or
 * compute the read's results. Interrupts disabled, on the owning CPU
 * (as for perfmon_snap_cpu, and asserted by perfmon_snap_td_op).
 */
static void
perfmon_snap_end(struct perfmon_snap *snap)
{
    if (snap->action != PERFMON_SNAP_READ) {
        return;
    }

    for (unsigned int i = 0; i < snap->nr_events; i++) {
        if (snap->apply != NULL) {
            snap->apply(snap->events[i], snap, i);
        } else {
            snap->counts[i] = perfmon_event_count_at(snap->events[i],
                                                     snap->values[i]);
        }
    }

    if (snap->apply == NULL) {
        perfmon_snap_times_at(snap->events[0], snap, snap->offs[0],
                              &snap->enabled, &snap->running);
    }
}

/*
 * A clock's snapshot, in place of a thread's or a CPU's (a clock is
 * always alone: no group takes one): no slot, only the TSC and, for a
 * thread (loaded: on this CPU), its run time. Interrupts disabled, on the
 * owning CPU, as perfmon_snap_end.
 */
static void
perfmon_snap_clock(struct perfmon_snap *snap, bool loaded)
{
    const struct thread *thread = snap->events[0]->thread;

    snap->values[0] = 0;
    snap->offs[0] = 0;
    snap->now = cpu_get_tsc();

    if (thread == NULL) {
        snap->run = 0;
    } else {
        snap->run = loaded ? thread_run_time(thread, snap->now)
                           : thread_run_total(thread);
    }

    if (snap->action != PERFMON_SNAP_READ) {
        return;
    }

    if (snap->apply != NULL) {
        snap->apply(snap->events[0], snap, 0);
        return;
    }

    perfmon_snap_times_at(snap->events[0], snap, 0, &snap->enabled,
                          &snap->running);
    snap->counts[0] = perfmon_snap_count_at(snap->events[0], 0,
                                            snap->enabled);
}

/*
 * The changes below apply to an event the values at a snapshot of the
 * event, its i-th.
 */

/* Start an event's count and times at the snapshot of its attach. */
static void
perfmon_snap_event_begin(struct perfmon_event *event,
                         const struct perfmon_snap *snap, unsigned int i)
{
    event->start = snap->values[i];
    event->final = 0;
    event->disabled = false;
    event->frozen = 0;
    event->time_enabled = 0;
    event->time_running = 0;
    event->enabled_tsc = snap->now;
    event->enabled_run = snap->run;
    event->enabled_off = snap->offs[i];
}

void
perfmon_snap_apply_disable(struct perfmon_event *event,
                           const struct perfmon_snap *snap, unsigned int i)
{
    uint64_t enabled, running;

    if (!event->disabled) {
        perfmon_snap_times_at(event, snap, snap->offs[i], &enabled, &running);
        __atomic_store_n(&event->frozen,
                         perfmon_snap_count_at(event, snap->values[i],
                                               enabled),
                         __ATOMIC_RELAXED);
        event->time_enabled = enabled;
        event->time_running = running;
        event->disabled = true;

        /* Readers that find it disabled read frozen without a snapshot. */
        __atomic_store_n(&event->state, PERFMON_EVENT_DISABLED,
                         __ATOMIC_RELEASE);
    }
}

void
perfmon_snap_apply_enable(struct perfmon_event *event,
                          const struct perfmon_snap *snap, unsigned int i)
{
    unsigned int state;

    if (event->disabled) {
        /*
         * Count on from the frozen count: re-base the start (a clock's
         * counts on from its times, which went on from where they stood).
         */
        if (perfmon_event_is_clock(event)) {
            state = PERFMON_EVENT_CLOCK;
        } else {
            event->start = snap->values[i] - event->frozen;
            state = (event->thread != NULL) ? PERFMON_EVENT_THREAD
                                            : PERFMON_EVENT_CPU;
        }

        event->enabled_tsc = snap->now;
        event->enabled_run = snap->run;
        event->enabled_off = snap->offs[i];
        event->disabled = false;
        /* Release: publishes the new start to perfmon_event_read. */
        __atomic_store_n(&event->state, state, __ATOMIC_RELEASE);
    }
}

void
perfmon_snap_apply_reset(struct perfmon_event *event,
                         const struct perfmon_snap *snap, unsigned int i)
{
    uint64_t enabled, running;

    if (event->disabled) {
        /* Relaxed: a lockless reader loads it (perfmon_event_read). */
        __atomic_store_n(&event->frozen, 0, __ATOMIC_RELAXED);
    } else if (perfmon_event_is_clock(event)) {
        /* A clock counts again from its time enabled now. */
        perfmon_snap_times_at(event, snap, snap->offs[i], &enabled, &running);
        event->start = enabled;
    } else {
        event->start = snap->values[i];
    }
}

void
perfmon_snap_attach(struct perfmon_event *const *events,
                    unsigned int nr_events)
{
    struct perfmon_snap snap;

    perfmon_snap_take(&snap, events, nr_events, PERFMON_SNAP_ATTACH, NULL);

    for (unsigned int i = 0; i < nr_events; i++) {
        perfmon_snap_event_begin(events[i], &snap, i);
    }
}

/* Detach attached events of one target at one instant. */
void
perfmon_snap_detach(struct perfmon_event *const *events,
                    unsigned int nr_events)
{
    struct perfmon_snap snap;

    perfmon_snap_take(&snap, events, nr_events, PERFMON_SNAP_DETACH, NULL);

    /* A group's slots part before they can take turns apart. */
    if (events[0]->group != NULL) {
        unsigned int indexes[PERFMON_GROUP_MAX] = { 0 };

        for (unsigned int i = 0; i < nr_events; i++) {
            indexes[i] = events[i]->slot_index;
        }

        perfmon_mux_unlink(events[0]->dev, indexes, nr_events);
    }

    for (unsigned int i = 0; i < nr_events; i++) {
        struct perfmon_event *event = events[i];
        struct thread *thread = event->thread;
        uint64_t enabled, running;

        perfmon_snap_times_at(event, &snap, snap.offs[i], &enabled, &running);
        event->final = perfmon_snap_count_at(event, snap.values[i], enabled);
        event->time_enabled = enabled;
        event->time_running = running;

        /* Before the unref: a sampler's slot is released from its td. */
        if (event->dev != NULL) {
            perfmon_slot_release(event->dev, event->slot_index,
                                 (event->flags & PERFMON_EF_PINNED) != 0,
                                 !event->disabled, event->period != 0,
                                 (thread != NULL) ? thread_perfmon_td(thread)
                                                 : NULL,
                                 event->cpu);
        }

        event->thread = NULL;

        if (thread != NULL) {
            thread_unref(thread);
        }

        if (event->period != 0) {
            perfmon_session_unref(event->session);
        }

        /* Release: publishes final to perfmon_event_read. */
        __atomic_store_n(&event->state, PERFMON_EVENT_DETACHED,
                         __ATOMIC_RELEASE);
    }
}

void
perfmon_snap_bind(struct perfmon_event *event, struct perfmon_dev *dev,
                  unsigned int index, struct thread *thread,
                  unsigned int cpu)
{
    event->dev = dev;
    event->dev_index = (dev != NULL) ? dev->state->index : 0;
    event->slot_index = index;
    event->thread = thread;

    if (thread != NULL) {
        thread_ref(thread);
    } else {
        event->cpu = cpu;
        /* A clock has no device: no slot, no bank. */
        event->cpu_slot = (dev != NULL)
                          ? perfmon_cpu_slot(percpu_ptr(perfmon_cpu, cpu), dev,
                                             index)
                          : NULL;
        /* Fixed from the device's registration on (perfmon_cpu_dev_init):
           a read loads it from the event, not from the CPU's state. */
        event->cpu_bank = (dev != NULL)
                          ? perfmon_cpu_bank(percpu_ptr(perfmon_cpu, cpu), dev)
                          : NULL;
    }
}
