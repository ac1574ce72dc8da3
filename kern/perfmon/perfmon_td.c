/*
 * perfmon's per-thread tier: each thread's share of its slots, loaded and
 * unloaded on every context switch (perfmon_td_switch, with interrupts
 * and preemption off, the run queue lock held), and the thread
 * operations that reach a thread's counters wherever it runs
 * (perfmon_td_run: under the thread's td lock, on the CPU it is loaded
 * on, through a cross-CPU call that re-checks where it is).
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

void
perfmon_td_init(struct perfmon_td *td)
{
    spinlock_init(&td->lock);
    td->loaded_cpu = PERFMON_CPU_NONE;

    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        td->used[d] = 0;

        for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
            td->slots[d][i].nr_refs = 0;
            td->slots[d][i].cpu_start = 0;
            td->slots[d][i].value = 0;
            td->slots[d][i].sample_left = 0;
            td->sample_periods[d][i] = 0;
            td->off[d][i] = 0;
            td->samplers[d][i] = NULL;
        }

        td->sampler_slots[d] = 0;
    }

    list_init(&td->members);
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

/*
 * Load one slot on this CPU. td locked or loaded here, interrupts off:
 * per slot on the switch, asserted by the entries of its callers' paths
 * (perfmon_td_switch, perfmon_td_load, and perfmon_snap_td_op for
 * perfmon_td_op_attach).
 */
static void
perfmon_td_slot_load(struct perfmon_td *td, struct perfmon_cpu *cpu,
                     struct perfmon_dev *dev, unsigned int index)
{
    unsigned int d = dev->state->index;
    struct perfmon_td_slot *tslot = &td->slots[d][index];
    struct perfmon_cpu_slot *cslot;

    cslot = perfmon_cpu_slot_get(cpu, dev, index, td, td->samplers[d][index]);

    if (cslot->nr_refs > 1) {
        perfmon_cpu_slot_update(cpu, dev, index);
    }

    tslot->cpu_start = cslot->value;

    /*
     * The thread's period goes on where it left it: the sample that ends
     * it records that period, even if the event's changed meanwhile.
     */
    if (cslot->sampler != NULL) {
        perfmon_sample_arm(dev, cslot, tslot->sample_left,
                           td->sample_periods[d][index]);
    }
}

/*
 * Keep what is left of a sampling slot's period (slot index of device d)
 * in the thread leaving the CPU, with the period it belongs to, after
 * taking the samples due (at ctx). The counter serves the thread's
 * sampler here (cslot->sampler). Interrupts disabled (asserted by
 * perfmon_sample_leave, which it calls first).
 */
static void
perfmon_td_slot_save_period(struct perfmon_td *td, unsigned int d,
                            unsigned int index, struct perfmon_cpu *cpu,
                            struct perfmon_dev *dev,
                            struct perfmon_cpu_slot *cslot,
                            const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_td_slot *tslot = &td->slots[d][index];

    perfmon_sample_leave(cpu, dev, cslot, ctx);

    if (cslot->sampler->freq != 0) {
        perfmon_freq_unload(cslot);
    }

    if (cslot->armed) {
        tslot->sample_left = cslot->sample_next - cslot->value;
        td->sample_periods[d][index] = cslot->sample_period;
    } else {
        tslot->sample_left = __atomic_load_n(&cslot->sampler->period,
                                             __ATOMIC_RELAXED);
        td->sample_periods[d][index] = tslot->sample_left;
    }
}

/*
 * Unload one slot, adding what it counted here to the thread. Interrupts
 * disabled (asserted by perfmon_snap_td_op, which reaches it through
 * perfmon_td_op_detach).
 */
static void
perfmon_td_slot_unload(struct perfmon_td *td, struct perfmon_cpu *cpu,
                       struct perfmon_dev *dev, unsigned int index)
{
    struct perfmon_td_slot *tslot = &td->slots[dev->state->index][index];
    struct perfmon_cpu_slot *cslot = perfmon_cpu_slot_update(cpu, dev, index);

