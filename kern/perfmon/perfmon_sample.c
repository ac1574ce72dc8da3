/*
 * perfmon sampling: the overflow report, samples written into the
 * sessions' per-CPU rings, presets for the next period, the per-CPU
 * throttle, and the sampling calls of the API (period, refresh). The
 * overflow path (perfmon_sample_report_overflow down to the ring's commit) is
 * one inline chain in this file: local, interrupts disabled (asserted once,
 * at perfmon_sample_report_overflow), no lock, no allocation. The API
 * calls run in thread context and reach the counting CPU through the
 * thread's operation or a cross-CPU call.
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
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/printf.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/cpu_mp.h>
#include <machine/stack.h>

/* Boot options (perfmon_setup reads them; defaults below). */
ARG_DEFINE_U64("perfmon.max_samples_per_tick", 1, UINT32_MAX);

/*
 * Samples a CPU takes per clock tick before its sampling is throttled
 * until the next tick (perfmon.max_samples_per_tick): 1000 per tick at
 * 100 Hz is 100000 samples a second, a few percent of a CPU.
 */
#define PERFMON_MAX_SAMPLES_PER_TICK    1000

static unsigned int perfmon_max_samples_per_tick
    = PERFMON_MAX_SAMPLES_PER_TICK;
static uint64_t perfmon_tsc_per_tick;

_Static_assert(PERFMON_CHAIN_MAX == PERFMON_MAX_FRAMES,
               "a captured chain holds the deepest a sample asks");

/* A chain captured earlier (fp tagged PERFMON_CTX_CHAIN), copied. */
static __attribute__((noinline)) unsigned int
perfmon_sample_frames_captured(uintptr_t fp, uint64_t *frames,
                               unsigned int max)
{
    const struct perfmon_chain *chain;
    unsigned int nr;

    chain = (const struct perfmon_chain *)(fp & ~PERFMON_CTX_CHAIN);
    nr = MIN(chain->nr, max);
    memcpy(frames, chain->frames, nr * sizeof(frames[0]));
    return nr;
}

/*
 * The return addresses of the callers of the function whose frame is at
 * fp, innermost first. Only frames on the current thread's stack are
 * followed, so a corrupt or foreign frame pointer ends the chain. An fp
 * tagged PERFMON_CTX_CHAIN names a chain captured earlier: it is copied.
 */
static inline unsigned int
perfmon_sample_frames(uintptr_t fp, uint64_t *frames, unsigned int max)
{
    if (unlikely(fp & PERFMON_CTX_CHAIN)) {
        return perfmon_sample_frames_captured(fp, frames, max);
    }

    return stack_walk(fp, (uintptr_t)thread_stack(thread_self()),
                      THREAD_STACK_SIZE, frames, max);
}

void
perfmon_sample_chain_capture(struct perfmon_chain *chain,
                             const struct perfmon_intr_ctx *ctx,
                             struct perfmon_intr_ctx *capturedp)
{
    assert_intr_disabled();
    chain->nr = perfmon_sample_frames(ctx->fp, chain->frames,
                                      PERFMON_CHAIN_MAX);
    capturedp->ip = ctx->ip;
    capturedp->fp = (uintptr_t)chain | PERFMON_CTX_CHAIN;
}

void
perfmon_sample_chain_copy(struct perfmon_chain *chain,
                          const struct perfmon_intr_ctx *ctx,
                          struct perfmon_intr_ctx *copyp)
{
    const struct perfmon_chain *src;

    assert_intr_disabled();
    *copyp = *ctx;

    if (ctx->fp & PERFMON_CTX_CHAIN) {
        src = (const struct perfmon_chain *)(ctx->fp & ~PERFMON_CTX_CHAIN);
        chain->nr = src->nr;
        memcpy(chain->frames, src->frames, src->nr * sizeof(src->frames[0]));
        copyp->fp = (uintptr_t)chain | PERFMON_CTX_CHAIN;
    }
}

_Static_assert(sizeof(struct perfmon_record_sample)
               + sizeof(struct perfmon_record_callchain)
               + PERFMON_MAX_FRAMES * sizeof(uint64_t)
               <= PERFMON_SESSION_RECORD_MAX,
               "a sample with a full call chain fits a session record");

