/*
 * perfmon core: the global, per-CPU and per-thread tiers.
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
 *   timer, and cross-CPU calls for CPU events and running threads.
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
 *   way (perfmon_cpu_sched_check). A CPU may wait for a schedule write to
 *   end while it holds its run queue lock (a context switch), so nothing
 *   inside a write takes a run queue lock: the rotation thread is woken
 *   (perfmon_mux_lock, then the run queue) after the device lock is
 *   released.
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
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/spinlock.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/cpu_mp.h>
#include <machine/stack.h>

#define PERFMON_EVENT_MAGIC     0x70666d6eU

#define PERFMON_EVENT_INIT      1
#define PERFMON_EVENT_THREAD    2   /* attached to a thread */
#define PERFMON_EVENT_CPU       3   /* attached to a CPU */
#define PERFMON_EVENT_DETACHED  4
#define PERFMON_EVENT_DISABLED  5   /* attached (thread or CPU), disabled:
                                       a state of its own, so that reads
                                       of enabled events test nothing */

/*
 * Poll period: a counter must be read before it can advance 2^width. Poll
 * twice per shortest wrap time at the device's maximum rate, so that a
 * poll timer late by less than a period still comes in time.
 */
#define PERFMON_POLL_SAFETY             2

/*
 * Samples a CPU takes per clock tick before its sampling is throttled
 * until the next tick (perfmon.max_samples_per_tick): 1000 per tick at
 * 100 Hz is 100000 samples a second, a few percent of a CPU.
 */
#define PERFMON_MAX_SAMPLES_PER_TICK    1000

/*
 * Multiplexing: ticks between two rotations (perfmon.mux_ticks). Two ticks
 * (20 ms at 100 Hz) give every raw event a turn several times in a 100 ms
 * measurement, at a cost of one cross-CPU call per CPU and rotation.
 */
#define PERFMON_MUX_TICKS               2

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
 * A slot on a CPU. pmc_id, mask and id_bit copy the global slot's while
 * the CPU uses it, so that the hot paths touch only this structure.
 */
struct perfmon_cpu_pmc {
    unsigned int nr_refs;   /* CPU events and loaded threads using it */
    bool wrap_seen;         /* a wrap was added before its interrupt came */
    bool plain;             /* a software PMU counter, polled, not sampling:
                               perfmon_cpu_pmc_update_plain may update it */
    unsigned int pmc_id;
    uint64_t mask;
    uint64_t id_bit;
    uint64_t prev;          /* last raw counter value */
    uint64_t value;         /* 64-bit sum of the counter's increments */

    /*
     * Sampling (sampler set: the slot is the sampling event's alone). The
     * next sample is due when value reaches sample_next, ending a period
     * of sample_period; armed while the event may take samples. armed is
     * not the event's samples_left != 0: it is also false from the slot's
     * start until perfmon_cpu_pmc_arm sets sample_next, so an update in
     * between takes no sample against a stale sample_next.
     */
    struct perfmon_event *sampler;
    bool armed;
    uint64_t sample_next;
    uint64_t sample_period;
    uint64_t throttled_periods; /* expired unsampled while throttled */

    /*
     * Multiplexing. sched: the slot holds counter pmc_id on this CPU (the
     * CPU's copy of the schedule; its complement is also a bit of the CPU's
     * unsched mask, kept for the context switch's single test, while paths
     * that hold only the slot test this). A slot without a counter reads as
     * a counter that never moves (mask and id_bit 0, so every read gives 0
     * and no overflow is consumed for it): the hot paths need no test. Its
     * time without a counter is off_total plus, while it has none, the time
     * since off_since (CPU events), and the loaded thread's part since
     * off_mark (its load or the slot's loss, whichever came last).
     */
    bool sched;
    uint64_t off_total;
    uint64_t off_since;
    uint64_t off_mark;
} __attribute__((aligned(64)));    /* 128 bytes: indexed by a shift */

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
    struct perfmon_cpu_pmc pmcs[PERFMON_MAX_DEVS][PERFMON_MAX_SLOTS];
    uint32_t used[PERFMON_MAX_DEVS];        /* slots with nr_refs > 0 */
    uint32_t unsched[PERFMON_MAX_DEVS];     /* slots without a counter */
    unsigned int sched_seq[PERFMON_MAX_DEVS];   /* schedule followed */
    uint8_t slot_of[PERFMON_MAX_DEVS][64];  /* counter id -> slot */
    struct timer poll_timers[PERFMON_MAX_DEVS];
    bool poll_armed[PERFMON_MAX_DEVS];
    struct perfmon_throttle throttle;
    struct syscnt sc_overflows;
    struct syscnt sc_samples;
    struct syscnt sc_throttles;
};

static unsigned int perfmon_max_samples_per_tick
    = PERFMON_MAX_SAMPLES_PER_TICK;
static uint64_t perfmon_tsc_per_tick;

/*
 * The rotation thread sleeps until some slot waits for a counter
 * (perfmon_mux_wanted, under perfmon_mux_lock), then rotates every
 * perfmon_mux_interval ticks for as long as one does.
 */
static uint64_t perfmon_mux_interval = PERFMON_MUX_TICKS;
static struct spinlock perfmon_mux_lock = SPINLOCK_INITIALIZER;
static bool perfmon_mux_wanted;
static struct thread *perfmon_mux_thread;

static struct perfmon_cpu perfmon_cpu __percpu;

static struct spinlock perfmon_devs_lock = SPINLOCK_INITIALIZER;
static struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
static unsigned int perfmon_nr_devs;

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

/* ------------------------------------------------------------------ */
/* Per-CPU tier (local, interrupts disabled)                           */
/* ------------------------------------------------------------------ */

static inline struct perfmon_cpu_pmc *
perfmon_cpu_pmc(struct perfmon_cpu *cpu, const struct perfmon_dev *dev,
                unsigned int index)
{
    return &cpu->pmcs[dev->state.index][index];
}

/*
 * Add what the counter counted since the last update, given its raw value
 * now and whether a wrap was reported since the last update. Between two
 * updates a counter must not wrap twice. Without an overflow interrupt
 * that means advancing less than 2^width (the poll period ensures it),
 * and the difference modulo the width is exact. With one, the report
 * tells that a wrap happened even when the raw value is back at or above
 * the last one read (from a last value near 0 the counter may advance up
 * to 2^width before the wrap's interrupt is taken). An update that sees
 * the raw value go down with no report yet (the counter wrapped after
 * its report was consumed) adds the wrap and sets wrap_seen, so that the
 * report still to come adds nothing.
 */
static __attribute__((noinline)) void
perfmon_cpu_pmc_add_wrap(const struct perfmon_dev *dev,
                         struct perfmon_cpu_pmc *cpmc, uint64_t raw,
                         bool reported)
{
    uint64_t mask = cpmc->mask;
    uint64_t delta = (raw - cpmc->prev) & mask;
    bool wrapped = raw < cpmc->prev;

    if (reported) {
        if (cpmc->wrap_seen) {
            /* Already added; a decrease now would be a new wrap. */
            cpmc->wrap_seen = false;
        } else if (!wrapped && mask != ~0ULL) {
            /* Back at or above the last value: a whole wrap. A 64-bit
               counter (preset for sampling) cannot get there. */
            delta += mask + 1;
            wrapped = true;
        } else {
            wrapped = true;
        }
    } else if (wrapped && dev->overflow_intr) {
        cpmc->wrap_seen = true;
    }

    if (wrapped) {
        syscnt_inc(&cpu_local_ptr(perfmon_cpu)->sc_overflows);
    }

    cpmc->value += delta;
    cpmc->prev = raw;
}

/*
 * The common case inline (no report, no decrease: the plain difference),
 * the rest above. Hot: every switch and poll comes here per slot. (The
 * overflow path has its common case, a wrap reported as it happens,
 * inline too: perfmon_cpu_pmc_overflow.)
 */
static inline void
perfmon_cpu_pmc_add(const struct perfmon_dev *dev,
                    struct perfmon_cpu_pmc *cpmc, uint64_t raw,
                    bool reported)
{
    if (__builtin_expect(!reported && raw >= cpmc->prev, 1)) {
        cpmc->value += raw - cpmc->prev;
        cpmc->prev = raw;
    } else {
        perfmon_cpu_pmc_add_wrap(dev, cpmc, raw, reported);
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
    const struct perfmon_cpu_pmc *cpmcs = cpu->pmcs[dev->state.index];
    uint64_t ids = 0;

    if (!dev->overflow_intr) {
        return 0;
    }

    FOR_EACH_BIT(index, mask) {
        ids |= cpmcs[index].id_bit;
    }

    /* Slots without a counter (multiplexed out) have no id bit. */
    return (ids != 0) ? dev->ops->overflow_consume(ids) : 0;
}

/*
 * The bank of the software PMU's counters on this CPU for dev, else NULL:
 * they are per-CPU memory, read inline rather than through the driver.
 */
static inline const struct pmu_soft_bank *
perfmon_dev_bank(const struct perfmon_dev *dev)
{
    return dev->sw ? cpu_local_ptr(pmu_soft_bank) : NULL;
}

/* A slot's raw counter value. Local, interrupts disabled. */
static inline uint64_t
perfmon_cpu_pmc_read(const struct perfmon_dev *dev,
                     const struct pmu_soft_bank *bank,
                     const struct perfmon_cpu_pmc *cpmc)
{
    uint64_t raw;

    if (bank != NULL) {
        raw = pmu_soft_bank_read(bank, cpmc->pmc_id);
    } else {
        raw = dev->ops->read(cpmc->pmc_id);
    }

    return raw & cpmc->mask;
}

/*
 * Bring a slot up to date, given what the consume before it returned and
 * perfmon_dev_bank(dev). Hot: every poll comes here per slot, and the
 * switches and reads that are off their fast path.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_sync(const struct perfmon_dev *dev,
                     const struct pmu_soft_bank *bank,
                     struct perfmon_cpu_pmc *cpmc, uint64_t pending)
{
    perfmon_cpu_pmc_add(dev, cpmc, perfmon_cpu_pmc_read(dev, bank, cpmc),
                        (pending & cpmc->id_bit) != 0);
}

/* ------------------------------------------------------------------ */
/* Sampling (per-CPU tier, local, interrupts disabled)                 */
/* ------------------------------------------------------------------ */

/*
 * The return addresses of the callers of the function whose frame is at
 * fp, innermost first. Only frames on the current thread's stack are
 * followed, so a corrupt or foreign frame pointer ends the chain.
 */
static unsigned int
perfmon_sample_frames(uintptr_t fp, uint64_t *frames, unsigned int max)
{
    return stack_walk(fp, (uintptr_t)thread_stack(thread_self()),
                      THREAD_STACK_SIZE, frames, max);
}

_Static_assert(sizeof(struct perfmon_record_sample)
               + PERFMON_MAX_FRAMES * sizeof(uint64_t)
               <= PERFMON_SESSION_RECORD_MAX,
               "a sample with a full call chain fits a session record");

/*
 * Write one sample of event into its session's ring of this CPU, and
 * return its time. The record has room for the event's call chain depth;
 * a shorter chain leaves the rest unused (nr_frames tells), which spares
 * a walk into a buffer and a copy. Inlined into its one caller, the
 * overflow path.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_sample_write(struct perfmon_cpu *cpu, struct perfmon_event *event,
                     const struct perfmon_intr_ctx *ctx, uint64_t period)
{
    struct perfmon_session_ring *ring;
    struct perfmon_record_sample *record;
    uint64_t now = cpu_get_tsc();
    unsigned int nr_frames = event->nr_frames;

    event->nr_samples++;
    syscnt_inc(&cpu->sc_samples);

    /* A valid size: set_sampling keeps nr_frames to PERFMON_MAX_FRAMES. */
    ring = perfmon_session_ring_local(event->session);
    record = perfmon_session_ring_reserve(ring, sizeof(*record)
                                          + nr_frames
                                            * sizeof(record->frames[0]));

    if (record == NULL) {
        return now;     /* counted as lost by the session */
    }

    if (nr_frames != 0) {
        nr_frames = (ctx->fp != 0)
                    ? perfmon_sample_frames(ctx->fp, record->frames,
                                            nr_frames)
                    : 0;
    }

    record->header.type = PERFMON_RECORD_SAMPLE;
    record->header.cpu = cpu_id();
    record->cookie = event->cookie;
    record->time = now;
    record->ip = ctx->ip;
    record->period = period;
    record->tid = thread_id(thread_self());
    record->nr_frames = nr_frames;
    perfmon_session_ring_commit(ring, record);     /* sets the size */
    return now;
}

/* Tell the sessions of a slot's event that its sampling was throttled. */
static void
perfmon_sample_write_throttle(struct perfmon_cpu *cpu,
                              struct perfmon_cpu_pmc *cpmc)
{
    struct perfmon_record_throttle *record;

    record = perfmon_session_reserve(cpmc->sampler->session,
                                     sizeof(*record));

    if (record != NULL) {
        record->header.type = PERFMON_RECORD_THROTTLE;
        record->header.size = sizeof(*record);
        record->header.cpu = cpu_id();
        record->time_start = cpu->throttle.time_start;
        record->time_end = cpu_get_tsc();
        record->nr_periods = cpmc->throttled_periods;
        perfmon_session_commit(cpmc->sampler->session, record);
    }

    cpmc->throttled_periods = 0;
}

/*
 * Count a sample taken at TSC time now against the CPU's budget for this
 * tick; past it, stop sampling on the CPU until the next tick
 * (perfmon_throttle_timer).
 */
static inline __attribute__((always_inline)) void
perfmon_throttle_count(struct perfmon_cpu *cpu, uint64_t now)
{
    struct perfmon_throttle *throttle = &cpu->throttle;

    if (now >= throttle->window_end) {
        throttle->window_end = now + perfmon_tsc_per_tick;
        throttle->nr_samples = 0;
    }

    if (++throttle->nr_samples >= perfmon_max_samples_per_tick) {
        throttle->active = true;
        throttle->time_start = now;
        syscnt_inc(&cpu->sc_throttles);
        timer_schedule(&throttle->timer, clock_get_time() + 1);
    }
}

