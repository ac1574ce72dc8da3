/*
 * perfmon: performance monitoring.
 *
 * Kernel code counts hardware events (through a PMU driver) and software
 * events (through the software PMU, kern/pmu_soft.h), per CPU or per
 * thread. An event is an object its owner allocates:
 *
 *   struct perfmon_event ev;
 *
 *   error = perfmon_event_init(&ev, PMU_SOFT_EV_CSWITCH, PERFMON_EF_SW);
 *   error = perfmon_event_attach(&ev, thread);    or _attach_cpu(&ev, 2)
 *   count = perfmon_event_read(&ev);              counted since attach
 *   error = perfmon_event_detach(&ev);            the count stays readable
 *
 * Calls on one event must be serialized by its owner; different events
 * may be used from any thread concurrently. Every function returns a
 * positive errno value on error and then has changed nothing.
 *
 * Inside, three tiers share one slot index per device: the
 * global tier allocates a slot per raw event (events counting the same
 * raw event share it, reference counted); the per-CPU tier keeps, per
 * slot, the last raw counter value and a 64-bit sum, updated often enough
 * that no wrap is missed (a polled counter advances less than 2^width
 * between updates; with an overflow interrupt, each wrap is reported);
 * the per-thread tier keeps each thread's share, loaded and unloaded on
 * every context switch.
 *
 * This header is the clients' (kernel code that counts events). The
 * other audiences have theirs: kern/perfmon_dev.h for PMU drivers,
 * kern/perfmon_td.h for the scheduler, kern/perfmon_test.h for tests and
 * the shell's queries; kern/perfmon/perfmon_i.h is the core's own.
 */
#ifndef KERN_PERFMON_H
#define KERN_PERFMON_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_types.h>

struct thread;

/* Generic hardware events. */
#define PERFMON_EV_CYCLE        0   /* unhalted core cycles */
#define PERFMON_EV_REF_CYCLE    1   /* unhalted reference cycles */
#define PERFMON_EV_INSTRUCTION  2   /* instructions retired */
#define PERFMON_EV_CACHE_REF    3   /* last level cache references */
#define PERFMON_EV_CACHE_MISS   4   /* last level cache misses */
#define PERFMON_EV_BRANCH       5   /* branch instructions retired */
#define PERFMON_EV_BRANCH_MISS  6   /* mispredicted branches retired */
#define PERFMON_NR_GENERIC_EVENTS 7

/* Event flags. */
#define PERFMON_EF_KERN     0x1     /* count in kernel mode */
#define PERFMON_EF_USER     0x2     /* count in user mode */
#define PERFMON_EF_RAW      0x4     /* id is a raw, driver-specific code */
#define PERFMON_EF_SW       0x8     /* id is a software event (pmu_soft.h) */
#define PERFMON_EF_PINNED   0x10    /* never multiplexed out (see below) */
#define PERFMON_EF_CLOCK    0x20    /* a clock: id PERFMON_CLOCK (below) */
#define PERFMON_EF_INHERIT  0x40    /* thread events: also count the threads
                                       the thread creates (see below) */
#define PERFMON_EF_MASK     0x7f

/*
 * A clock (PERFMON_EF_CLOCK, id PERFMON_CLOCK): an event that counts the
 * nanoseconds it is enabled, as Linux's task-clock and cpu-clock do.
 * Attached to a thread, it counts the thread's run time (the time the
 * thread runs with the clock enabled, on any CPU); attached to a CPU, the
 * time since its enable, whatever runs there. A clock belongs to no
 * device and never holds a counter: it is never multiplexed, never waits
 * for a counter and attaches even when pinned events hold every counter,
 * and it touches no counter of the context switch. Its count and times
 * come from one snapshot: time_running equals time_enabled, and the count
 * equals time_enabled until a reset (reset zeroes the count and leaves
 * the times, as for any event), so perfmon_scale returns the count. It
 * can be read, enabled, disabled, reset and detached as other events,
 * but cannot sample or be in a group. PERFMON_EF_KERN and PERFMON_EF_USER
 * are ignored, as for software events; PERFMON_EF_RAW, PERFMON_EF_SW,
 * PERFMON_EF_PINNED (a clock has no counter to pin) and PERFMON_EF_INHERIT
 * (a clock counts one thread or CPU: inherited clocks are not done yet)
 * are refused.
 */
#define PERFMON_CLOCK       0