/*
 * Write one sample of event, taken at TSC time now, into its session's
 * ring of this CPU: the fixed part, then, when the event asks for a call
 * chain, its chunk, which has room for the event's depth; a shorter
 * chain leaves the rest unused (the chunk's nr tells), which spares a
 * walk into a buffer and a copy. One reservation for both, so a sample
 * and its chain are kept or lost together. Inlined into its one caller,
 * the overflow path (interrupts disabled: asserted at its entry).
 */
static inline __attribute__((always_inline)) void
perfmon_sample_write(struct perfmon_cpu *cpu, struct perfmon_event *event,
                     const struct perfmon_intr_ctx *ctx, uint64_t period,
                     uint64_t now)
{
    struct perfmon_session_ring *ring;
    struct perfmon_record_sample *record;
    struct perfmon_record_callchain *chain;
    unsigned int nr_frames = event->nr_frames;

    /* No chunk without a call chain, else its head and room: no branch. */
    size_t ext_size = (nr_frames + (nr_frames != 0)) * sizeof(uint64_t);

    __atomic_store_n(&event->nr_samples, event->nr_samples + 1,
                     __ATOMIC_RELAXED);
    syscnt_inc(&cpu->sc_samples);

    /* A valid size: set_sampling keeps nr_frames to PERFMON_MAX_FRAMES. */
    ring = perfmon_session_ring_local(event->session);
    record = perfmon_session_ring_reserve(ring, sizeof(*record) + ext_size);

    if (record == NULL) {
        return;     /* counted as lost by the session */
    }

    if (nr_frames != 0) {
        chain = (struct perfmon_record_callchain *)(record + 1);
        chain->chunk.type_size = PERFMON_RECORD_WORD(PERFMON_CHUNK_CALLCHAIN,
                                                     ext_size);
        /* fp 0 (no frame to follow) is outside any stack: no frame. */
        chain->chunk.nr = perfmon_sample_frames(ctx->fp, chain->frames,
                                                nr_frames);
    }

    record->header.type = PERFMON_RECORD_SAMPLE;
    record->header.cpu = cpu_id();
    record->sizes = PERFMON_RECORD_WORD(sizeof(*record), ext_size);
    record->tid = thread_id(thread_self());
    record->cookie = event->cookie;
    record->time = now;
    record->ip = ctx->ip;
    record->period = period;
    perfmon_session_ring_commit(ring, record);     /* sets the size */
}

/*
 * Report the periods of a slot's event that the throttle dropped on this
 * CPU since its last report, in a THROTTLE record naming the event
 * (cookie) and the events those periods held, so that per event the
 * periods of its samples plus its throttled events are what it counted
 * (with lost records' samples). Nothing is written when no period was
 * dropped. Interrupts disabled: the throttle timer, a slot's last put, a
 * sampler handoff on a switch.
 */
void
perfmon_sample_write_throttle(struct perfmon_cpu *cpu,
                              struct perfmon_cpu_slot *cslot)
{
    struct perfmon_record_throttle *record;

    assert_intr_disabled();

    if (cslot->throttled_periods == 0) {
        return;
    }

    record = perfmon_session_reserve(cslot->sampler->session,
                                     sizeof(*record));

    if (record != NULL) {
        record->header.type = PERFMON_RECORD_THROTTLE;
        record->header.size = sizeof(*record);
        record->header.cpu = cpu_id();
        record->time_start = cpu->throttle.time_start;
        record->time_end = cpu_get_tsc();
        record->nr_periods = cslot->throttled_periods;
        record->cookie = cslot->sampler->cookie;
        record->nr_events = cslot->throttled_events;
        perfmon_session_commit(cslot->sampler->session, record);
    }

    cslot->throttled_periods = 0;
    cslot->throttled_events = 0;
}

/*
 * Whether the sample due at TSC time now fits this CPU's budget for the
 * tick: perfmon_max_samples_per_tick samples a tick-long window, exactly;
 * the one after it stops sampling on the CPU until the next tick
 * (perfmon_cpu_throttle_timer) and is counted as throttled instead. The
 * overflow path's: interrupts disabled, asserted at its entry.
 */