/*
 * Make the slot's counter overflow at the next sample, or on the way
 * there when the period is longer than the device can preset. reload:
 * the counter was preset before, since it started.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_preset(struct perfmon_dev *dev, struct perfmon_cpu_pmc *cpmc,
                       bool reload)
{
    uint64_t left = cpmc->sample_next - cpmc->value;

    if (left > dev->max_period) {
        left = dev->max_period;
    }

    /* The preset leaves no overflow pending: none was seen early. */
    cpmc->wrap_seen = false;

    /* A software counter's reload is a store, done inline. */
    if (reload && dev->sw) {
        cpmc->prev = pmu_soft_bank_reload(cpu_local_ptr(pmu_soft_bank),
                                          cpmc->pmc_id, left, cpmc->mask);
    } else {
        cpmc->prev = dev->ops->preset(cpmc->pmc_id, left) & cpmc->mask;
    }
}

/*
 * Start a period of left events on an up-to-date sampling slot (the
 * remainder of a thread's period when it loads), if its event may still
 * take samples.
 */
static void
perfmon_cpu_pmc_arm(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                    struct perfmon_cpu_pmc *cpmc, uint64_t left,
                    uint64_t period)
{
    cpmc->armed = cpmc->sampler->samples_left != 0;
    cpmc->sample_next = cpmc->value + left;
    cpmc->sample_period = period;

    if (cpmc->armed && !cpu->throttle.active) {
        perfmon_cpu_pmc_preset(dev, cpmc, false);
    }
}

/*
 * Take the samples due on an up-to-date sampling slot: one per period
 * that ended, all at ctx (a count that ends several periods at once
 * stands for each of them). While the CPU is throttled, periods that end
 * are counted instead. Then preset the counter for the next sample when
 * it may have moved off its preset (reload: it overflowed, or a sample
 * was taken).
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_sample_inline(struct perfmon_cpu *cpu,
                              struct perfmon_dev *dev,
                              struct perfmon_cpu_pmc *cpmc,
                              const struct perfmon_intr_ctx *ctx, bool reload)
{
    struct perfmon_event *event = cpmc->sampler;
    uint64_t now;

    if (!cpmc->armed) {
        return;
    }

    while (cpmc->value >= cpmc->sample_next) {
        if (cpu->throttle.active) {
            uint64_t n = (cpmc->value - cpmc->sample_next)
                         / cpmc->sample_period + 1;

            cpmc->throttled_periods += n;
            cpmc->sample_next += n * cpmc->sample_period;
            break;
        }

        now = perfmon_sample_write(cpu, event, ctx, cpmc->sample_period);
        reload = true;
        perfmon_throttle_count(cpu, now);

        if (event->samples_left != PERFMON_SAMPLES_UNLIMITED
            && --event->samples_left == 0) {
            cpmc->armed = false;
            return;
        }

        /* A new period takes effect here, at the end of the current. */
        cpmc->sample_period = READ_ONCE(event->period);
        cpmc->sample_next += cpmc->sample_period;
    }

    if (reload && !cpu->throttle.active) {
        perfmon_cpu_pmc_preset(dev, cpmc, true);
    }
}

/* The same, out of line, for the paths other than the overflow's. */
static __attribute__((noinline)) void
perfmon_cpu_pmc_sample(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                       struct perfmon_cpu_pmc *cpmc,
                       const struct perfmon_intr_ctx *ctx, bool reload)
{
    perfmon_cpu_pmc_sample_inline(cpu, dev, cpmc, ctx, reload);
}

/*
 * Take the samples due on a sampling slot just brought up to date outside
 * the overflow interrupt, at the caller. Out of line, so that the callers'
 * fast paths need not compute where they are.
 */
static __attribute__((noinline)) void
perfmon_cpu_pmc_sample_due(struct perfmon_dev *dev,
                           struct perfmon_cpu_pmc *cpmc, bool reload)
{
    struct perfmon_intr_ctx ctx = PERFMON_CTX_CALLER();

    perfmon_cpu_pmc_sample(cpu_local_ptr(perfmon_cpu), dev, cpmc, &ctx,
                           reload);
}

/*
 * Bring one slot of this CPU up to date, interrupts disabled: consume its
 * overflow (devices with an interrupt only), one read, the add; a sampling
 * slot then takes the samples due.
 */
static __attribute__((noinline)) struct perfmon_cpu_pmc *
perfmon_cpu_pmc_update_slot(struct perfmon_dev *dev,
                            struct perfmon_cpu_pmc *cpmc)
{
    uint64_t pending = 0;

    /* Multiplexed out: nothing counts, the device is not touched. */
    if (!cpmc->sched) {
        return cpmc;
    }

    if (dev->overflow_intr) {
        pending = dev->ops->overflow_consume(cpmc->id_bit);
    }

    perfmon_cpu_pmc_sync(dev, perfmon_dev_bank(dev), cpmc, pending);

    /* An overflow consumed here is not reported: its samples are due. */
    if (__builtin_expect(cpmc->sampler != NULL, 0)) {
        perfmon_cpu_pmc_sample_due(dev, cpmc, pending != 0);
    }

    return cpmc;
}

/*
 * The fast path of the reads and the switch: a plain slot whose counter
 * is a load from bank (this CPU's) and has not wrapped since the last
 * update is brought up to date with no call, so that the caller needs no
 * registers saved. Return false, having changed nothing, for any other
 * slot: the caller then takes the general path (perfmon_cpu_pmc_update_slot,
 * perfmon_cpu_pmc_sync). Local, interrupts disabled.
 */
static inline bool
perfmon_cpu_pmc_update_plain(const struct pmu_soft_bank *bank,
                             struct perfmon_cpu_pmc *cpmc)
{
    uint64_t raw;

    /* id_bit: a software PMU counter's id is below 64. */
    if (!cpmc->plain || (pmu_soft_bank_hooked(bank) & cpmc->id_bit) != 0) {
        return false;
    }

    raw = bank->values[cpmc->pmc_id] & cpmc->mask;

    if (raw < cpmc->prev) {
        return false;
    }

    cpmc->value += raw - cpmc->prev;
    cpmc->prev = raw;
    return true;
}

/* Bring slot index of dev on cpu (this CPU) up to date, either way. */
static struct perfmon_cpu_pmc *
perfmon_cpu_pmc_update(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                       unsigned int index)
{
    struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc(cpu, dev, index);

    if (perfmon_cpu_pmc_update_plain(cpu_local_ptr(pmu_soft_bank), cpmc)) {
        return cpmc;
    }

    return perfmon_cpu_pmc_update_slot(dev, cpmc);
}

/*
 * The throttle timer, at the tick after a CPU was throttled: each
 * sampling slot counts the periods that ended meanwhile, reports them in
 * a THROTTLE record, and samples again from where its period stands.
 */
static void
perfmon_throttle_timer(struct timer *timer)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int nr_devs = perfmon_nr_devs;

    (void)timer;
    cpu->throttle.nr_samples = 0;
    cpu->throttle.window_end = cpu_get_tsc() + perfmon_tsc_per_tick;

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        FOR_EACH_BIT(index, cpu->used[d]) {
            struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc(cpu, dev, index);

            if (cpmc->sampler == NULL) {
                continue;
            }

            /* Still throttled: periods that ended are counted. */
            perfmon_cpu_pmc_update(cpu, dev, index);

            if (cpmc->armed || cpmc->throttled_periods != 0) {
                perfmon_sample_write_throttle(cpu, cpmc);
            }
        }
    }

    cpu->throttle.active = false;

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        FOR_EACH_BIT(index, cpu->used[d]) {
            struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc(cpu, dev, index);

            if (cpmc->sampler != NULL && cpmc->armed) {
                perfmon_cpu_pmc_preset(dev, cpmc, false);
            }
        }
    }
}

static void
perfmon_poll_arm(struct perfmon_cpu *cpu, struct perfmon_dev *dev)
{
    if (dev->state.poll_ticks == 0 || cpu->poll_armed[dev->state.index]) {
        return;
    }

    cpu->poll_armed[dev->state.index] = true;
    timer_schedule(&cpu->poll_timers[dev->state.index],
                   clock_get_time() + dev->state.poll_ticks);
}

static void perfmon_cpu_sched_check(struct perfmon_cpu *cpu,
                                    struct perfmon_dev *dev,
                                    struct perfmon_td *td);

/*
 * Take a reference on a slot of this CPU, starting its counter if it holds
 * one here. A slot taken into use follows the schedule first: it may be a
 * slot freed and taken again for another raw event since this CPU last
 * used it, whose counter this CPU's copy still names (and that counter
 * may not even count the new raw event). td: the thread loaded here, or
 * being loaded, or NULL.
 */
static struct perfmon_cpu_pmc *
perfmon_cpu_pmc_get(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                    unsigned int index, struct perfmon_td *td)
{
    struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc(cpu, dev, index);

    if (cpmc->nr_refs == 0) {
        const struct perfmon_pmc *pmc = &dev->state.pmcs[index];

        perfmon_cpu_sched_check(cpu, dev, td);

        if (cpmc->sched) {
            cpmc->prev = dev->ops->start(cpmc->pmc_id, pmc->config)
                         & cpmc->mask;
        }

        cpmc->wrap_seen = false;
        cpmc->sampler = pmc->sampler;
        cpmc->plain = dev->sw && !dev->overflow_intr && pmc->sampler == NULL;
        cpmc->armed = false;
        cpmc->throttled_periods = 0;
        cpu->used[dev->state.index] |= 1U << index;
        perfmon_poll_arm(cpu, dev);
    }

    cpmc->nr_refs++;
    return cpmc;
}

/* Drop a reference, stopping the counter with the last one. */
static void
perfmon_cpu_pmc_put(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                    unsigned int index)
{
    struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc(cpu, dev, index);

    assert(cpmc->nr_refs != 0);

    if (--cpmc->nr_refs == 0) {
        /* Periods a throttled event leaves with are reported now. */
        if (cpmc->sampler != NULL && cpu->throttle.active
            && (cpmc->armed || cpmc->throttled_periods != 0)) {
            perfmon_sample_write_throttle(cpu, cpmc);
        }

        if (cpmc->sched) {
            dev->ops->stop(cpmc->pmc_id);
        }

        cpu->used[dev->state.index] &= ~(1U << index);
        cpmc->sampler = NULL;
        cpmc->plain = false;
        cpmc->armed = false;
    }
}

/*
 * Follow dev's schedule on this CPU (multiplexing): the slots in use that
 * lose their counter are brought up to date and stopped, then those that
 * gain one start, as a counter may pass from one slot to another; a slot
 * without a counter reads as one that never moves. The times without a
 * counter are accounted, for the CPU's slots and for td, the thread loaded
 * here (NULL when none), at TSC now (a context switch's: the scheduler's,
 * which the thread's run time and the switch's accounting use). Local,
 * interrupts disabled.
 */
static __attribute__((noinline)) void
perfmon_cpu_sched_apply(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                        struct perfmon_td *td, uint64_t now)
{
    const struct perfmon_dev_state *state = &dev->state;
    unsigned int d = state->index;
    struct perfmon_cpu_pmc *cpmcs = cpu->pmcs[d];
    uint32_t here = ~cpu->unsched[d], sched, lose, gain, stopping;
    unsigned int ids[PERFMON_MAX_SLOTS];
    uint64_t masks[PERFMON_MAX_SLOTS];
    uint64_t pending;
    unsigned int seq;

    /*
     * A consistent copy of what matters here: the slots that hold counters
     * in the schedule or on this CPU. A writer holds the device lock with
     * interrupts disabled, so it is never interrupted by this reader on
     * its CPU.
     */
    for (;;) {
        seq = __atomic_load_n(&state->sched_seq, __ATOMIC_ACQUIRE);

        if (seq & 1) {
            cpu_pause();
            continue;
        }

        sched = READ_ONCE(state->sched_mask);

        FOR_EACH_BIT(i, sched) {
            ids[i] = READ_ONCE(state->pmcs[i].pmc_id);
            masks[i] = READ_ONCE(state->pmcs[i].mask);
        }

        __atomic_thread_fence(__ATOMIC_ACQUIRE);

        if (READ_ONCE(state->sched_seq) == seq) {
            break;
        }
    }

    lose = here & ~sched;
    gain = sched & ~here;

    FOR_EACH_BIT(i, sched & here) {
        if (cpmcs[i].pmc_id != ids[i] || cpmcs[i].mask != masks[i]) {
            lose |= 1U << i;
            gain |= 1U << i;
        }
    }

    stopping = lose & cpu->used[d];
    pending = perfmon_dev_consume(cpu, dev, stopping);

    FOR_EACH_BIT(i, lose) {
        struct perfmon_cpu_pmc *cpmc = &cpmcs[i];

        /* Pinned: a sampling slot keeps its counter. */
        assert(cpmc->sampler == NULL);

        if (stopping & (1U << i)) {
            perfmon_cpu_pmc_sync(dev, perfmon_dev_bank(dev), cpmc, pending);
            dev->ops->stop(cpmc->pmc_id);
        }

        cpu->slot_of[d][cpmc->pmc_id] = PERFMON_SLOT_NONE;
        cpmc->sched = false;

        if (dev->sw) {
            cpmc->pmc_id = PMU_SOFT_NULL_PMC;
        }

        cpmc->mask = 0;
        cpmc->id_bit = 0;
        cpmc->prev = 0;
        cpmc->wrap_seen = false;
        cpmc->off_since = now;
        cpmc->off_mark = now;
        cpu->unsched[d] |= 1U << i;
    }

    FOR_EACH_BIT(i, gain) {
        struct perfmon_cpu_pmc *cpmc = &cpmcs[i];

        /* Not a move from another counter: its time off ends. */
        if (!cpmc->sched) {
            cpmc->off_total += now - cpmc->off_since;

            if (td != NULL && (td->used[d] & (1U << i))) {
                td->off[d][i] += now - cpmc->off_mark;
            }

            cpu->unsched[d] &= ~(1U << i);
        }

        assert(ids[i] < 64);
        cpmc->sched = true;
        cpmc->pmc_id = ids[i];
        cpmc->mask = masks[i];
        cpmc->id_bit = 1ULL << ids[i];
        cpu->slot_of[d][ids[i]] = (uint8_t)i;

        if (cpu->used[d] & (1U << i)) {
            cpmc->prev = dev->ops->start(ids[i], state->pmcs[i].config)
                         & cpmc->mask;
            cpmc->wrap_seen = false;
        }
    }

    if (gain & cpu->used[d]) {
        perfmon_poll_arm(cpu, dev);
    }

    cpu->sched_seq[d] = seq;
}

