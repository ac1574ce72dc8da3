/*
 * The run queues and the scheduler: queuing, picking a CPU, the context
 * switch, preemption, and what moves threads between run queues (sleep and
 * wakeup, affinity changes), with each CPU's idle thread.
 *
 * Each CPU has a run queue, protected by its lock, holding its ready
 * threads; the running thread is not queued. A context switch happens with
 * the run queue lock held and interrupts disabled, and the lock is handed
 * over: the thread switched to releases it (thread_switch_finish). Work
 * that needs other locks - enqueuing the previous thread on another CPU
 * when its affinity excluded this one, dropping the last reference of an
 * exited thread - is recorded in the run queue and done right after the
 * switch, once the previous thread's context is saved.
 *
 * A thread's cpu field names the run queue that owns it. A thread leaving
 * its run queue for another (wakeup on a CPU it may not use, migration,
 * affinity change) is first marked THREAD_CPU_TRANSIT under the old run
 * queue's lock, then queued on the new one, under that lock, which sets
 * cpu again. So holding the lock named by cpu pins a thread, and whoever
 * finds it in transit waits the few instructions it takes to land.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/errno.h>
#include <kern/list.h>
#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon_td.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <kern/thread_i.h>
#include <machine/cpu.h>
#include <machine/tcb.h>

struct thread_runq thread_runq __percpu;
static struct thread thread_idle __percpu;

static struct thread_runq *
thread_runq_of(unsigned int cpu)
{
    return percpu_ptr(thread_runq, cpu);
}

/*
 * Lock the run queue that owns the thread, re-checking ownership once the
 * lock is held. cpu is written under the owning run queue's lock and read
 * here without it, relaxed: only the re-check under the lock counts.
 */
static struct thread_runq *
thread_lock_runq(struct thread *thread, unsigned long *flags)
{
    for (;;) {
        unsigned int cpu = __atomic_load_n(&thread->cpu, __ATOMIC_RELAXED);
        struct thread_runq *rq;

        if (cpu == THREAD_CPU_TRANSIT) {
            cpu_pause();
            continue;
        }

        rq = thread_runq_of(cpu);
        spinlock_lock_intr_save(&rq->lock, flags);

        if (__atomic_load_n(&thread->cpu, __ATOMIC_RELAXED) == cpu) {
            return rq;
        }

        spinlock_unlock_intr_restore(&rq->lock, *flags);
    }
}

/*
 * need_resched is written under the run queue lock and read without it by
 * its CPU (preemption points, the idle loop): relaxed both ways, as it is
 * a hint - the switch it asks for decides under the lock, and a remote
 * writer follows the store with the reschedule interrupt, whose exit
 * reads it again.
 */
static void
thread_runq_set_resched(struct thread_runq *rq, bool value)
{
    __atomic_store_n(&rq->need_resched, value, __ATOMIC_RELAXED);
}

static bool
thread_runq_resched_pending(const struct thread_runq *rq)
{
    return __atomic_load_n(&rq->need_resched, __ATOMIC_RELAXED);
}

static void
thread_runq_request_resched(struct thread_runq *rq)
{
    thread_runq_set_resched(rq, true);

    if (rq->cpu != cpu_id()) {
        cpu_send_resched(rq->cpu);
    }
}

/* Put a ready thread at the tail of its level. Run queue locked. */
static void
thread_runq_queue(struct thread_runq *rq, struct thread *thread)
{
    assert(!thread->on_rq);
    list_insert_tail(&rq->queues[thread->priority], &thread->rq_node);
    rq->ready_mask |= 1U << thread->priority;
    /*
     * Under the lock; the idle loop reads it without, as a hint (it then
     * schedules under the lock): relaxed.
     */
    __atomic_store_n(&rq->nr_ready, rq->nr_ready + 1, __ATOMIC_RELAXED);
    thread->on_rq = true;
    __atomic_store_n(&thread->cpu, rq->cpu, __ATOMIC_RELAXED);
}

/* Queue a thread that was not running, preempting a lower level. */
static void
thread_runq_add(struct thread_runq *rq, struct thread *thread)
{
    assert(!thread->on_cpu);
    thread_runq_queue(rq, thread);

    if (thread->priority > rq->current->priority) {
        thread_runq_request_resched(rq);
    }
}

static void
thread_runq_remove(struct thread_runq *rq, struct thread *thread)
{
    assert(thread->on_rq);
    list_remove(&thread->rq_node);

    if (list_empty(&rq->queues[thread->priority])) {
        rq->ready_mask &= ~(1U << thread->priority);
    }

    __atomic_store_n(&rq->nr_ready, rq->nr_ready - 1, __ATOMIC_RELAXED);
    thread->on_rq = false;
}

