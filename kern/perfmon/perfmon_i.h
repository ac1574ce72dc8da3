/*
 * perfmon's private header: the structures and inline counter arithmetic
 * that the core's files share (kern/perfmon*.c only; drivers, clients and
 * tests never include it), and the functions each file offers the others.
 *
 * The core, by file: perfmon.c (the event API), perfmon_slot.c (devices
 * and slots: the global tier), perfmon_mux.c (the schedule and the
 * multiplexing policy), perfmon_cpu.c (the per-CPU tier), perfmon_td.c
 * (the per-thread tier and the context switch), perfmon_snap.c (a
 * target's events at one instant), perfmon_sample.c (sampling and the
 * overflow report), perfmon_group.c (groups).
 *
 * Locking and contexts:
 * - Lock order: a thread's perfmon_td lock, then a device's lock is never
 *   taken inside it (allocation and release happen before and after the
 *   per-thread operation); the run queue lock of the scheduler is held
 *   around perfmon_td_switch, which takes next's td lock: run queue ->
 *   interrupts off -> td.
 * - A device's lock protects its slots (global tier); it is taken only to
 *   allocate and release slots, in thread context. Queries read the slots
 *   without it.
 * - The per-CPU tier of a CPU is only touched on that CPU with interrupts
 *   disabled: by the context switch, the overflow interrupt, the poll
 *   timer, and cross-CPU calls for CPU events and running threads. Each
 *   such maskable path is a marked section (kern/perfmon_nmi.h): an
 *   overflow NMI that lands in one leaves the tier alone and the
 *   section's end does the NMI's work, so the tier has one writer at a
 *   time on its CPU even in NMI mode.
 * - A frequency sampler's estimate (the event's freq_* fields, and its
 *   period) is written only where the sampler is live, with interrupts
 *   disabled, in a marked section, never by the overflow path, which
 *   reads the period alone, once per period (perfmon_sample.c,
 *   "Frequency mode").
 * - A loaded thread's per-thread state is written only on its CPU with
 *   interrupts disabled (the switch, or a cross-CPU call that re-checks
 *   loaded_cpu under the td lock), so the switch updates prev without its
 *   lock and publishes prev->loaded_cpu = NONE last, with release order.
 *   An unloaded thread's state is changed by event operations from any
 *   CPU under its td lock, which the switch takes for next.
 * - A slot's width and config do not change while it has references, so
 *   the tiers read them without the device lock. Which counter a slot
 *   holds (multiplexing) is the schedule: written under the device lock
 *   with interrupts disabled, inside a sequence count (sched_seq); each
 *   CPU keeps a copy in its per-CPU tier and follows the schedule as a
 *   whole, at points where it knows no other update of its tier is under
 *   way (perfmon_cpu_sched_check). A change reaches by a cross-CPU call
 *   only the CPUs that use one of the slots it changed (users, which each
 *   CPU updates for itself); the others follow when they next take one of
 *   those slots into use (perfmon_cpu_slot_get). A CPU may wait for a
 *   schedule write to end while it holds its run queue lock (a context
 *   switch), so nothing inside a write takes a run queue lock: the
 *   rotation thread is woken (perfmon_mux_lock, then the run queue) after
 *   the device lock is released.
 */
#ifndef KERN_PERFMON_I_H
#define KERN_PERFMON_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/bitops.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/spinlock.h>
#include <kern/syscnt.h>
#include <kern/timer.h>
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
    uint16_t links[PERFMON_MAX_SLOTS][PERFMON_MAX_SLOTS];
    uint32_t link_masks[PERFMON_MAX_SLOTS];     /* links[i][j] != 0 */

    /*
     * Schedule version, odd while written: read by every context switch
     * that involves the device, on a line of its own, away from the
     * lock's traffic.
     */
    uint64_t sched_seq __attribute__((aligned(64)));
                                /* attached groups holding both slots */
};

#define PERFMON_EVENT_MAGIC     0x70666d6eU

#define PERFMON_EVENT_INIT      1
#define PERFMON_EVENT_THREAD    2   /* attached to a thread */
#define PERFMON_EVENT_CPU       3   /* attached to a CPU */
#define PERFMON_EVENT_DETACHED  4
#define PERFMON_EVENT_DISABLED  5   /* attached (thread or CPU), disabled:
                                       a state of its own, so that reads
                                       of enabled events test nothing */

/* No slot: in a CPU's counter-to-slot map. */
#define PERFMON_SLOT_NONE               0xff

