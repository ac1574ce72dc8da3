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
#include <kern/perfmon/perfmon_i.h>
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

/*
 * A CPU event's read on its CPU, into event->final: the cross-CPU call of
 * a remote read, inline in a local one. A plain slot takes the fast path,
 * unmarked: a plain slot's device has no overflow interrupt, so no NMI
 * ever touches it (kern/perfmon_nmi.h); the other path is a marked
 * section.
 */
struct perfmon_cpu_slot *
perfmon_cpu_op_update(struct perfmon_event *event)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    struct perfmon_cpu_slot *cslot = event->cpu_slot;

    if (!perfmon_cpu_slot_update_plain(cpu->banks[event->dev_index], cslot)) {
        perfmon_nmi_enter();
        cslot = perfmon_cpu_slot_update_slot(event->dev, cslot);
        perfmon_nmi_leave();
    }

    return cslot;
}

/*
 * The count is computed here, where the owner's enable, disable and reset
 * apply (perfmon_snap_end), so that a read sees each wholly or not at all.
 */
static void
perfmon_cpu_op_read(void *arg)
{
    struct perfmon_event *event = arg;
    uint64_t value = perfmon_cpu_op_update(event)->value;

    event->final = __builtin_expect(event->disabled, 0)
                   ? event->frozen : value - event->start;
}

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
    event->cpu_slot = NULL;
    event->start = 0;
    event->final = 0;
    event->session = NULL;
    event->period = 0;
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
    return 0;
}

/*
 * Whether an event was initialized and is in one of its states: the
 * magic alone does not say so (memory that holds it by chance, or an
 * event written over by its owner).
 */
bool
perfmon_event_valid(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && event->state >= PERFMON_EVENT_INIT
           && event->state <= PERFMON_EVENT_DISABLED;
}

bool
perfmon_event_attached(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && (event->state == PERFMON_EVENT_THREAD
               || event->state == PERFMON_EVENT_CPU
               || event->state == PERFMON_EVENT_DISABLED);
}

bool
perfmon_dev_period_ok(const struct perfmon_dev *dev, uint64_t config,
                      uint64_t period)
{
    return dev->ops->check_period == NULL
           || dev->ops->check_period(config, period) == 0;
}

/*
 * Check the event can be attached to thread (or, thread NULL, to CPU cpu)
 * and find its device and slot.
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

    error = perfmon_dev_find(event->id, event->flags, &dev, &config);

    if (error) {
        return error;
    }

    if (event->period != 0 && (!perfmon_dev_can_sample(dev)
                               || !perfmon_dev_period_ok(dev, config,
                                                         event->period))) {
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

    return perfmon_dev_find(id, flags, &dev, &config);
}

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

    error = perfmon_event_prepare(event, thread, 0, &dev, &index);

    if (error) {
        return error;
    }

    perfmon_event_sampling_attach(event);
    perfmon_event_bind(event, dev, index, thread, 0);
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

    error = perfmon_event_prepare(event, NULL, cpu, &dev, &index);

    if (error) {
        return error;
    }

    perfmon_event_sampling_attach(event);
    perfmon_event_bind(event, dev, index, NULL, cpu);
    perfmon_events_attach(&event, 1);
    event->state = PERFMON_EVENT_CPU;
    return 0;
}

void
perfmon_event_bind(struct perfmon_event *event, struct perfmon_dev *dev,
                   unsigned int index, struct thread *thread,
                   unsigned int cpu)
{
    event->dev = dev;
    event->dev_index = dev->state->index;
    event->slot_index = index;
    event->thread = thread;

    if (thread != NULL) {
        thread_ref(thread);
    } else {
        event->cpu = cpu;
        event->cpu_slot = perfmon_cpu_slot(percpu_ptr(perfmon_cpu, cpu), dev,
                                           index);
    }
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
 * A thread event's count since attach. The thread's own: its counters
 * are loaded on this CPU and written only here, so disabling interrupts
 * is all a read needs (no lock, no cross-CPU call). Any other thread's
 * goes through perfmon_td_run. Either way the count is computed where the
 * owner's enable, disable and reset apply (perfmon_snap_end), so that it
 * sees each of them wholly or not at all.
 */
static void
perfmon_td_op_count(struct perfmon_td_op *op, bool loaded)
{
    op->value = perfmon_event_count_at(op->event,
                                       perfmon_td_slot_value(op->td, op->dev,
                                                             op->index,
                                                             loaded));
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

    /* Acquire: a disabled event's frozen count was written before. */
    switch (__atomic_load_n(&event->state, __ATOMIC_ACQUIRE)) {
    case PERFMON_EVENT_THREAD:
        *valuep = perfmon_event_read_thread(event);
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

/*
 * floor(a * b / c) for c > 0, UINT64_MAX when it does not fit. A long
 * division when the product needs more than 64 bits (the kernel has no
 * 128-bit division routine); not on a hot path.
 */
uint64_t
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
        perfmon_mux_enabled_add(event->dev, &event->slot_index, 1, 1);
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
        perfmon_mux_enabled_add(event->dev, &event->slot_index, 1, -1);
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
