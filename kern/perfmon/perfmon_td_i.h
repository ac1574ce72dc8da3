/*
 * perfmon's per-thread tier and snapshots, private to kern/perfmon/: an
 * operation on a thread's slot run where its counters live (perfmon_td.c),
 * and a target's events taken at one instant (perfmon_snap.c), for the
 * event and group API above them. Locking: perfmon_i.h.
 */
#ifndef KERN_PERFMON_PERFMON_TD_I_H
#define KERN_PERFMON_PERFMON_TD_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_td.h>
#include <kern/thread.h>

_Static_assert(sizeof(struct perfmon_td_slot) == 32,
               "the switch indexes a thread's slots by a shift");

/*
 * An operation on one slot of a thread, run where the thread's counters
 * live. fn runs with interrupts disabled and, from perfmon_td_run, td
 * locked; a thread's reads of its own events run it in place without the
 * lock (perfmon_event_read_thread_slow, perfmon_snap_take), its counters
 * being written only on its CPU with interrupts disabled. loaded tells
 * whether the slot is loaded on the calling CPU (else the thread is off
 * every CPU and only its totals exist).
 */
struct perfmon_td_op {
    struct perfmon_td *td;
    struct perfmon_dev *dev;
    unsigned int index;
    struct perfmon_event *event;    /* sampling operations: the event */
    void (*fn)(struct perfmon_td_op *op, bool loaded);
    uint64_t value;
    bool done;
};

/* perfmon_td.c: the per-thread tier */
uint64_t perfmon_td_slot_value(struct perfmon_td *td, struct perfmon_dev *dev,
                               unsigned int index, bool loaded);
void perfmon_td_run(struct perfmon_td_op *op);
void perfmon_td_op_attach(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_read(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_detach(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_count(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_refresh(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_set_period(struct perfmon_td_op *op, bool loaded);

#define PERFMON_SNAP_READ       0
#define PERFMON_SNAP_ATTACH     1
#define PERFMON_SNAP_DETACH     2

/*
 * The tier values of events that share a target (one event, or a group),
 * with the TSC and, for a thread, its run time, taken together on the
 * owning CPU with interrupts disabled, while attaching, detaching or only
 * reading them.
 *
 * Reads and the owner's changes (enable, disable, reset) are serialized
 * there: a thread's operations under its td lock, or on the CPU it is
 * loaded on with interrupts disabled; a CPU's with interrupts disabled on
 * it. So a change is applied to the events (apply) inside its snapshot,
 * and a read computes its counts and times from the events' fields
 * inside its own: a read sees each change wholly or not at all, and
 * writes nothing into the events, so reads of one event or group may run
 * from several threads at once.
 */
struct perfmon_snap {
    struct perfmon_td_op op;            /* thread events */
    struct perfmon_event *const *events;
    unsigned int nr_events;
    unsigned int action;
    void (*apply)(struct perfmon_event *event,
                  const struct perfmon_snap *snap, unsigned int i);
    uint64_t now;                       /* TSC */
    uint64_t run;                       /* the thread's run time at now */
    uint64_t values[PERFMON_GROUP_MAX]; /* each event's tier value */
    uint64_t offs[PERFMON_GROUP_MAX];   /* each one's slot's time without
                                           a counter (of the thread) */

    /* A read's results (no apply): each event's count, the first's times. */
    uint64_t counts[PERFMON_GROUP_MAX];
    uint64_t enabled;
    uint64_t running;
};

/* perfmon_snap.c: snapshots */
void perfmon_snap_take(struct perfmon_snap *snap,
                       struct perfmon_event *const *events,
                       unsigned int nr_events, unsigned int action,
                       void (*apply)(struct perfmon_event *event,
                                     const struct perfmon_snap *snap,
                                     unsigned int i));
void perfmon_snap_apply_disable(struct perfmon_event *event,
                                const struct perfmon_snap *snap,
                                unsigned int i);
void perfmon_snap_apply_enable(struct perfmon_event *event,
                               const struct perfmon_snap *snap,
                               unsigned int i);
void perfmon_snap_apply_reset(struct perfmon_event *event,
                              const struct perfmon_snap *snap, unsigned int i);
void perfmon_snap_attach(struct perfmon_event *const *events,
                         unsigned int nr_events);
void perfmon_snap_detach(struct perfmon_event *const *events,
                         unsigned int nr_events);

/*
 * Bind an event about to be attached to its device, slot index and target:
 * thread (referenced here), or CPU cpu when thread is NULL. A clock's dev
 * is NULL (it has no slot). Thread context.
 */
void perfmon_snap_bind(struct perfmon_event *event, struct perfmon_dev *dev,
                       unsigned int index, struct thread *thread,
                       unsigned int cpu);

#endif /* KERN_PERFMON_PERFMON_TD_I_H */
