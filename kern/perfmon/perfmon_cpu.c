/*
 * perfmon's per-CPU tier: per slot, the last raw value of its counter and
 * a 64-bit sum, and the CPU's copy of the schedule. Touched only on its
 * CPU with interrupts disabled: by the context switch (perfmon_td.c), the
 * overflow report (perfmon_sample.c), the poll timer and cross-CPU calls.
 * The inline updates the hot paths share are in perfmon_cpu_i.h, with
 * where the rule is asserted.
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
#include <kern/perfmon/perfmon_td_i.h>
#include <kern/perfmon_nmi.h>
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

struct perfmon_cpu perfmon_cpu __percpu;

/*
 * Bring one slot of this CPU up to date, interrupts disabled: consume its
 * overflow (devices with an interrupt only), one read, the add; a sampling
 * slot then takes the samples due. Per slot, off the fast paths of the
 * switch and the reads: the rule is asserted by their entries
 * (perfmon_td_switch, perfmon_cpu_op_update's callers) and by those of
 * perfmon_cpu_slot_update's callers.
 */
__attribute__((noinline)) struct perfmon_cpu_slot *
perfmon_cpu_slot_update_slot(struct perfmon_dev *dev,
                             struct perfmon_cpu_slot *cslot)
{
    uint64_t pending = 0;

    /* Multiplexed out: nothing counts, the device is not touched. */
    if (!cslot->sched) {
        return cslot;
    }

    if (dev->overflow_intr) {
        pending = dev->ops->overflow_consume(cslot->id_bit);
    }

    perfmon_cpu_slot_sync(dev, perfmon_cpu_bank(cpu_local_ptr(perfmon_cpu),
                                                dev),
                          cslot, pending);

    /* An overflow consumed here is not reported: its samples are due. */
    if (__builtin_expect(cslot->sampler != NULL, 0)) {
        perfmon_sample_due(dev, cslot, pending != 0);
    }

    return cslot;
}

/*
 * Bring slot index of dev on cpu (this CPU) up to date, either way.
 * Interrupts disabled, per slot: asserted by the entries of its callers'
 * paths (perfmon_td_switch and perfmon_td_load, the snapshots' and thread
 * operations', the timers, perfmon_cpu_slot_refresh).
 */
struct perfmon_cpu_slot *
perfmon_cpu_slot_update(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                        unsigned int index)
{
    struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

    if (perfmon_cpu_slot_update_plain(perfmon_cpu_bank(cpu, dev), cslot)) {
        return cslot;
    }

    return perfmon_cpu_slot_update_slot(dev, cslot);
}

static void
perfmon_cpu_poll_arm(struct perfmon_cpu *cpu, struct perfmon_dev *dev)
{
    if (dev->state->poll_ticks == 0 || cpu->poll_armed[dev->state->index]) {
        return;
    }

    cpu->poll_armed[dev->state->index] = true;
    timer_schedule(&cpu->poll_timers[dev->state->index],
                   clock_get_time() + dev->state->poll_ticks);
}

/*
 * Take a reference on a slot of this CPU, starting its counter if it holds
 * one here. A slot taken into use follows the schedule first: it may be a
 * slot freed and taken again for another raw event since this CPU last
 * used it, whose counter this CPU's copy still names (and that counter
 * may not even count the new raw event); and schedule changes reach by a
 * cross-CPU call only the CPUs that use the slots they change. So the CPU
 * shows itself a user of the slot first, then checks the schedule, while
 * a change publishes its version first, then looks for the users
 * (perfmon_mux_publish): each side's full barrier between the two makes
 * sure that one of them sees the other. td: the thread loaded here, or
 * being loaded, or NULL. sampler: the sampling event the counter serves
 * here (a sampling slot's), else NULL. Interrupts disabled, per slot on
 * the switch: asserted by the entries of its callers' paths
 * (perfmon_td_switch, perfmon_td_load, perfmon_snap_cpu_op_remote,
 * perfmon_snap_td_op, perfmon_td_op_remote; a local CPU snapshot's
 * caller, perfmon_snap_take, disables them just before).
 */
struct perfmon_cpu_slot *
perfmon_cpu_slot_get(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                     unsigned int index, struct perfmon_td *td,
                     struct perfmon_event *sampler)
{
    struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