struct perfmon_bank;
struct perfmon_cpu_slot;
struct perfmon_dev;
struct perfmon_session;
struct perfmon_group;
struct perfmon_family;

/* An event. Its fields are private to perfmon. */
struct perfmon_event {
    unsigned int magic;
    unsigned int state;
    uint64_t id;                /* generic, raw or software id */
    unsigned int flags;
    struct perfmon_dev *dev;
    unsigned int dev_index;     /* its device's, for the reads */
    unsigned int slot_index;
    unsigned int cpu;           /* CPU events: the CPU */
    struct perfmon_cpu_slot *cpu_slot;    /* CPU events: the slot's state on
                                           the CPU, for the reads */
    const struct perfmon_bank *cpu_bank;  /* CPU events: the device's
                                             counters in memory on the CPU
                                             (NULL if none), for the reads */
    struct thread *thread;      /* thread events: the thread (referenced) */
    uint64_t start;             /* the tier's count at attach */
    uint64_t final;             /* the count at detach */

    /* Sampling (period 0: a counting event). */
    struct perfmon_session *session;
    uint64_t period;            /* the next period (frequency mode: the
                                   latest estimate) */
    uint64_t period_min;        /* frequency mode: the device's least
                                   period, set at attach */
    uint64_t cookie;
    unsigned int nr_frames;
    uint64_t samples_left;      /* PERFMON_SAMPLES_UNLIMITED, or armed */
    uint64_t nr_samples;        /* samples produced (written locally) */

    /*
     * Frequency mode (freq != 0): events and TSC time the sampler counted
     * while live since its period was last estimated, in what it counted
     * on CPUs it left (count, time) and since it became live on its
     * current one (the slot's value and the TSC then); and the decaying
     * sums of counts and times its rate is estimated from. Written on the
     * CPU where the sampler is live, with interrupts disabled.
     */
    uint64_t freq;              /* samples a second, or 0 */
    uint64_t freq_count;
    uint64_t freq_time;
    uint64_t freq_value;
    uint64_t freq_tsc;
    uint64_t freq_sum_count;
    uint64_t freq_sum_time;

    /*
     * Enable state and times, in TSC cycles, written by the owner's calls
     * (attach, enable, disable, reset, detach), each from one snapshot of
     * the tier's value, the TSC, the thread's run time and the slot's
     * time without a counter (multiplexing) taken together on the owning
     * CPU.
     */
    bool disabled;              /* count frozen at frozen */
    uint64_t frozen;            /* the count while disabled */
    uint64_t time_enabled;      /* up to the last disable or detach */
    uint64_t time_running;
    uint64_t enabled_tsc;       /* CPU events: TSC at the last enable
                                   or attach */
    uint64_t enabled_run;       /* thread events: its run time then */
    uint64_t enabled_off;       /* its slot's time off counters then */
    struct perfmon_group *group;    /* the group it was added to, or NULL */
    struct perfmon_family *family;  /* inherited and attached: its family */
};

/*
 * A count with its times, in nanoseconds (TSC cycles converted with the
 * calibrated TSC frequency, cpu_get_freq()). time_enabled grows while the
 * event is attached and enabled: all the time for a CPU event, only while
 * its thread runs for a thread event (Linux's meaning: a thread that
 * sleeps adds nothing to it). time_running grows while the event is
 * enabled and actually counts: its raw event holds a counter on the CPU
 * (for a thread event: the CPU its thread runs on; for a clock, which
 * needs none, all its time enabled). So running never exceeds enabled,
 * the two are equal for an event that never waited for a counter (a CPU
 * event's equal its time enabled, a thread event's its thread's run
 * time), and perfmon_scale(count, time_enabled,
 * time_running) estimates what the event would have counted holding a
 * counter all along, for threads as for CPUs. Neither time goes back
 * between reads, on any CPU, even where the TSCs of two CPUs disagree:
 * each is a sum of differences each taken on one CPU's TSC (the CPU
 * event's own CPU; a thread's slices, each on the CPU it ran on).
 */
struct perfmon_value {
    uint64_t count;
    uint64_t time_enabled;
    uint64_t time_running;
};