    tslot->value += cslot->value - tslot->cpu_start;

    if (cslot->sampler != NULL) {
        struct perfmon_intr_ctx ctx = PERFMON_CTX_CALLER();

        perfmon_td_slot_save_period(td, dev->state->index, index, cpu, dev,
                                    cslot, &ctx);
    }

    perfmon_cpu_slot_put(cpu, dev, index);
}

/*
 * Multiplexing, for a thread loading (used: its slots of device d) on this
 * CPU: its time without a counter on the slots that have none here starts
 * now. Local, interrupts disabled (asserted by its callers' entries:
 * perfmon_td_switch, perfmon_td_load, and perfmon_snap_td_op for
 * perfmon_td_op_attach).
 */
static void
perfmon_td_off_begin(struct perfmon_cpu *cpu, unsigned int d, uint32_t used,
                     uint64_t now)
{
    FOR_EACH_BIT(index, cpu->unsched[d] & used) {
        cpu->slots[d][index].off_mark = now;
    }
}

/*
 * A switch touching slots without a counter here. First the CPU follows
 * the schedule if it changed: after next's lock, so that the change that
 * gave next's new slots their counters is seen (a slot this CPU has not
 * seen yet is one without a counter here, which is how the switch comes
 * here; changes to slots in use reach every CPU using them by a cross-CPU
 * call, and until then the CPU counts consistently on its copy). Before
 * the batch:
 * the switch reads what this starts. Then, at the scheduler's TSC, so
 * that the times match the threads' run times, prev takes the time it ran
 * without them, next's starts. Interrupts disabled (asserted by
 * perfmon_td_switch).
 */
static __attribute__((noinline)) void
perfmon_td_switch_off(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                      struct perfmon_td *prev, struct perfmon_td *next,
                      uint64_t now)
{
    unsigned int d = dev->state->index;

    if (perfmon_cpu_sched_stale(cpu, dev)) {
        perfmon_cpu_sched_apply(cpu, dev, prev, now);
    }

    FOR_EACH_BIT(index, cpu->unsched[d] & prev->used[d]) {
        prev->off[d][index] += now - cpu->slots[d][index].off_mark;
    }

    perfmon_td_off_begin(cpu, d, next->used[d], now);
}

void
perfmon_td_load(struct perfmon_td *td)
{
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

    assert_intr_disabled();
    spinlock_lock(&td->lock);
    assert_msg(td->loaded_cpu == PERFMON_CPU_NONE, "td loaded on %u",
               td->loaded_cpu);
    perfmon_nmi_enter();

    for (unsigned int d = 0; d < perfmon_dev_count(); d++) {
        perfmon_cpu_sched_check(cpu, perfmon_devs[d], NULL);
        perfmon_td_off_begin(cpu, d, td->used[d], cpu_get_tsc());
    }

    /* Relaxed: read by ops under the td lock, held here. */
    __atomic_store_n(&td->loaded_cpu, cpu_id(), __ATOMIC_RELAXED);

    for (unsigned int d = 0; d < perfmon_dev_count(); d++) {
        FOR_EACH_BIT(index, td->used[d]) {
            perfmon_td_slot_load(td, cpu, perfmon_devs[d], index);
        }
    }

    perfmon_nmi_leave();
    spinlock_unlock(&td->lock);
}

/*
 * A slot brought up to date by a switch, off its fast path. Interrupts
 * disabled, as for the helpers below: asserted by perfmon_td_switch.
 */
static __attribute__((noinline)) void
perfmon_td_switch_sync(struct perfmon_dev *dev, struct perfmon_cpu_slot *cslot,
                       uint64_t pending)
{
    perfmon_cpu_slot_sync(dev, perfmon_cpu_bank(cpu_local_ptr(perfmon_cpu),
                                                dev),
                          cslot, pending);
}

/*
 * A slot only prev uses, on a switch: brought up to date, prev takes what
 * it counted (and keeps what is left of a sampling period, its samples
 * due taken at the caller of the switch, whose frame is at frame), then
 * it is released.
 */