/* The highest-priority ready thread, or the idle thread. */
static struct thread *
thread_runq_pick(struct thread_runq *rq)
{
    struct thread *next;
    unsigned int prio;

    if (rq->ready_mask == 0) {
        return rq->idle;
    }

    prio = 31 - __builtin_clz(rq->ready_mask);
    next = list_first_entry(&rq->queues[prio], struct thread, rq_node);
    thread_runq_remove(rq, next);
    return next;
}

/*
 * An allowed online CPU, preferring the one it last ran on. Any context.
 */
unsigned int
thread_pick_cpu(const struct thread *thread)
{
    uint64_t allowed = READ_ONCE(thread->affinity) & thread_online_mask();

    if (allowed & (1ULL << thread->last_cpu)) {
        return thread->last_cpu;
    }

    /*
     * thread_create and thread_set_affinity refuse a mask with no online
     * CPU, and CPUs do not go offline: none left is a broken invariant,
     * which thread_enqueue would otherwise retry for good.
     */
    assert_msg(allowed != 0, "thread %s: no online CPU in its affinity 0x%lx",
               thread->name, (unsigned long)READ_ONCE(thread->affinity));
    return (unsigned int)__builtin_ctzll(allowed);
}

/*
 * Queue a thread in transit (THREAD_CPU_TRANSIT, ready, neither queued nor
 * running) on an allowed CPU. The affinity is read under the target's
 * lock, after thread_set_affinity wrote it; set_affinity waits for threads
 * in transit, so it sees the thread queued. Interrupts disabled, no run
 * queue lock held.
 */
void
thread_enqueue(struct thread *thread)
{
    for (;;) {
        unsigned int cpu = thread_pick_cpu(thread);
        struct thread_runq *rq = thread_runq_of(cpu);

        spinlock_lock(&rq->lock);

        if (READ_ONCE(thread->affinity) & (1ULL << cpu)) {
            thread_runq_add(rq, thread);
            spinlock_unlock(&rq->lock);
            return;
        }

        spinlock_unlock(&rq->lock);
    }
}

/*
 * Move a ready thread that is neither queued nor running off rq, whose lock
 * the caller took with spinlock_lock_intr_save(flags), to an allowed CPU:
 * mark it in transit, release the lock, queue it there, restore interrupts
 * (preemption stays off until then, as queuing may preempt the caller).
 */
static void
thread_move(struct thread_runq *rq, struct thread *thread,
            unsigned long flags)
{
    __atomic_store_n(&thread->cpu, THREAD_CPU_TRANSIT, __ATOMIC_RELAXED);
    thread_preempt_disable();
    spinlock_unlock(&rq->lock);
    thread_enqueue(thread);
    cpu_intr_restore(flags);
    thread_preempt_enable();
}

/*
 * Decide what happens to the running thread when it leaves the CPU. Run
 * queue locked.
 */
static void
thread_put_prev(struct thread_runq *rq, struct thread *prev)
{
    if (prev == rq->idle) {
        return;
    }

    switch (prev->state) {
    case THREAD_RUNNING:
        if (READ_ONCE(prev->affinity) & (1ULL << rq->cpu)) {
            thread_runq_queue(rq, prev);
        } else {
            __atomic_store_n(&prev->cpu, THREAD_CPU_TRANSIT, __ATOMIC_RELAXED);
            rq->migrate = prev;
        }

        break;
    case THREAD_DEAD:
        rq->dead = prev;
        break;
    case THREAD_SLEEPING:
        break;
    }
}

/*
 * Complete a context switch in the thread switched to: release the run
 * queue lock the previous thread took, then finish its migration or exit.
 * Interrupts disabled.
 */
void
thread_switch_finish(void)
{
    struct thread_runq *rq = cpu_local_ptr(thread_runq);
    struct thread *migrate = rq->migrate;
    struct thread *dead = rq->dead;

    rq->migrate = NULL;
    rq->dead = NULL;
    spinlock_unlock(&rq->lock);

    if (migrate != NULL) {
        thread_enqueue(migrate);
    }

    if (dead != NULL) {
        /* The reference the thread held on itself while it ran. */
        thread_reap(dead);
    }
}

/*
 * Switch from prev to next. Run queue locked, interrupts disabled; returns
 * in prev once something switches back to it, possibly on another CPU.
 */