/*
 * Where the caller of the function using it is: for samples taken outside
 * an overflow interrupt (a context switch, a read), at the perfmon call.
 */
#define PERFMON_CTX_CALLER()                                            \
    ((struct perfmon_intr_ctx){                                         \
        .ip = (uintptr_t)__builtin_return_address(0),                   \
        .fp = *(const uintptr_t *)__builtin_frame_address(0),           \
    })

/*
 * A slot on a CPU. counter, mask and id_bit copy the global slot's while
 * the CPU uses it, so that the hot paths touch only this structure.
 */
struct perfmon_cpu_slot {
    unsigned int nr_refs;   /* CPU events and loaded threads using it */
    bool wrap_seen;         /* a wrap was added before its interrupt came */
    bool plain;             /* a software PMU counter, polled, not sampling:
                               perfmon_cpu_slot_update_plain may update it */
    unsigned int counter;
    uint64_t mask;
    uint64_t id_bit;
    uint64_t prev;          /* last raw counter value */
    uint64_t value;         /* 64-bit sum of the counter's increments */

    /*
     * Sampling (sampler set: a sampling slot, whose counter serves that
     * event here: the CPU's sampler, or the loaded thread's). The next
     * sample is due when value reaches sample_next, ending a period
     * of sample_period; armed while the event may take samples. armed is
     * not the event's samples_left != 0: it is also false from the slot's
     * start until perfmon_sample_arm sets sample_next, so an update in
     * between takes no sample against a stale sample_next.
     */
    struct perfmon_event *sampler;
    bool armed;
    uint64_t sample_next;
    uint64_t sample_period;
    uint64_t throttled_periods; /* expired unsampled while throttled */

    /*
     * Multiplexing. sched: the slot holds counter counter on this CPU (the
     * CPU's copy of the schedule; its complement is also a bit of the CPU's
     * unsched mask, kept for the context switch's single test, while paths
     * that hold only the slot test this). A slot without a counter reads as
     * a counter that never moves (mask and id_bit 0, so every read gives 0
     * and no overflow is consumed for it; perfmon_cpu_slot_sync does not
     * read it, since its counter may name no counter). Its
     * time without a counter is off_total plus, while it has none, the time
     * since off_since (CPU events), and the loaded thread's part since
     * off_mark (its load or the slot's loss, whichever came last).
     */
    bool sched;
    uint64_t off_total;
    uint64_t off_since;
    uint64_t off_mark;
} __attribute__((aligned(64)));    /* 128 bytes: indexed by a shift */

_Static_assert(sizeof(struct perfmon_cpu_slot) == 128,
               "the hot paths index a CPU's slots by a shift");
_Static_assert(sizeof(struct perfmon_td_slot) == 32,
               "the switch indexes a thread's slots by a shift");

/*
 * Sampling limits of a CPU: samples counted per tick-long window of TSC
 * time (the TSC is read for the sample anyway; no division per sample).
 */
struct perfmon_throttle {
    uint64_t window_end;        /* TSC */
    unsigned int nr_samples;
    bool active;                /* no samples until the timer fires */
    uint64_t time_start;
    struct timer timer;
};

struct perfmon_cpu {
    struct perfmon_cpu_slot slots[PERFMON_MAX_DEVS][PERFMON_MAX_SLOTS];
    uint32_t used[PERFMON_MAX_DEVS];        /* slots with nr_refs > 0 */
    uint32_t unsched[PERFMON_MAX_DEVS];     /* slots without a counter */
    uint32_t handoffs[PERFMON_MAX_DEVS];    /* sampling slots of a device
                                               whose preset ends earlier
                                               overflows: a switch from
                                               sampler to sampler does
                                               not consume them */
    uint32_t users_left[PERFMON_MAX_DEVS];  /* slots let go whose users
                                               bit this CPU left set */
    uint64_t sched_seq[PERFMON_MAX_DEVS];   /* schedule followed */
    uint8_t slot_of[PERFMON_MAX_DEVS][64];  /* counter id -> slot */
    struct perfmon_bank *banks[PERFMON_MAX_DEVS];   /* counters in memory
                                                       here, or NULL */
    struct timer poll_timers[PERFMON_MAX_DEVS];
    bool poll_armed[PERFMON_MAX_DEVS];
    struct perfmon_throttle throttle;

    /* Frequency mode: runs each tick while a frequency sampler is live. */
    struct timer freq_timer;
    bool freq_armed;
    struct syscnt sc_overflows;
    struct syscnt sc_samples;
    struct syscnt sc_throttles;
};