/* Whether dev's schedule changed since this CPU last followed it. */
static inline bool
perfmon_cpu_sched_stale(const struct perfmon_cpu *cpu,
                        const struct perfmon_dev *dev)
{
    return cpu->sched_seq[dev->state.index]
           != __atomic_load_n(&dev->state.sched_seq, __ATOMIC_ACQUIRE);
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

/* The thread loaded on this CPU, if any. Local, interrupts disabled. */
static struct perfmon_td *
perfmon_cpu_loaded_td(void)
{
    struct perfmon_td *td = thread_perfmon_td(thread_self());

    return (READ_ONCE(td->loaded_cpu) == cpu_id()) ? td : NULL;
}

void
perfmon_poll_local(struct perfmon_dev *dev)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    const struct pmu_soft_bank *bank = perfmon_dev_bank(dev);
    struct perfmon_cpu_pmc *cpmcs = cpu->pmcs[dev->state.index];
    uint32_t used = cpu->used[dev->state.index];
    uint64_t pending = perfmon_dev_consume(cpu, dev, used);

    FOR_EACH_BIT(index, used) {
        perfmon_cpu_pmc_sync(dev, bank, &cpmcs[index], pending);
    }
}

/*
 * The poll timer: brings every used slot of its CPU up to date. It is
 * armed when the CPU starts using a slot and re-arms itself while slots
 * are in use; the first firing that finds none lets it lapse. So an idle
 * CPU has no timer, and a busy context switch path never touches it.
 */
static void
perfmon_poll_timer(struct timer *timer)
{
    struct perfmon_dev *dev = timer_arg(timer);
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

    perfmon_poll_local(dev);

    if (cpu->used[dev->state.index] != 0) {
        timer_schedule(timer, clock_get_time() + dev->state.poll_ticks);
    } else {
        cpu->poll_armed[dev->state.index] = false;
    }
}

/*
 * The overflow of a slot in use on this CPU: its slot found, the rest of
 * perfmon_report_overflow. Out of line so that cpmc comes in a register
 * of its own (inline, it was computed again from the indexes at each use).
 */
static __attribute__((noinline)) void
perfmon_cpu_pmc_overflow(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                         struct perfmon_cpu_pmc *cpmc,
                         const struct perfmon_intr_ctx *ctx)
{
    uint64_t raw = perfmon_cpu_pmc_read(dev, perfmon_dev_bank(dev), cpmc);

    /* The common case: a wrap reported as it happens. */
    if (__builtin_expect(raw < cpmc->prev && !cpmc->wrap_seen, 1)) {
        cpmc->value += (raw - cpmc->prev) & cpmc->mask;
        cpmc->prev = raw;
        syscnt_inc(&cpu->sc_overflows);
    } else {
        perfmon_cpu_pmc_add(dev, cpmc, raw, true);
    }

    if (cpmc->sampler != NULL) {
        perfmon_cpu_pmc_sample_inline(cpu, dev, cpmc, ctx, true);
    }
}

void
perfmon_report_overflow(struct perfmon_dev *dev, unsigned int pmc_id,
                        const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int pmc_index;

    assert(!cpu_intr_enabled());

    if (pmc_id >= 64) {
        return;
    }

    /*
     * The slot the counter serves here (PERFMON_SLOT_NONE: none, and
     * above every used bit). A counter stopped since it overflowed has
     * nothing left to add.
     */
    pmc_index = cpu->slot_of[dev->state.index][pmc_id];

    if (pmc_index < PERFMON_MAX_SLOTS
        && (cpu->used[dev->state.index] & (1U << pmc_index))) {
        perfmon_cpu_pmc_overflow(cpu, dev,
                                 perfmon_cpu_pmc(cpu, dev, pmc_index), ctx);
    }
}

/* Each kind of device interrupts on its own vector. */
static void
perfmon_overflow_intr(bool sw, const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_dev *dev = perfmon_get_dev(sw);

    if (dev != NULL && dev->overflow_intr) {
        dev->ops->handle_overflow_intr(ctx);
    }
}

void
perfmon_pmi_intr(const struct perfmon_intr_ctx *ctx)
{
    perfmon_overflow_intr(false, ctx);
}

void
perfmon_pmu_soft_intr(const struct perfmon_intr_ctx *ctx)
{
    perfmon_overflow_intr(true, ctx);
}

unsigned int
perfmon_cpu_nr_used_pmcs(unsigned int cpu)
{
    const struct perfmon_cpu *pcpu = percpu_ptr(perfmon_cpu, cpu);
    unsigned int n = 0;

    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        n += bitops_popcount(READ_ONCE(pcpu->used[d]));
    }

    return n;
}

bool
perfmon_event_counting_here(const struct perfmon_event *event)
{
    assert(!cpu_intr_enabled());

    if (!perfmon_event_attached(event)) {
        return false;
    }

    return perfmon_cpu_pmc(cpu_local_ptr(perfmon_cpu), event->dev,
                           event->pmc_index)->sched;
}

uint64_t
perfmon_nr_overflows(unsigned int cpu)
{
    return syscnt_read(&percpu_ptr(perfmon_cpu, cpu)->sc_overflows);
}

/* ------------------------------------------------------------------ */
/* Global tier                                                         */
/* ------------------------------------------------------------------ */

/*
 * The schedule: which slots hold counters. Slots linked by the attached
 * groups (links, transitively) form units, which hold counters all
 * together or none (a group's counts cover the same time). A unit with a
 * pinned slot (a pinned event's, or a sampling one) holds them always;
 * the others take turns when they do not all fit, at each rotation. It
 * is written under the device lock, interrupts disabled; the CPUs' copies
 * (perfmon_cpu_sched_apply) read it as a sequence count, which moves only
 * when a slot gains or loses a counter (perfmon_sched_write), so that an
 * attach that changes nothing costs no CPU a new copy. Nothing inside a
 * write may take a lock that a CPU may hold while it reads: a CPU in a
 * context switch holds its run queue lock.
 */