static inline __attribute__((always_inline)) bool
perfmon_sample_throttle_count(struct perfmon_cpu *cpu, uint64_t now)
{
    struct perfmon_throttle *throttle = &cpu->throttle;

    if (now >= throttle->window_end) {
        throttle->window_end = now + perfmon_tsc_per_tick;
        throttle->nr_samples = 0;
    }

    if (__builtin_expect(throttle->nr_samples
                         < perfmon_max_samples_per_tick, 1)) {
        throttle->nr_samples++;
        return true;
    }

    throttle->active = true;
    throttle->time_start = now;
    syscnt_inc(&cpu->sc_throttles);

    /* An NMI asks the maskable vector to arm the timer. */
    if (unlikely(perfmon_nmi_active())) {
        /* Relaxed: read on this CPU (perfmon_cpu_soft_intr). */
        __atomic_store_n(&cpu_local_ptr(perfmon_nmi_cpu)->throttle_arm,
                         1, __ATOMIC_RELAXED);
        cpu_send_self_pmu_soft_from_nmi();
    } else {
        perfmon_sample_throttle_arm(cpu);
    }

    return false;
}

/*
 * Count the periods of an up-to-date armed slot that ended while its CPU
 * is throttled (value at or past sample_next): the one in flight, of its
 * length (sample_period), then as many of the event's current period as
 * the count covers, the period in force after it (a set_period or an
 * estimate since the period in flight began applies to them, as it would
 * to samples). The slot is left in the period in flight after them. Off
 * the common path; interrupts disabled (its caller's).
 */
static __attribute__((noinline)) void
perfmon_sample_drop(struct perfmon_cpu_slot *cslot,
                    const struct perfmon_event *event)
{
    uint64_t period, n;

    cslot->throttled_periods++;
    cslot->throttled_events += cslot->sample_period;

    /* Relaxed: as at the end of a sampled period. */
    period = __atomic_load_n(&event->period, __ATOMIC_RELAXED);
    n = (cslot->value - cslot->sample_next) / period;
    cslot->throttled_periods += n;
    cslot->throttled_events += n * period;
    cslot->sample_next += (n + 1) * period;
    cslot->sample_period = period;
}

/* Arm the throttle timer for the next tick. Local, interrupts disabled. */
void
perfmon_sample_throttle_arm(struct perfmon_cpu *cpu)
{
    assert_intr_disabled();
    timer_schedule(&cpu->throttle.timer, clock_get_time() + 1);
}

/*
 * Make the slot's counter overflow at the next sample, or on the way
 * there when the period is longer than the device can preset. bank: the
 * device's counters in memory here when the counter was preset before,
 * since it started (a reload is then a store), else NULL. Interrupts
 * disabled, asserted by its callers (the overflow path's entry,
 * perfmon_sample_arm, perfmon_sample_discard, perfmon_sample_take,
 * perfmon_sample_throttle_end).
 */
static inline __attribute__((always_inline)) void
perfmon_sample_preset(struct perfmon_dev *dev, struct perfmon_bank *bank,
                      struct perfmon_cpu_slot *cslot)
{
    uint64_t left = cslot->sample_next - cslot->value;

    if (left > dev->max_period) {
        left = dev->max_period;
    }

    /* The preset leaves no overflow pending: none was seen early. */
    cslot->wrap_seen = false;

    /* A counter in memory preset before: its reload is a store, inline. */
    if (bank != NULL) {
        bank->values[cslot->counter] = (0 - left) & cslot->mask;
        bank->pending &= ~(1U << cslot->counter);
        cslot->prev = bank->values[cslot->counter];
    } else {
        cslot->prev = dev->ops->preset(cslot->counter, left) & cslot->mask;
    }
}

/*
 * Start a period of left events on an up-to-date sampling slot (the
 * remainder of a thread's period when it loads), if its event may still
 * take samples.
 */
void
perfmon_sample_arm(struct perfmon_dev *dev, struct perfmon_cpu_slot *cslot,
                   uint64_t left, uint64_t period)
{
    assert_intr_disabled();
    cslot->armed = cslot->sampler->samples_left != 0;
    cslot->sample_next = cslot->value + left;
    cslot->sample_period = period;

    if (cslot->sampler->freq != 0) {
        perfmon_freq_load(cpu_local_ptr(perfmon_cpu), cslot);
    }

    /*
     * Preset even on a throttled CPU: the counter was just started, which
     * leaves it a plain counter (the software PMU then reports no wrap at
     * once, and a polled narrow one would lose wraps to a burst); preset,
     * it is in the state of any sampling counter throttled after its last
     * sample: its period's end is reported, and counted as throttled.
     */
    if (cslot->armed) {
        perfmon_sample_preset(dev, NULL, cslot);
    }
}

/*
 * Preset an unarmed slot's counter to what is left of its period although
 * its event takes no more samples, to discard the overflows pending on
 * it (a switch that passed it on without consuming them). Its wrap is
 * then counted as any unarmed sampler's.
 */
