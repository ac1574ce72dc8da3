/*
 * perfmon sampling: the overflow report, samples written into the
 * sessions' per-CPU rings, presets for the next period, the per-CPU
 * throttle, and the sampling calls of the API (period, refresh). The
 * overflow path (perfmon_report_overflow down to the ring's commit) is
 * one inline chain in this file: local, interrupts disabled, no lock, no
 * allocation. The API calls run in thread context and reach the counting
 * CPU through the thread's operation or a cross-CPU call.
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
perfmon_chain_capture(struct perfmon_chain *chain,
                      const struct perfmon_intr_ctx *ctx,
                      struct perfmon_intr_ctx *capturedp)
{
    chain->nr = perfmon_sample_frames(ctx->fp, chain->frames,
                                      PERFMON_CHAIN_MAX);
    capturedp->ip = ctx->ip;
    capturedp->fp = (uintptr_t)chain | PERFMON_CTX_CHAIN;
}

void
perfmon_chain_copy(struct perfmon_chain *chain,
                   const struct perfmon_intr_ctx *ctx,
                   struct perfmon_intr_ctx *copyp)
{
    const struct perfmon_chain *src;

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
 * Write one sample of event into its session's ring of this CPU, and
 * return its time: the fixed part, then, when the event asks for a call
 * chain, its chunk, which has room for the event's depth; a shorter
 * chain leaves the rest unused (the chunk's nr tells), which spares a
 * walk into a buffer and a copy. One reservation for both, so a sample
 * and its chain are kept or lost together. Inlined into its one caller,
 * the overflow path.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_sample_write(struct perfmon_cpu *cpu, struct perfmon_event *event,
                     const struct perfmon_intr_ctx *ctx, uint64_t period)
{
    struct perfmon_session_ring *ring;
    struct perfmon_record_sample *record;
    struct perfmon_record_callchain *chain;
    uint64_t now = cpu_get_tsc();
    unsigned int nr_frames = event->nr_frames;

    /* No chunk without a call chain, else its head and room: no branch. */
    size_t ext_size = (nr_frames + (nr_frames != 0)) * sizeof(uint64_t);

    event->nr_samples++;
    syscnt_inc(&cpu->sc_samples);

    /* A valid size: set_sampling keeps nr_frames to PERFMON_MAX_FRAMES. */
    ring = perfmon_session_ring_local(event->session);
    record = perfmon_session_ring_reserve(ring, sizeof(*record) + ext_size);

    if (record == NULL) {
        return now;     /* counted as lost by the session */
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
    return now;
}

/* Tell the sessions of a slot's event that its sampling was throttled. */
void
perfmon_sample_write_throttle(struct perfmon_cpu *cpu,
                              struct perfmon_cpu_slot *cslot)
{
    struct perfmon_record_throttle *record;

    record = perfmon_session_reserve(cslot->sampler->session,
                                     sizeof(*record));

    if (record != NULL) {
        record->header.type = PERFMON_RECORD_THROTTLE;
        record->header.size = sizeof(*record);
        record->header.cpu = cpu_id();
        record->time_start = cpu->throttle.time_start;
        record->time_end = cpu_get_tsc();
        record->nr_periods = cslot->throttled_periods;
        perfmon_session_commit(cslot->sampler->session, record);
    }

    cslot->throttled_periods = 0;
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

        /* An NMI asks the maskable vector to arm the timer. */
        if (unlikely(perfmon_nmi_active())) {
            WRITE_ONCE(cpu_local_ptr(perfmon_nmi_cpu)->throttle_arm, 1);
            cpu_send_self_pmu_soft_from_nmi();
        } else {
            perfmon_sample_throttle_arm(cpu);
        }
    }
}

/* Arm the throttle timer for the next tick. Local, interrupts disabled. */
void
perfmon_sample_throttle_arm(struct perfmon_cpu *cpu)
{
    timer_schedule(&cpu->throttle.timer, clock_get_time() + 1);
}

/*
 * Make the slot's counter overflow at the next sample, or on the way
 * there when the period is longer than the device can preset. bank: the
 * device's counters in memory here when the counter was preset before,
 * since it started (a reload is then a store), else NULL.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_slot_preset(struct perfmon_dev *dev, struct perfmon_bank *bank,
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
perfmon_cpu_slot_arm(struct perfmon_dev *dev, struct perfmon_cpu_slot *cslot,
                     uint64_t left, uint64_t period)
{
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
        perfmon_cpu_slot_preset(dev, NULL, cslot);
    }
}

/*
 * Preset an unarmed slot's counter to what is left of its period although
 * its event takes no more samples, to discard the overflows pending on
 * it (a switch that passed it on without consuming them). Its wrap is
 * then counted as any unarmed sampler's.
 */