/* Slot index is about to gain or lose its counter. */
static void
perfmon_sched_write(struct perfmon_dev_state *state, unsigned int index)
{
    if (state->sched_changed == 0) {
        __atomic_store_n(&state->sched_seq, state->sched_seq + 1,
                         __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }

    state->sched_changed |= 1U << index;
}

/*
 * End the writes of one schedule change, if any, and return the slots
 * that gained or lost a counter (including any that did both).
 */
static uint32_t
perfmon_sched_end(struct perfmon_dev_state *state)
{
    uint32_t changed = state->sched_changed;

    if (changed != 0) {
        __atomic_store_n(&state->sched_seq, state->sched_seq + 1,
                         __ATOMIC_RELEASE);
        state->sched_changed = 0;
    }

    return changed;
}

static bool
perfmon_pmc_pinned(const struct perfmon_pmc *pmc)
{
    return pmc->nr_pinned != 0 || pmc->sampler != NULL;
}

/*
 * Whether a slot wants a counter: some event on it is enabled (or pins
 * it). A slot whose events are all disabled would count for no one: it
 * holds a counter only where no other unit waits for one.
 */
static bool
perfmon_pmc_wanted(const struct perfmon_pmc *pmc)
{
    return pmc->nr_enabled != 0 || perfmon_pmc_pinned(pmc);
}

/* The slots linked to slot index by groups, transitively, itself too. */
static uint32_t
perfmon_mux_unit(const struct perfmon_dev_state *state, unsigned int index)
{
    uint32_t unit = 1U << index, todo = unit;

    while (todo != 0) {
        unsigned int i = __builtin_ctz(todo);
        uint32_t more = state->link_masks[i] & ~unit;

        todo = (todo & (todo - 1)) | more;
        unit |= more;
    }

    return unit;
}

/* Release the counters the slots of unit hold. */
static void
perfmon_mux_drop(struct perfmon_dev *dev, uint32_t unit)
{
    FOR_EACH_BIT(i, unit & dev->state.sched_mask) {
        perfmon_sched_write(&dev->state, i);
        dev->ops->free(dev->state.pmcs[i].pmc_id);
        WRITE_ONCE(dev->state.sched_mask, dev->state.sched_mask & ~(1U << i));
    }
}

/* Give every slot of unit a counter, all or none; return whether it did. */
static bool
perfmon_mux_take(struct perfmon_dev *dev, uint32_t unit)
{
    uint32_t taken = 0;

    FOR_EACH_BIT(i, unit & ~dev->state.sched_mask) {
        struct perfmon_pmc *pmc = &dev->state.pmcs[i];
        unsigned int pmc_id, width;

        if (dev->ops->alloc(&pmc_id, &width, pmc->config) != 0) {
            perfmon_mux_drop(dev, taken);
            return false;
        }

        assert(width >= 1 && width <= 64 && pmc_id < 64);
        perfmon_sched_write(&dev->state, i);
        WRITE_ONCE(pmc->pmc_id, pmc_id);
        pmc->width = width;
        WRITE_ONCE(pmc->mask, bitops_width_mask(width));
        WRITE_ONCE(dev->state.sched_mask, dev->state.sched_mask | (1U << i));
        taken |= 1U << i;
    }

    return true;
}

/*
 * The time slots have held counters, brought up to now: what orders the
 * turns. A rotation thread that runs late (a loaded machine) makes some
 * turns longer than others; the units that have held counters the least
 * go first, so the shares even out anyway.
 */
static void
perfmon_mux_account(struct perfmon_dev_state *state)
{
    uint64_t now = cpu_get_tsc();

    FOR_EACH_BIT(i, state->sched_mask) {
        state->pmcs[i].sched_time += now - state->sched_stamp;
    }

    state->sched_stamp = now;
}

/*
 * The times of the slots that want a counter, least and most served;
 * false when none does.
 */
static bool
perfmon_mux_range(const struct perfmon_dev_state *state, uint64_t *leastp,
                  uint64_t *mostp)
{
    uint64_t least = UINT64_MAX, most = 0;

    FOR_EACH_BIT(i, state->used_mask) {
        if (perfmon_pmc_wanted(&state->pmcs[i])) {
            least = MIN(least, state->pmcs[i].sched_time);
            most = MAX(most, state->pmcs[i].sched_time);
        }
    }

    *leastp = least;
    *mostp = most;
    return least != UINT64_MAX;
}

/*
 * The time a slot that comes to want a counter starts from (own: its
 * time, 0 for a new slot), taken before it wants one: within the times of
 * the slots that want one. Not below the least served, no catching up on
 * them for the time it did not want one; not above the most served, what
 * it held alone or while it counted for no one (an idle slot keeps a
 * counter nobody else wants) puts it behind none of them. None: its own.
 */
static uint64_t
perfmon_mux_level(uint64_t own, bool any, uint64_t least, uint64_t most)
{
    return any ? MIN(MAX(own, least), most) : own;
}

/*
 * Give the slots of units[k] counters, all or none, and return whether it
 * did. A unit that wants counters takes them from idle units (after it in
 * units, the last first) if it must; only then do idle units lose theirs,
 * so that a unit given free counters moves no other. Device lock held.
 */
static bool
perfmon_mux_take_room(struct perfmon_dev *dev, const uint32_t *units,
                      const bool *idle, unsigned int nr_units, unsigned int k)
{
    while (!perfmon_mux_take(dev, units[k])) {
        unsigned int victim = nr_units;

        if (idle[k]) {
            return false;
        }

        /* Idle units come last in units: look no further than them. */
        do {
            if (victim-- <= k + 1 || !idle[victim]) {
                return false;
            }
        } while ((units[victim] & dev->state.sched_mask) == 0);

        perfmon_mux_drop(dev, units[victim]);
    }

    return true;
}

/*
 * Compute dev's schedule again. Units not whole (a group just linked them)
 * give up their counters; with rotate, so do all units that may, when
 * some wanted unit waits. Pinned units then take counters, from the last
 * multiplexed units if they must; then the other wanted units, those
 * that have held counters the least first (ties: in order from
 * mux_next), each if it fits, from idle units (all their events
 * disabled) if it must; then idle units, where room is left. The first
 * wanted unit left waiting comes first among equals at the next
 * rotation. Return EAGAIN, the schedule left for the caller to compute
 * again once it has undone what it added, when a pinned unit finds no
 * room; else 0, and whether a wanted unit waits in mux_waiting. Device
 * lock held, interrupts disabled.
 */
static int
perfmon_mux_schedule(struct perfmon_dev *dev, bool rotate)
{
    struct perfmon_dev_state *state = &dev->state;
    uint32_t units[PERFMON_MAX_SLOTS], used = 0, seen = 0, sched = 0;
    unsigned int firsts[PERFMON_MAX_SLOTS], nr_units = 0, k;
    bool pinned[PERFMON_MAX_SLOTS], waiting = false, skipped = false;
    bool idle[PERFMON_MAX_SLOTS];
    uint64_t times[PERFMON_MAX_SLOTS];

    perfmon_mux_account(state);
    used = state->used_mask;
    sched = state->sched_mask;

    /* The used slots in round-robin order: from mux_next, rotated. */
    FOR_EACH_BIT(b, (used >> state->mux_next)
                    | (used << ((PERFMON_MAX_SLOTS - state->mux_next)
                                % PERFMON_MAX_SLOTS))) {
        unsigned int i = (b + state->mux_next) % PERFMON_MAX_SLOTS;
        uint32_t unit;
        unsigned int n;

        if (seen & (1U << i)) {
            continue;
        }

        unit = perfmon_mux_unit(state, i);
        assert((unit & ~used) == 0);
        seen |= unit;

        /*
         * Insert, by the time its least served slot held a counter, idle
         * units after the wanted ones.
         */
        n = nr_units++;
        times[n] = UINT64_MAX;
        pinned[n] = false;
        idle[n] = true;

        FOR_EACH_BIT(j, unit) {
            pinned[n] |= perfmon_pmc_pinned(&state->pmcs[j]);
            idle[n] &= !perfmon_pmc_wanted(&state->pmcs[j]);
            times[n] = MIN(times[n], state->pmcs[j].sched_time);
        }

        for (; n > 0 && (idle[n - 1] > idle[n]
                         || (idle[n - 1] == idle[n]
                             && times[n - 1] > times[n])); n--) {
            uint64_t time = times[n];
            bool pin = pinned[n], id = idle[n];

            times[n] = times[n - 1];
            pinned[n] = pinned[n - 1];
            idle[n] = idle[n - 1];
            units[n] = units[n - 1];
            firsts[n] = firsts[n - 1];
            times[n - 1] = time;
            pinned[n - 1] = pin;
            idle[n - 1] = id;
        }

        units[n] = unit;
        firsts[n] = i;
        waiting |= !idle[n] && (unit & ~sched) != 0;
    }

    for (k = 0; k < nr_units; k++) {
        bool whole = (units[k] & ~sched) == 0;

        if (!pinned[k] && (!whole || (rotate && waiting))) {
            perfmon_mux_drop(dev, units[k]);
        }
    }

    for (k = 0; k < nr_units; k++) {
        unsigned int victim = nr_units;

        while (pinned[k] && !perfmon_mux_take(dev, units[k])) {
            /* Room from the multiplexed unit that would run last. */
            for (victim = nr_units; victim-- > 0;) {
                if (!pinned[victim]
                    && (units[victim] & state->sched_mask) != 0) {
                    break;
                }
            }

            if (victim >= nr_units) {
                return EAGAIN;
            }

            perfmon_mux_drop(dev, units[victim]);
        }
    }

    waiting = false;

    for (k = 0; k < nr_units; k++) {
        if (pinned[k] || perfmon_mux_take_room(dev, units, idle, nr_units, k)
            || idle[k]) {
            continue;
        }

        /* First in turn at the next rotation. */
        if (!skipped) {
            state->mux_next = firsts[k];
        }

        skipped = true;
        waiting = true;
    }

    state->mux_waiting = waiting;
    return 0;
}

/*
 * After a schedule change, with the device lock released: when a unit
 * waits for counters, have the rotation thread rotate. Not under the
 * device lock, let alone inside a schedule write: the wakeup takes a run
 * queue lock, which a CPU may hold in a context switch while it waits
 * for the write to end. Thread context.
 */
static void
perfmon_mux_kick(struct perfmon_dev *dev)
{
    unsigned long flags;

    if (!READ_ONCE(dev->state.mux_waiting)) {
        return;
    }

    spinlock_lock_intr_save(&perfmon_mux_lock, &flags);

    if (!perfmon_mux_wanted && perfmon_mux_thread != NULL) {
        perfmon_mux_wanted = true;
        thread_wakeup(perfmon_mux_thread);
    }

    spinlock_unlock_intr_restore(&perfmon_mux_lock, flags);
}

/* Schedule again after a change that cannot fail (nothing got pinned). */
static void
perfmon_mux_reschedule(struct perfmon_dev *dev)
{
    int error;

    error = perfmon_mux_schedule(dev, false);
    assert(!error);
}

/* The rotation's cross-CPU call: each CPU follows the new schedule. */
static void
perfmon_mux_follow(void *arg)
{
    struct perfmon_dev *dev = arg;

    perfmon_cpu_sched_check(cpu_local_ptr(perfmon_cpu), dev,
                            perfmon_cpu_loaded_td());
}

/*
 * After a schedule change, with the device lock released: when slots that
 * CPUs may be using gained or lost counters (changed, less a slot no CPU
 * uses yet or any more), bring every CPU to the new schedule, so that a
 * CPU with no switch or attach to come does not count on the old one
 * (a raw event left waiting while a counter is free); when a unit waits,
 * have the rotation thread rotate. Thread context.
 */
static void
perfmon_mux_publish(struct perfmon_dev *dev, uint32_t changed)
{
    if (changed != 0) {
        xcall_broadcast(perfmon_mux_follow, dev);
    }

    perfmon_mux_kick(dev);
}

/*
 * Whether a waiting unit could hold counters at all while the pinned
 * units hold theirs: no more slots than the counters they leave. Not
 * tried with the driver, which would move the counters of the units
 * that hold them: a unit that passes but that the driver's constraints
 * never let in (say two events that only one fixed counter counts) waits
 * at the head of each rotation, without holding the others back. Device
 * lock held, interrupts disabled.
 */
static bool
perfmon_mux_fits(struct perfmon_dev *dev, uint32_t unit)
{
    const struct perfmon_dev_state *state = &dev->state;
    unsigned int pinned = 0;

    FOR_EACH_BIT(i, state->sched_mask & ~unit) {
        uint32_t other = perfmon_mux_unit(state, i);
        bool pin = false;

        FOR_EACH_BIT(j, other) {
            pin |= perfmon_pmc_pinned(&state->pmcs[j]);
        }

        pinned += pin;
    }

    return bitops_popcount(unit) + pinned <= dev->nr_pmcs;
}

/* Whether slot index's unit holds counters, or could. Lock held. */
static bool
perfmon_mux_can_run(struct perfmon_dev *dev, unsigned int index)
{
    uint32_t unit = perfmon_mux_unit(&dev->state, index);

    return (dev->state.sched_mask & (1U << index))
           || perfmon_mux_fits(dev, unit);
}

/*
 * Drop a reference on slot index (pin: a pinning one; enabled: an
 * enabled event's), freeing the slot with the last, and schedule again.
 * Return whether it was the last. Device lock held, interrupts disabled.
 */
static bool
perfmon_pmc_unref(struct perfmon_dev *dev, unsigned int index, bool pin,
                  bool enabled)
{
    struct perfmon_dev_state *state = &dev->state;
    struct perfmon_pmc *pmc = &state->pmcs[index];
    bool last;

    pmc->nr_pinned -= pin;
    pmc->nr_enabled -= enabled;
    last = (--pmc->nr_refs == 0);

    if (last) {
        perfmon_mux_drop(dev, 1U << index);
        state->used_mask &= ~(1U << index);
        pmc->sampler = NULL;
    }

    perfmon_mux_reschedule(dev);
    return last;
}

/*
 * Find the slot counting config, or give it a free one, and schedule it.
 * A sampling event (sampler) takes a free slot of its own: its counter is
 * preset for its period, which no other event shares; like a pinned
 * event's, its slot must hold a counter at once. EAGAIN: no slot, or no
 * counter it could ever hold while the pinned slots hold theirs.
 */
static int
perfmon_pmc_acquire(struct perfmon_dev *dev, uint64_t config,
                    struct perfmon_event *sampler, bool pin,
                    unsigned int *indexp)
{
    struct perfmon_dev_state *state = &dev->state;
    unsigned int index = PERFMON_MAX_SLOTS;
    struct perfmon_pmc *pmc;
    unsigned long flags;
    uint32_t changed;
    bool new;
    int error;

    spinlock_lock_intr_save(&state->lock, &flags);

    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        pmc = &state->pmcs[i];

        if (pmc->nr_refs != 0 && pmc->config == config
            && pmc->sampler == NULL && sampler == NULL) {
            index = i;
            break;
        }

        if (pmc->nr_refs == 0 && index == PERFMON_MAX_SLOTS) {
            index = i;
        }
    }

    if (index == PERFMON_MAX_SLOTS) {
        spinlock_unlock_intr_restore(&state->lock, flags);
        return EAGAIN;
    }

    pmc = &state->pmcs[index];
    new = (pmc->nr_refs == 0);

    if (new || !perfmon_pmc_wanted(pmc)) {
        uint64_t least, most;
        bool any;

        perfmon_mux_account(state);
        any = perfmon_mux_range(state, &least, &most);
        pmc->sched_time = perfmon_mux_level(new ? 0 : pmc->sched_time, any,
                                            least, most);
    }

    if (new) {
        assert(!(state->sched_mask & (1U << index)));
        state->used_mask |= 1U << index;
        pmc->config = config;
        pmc->sampler = sampler;
        pmc->nr_pinned = 0;
        pmc->nr_enabled = 0;
    }

    pmc->nr_refs++;
    pmc->nr_pinned += pin;
    pmc->nr_enabled++;          /* events attach enabled */
    error = perfmon_mux_schedule(dev, false);

    if (!error && !perfmon_mux_can_run(dev, index)) {
        error = EAGAIN;
    }

    if (error) {
        perfmon_pmc_unref(dev, index, pin, true);
    }

    changed = perfmon_sched_end(state);
    spinlock_unlock_intr_restore(&state->lock, flags);

    /* No CPU uses a new slot yet: each checks before it does. */
    perfmon_mux_publish(dev, new ? changed & ~(1U << index) : changed);

    if (!error) {
        *indexp = index;
    }

    return error;
}

static void
perfmon_pmc_release(struct perfmon_dev *dev, unsigned int index, bool pin,
                    bool enabled)
{
    struct perfmon_dev_state *state = &dev->state;
    struct perfmon_pmc *pmc = &state->pmcs[index];
    unsigned long flags;
    uint32_t changed;
    bool last;

    spinlock_lock_intr_save(&state->lock, &flags);
    assert(pmc->nr_refs != 0 && pmc->nr_pinned >= (unsigned int)pin
           && pmc->nr_enabled >= (unsigned int)enabled);
    last = perfmon_pmc_unref(dev, index, pin, enabled);
    changed = perfmon_sched_end(state);
    spinlock_unlock_intr_restore(&state->lock, flags);

    /* No CPU uses a slot released by its last event. */
    perfmon_mux_publish(dev, last ? changed & ~(1U << index) : changed);
}

static void
perfmon_mux_links_add(struct perfmon_dev_state *state,
                      const unsigned int *indexes, unsigned int nr_indexes,
                      int delta)
{
    for (unsigned int a = 0; a < nr_indexes; a++) {
        unsigned int i = indexes[a];

        for (unsigned int b = 0; b < nr_indexes; b++) {
            unsigned int j = indexes[b];

            if (i != j) {
                state->links[i][j] += delta;

                if (state->links[i][j] != 0) {
                    state->link_masks[i] |= 1U << j;
                } else {
                    state->link_masks[i] &= ~(1U << j);
                }
            }
        }
    }
}

/*
 * Link (delta 1) or unlink (delta -1) the slots of a group's events, so
 * that they hold counters together, and schedule again. Return EAGAIN
 * when the linked slots cannot all hold counters at once while the
 * pinned slots hold theirs (the link is then undone), else 0. Thread
 * context.
 */
static int
perfmon_mux_link(struct perfmon_dev *dev, const unsigned int *indexes,
                 unsigned int nr_indexes, int delta)
{
    struct perfmon_dev_state *state = &dev->state;
    unsigned long flags;
    uint32_t changed;
    int error;

    spinlock_lock_intr_save(&state->lock, &flags);
    perfmon_mux_links_add(state, indexes, nr_indexes, delta);
    error = perfmon_mux_schedule(dev, false);

    if (!error && delta > 0 && !perfmon_mux_can_run(dev, indexes[0])) {
        error = EAGAIN;
    }

    if (error) {
        assert(delta > 0);
        perfmon_mux_links_add(state, indexes, nr_indexes, -delta);
        perfmon_mux_reschedule(dev);
    }

    changed = perfmon_sched_end(state);
    spinlock_unlock_intr_restore(&state->lock, flags);
    perfmon_mux_publish(dev, changed);
    return error;
}

/*
 * Count (delta 1) or no longer count (delta -1) references of enabled
 * events on the slots of indexes, and schedule again where a slot starts
 * or stops wanting a counter: a slot enabled again starts level with the
 * others (perfmon_mux_level). Thread context.
 */
static void
perfmon_mux_enabled_add(struct perfmon_dev *dev, const unsigned int *indexes,
                        unsigned int nr_indexes, int delta)
{
    struct perfmon_dev_state *state = &dev->state;
    unsigned long flags;
    uint32_t changed = 0;
    bool toggled = false, any;
    uint64_t least, most;

    if (nr_indexes == 0) {
        return;
    }

    spinlock_lock_intr_save(&state->lock, &flags);
    perfmon_mux_account(state);
    any = perfmon_mux_range(state, &least, &most);  /* before any toggles */

    for (unsigned int i = 0; i < nr_indexes; i++) {
        struct perfmon_pmc *pmc = &state->pmcs[indexes[i]];
        bool wanted = perfmon_pmc_wanted(pmc);

        assert(delta > 0 || pmc->nr_enabled != 0);
        pmc->nr_enabled += delta;

        if (wanted != perfmon_pmc_wanted(pmc)) {
            toggled = true;

            if (!wanted) {
                pmc->sched_time = perfmon_mux_level(pmc->sched_time, any,
                                                    least, most);
            }
        }
    }

    if (toggled) {
        perfmon_mux_reschedule(dev);
        changed = perfmon_sched_end(state);
    }

    spinlock_unlock_intr_restore(&state->lock, flags);
    perfmon_mux_publish(dev, changed);
}

bool
perfmon_mux_rotate(struct perfmon_dev *dev)
{
    struct perfmon_dev_state *state = &dev->state;
    unsigned long flags;
    uint32_t changed = 0;
    bool rotated = false;
    int error;

    spinlock_lock_intr_save(&state->lock, &flags);

    /* No wanted unit waits: the schedule stays as it is. */
    rotated = state->mux_waiting;

    if (rotated) {
        error = perfmon_mux_schedule(dev, true);
        assert(!error);
        state->nr_rotations++;
        changed = perfmon_sched_end(state);
    }

    spinlock_unlock_intr_restore(&state->lock, flags);
    perfmon_mux_publish(dev, changed);
    return rotated;
}

uint64_t
perfmon_mux_nr_rotations(const struct perfmon_dev *dev)
{
    return READ_ONCE(dev->state.nr_rotations);
}

uint64_t
perfmon_mux_ticks(void)
{
    return perfmon_mux_interval;
}

/*
 * The rotation thread: asleep while no slot waits for a counter, else
 * rotating every device every perfmon_mux_interval ticks. A schedule that
 * leaves a slot waiting sets perfmon_mux_wanted again, so the rotations
 * go on exactly as long as they are needed.
 */