/*
 * Prepare an event: a generic id, a raw code (PERFMON_EF_RAW; 64 bits,
 * in the layout of the device's event select register) or a software
 * event (PERFMON_EF_SW). Hardware events need PERFMON_EF_KERN
 * and/or PERFMON_EF_USER; software events ignore them. Whether a device
 * can count it is decided at attach. A detached event may be initialized
 * again; an attached one is refused, since re-initializing it would leak
 * its slot and thread reference. So the memory of an event left attached
 * (never detached, a leak of its owner) cannot be reused for a new event
 * until it is detached. Return 0 or EINVAL (unknown flag, RAW with SW,
 * hardware event without KERN/USER, generic id out of range, a clock with
 * another id than PERFMON_CLOCK or with RAW, SW or PINNED, event
 * attached); on error the event is left untouched. Any context.
 */
int perfmon_event_init(struct perfmon_event *event, uint64_t id,
                       unsigned int flags);

/*
 * Start counting the event for a thread, wherever it runs; the event holds
 * a reference on the thread until detach. The thread may be running on
 * another CPU. Return 0, EINVAL (event not initialized or already
 * attached, NULL or exited thread, raw code the driver rejects), ENODEV
 * (no device counts this event), EAGAIN (every one of the device's
 * PERFMON_MAX_SLOTS slots holds another raw event, or the event could
 * never hold a counter while the pinned events hold theirs; a pinned or
 * sampling event: no counter can be given to it now). A clock takes no
 * slot and no counter: only EINVAL can refuse it. Thread context.
 *
 * Multiplexing: an event attaches even when the device's counters are all
 * taken. Its raw event then waits for its turn: every perfmon.mux_ticks
 * ticks (default 2) the raw events that held counters the least take them,
 * a group's events together. An event counts only while its raw event holds
 * a counter; struct perfmon_value's time_running says for how long, and
 * perfmon_scale() estimates the full count. An event initialized with
 * PERFMON_EF_PINNED (or a sampling event) never gives up its counter: its
 * attach takes one at once, from a multiplexed raw event if it must, or
 * fails with EAGAIN.
 *
 * Inheritance (PERFMON_EF_INHERIT): the event counts a family of threads,
 * the thread it is attached to (the root) and every thread a member
 * creates after the attach returns, down to any depth, until detach:
 *
 * - A member joins in thread_create, before it is queued (it counts from
 *   its first instruction), and its record (a few words per event of the
 *   family) is allocated there: a creation that cannot allocate it fails
 *   with ENOMEM, so no member ever goes uncounted. A thread created
 *   while the attach runs may or may not join.
 * - Reads (perfmon_event_read, _get, _read_value) return the family's
 *   total: the live members' counts and the shares of the members that
 *   exited, each folded into the family once its thread is off its CPU
 *   for good (nothing is lost, nothing counted twice). A read that
 *   overlaps exits and creations returns at least what the family had
 *   counted when it began and at most what it had counted when it
 *   returned. Times likewise: the sums of the members' times (a member's
 *   time enabled is its run time since it joined). A read visits each
 *   member in turn (a cross-CPU call for one running elsewhere), so its
 *   cost grows with the family; the context switch's does not.
 * - perfmon_event_read_members gives each member's own count.
 * - Detach ends counting for the whole family: no new member joins once
 *   it begins, and when it returns no member counts; the final count is
 *   the family's total. A member exiting or being created during the
 *   detach is either counted to its end or never joins.
 * - A thread may belong to several families (its own inherited event's
 *   and an ancestor's): each counts it from its own start.
 * - Not for CPU events (EINVAL), nor for sampling events (EINVAL, at
 *   attach); an inherited event cannot be enabled, disabled or reset
 *   (EINVAL): it counts from attach to detach.
 * An inherited event's attach also returns ENOMEM (no memory for its
 * family).
 */
int perfmon_event_attach(struct perfmon_event *event, struct thread *thread);

/*
 * Start counting the event on a CPU, whatever runs there. Errors as for
 * perfmon_event_attach, EINVAL also for a CPU that is not online or an
 * inherited event (PERFMON_EF_INHERIT). Thread context.
 */
int perfmon_event_attach_cpu(struct perfmon_event *event, unsigned int cpu);

/*
 * Stop counting; the final count stays readable and the event may be
 * attached again (counting from zero). Return 0 or EINVAL when the event
 * is not attached. Thread context.
 */
int perfmon_event_detach(struct perfmon_event *event);

/*
 * Return the count since attach (since the last attach, up to detach for
 * a detached event), synchronized with the owning CPU. An event that was
 * never attached reads 0. Thread context.
 */
uint64_t perfmon_event_read(struct perfmon_event *event);

/*
 * Same, with misuse reported: return 0 and the count, or EINVAL for an
 * event that is not initialized or was never attached. Thread context.
 */