void
perfmon_sample_discard(struct perfmon_dev *dev,
                       struct perfmon_cpu_slot *cslot)
{
    assert_intr_disabled();
    perfmon_sample_preset(dev, NULL, cslot);
}

/*
 * Take the samples due on an up-to-date sampling slot: one per period
 * that ended, all at ctx (a count that ends several periods at once
 * stands for each of them). While the CPU is throttled, periods that end
 * are counted instead. Then, unless the CPU lets the counter go (leaving:
 * a switch stops it or presets it for the next thread), preset it for
 * the next sample when it may have moved off its preset (reload: it
 * overflowed, or a sample was taken). Interrupts disabled, asserted by
 * its callers (the overflow path's entry, perfmon_sample_take and
 * perfmon_sample_leave).
 */
static inline __attribute__((always_inline)) void
perfmon_sample_take_inline(struct perfmon_cpu *cpu,
                           struct perfmon_dev *dev,
                           struct perfmon_cpu_slot *cslot,
                           const struct perfmon_intr_ctx *ctx, bool reload,
                           bool leaving)
{
    struct perfmon_event *event = cslot->sampler;
    uint64_t now;

    if (!cslot->armed) {
        return;
    }

    if (cslot->value < cslot->sample_next) {
        goto done;
    }

    /* The samples of one update are taken at one place, at one time:
       their number against the budget does not depend on the TSC's
       progress from one to the next. */
    now = cpu_get_tsc();

    do {
        if (cpu->throttle.active || !perfmon_sample_throttle_count(cpu, now)) {
            perfmon_sample_drop(cslot, event);
            break;
        }

        perfmon_sample_write(cpu, event, ctx, cslot->sample_period, now);
        reload = true;

        if (event->samples_left != PERFMON_SAMPLES_UNLIMITED
            && --event->samples_left == 0) {
            cslot->armed = false;
            return;
        }

        /* A new period takes effect here, at the end of the current. */
        cslot->sample_period = __atomic_load_n(&event->period,
                                               __ATOMIC_RELAXED);
        cslot->sample_next += cslot->sample_period;
    } while (cslot->value >= cslot->sample_next);

done:
    if (reload && !leaving && !cpu->throttle.active) {
        perfmon_sample_preset(dev, perfmon_cpu_bank(cpu, dev), cslot);
    }
}

/* The same, out of line, for the paths other than the overflow's. */
__attribute__((noinline)) void
perfmon_sample_take(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                    struct perfmon_cpu_slot *cslot,
                    const struct perfmon_intr_ctx *ctx, bool reload)
{
    assert_intr_disabled();
    perfmon_sample_take_inline(cpu, dev, cslot, ctx, reload, false);
}

/*
 * The same for a thread leaving the slot: the counter is stopped or
 * preset for the next thread, so a sample taken here reloads nothing.
 */
__attribute__((noinline)) void
perfmon_sample_leave(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                     struct perfmon_cpu_slot *cslot,
                     const struct perfmon_intr_ctx *ctx)
{
    assert_intr_disabled();
    perfmon_sample_take_inline(cpu, dev, cslot, ctx, false, true);
}

/*
 * Take the samples due on a sampling slot just brought up to date outside
 * the overflow interrupt, at the caller. Out of line, so that the callers'
 * fast paths need not compute where they are. Interrupts disabled
 * (asserted by perfmon_sample_take, which it calls first).
 */
__attribute__((noinline)) void
perfmon_sample_due(struct perfmon_dev *dev,
                   struct perfmon_cpu_slot *cslot, bool reload)
{
    struct perfmon_intr_ctx ctx = PERFMON_CTX_CALLER();

    perfmon_sample_take(cpu_local_ptr(perfmon_cpu), dev, cslot, &ctx,
                        reload);
}

/*
 * The overflow of a slot in use on this CPU: its slot found, the rest of
 * perfmon_sample_report_overflow. Out of line so that cslot comes in a register
 * of its own (inline, it was computed again from the indexes at each use).
 * Interrupts disabled, asserted by perfmon_sample_report_overflow.
 */