    if (cslot->nr_refs == 0) {
        const struct perfmon_slot *slot = &dev->state->slots[index];

        perfmon_cpu_slot_user(cpu, dev, index);
        perfmon_cpu_sched_check(cpu, dev, td);

        if (cslot->sched) {
            cslot->prev = dev->ops->start(cslot->counter, slot->config)
                         & cslot->mask;
        }

        cslot->wrap_seen = false;
        cslot->sampler = sampler;
        cslot->plain = dev->bank != NULL && !dev->overflow_intr
                      && sampler == NULL;
        cslot->armed = false;
        cslot->throttled_periods = 0;
        cslot->throttled_events = 0;
        /* Relaxed: only this CPU writes used; others count it. */
        __atomic_store_n(&cpu->used[dev->state->index],
                         cpu->used[dev->state->index] | (1U << index),
                         __ATOMIC_RELAXED);

        if (sampler != NULL && dev->preset_ends_overflows) {
            cpu->handoffs[dev->state->index] |= 1U << index;
        }

        perfmon_cpu_poll_arm(cpu, dev);
    }

    cslot->nr_refs++;
    return cslot;
}

/*
 * Drop a reference, stopping the counter with the last one. Interrupts
 * disabled, per slot on the switch: asserted as for perfmon_cpu_slot_get.
 */
void
perfmon_cpu_slot_put(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                     unsigned int index)
{
    struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

    assert(cslot->nr_refs != 0);

    if (--cslot->nr_refs == 0) {
        /* Periods a throttled event dropped are reported as it leaves. */
        if (cslot->sampler != NULL) {
            perfmon_sample_write_throttle(cpu, cslot);
        }

        if (cslot->sched) {
            dev->ops->stop(cslot->counter);
        }

        __atomic_store_n(&cpu->used[dev->state->index],
                         cpu->used[dev->state->index] & ~(1U << index),
                         __ATOMIC_RELAXED);
        cpu->handoffs[dev->state->index] &= ~(1U << index);
        cpu->users_left[dev->state->index] |= 1U << index;
        cslot->sampler = NULL;
        cslot->plain = false;
        cslot->armed = false;
    }
}

/*
 * This CPU's bit in the users of slot index of dev: set (with a full
 * barrier, before the caller checks the schedule) unless still set. The
 * CPU leaves it set when it lets the slot go (users_left), so that the
 * loads and unloads of a context switch write no shared line; the first
 * change of the slot that reaches the CPU after that clears it
 * (perfmon_cpu_users_trim). Local, interrupts disabled (asserted as for
 * perfmon_cpu_slot_get, its caller).
 */