void
perfmon_cpu_slot_discard(struct perfmon_dev *dev,
                         struct perfmon_cpu_slot *cslot)
{
    perfmon_cpu_slot_preset(dev, NULL, cslot);
}

/*
 * Take the samples due on an up-to-date sampling slot: one per period
 * that ended, all at ctx (a count that ends several periods at once
 * stands for each of them). While the CPU is throttled, periods that end
 * are counted instead. Then, unless the CPU lets the counter go (leaving:
 * a switch stops it or presets it for the next thread), preset it for
 * the next sample when it may have moved off its preset (reload: it
 * overflowed, or a sample was taken).
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_slot_sample_inline(struct perfmon_cpu *cpu,
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

    while (cslot->value >= cslot->sample_next) {
        if (cpu->throttle.active) {
            uint64_t n = (cslot->value - cslot->sample_next)
                         / cslot->sample_period + 1;

            cslot->throttled_periods += n;
            cslot->sample_next += n * cslot->sample_period;
            break;
        }

        now = perfmon_sample_write(cpu, event, ctx, cslot->sample_period);
        reload = true;
        perfmon_throttle_count(cpu, now);

        if (event->samples_left != PERFMON_SAMPLES_UNLIMITED
            && --event->samples_left == 0) {
            cslot->armed = false;
            return;
        }

        /* A new period takes effect here, at the end of the current. */
        cslot->sample_period = READ_ONCE(event->period);
        cslot->sample_next += cslot->sample_period;
    }

    if (reload && !leaving && !cpu->throttle.active) {
        perfmon_cpu_slot_preset(dev, perfmon_cpu_bank(cpu, dev), cslot);
    }
}

/* The same, out of line, for the paths other than the overflow's. */
__attribute__((noinline)) void
perfmon_cpu_slot_sample(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                        struct perfmon_cpu_slot *cslot,
                        const struct perfmon_intr_ctx *ctx, bool reload)
{
    perfmon_cpu_slot_sample_inline(cpu, dev, cslot, ctx, reload, false);
}

/*
 * The same for a thread leaving the slot: the counter is stopped or
 * preset for the next thread, so a sample taken here reloads nothing.
 */
__attribute__((noinline)) void
perfmon_cpu_slot_sample_leave(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                              struct perfmon_cpu_slot *cslot,
                              const struct perfmon_intr_ctx *ctx)
{
    perfmon_cpu_slot_sample_inline(cpu, dev, cslot, ctx, false, true);
}

/*
 * Take the samples due on a sampling slot just brought up to date outside
 * the overflow interrupt, at the caller. Out of line, so that the callers'
 * fast paths need not compute where they are.
 */
__attribute__((noinline)) void
perfmon_cpu_slot_sample_due(struct perfmon_dev *dev,
                            struct perfmon_cpu_slot *cslot, bool reload)
{
    struct perfmon_intr_ctx ctx = PERFMON_CTX_CALLER();

    perfmon_cpu_slot_sample(cpu_local_ptr(perfmon_cpu), dev, cslot, &ctx,
                            reload);
}

/*
 * The throttle timer, at the tick after a CPU was throttled: each
 * sampling slot counts the periods that ended meanwhile, reports them in
 * a THROTTLE record, and samples again from where its period stands.
 */
void
perfmon_throttle_timer(struct timer *timer)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int nr_devs = perfmon_nr_devs;

    (void)timer;
    perfmon_nmi_enter();
    cpu->throttle.nr_samples = 0;
    cpu->throttle.window_end = cpu_get_tsc() + perfmon_tsc_per_tick;

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        FOR_EACH_BIT(index, cpu->used[d]) {
            struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

            if (cslot->sampler == NULL) {
                continue;
            }

            /* Still throttled: periods that ended are counted. */
            perfmon_cpu_slot_update(cpu, dev, index);

            if (cslot->armed || cslot->throttled_periods != 0) {
                perfmon_sample_write_throttle(cpu, cslot);
            }
        }
    }

    cpu->throttle.active = false;

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        FOR_EACH_BIT(index, cpu->used[d]) {
            struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

            if (cslot->sampler != NULL && cslot->armed) {
                perfmon_cpu_slot_preset(dev, NULL, cslot);
            }
        }
    }

    perfmon_nmi_leave();
}

/*
 * The overflow of a slot in use on this CPU: its slot found, the rest of
 * perfmon_report_overflow. Out of line so that cslot comes in a register
 * of its own (inline, it was computed again from the indexes at each use).
 */
static __attribute__((noinline)) void
perfmon_cpu_slot_overflow(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
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
        perfmon_cpu_slot_sample_inline(cpu, dev, cslot, ctx, true, false);
    }
}