static void
perfmon_mux_main(void *arg)
{
    unsigned long flags;

    (void)arg;

    for (;;) {
        spinlock_lock_intr_save(&perfmon_mux_lock, &flags);

        while (!perfmon_mux_wanted) {
            thread_sleep(&perfmon_mux_lock, flags);
        }

        perfmon_mux_wanted = false;
        spinlock_unlock_intr_restore(&perfmon_mux_lock, flags);
        thread_delay(perfmon_mux_interval);

        for (unsigned int d = 0; d < READ_ONCE(perfmon_nr_devs); d++) {
            perfmon_mux_rotate(perfmon_devs[d]);
        }
    }
}

bool
perfmon_dev_pmc(const struct perfmon_dev *dev, unsigned int index,
                unsigned int *pmc_idp, unsigned int *widthp)
{
    const struct perfmon_pmc *pmc;

    if (index >= PERFMON_MAX_SLOTS) {
        return false;
    }

    pmc = &dev->state.pmcs[index];

    if (READ_ONCE(pmc->nr_refs) == 0
        || !(READ_ONCE(dev->state.sched_mask) & (1U << index))) {
        return false;
    }

    *pmc_idp = pmc->pmc_id;
    *widthp = pmc->width;
    return true;
}

uint64_t
perfmon_dev_poll_ticks(const struct perfmon_dev *dev)
{
    return dev->state.poll_ticks;
}

unsigned int
perfmon_dev_nr_used_pmcs(struct perfmon_dev *dev)
{
    unsigned int n = 0;

    /*
     * No lock: the device lock is taken with interrupts enabled, so an
     * interrupt handler taking it on a CPU that holds it would deadlock.
     * Each count is read once; the total is a snapshot.
     */
    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        n += (READ_ONCE(dev->state.pmcs[i].nr_refs) != 0);
    }

    return n;
}

/* ------------------------------------------------------------------ */
/* Per-thread tier                                                     */
/* ------------------------------------------------------------------ */

void
perfmon_td_init(struct perfmon_td *td)
{
    spinlock_init(&td->lock);
    td->loaded_cpu = PERFMON_CPU_NONE;

    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        td->used[d] = 0;

        for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
            td->pmcs[d][i].nr_refs = 0;
            td->pmcs[d][i].cpu_start = 0;
            td->pmcs[d][i].value = 0;
            td->pmcs[d][i].sample_left = 0;
            td->off[d][i] = 0;
        }
    }
}

bool
perfmon_td_unused(const struct perfmon_td *td)
{
    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        if (td->used[d] != 0) {
            return false;
        }
    }

    return true;
}

/* Load one slot on this CPU. td locked or loaded here, interrupts off. */
static void
perfmon_td_pmc_load(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    struct perfmon_dev *dev, unsigned int index)
{
    struct perfmon_td_pmc *tpmc = &td->pmcs[dev->state.index][index];
    struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc_get(cpu, dev, index, td);

    if (cpmc->nr_refs > 1) {
        perfmon_cpu_pmc_update(cpu, dev, index);
    }

    tpmc->cpu_start = cpmc->value;

    /* The thread's period goes on where it left it. */
    if (cpmc->sampler != NULL) {
        perfmon_cpu_pmc_arm(cpu, dev, cpmc, tpmc->sample_left,
                            cpmc->sampler->period);
    }
}

/*
 * Keep what is left of a sampling slot's period in the thread leaving the
 * CPU, after taking the samples due (at ctx). The slot is the thread's
 * alone.
 */
static void
perfmon_td_pmc_save_period(struct perfmon_td_pmc *tpmc,
                           struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                           struct perfmon_cpu_pmc *cpmc,
                           const struct perfmon_intr_ctx *ctx)
{
    perfmon_cpu_pmc_sample(cpu, dev, cpmc, ctx, false);
    tpmc->sample_left = cpmc->armed ? cpmc->sample_next - cpmc->value
                                    : cpmc->sampler->period;
}

/* Unload one slot, adding what it counted here to the thread. */
static void
perfmon_td_pmc_unload(struct perfmon_td *td, struct perfmon_cpu *cpu,
                      struct perfmon_dev *dev, unsigned int index)
{
    struct perfmon_td_pmc *tpmc = &td->pmcs[dev->state.index][index];
    struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc_update(cpu, dev, index);

    tpmc->value += cpmc->value - tpmc->cpu_start;

    if (cpmc->sampler != NULL) {
        struct perfmon_intr_ctx ctx = PERFMON_CTX_CALLER();

        perfmon_td_pmc_save_period(tpmc, cpu, dev, cpmc, &ctx);
    }

    perfmon_cpu_pmc_put(cpu, dev, index);
}

/*
 * Multiplexing, for a thread loading (used: its slots of device d) on this
 * CPU: its time without a counter on the slots that have none here starts
 * now. Local, interrupts disabled.
 */
static void
perfmon_td_off_begin(struct perfmon_cpu *cpu, unsigned int d, uint32_t used,
                     uint64_t now)
{
    FOR_EACH_BIT(index, cpu->unsched[d] & used) {
        cpu->pmcs[d][index].off_mark = now;
    }
}

/*
 * A switch touching slots without a counter here. First the CPU follows
 * the schedule if it changed: after next's lock, so that the change that
 * gave next's new slots their counters is seen (a slot this CPU has not
 * seen yet is one without a counter here, which is how the switch comes
 * here; changes to slots in use reach every CPU by a cross-CPU call, and
 * until then the CPU counts consistently on its copy). Before the batch:
 * the switch reads what this starts. Then, at the scheduler's TSC, so
 * that the times match the threads' run times, prev takes the time it ran
 * without them, next's starts.
 */
static __attribute__((noinline)) void
perfmon_td_switch_off(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                      struct perfmon_td *prev, struct perfmon_td *next,
                      uint64_t now)
{
    unsigned int d = dev->state.index;

    if (perfmon_cpu_sched_stale(cpu, dev)) {
        perfmon_cpu_sched_apply(cpu, dev, prev, now);
    }

    FOR_EACH_BIT(index, cpu->unsched[d] & prev->used[d]) {
        prev->off[d][index] += now - cpu->pmcs[d][index].off_mark;
    }

    perfmon_td_off_begin(cpu, d, next->used[d], now);
}

void
perfmon_td_load(struct perfmon_td *td)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

    assert(!cpu_intr_enabled());
    spinlock_lock(&td->lock);
    assert(td->loaded_cpu == PERFMON_CPU_NONE);

    for (unsigned int d = 0; d < perfmon_nr_devs; d++) {
        perfmon_cpu_sched_check(cpu, perfmon_devs[d], NULL);
        perfmon_td_off_begin(cpu, d, td->used[d], cpu_get_tsc());
    }

    td->loaded_cpu = cpu_id();

    for (unsigned int d = 0; d < perfmon_nr_devs; d++) {
        FOR_EACH_BIT(index, td->used[d]) {
            perfmon_td_pmc_load(td, cpu, perfmon_devs[d], index);
        }
    }

    spinlock_unlock(&td->lock);
}

/* A slot brought up to date by a switch, off its fast path. */
static __attribute__((noinline)) void
perfmon_td_switch_sync(struct perfmon_dev *dev, struct perfmon_cpu_pmc *cpmc,
                       uint64_t pending)
{
    perfmon_cpu_pmc_sync(dev, perfmon_dev_bank(dev), cpmc, pending);
}

/*
 * A slot only prev uses, on a switch: brought up to date, prev takes what
 * it counted (and keeps what is left of a sampling period, its samples
 * due taken at the caller of the switch, whose frame is at frame), then
 * it is released.
 */
static void
perfmon_td_switch_release(struct perfmon_td_pmc *tpmc,
                          struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                          unsigned int index, uint64_t pending,
                          const uintptr_t *frame)
{
    struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc(cpu, dev, index);

    perfmon_cpu_pmc_sync(dev, perfmon_dev_bank(dev), cpmc, pending);
    tpmc->value += cpmc->value - tpmc->cpu_start;

    if (__builtin_expect(cpmc->sampler != NULL, 0)) {
        struct perfmon_intr_ctx ctx = { .ip = frame[1], .fp = frame[0] };

        perfmon_td_pmc_save_period(tpmc, cpu, dev, cpmc, &ctx);
    }

    perfmon_cpu_pmc_put(cpu, dev, index);
}

/*
 * Switch one device's slots from prev to next. The pending overflows of
 * every slot prev used are consumed in one call. Then the slots both
 * use, the switch's fast path: each is brought up to date once (a plain
 * one with no call), prev takes what it counted and next starts from
 * there; the counter keeps running (no stop, no start, no write to the
 * PMU). Such a slot never samples (a sampling slot is one event's, so
 * one thread's): no sampling check there. Then the slots only prev uses
 * are released, and those only next uses are taken.
 */
static inline __attribute__((always_inline)) void
perfmon_td_switch_dev(struct perfmon_td *prev, struct perfmon_td *next,
                      struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                      const struct pmu_soft_bank *bank,
                      const uintptr_t *frame)
{
    unsigned int d = dev->state.index;
    struct perfmon_td_pmc *prev_pmcs = prev->pmcs[d];
    struct perfmon_td_pmc *next_pmcs = next->pmcs[d];
    struct perfmon_cpu_pmc *cpmcs = cpu->pmcs[d];
    uint32_t prev_used = prev->used[d];
    uint32_t next_used = next->used[d];
    uint64_t pending = perfmon_dev_consume(cpu, dev, prev_used);

    FOR_EACH_BIT(index, prev_used & next_used) {
        struct perfmon_cpu_pmc *cpmc = &cpmcs[index];

        if (!perfmon_cpu_pmc_update_plain(bank, cpmc)) {
            perfmon_td_switch_sync(dev, cpmc, pending);
        }

        prev_pmcs[index].value += cpmc->value - prev_pmcs[index].cpu_start;
        next_pmcs[index].cpu_start = cpmc->value;
    }

    FOR_EACH_BIT(index, prev_used & ~next_used) {
        perfmon_td_switch_release(&prev_pmcs[index], cpu, dev, index,
                                  pending, frame);
    }

    FOR_EACH_BIT(index, next_used & ~prev_used) {
        perfmon_td_pmc_load(next, cpu, dev, index);
    }
}

/*
 * Locking: a loaded thread's perfmon state is written only on its CPU,
 * with interrupts disabled (here, or by a cross-CPU call that re-checks
 * loaded_cpu under the lock), so prev needs no lock: its loaded_cpu is
 * published last, with release order, and an operation from another CPU
 * that then finds it unloaded sees every update made here. next may be
 * changed from another CPU while unloaded, under its lock: take it.
 */
void
perfmon_td_switch(struct perfmon_td *prev, struct perfmon_td *next,
                  uint64_t now)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int nr_devs = perfmon_nr_devs;

    assert(!cpu_intr_enabled());
    assert(prev->loaded_cpu == cpu_id());
    spinlock_lock(&next->lock);
    assert(next->loaded_cpu == PERFMON_CPU_NONE);
    next->loaded_cpu = cpu_id();

    /* Most switches are between threads that count nothing. */
    if (perfmon_td_unused(prev) && perfmon_td_unused(next)) {
        goto out;
    }

    for (unsigned int d = 0; d < nr_devs; d++) {
        if ((prev->used[d] | next->used[d]) != 0) {
            struct perfmon_dev *dev = perfmon_devs[d];
            bool batch = dev->ops->batch_begin != NULL;

            /* Multiplexing: slots without a counter here. */
            if (__builtin_expect(cpu->unsched[d]
                                 & (prev->used[d] | next->used[d]), 0)) {
                perfmon_td_switch_off(cpu, dev, prev, next, now);
            }

            /* One write of the driver's global enable per switch. */
            if (batch) {
                dev->ops->batch_begin();
            }

            /* Samples due are taken at the caller: its frame is read
               only then. */
            perfmon_td_switch_dev(prev, next, cpu, dev,
                                  cpu_local_ptr(pmu_soft_bank),
                                  __builtin_frame_address(0));

            if (batch) {
                dev->ops->batch_end();
            }
        }
    }

out:
    spinlock_unlock(&next->lock);
    __atomic_store_n(&prev->loaded_cpu, PERFMON_CPU_NONE, __ATOMIC_RELEASE);
}

/* The thread's total for a slot, bringing a loaded slot up to date. */
static uint64_t
perfmon_td_pmc_value(struct perfmon_td *td, struct perfmon_dev *dev,
                     unsigned int index, bool loaded)
{
    struct perfmon_td_pmc *tpmc = &td->pmcs[dev->state.index][index];
    struct perfmon_cpu_pmc *cpmc;

    if (!loaded || tpmc->nr_refs == 0) {
        return tpmc->value;
    }

    cpmc = perfmon_cpu_pmc_update(cpu_local_ptr(perfmon_cpu), dev, index);
    return tpmc->value + (cpmc->value - tpmc->cpu_start);
}

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

static void
perfmon_td_op_remote(void *arg)
{
    struct perfmon_td_op *op = arg;
    unsigned int loaded_cpu;

    spinlock_lock(&op->td->lock);
    loaded_cpu = op->td->loaded_cpu;

    /* The thread may have left this CPU since the call was sent. */
    if (loaded_cpu == cpu_id() || loaded_cpu == PERFMON_CPU_NONE) {
        op->fn(op, loaded_cpu != PERFMON_CPU_NONE);
        op->done = true;
    }

    spinlock_unlock(&op->td->lock);
}

static void
perfmon_td_run(struct perfmon_td_op *op)
{
    for (;;) {
        unsigned int loaded_cpu;
        unsigned long flags;

        spinlock_lock_intr_save(&op->td->lock, &flags);
        loaded_cpu = op->td->loaded_cpu;

        /* Loaded on this CPU means the thread is the caller. */
        if (loaded_cpu == PERFMON_CPU_NONE || loaded_cpu == cpu_id()) {
            op->fn(op, loaded_cpu != PERFMON_CPU_NONE);
            spinlock_unlock_intr_restore(&op->td->lock, flags);
            return;
        }

        spinlock_unlock_intr_restore(&op->td->lock, flags);
        op->done = false;
        xcall_call(loaded_cpu, perfmon_td_op_remote, op);

        if (op->done) {
            return;
        }
    }
}