/*
 * An operation on one slot of a thread, run where the thread's counters
 * live. fn runs with td locked and interrupts disabled; loaded tells
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

/* An attached event's count, given its tier value at a snapshot. */
static inline uint64_t
perfmon_event_count_at(const struct perfmon_event *event, uint64_t value)
{
    return event->disabled ? event->frozen : value - event->start;
}

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

/* The per-CPU tier, of every CPU (perfmon_cpu.c). */
extern struct perfmon_cpu perfmon_cpu;

/* The registered devices, by index (perfmon_slot.c). */
extern struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
extern unsigned int perfmon_nr_devs;

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
bool perfmon_mux_fits(struct perfmon_dev *dev, uint32_t unit);
void perfmon_mux_links_add(struct perfmon_dev_state *state,
                           const unsigned int *indexes, unsigned int nr_indexes,
                           int delta);
void perfmon_mux_unlink(struct perfmon_dev *dev, const unsigned int *indexes,
                        unsigned int nr_indexes);
void perfmon_mux_enabled_add(struct perfmon_dev *dev,
                             const unsigned int *indexes,
                             unsigned int nr_indexes, int delta);
void perfmon_mux_main(void *arg);

/* perfmon_cpu.c: the per-CPU tier */
void perfmon_sample_add_wrap(const struct perfmon_dev *dev,
                             struct perfmon_cpu_slot *cslot, uint64_t raw,
                             bool reported);
struct perfmon_cpu_slot *
perfmon_cpu_slot_update_slot(struct perfmon_dev *dev,
                             struct perfmon_cpu_slot *cslot);
struct perfmon_cpu_slot *perfmon_cpu_slot_update(struct perfmon_cpu *cpu,
                                                 struct perfmon_dev *dev,
                                                 unsigned int index);
struct perfmon_cpu_slot *perfmon_cpu_slot_get(struct perfmon_cpu *cpu,
                                              struct perfmon_dev *dev,
                                              unsigned int index,
                                              struct perfmon_td *td,
                                              struct perfmon_event *sampler);
void perfmon_cpu_slot_put(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                          unsigned int index);
void perfmon_cpu_slot_user(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                           unsigned int index);
void perfmon_cpu_users_trim(struct perfmon_cpu *cpu, struct perfmon_dev *dev);
void perfmon_cpu_sched_apply(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                             struct perfmon_td *td, uint64_t now);
struct perfmon_td *perfmon_cpu_loaded_td(void);
void perfmon_cpu_poll_timer(struct timer *timer);
void perfmon_cpu_op_read(void *arg);
void perfmon_cpu_op_refresh(void *arg);
void perfmon_cpu_slot_refresh(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                              unsigned int index, struct perfmon_event *event,
                              uint64_t nr_samples);

/* perfmon_sample.c: sampling */
void perfmon_sample_write_throttle(struct perfmon_cpu *cpu,
                                   struct perfmon_cpu_slot *cslot);
void perfmon_sample_arm(struct perfmon_dev *dev,
                        struct perfmon_cpu_slot *cslot,
                        uint64_t left, uint64_t period);
void perfmon_sample_discard(struct perfmon_dev *dev,
                            struct perfmon_cpu_slot *cslot);
void perfmon_sample_take(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                         struct perfmon_cpu_slot *cslot,
                         const struct perfmon_intr_ctx *ctx, bool reload);
void perfmon_sample_leave(struct perfmon_cpu *cpu,
                          struct perfmon_dev *dev,
                          struct perfmon_cpu_slot *cslot,
                          const struct perfmon_intr_ctx *ctx);
void perfmon_sample_due(struct perfmon_dev *dev,
                        struct perfmon_cpu_slot *cslot, bool reload);
void perfmon_cpu_throttle_timer(struct timer *timer);
void perfmon_sample_throttle_end(struct perfmon_cpu *cpu);
void perfmon_freq_load(struct perfmon_cpu *cpu, struct perfmon_cpu_slot *cslot);
void perfmon_freq_unload(struct perfmon_cpu_slot *cslot);
void perfmon_cpu_freq_timer(struct timer *timer);
void perfmon_freq_adjust(struct perfmon_event *event, uint64_t value,
                         uint64_t now);
void perfmon_sample_throttle_arm(struct perfmon_cpu *cpu);
void perfmon_sample_event_attach(struct perfmon_event *event);