static void
perfmon_td_switch_release(struct perfmon_td *prev, unsigned int d,
                          struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                          unsigned int index, uint64_t pending,
                          const uintptr_t *frame)
{
    struct perfmon_td_slot *tslot = &prev->slots[d][index];
    struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);

    perfmon_cpu_slot_sync(dev, perfmon_cpu_bank(cpu, dev), cslot, pending);
    tslot->value += cslot->value - tslot->cpu_start;

    if (__builtin_expect(cslot->sampler != NULL, 0)) {
        struct perfmon_intr_ctx ctx = { .ip = frame[1], .fp = frame[0] };

        perfmon_td_slot_save_period(prev, d, index, cpu, dev, cslot, &ctx);
    }

    perfmon_cpu_slot_put(cpu, dev, index);
}

/*
 * A sampling slot both prev and next use (their samplers of one raw event
 * share it), on a switch, brought up to date: the counter keeps running;
 * prev takes what it counted, and its sampler
 * leaves it as on a release (samples due taken at the caller of the
 * switch, whose frame is at frame; what is left of its period kept; a
 * throttled period reported), then next's takes it as on a load (armed
 * with what is left of its own period).
 */
static __attribute__((noinline)) void
perfmon_td_switch_sampler(struct perfmon_td *prev, struct perfmon_td *next,
                          unsigned int d, struct perfmon_cpu *cpu,
                          struct perfmon_dev *dev, unsigned int index,
                          const uintptr_t *frame)
{
    struct perfmon_cpu_slot *cslot = perfmon_cpu_slot(cpu, dev, index);
    struct perfmon_td_slot *prev_tslot = &prev->slots[d][index];
    struct perfmon_td_slot *next_tslot = &next->slots[d][index];
    struct perfmon_intr_ctx ctx = { .ip = frame[1], .fp = frame[0] };

    prev_tslot->value += cslot->value - prev_tslot->cpu_start;
    perfmon_td_slot_save_period(prev, d, index, cpu, dev, cslot, &ctx);

    perfmon_sample_write_throttle(cpu, cslot);     /* if prev dropped any */
    assert(next->samplers[d][index] != NULL);
    cslot->sampler = next->samplers[d][index];
    next_tslot->cpu_start = cslot->value;
    perfmon_sample_arm(dev, cslot, next_tslot->sample_left,
                       next->sample_periods[d][index]);

    /* Not consumed: the preset discards what is pending, even unarmed. */
    if (!cslot->armed && (cpu->handoffs[d] & (1U << index))) {
        perfmon_sample_discard(dev, cslot);
    }
}

/*
 * Switch one device's slots from prev to next. The pending overflows of
 * every slot prev used are consumed in one call, but for the sampling
 * slots passed on to next on a device whose preset ends every earlier
 * overflow (handoffs): their switch is one read and one preset; a wrap
 * before the read shows as a decrease, and the preset discards its
 * overflow. Then the slots both
 * use, the switch's fast path: each is brought up to date once (a plain
 * one with no call), prev takes what it counted and next starts from
 * there; the counter keeps running (no stop, no start, no write to the
 * PMU). A sampling slot is never plain: off the fast path, it passes
 * from prev's sampler to next's. Then the slots only prev uses are
 * released, and those only next uses are taken.
 */
