/*
 * perfmon: the event API. Events are initialized, attached to a thread
 * or a CPU, read (count and times), enabled, disabled, reset and
 * detached here; each call finds the event's device and slot and hands
 * the work to the tier that owns it (perfmon_slot.c: the slot;
 * perfmon_snap.c: the target's state at one instant; perfmon_td.c and
 * perfmon_cpu.c: the counts). Also the module's setup. Every function
 * here runs in thread context unless its header says otherwise; the
 * reads' fast paths disable interrupts for the few instructions of an
 * in-place read. No lock of its own: see perfmon_i.h for the order of
 * the locks the tiers take.
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

    if (flags & PERFMON_EF_CLOCK) {
        /* A family has no clock of its own yet: a clock counts one thread. */
        if ((flags & (PERFMON_EF_RAW | PERFMON_EF_SW | PERFMON_EF_PINNED
                      | PERFMON_EF_INHERIT))
            || id != PERFMON_CLOCK) {
            return EINVAL;
        }
    } else if (flags & PERFMON_EF_SW) {
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
    event->cpu_slot = NULL;
    event->cpu_bank = NULL;
    event->start = 0;
    event->final = 0;
    event->session = NULL;
    event->period = 0;
    event->period_min = 1;
    event->freq = 0;
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
    event->family = NULL;
    return 0;
}

/*
 * Check the event can be attached to thread (or, thread NULL, to CPU cpu)
 * and find its device and slot (a clock: neither, *devp NULL).
 */
static int
perfmon_event_prepare(struct perfmon_event *event, struct thread *thread,
                      unsigned int cpu, struct perfmon_dev **devp,
                      unsigned int *indexp)
{
    struct perfmon_dev *dev;
    uint64_t config;
    bool pin;
    int error;

    if (event == NULL || event->magic != PERFMON_EVENT_MAGIC
        || (event->state != PERFMON_EVENT_INIT
            && event->state != PERFMON_EVENT_DETACHED)) {
        return EINVAL;
    }

    if (perfmon_event_is_clock(event)) {
        *devp = NULL;
        *indexp = 0;
        return 0;
    }

    error = perfmon_dev_find(event->id, event->flags, &dev, &config);

    if (error) {
        return error;
    }

    if (event->period != 0 && !perfmon_dev_can_sample(dev)) {
        return EINVAL;
    }

    /*
     * A frequency sampler's periods are perfmon's: its first one starts
     * at the device's least where shorter, as every estimate does
     * (perfmon_freq_period); a fixed period below the least is refused.
     */
    if (event->freq != 0) {
        event->period_min = perfmon_dev_min_period(dev, config);
        event->period = MAX(event->period, event->period_min);
    } else if (event->period != 0
               && !perfmon_dev_period_ok(dev, config, event->period)) {
        return EINVAL;
    }

    pin = (event->flags & PERFMON_EF_PINNED) != 0;
    error = perfmon_slot_acquire(dev, &config, &pin, 1, event->period != 0,
                                 (thread != NULL) ? thread_perfmon_td(thread)
                                                 : NULL,
                                 cpu, indexp);

    if (error) {
        return error;
    }

    *devp = dev;
    return 0;
}

bool
perfmon_event_attached(const struct perfmon_event *event)
{
    return perfmon_event_is_attached(event);
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

    if (perfmon_event_is_clock(&event)) {
        return 0;
    }

    return perfmon_dev_find(id, flags, &dev, &config);
}

/* Whether an event is inherited, for its attach (any state). */
static bool
perfmon_event_inherits(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && (event->flags & PERFMON_EF_INHERIT);
}

int
perfmon_event_attach(struct perfmon_event *event, struct thread *thread)
{
    struct perfmon_family *family = NULL;
    struct perfmon_dev *dev;
    unsigned int index;
    int error;

    if (thread == NULL || thread_exited(thread)
        || (event != NULL && event->group != NULL)) {
        return EINVAL;
    }

    /* Its family first, so that a failure leaves the slots alone. */
    if (perfmon_event_inherits(event)) {
        if (event->period != 0
            || (event->state != PERFMON_EVENT_INIT
                && event->state != PERFMON_EVENT_DETACHED)) {
            return EINVAL;
        }

        error = perfmon_family_create(&event, 1, &family);

        if (error) {
            return error;
        }
    }

    error = perfmon_event_prepare(event, thread, 0, &dev, &index);

    if (error) {
        perfmon_family_destroy(family);
        return error;
    }

    perfmon_sample_event_attach(event);
    perfmon_snap_bind(event, dev, index, thread, 0);
    perfmon_snap_attach(&event, 1);

    if (family != NULL) {
        perfmon_family_start(family, thread);
    }

    /* Release: publishes the attach's fields to perfmon_event_read. */
    __atomic_store_n(&event->state,
                     perfmon_event_is_clock(event) ? PERFMON_EVENT_CLOCK
                     : (family != NULL) ? PERFMON_EVENT_FAMILY
                     : PERFMON_EVENT_THREAD,
                     __ATOMIC_RELEASE);
    return 0;
}