void
perfmon_cpu_slot_user(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                      unsigned int index)
{
    uint64_t bit = 1ULL << cpu_id();

    if (cpu->users_left[dev->state->index] & (1U << index)) {
        cpu->users_left[dev->state->index] &= ~(1U << index);
    } else {
        /* Store-buffering with perfmon_mux_publish: a seq_cst fence on
           each side, between the store and the other's load, so that
           either the publish sees this bit or the later load of sched_seq
           sees its version. A seq_cst RMW alone is no fence in C11. */
        __atomic_fetch_or(&dev->state->users[index], bit, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
}

/*
 * Clear this CPU's bit in the users of the slots of dev it let go: the
 * cross-CPU call of a schedule change, which such a slot's bit still
 * brings here. Local, interrupts disabled.
 */
void
perfmon_cpu_users_trim(struct perfmon_cpu *cpu, struct perfmon_dev *dev)
{
    uint64_t bit = 1ULL << cpu_id();
    unsigned int d = dev->state->index;

    assert_intr_disabled();

    FOR_EACH_BIT(i, cpu->users_left[d]) {
        __atomic_fetch_and(&dev->state->users[i], ~bit, __ATOMIC_RELAXED);
    }

    cpu->users_left[d] = 0;
}

/*
 * Follow dev's schedule on this CPU (multiplexing): the slots in use that
 * lose their counter are brought up to date and stopped, then those that
 * gain one start, as a counter may pass from one slot to another; a slot
 * without a counter reads as one that never moves. The times without a
 * counter are accounted, for the CPU's slots and for td, the thread loaded
 * here (NULL when none), at TSC now (a context switch's: the scheduler's,
 * which the thread's run time and the switch's accounting use). Local,
 * interrupts disabled: on the attach's path, asserted by the entries that
 * reach it (perfmon_td_switch, and those of perfmon_cpu_sched_check's
 * callers), not here.
 */
__attribute__((noinline)) void
perfmon_cpu_sched_apply(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                        struct perfmon_td *td, uint64_t now)
{
    const struct perfmon_dev_state *state = dev->state;
    unsigned int d = state->index;
    struct perfmon_cpu_slot *cslots = cpu->slots[d];
    uint32_t here = ~cpu->unsched[d], sched, lose, gain, stopping;
    unsigned int ids[PERFMON_MAX_SLOTS];
    uint64_t masks[PERFMON_MAX_SLOTS];
    uint64_t pending;
    uint64_t seq;

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

        /* Relaxed: the sequence count validates the copy. */
        sched = __atomic_load_n(&state->sched_mask, __ATOMIC_RELAXED);

        FOR_EACH_BIT(i, sched) {
            ids[i] = __atomic_load_n(&state->slots[i].counter,
                                     __ATOMIC_RELAXED);
            masks[i] = __atomic_load_n(&state->slots[i].mask,
                                       __ATOMIC_RELAXED);
        }

        /* Orders the copy before the second load of the count. */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);

        if (__atomic_load_n(&state->sched_seq, __ATOMIC_RELAXED) == seq) {
            break;
        }
    }

    lose = here & ~sched;
    gain = sched & ~here;

    FOR_EACH_BIT(i, sched & here) {
        if (cslots[i].counter != ids[i] || cslots[i].mask != masks[i]) {
            lose |= 1U << i;
            gain |= 1U << i;
        }
    }

    stopping = lose & cpu->used[d];
    pending = perfmon_cpu_consume(cpu, dev, stopping);

    FOR_EACH_BIT(i, lose) {
        struct perfmon_cpu_slot *cslot = &cslots[i];

        /* Pinned: a sampling slot keeps its counter. */
        assert(cslot->sampler == NULL);

        if (stopping & (1U << i)) {
            perfmon_cpu_slot_sync(dev, perfmon_cpu_bank(cpu, dev), cslot,
                                  pending);
            dev->ops->stop(cslot->counter);
        }

        cpu->slot_of[d][cslot->counter] = PERFMON_SLOT_NONE;
        cslot->sched = false;

        /* A bank's last counter always reads 0. */
        if (dev->bank != NULL) {
            cslot->counter = dev->nr_counters;
        }

        cslot->mask = 0;
        cslot->id_bit = 0;
        cslot->prev = 0;
        cslot->wrap_seen = false;
        cslot->off_since = now;
        cslot->off_mark = now;
        cpu->unsched[d] |= 1U << i;
    }

    FOR_EACH_BIT(i, gain) {
        struct perfmon_cpu_slot *cslot = &cslots[i];

        /* Not a move from another counter: its time off ends. */
        if (!cslot->sched) {
            cslot->off_total += now - cslot->off_since;

            if (td != NULL && (td->used[d] & (1U << i))) {
                td->off[d][i] += now - cslot->off_mark;
            }

            cpu->unsched[d] &= ~(1U << i);
        }

        assert(ids[i] < 64);
        cslot->sched = true;
        cslot->counter = ids[i];
        cslot->mask = masks[i];
        cslot->id_bit = 1ULL << ids[i];
        cpu->slot_of[d][ids[i]] = (uint8_t)i;

        if (cpu->used[d] & (1U << i)) {
            cslot->prev = dev->ops->start(ids[i], state->slots[i].config)
                         & cslot->mask;
            cslot->wrap_seen = false;
        }
    }

    if (gain & cpu->used[d]) {
        perfmon_cpu_poll_arm(cpu, dev);
    }

    cpu->sched_seq[d] = seq;
}

/*
 * The thread loaded on this CPU, if any. Local, interrupts disabled
 * (asserted by perfmon_snap_cpu_op_remote and perfmon_mux_follow, its
 * callers' entries, not here: twice per CPU event's attach).
 */
struct perfmon_td *
perfmon_cpu_loaded_td(void)
{
    struct perfmon_td *td = thread_perfmon_td(thread_self());

    /* Relaxed: only this CPU stores its own id there. */
    return (__atomic_load_n(&td->loaded_cpu, __ATOMIC_RELAXED) == cpu_id())
           ? td : NULL;
}