int perfmon_event_get(struct perfmon_event *event, uint64_t *valuep);

/*
 * The count with its times (struct perfmon_value), from one instant on
 * the owning CPU; for a detached event, as they were at detach. Writes
 * nothing into the event, so reads of one event from several threads may
 * run at once. Return 0, or EINVAL for an event that is not initialized
 * or was never attached. Thread context.
 */
int perfmon_event_read_value(struct perfmon_event *event,
                             struct perfmon_value *valuep);

/*
 * Enable, disable and reset an attached event. Each costs one read of
 * the event; enable cannot fail for want of a counter. A disabled event's
 * count is frozen (units counted while it is disabled are not counted)
 * and its times stop; enable counts on from the frozen count. A raw
 * event whose events are all disabled takes no multiplexing turns: it
 * gives its counter up to a raw event that waits for one (disable then
 * also reschedules, as enable does when it makes one wait). Reset sets
 * the count to zero, enabled or not, and leaves the times. A new attach
 * starts enabled; enable of an enabled event and disable of a disabled
 * one do nothing and return 0, as Linux's ioctls do. Sampling events
 * cannot be disabled or enabled (their sampling is armed on the counting
 * CPU by the overflow path; perfmon_event_refresh limits their samples
 * instead) but can be reset (their count only). Group members are
 * enabled and disabled with their group (perfmon_group_enable), reset
 * alone or with it. A read from another thread that overlaps one of
 * these calls sees its change wholly or not at all. Return 0, or EINVAL
 * (event not attached; enable and disable: a sampling event or a group
 * member; any of them: an inherited event), having changed nothing.
 * Thread context.
 */
int perfmon_event_enable(struct perfmon_event *event);
int perfmon_event_disable(struct perfmon_event *event);
int perfmon_event_reset(struct perfmon_event *event);

/*
 * value * enabled / running, the estimate of a count made while the event
 * ran for part of the time it was enabled: value when running covers
 * enabled (or more), 0 when running is 0 (the event never counted),
 * UINT64_MAX when the estimate does not fit. Any context.
 */
uint64_t perfmon_scale(uint64_t value, uint64_t enabled, uint64_t running);

/* TSC cycles in nanoseconds, by cpu_get_freq() (0 before it is known). */
uint64_t perfmon_tsc_to_ns(uint64_t tsc);

/* One member of an inherited event's family, as it counted. */
struct perfmon_member_value {
    uint32_t tid;               /* its thread's id (thread_id) */
    bool exited;                /* its count is final: its thread exited */
    uint64_t count;             /* its own count since it joined */
    uint64_t time_enabled;      /* ns, as struct perfmon_value */
    uint64_t time_running;
};

/*
 * An attached inherited event's family, member by member: the root first,
 * then the others in the order they joined, into values (up to max
 * entries), their number into *nrp. The counts add up exactly to the
 * family's total at that read (a perfmon_event_read's bounds hold for
 * their sum); members joining during the call are left out. A group
 * member's entries are its own counts. Return 0, EINVAL (not an attached
 * inherited event: a detached one's breakdown is gone, its total stays
 * readable; a NULL nrp, or NULL values with max not 0) or E2BIG (more
 * than max members: *nrp says how many, values is untouched). Thread
 * context.
 */
int perfmon_event_read_members(struct perfmon_event *event,
                               struct perfmon_member_value *values,
                               unsigned int max, unsigned int *nrp);

/* True while the event is attached. Any context. */
bool perfmon_event_attached(const struct perfmon_event *event);

/*
 * Tell whether an event can be counted, without attaching anything: return
 * 0, EINVAL (as perfmon_event_init, or a code the device rejects) or
 * ENODEV. Thread context.
 */
int perfmon_event_check(uint64_t id, unsigned int flags);

/* The name of a generic event ("instructions"), or NULL. Any context. */
const char *perfmon_generic_name(unsigned int id);

/* What a client may know of a PMU device (perf list prints it). */
struct perfmon_dev_info {
    const char *name;
    unsigned int nr_counters;   /* the counters perfmon may use */
    unsigned int min_width;     /* bits of the narrowest of them */
    uint64_t fw_counters;       /* counter ids (bit n: id n) firmware held
                                   at boot: left alone, not counted in
                                   nr_counters */
};

/*
 * Describe the first registered hardware (sw false) or software (sw true)
 * device into *info (its name stays valid: devices are never
 * unregistered). Return 0, or ENODEV when none of that kind is
 * registered, leaving *info unchanged. Any context.
 */
