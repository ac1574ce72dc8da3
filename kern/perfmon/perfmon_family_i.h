/*
 * perfmon's families, private to kern/perfmon/: the threads an inherited
 * event (PERFMON_EF_INHERIT, kern/perfmon.h) counts, for the event and
 * group API above them (perfmon.c, perfmon_group.c); the scheduler's
 * hooks are in kern/perfmon_td.h. Locking: perfmon_i.h and
 * perfmon_family.c.
 */
#ifndef KERN_PERFMON_PERFMON_FAMILY_I_H
#define KERN_PERFMON_PERFMON_FAMILY_I_H

#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/thread.h>

/*
 * A family for events (one, or a group's, attached to one thread), with
 * its root's record. Return 0 or ENOMEM, nothing done. Thread context.
 */
int perfmon_family_create(struct perfmon_event *const *events,
                          unsigned int nr_events,
                          struct perfmon_family **familyp);

/* The family's i-th event (i below its number). Any context. */
struct perfmon_event *perfmon_family_event(const struct perfmon_family *family,
                                           unsigned int i);

/* Free a family that never started (NULL: nothing). Thread context. */
void perfmon_family_destroy(struct perfmon_family *family);

/*
 * Start a family once its events are attached to thread, their root:
 * from now on threads the root and its members create join it. Thread
 * context.
 */
void perfmon_family_start(struct perfmon_family *family,
                          struct thread *thread);

/*
 * The family's totals, per event, and its times (TSC cycles), read
 * member by member; with nrp, each member's own count of the family's
 * event which into values (up to max entries, else E2BIG, nothing
 * written), their number in *nrp. Return 0 or E2BIG.
 * Thread context.
 */
int perfmon_family_read(struct perfmon_family *family, uint64_t *counts,
                        uint64_t *enabledp, uint64_t *runningp,
                        struct perfmon_member_value *values,
                        unsigned int max, unsigned int *nrp,
                        unsigned int which);

/*
 * Detach a family's events: every member stops counting, then the root's
 * events are detached (perfmon_snap_detach) and take the family's totals
 * and times as their final ones; the family is freed. Thread context.
 */
void perfmon_family_detach(struct perfmon_family *family);

#endif /* KERN_PERFMON_PERFMON_FAMILY_I_H */