static void
perfmon_td_op_attach(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_td_pmc *tpmc =
        &op->td->pmcs[op->dev->state.index][op->index];

    if (tpmc->nr_refs == 0) {
        struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

        if (loaded) {
            perfmon_cpu_sched_check(cpu, op->dev, op->td);
            perfmon_td_off_begin(cpu, op->dev->state.index, 1U << op->index,
                                 cpu_get_tsc());
        }

        op->td->used[op->dev->state.index] |= 1U << op->index;
        tpmc->sample_left = (op->event != NULL) ? op->event->period : 0;

        if (loaded) {
            perfmon_td_pmc_load(op->td, cpu, op->dev, op->index);
        }
    }

    tpmc->nr_refs++;
    op->value = perfmon_td_pmc_value(op->td, op->dev, op->index, loaded);
}

static void
perfmon_td_op_read(struct perfmon_td_op *op, bool loaded)
{
    op->value = perfmon_td_pmc_value(op->td, op->dev, op->index, loaded);
}

static void
perfmon_td_op_detach(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_td_pmc *tpmc =
        &op->td->pmcs[op->dev->state.index][op->index];

    op->value = perfmon_td_pmc_value(op->td, op->dev, op->index, loaded);
    assert(tpmc->nr_refs != 0);

    if (--tpmc->nr_refs == 0) {
        op->td->used[op->dev->state.index] &= ~(1U << op->index);

        if (loaded) {
            perfmon_td_pmc_unload(op->td, cpu_local_ptr(perfmon_cpu),
                                  op->dev, op->index);
        }
    }
}

static uint64_t
perfmon_td_event_op(struct perfmon_event *event,
                    void (*fn)(struct perfmon_td_op *op, bool loaded))
{
    struct perfmon_td_op op = {
        .td = thread_perfmon_td(event->thread),
        .dev = event->dev,
        .index = event->pmc_index,
        .event = (event->period != 0) ? event : NULL,
        .fn = fn,
    };

    perfmon_td_run(&op);
    return op.value;
}

/* ------------------------------------------------------------------ */
/* CPU events (run on their CPU through xcall)                         */
/* ------------------------------------------------------------------ */

static void
perfmon_cpu_op_attach(void *arg)
{
    struct perfmon_event *event = arg;
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    struct perfmon_cpu_pmc *cpmc;

    perfmon_cpu_sched_check(cpu, event->dev, perfmon_cpu_loaded_td());
    cpmc = perfmon_cpu_pmc_get(cpu, event->dev, event->pmc_index,
                               perfmon_cpu_loaded_td());
    perfmon_cpu_pmc_update(cpu, event->dev, event->pmc_index);
    event->start = cpmc->value;

    if (cpmc->sampler != NULL) {
        perfmon_cpu_pmc_arm(cpu, event->dev, cpmc, event->period,
                            event->period);
    }
}

/*
 * A CPU event's read on its CPU, into event->final: the cross-CPU call of
 * a remote read, inline in a local one. A plain slot takes the fast path.
 */
static void
perfmon_cpu_op_read(void *arg)
{
    struct perfmon_event *event = arg;
    struct perfmon_cpu_pmc *cpmc = event->cpu_pmc;

    if (!perfmon_cpu_pmc_update_plain(cpu_local_ptr(pmu_soft_bank), cpmc)) {
        cpmc = perfmon_cpu_pmc_update_slot(event->dev, cpmc);
    }

    event->final = cpmc->value - event->start;
}

static void
perfmon_cpu_op_detach(void *arg)
{
    struct perfmon_event *event = arg;

    perfmon_cpu_op_read(event);
    perfmon_cpu_pmc_put(cpu_local_ptr(perfmon_cpu), event->dev,
                        event->pmc_index);
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static const char *const perfmon_generic_names[PERFMON_NR_GENERIC_EVENTS] = {
    [PERFMON_EV_CYCLE] = "cycles",
    [PERFMON_EV_REF_CYCLE] = "ref-cycles",
    [PERFMON_EV_INSTRUCTION] = "instructions",
    [PERFMON_EV_CACHE_REF] = "cache-references",
    [PERFMON_EV_CACHE_MISS] = "cache-misses",
    [PERFMON_EV_BRANCH] = "branches",
    [PERFMON_EV_BRANCH_MISS] = "branch-misses",
};

const char *
perfmon_generic_name(unsigned int id)
{
    return (id < PERFMON_NR_GENERIC_EVENTS) ? perfmon_generic_names[id]
                                            : NULL;
}

int
perfmon_event_init(struct perfmon_event *event, uint64_t id,
                   unsigned int flags)
{
    /* Re-initializing an attached event would leak its slot and thread. */
    if (event == NULL || (flags & ~PERFMON_EF_MASK) != 0
        || perfmon_event_attached(event)) {
        return EINVAL;
    }

    if (flags & PERFMON_EF_SW) {
        if (flags & PERFMON_EF_RAW) {
            return EINVAL;
        }
    } else {
        if (!(flags & (PERFMON_EF_KERN | PERFMON_EF_USER))) {
            return EINVAL;
        }

        if (!(flags & PERFMON_EF_RAW) && id >= PERFMON_NR_GENERIC_EVENTS) {
            return EINVAL;
        }
    }

    event->magic = PERFMON_EVENT_MAGIC;
    event->state = PERFMON_EVENT_INIT;
    event->id = id;
    event->flags = flags;
    event->dev = NULL;
    event->thread = NULL;
    event->cpu_pmc = NULL;
    event->start = 0;
    event->final = 0;
    event->session = NULL;
    event->period = 0;
    event->cookie = 0;
    event->nr_frames = 0;
    event->samples_left = PERFMON_SAMPLES_UNLIMITED;
    event->nr_samples = 0;
    event->disabled = false;
    event->frozen = 0;
    event->time_enabled = 0;
    event->time_running = 0;
    event->enabled_tsc = 0;
    event->enabled_run = 0;
    event->enabled_off = 0;
    event->group = NULL;
    return 0;
}

bool
perfmon_event_attached(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && (event->state == PERFMON_EVENT_THREAD
               || event->state == PERFMON_EVENT_CPU
               || event->state == PERFMON_EVENT_DISABLED);
}

static bool
perfmon_dev_can_sample(const struct perfmon_dev *dev)
{
    return dev->max_period != 0 && dev->ops->preset != NULL;
}

/* Check the event can be attached and find its device and slot. */
static int
perfmon_event_prepare(struct perfmon_event *event, struct perfmon_dev **devp,
                      unsigned int *indexp)
{
    struct perfmon_dev *dev;
    uint64_t config;
    int error;

    if (event == NULL || event->magic != PERFMON_EVENT_MAGIC
        || (event->state != PERFMON_EVENT_INIT
            && event->state != PERFMON_EVENT_DETACHED)) {
        return EINVAL;
    }

    dev = perfmon_get_dev(event->flags & PERFMON_EF_SW);

    if (dev == NULL) {
        return ENODEV;
    }

    error = dev->ops->translate(&config, event->id, event->flags);

    if (error) {
        return error;
    }

    if (event->period != 0 && !perfmon_dev_can_sample(dev)) {
        return EINVAL;
    }

    error = perfmon_pmc_acquire(dev, config,
                                (event->period != 0) ? event : NULL,
                                (event->flags & PERFMON_EF_PINNED) != 0,
                                indexp);

    if (error) {
        return error;
    }

    *devp = dev;
    return 0;
}

int
perfmon_event_check(uint64_t id, unsigned int flags)
{
    struct perfmon_event event = { .magic = 0 };
    struct perfmon_dev *dev;
    uint64_t config;
    int error;

    error = perfmon_event_init(&event, id, flags);

    if (error) {
        return error;
    }

    dev = perfmon_get_dev(flags & PERFMON_EF_SW);

    if (dev == NULL) {
        return ENODEV;
    }

    return dev->ops->translate(&config, id, flags);
}

/*
 * Each attach of a sampling event counts its samples from zero; what is
 * left of a refresh carries over (a refresh before attach limits it).
 */
static void
perfmon_event_sampling_attach(struct perfmon_event *event)
{
    if (event->period != 0) {
        perfmon_session_ref(event->session);
        event->nr_samples = 0;
    }
}

/* Events attached to thread or to a CPU, at one instant (see below). */
static void perfmon_events_attach(struct perfmon_event *const *events,
                                  unsigned int nr_events);
static void perfmon_events_detach(struct perfmon_event *const *events,
                                  unsigned int nr_events);

int
perfmon_event_attach(struct perfmon_event *event, struct thread *thread)
{
    struct perfmon_dev *dev;
    unsigned int index;
    int error;

    if (thread == NULL || thread_exited(thread)
        || (event != NULL && event->group != NULL)) {
        return EINVAL;
    }

    error = perfmon_event_prepare(event, &dev, &index);

    if (error) {
        return error;
    }

    thread_ref(thread);
    perfmon_event_sampling_attach(event);
    event->dev = dev;
    event->pmc_index = index;
    event->thread = thread;
    perfmon_events_attach(&event, 1);
    event->state = PERFMON_EVENT_THREAD;
    return 0;
}

int
perfmon_event_attach_cpu(struct perfmon_event *event, unsigned int cpu)
{
    struct perfmon_dev *dev;
    unsigned int index;
    int error;

    if (cpu >= cpu_count() || !cpu_online(cpu)
        || (event != NULL && event->group != NULL)) {
        return EINVAL;
    }

    error = perfmon_event_prepare(event, &dev, &index);

    if (error) {
        return error;
    }

    perfmon_event_sampling_attach(event);
    event->dev = dev;
    event->pmc_index = index;
    event->thread = NULL;
    event->cpu = cpu;
    event->cpu_pmc = perfmon_cpu_pmc(percpu_ptr(perfmon_cpu, cpu), dev, index);
    perfmon_events_attach(&event, 1);
    event->state = PERFMON_EVENT_CPU;
    return 0;
}

int
perfmon_event_detach(struct perfmon_event *event)
{
    if (!perfmon_event_attached(event) || event->group != NULL) {
        return EINVAL;
    }

    perfmon_events_detach(&event, 1);
    return 0;
}

/*
 * A thread event's count (from the thread's start). The thread's own: its
 * counters are loaded on this CPU and written only here, so disabling
 * interrupts is all a read needs (no lock, no cross-CPU call). Any other
 * thread's goes through perfmon_td_run.
 */
static __attribute__((noinline)) uint64_t
perfmon_event_read_thread_slow(struct perfmon_event *event)
{
    unsigned long flags;
    uint64_t value;

    if (event->thread != thread_self()) {
        return perfmon_td_event_op(event, perfmon_td_op_read);
    }

    flags = cpu_intr_save();
    value = perfmon_td_pmc_value(thread_perfmon_td(event->thread),
                                 event->dev, event->pmc_index, true);
    cpu_intr_restore(flags);
    return value;
}

/*
 * The same, with the fast path of the thread's own event on a plain slot
 * inline: no call, no saved register. Any other case takes the path
 * above, from the start.
 */
static inline uint64_t
perfmon_event_read_thread(struct perfmon_event *event)
{
    struct thread *thread = event->thread;
    unsigned int d = event->dev->state.index;
    unsigned int index = event->pmc_index;
    const struct perfmon_td_pmc *tpmc;
    struct perfmon_cpu_pmc *cpmc;
    unsigned long flags;
    uint64_t value;

    if (thread == thread_self()) {
        flags = cpu_intr_save();
        cpmc = &cpu_local_ptr(perfmon_cpu)->pmcs[d][index];

        if (perfmon_cpu_pmc_update_plain(cpu_local_ptr(pmu_soft_bank),
                                         cpmc)) {
            tpmc = &thread_perfmon_td(thread)->pmcs[d][index];
            value = tpmc->value + (cpmc->value - tpmc->cpu_start);
            cpu_intr_restore(flags);
            return value;
        }

        cpu_intr_restore(flags);
    }

    return perfmon_event_read_thread_slow(event);
}

/*
 * A CPU event, into event->final: read in place on its CPU (interrupts
 * disabled), else through one cross-CPU call.
 */
static inline void
perfmon_event_read_cpu(struct perfmon_event *event)
{
    unsigned long flags;

    /* Should the caller move to the event's CPU before the call,
       xcall_call reads in place. */
    if (event->cpu != cpu_id()) {
        xcall_call(event->cpu, perfmon_cpu_op_read, event);
        return;
    }

    flags = cpu_intr_save();

    /* Still there, now that it cannot move. */
    if (__builtin_expect(event->cpu == cpu_id(), 1)) {
        perfmon_cpu_op_read(event);
        cpu_intr_restore(flags);
        return;
    }

    cpu_intr_restore(flags);
    xcall_call(event->cpu, perfmon_cpu_op_read, event);
}

/* perfmon_event_get, inline in both public reads. */
static inline __attribute__((always_inline)) int
perfmon_event_get_inline(struct perfmon_event *event, uint64_t *valuep)
{
    if (event == NULL || event->magic != PERFMON_EVENT_MAGIC) {
        return EINVAL;
    }

    switch (event->state) {
    case PERFMON_EVENT_THREAD:
        *valuep = perfmon_event_read_thread(event) - event->start;
        return 0;
    case PERFMON_EVENT_CPU:
        perfmon_event_read_cpu(event);
        *valuep = event->final;
        return 0;
    case PERFMON_EVENT_DISABLED:
        *valuep = event->frozen;    /* perfmon_event_disable */
        return 0;
    case PERFMON_EVENT_DETACHED:
        *valuep = event->final;
        return 0;
    default:
        return EINVAL;
    }
}

int
perfmon_event_get(struct perfmon_event *event, uint64_t *valuep)
{
    return perfmon_event_get_inline(event, valuep);
}

uint64_t
perfmon_event_read(struct perfmon_event *event)
{
    uint64_t value;

    return (perfmon_event_get_inline(event, &value) == 0) ? value : 0;
}

/* ------------------------------------------------------------------ */
/* Snapshots: the events of one target at one instant                  */
/* ------------------------------------------------------------------ */

#define PERFMON_SNAP_READ       0
#define PERFMON_SNAP_ATTACH     1
#define PERFMON_SNAP_DETACH     2

/*
 * The tier values of events that share a target (one event, or a group),
 * with the TSC and, for a thread, its run time, taken together on the
 * owning CPU with interrupts disabled, while attaching, detaching or only
 * reading them. A read writes nothing into the events: the caller
 * applies the snapshot, so concurrent reads of one event or group share
 * nothing but the tiers, which their CPU's disabled interrupts guard.
 */
struct perfmon_snap {
    struct perfmon_td_op op;            /* thread events */
    struct perfmon_event *const *events;
    unsigned int nr_events;
    unsigned int action;
    uint64_t now;                       /* TSC */
    uint64_t run;                       /* the thread's run time at now */
    uint64_t values[PERFMON_GROUP_MAX]; /* each event's tier value */
    uint64_t offs[PERFMON_GROUP_MAX];   /* each one's slot's time without
                                           a counter (of the thread) */
};

static void
perfmon_td_op_snap(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_snap *snap = structof(op, struct perfmon_snap, op);
    void (*fn)(struct perfmon_td_op *op, bool loaded);

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
        op->index = event->pmc_index;
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
        unsigned int d = event->dev->state.index;
        const struct perfmon_cpu_pmc *cpmc;

        snap->offs[i] = op->td->off[d][event->pmc_index];
        cpmc = perfmon_cpu_pmc(cpu_local_ptr(perfmon_cpu), event->dev,
                               event->pmc_index);

        /* Still without its counter here: the time since its mark. */
        if (loaded && !cpmc->sched) {
            snap->offs[i] += snap->now - cpmc->off_mark;
        }
    }
}