void
perfmon_report_overflow(struct perfmon_dev *dev, unsigned int counter,
                        const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int slot_index;

    assert(!cpu_intr_enabled());

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
        perfmon_cpu_slot_overflow(cpu, dev,
                                  perfmon_cpu_slot(cpu, dev, slot_index), ctx);
    }
}

/* ------------------------------------------------------------------ */
/* Frequency mode                                                      */
/* ------------------------------------------------------------------ */

/*
 * A frequency sampler's period is estimated here, in maskable context
 * only: on the CPU where the sampler is live, with interrupts disabled
 * (its arm, its thread's switch away, the CPU's frequency timer), so the
 * event's freq_* fields need no lock. The overflow path never reads them;
 * it reads the period it publishes, event->period, once at the end of
 * each period (READ_ONCE against this WRITE_ONCE, as for
 * perfmon_event_set_period), so an overflow that lands between any two
 * instructions here sees the old period or the new one.
 */

/*
 * A frequency sampler becomes live on this CPU (cslot, up to date, now
 * serves it): its count and time go on from here, and the CPU's timer
 * runs while it is live. Local, interrupts disabled.
 */
void
perfmon_freq_load(struct perfmon_cpu *cpu, struct perfmon_cpu_slot *cslot)
{
    struct perfmon_event *event = cslot->sampler;

    event->freq_value = cslot->value;
    event->freq_tsc = cpu_get_tsc();

    if (!cpu->freq_armed) {
        cpu->freq_armed = true;
        timer_schedule(&cpu->freq_timer, clock_get_time() + 1);
    }
}

/*
 * A thread's frequency sampler leaves this CPU (cslot, up to date, served
 * it): keep what it counted here, and for how long, for its next
 * estimate. Local, interrupts disabled.
 */
void
perfmon_freq_unload(struct perfmon_cpu_slot *cslot)
{
    struct perfmon_event *event = cslot->sampler;

    event->freq_count += cslot->value - event->freq_value;
    event->freq_time += cpu_get_tsc() - event->freq_tsc;
}

/*
 * The period that gives event freq samples a second at the rate of count
 * events in time TSC cycles, or 0 when the rate is unknown (no event, no
 * time, no calibrated TSC).
 */
static uint64_t
perfmon_freq_period(const struct perfmon_event *event, uint64_t count,
                    uint64_t time)
{
    uint64_t tsc_hz = cpu_get_freq();
    uint64_t rate;

    if (count == 0 || time == 0 || tsc_hz == 0) {
        return 0;
    }

    rate = perfmon_muldiv(count, tsc_hz, time);    /* events a second */
    return MAX(1, MIN(rate / event->freq, PERFMON_PERIOD_MAX));
}

/*
 * Estimate a live frequency sampler's period from what it counted since
 * the last estimate (value: its slot's, up to date, at TSC time now), once
 * it was live half a tick or more: so at most once per tick of its own
 * time, and never from a sliver of time, whose rate says little.
 *
 * The rate is a ratio of decaying sums, of counts and of times (each
 * estimate keeps three quarters of the last): a ratio of sums, not a mean
 * of each tick's rate, so a tick stretched by a stall and the burst that
 * catches up after it weigh as the time they cover, with no bias. The
 * first estimate after attach is the first tick's rate; a steady rate is
 * then held. A stretch without events changes nothing: an event that
 * stops and starts again resumes at its rate.
 */
static void
perfmon_freq_adjust(struct perfmon_event *event, uint64_t value, uint64_t now)
{
    uint64_t count = event->freq_count + (value - event->freq_value);
    uint64_t time = event->freq_time + (now - event->freq_tsc);
    uint64_t period;

    if (time < perfmon_tsc_per_tick / 2) {
        return;
    }

    event->freq_count = 0;
    event->freq_time = 0;
    event->freq_value = value;
    event->freq_tsc = now;

    if (count == 0) {
        return;
    }

    event->freq_sum_count += count - event->freq_sum_count / 4;
    event->freq_sum_time += time - event->freq_sum_time / 4;
    period = perfmon_freq_period(event, event->freq_sum_count,
                                 event->freq_sum_time);

    /* Read where the current period ends, by the overflow path. */
    if (period != 0) {
        WRITE_ONCE(event->period, period);
    }
}

/*
 * The frequency timer, each tick while a frequency sampler is live on the
 * CPU: each one's slot is brought up to date (taking the samples due, as
 * the throttle timer does) and its period estimated.
 */
