/*
 * perfmon's schedule: which slots hold the device's counters, and the
 * multiplexing policy that gives turns to the units of slots when there
 * are more raw events than counters, with the rotation thread. The
 * schedule is written under the device lock with interrupts disabled,
 * inside a sequence count that every CPU's copy (perfmon_cpu.c) follows;
 * nothing inside a write takes a lock a CPU may hold while it reads it
 * (the run queue's): wakeups and cross-CPU calls come after the unlock.
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
#include <kern/perfmon/perfmon_slot_i.h>
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

ARG_DEFINE_U64("perfmon.mux_ticks", 1, 1000);

/*
 * Multiplexing: ticks between two rotations (perfmon.mux_ticks). Two ticks
 * (20 ms at 100 Hz) give every raw event a turn several times in a 100 ms
 * measurement, at a cost of one cross-CPU call per rotation to each CPU
 * that uses a slot whose counter changed (none to the others).
 */
#define PERFMON_MUX_TICKS               2

/*
 * The rotation thread sleeps until some slot waits for a counter
 * (perfmon_mux_wanted, under perfmon_mux_lock), then rotates every
 * perfmon_mux_interval ticks for as long as one does.
 */
static uint64_t perfmon_mux_interval = PERFMON_MUX_TICKS;
static struct spinlock perfmon_mux_lock = SPINLOCK_INITIALIZER;
static bool perfmon_mux_wanted;
static struct thread *perfmon_mux_thread;

/*
 * The schedule: which slots hold counters. Slots linked by the attached
 * groups (links, transitively) form units, which hold counters all
 * together or none (a group's counts cover the same time). A unit with a
 * pinned slot (a pinned event's, or a sampling one) holds them always;
 * the others take turns when they do not all fit, at each rotation. It
 * is written under the device lock, interrupts disabled; the CPUs' copies
 * (perfmon_cpu_sched_apply) read it as a sequence count, which moves only
 * when a slot gains or loses a counter (perfmon_mux_sched_write), so that an
 * attach that changes nothing costs no CPU a new copy. Nothing inside a
 * write may take a lock that a CPU may hold while it reads: a CPU in a
 * context switch holds its run queue lock.
 */

/* Slot index is about to gain or lose its counter. */
static void
perfmon_mux_sched_write(struct perfmon_dev_state *state, unsigned int index)
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
uint32_t
perfmon_mux_sched_end(struct perfmon_dev_state *state)
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
perfmon_mux_slot_pinned(const struct perfmon_slot *slot)
{
    return slot->nr_pinned != 0 || slot->sampling;
}

/*
 * Whether a slot wants a counter: some event on it is enabled (or pins
 * it). A slot whose events are all disabled would count for no one: it
 * holds a counter only where no other unit waits for one.
 */
bool
perfmon_mux_slot_wanted(const struct perfmon_slot *slot)
{
    return slot->nr_enabled != 0 || perfmon_mux_slot_pinned(slot);
}

/* The slots linked to slot index by groups, transitively, itself too. */
uint32_t
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
void
perfmon_mux_drop(struct perfmon_dev *dev, uint32_t unit)
{
    struct perfmon_dev_state *state = dev->state;

    FOR_EACH_BIT(i, unit & state->sched_mask) {
        perfmon_mux_sched_write(state, i);
        dev->ops->free(state->slots[i].counter);
        /* Relaxed, inside the sequence count's write. */
        __atomic_store_n(&state->sched_mask, state->sched_mask & ~(1U << i),
                         __ATOMIC_RELAXED);
    }
}