int perfmon_dev_info(bool sw, struct perfmon_dev_info *info);

/* ------------------------------------------------------------------ */
/* Groups                                                              */
/* ------------------------------------------------------------------ */

/*
 * A group: events (the first added is the leader) attached as a unit to
 * one thread or one CPU, all or none, enabled and disabled together and
 * read at one instant:
 *
 *   struct perfmon_group group;
 *   struct perfmon_group_value value;
 *
 *   error = perfmon_group_init(&group);
 *   error = perfmon_group_add(&group, &cycles);    initialized events
 *   error = perfmon_group_add(&group, &insns);
 *   error = perfmon_group_attach(&group, thread);  or _attach_cpu
 *   error = perfmon_group_read(&group, &value);    counts, in add order
 *   error = perfmon_group_detach(&group);
 *
 * The group and its events are the owner's memory; calls on a group and
 * its events are serialized by the owner, except reads (of the group or
 * of its events), which write nothing and may run from several threads
 * at once.
 */

#define PERFMON_GROUP_MAX   PERFMON_MAX_COUNTERS    /* events in a group */

struct perfmon_group {
    unsigned int magic;
    unsigned int state;         /* private to perfmon */
    unsigned int nr_events;
    struct perfmon_event *events[PERFMON_GROUP_MAX];
};

/* A group's counts, in the order the events were added, and its times. */
struct perfmon_group_value {
    uint64_t time_enabled;      /* ns, as struct perfmon_value */
    uint64_t time_running;
    unsigned int nr_events;
    uint64_t counts[PERFMON_GROUP_MAX];
};

/*
 * Make an empty group. The events of a group initialized again stay
 * members of the old one (initialize them again to reuse them). Return 0
 * or EINVAL (NULL, or a group that is attached). Any context.
 */
int perfmon_group_init(struct perfmon_group *group);

/*
 * Add an initialized, detached counting event to a detached group. Its
 * attach, detach, enable and disable go through the group from then on
 * (the event's own calls are EINVAL); initializing the event again takes
 * it out, and the group's attach then fails until it is added back, which
 * puts it in its old place (once). Return 0, EINVAL (group or
 * event not initialized, either attached, a sampling event, a clock, the
 * event already in a group, an event of another device than the members':
 * hardware and software events cannot share a group, an event inherited
 * where the members are not, or the other way round) or E2BIG (already
 * PERFMON_GROUP_MAX events), having changed nothing. Thread context.
 */
int perfmon_group_add(struct perfmon_group *group,
                      struct perfmon_event *event);

/*
 * Attach every event of the group to a thread (or a CPU), at one instant
 * on the owning CPU, enabled, or none of them. Return 0, EINVAL (as
 * perfmon_event_attach, an empty or attached group, a member that left
 * it), ENODEV, E2BIG (more distinct raw events than the device has
 * counters: the group can never hold them all at once), EAGAIN (as
 * perfmon_event_attach: no slot left, or a pinned group finds no room).
 * A group is multiplexed as a unit: its raw events hold counters all
 * together or not at all, so its counts always cover the same time; a
 * member of PERFMON_EF_PINNED pins the group. A group of inherited events
 * (PERFMON_EF_INHERIT: every member or none, else EINVAL here and in
 * perfmon_group_add) is inherited as a unit: each member thread counts
 * all its events, each of its reads takes them at one instant, and the
 * group reads the family's totals (as perfmon_event_attach says); it
 * cannot be attached to a CPU (EINVAL), nor enabled, disabled or reset
 * (EINVAL); ENOMEM as perfmon_event_attach. Thread context.
 */
int perfmon_group_attach(struct perfmon_group *group, struct thread *thread);
int perfmon_group_attach_cpu(struct perfmon_group *group, unsigned int cpu);

/*
 * Detach every event at one instant; their final counts and times stay
 * readable. Return 0 or EINVAL (group not attached). Thread context.
 */
int perfmon_group_detach(struct perfmon_group *group);

/*
 * Every event's count and the group's times, read at one instant on the
 * owning CPU with interrupts disabled (one cross-CPU call, or none for a
 * CPU event of this CPU or the caller's own thread); for a detached
 * group, as at detach. Return 0 or EINVAL (group never attached).
 * Thread context.
 */
int perfmon_group_read(struct perfmon_group *group,
                       struct perfmon_group_value *valuep);

