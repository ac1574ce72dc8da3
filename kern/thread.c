/*
 * Threads: their lifecycle and registry. thread_create() allocates a
 * thread and its stack and queues it (the first switch to it runs
 * thread_main), thread_exit() marks it dead for the scheduler, which drops
 * the reference it held on itself once it is off its CPU; the memory goes
 * with the last reference. Every thread structure not yet freed is on one
 * list, for lookups, the shell and leak checks. Also join and
 * thread_delay, over thread_sleep and thread_wakeup.
 *
 * The run queues, the context switch and moving threads between CPUs are
 * in thread_sched.c; thread_i.h holds what the two files share.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/kmem.h>
#include <kern/list.h>
#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/perfmon_td.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <kern/thread_i.h>
#include <kern/timer.h>
#include <kern/vm_page.h>
#include <machine/cpu.h>
#include <machine/tcb.h>

/* The last thread id given; idle threads have 0. */
static uint32_t thread_last_id;

/* Every thread structure not yet freed, for the shell and leak checks. */
static struct spinlock thread_list_lock = SPINLOCK_INITIALIZER;
static struct list thread_list = LIST_INITIALIZER(thread_list);
static unsigned int thread_nr_structs;

static unsigned int thread_next_cpu;    /* round robin for new threads */

/* thread_set_create_hook's function, or NULL. */
static void (*thread_create_hook)(void);

void
thread_set_create_hook(void (*fn)(void))
{
    /* Release: what the test set up for fn is visible to its callers. */
    __atomic_store_n(&thread_create_hook, fn, __ATOMIC_RELEASE);
}

static void
thread_free(struct thread *thread)
{
    unsigned long flags;

    assert(perfmon_td_unused(&thread->perfmon_td));

    /*
     * thread_reap drops the thread's own reference under the join lock
     * and may still be releasing it: wait for it to be done with the
     * structure.
     */
    spinlock_lock_intr_save(&thread->join_lock, &flags);
    spinlock_unlock_intr_restore(&thread->join_lock, flags);

    spinlock_lock_intr_save(&thread_list_lock, &flags);
    list_remove(&thread->all_node);
    /* Under the list lock; thread_nr_alive reads it without. */
    __atomic_store_n(&thread_nr_structs, thread_nr_structs - 1,
                     __ATOMIC_RELAXED);
    spinlock_unlock_intr_restore(&thread_list_lock, flags);

    vm_page_free(thread->stack, THREAD_STACK_ORDER);
    kmem_free(thread);
}

void
thread_ref(struct thread *thread)
{
    unsigned int prev = __atomic_fetch_add(&thread->refs, 1,
                                           __ATOMIC_RELAXED);

    assert(prev != 0);
}

void
thread_unref(struct thread *thread)
{
    unsigned int prev = __atomic_fetch_sub(&thread->refs, 1,
                                           __ATOMIC_ACQ_REL);

    assert(prev != 0);

    if (prev == 1) {
        thread_free(thread);
    }
}

/* First function of every new thread. */
static void
thread_main(void)
{
    struct thread *self;

    /*
     * The switch to us left the run queue locked; thread_create set the
     * preemption level to what a thread resuming in thread_schedule has.
     */
    thread_switch_finish();
    assert(thread_preempt_level() == 1);
    cpu_intr_enable();

    /* Takes a reschedule the switch's follow-up asked for (a wakeup). */
    thread_preempt_enable();

    self = thread_self();
    self->fn(self->arg);
    thread_exit();
}