void
perfmon_cpu_poll_local(struct perfmon_dev *dev)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    const struct perfmon_bank *bank = perfmon_cpu_bank(cpu, dev);
    struct perfmon_cpu_slot *cslots = cpu->slots[dev->state->index];
    uint32_t used;
    uint64_t pending;

    assert_intr_disabled();
    perfmon_nmi_enter();
    used = cpu->used[dev->state->index];
    pending = perfmon_cpu_consume(cpu, dev, used);

    FOR_EACH_BIT(index, used) {
        perfmon_cpu_slot_sync(dev, bank, &cslots[index], pending);
    }

    perfmon_nmi_leave();
}

/*
 * The poll timer: brings every used slot of its CPU up to date. It is
 * armed when the CPU starts using a slot and re-arms itself while slots
 * are in use; the first firing that finds none lets it lapse. So an idle
 * CPU has no timer, and a busy context switch path never touches it.
 * Timer context, interrupts disabled (asserted by perfmon_cpu_poll_local).
 */
void
perfmon_cpu_poll_timer(struct timer *timer)
{
    struct perfmon_dev *dev = timer_arg(timer);
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

    perfmon_cpu_poll_local(dev);

    if (cpu->used[dev->state->index] != 0) {
        timer_schedule(timer, clock_get_time() + dev->state->poll_ticks);
    } else {
        cpu->poll_armed[dev->state->index] = false;
    }
}

/*
 * Each kind of device interrupts on its own vector; every device of the
 * kind that interrupts on a vector looks for its overflows (those in NMI
 * mode are perfmon_nmi_handle's). A marked section: an NMI that lands in
 * it waits for its end. Interrupt context, interrupts disabled.
 */
static void
perfmon_cpu_overflow_intr(bool sw, const struct perfmon_intr_ctx *ctx)
{
    unsigned int nr_devs = __atomic_load_n(&perfmon_nr_devs,
                                           __ATOMIC_ACQUIRE);

    assert_intr_disabled();
    perfmon_nmi_enter();

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        if (dev->sw == sw && dev->overflow_intr && !dev->nmi) {
            dev->ops->handle_overflow_intr(ctx);
        }
    }

    perfmon_nmi_leave();
}

/*
 * The overflow interrupt of the hardware PMU devices, and the software
 * PMU's emulated one: run the handlers of the devices of that kind that
 * interrupt. Registered with the arch at setup (cpu_pmi_register,
 * cpu_pmu_soft_register), which owns the vectors and sends the EOI
 * afterwards, and called with where the interrupt came. Interrupt
 * context.
 */
static void
perfmon_cpu_pmi_intr(const struct perfmon_intr_ctx *ctx)
{
    perfmon_cpu_overflow_intr(false, ctx);
}

/*
 * The software PMU's vector is also where the NMI asks for what it cannot
 * do itself: arming the throttle timer (the timer module takes a lock,
 * which an NMI may have interrupted on this CPU).
 */
static void
perfmon_cpu_soft_intr(const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_nmi_cpu *nmi = cpu_local_ptr(perfmon_nmi_cpu);

    /*
     * Cleared first: an NMI that sets it again sends another request.
     * Only this CPU and its NMI touch it: relaxed (the NMI is ordered
     * with this code as a signal would be); the barrier keeps the clear
     * before the arm.
     */
    if (__atomic_load_n(&nmi->throttle_arm, __ATOMIC_RELAXED)) {
        __atomic_store_n(&nmi->throttle_arm, 0, __ATOMIC_RELAXED);
        barrier();
        perfmon_sample_throttle_arm(cpu_local_ptr(perfmon_cpu));
    }

    perfmon_cpu_overflow_intr(true, ctx);
}

unsigned int
perfmon_cpu_nr_used_slots(unsigned int cpu)
{
    const struct perfmon_cpu *pcpu = percpu_ptr(perfmon_cpu, cpu);
    unsigned int n = 0;

    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        /* Relaxed: a snapshot; the owner stores used relaxed. */
        n += bitops_popcount(__atomic_load_n(&pcpu->used[d],
                                             __ATOMIC_RELAXED));
    }

    return n;
}