static void
perfmon_cpu_op_snap(void *arg)
{
    struct perfmon_snap *snap = arg;
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

    for (unsigned int i = 0; i < snap->nr_events; i++) {
        struct perfmon_event *event = snap->events[i];

        if (snap->action == PERFMON_SNAP_ATTACH) {
            perfmon_cpu_op_attach(event);
            snap->values[i] = event->start;
        } else if (snap->action == PERFMON_SNAP_DETACH) {
            perfmon_cpu_op_detach(event);
            snap->values[i] = event->start + event->final;
        } else {
            snap->values[i] = perfmon_cpu_pmc_update(cpu, event->dev,
                                                     event->pmc_index)->value;
        }
    }

    snap->now = cpu_get_tsc();
    snap->run = 0;

    for (unsigned int i = 0; i < snap->nr_events; i++) {
        const struct perfmon_cpu_pmc *cpmc;

        cpmc = perfmon_cpu_pmc(cpu, snap->events[i]->dev,
                               snap->events[i]->pmc_index);
        snap->offs[i] = cpmc->off_total;

        if (!cpmc->sched) {
            snap->offs[i] += snap->now - cpmc->off_since;
        }
    }
}

/*
 * Take a snapshot of events attached (or being attached) to one thread or
 * CPU, the first one's: through the thread's operation, or on the CPU,
 * in place when it is this one.
 */
static void
perfmon_snap_take(struct perfmon_snap *snap,
                  struct perfmon_event *const *events,
                  unsigned int nr_events, unsigned int action)
{
    const struct perfmon_event *leader = events[0];
    unsigned long flags;

    assert(nr_events >= 1 && nr_events <= PERFMON_GROUP_MAX);
    snap->events = events;
    snap->nr_events = nr_events;
    snap->action = action;

    if (leader->thread != NULL) {
        snap->op = (struct perfmon_td_op){
            .td = thread_perfmon_td(leader->thread),
            .fn = perfmon_td_op_snap,
        };

        /* One's own thread: read in place, as perfmon_event_read. */
        if (action == PERFMON_SNAP_READ && leader->thread == thread_self()) {
            flags = cpu_intr_save();
            perfmon_td_op_snap(&snap->op, true);
            cpu_intr_restore(flags);
        } else {
            perfmon_td_run(&snap->op);
        }

        return;
    }

    flags = cpu_intr_save();

    if (leader->cpu == cpu_id()) {
        perfmon_cpu_op_snap(snap);
        cpu_intr_restore(flags);
        return;
    }

    cpu_intr_restore(flags);
    xcall_call(leader->cpu, perfmon_cpu_op_snap, snap);
}

/* An attached event's count, given its tier value at a snapshot. */
static uint64_t
perfmon_event_count_at(const struct perfmon_event *event, uint64_t value)
{
    return event->disabled ? event->frozen : value - event->start;
}

/*
 * An attached event's times (TSC cycles) at a snapshot, given its slot's
 * time without a counter then (off). A CPU event runs all the time it is
 * enabled, a thread event while its thread is on a CPU, less the time
 * their slot held no counter there. The TSCs of two CPUs may differ by a
 * little: a time never goes below its last value and running never above
 * enabled.
 */
static void
perfmon_event_times_at(const struct perfmon_event *event,
                       const struct perfmon_snap *snap, uint64_t off,
                       uint64_t *enabledp, uint64_t *runningp)
{
    uint64_t enabled = 0, running = 0;

    if (!event->disabled) {
        if (snap->now > event->enabled_tsc) {
            enabled = snap->now - event->enabled_tsc;
        }

        if (event->thread == NULL) {
            running = enabled;
        } else if (snap->run > event->enabled_run) {
            running = snap->run - event->enabled_run;
        }

        /* Never below its value then, TSCs of two CPUs apart. */
        off = (off > event->enabled_off) ? off - event->enabled_off : 0;
        running = (running > off) ? running - off : 0;

        if (running > enabled) {
            running = enabled;
        }
    }

    *enabledp = event->time_enabled + enabled;
    *runningp = event->time_running + running;
}

/*
 * The changes below apply to an event the values at a snapshot of the
 * event, its i-th.
 */

/* Start an event's count and times at the snapshot of its attach. */
static void
perfmon_event_begin(struct perfmon_event *event,
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

static void
perfmon_event_apply_disable(struct perfmon_event *event,
                            const struct perfmon_snap *snap, unsigned int i)
{
    if (!event->disabled) {
        event->frozen = snap->values[i] - event->start;
        perfmon_event_times_at(event, snap, snap->offs[i],
                               &event->time_enabled, &event->time_running);
        event->disabled = true;
        event->state = PERFMON_EVENT_DISABLED;
    }
}

static void
perfmon_event_apply_enable(struct perfmon_event *event,
                           const struct perfmon_snap *snap, unsigned int i)
{
    if (event->disabled) {
        /* Count on from the frozen count: re-base the start. */
        event->start = snap->values[i] - event->frozen;
        event->enabled_tsc = snap->now;
        event->enabled_run = snap->run;
        event->enabled_off = snap->offs[i];
        event->disabled = false;
        event->state = (event->thread != NULL) ? PERFMON_EVENT_THREAD
                                               : PERFMON_EVENT_CPU;
    }
}

static void
perfmon_event_apply_reset(struct perfmon_event *event,
                          const struct perfmon_snap *snap, unsigned int i)
{
    if (event->disabled) {
        event->frozen = 0;
    } else {
        event->start = snap->values[i];
    }
}

static void
perfmon_events_attach(struct perfmon_event *const *events,
                      unsigned int nr_events)
{
    struct perfmon_snap snap;

    perfmon_snap_take(&snap, events, nr_events, PERFMON_SNAP_ATTACH);

    for (unsigned int i = 0; i < nr_events; i++) {
        perfmon_event_begin(events[i], &snap, i);
    }
}

/* Detach attached events of one target at one instant. */
static void
perfmon_events_detach(struct perfmon_event *const *events,
                      unsigned int nr_events)
{
    struct perfmon_snap snap;

    perfmon_snap_take(&snap, events, nr_events, PERFMON_SNAP_DETACH);

    /* A group's slots part before they can take turns apart. */
    if (events[0]->group != NULL) {
        unsigned int indexes[PERFMON_GROUP_MAX] = { 0 };

        for (unsigned int i = 0; i < nr_events; i++) {
            indexes[i] = events[i]->pmc_index;
        }

        perfmon_mux_link(events[0]->dev, indexes, nr_events, -1);
    }

    for (unsigned int i = 0; i < nr_events; i++) {
        struct perfmon_event *event = events[i];
        struct thread *thread = event->thread;

        event->final = perfmon_event_count_at(event, snap.values[i]);
        perfmon_event_times_at(event, &snap, snap.offs[i],
                               &event->time_enabled, &event->time_running);
        event->thread = NULL;

        if (thread != NULL) {
            thread_unref(thread);
        }

        perfmon_pmc_release(event->dev, event->pmc_index,
                            (event->flags & PERFMON_EF_PINNED) != 0,
                            !event->disabled);

        if (event->period != 0) {
            perfmon_session_unref(event->session);
        }

        event->state = PERFMON_EVENT_DETACHED;
    }
}

/* ------------------------------------------------------------------ */
/* Values, times, enable, disable, reset                               */
/* ------------------------------------------------------------------ */

/*
 * floor(a * b / c) for c > 0, UINT64_MAX when it does not fit. A long
 * division when the product needs more than 64 bits (the kernel has no
 * 128-bit division routine); not on a hot path.
 */
static uint64_t
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

uint64_t
perfmon_scale(uint64_t value, uint64_t enabled, uint64_t running)
{
    if (running == 0) {
        return 0;
    }

    if (running >= enabled) {
        return value;
    }

    return perfmon_muldiv(value, enabled, running);
}

uint64_t
perfmon_tsc_to_ns(uint64_t tsc)
{
    uint64_t freq = cpu_get_freq();

    return (freq == 0) ? 0 : perfmon_muldiv(tsc, 1000000000ULL, freq);
}

int
perfmon_event_read_value(struct perfmon_event *event,
                         struct perfmon_value *valuep)
{
    struct perfmon_snap snap;
    uint64_t count, enabled, running;

    if (event == NULL || event->magic != PERFMON_EVENT_MAGIC) {
        return EINVAL;
    }

    switch (event->state) {
    case PERFMON_EVENT_THREAD:
    case PERFMON_EVENT_CPU:
    case PERFMON_EVENT_DISABLED:
        perfmon_snap_take(&snap, &event, 1, PERFMON_SNAP_READ);
        count = perfmon_event_count_at(event, snap.values[0]);
        perfmon_event_times_at(event, &snap, snap.offs[0], &enabled,
                               &running);
        break;
    case PERFMON_EVENT_DETACHED:
        count = event->final;
        enabled = event->time_enabled;
        running = event->time_running;
        break;
    default:
        return EINVAL;
    }

    valuep->count = count;
    valuep->time_enabled = perfmon_tsc_to_ns(enabled);
    valuep->time_running = perfmon_tsc_to_ns(running);
    return 0;
}

/* Apply a change to an attached event at a snapshot. */
static void
perfmon_event_change(struct perfmon_event *event,
                     void (*apply)(struct perfmon_event *event,
                                   const struct perfmon_snap *snap,
                                   unsigned int i))
{
    struct perfmon_snap snap;

    perfmon_snap_take(&snap, &event, 1, PERFMON_SNAP_READ);
    apply(event, &snap, 0);
}

/* Whether enable or disable may apply to the event alone. */
static bool
perfmon_event_can_toggle(const struct perfmon_event *event)
{
    return perfmon_event_attached(event) && event->period == 0
           && event->group == NULL;
}

int
perfmon_event_enable(struct perfmon_event *event)
{
    if (!perfmon_event_can_toggle(event)) {
        return EINVAL;
    }

    if (event->disabled) {
        perfmon_event_change(event, perfmon_event_apply_enable);
        perfmon_mux_enabled_add(event->dev, &event->pmc_index, 1, 1);
    }

    return 0;
}

int
perfmon_event_disable(struct perfmon_event *event)
{
    if (!perfmon_event_can_toggle(event)) {
        return EINVAL;
    }

    if (!event->disabled) {
        perfmon_event_change(event, perfmon_event_apply_disable);
        perfmon_mux_enabled_add(event->dev, &event->pmc_index, 1, -1);
    }

    return 0;
}

int
perfmon_event_reset(struct perfmon_event *event)
{
    if (!perfmon_event_attached(event)) {
        return EINVAL;
    }

    if (event->disabled) {
        event->frozen = 0;      /* no read needed */
    } else {
        perfmon_event_change(event, perfmon_event_apply_reset);
    }

    return 0;
}

/* ------------------------------------------------------------------ */
/* Groups                                                              */
/* ------------------------------------------------------------------ */

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
               || group->state == PERFMON_EVENT_CPU);
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
perfmon_event_idle(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && (event->state == PERFMON_EVENT_INIT
               || event->state == PERFMON_EVENT_DETACHED);
}

int
perfmon_group_add(struct perfmon_group *group, struct perfmon_event *event)
{
    if (!perfmon_group_valid(group) || perfmon_group_attached(group)
        || !perfmon_event_idle(event) || event->period != 0
        || event->group != NULL) {
        return EINVAL;
    }

    /* One device: hardware and software events never mix. */
    if (group->nr_events != 0
        && ((event->flags ^ group->events[0]->flags) & PERFMON_EF_SW)) {
        return EINVAL;
    }

    if (group->nr_events == PERFMON_GROUP_MAX) {
        return E2BIG;
    }

    group->events[group->nr_events++] = event;
    event->group = group;
    return 0;
}

/*
 * Check a group can be attached and take a slot for each of its events,
 * all or none, into indexes; nothing of the events changes.
 */