static void
thread_switch(struct thread_runq *rq, struct thread *prev,
              struct thread *next)
{
    struct cpu_head *head = (struct cpu_head *)percpu_local_base();
    uint64_t now = cpu_get_tsc();

    /*
     * Run time, before perfmon's switch: an operation that finds prev
     * unloaded reads its final total, one that finds next loaded (on its
     * CPU, after the switch) its slice's start. Only this CPU writes them;
     * relaxed (plain moves on x86): a remote reader is ordered by how it
     * learned the thread was off its CPU (a lock, an acquire), and
     * otherwise reads an estimate.
     *
     * on_cpu and last_cpu likewise: written here under the run queue
     * lock, read under it or, relaxed, as snapshots (thread_state_name,
     * thread_cpu).
     */
    __atomic_store_n(&prev->run_total,
                     prev->run_total + (now - prev->run_start),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&next->run_start, now, __ATOMIC_RELAXED);

    /* Software events of the thread leaving count before its unload. */
    pmu_soft_count(PMU_SOFT_EV_CSWITCH, 1);
    perfmon_td_switch(&prev->perfmon_td, &next->perfmon_td, now);

    __atomic_store_n(&prev->on_cpu, false, __ATOMIC_RELAXED);
    __atomic_store_n(&next->on_cpu, true, __ATOMIC_RELAXED);
    rq->current = next;
    head->thread = next;

    next->nr_switches++;

    if (next->last_cpu != rq->cpu) {
        __atomic_store_n(&next->last_cpu, rq->cpu, __ATOMIC_RELAXED);
        next->nr_migrations++;
        pmu_soft_count(PMU_SOFT_EV_MIGRATION, 1);
    }

    syscnt_inc(&rq->sc_switches);
    tcb_switch(&prev->tcb, &next->tcb);
}

/*
 * The scheduler entry: put the current thread back as its state says and
 * run the best ready thread. Run queue of the calling CPU locked (taken
 * with spinlock_lock), interrupts disabled; returns with the lock
 * released and interrupts still disabled.
 */
void
thread_schedule_locked(struct thread_runq *rq)
{
    struct thread *prev = rq->current;
    struct thread *next;

    thread_runq_set_resched(rq, false);
    thread_put_prev(rq, prev);
    next = thread_runq_pick(rq);

    if (next != prev) {
        thread_switch(rq, prev, next);
    }

    thread_switch_finish();
}

static void
thread_schedule(void)
{
    unsigned long flags = cpu_intr_save();
    struct thread_runq *rq;

    thread_preempt_disable();
    rq = cpu_local_ptr(thread_runq);
    spinlock_lock(&rq->lock);
    thread_schedule_locked(rq);
    thread_preempt_enable_no_resched();
    cpu_intr_restore(flags);
}

void
thread_preempt_enable(void)
{
    struct thread *self;

    barrier();
    self = thread_self();
    assert(self->preempt_level > 0);
    self->preempt_level--;

    if (self->preempt_level == 0 && cpu_intr_enabled()
        && thread_runq_resched_pending(cpu_local_ptr(thread_runq))) {
        thread_schedule();
    }
}

void
thread_preempt_check(void)
{
    if (thread_self()->preempt_level == 0
        && thread_runq_resched_pending(cpu_local_ptr(thread_runq))) {
        thread_schedule();
    }
}

void
thread_yield(void)
{
    thread_schedule();
}

void
thread_tick_intr(void)
{
    struct thread_runq *rq = cpu_local_ptr(thread_runq);
    struct thread *current = rq->current;

    /* Round robin: one tick per turn among threads of the same level. */
    spinlock_lock(&rq->lock);

    if (rq->ready_mask != 0
        && (31 - __builtin_clz(rq->ready_mask)) >= (int)current->priority) {
        thread_runq_set_resched(rq, true);
    }

    spinlock_unlock(&rq->lock);
}

void
thread_sleep(struct spinlock *interlock, unsigned long flags)
{
    struct thread *self = thread_self();
    struct thread_runq *rq;
    unsigned long ignored;

    (void)flags;
    assert(!cpu_intr_enabled());
    assert(spinlock_held(interlock));

    thread_preempt_disable();
    rq = cpu_local_ptr(thread_runq);
    spinlock_lock(&rq->lock);
    /* Under the run queue lock; lookups read it relaxed, as a hint. */
    __atomic_store_n(&self->state, THREAD_SLEEPING, __ATOMIC_RELAXED);
    spinlock_unlock(interlock);
    thread_schedule_locked(rq);
    thread_preempt_enable_no_resched();

    /* Interrupts stay disabled, as the caller's flags expect. */
    spinlock_lock_intr_save(interlock, &ignored);
}