int
thread_create(struct thread **threadp, const struct thread_attr *attr,
              void (*fn)(void *arg), void *arg)
{
    unsigned int priority = THREAD_PRIO_DEFAULT;
    uint64_t affinity = THREAD_AFFINITY_ALL;
    void (*hook)(void);
    struct thread *thread;
    unsigned long flags;
    int error;

    if (fn == NULL) {
        return EINVAL;
    }

    if (attr != NULL && attr->priority != 0) {
        priority = attr->priority;
    }

    if (attr != NULL && attr->affinity != 0) {
        affinity = attr->affinity;
    }

    if (priority < THREAD_PRIO_MIN || priority > THREAD_PRIO_MAX
        || (affinity & thread_online_mask()) == 0) {
        return EINVAL;
    }

    thread = kmem_zalloc(sizeof(*thread));

    if (thread == NULL) {
        return ENOMEM;
    }

    thread->stack = vm_page_alloc(THREAD_STACK_ORDER);

    if (thread->stack == NULL) {
        kmem_free(thread);
        return ENOMEM;
    }

    strlcpy(thread->name, (attr != NULL && attr->name != NULL)
                          ? attr->name : "thread", sizeof(thread->name));
    thread->id = __atomic_add_fetch(&thread_last_id, 1, __ATOMIC_RELAXED);
    thread->priority = priority;
    thread->affinity = affinity;
    thread->state = THREAD_RUNNING;
    thread->preempt_level = 2;
    thread->fn = fn;
    thread->arg = arg;
    /*
     * Its own and the caller's; without threadp, the creator's until the
     * thread is on the list (it may have run and exited by then).
     */
    thread->refs = 2;
    list_node_init(&thread->rq_node);
    spinlock_init(&thread->join_lock);
    perfmon_td_init(&thread->perfmon_td);
    tcb_init(&thread->tcb, (char *)thread->stack + THREAD_STACK_SIZE,
             thread_main);

    /* Spread new threads over their allowed CPUs. */
    thread->cpu = THREAD_CPU_TRANSIT;
    thread->last_cpu = __atomic_fetch_add(&thread_next_cpu, 1,
                                          __ATOMIC_RELAXED) % cpu_count();
    thread->last_cpu = thread_pick_cpu(thread);

    /* Its creator's inherited events count it from its first instruction. */
    error = perfmon_td_create(thread_self(), thread);

    if (error) {
        vm_page_free(thread->stack, THREAD_STACK_ORDER);
        kmem_free(thread);
        return error;
    }

    hook = __atomic_load_n(&thread_create_hook, __ATOMIC_ACQUIRE);

    if (hook != NULL) {
        hook();
    }

    /* Preemption off until interrupts are back: it may preempt us. */
    thread_preempt_disable();
    flags = cpu_intr_save();
    thread_enqueue(thread);
    cpu_intr_restore(flags);
    thread_preempt_enable();

    /*
     * Published only now that it is queued: whoever finds it (lookup,
     * *threadp) finds it owned by a run queue, not in transit - waking or
     * moving a thread in transit spins until it lands, which it never
     * would if the spinner kept the creator's CPU.
     */
    spinlock_lock_intr_save(&thread_list_lock, &flags);
    list_insert_tail(&thread_list, &thread->all_node);
    __atomic_store_n(&thread_nr_structs, thread_nr_structs + 1,
                     __ATOMIC_RELAXED);
    spinlock_unlock_intr_restore(&thread_list_lock, flags);

    if (threadp != NULL) {
        *threadp = thread;
    } else {
        thread_unref(thread);
    }

    return 0;
}

void
thread_exit(void)
{
    struct thread *self = thread_self();
    struct thread_runq *rq;
    unsigned long flags;

    assert(self != cpu_local_ptr(thread_runq)->idle);

    /*
     * Release: the thread's last writes before it ends are visible to
     * whoever sees exited (thread_exited, acquire). The joiner waits for
     * released, which thread_reap sets once we are off the CPU.
     */
    spinlock_lock_intr_save(&self->join_lock, &flags);
    __atomic_store_n(&self->exited, true, __ATOMIC_RELEASE);
    spinlock_unlock_intr_restore(&self->join_lock, flags);

    cpu_intr_disable();
    thread_preempt_disable();
    rq = cpu_local_ptr(thread_runq);
    spinlock_lock(&rq->lock);
    __atomic_store_n(&self->state, THREAD_DEAD, __ATOMIC_RELAXED);
    thread_schedule_locked(rq);
    panic("thread: dead thread %s was scheduled", self->name);
}

/*
 * Drop the reference a dead thread held on itself, now that it is off its
 * CPU, then tell its joiner. Both under the join lock, so that a joiner
 * that sees released knows the reference is gone (its own may be the
 * last), and a holder whose unref frees the structure meanwhile waits in
 * thread_free for this to unlock. Interrupts disabled.
 */
void
thread_reap(struct thread *thread)
{
    unsigned int prev;

    /* Its shares of inherited events, final now that it is unloaded. */
    perfmon_td_exit(thread);

    spinlock_lock(&thread->join_lock);
    prev = __atomic_fetch_sub(&thread->refs, 1, __ATOMIC_ACQ_REL);
    assert(prev != 0);

    if (prev == 1) {
        /* No other reference, so no joiner, and none can come. */
        spinlock_unlock(&thread->join_lock);
        thread_free(thread);
        return;
    }

    /* Read by the joiner under this lock: the lock orders it. */
    thread->released = true;

    if (thread->joiner != NULL) {
        thread_wakeup(thread->joiner);
    }

    spinlock_unlock(&thread->join_lock);
}

void
thread_join(struct thread *thread)
{
    unsigned long flags;

    assert(thread != thread_self());

    spinlock_lock_intr_save(&thread->join_lock, &flags);
    assert(thread->joiner == NULL);
    thread->joiner = thread_self();

    while (!thread->released) {
        thread_sleep(&thread->join_lock, flags);
    }

    spinlock_unlock_intr_restore(&thread->join_lock, flags);

    /* The last reference unless a lookup holds one: freed here. */
    thread_unref(thread);
}