bool
perfmon_cpu_event_counting(const struct perfmon_event *event)
{
    assert_intr_disabled();

    /* A disabled event's count stands still, counter or not; a clock
       has none. */
    if (!perfmon_event_is_attached(event) || event->disabled
        || perfmon_event_is_clock(event)) {
        return false;
    }

    return perfmon_cpu_slot(cpu_local_ptr(perfmon_cpu), event->dev,
                            event->slot_index)->sched;
}

uint64_t
perfmon_cpu_nr_overflows(unsigned int cpu)
{
    return syscnt_read(&percpu_ptr(perfmon_cpu, cpu)->sc_overflows);
}

/*
 * A device being registered: on every CPU, its poll timer, and the empty
 * schedule (no slot has a counter). Thread context (boot, for the
 * kernel's devices), device registry lock held.
 */
void
perfmon_cpu_dev_init(struct perfmon_dev *dev)
{
    unsigned int d = dev->state->index;

    spinlock_assert_held(&perfmon_devs_lock);

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct perfmon_cpu *pcpu = percpu_ptr(perfmon_cpu, cpu);

        timer_init(&pcpu->poll_timers[d], perfmon_cpu_poll_timer, dev, cpu);
        pcpu->banks[d] = (dev->bank != NULL) ? percpu_ptr(*dev->bank, cpu)
                                             : NULL;
        pcpu->unsched[d] = ~0U;
        pcpu->sched_seq[d] = dev->state->sched_seq;

        for (unsigned int i = 0; i < ARRAY_SIZE(pcpu->slot_of[d]); i++) {
            pcpu->slot_of[d][i] = PERFMON_SLOT_NONE;
        }

        for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
            pcpu->slots[d][i].counter = (dev->bank != NULL)
                                        ? dev->nr_counters : 0;
        }
    }
}

/*
 * The entries the machine calls (cpu_pmi_register, ...), with where the
 * interrupt landed in its terms. Interrupt or NMI context.
 */
static void
perfmon_cpu_pmi_entry(const struct cpu_intr_site *site)
{
    struct perfmon_intr_ctx ctx = { .ip = site->ip, .fp = site->fp };

    perfmon_cpu_pmi_intr(&ctx);
}

static void
perfmon_cpu_soft_entry(const struct cpu_intr_site *site)
{
    struct perfmon_intr_ctx ctx = { .ip = site->ip, .fp = site->fp };

    perfmon_cpu_soft_intr(&ctx);
}

int
perfmon_cpu_setup(void)
{
    char name[SYSCNT_NAME_SIZE];

    /* Only in NMI mode is the NMI perfmon's: otherwise one panics. */
    cpu_pmi_register(perfmon_cpu_pmi_entry);
    cpu_pmu_soft_register(perfmon_cpu_soft_entry);
    perfmon_nmi_setup();

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct perfmon_cpu *pcpu = percpu_ptr(perfmon_cpu, cpu);

        snprintf(name, sizeof(name), "perfmon_overflows/%u", cpu);
        syscnt_register(&pcpu->sc_overflows, name);
        snprintf(name, sizeof(name), "perfmon_samples/%u", cpu);
        syscnt_register(&pcpu->sc_samples, name);
        snprintf(name, sizeof(name), "perfmon_throttles/%u", cpu);
        syscnt_register(&pcpu->sc_throttles, name);
        timer_init(&pcpu->throttle.timer, perfmon_cpu_throttle_timer, NULL,
                   cpu);
        timer_init(&pcpu->freq_timer, perfmon_cpu_freq_timer, NULL, cpu);
    }

    return 0;
}

/*
 * The cross-CPU call of a remote CPU event's read (perfmon_cpu_op_read,
 * perfmon_cpu_i.h, inline in a local one): its entry asserts the context
 * that the inline read leaves to its local caller.
 */
void
perfmon_cpu_op_read_remote(void *arg)
{
    assert_intr_disabled();
    perfmon_cpu_op_read(arg);
}

/*
 * Arm a sampling slot loaded on this CPU for samples_left more samples;
 * one that had stopped starts a new period.
 */