void
thread_wakeup(struct thread *thread)
{
    struct thread_runq *rq;
    unsigned long flags;

    rq = thread_lock_runq(thread, &flags);

    if (thread->state != THREAD_SLEEPING) {
        spinlock_unlock_intr_restore(&rq->lock, flags);
        return;
    }

    /* A sleeping thread is off its CPU: the sleep held this lock until
     * the switch completed. */
    assert(!thread->on_cpu && !thread->on_rq);
    __atomic_store_n(&thread->state, THREAD_RUNNING, __ATOMIC_RELAXED);

    if (READ_ONCE(thread->affinity) & (1ULL << rq->cpu)) {
        thread_runq_add(rq, thread);
        spinlock_unlock_intr_restore(&rq->lock, flags);
        return;
    }

    thread_move(rq, thread, flags);
}

int
thread_set_affinity(struct thread *thread, uint64_t mask)
{
    struct thread_runq *rq;
    unsigned long flags;

    if ((mask & thread_online_mask()) == 0) {
        return EINVAL;
    }

    __atomic_store_n(&thread->affinity, mask, __ATOMIC_SEQ_CST);
    rq = thread_lock_runq(thread, &flags);

    if (mask & (1ULL << rq->cpu)) {
        spinlock_unlock_intr_restore(&rq->lock, flags);
    } else if (thread->on_rq) {
        /* Ready: move it now. */
        thread_runq_remove(rq, thread);
        thread_move(rq, thread, flags);
    } else {
        if (thread->on_cpu) {
            /* Running: its next reschedule migrates it; force one. */
            thread_runq_request_resched(rq);
        } else {
            /* Sleeping or dead: a wakeup picks an allowed CPU (a ready
             * thread is queued or running once cpu names a run queue). */
            assert(thread->state != THREAD_RUNNING);
        }

        spinlock_unlock_intr_restore(&rq->lock, flags);
    }

    /*
     * Restricting oneself returns on an allowed CPU. Allowed by the mask
     * in force, not by the argument: another thread may change it while
     * we move, and its mask is the one our reschedules follow.
     */
    while (thread == thread_self()
           && !(READ_ONCE(thread->affinity) & (1ULL << cpu_id()))) {
        thread_yield();
    }

    return 0;
}

void
thread_bootstrap(void)
{
    struct cpu_head *head = (struct cpu_head *)percpu_local_base();
    struct thread_runq *rq = cpu_local_ptr(thread_runq);
    struct thread *idle = cpu_local_ptr(thread_idle);
    unsigned int cpu = head->id;
    char name[THREAD_NAME_SIZE];

    snprintf(name, sizeof(name), "idle/%u", cpu);
    strlcpy(idle->name, name, sizeof(idle->name));
    idle->state = THREAD_RUNNING;
    idle->priority = THREAD_PRIO_IDLE;
    idle->affinity = 1ULL << cpu;
    idle->cpu = cpu;
    idle->last_cpu = cpu;
    idle->on_cpu = true;
    idle->refs = 1;
    /* Boot code runs with preemption disabled until it becomes idle. */
    idle->preempt_level = 1;
    list_node_init(&idle->rq_node);
    list_node_init(&idle->all_node);
    spinlock_init(&idle->join_lock);
    perfmon_td_init(&idle->perfmon_td);

    spinlock_init(&rq->lock);
    rq->cpu = cpu;
    rq->current = idle;
    rq->idle = idle;

    for (unsigned int i = 0; i < THREAD_NR_PRIOS; i++) {
        list_init(&rq->queues[i]);
    }

    head->thread = idle;
    idle->run_start = cpu_get_tsc();

    /* The boot context is running: its (empty) counters are loaded. */
    perfmon_td_load(&idle->perfmon_td);
}

void
thread_run_idle(void)
{
    struct thread_runq *rq = cpu_local_ptr(thread_runq);
    char name[32];

    snprintf(name, sizeof(name), "thread_switches/%u", rq->cpu);
    syscnt_register(&rq->sc_switches, name);

    thread_self()->preempt_level = 0;
    cpu_intr_enable();

    for (;;) {
        cpu_intr_disable();

        if (__atomic_load_n(&rq->nr_ready, __ATOMIC_RELAXED) != 0
            || thread_runq_resched_pending(rq)) {
            cpu_intr_enable();
            thread_schedule();
            continue;
        }

        /* sti; hlt: an interrupt arriving after the check wakes the hlt. */
        cpu_idle();
    }
}