void
perfmon_freq_timer(struct timer *timer)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int nr_devs = perfmon_nr_devs;
    bool live = false;

    perfmon_nmi_enter();

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        FOR_EACH_BIT(index, cpu->used[d]) {
            struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

            if (cslot->sampler == NULL || cslot->sampler->freq == 0) {
                continue;
            }

            live = true;
            perfmon_cpu_slot_update(cpu, dev, index);
            perfmon_freq_adjust(cslot->sampler, cslot->value, cpu_get_tsc());
        }
    }

    perfmon_nmi_leave();

    if (live) {
        timer_schedule(timer, clock_get_time() + 1);
    } else {
        cpu->freq_armed = false;
    }
}

bool
perfmon_dev_can_sample(const struct perfmon_dev *dev)
{
    return dev->max_period != 0 && dev->ops->preset != NULL;
}

/*
 * Each attach of a sampling event counts its samples from zero; what is
 * left of a refresh carries over (a refresh before attach limits it).
 */
void
perfmon_event_sampling_attach(struct perfmon_event *event)
{
    if (event->period != 0) {
        perfmon_session_ref(event->session);
        event->nr_samples = 0;
        event->freq_count = 0;
        event->freq_time = 0;
        event->freq_sum_count = 0;
        event->freq_sum_time = 0;
    }
}

static bool
perfmon_event_is_sampling(const struct perfmon_event *event)
{
    return perfmon_event_valid(event) && event->period != 0;
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
        event->freq = 0;
        event->session = NULL;
        return 0;
    }

    if (attr->session == NULL || attr->freq > PERFMON_FREQ_MAX
        || (attr->period == 0 && attr->freq == 0)
        || attr->period > PERFMON_PERIOD_MAX
        || attr->nr_frames > PERFMON_MAX_FRAMES) {
        return EINVAL;
    }

    event->session = attr->session;
    event->period = (attr->period != 0) ? attr->period : 1;
    event->freq = attr->freq;
    event->cookie = attr->cookie;
    event->nr_frames = attr->nr_frames;
    event->samples_left = PERFMON_SAMPLES_UNLIMITED;
    return 0;
}

int
perfmon_event_set_period(struct perfmon_event *event, uint64_t period)
{
    if (!perfmon_event_is_sampling(event) || event->freq != 0 || period == 0
        || period > PERFMON_PERIOD_MAX
        || (perfmon_event_attached(event)
            && !perfmon_dev_period_ok(event->dev,
                                      event->dev->state->slots[
                                          event->slot_index].config,
                                      period))) {
        return EINVAL;
    }

    /* Read where the current period ends, on the counting CPU. */
    WRITE_ONCE(event->period, period);
    return 0;
}

int
perfmon_event_get_period(struct perfmon_event *event, uint64_t *periodp)
{
    if (!perfmon_event_is_sampling(event)) {
        return EINVAL;
    }

    *periodp = READ_ONCE(event->period);
    return 0;
}

/*
 * Arm a sampling slot loaded on this CPU for samples_left more samples;
 * one that had stopped starts a new period.
 */
static void
perfmon_cpu_slot_refresh(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                         unsigned int index, struct perfmon_event *event,
                         uint64_t nr_samples)
{
    struct perfmon_cpu_slot *cslot = perfmon_cpu_slot_update(cpu, dev, index);

    event->samples_left = nr_samples;

    if (!cslot->armed) {
        perfmon_cpu_slot_arm(dev, cslot, event->period, event->period);
    }
}

static void
perfmon_td_op_refresh(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_td_slot *tslot =
        &op->td->slots[op->dev->state->index][op->index];

    if (loaded) {
        perfmon_cpu_slot_refresh(cpu_local_ptr(perfmon_cpu), op->dev,
                                 op->index, op->event, op->value);
        return;
    }

    if (op->event->samples_left == 0) {
        tslot->sample_left = op->event->period;
        op->td->sample_periods[op->dev->state->index][op->index]
            = tslot->sample_left;
    }

    op->event->samples_left = op->value;
}

static void
perfmon_cpu_op_refresh(void *arg)
{
    struct perfmon_td_op *op = arg;

    perfmon_nmi_enter();
    perfmon_cpu_slot_refresh(cpu_local_ptr(perfmon_cpu), op->dev, op->index,
                             op->event, op->value);
    perfmon_nmi_leave();
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
            .index = event->slot_index,
            .event = event,
            .fn = perfmon_td_op_refresh,
            .value = nr_samples,
        };
        perfmon_td_run(&op);
        break;
    case PERFMON_EVENT_CPU:
        op = (struct perfmon_td_op){
            .dev = event->dev,
            .index = event->slot_index,
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

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        timer_init(&percpu_ptr(perfmon_cpu, cpu)->throttle.timer,
                   perfmon_throttle_timer, NULL, cpu);
        timer_init(&percpu_ptr(perfmon_cpu, cpu)->freq_timer,
                   perfmon_freq_timer, NULL, cpu);
    }

    return 0;
}