void
perfmon_cpu_slot_refresh(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                         unsigned int index, struct perfmon_event *event,
                         uint64_t nr_samples)
{
    struct perfmon_cpu_slot *cslot;

    assert_intr_disabled();
    cslot = perfmon_cpu_slot_update(cpu, dev, index);

    event->samples_left = nr_samples;

    if (!cslot->armed) {
        perfmon_sample_arm(dev, cslot, event->period, event->period);
    }
}

/* A CPU event's refresh, the cross-CPU call on its CPU. */
void
perfmon_cpu_op_refresh(void *arg)
{
    struct perfmon_td_op *op = arg;

    assert_intr_disabled();
    perfmon_nmi_enter();
    perfmon_cpu_slot_refresh(cpu_local_ptr(perfmon_cpu), op->dev, op->index,
                             op->event, op->value);
    perfmon_nmi_leave();
}

/*
 * Give a sampling slot loaded on this CPU's event a new period from here
 * on: the slot brought up to date first, so that the periods that ended
 * before the change (sampled, or counted by a throttle) keep the old
 * length, and those after the one in flight have the new one.
 */
void
perfmon_cpu_slot_set_period(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                            unsigned int index, struct perfmon_event *event,
                            uint64_t period)
{
    assert_intr_disabled();
    perfmon_cpu_slot_update(cpu, dev, index);

    /* Relaxed: read by the overflow path of this CPU only, which the
       disabled interrupts (and the NMI mark) hold off here. */
    __atomic_store_n(&event->period, period, __ATOMIC_RELAXED);
}

/* A CPU event's period change, the cross-CPU call on its CPU. */
void
perfmon_cpu_op_set_period(void *arg)
{
    struct perfmon_td_op *op = arg;

    assert_intr_disabled();
    perfmon_nmi_enter();
    perfmon_cpu_slot_set_period(cpu_local_ptr(perfmon_cpu), op->dev,
                                op->index, op->event, op->value);
    perfmon_nmi_leave();
}

/*
 * The throttle timer, at the tick after a CPU was throttled: each
 * sampling slot counts the periods that ended meanwhile, reports them in
 * a THROTTLE record, and samples again from where its period stands.
 */
void
perfmon_cpu_throttle_timer(struct timer *timer)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int nr_devs = perfmon_dev_count();

    (void)timer;
    assert_intr_disabled();
    perfmon_nmi_enter();
    cpu->throttle.nr_samples = 0;
    cpu->throttle.window_end = cpu_get_tsc() + clock_tsc_per_tick();

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        FOR_EACH_BIT(index, cpu->used[d]) {
            struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

            if (cslot->sampler == NULL) {
                continue;
            }

            /* Still throttled: periods that ended are counted. */
            perfmon_cpu_slot_update(cpu, dev, index);
            perfmon_sample_write_throttle(cpu, cslot);
        }
    }

    perfmon_sample_throttle_end(cpu);
    perfmon_nmi_leave();
}

/*
 * The frequency timer, each tick while a frequency sampler is live on the
 * CPU: each one's slot is brought up to date (taking the samples due, as
 * the throttle timer does) and its period estimated.
 */
void
perfmon_cpu_freq_timer(struct timer *timer)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);
    unsigned int nr_devs = perfmon_dev_count();
    bool live = false;

    assert_intr_disabled();
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

/*
 * A CPU event's slot brought up to date on its CPU, when it is not plain
 * or its counter wrapped (perfmon_cpu_op_read takes a plain slot's fast
 * path inline, unmarked: a plain slot's device has no overflow interrupt,
 * so no NMI ever touches it, kern/perfmon_nmi.h); this path is a marked
 * section. Interrupts disabled: asserted by the cross-CPU calls' entries
 * (perfmon_cpu_op_read_remote, perfmon_snap_cpu_op_remote); a local read
 * or detach disables them just before (perfmon_event_read_cpu,
 * perfmon_snap_take), where an assertion would add 5% to the read.
 */
void
perfmon_cpu_op_update_slow(struct perfmon_event *event)
{
    perfmon_nmi_enter();
    perfmon_cpu_slot_update_slot(event->dev, event->cpu_slot);
    perfmon_nmi_leave();
}

/* Not inlined in the remote read's entry: its fast path jumps here. */
__attribute__((noinline)) void
perfmon_cpu_op_read_slow(struct perfmon_event *event)
{
    perfmon_cpu_op_update_slow(event);
    perfmon_cpu_op_final(event, event->cpu_slot->value);
}