/* Give every slot of unit a counter, all or none; return whether it did. */
static bool
perfmon_mux_take(struct perfmon_dev *dev, uint32_t unit)
{
    struct perfmon_dev_state *state = dev->state;
    uint32_t taken = 0;

    FOR_EACH_BIT(i, unit & ~state->sched_mask) {
        struct perfmon_slot *slot = &state->slots[i];
        unsigned int counter, width;

        if (dev->ops->alloc(&counter, &width, slot->config) != 0) {
            perfmon_mux_drop(dev, taken);
            return false;
        }

        /* A counter in memory is an entry of the device's bank. */
        assert(width >= 1 && width <= 64 && counter < 64
               && (dev->bank == NULL || counter < dev->nr_counters));
        perfmon_mux_sched_write(state, i);
        __atomic_store_n(&slot->counter, counter, __ATOMIC_RELAXED);
        slot->width = width;
        __atomic_store_n(&slot->mask, bitops_width_mask(width),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&state->sched_mask, state->sched_mask | (1U << i),
                         __ATOMIC_RELAXED);
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
void
perfmon_mux_account(struct perfmon_dev_state *state)
{
    uint64_t now = cpu_get_tsc();

    FOR_EACH_BIT(i, state->sched_mask) {
        state->slots[i].sched_time += now - state->sched_stamp;
    }

    state->sched_stamp = now;
}

/*
 * The times of the slots that want a counter, least and most served;
 * false when none does.
 */
bool
perfmon_mux_range(const struct perfmon_dev_state *state, uint64_t *leastp,
                  uint64_t *mostp)
{
    uint64_t least = UINT64_MAX, most = 0;

    FOR_EACH_BIT(i, state->used_mask) {
        if (perfmon_mux_slot_wanted(&state->slots[i])) {
            least = MIN(least, state->slots[i].sched_time);
            most = MAX(most, state->slots[i].sched_time);
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
uint64_t
perfmon_mux_level(uint64_t own, bool any, uint64_t least, uint64_t most)
{
    return any ? MIN(MAX(own, least), most) : own;
}

/*
 * Give the slots of units[k] counters, all or none, and return whether it
 * did. A unit that wants counters takes them from idle units (after it in
 * units, the last first) if it must; only then do idle units lose theirs,
 * so that a unit given free counters moves no other. Device lock held
 * (asserted by perfmon_mux_schedule, its caller, once per schedule).
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
        } while ((units[victim] & dev->state->sched_mask) == 0);

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
 * lock held, interrupts disabled: the lock is asserted, once per schedule
 * (what the attach's path affords); every holder in the core takes it
 * with spinlock_lock_intr_save.
 */
int
perfmon_mux_schedule(struct perfmon_dev *dev, bool rotate)
{
    struct perfmon_dev_state *state = dev->state;
    uint32_t units[PERFMON_MAX_SLOTS], used = 0, seen = 0, sched = 0;
    unsigned int firsts[PERFMON_MAX_SLOTS], nr_units = 0, k;
    bool pinned[PERFMON_MAX_SLOTS], waiting = false, skipped = false;
    bool idle[PERFMON_MAX_SLOTS];
    uint64_t times[PERFMON_MAX_SLOTS];

    spinlock_assert_held(&state->lock);
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
            pinned[n] |= perfmon_mux_slot_pinned(&state->slots[j]);
            idle[n] &= !perfmon_mux_slot_wanted(&state->slots[j]);
            times[n] = MIN(times[n], state->slots[j].sched_time);
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

    /* Relaxed: read back without the lock by the same thread (the kick);
       the rotation reads it under the lock. */
    __atomic_store_n(&state->mux_waiting, waiting, __ATOMIC_RELAXED);
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

    if (!__atomic_load_n(&dev->state->mux_waiting, __ATOMIC_RELAXED)) {
        return;
    }

    spinlock_lock_intr_save(&perfmon_mux_lock, &flags);

    /* Wanted even before the thread has published itself: it checks
       wanted before its first sleep. */
    if (!perfmon_mux_wanted) {
        perfmon_mux_wanted = true;

        if (perfmon_mux_thread != NULL) {
            thread_wakeup(perfmon_mux_thread);
        }
    }

    spinlock_unlock_intr_restore(&perfmon_mux_lock, flags);
}

/* Schedule again after a change that cannot fail (nothing got pinned). */
void
perfmon_mux_reschedule(struct perfmon_dev *dev)
{
    int error;

    error = perfmon_mux_schedule(dev, false);
    assert(!error);
}

/*
 * A schedule change's cross-CPU call: the CPU follows the new schedule,
 * and stops being told about the slots it let go since the last call.
 */
static void
perfmon_mux_follow(void *arg)
{
    struct perfmon_dev *dev = arg;
    struct perfmon_cpu *cpu = cpu_local_ptr(perfmon_cpu);

    assert_intr_disabled();
    perfmon_nmi_enter();
    perfmon_cpu_sched_check(cpu, dev, perfmon_cpu_loaded_td());
    perfmon_cpu_users_trim(cpu, dev);
    perfmon_nmi_leave();
}

/*
 * After a schedule change, with the device lock released: bring the CPUs
 * that use a slot that gained or lost its counter (changed, less a slot
 * no CPU uses yet or any more) to the new schedule, so that a CPU with no
 * switch or attach to come does not count on the old one (a raw event
 * left waiting while a counter is free); when a unit waits, have the
 * rotation thread rotate. The other CPUs follow when they next take one
 * of those slots into use (perfmon_cpu_slot_get): a change costs the CPUs
 * that count, not the machine. Thread context.
 */
void
perfmon_mux_publish(struct perfmon_dev *dev, uint32_t changed)
{
    const struct perfmon_dev_state *state = dev->state;
    uint64_t cpus = 0;

    if (changed != 0) {
        /* The version is out: a CPU that starts using a slot from now on
           sees it, one that did before shows in users. */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);

        FOR_EACH_BIT(index, changed) {
            cpus |= __atomic_load_n(&state->users[index], __ATOMIC_RELAXED);
        }

        while (cpus != 0) {
            xcall_call((unsigned int)__builtin_ctzll(cpus),
                       perfmon_mux_follow, dev);
            cpus &= cpus - 1;
        }
    }

    perfmon_mux_kick(dev);
}

/* Whether some slot of unit is pinned (used slots only: a free one's
   fields are stale). */
static bool
perfmon_mux_unit_pinned(const struct perfmon_dev_state *state, uint32_t unit)
{
    FOR_EACH_BIT(i, unit & state->used_mask) {
        if (perfmon_mux_slot_pinned(&state->slots[i])) {
            return true;
        }
    }

    return false;
}

/*
 * Whether unit (the union of the units an attach links, its new slots
 * included), pinned after the attach if pin or if it links a pinned
 * slot, could hold its counters while the pinned units hold theirs,
 * and, if it pins, whether every
 * other attached unit still could beside it: no unit may have more slots
 * than the counters the pinned units leave. Checking both sides makes the
 * answer the same whatever order the units attach in: a pinned event
 * attached after a group that needs every counter is refused, as the
 * group is when it comes second. The invariant (every attached unit fits
 * beside the pinned ones) holds from then on: detach only frees slots,
 * and only an attach links or pins. Not tried with the driver, which
 * would move the counters of the units that hold them: a unit that
 * passes but that the driver's constraints never let in (say two events
 * that only one fixed counter counts) waits at the head of each
 * rotation, without holding the others back. Device lock held,
 * interrupts disabled: by perfmon_slot_acquire, its caller, which takes
 * the lock (not asserted on the attach's path; the schedule after it
 * asserts the lock, perfmon_mux_schedule).
 */
bool
perfmon_mux_fits(struct perfmon_dev *dev, uint32_t unit, bool pin)
{
    const struct perfmon_dev_state *state = dev->state;
    uint32_t others = state->used_mask & ~unit, pinned = 0, seen = 0;

    /* A unit that links a pinned slot (an unpinned group sharing a
       pinned event's raw event) pins too. */
    pin |= perfmon_mux_unit_pinned(state, unit);

    FOR_EACH_BIT(i, others) {
        uint32_t other = perfmon_mux_unit(state, i);

        if (!(seen & (1U << i)) && perfmon_mux_unit_pinned(state, other)) {
            pinned |= other;
        }

        seen |= other;
    }

    if (bitops_popcount(unit) + bitops_popcount(pinned)
        > dev->nr_counters) {
        return false;
    }

    if (!pin) {
        return true;
    }

    pinned |= unit;

    FOR_EACH_BIT(i, others & ~pinned) {
        uint32_t other = perfmon_mux_unit(state, i);

        if (bitops_popcount(other) + bitops_popcount(pinned)
            > dev->nr_counters) {
            return false;
        }
    }

    return true;
}

/* Count (delta 1) or uncount (delta -1) the links of a group's slots. */
void
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
 * Unlink the slots of a group's events (detach), so that they take turns
 * apart, and schedule again. Thread context.
 */
void
perfmon_mux_unlink(struct perfmon_dev *dev, const unsigned int *indexes,
                   unsigned int nr_indexes)
{
    struct perfmon_dev_state *state = dev->state;
    unsigned long flags;
    uint32_t changed;

    spinlock_lock_intr_save(&state->lock, &flags);
    perfmon_mux_links_add(state, indexes, nr_indexes, -1);
    perfmon_mux_reschedule(dev);
    changed = perfmon_mux_sched_end(state);
    spinlock_unlock_intr_restore(&state->lock, flags);
    perfmon_mux_publish(dev, changed);
}

/*
 * Count (delta 1) or no longer count (delta -1) references of enabled
 * events on the slots of indexes, and schedule again where a slot starts
 * or stops wanting a counter: a slot enabled again starts level with the
 * others (perfmon_mux_level). Thread context.
 */
void
perfmon_mux_enabled_add(struct perfmon_dev *dev, const unsigned int *indexes,
                        unsigned int nr_indexes, int delta)
{
    struct perfmon_dev_state *state = dev->state;
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
        struct perfmon_slot *slot = &state->slots[indexes[i]];
        bool wanted = perfmon_mux_slot_wanted(slot);

        assert(delta > 0 || slot->nr_enabled != 0);
        slot->nr_enabled += delta;

        if (wanted != perfmon_mux_slot_wanted(slot)) {
            toggled = true;

            if (!wanted) {
                slot->sched_time = perfmon_mux_level(slot->sched_time, any,
                                                     least, most);
            }
        }
    }

    if (toggled) {
        perfmon_mux_reschedule(dev);
        changed = perfmon_mux_sched_end(state);
    }

    spinlock_unlock_intr_restore(&state->lock, flags);
    perfmon_mux_publish(dev, changed);
}

bool
perfmon_mux_rotate(struct perfmon_dev *dev)
{
    struct perfmon_dev_state *state = dev->state;
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
        /* Relaxed: a statistic read without the lock. */
        __atomic_store_n(&state->nr_rotations, state->nr_rotations + 1,
                         __ATOMIC_RELAXED);
        changed = perfmon_mux_sched_end(state);
    }

    spinlock_unlock_intr_restore(&state->lock, flags);
    perfmon_mux_publish(dev, changed);
    return rotated;
}

uint64_t
perfmon_mux_nr_rotations(const struct perfmon_dev *dev)
{
    return __atomic_load_n(&dev->state->nr_rotations, __ATOMIC_RELAXED);
}

uint64_t
perfmon_mux_sched_seq(const struct perfmon_dev *dev)
{
    return __atomic_load_n(&dev->state->sched_seq, __ATOMIC_ACQUIRE);
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
void
perfmon_mux_main(void *arg)
{
    unsigned long flags;

    (void)arg;

    /* Published under the lock its readers hold (perfmon_mux_kick). */
    spinlock_lock_intr_save(&perfmon_mux_lock, &flags);
    perfmon_mux_thread = thread_self();
    spinlock_unlock_intr_restore(&perfmon_mux_lock, flags);

    for (;;) {
        spinlock_lock_intr_save(&perfmon_mux_lock, &flags);

        while (!perfmon_mux_wanted) {
            thread_sleep(&perfmon_mux_lock, flags);
        }

        perfmon_mux_wanted = false;
        spinlock_unlock_intr_restore(&perfmon_mux_lock, flags);
        thread_delay(perfmon_mux_interval);

        for (unsigned int d = 0; d < perfmon_dev_count(); d++) {
            perfmon_mux_rotate(perfmon_devs[d]);
        }
    }
}

int
perfmon_mux_setup(void)
{
    if (arg_get_u64("perfmon.mux_ticks", &perfmon_mux_interval) == EINVAL
        || perfmon_mux_interval == 0 || perfmon_mux_interval > 1000) {
        log_err("perfmon: perfmon.mux_ticks must be 1 to 1000, using %u",
                PERFMON_MUX_TICKS);
        perfmon_mux_interval = PERFMON_MUX_TICKS;
    }

    /* The thread publishes itself (perfmon_mux_main); no join. */
    return thread_create(NULL,
                         &(struct thread_attr){
                             .name = "perfmon_mux",
                             .priority = THREAD_PRIO_MAX,
                         }, perfmon_mux_main, NULL);
}