static inline __attribute__((always_inline)) void
perfmon_td_switch_dev(struct perfmon_td *prev, struct perfmon_td *next,
                      struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                      unsigned int d, const uintptr_t *frame)
{
    const struct perfmon_bank *bank = cpu->banks[d];
    struct perfmon_td_slot *prev_slots = prev->slots[d];
    struct perfmon_td_slot *next_slots = next->slots[d];
    struct perfmon_cpu_slot *cslots = cpu->slots[d];
    uint32_t prev_used = prev->used[d];
    uint32_t next_used = next->used[d];
    uint64_t pending = perfmon_cpu_consume(cpu, dev, prev_used
                                           & ~(next_used & cpu->handoffs[d]));

    FOR_EACH_BIT(index, prev_used & next_used) {
        struct perfmon_cpu_slot *cslot = &cslots[index];

        if (!perfmon_cpu_slot_update_plain(bank, cslot)) {
            perfmon_td_switch_sync(dev, cslot, pending);

            if (__builtin_expect(cslot->sampler != NULL, 0)) {
                perfmon_td_switch_sampler(prev, next, d, cpu, dev, index,
                                          frame);
                continue;
            }
        }

        prev_slots[index].value += cslot->value - prev_slots[index].cpu_start;
        next_slots[index].cpu_start = cslot->value;
    }

    FOR_EACH_BIT(index, prev_used & ~next_used) {
        perfmon_td_switch_release(prev, d, cpu, dev, index,
                                  pending, frame);
    }

    FOR_EACH_BIT(index, next_used & ~prev_used) {
        perfmon_td_slot_load(next, cpu, dev, index);
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
    unsigned int nr_devs = perfmon_dev_count();

    assert_intr_disabled();
    assert_msg(prev->loaded_cpu == cpu_id(), "prev loaded on %u, not %u",
               prev->loaded_cpu, cpu_id());
    spinlock_lock(&next->lock);
    assert_msg(next->loaded_cpu == PERFMON_CPU_NONE, "next loaded on %u",
               next->loaded_cpu);
    perfmon_nmi_enter();
    __atomic_store_n(&next->loaded_cpu, cpu_id(), __ATOMIC_RELAXED);

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
            perfmon_td_switch_dev(prev, next, cpu, dev, d,
                                  __builtin_frame_address(0));

            if (batch) {
                dev->ops->batch_end();
            }
        }
    }

out:
    perfmon_nmi_leave();
    spinlock_unlock(&next->lock);
    __atomic_store_n(&prev->loaded_cpu, PERFMON_CPU_NONE, __ATOMIC_RELEASE);
}

/*
 * The thread's total for a slot, bringing a loaded slot up to date. The
 * td operations', interrupts disabled (asserted by their entries).
 */
uint64_t
perfmon_td_slot_value(struct perfmon_td *td, struct perfmon_dev *dev,
                      unsigned int index, bool loaded)
{
    struct perfmon_td_slot *tslot = &td->slots[dev->state->index][index];
    struct perfmon_cpu_slot *cslot;

    if (!loaded || tslot->nr_refs == 0) {
        return tslot->value;
    }

    cslot = perfmon_cpu_slot_update(cpu_local_ptr(perfmon_cpu), dev, index);
    return tslot->value + (cslot->value - tslot->cpu_start);
}

/* perfmon_td_run's cross-CPU call, on the CPU the thread was loaded on. */
static void
perfmon_td_op_remote(void *arg)
{
    struct perfmon_td_op *op = arg;
    unsigned int loaded_cpu;

    assert_intr_disabled();
    spinlock_lock(&op->td->lock);
    /* Acquire: pairs with the switch's release of NONE (not under the
       lock), so its writes to the thread's counts come before. */
    loaded_cpu = __atomic_load_n(&op->td->loaded_cpu, __ATOMIC_ACQUIRE);

    /* The thread may have left this CPU since the call was sent. */
    if (loaded_cpu == cpu_id() || loaded_cpu == PERFMON_CPU_NONE) {
        perfmon_nmi_enter();
        op->fn(op, loaded_cpu != PERFMON_CPU_NONE);
        perfmon_nmi_leave();
        op->done = true;
    }

    spinlock_unlock(&op->td->lock);
}