static int
perfmon_group_prepare(struct perfmon_group *group, struct perfmon_dev **devp,
                      unsigned int *indexes)
{
    uint64_t configs[PERFMON_GROUP_MAX];
    unsigned int nr_configs = 0, i;
    struct perfmon_dev *dev;
    int error;

    if (!perfmon_group_valid(group) || perfmon_group_attached(group)
        || group->nr_events == 0) {
        return EINVAL;
    }

    for (i = 0; i < group->nr_events; i++) {
        const struct perfmon_event *event = group->events[i];

        if (!perfmon_event_idle(event) || event->group != group
            || event->period != 0) {
            return EINVAL;      /* initialized again, or attached alone */
        }
    }

    dev = perfmon_get_dev(group->events[0]->flags & PERFMON_EF_SW);

    if (dev == NULL) {
        return ENODEV;
    }

    /* Events with equal configurations share a counter. */
    for (i = 0; i < group->nr_events; i++) {
        const struct perfmon_event *event = group->events[i];
        unsigned int j;
        uint64_t config;

        error = dev->ops->translate(&config, event->id, event->flags);

        if (error) {
            return error;
        }

        for (j = 0; j < nr_configs && configs[j] != config; j++) {
            continue;
        }

        if (j == nr_configs) {
            configs[nr_configs++] = config;
        }
    }

    if (nr_configs > dev->nr_pmcs) {
        return E2BIG;
    }

    for (i = 0; i < group->nr_events; i++) {
        struct perfmon_dev *event_dev;

        error = perfmon_event_prepare(group->events[i], &event_dev,
                                      &indexes[i]);

        if (error) {
            goto error;
        }

        assert(event_dev == dev);
    }

    /* Linked, the group's slots hold counters together. */
    error = perfmon_mux_link(dev, indexes, group->nr_events, 1);

    if (!error) {
        *devp = dev;
        return 0;
    }

error:
    while (i-- > 0) {
        perfmon_pmc_release(dev, indexes[i],
                            (group->events[i]->flags & PERFMON_EF_PINNED)
                            != 0, true);
    }

    return error;
}

int
perfmon_group_attach(struct perfmon_group *group, struct thread *thread)
{
    unsigned int indexes[PERFMON_GROUP_MAX];
    struct perfmon_dev *dev;
    int error;

    if (thread == NULL || thread_exited(thread)) {
        return EINVAL;
    }

    error = perfmon_group_prepare(group, &dev, indexes);

    if (error) {
        return error;
    }

    for (unsigned int i = 0; i < group->nr_events; i++) {
        struct perfmon_event *event = group->events[i];

        thread_ref(thread);
        event->dev = dev;
        event->pmc_index = indexes[i];
        event->thread = thread;
    }

    perfmon_events_attach(group->events, group->nr_events);

    for (unsigned int i = 0; i < group->nr_events; i++) {
        group->events[i]->state = PERFMON_EVENT_THREAD;
    }

    group->state = PERFMON_EVENT_THREAD;
    return 0;
}

int
perfmon_group_attach_cpu(struct perfmon_group *group, unsigned int cpu)
{
    unsigned int indexes[PERFMON_GROUP_MAX];
    struct perfmon_dev *dev;
    int error;

    if (cpu >= cpu_count() || !cpu_online(cpu)) {
        return EINVAL;
    }

    error = perfmon_group_prepare(group, &dev, indexes);

    if (error) {
        return error;
    }

    for (unsigned int i = 0; i < group->nr_events; i++) {
        struct perfmon_event *event = group->events[i];

        event->dev = dev;
        event->pmc_index = indexes[i];
        event->thread = NULL;
        event->cpu = cpu;
        event->cpu_pmc = perfmon_cpu_pmc(percpu_ptr(perfmon_cpu, cpu), dev,
                                         indexes[i]);
    }

    perfmon_events_attach(group->events, group->nr_events);

    for (unsigned int i = 0; i < group->nr_events; i++) {
        group->events[i]->state = PERFMON_EVENT_CPU;
    }

    group->state = PERFMON_EVENT_CPU;
    return 0;
}

int
perfmon_group_detach(struct perfmon_group *group)
{
    if (!perfmon_group_attached(group)) {
        return EINVAL;
    }

    perfmon_events_detach(group->events, group->nr_events);
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
                          PERFMON_SNAP_READ);

        for (unsigned int i = 0; i < group->nr_events; i++) {
            valuep->counts[i] = perfmon_event_count_at(group->events[i],
                                                       snap.values[i]);
        }

        perfmon_event_times_at(leader, &snap, snap.offs[0], &enabled,
                               &running);
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
    struct perfmon_snap snap;

    if (!perfmon_group_attached(group)) {
        return EINVAL;
    }

    perfmon_snap_take(&snap, group->events, group->nr_events,
                      PERFMON_SNAP_READ);

    for (unsigned int i = 0; i < group->nr_events; i++) {
        struct perfmon_event *event = group->events[i];
        bool disabled = event->disabled;

        apply(event, &snap, i);

        if (delta != 0 && disabled != event->disabled) {
            indexes[nr_indexes++] = event->pmc_index;
        }
    }

    perfmon_mux_enabled_add(group->events[0]->dev, indexes, nr_indexes,
                            delta);
    return 0;
}

int
perfmon_group_enable(struct perfmon_group *group)
{
    return perfmon_group_change(group, perfmon_event_apply_enable, 1);
}

int
perfmon_group_disable(struct perfmon_group *group)
{
    return perfmon_group_change(group, perfmon_event_apply_disable, -1);
}

int
perfmon_group_reset(struct perfmon_group *group)
{
    return perfmon_group_change(group, perfmon_event_apply_reset, 0);
}

/* ------------------------------------------------------------------ */
/* Sampling events                                                     */
/* ------------------------------------------------------------------ */

static bool
perfmon_event_is_sampling(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && event->state != 0 && event->period != 0;
}

int
perfmon_event_set_sampling(struct perfmon_event *event,
                           const struct perfmon_sample_attr *attr)
{
    if (event == NULL || event->magic != PERFMON_EVENT_MAGIC
        || (event->state != PERFMON_EVENT_INIT
            && event->state != PERFMON_EVENT_DETACHED)
        || event->group != NULL) {
        return EINVAL;
    }

    if (attr == NULL) {
        event->period = 0;
        event->session = NULL;
        return 0;
    }

    if (attr->session == NULL || attr->period == 0
        || attr->period > PERFMON_PERIOD_MAX
        || attr->nr_frames > PERFMON_MAX_FRAMES) {
        return EINVAL;
    }

    event->session = attr->session;
    event->period = attr->period;
    event->cookie = attr->cookie;
    event->nr_frames = attr->nr_frames;
    event->samples_left = PERFMON_SAMPLES_UNLIMITED;
    return 0;
}

int
perfmon_event_set_period(struct perfmon_event *event, uint64_t period)
{
    if (!perfmon_event_is_sampling(event) || period == 0
        || period > PERFMON_PERIOD_MAX) {
        return EINVAL;
    }

    /* Read where the current period ends, on the counting CPU. */
    WRITE_ONCE(event->period, period);
    return 0;
}

/*
 * Arm a sampling slot loaded on this CPU for samples_left more samples;
 * one that had stopped starts a new period.
 */
static void
perfmon_cpu_pmc_refresh(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                        unsigned int index, struct perfmon_event *event,
                        uint64_t nr_samples)
{
    struct perfmon_cpu_pmc *cpmc = perfmon_cpu_pmc_update(cpu, dev, index);

    event->samples_left = nr_samples;

    if (!cpmc->armed) {
        perfmon_cpu_pmc_arm(cpu, dev, cpmc, event->period, event->period);
    }
}

static void
perfmon_td_op_refresh(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_td_pmc *tpmc =
        &op->td->pmcs[op->dev->state.index][op->index];

    if (loaded) {
        perfmon_cpu_pmc_refresh(cpu_local_ptr(perfmon_cpu), op->dev,
                                op->index, op->event, op->value);
        return;
    }

    if (op->event->samples_left == 0) {
        tpmc->sample_left = op->event->period;
    }

    op->event->samples_left = op->value;
}

static void
perfmon_cpu_op_refresh(void *arg)
{
    struct perfmon_td_op *op = arg;

    perfmon_cpu_pmc_refresh(cpu_local_ptr(perfmon_cpu), op->dev, op->index,
                            op->event, op->value);
}

int
perfmon_event_refresh(struct perfmon_event *event, uint64_t nr_samples)
{
    struct perfmon_td_op op;

    if (!perfmon_event_is_sampling(event) || nr_samples == 0) {
        return EINVAL;
    }

    switch (event->state) {
    case PERFMON_EVENT_THREAD:
        op = (struct perfmon_td_op){
            .td = thread_perfmon_td(event->thread),
            .dev = event->dev,
            .index = event->pmc_index,
            .event = event,
            .fn = perfmon_td_op_refresh,
            .value = nr_samples,
        };
        perfmon_td_run(&op);
        break;
    case PERFMON_EVENT_CPU:
        op = (struct perfmon_td_op){
            .dev = event->dev,
            .index = event->pmc_index,
            .event = event,
            .value = nr_samples,
        };
        xcall_call(event->cpu, perfmon_cpu_op_refresh, &op);
        break;
    default:
        event->samples_left = nr_samples;
        break;
    }

    return 0;
}

int
perfmon_event_get_samples(struct perfmon_event *event,
                          uint64_t *nr_samplesp)
{
    if (!perfmon_event_is_sampling(event)) {
        return EINVAL;
    }

    *nr_samplesp = READ_ONCE(event->nr_samples);
    return 0;
}

unsigned int
perfmon_event_pmc_index(const struct perfmon_event *event)
{
    return event->pmc_index;
}

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

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

    if (dev->nr_pmcs == 0 || dev->nr_pmcs > PERFMON_MAX_PMCS
        || dev->min_width == 0 || dev->min_width > 64 || ops == NULL
        || ops->translate == NULL || ops->alloc == NULL || ops->free == NULL
        || ops->start == NULL || ops->stop == NULL || ops->read == NULL
        || (dev->overflow_intr && (ops->handle_overflow_intr == NULL
                                   || ops->overflow_consume == NULL))
        || ((ops->batch_begin == NULL) != (ops->batch_end == NULL))) {
        return EINVAL;
    }

    if (perfmon_poll_period(dev, &poll_ticks) != 0) {
        return EINVAL;
    }

    spinlock_lock(&perfmon_devs_lock);

    if (perfmon_nr_devs == PERFMON_MAX_DEVS || perfmon_get_dev(dev->sw)
        || perfmon_dev_is_registered(dev)) {
        spinlock_unlock(&perfmon_devs_lock);
        return EBUSY;
    }

    dev->state.index = perfmon_nr_devs;
    spinlock_init(&dev->state.lock);

    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        dev->state.pmcs[i].nr_refs = 0;
        dev->state.link_masks[i] = 0;
    }

    dev->state.used_mask = 0;
    dev->state.sched_mask = 0;

    dev->state.poll_ticks = poll_ticks;

    /* Every CPU starts from the empty schedule: no slot has a counter. */
    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct perfmon_cpu *pcpu = percpu_ptr(perfmon_cpu, cpu);
        unsigned int d = dev->state.index;

        timer_init(&pcpu->poll_timers[d], perfmon_poll_timer, dev, cpu);
        pcpu->unsched[d] = ~0U;
        pcpu->sched_seq[d] = dev->state.sched_seq;

        for (unsigned int i = 0; i < ARRAY_SIZE(pcpu->slot_of[d]); i++) {
            pcpu->slot_of[d][i] = PERFMON_SLOT_NONE;
        }

        for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
            pcpu->pmcs[d][i].pmc_id = dev->sw ? PMU_SOFT_NULL_PMC : 0;
        }
    }

    perfmon_devs[dev->state.index] = dev;
    __atomic_store_n(&perfmon_nr_devs, perfmon_nr_devs + 1,
                     __ATOMIC_RELEASE);
    spinlock_unlock(&perfmon_devs_lock);

    if (dev->state.poll_ticks != 0) {
        log_info("perfmon: %s: %u counters of %u bits, polled every %llu "
                 "ticks", dev->name, dev->nr_pmcs, dev->min_width,
                 (unsigned long long)dev->state.poll_ticks);
    } else {
        log_info("perfmon: %s: %u counters of %u bits, %s", dev->name,
                 dev->nr_pmcs, dev->min_width,
                 dev->overflow_intr ? "overflow interrupt" : "never wrap");
    }

    return 0;
}

static int
perfmon_setup(void)
{
    char name[SYSCNT_NAME_SIZE];
    int error;

    uint64_t max_samples = PERFMON_MAX_SAMPLES_PER_TICK;

    if (arg_get_u64("perfmon.max_samples_per_tick", &max_samples) == EINVAL
        || max_samples == 0 || max_samples > UINT32_MAX) {
        log_err("perfmon: perfmon.max_samples_per_tick must be 1 to %u, "
                "using %u", UINT32_MAX, PERFMON_MAX_SAMPLES_PER_TICK);
        max_samples = PERFMON_MAX_SAMPLES_PER_TICK;
    }

    perfmon_max_samples_per_tick = (unsigned int)max_samples;
    perfmon_tsc_per_tick = clock_tsc_per_tick();

    if (arg_get_u64("perfmon.mux_ticks", &perfmon_mux_interval) == EINVAL
        || perfmon_mux_interval == 0 || perfmon_mux_interval > 1000) {
        log_err("perfmon: perfmon.mux_ticks must be 1 to 1000, using %u",
                PERFMON_MUX_TICKS);
        perfmon_mux_interval = PERFMON_MUX_TICKS;
    }

    error = thread_create(&perfmon_mux_thread,
                          &(struct thread_attr){
                              .name = "perfmon_mux",
                              .priority = THREAD_PRIO_MAX,
                          }, perfmon_mux_main, NULL);

    if (error) {
        return error;
    }

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct perfmon_cpu *pcpu = percpu_ptr(perfmon_cpu, cpu);

        snprintf(name, sizeof(name), "perfmon_overflows/%u", cpu);
        syscnt_register(&pcpu->sc_overflows, name);
        snprintf(name, sizeof(name), "perfmon_samples/%u", cpu);
        syscnt_register(&pcpu->sc_samples, name);
        snprintf(name, sizeof(name), "perfmon_throttles/%u", cpu);
        syscnt_register(&pcpu->sc_throttles, name);
        timer_init(&pcpu->throttle.timer, perfmon_throttle_timer, NULL, cpu);
    }

    return 0;
}

INIT_OP_DEFINE(perfmon_setup,
               INIT_OP_DEP(clock_setup, true),
               INIT_OP_DEP(cpu_mp_setup, true),
               INIT_OP_DEP(syscnt_setup, true),
               INIT_OP_DEP(thread_setup, true),
               INIT_OP_DEP(timer_setup, true),
               INIT_OP_DEP(xcall_setup, true));