int
perfmon_event_attach_cpu(struct perfmon_event *event, unsigned int cpu)
{
    struct perfmon_dev *dev;
    unsigned int index;
    int error;

    if (cpu >= cpu_count() || !cpu_online(cpu)
        || (event != NULL && event->group != NULL)
        || perfmon_event_inherits(event)) {
        return EINVAL;
    }

    error = perfmon_event_prepare(event, NULL, cpu, &dev, &index);

    if (error) {
        return error;
    }

    perfmon_sample_event_attach(event);
    perfmon_snap_bind(event, dev, index, NULL, cpu);
    perfmon_snap_attach(&event, 1);
    __atomic_store_n(&event->state,
                     perfmon_event_is_clock(event) ? PERFMON_EVENT_CLOCK
                                                   : PERFMON_EVENT_CPU,
                     __ATOMIC_RELEASE);
    return 0;
}

int
perfmon_event_detach(struct perfmon_event *event)
{
    if (!perfmon_event_attached(event) || event->group != NULL) {
        return EINVAL;
    }

    if (event->family != NULL) {
        perfmon_family_detach(event->family);
    } else {
        perfmon_snap_detach(&event, 1);
    }

    return 0;
}

/* A group member's place in its family (0 for an event alone). */
static unsigned int
perfmon_event_family_index(const struct perfmon_event *event)
{
    unsigned int i;

    for (i = 0; perfmon_family_event(event->family, i) != event; i++) {
        continue;
    }

    return i;
}

/* An inherited event's family total (and times, in TSC cycles). */
static __attribute__((noinline)) uint64_t
perfmon_event_read_family(struct perfmon_event *event, uint64_t *enabledp,
                          uint64_t *runningp)
{
    uint64_t counts[PERFMON_GROUP_MAX], enabled, running;
    struct perfmon_family *family = event->family;
    unsigned int i = perfmon_event_family_index(event);

    perfmon_family_read(family, counts, &enabled, &running, NULL, 0, NULL,
                        i);

    if (enabledp != NULL) {
        *enabledp = enabled;
        *runningp = running;
    }

    return counts[i];
}

int
perfmon_event_read_members(struct perfmon_event *event,
                           struct perfmon_member_value *values,
                           unsigned int max, unsigned int *nrp)
{
    uint64_t counts[PERFMON_GROUP_MAX], enabled, running;

    if (event == NULL || event->magic != PERFMON_EVENT_MAGIC
        || event->state != PERFMON_EVENT_FAMILY || nrp == NULL
        || (values == NULL && max != 0)) {
        return EINVAL;
    }

    return perfmon_family_read(event->family, counts, &enabled, &running,
                               values, max, nrp,
                               perfmon_event_family_index(event));
}

static __attribute__((noinline)) uint64_t
perfmon_event_read_thread_slow(struct perfmon_event *event)
{
    struct perfmon_td_op op = {
        .td = thread_perfmon_td(event->thread),
        .dev = event->dev,
        .index = event->slot_index,
        .event = event,
        .fn = perfmon_td_op_count,
    };
    unsigned long flags;

    if (event->thread != thread_self()) {
        perfmon_td_run(&op);
        return op.value;
    }

    flags = cpu_intr_save();
    perfmon_nmi_enter();
    perfmon_td_op_count(&op, true);
    perfmon_nmi_leave();
    cpu_intr_restore(flags);
    return op.value;
}

/*
 * The same, with the fast path of the thread's own enabled event on a
 * plain slot inline: no call, no saved register. Any other case takes
 * the path above, from the start.
 */