/* perfmon_td.c: the per-thread tier */
uint64_t perfmon_td_slot_value(struct perfmon_td *td, struct perfmon_dev *dev,
                               unsigned int index, bool loaded);
void perfmon_td_run(struct perfmon_td_op *op);
void perfmon_td_op_attach(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_read(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_detach(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_count(struct perfmon_td_op *op, bool loaded);
void perfmon_td_op_refresh(struct perfmon_td_op *op, bool loaded);

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

/* perfmon.c: events */

/*
 * Bind an event about to be attached to its device, slot index and target:
 * thread (referenced here), or CPU cpu when thread is NULL. Thread
 * context.
 */
void perfmon_snap_bind(struct perfmon_event *event, struct perfmon_dev *dev,
                       unsigned int index, struct thread *thread,
                       unsigned int cpu);
struct perfmon_cpu_slot *perfmon_cpu_op_update(struct perfmon_event *event);

/* perfmon_cpu.c, perfmon_sample.c, perfmon_mux.c: their part of setup */
int perfmon_cpu_setup(void);

/* Register the NMI entry, in NMI mode only (else an NMI panics). */
void perfmon_nmi_setup(void);
int perfmon_sample_setup(void);
int perfmon_mux_setup(void);
void perfmon_cpu_dev_init(struct perfmon_dev *dev);

static inline struct perfmon_cpu_slot *
perfmon_cpu_slot(struct perfmon_cpu *cpu, const struct perfmon_dev *dev,
                 unsigned int index)
{
    return &cpu->slots[dev->state->index][index];
}

/*
 * The common case inline (no report, no decrease: the plain difference),
 * the rest above. Hot: every switch and poll comes here per slot. (The
 * overflow path has its common case, a wrap reported as it happens,
 * inline too: perfmon_sample_overflow.)
 */
static inline void
perfmon_cpu_slot_add(const struct perfmon_dev *dev,
                     struct perfmon_cpu_slot *cslot, uint64_t raw,
                     bool reported)
{
    if (__builtin_expect(!reported && raw >= cslot->prev, 1)) {
        cslot->value += raw - cslot->prev;
        cslot->prev = raw;
    } else {
        perfmon_sample_add_wrap(dev, cslot, raw, reported);
    }
}

/*
 * Take the overflows pending on the slots in mask (their interrupts held
 * back by disabled interrupts), as bits of their counters' ids. Every
 * update of a slot with interrupts disabled consumes first and reads
 * after, so that a wrap between the two shows as a decrease (wrap_seen)
 * rather than being counted twice; one call serves a batch of slots.
 */
static inline uint64_t
perfmon_dev_consume(const struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                    uint32_t mask)
{
    const struct perfmon_cpu_slot *cslots = cpu->slots[dev->state->index];
    uint64_t ids = 0;

    if (!dev->overflow_intr) {
        return 0;
    }

    FOR_EACH_BIT(index, mask) {
        ids |= cslots[index].id_bit;
    }

    /* Slots without a counter (multiplexed out) have no id bit. */
    return (ids != 0) ? dev->ops->overflow_consume(ids) : 0;
}

/*
 * The counters of dev on cpu (this CPU) when they are per-CPU memory (a
 * device with a bank: read inline rather than through the driver), else
 * NULL.
 */
static inline struct perfmon_bank *
perfmon_cpu_bank(const struct perfmon_cpu *cpu, const struct perfmon_dev *dev)
{
    return cpu->banks[dev->state->index];
}

/* A slot's raw counter value. Local, interrupts disabled. */
static inline uint64_t
perfmon_cpu_slot_read(const struct perfmon_dev *dev,
                      const struct perfmon_bank *bank,
                      const struct perfmon_cpu_slot *cslot)
{
    uint64_t raw;

    /* A hooked bank counter needs more than a load: the driver's read. */
    if (bank != NULL && !(bank->hooked & (1U << cslot->counter))) {
        raw = bank->values[cslot->counter];
    } else {
        raw = dev->ops->read(cslot->counter);
    }

    return raw & cslot->mask;
}

/*
 * Bring a slot up to date, given what the consume before it returned and
 * perfmon_cpu_bank(cpu, dev). Hot: every poll comes here per slot, and the
 * switches and reads that are off their fast path.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_slot_sync(const struct perfmon_dev *dev,
                      const struct perfmon_bank *bank,
                      struct perfmon_cpu_slot *cslot, uint64_t pending)
{
    /*
     * No counter here (multiplexed out, or never given one on this CPU):
     * nothing moved, and its counter may name no counter at all (0, with
     * a PMU of fixed counters only), so the device is not touched.
     */
    if (!cslot->sched) {
        return;
    }

    perfmon_cpu_slot_add(dev, cslot, perfmon_cpu_slot_read(dev, bank, cslot),
                         (pending & cslot->id_bit) != 0);
}

/*
 * The fast path of the reads and the switch: a plain slot whose counter
 * is a load from bank (this CPU's) and has not wrapped since the last
 * update is brought up to date with no call, so that the caller needs no
 * registers saved. Return false, having changed nothing, for any other
 * slot: the caller then takes the general path (perfmon_cpu_slot_update_slot,
 * perfmon_cpu_slot_sync). Local, interrupts disabled.
 */
static inline bool
perfmon_cpu_slot_update_plain(const struct perfmon_bank *bank,
                              struct perfmon_cpu_slot *cslot)
{
    uint64_t raw;

    /* Plain: its device has a bank (never NULL here); ids are below 64. */
    if (!cslot->plain || (bank->hooked & cslot->id_bit) != 0) {
        return false;
    }

    raw = bank->values[cslot->counter] & cslot->mask;

    if (raw < cslot->prev) {
        return false;
    }

    cslot->value += raw - cslot->prev;
    cslot->prev = raw;
    return true;
}

/* Whether dev's schedule changed since this CPU last followed it. */
static inline bool
perfmon_cpu_sched_stale(const struct perfmon_cpu *cpu,
                        const struct perfmon_dev *dev)
{
    return cpu->sched_seq[dev->state->index]
           != __atomic_load_n(&dev->state->sched_seq, __ATOMIC_ACQUIRE);
}

/*
 * Follow dev's schedule if it changed since this CPU last did. Called
 * where the CPU takes new slots into use (attaches, thread loads; after
 * the locks that order them after the schedule change of their slot's
 * acquisition) and by the rotation's cross-CPU call. td: the thread
 * loaded here, or NULL. Local, interrupts disabled.
 */
static inline void
perfmon_cpu_sched_check(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                        struct perfmon_td *td)
{
    if (perfmon_cpu_sched_stale(cpu, dev)) {
        perfmon_cpu_sched_apply(cpu, dev, td, cpu_get_tsc());
    }
}

/*
 * Whether an event was initialized and is in one of its states: the
 * magic alone does not say so (memory that holds it by chance, or an
 * event written over by its owner).
 */
static inline bool
perfmon_event_valid(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && event->state >= PERFMON_EVENT_INIT
           && event->state <= PERFMON_EVENT_DISABLED;
}

/* Whether an event is attached (perfmon_event_attached, for the core). */
static inline bool
perfmon_event_is_attached(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && (event->state == PERFMON_EVENT_THREAD
               || event->state == PERFMON_EVENT_CPU
               || event->state == PERFMON_EVENT_DISABLED);
}

/*
 * Whether dev samples config every period events (its check_period,
 * where it has one). Any context.
 */
static inline bool
perfmon_dev_period_ok(const struct perfmon_dev *dev, uint64_t config,
                      uint64_t period)
{
    return dev->ops->check_period == NULL
           || dev->ops->check_period(config, period) == 0;
}

/*
 * floor(a * b / c) for c > 0, UINT64_MAX when it does not fit. A long
 * division when the product needs more than 64 bits (the kernel has no
 * 128-bit division routine); not on a hot path.
 */
static inline uint64_t
perfmon_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    unsigned __int128 product = (unsigned __int128)a * b;
    uint64_t rem = (uint64_t)(product >> 64);
    uint64_t low = (uint64_t)product;
    uint64_t quotient = 0;

    if (rem == 0) {
        return low / c;
    }

    if (rem >= c) {
        return UINT64_MAX;      /* the quotient needs more than 64 bits */
    }

    /* rem < c throughout; carry is its 65th bit after the shift. */
    for (int i = 63; i >= 0; i--) {
        bool carry = (rem >> 63) != 0;

        rem = (rem << 1) | ((low >> i) & 1);
        quotient <<= 1;

        if (carry || rem >= c) {
            rem -= c;
            quotient |= 1;
        }
    }

    return quotient;
}

/* Whether dev can sample: a period it can preset. Any context. */
static inline bool
perfmon_dev_can_sample(const struct perfmon_dev *dev)
{
    return dev->max_period != 0 && dev->ops->preset != NULL;
}

#endif /* KERN_PERFMON_I_H */
