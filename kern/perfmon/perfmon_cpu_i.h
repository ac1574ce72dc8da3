/*
 * perfmon's per-CPU tier, private to kern/perfmon/: a CPU's slots and
 * sampling state, the hot inlines of the switch, the reads and the poll,
 * and the functions they and the tiers above call in perfmon_cpu.c,
 * perfmon_sample.c and perfmon_freq.c. Locking and contexts: perfmon_i.h;
 * every function here is local (this CPU's tier), interrupts disabled,
 * unless its comment says otherwise.
 *
 * The rule is asserted at the entry of each path into the tier: the
 * switch (perfmon_td_switch, perfmon_td_load), the cross-CPU calls and
 * thread operations (perfmon_snap_cpu_op_remote, perfmon_snap_td_op,
 * perfmon_td_op_remote, perfmon_cpu_op_read_remote, perfmon_cpu_op_refresh,
 * perfmon_mux_follow), the timers, the overflow report and interrupts
 * (perfmon_sample_report_overflow, perfmon_cpu_overflow_intr,
 * perfmon_nmi_handle), and at the entry of each function off the hot
 * paths. The hot inlines and per-slot helpers do not assert it (4
 * instructions each, per slot): each says which entries do. The local
 * reads and CPU snapshots (perfmon_event_read_cpu, perfmon_event_read_thread,
 * perfmon_snap_take) disable interrupts themselves just before they call
 * in, where an assertion would cost them 2 to 5%.
 */
#ifndef KERN_PERFMON_PERFMON_CPU_I_H
#define KERN_PERFMON_PERFMON_CPU_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/bitops.h>
#include <kern/percpu.h>
#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon/perfmon_slot_i.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_td.h>
#include <kern/syscnt.h>
#include <kern/timer.h>
#include <machine/cpu.h>

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
    uint64_t throttled_events;  /* the events those periods held */

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

/* The per-CPU tier, of every CPU (perfmon_cpu.c). */
extern struct perfmon_cpu perfmon_cpu;

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
void perfmon_cpu_op_read_remote(void *arg);
void perfmon_cpu_op_refresh(void *arg);
void perfmon_cpu_op_set_period(void *arg);
void perfmon_cpu_slot_set_period(struct perfmon_cpu *cpu,
                                 struct perfmon_dev *dev, unsigned int index,
                                 struct perfmon_event *event,
                                 uint64_t period);
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
void perfmon_cpu_dev_init(struct perfmon_dev *dev);

/* A slot of cpu's tier: an address, any context. */
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
 * inline too: perfmon_sample_overflow.) Interrupts disabled, asserted by
 * the entries of the paths that sync a slot (perfmon_td_switch, the
 * poll, the reads, the snapshots, the overflow report).
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
 * Interrupts disabled (asserted by perfmon_td_switch and
 * perfmon_cpu_poll_local, which consume per switch and per poll, and by
 * the entries that reach perfmon_cpu_sched_apply).
 */