static __attribute__((noinline)) void
perfmon_sample_overflow(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                        struct perfmon_cpu_slot *cslot,
                        const struct perfmon_intr_ctx *ctx)
{
    uint64_t raw = perfmon_cpu_slot_read(dev, perfmon_cpu_bank(cpu, dev),
                                         cslot);

    /* The common case: a wrap reported as it happens. */
    if (__builtin_expect(raw < cslot->prev && !cslot->wrap_seen, 1)) {
        cslot->value += (raw - cslot->prev) & cslot->mask;
        cslot->prev = raw;
        syscnt_inc(&cpu->sc_overflows);
    } else {
        perfmon_cpu_slot_add(dev, cslot, raw, true);
    }

    if (cslot->sampler != NULL) {
        perfmon_sample_take_inline(cpu, dev, cslot, ctx, true, false);
    }
}

void
perfmon_sample_report_overflow(struct perfmon_dev *dev, unsigned int counter,
                               const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int slot_index;

    assert_intr_disabled();

    if (counter >= 64) {
        return;
    }

    /*
     * The slot the counter serves here (PERFMON_SLOT_NONE: none, and
     * above every used bit). A counter stopped since it overflowed has
     * nothing left to add.
     */
    slot_index = cpu->slot_of[dev->state->index][counter];

    if (slot_index < PERFMON_MAX_SLOTS
        && (cpu->used[dev->state->index] & (1U << slot_index))) {
        perfmon_sample_overflow(cpu, dev,
                                perfmon_cpu_slot(cpu, dev, slot_index), ctx);
    }
}

/*
 * Each attach of a sampling event counts its samples from zero; what is
 * left of a refresh carries over (a refresh before attach limits it).
 * Thread context, before the attach's snapshot.
 */
void
perfmon_sample_event_attach(struct perfmon_event *event)
{
    if (event->period != 0) {
        perfmon_session_ref(event->session);
        __atomic_store_n(&event->nr_samples, 0, __ATOMIC_RELAXED);
        event->freq_count = 0;
        event->freq_time = 0;
        event->freq_sum_count = 0;
        event->freq_sum_time = 0;
    }
}

int
perfmon_sample_setup(void)
{
    uint64_t max_samples = PERFMON_MAX_SAMPLES_PER_TICK;

    if (arg_get_u64("perfmon.max_samples_per_tick", &max_samples) == EINVAL
        || max_samples == 0 || max_samples > UINT32_MAX) {
        log_err("perfmon: perfmon.max_samples_per_tick must be 1 to %u, "
                "using %u", UINT32_MAX, PERFMON_MAX_SAMPLES_PER_TICK);
        max_samples = PERFMON_MAX_SAMPLES_PER_TICK;
    }

    perfmon_max_samples_per_tick = (unsigned int)max_samples;
    perfmon_tsc_per_tick = clock_tsc_per_tick();
    return 0;
}

/*
 * The end of this CPU's throttle: its armed samplers sample again from
 * where their periods stand (the throttle timer, perfmon_cpu.c, counted
 * the periods that ended meanwhile). Local, interrupts disabled, in a
 * marked section.
 */
void
perfmon_sample_throttle_end(struct perfmon_cpu *cpu)
{
    unsigned int nr_devs = perfmon_dev_count();

    assert_intr_disabled();
    cpu->throttle.active = false;

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        FOR_EACH_BIT(index, cpu->used[d]) {
            struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

            if (cslot->sampler != NULL && cslot->armed) {
                perfmon_sample_preset(dev, NULL, cslot);
            }
        }
    }
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
 * report still to come adds nothing. Interrupts disabled; off the common
 * path of perfmon_cpu_slot_add, its caller.
 */
__attribute__((noinline)) void
perfmon_sample_add_wrap(const struct perfmon_dev *dev,
                        struct perfmon_cpu_slot *cslot, uint64_t raw,
                        bool reported)
{
    uint64_t mask = cslot->mask;
    uint64_t delta = (raw - cslot->prev) & mask;
    bool wrapped = raw < cslot->prev;

    assert_intr_disabled();

    if (reported) {
        if (cslot->wrap_seen) {
            /* Already added; a decrease now would be a new wrap. */
            cslot->wrap_seen = false;
        } else if (!wrapped && mask != ~0ULL) {
            /* Back at or above the last value: a whole wrap. A 64-bit
               counter (preset for sampling) cannot get there. */
            delta += mask + 1;
            wrapped = true;
        } else {
            wrapped = true;
        }
    } else if (wrapped && dev->overflow_intr) {
        cslot->wrap_seen = true;
    }

    if (wrapped) {
        syscnt_inc(&cpu_local_ptr(perfmon_cpu)->sc_overflows);
    }

    cslot->value += delta;
    cslot->prev = raw;
}