static inline uint64_t
perfmon_event_read_thread(struct perfmon_event *event)
{
    struct thread *thread = event->thread;
    unsigned int d = event->dev_index;
    unsigned int index = event->slot_index;
    const struct perfmon_td_slot *tslot;
    struct perfmon_cpu_slot *cslot;
    struct perfmon_cpu *cpu;
    unsigned long flags;
    uint64_t value;

    if (thread == thread_self()) {
        /* A plain slot: no NMI touches it, no marked section needed. */
        flags = cpu_intr_save();
        cpu = cpu_local_ptr(perfmon_cpu);
        cslot = &cpu->slots[d][index];

        if (!event->disabled
            && perfmon_cpu_slot_update_plain(cpu->banks[d], cslot)) {
            tslot = &thread_perfmon_td(thread)->slots[d][index];
            value = tslot->value + (cslot->value - tslot->cpu_start)
                    - event->start;
            cpu_intr_restore(flags);
            return value;
        }

        cpu_intr_restore(flags);
    }

    return perfmon_event_read_thread_slow(event);
}

/*
 * A CPU event of another CPU: one cross-CPU call, whose handler leaves the
 * count in event->final. Out of line, so that the caller's jump to it
 * leaves the frame of the local read to the local read.
 */
static __attribute__((noinline)) uint64_t
perfmon_event_read_cpu_remote(struct perfmon_event *event)
{
    xcall_call(event->cpu, perfmon_cpu_op_read_remote, event);
    return event->final;
}

/*
 * A CPU event's count: read in place on its CPU (interrupts disabled),
 * else through one cross-CPU call.
 */
static inline uint64_t
perfmon_event_read_cpu(struct perfmon_event *event)
{
    unsigned long flags;

    /* Should the caller move to the event's CPU before the call,
       xcall_call reads in place. */
    if (event->cpu != cpu_id()) {
        return perfmon_event_read_cpu_remote(event);
    }

    flags = cpu_intr_save();

    /* Still there, now that it cannot move. */
    if (__builtin_expect(event->cpu == cpu_id(), 1)) {
        perfmon_cpu_op_read(event);
        cpu_intr_restore(flags);
        return event->final;
    }

    cpu_intr_restore(flags);
    return perfmon_event_read_cpu_remote(event);
}

/*
 * An enabled clock's count: a snapshot of its target, off the counting
 * events' inline paths.
 */
static __attribute__((noinline)) uint64_t
perfmon_event_read_clock(struct perfmon_event *event)
{
    struct perfmon_snap snap;

    perfmon_snap_take(&snap, &event, 1, PERFMON_SNAP_READ, NULL);
    return snap.counts[0];
}