static inline uint64_t
perfmon_cpu_consume(const struct perfmon_cpu *cpu, struct perfmon_dev *dev,
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
 * NULL. A pointer that never changes once the device is registered: any
 * context.
 */
static inline struct perfmon_bank *
perfmon_cpu_bank(const struct perfmon_cpu *cpu, const struct perfmon_dev *dev)
{
    return cpu->banks[dev->state->index];
}

/*
 * A slot's raw counter value. Local, interrupts disabled (asserted by
 * the entries of its callers' paths: perfmon_cpu_slot_sync's, and
 * perfmon_sample_report_overflow for perfmon_sample_overflow).
 */
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
 * switches and reads that are off their fast path. Interrupts disabled
 * (asserted by perfmon_cpu_poll_local, perfmon_td_switch, and the entries
 * that reach perfmon_cpu_slot_update_slot and perfmon_cpu_sched_apply).
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
 * perfmon_cpu_slot_sync). Local, interrupts disabled: asserted not here
 * but by the entries of the paths that reach it (perfmon_td_switch, the
 * snapshots', the timers', the remote read's); a local read
 * (perfmon_event_read_thread, perfmon_event_read_cpu) disables them a few
 * instructions before.
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

/*
 * The reads' fast path of a CPU event: a plain slot's value as
 * perfmon_cpu_slot_update_plain would make it, into *valuep, the slot
 * left as it was. A read need not move the slot on: the next update adds
 * the same increments from the same prev, and the counters that take
 * this path do not wrap unseen (a narrow polled one is hooked, so it
 * takes the general path; one with an interrupt is never plain). Return
 * false for any other slot or a wrap, *valuep unset. Same context as
 * perfmon_cpu_slot_update_plain.
 */
static inline bool
perfmon_cpu_slot_peek_plain(const struct perfmon_bank *bank,
                            const struct perfmon_cpu_slot *cslot,
                            uint64_t *valuep)
{
    uint64_t raw;

    if (!cslot->plain || (bank->hooked & cslot->id_bit) != 0) {
        return false;
    }

    raw = bank->values[cslot->counter] & cslot->mask;

    if (raw < cslot->prev) {
        return false;
    }

    *valuep = cslot->value + (raw - cslot->prev);
    return true;
}

/*
 * Whether dev's schedule changed since this CPU last followed it. Any
 * context; meaningful where the CPU's copy cannot change meanwhile
 * (interrupts disabled).
 */
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
 * loaded here, or NULL. Local, interrupts disabled (asserted by its
 * callers' entries: perfmon_td_switch and perfmon_td_load,
 * perfmon_snap_cpu_op_remote, perfmon_snap_td_op, perfmon_mux_follow; a
 * local CPU attach's perfmon_snap_take disables them just before).
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
 * A CPU event's slot brought up to date on its CPU by the general path
 * (perfmon_cpu.c), for a slot that perfmon_cpu_slot_update_plain left
 * alone: out of line, so that the reads inlining perfmon_cpu_op_read need
 * no frame for it on their fast path.
 */
void perfmon_cpu_op_update_slow(struct perfmon_event *event);

/*
 * A CPU event's slot brought up to date on its CPU: a plain slot with no
 * call, its bank taken from the event (event->cpu_bank, the CPU's, set at
 * attach), any other through perfmon_cpu_op_update_slow. Interrupts
 * disabled, as for perfmon_cpu_op_update_slow.
 */
static inline struct perfmon_cpu_slot *
perfmon_cpu_op_update(struct perfmon_event *event)
{
    struct perfmon_cpu_slot *cslot = event->cpu_slot;

    if (__builtin_expect(!perfmon_cpu_slot_update_plain(event->cpu_bank,
                                                        cslot), 0)) {
        perfmon_cpu_op_update_slow(event);
    }

    return cslot;
}

/*
 * A CPU event's count from its slot's value, into event->final. Its CPU,
 * interrupts disabled.
 */
static inline void
perfmon_cpu_op_final(struct perfmon_event *event, uint64_t value)
{
    event->final = __builtin_expect(event->disabled, 0)
                   ? event->frozen : value - event->start;
}

/*
 * perfmon_cpu_op_read for a slot that is not plain or whose counter
 * wrapped (perfmon_cpu.c): out of line and last, so that the fast path
 * needs no frame and reaches it by a jump.
 */
void perfmon_cpu_op_read_slow(struct perfmon_event *event);

/*
 * A CPU event's read on its CPU, into event->final: inline in a local
 * read (interrupts disabled by perfmon_event_read_cpu just before), and
 * in the cross-CPU call of a remote one (perfmon_cpu_op_read_remote, which
 * asserts them disabled). A plain slot is read here with no call, its
 * bank taken from the event (event->cpu_bank, set at attach).
 * The count is computed here, where the owner's enable, disable and reset
 * apply (perfmon_snap_end), so that a read sees each wholly or not at all.
 */
static inline void
perfmon_cpu_op_read(void *arg)
{
    struct perfmon_event *event = arg;
    uint64_t value;

    if (__builtin_expect(!perfmon_cpu_slot_peek_plain(event->cpu_bank,
                                                      event->cpu_slot,
                                                      &value), 0)) {
        perfmon_cpu_op_read_slow(event);
        return;
    }

    perfmon_cpu_op_final(event, value);
}

#endif /* KERN_PERFMON_PERFMON_CPU_I_H */