void
perfmon_td_run(struct perfmon_td_op *op)
{
    for (;;) {
        unsigned int loaded_cpu;
        unsigned long flags;

        spinlock_lock_intr_save(&op->td->lock, &flags);
        /* Acquire: pairs with the switch's release of NONE. */
        loaded_cpu = __atomic_load_n(&op->td->loaded_cpu, __ATOMIC_ACQUIRE);

        /* Loaded on this CPU means the thread is the caller. */
        if (loaded_cpu == PERFMON_CPU_NONE || loaded_cpu == cpu_id()) {
            perfmon_nmi_enter();
            op->fn(op, loaded_cpu != PERFMON_CPU_NONE);
            perfmon_nmi_leave();
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

/*
 * The td operations of a snapshot: interrupts disabled, asserted by
 * perfmon_snap_td_op, their caller; attach and detach with td locked, by
 * perfmon_td_run or perfmon_td_op_remote, which take it.
 */
void
perfmon_td_op_attach(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_td_slot *tslot =
        &op->td->slots[op->dev->state->index][op->index];

    if (tslot->nr_refs == 0) {
        struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

        if (loaded) {
            perfmon_cpu_sched_check(cpu, op->dev, op->td);
            perfmon_td_off_begin(cpu, op->dev->state->index, 1U << op->index,
                                 cpu_get_tsc());
        }

        op->td->used[op->dev->state->index] |= 1U << op->index;
        op->td->samplers[op->dev->state->index][op->index] = op->event;
        tslot->sample_left = (op->event != NULL) ? op->event->period : 0;
        op->td->sample_periods[op->dev->state->index][op->index]
            = tslot->sample_left;

        if (loaded) {
            perfmon_td_slot_load(op->td, cpu, op->dev, op->index);
        }
    }

    tslot->nr_refs++;
    op->value = perfmon_td_slot_value(op->td, op->dev, op->index, loaded);
}

void
perfmon_td_op_read(struct perfmon_td_op *op, bool loaded)
{
    op->value = perfmon_td_slot_value(op->td, op->dev, op->index, loaded);
}

void
perfmon_td_op_detach(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_td_slot *tslot =
        &op->td->slots[op->dev->state->index][op->index];

    op->value = perfmon_td_slot_value(op->td, op->dev, op->index, loaded);
    assert(tslot->nr_refs != 0);

    if (--tslot->nr_refs == 0) {
        op->td->used[op->dev->state->index] &= ~(1U << op->index);

        if (loaded) {
            perfmon_td_slot_unload(op->td, cpu_local_ptr(perfmon_cpu),
                                   op->dev, op->index);
        }

        op->td->samplers[op->dev->state->index][op->index] = NULL;
    }
}

/*
 * A thread event's count since attach. The thread's own: its counters
 * are loaded on this CPU and written only here, so disabling interrupts
 * is all a read needs (no lock, no cross-CPU call). Any other thread's
 * goes through perfmon_td_run. Either way the count is computed where the
 * owner's enable, disable and reset apply (perfmon_snap_end), so that it
 * sees each of them wholly or not at all. Interrupts disabled; the td lock
 * only through perfmon_td_run.
 */
void
perfmon_td_op_count(struct perfmon_td_op *op, bool loaded)
{
    assert_intr_disabled();
    op->value = perfmon_event_count_at(op->event,
                                       perfmon_td_slot_value(op->td, op->dev,
                                                             op->index,
                                                             loaded));
}

void
perfmon_td_op_refresh(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_td_slot *tslot =
        &op->td->slots[op->dev->state->index][op->index];

    assert_intr_disabled();
    spinlock_assert_held(&op->td->lock);

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

/*
 * A thread event's period change where its counters are: loaded, as a
 * CPU event's (perfmon_cpu_slot_set_period); off every CPU, the period
 * in flight is the remainder the thread kept, of its own length, so only
 * the event's period changes.
 */
void
perfmon_td_op_set_period(struct perfmon_td_op *op, bool loaded)
{
    assert_intr_disabled();
    spinlock_assert_held(&op->td->lock);

    if (loaded) {
        perfmon_cpu_slot_set_period(cpu_local_ptr(perfmon_cpu), op->dev,
                                    op->index, op->event, op->value);
        return;
    }

    /* Relaxed: as perfmon_cpu_slot_set_period's. */
    __atomic_store_n(&op->event->period, op->value, __ATOMIC_RELAXED);
}