/*
 * perfmon_event_enable, _disable and _reset on every event of an attached
 * group at one instant. Return 0 or EINVAL (group not attached). Thread
 * context.
 */
int perfmon_group_enable(struct perfmon_group *group);
int perfmon_group_disable(struct perfmon_group *group);
int perfmon_group_reset(struct perfmon_group *group);

/* ------------------------------------------------------------------ */
/* Sampling                                                            */
/* ------------------------------------------------------------------ */

/*
 * A sampling event also counts (its reads stay exact), and every period
 * events it writes a PERFMON_RECORD_SAMPLE record into its session's ring
 * of the CPU where they happened (kern/perfmon_record.h): a thread event
 * only while its thread runs, a CPU event whatever runs there. Sampling
 * events do not share counters (a counter is preset for one period).
 */

#define PERFMON_PERIOD_MAX          (1ULL << 62)
#define PERFMON_FREQ_MAX            100000U /* samples a second */
#define PERFMON_SAMPLES_UNLIMITED   UINT64_MAX

/*
 * A sampler has a fixed period (freq 0), or a frequency: then perfmon
 * estimates, at most once per tick of the time the sampler is live, the
 * rate of its event while live (over the last few ticks, the latest
 * weighing most), and sets its next period to the rate over freq; each
 * sample record carries the period that ended, as in a fixed-period
 * sampler. The first estimate comes a tick after attach.
 */
struct perfmon_sample_attr {
    struct perfmon_session *session;
    uint64_t period;            /* 1 to PERFMON_PERIOD_MAX; with freq,
                                   the first period (0: 1) */
    uint64_t freq;              /* 0, or samples a second, 1 to
                                   PERFMON_FREQ_MAX */
    uint64_t cookie;            /* copied into every sample */
    unsigned int nr_frames;     /* call chain depth, 0 to
                                   PERFMON_MAX_FRAMES */
};

/*
 * Make an initialized, detached event a sampling event (or, with a NULL
 * attr, a counting one again), with no limit on its samples. The event
 * holds a reference on the session while attached, so the session cannot
 * be destroyed then (EBUSY); between attaches the owner keeps the session
 * alive as long as the event may be attached with it again. Whether its
 * device can sample is decided at attach (EINVAL there when it cannot).
 * Return 0 or EINVAL (event attached or not initialized, NULL session,
 * period, freq or nr_frames out of range, a group member, a clock: it has
 * no counter to sample), having changed nothing. Thread context.
 */
int perfmon_event_set_sampling(struct perfmon_event *event,
                               const struct perfmon_sample_attr *attr);

/*
 * Change the period of a sampling event, attached or not: the current
 * period runs to its end, the next ones have the new length. Attached,
 * the change is made on the counting CPU after its count there is
 * brought up to date, so the periods that ended before the call keep the
 * old length even when that CPU is throttled and had not yet counted
 * them; the periods after the one in flight have the new length whether
 * they are sampled or dropped by the throttle (the THROTTLE records count
 * them, and their events, in it). Return 0 or EINVAL (not a sampling
 * event, a frequency-mode one, whose periods are perfmon's, period out of
 * range, or one the event's device cannot preset), having changed
 * nothing. Thread context.
 */
int perfmon_event_set_period(struct perfmon_event *event, uint64_t period);

/*
 * The period the event's next period will have (in frequency mode, its
 * latest estimate). Return 0 or EINVAL (not a sampling event). Thread
 * context.
 */
int perfmon_event_get_period(struct perfmon_event *event, uint64_t *periodp);

/*
 * Let a sampling event produce nr_samples more samples, then stop sampling
 * (it keeps counting) until refreshed again; PERFMON_SAMPLES_UNLIMITED
 * samples for ever, as a new event does. A refresh of an event that had
 * stopped starts a new period. The budget is the event's, across detach
 * and attach (a refresh before attach limits the next attach). Return 0
 * or EINVAL (not a sampling event, nr_samples 0). Thread context.
 */
int perfmon_event_refresh(struct perfmon_event *event, uint64_t nr_samples);

/*
 * Samples the event produced since attach (written or dropped by its
 * ring, throttled periods excluded). Return 0 or EINVAL (not a sampling
 * event). Thread context.
 */
int perfmon_event_get_samples(struct perfmon_event *event,
                              uint64_t *nr_samplesp);

INIT_OP_DECLARE(perfmon_setup);

#endif /* KERN_PERFMON_H */