/* perfmon_event_get, inline in both public reads. */
static inline __attribute__((always_inline)) int
perfmon_event_get_inline(struct perfmon_event *event, uint64_t *valuep)
{
    unsigned int state;

    if (event == NULL || event->magic != PERFMON_EVENT_MAGIC) {
        return EINVAL;
    }

    /* Acquire: a disabled event's frozen count was written before. */
    state = __atomic_load_n(&event->state, __ATOMIC_ACQUIRE);

    /*
     * The two attached states first, each one compare: a switch of all
     * five compiles to a search that reaches a CPU event's after four.
     */
    if (__builtin_expect(state == PERFMON_EVENT_CPU, 1)) {
        *valuep = perfmon_event_read_cpu(event);
        return 0;
    }

    if (__builtin_expect(state == PERFMON_EVENT_THREAD, 1)) {
        *valuep = perfmon_event_read_thread(event);
        return 0;
    }

    switch (state) {
    case PERFMON_EVENT_DISABLED:
        /* perfmon_event_disable, or a reset since (relaxed store). */
        *valuep = __atomic_load_n(&event->frozen, __ATOMIC_RELAXED);
        return 0;
    case PERFMON_EVENT_DETACHED:
        *valuep = event->final;
        return 0;
    case PERFMON_EVENT_CLOCK:
        *valuep = perfmon_event_read_clock(event);
        return 0;
    case PERFMON_EVENT_FAMILY:
        *valuep = perfmon_event_read_family(event, NULL, NULL);
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
    case PERFMON_EVENT_CLOCK:
        perfmon_snap_take(&snap, &event, 1, PERFMON_SNAP_READ, NULL);
        count = snap.counts[0];
        enabled = snap.enabled;
        running = snap.running;
        break;
    case PERFMON_EVENT_DETACHED:
        count = event->final;
        enabled = event->time_enabled;
        running = event->time_running;
        break;
    case PERFMON_EVENT_FAMILY:
        count = perfmon_event_read_family(event, &enabled, &running);
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

    perfmon_snap_take(&snap, &event, 1, PERFMON_SNAP_READ, apply);
}

/* Whether enable or disable may apply to the event alone. */
static bool
perfmon_event_can_toggle(const struct perfmon_event *event)
{
    return perfmon_event_attached(event) && event->period == 0
           && event->group == NULL && event->family == NULL;
}

int
perfmon_event_enable(struct perfmon_event *event)
{
    if (!perfmon_event_can_toggle(event)) {
        return EINVAL;
    }

    if (event->disabled) {
        perfmon_event_change(event, perfmon_snap_apply_enable);

        /* A clock takes no multiplexing turns. */
        if (event->dev != NULL) {
            perfmon_mux_enabled_add(event->dev, &event->slot_index, 1, 1);
        }
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
        perfmon_event_change(event, perfmon_snap_apply_disable);

        if (event->dev != NULL) {
            perfmon_mux_enabled_add(event->dev, &event->slot_index, 1, -1);
        }
    }

    return 0;
}

int
perfmon_event_reset(struct perfmon_event *event)
{
    if (!perfmon_event_attached(event) || event->family != NULL) {
        return EINVAL;
    }

    if (event->disabled) {
        /*
         * A clock counts on from its times, which stand still while it is
         * disabled: its count starts again at its time enabled now. Read
         * only by snapshots of an enabled clock, so never by a read that
         * overlaps this one.
         */
        if (perfmon_event_is_clock(event)) {
            event->start = event->time_enabled;
        }

        /* No read needed; relaxed, read after the acquire of state. */
        __atomic_store_n(&event->frozen, 0, __ATOMIC_RELAXED);
    } else {
        perfmon_event_change(event, perfmon_snap_apply_reset);
    }

    return 0;
}

unsigned int
perfmon_event_slot_index(const struct perfmon_event *event)
{
    return event->slot_index;
}

/* Each part of the core sets up what is its own. */
static int
perfmon_setup(void)
{
    int error;

    error = perfmon_sample_setup();

    if (error) {
        return error;
    }

    error = perfmon_mux_setup();

    if (error) {
        return error;
    }

    return perfmon_cpu_setup();
}

INIT_OP_DEFINE(perfmon_setup,
               INIT_OP_DEP(clock_setup, true),
               INIT_OP_DEP(cpu_mp_setup, true),
               INIT_OP_DEP(syscnt_setup, true),
               INIT_OP_DEP(thread_setup, true),
               INIT_OP_DEP(timer_setup, true),
               INIT_OP_DEP(xcall_setup, true));

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

    if (attr->session == NULL || perfmon_event_is_clock(event)
        || attr->freq > PERFMON_FREQ_MAX
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
    struct perfmon_td_op op;

    if (!perfmon_event_is_sampling(event) || event->freq != 0 || period == 0
        || period > PERFMON_PERIOD_MAX
        || (perfmon_event_attached(event)
            && !perfmon_dev_period_ok(event->dev,
                                      event->dev->state->slots[
                                          event->slot_index].config,
                                      period))) {
        return EINVAL;
    }

    /*
     * Where the event counts, after bringing its slot up to date: the
     * periods that ended before the change, sampled or throttled, keep
     * the old length (a throttled CPU leaves them uncounted until its
     * counter is next read), the periods after the one in flight take
     * the new one. The overflow path reads it where a period ends.
     */
    switch (event->state) {
    case PERFMON_EVENT_THREAD:
        op = (struct perfmon_td_op){
            .td = thread_perfmon_td(event->thread),
            .dev = event->dev,
            .index = event->slot_index,
            .event = event,
            .fn = perfmon_td_op_set_period,
            .value = period,
        };
        perfmon_td_run(&op);
        break;
    case PERFMON_EVENT_CPU:
        op = (struct perfmon_td_op){
            .dev = event->dev,
            .index = event->slot_index,
            .event = event,
            .value = period,
        };
        xcall_call(event->cpu, perfmon_cpu_op_set_period, &op);
        break;
    default:
        /* Relaxed: not attached, read by the next attach's CPU after
           the attach's own synchronization. */
        __atomic_store_n(&event->period, period, __ATOMIC_RELAXED);
        break;
    }

    return 0;
}

int
perfmon_event_get_period(struct perfmon_event *event, uint64_t *periodp)
{
    if (!perfmon_event_is_sampling(event)) {
        return EINVAL;
    }

    *periodp = __atomic_load_n(&event->period, __ATOMIC_RELAXED);
    return 0;
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

    /* Relaxed: a count the sample path stores relaxed. */
    *nr_samplesp = __atomic_load_n(&event->nr_samples, __ATOMIC_RELAXED);
    return 0;
}