struct thread_delay {
    struct spinlock lock;
    struct thread *thread;
    bool expired;
};

static void
thread_delay_expire(struct timer *timer)
{
    struct thread_delay *delay = timer_arg(timer);

    spinlock_lock(&delay->lock);
    delay->expired = true;
    thread_wakeup(delay->thread);
    spinlock_unlock(&delay->lock);
}

void
thread_delay(uint64_t ticks)
{
    struct thread_delay delay;
    struct timer timer;
    unsigned long flags;

    spinlock_init(&delay.lock);
    delay.thread = thread_self();
    delay.expired = false;
    timer_init(&timer, thread_delay_expire, &delay, TIMER_CPU_ANY);

    spinlock_lock_intr_save(&delay.lock, &flags);
    timer_schedule(&timer, timer_expiry_after(clock_get_time(), ticks));

    while (!delay.expired) {
        thread_sleep(&delay.lock, flags);
    }

    spinlock_unlock_intr_restore(&delay.lock, flags);

    /* The handler may still be returning: it must be done with the timer. */
    timer_cancel(&timer);
}

unsigned int
thread_cpu(const struct thread *thread)
{
    /* A snapshot, stale as soon as read: relaxed (thread_switch). */
    return __atomic_load_n(&thread->last_cpu, __ATOMIC_RELAXED);
}

/* Take a reference unless the last one is already gone. */
static bool
thread_ref_live(struct thread *thread)
{
    unsigned int refs = __atomic_load_n(&thread->refs, __ATOMIC_RELAXED);

    while (refs != 0) {
        if (__atomic_compare_exchange_n(&thread->refs, &refs, refs + 1, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            return true;
        }
    }

    return false;
}

/* The first live thread that match accepts, referenced, or NULL. */
static struct thread *
thread_lookup_match(bool (*match)(const struct thread *thread,
                                  const void *key),
                    const void *key)
{
    struct thread *found = NULL;
    unsigned long flags;
    struct list *node;

    spinlock_lock_intr_save(&thread_list_lock, &flags);

    list_for_each(&thread_list, node) {
        struct thread *thread = list_entry(node, struct thread, all_node);

        /* state: relaxed, a hint; thread_ref_live decides. */
        if (match(thread, key)
            && __atomic_load_n(&thread->state, __ATOMIC_RELAXED)
               != THREAD_DEAD
            && thread_ref_live(thread)) {
            found = thread;
            break;
        }
    }

    spinlock_unlock_intr_restore(&thread_list_lock, flags);
    return found;
}

static bool
thread_name_matches(const struct thread *thread, const void *name)
{
    return strcmp(thread->name, name) == 0;
}

static bool
thread_id_matches(const struct thread *thread, const void *id)
{
    return thread->id == *(const uint32_t *)id;
}

struct thread *
thread_lookup(const char *name)
{
    return thread_lookup_match(thread_name_matches, name);
}

struct thread *
thread_lookup_id(uint32_t id)
{
    return thread_lookup_match(thread_id_matches, &id);
}

void
thread_for_each(void (*fn)(struct thread *thread, void *arg), void *arg)
{
    unsigned long flags;
    struct list *node;

    spinlock_lock_intr_save(&thread_list_lock, &flags);

    list_for_each(&thread_list, node) {
        fn(list_entry(node, struct thread, all_node), arg);
    }

    spinlock_unlock_intr_restore(&thread_list_lock, flags);
}

unsigned int
thread_nr_alive(void)
{
    /*
     * A count: a leak check reads it after its joins, whose locks order
     * the frees before it; relaxed is enough.
     */
    return __atomic_load_n(&thread_nr_structs, __ATOMIC_RELAXED);
}

const char *
thread_state_name(const struct thread *thread)
{
    /* A snapshot for the shell, without the run queue lock: relaxed. */
    if (__atomic_load_n(&thread->on_cpu, __ATOMIC_RELAXED)) {
        return "running";
    }

    switch (__atomic_load_n(&thread->state, __ATOMIC_RELAXED)) {
    case THREAD_RUNNING:
        return "ready";
    case THREAD_SLEEPING:
        return "sleeping";
    default:
        return "dead";
    }
}

/* The arch handles the reschedule interrupt from boot on (machine/ipi.h). */
static int
thread_setup(void)
{
    return 0;
}

INIT_OP_DEFINE(thread_setup,
               INIT_OP_DEP(kmem_setup, true),
               INIT_OP_DEP(syscnt_setup, true));
