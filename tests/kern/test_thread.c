/*
 * Threads and the scheduler.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"

#define TEST_THREAD_MANY 64

/* Turns a target gets to leave set_affinity before it counts as stuck. */
#define TEST_THREAD_RESTRICT_TURNS 1000

static unsigned int test_thread_ran;

static void
test_thread_count(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&test_thread_ran, 1, __ATOMIC_RELAXED);
}

TEST_DEFINE(thread, create_and_join_many)
{
    struct thread *threads[TEST_THREAD_MANY];
    unsigned int alive = thread_nr_alive();

    test_thread_ran = 0;

    for (unsigned int i = 0; i < TEST_THREAD_MANY; i++) {
        threads[i] = test_thread_start("many", 0, test_thread_count, NULL);
    }

    for (unsigned int i = 0; i < TEST_THREAD_MANY; i++) {
        thread_join(threads[i]);
    }

    TEST_ASSERT_EQ(test_thread_ran, TEST_THREAD_MANY);
    /* Every structure is freed once its thread is joined. */
    TEST_ASSERT_EQ(thread_nr_alive(), alive);
}

TEST_DEFINE(thread, create_rejects_bad_attributes)
{
    struct thread_attr attr = { .name = "bad" };
    struct thread *thread = (struct thread *)0x1;
    unsigned int alive = thread_nr_alive();

    attr.priority = THREAD_PRIO_MAX + 1;
    TEST_ASSERT_EQ(thread_create(&thread, &attr, test_thread_count, NULL),
                   EINVAL);
    attr.priority = 0;
    attr.affinity = (cpu_count() < 64) ? (1ULL << cpu_count()) : 0;

    if (attr.affinity != 0) {
        TEST_ASSERT_EQ(thread_create(&thread, &attr, test_thread_count, NULL),
                       EINVAL);
    }

    attr.affinity = 0;
    TEST_ASSERT_EQ(thread_create(&thread, &attr, NULL, NULL), EINVAL);
    TEST_ASSERT(thread == (struct thread *)0x1);
    TEST_ASSERT_EQ(thread_nr_alive(), alive);
}

struct test_thread_pinned {
    unsigned int cpu;
    unsigned int wrong;
    unsigned int checks;
};

static void
test_thread_pinned_fn(void *arg)
{
    struct test_thread_pinned *p = arg;

    for (unsigned int i = 0; i < 200; i++) {
        p->wrong += (cpu_id() != p->cpu);
        p->checks++;

        if (i % 3 == 0) {
            thread_yield();
        } else if (i % 50 == 1) {
            thread_delay(1);
        }
    }
}

/* A pinned thread only ever observes its CPU, across yields and sleeps. */
TEST_DEFINE(thread, pinned_threads_stay_on_their_cpu)
{
    struct test_thread_pinned pinned[CPU_MAX] = { 0 };
    struct thread *threads[CPU_MAX];

    for (unsigned int i = 0; i < cpu_count(); i++) {
        pinned[i].cpu = i;
        threads[i] = test_thread_start("pinned", 1ULL << i,
                                       test_thread_pinned_fn, &pinned[i]);
    }

    for (unsigned int i = 0; i < cpu_count(); i++) {
        thread_join(threads[i]);
        TEST_ASSERT_EQ(pinned[i].checks, 200);
        TEST_ASSERT_EQ(pinned[i].wrong, 0);
    }
}

/* Restricting oneself returns on the new CPU, every time. */
TEST_DEFINE(thread, self_affinity_change_migrates)
{
    struct thread *self = thread_self();
    uint64_t migrations = self->nr_migrations;

    for (unsigned int round = 0; round < 3; round++) {
        for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
            TEST_ASSERT_EQ(thread_set_affinity(self, 1ULL << cpu), 0);
            TEST_ASSERT_EQ(cpu_id(), cpu);
            TEST_ASSERT_EQ(thread_cpu(self), cpu);
        }
    }

    TEST_ASSERT_EQ(thread_set_affinity(self, THREAD_AFFINITY_ALL), 0);

    if (cpu_count() > 1) {
        TEST_ASSERT_GE(self->nr_migrations, migrations + 3 * cpu_count() - 1);
    }

    TEST_ASSERT_EQ(thread_set_affinity(self, 0), EINVAL);
}

/*
 * A mask naming only CPUs that are not online is EINVAL and changes
 * nothing: a thread left with no allowed online CPU would have
 * thread_enqueue retry for good.
 */
TEST_DEFINE(thread, set_affinity_rejects_a_mask_with_no_online_cpu)
{
    struct thread *self = thread_self();
    uint64_t before = thread_affinity(self);
    uint64_t offline = 0;

    for (unsigned int i = 0; i < 64; i++) {
        if (!cpu_online(i)) {
            offline |= 1ULL << i;
        }
    }

    TEST_ASSERT(offline != 0);
    TEST_ASSERT_EQ(thread_set_affinity(self, offline), EINVAL);
    TEST_ASSERT_EQ(thread_affinity(self), before);
    TEST_ASSERT_EQ(thread_set_affinity(self, 0), EINVAL);
    TEST_ASSERT_EQ(thread_affinity(self), before);
}

struct test_thread_busy {
    volatile bool stop;
    volatile uint64_t loops;
    volatile unsigned int cpu;
};

static void
test_thread_busy_fn(void *arg)
{
    struct test_thread_busy *busy = arg;

    while (!busy->stop) {
        busy->cpu = cpu_id();
        busy->loops++;
    }
}

/* A running thread moved by another thread goes to its new CPU. */
TEST_DEFINE(thread, running_thread_moved_by_affinity)
{
    struct test_thread_busy busy = { 0 };
    struct thread *thread;

    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);
    thread = test_thread_start("busy", 1ULL << 1, test_thread_busy_fn,
                               &busy);

    for (unsigned int target = 1; target < cpu_count() + 1; target++) {
        unsigned int cpu = target % cpu_count();
        uint64_t loops;

        if (cpu == 0) {
            cpu = 1;    /* keep it off the test's CPU */
        }

        TEST_ASSERT_EQ(thread_set_affinity(thread, 1ULL << cpu), 0);

        while (thread_cpu(thread) != cpu) {
            thread_delay(1);
        }

        /*
         * The move may have come between the thread's two stores, cpu
         * then loops: the first increment seen can still follow the old
         * CPU's store. The second comes from a pass wholly on the new CPU.
         */
        loops = busy.loops;

        while (busy.loops < loops + 2) {
            cpu_pause();
        }

        TEST_ASSERT_EQ(busy.cpu, cpu);
    }

    busy.stop = true;
    thread_join(thread);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * What thread_delay guarantees, exactly: the tick count advances by at
 * least ticks, and the TSC by more than ticks - 1 tick periods (the TSC
 * read before the tick count was at most one period short of its next
 * tick).
 */
TEST_DEFINE(thread, delay_never_wakes_early)
{
    uint64_t period = clock_tsc_per_tick();

    for (uint64_t ticks = 1; ticks <= 5; ticks++) {
        uint64_t tsc = cpu_get_tsc();
        uint64_t start = clock_get_time();

        thread_delay(ticks);
        TEST_ASSERT_GE(clock_get_time() - start, ticks);
        TEST_ASSERT_GT(cpu_get_tsc() - tsc, (ticks - 1) * period);
        /* And it does wake: a generous bound for a loaded host. */
        TEST_ASSERT_LT(clock_get_time() - start, ticks + 100);
    }
}

/*
 * Two CPU-bound threads on one CPU both progress: the tick preempts.
 * Neither yields, so without preemption the second never runs. The test
 * waits on their progress (both run, then both move on) rather than for a
 * number of ticks: a loaded host can stall a vCPU past any short window.
 * Without preemption it hangs, which the runner reports as a timeout
 * after the last test that passed.
 */
TEST_DEFINE(thread, preemption_shares_a_cpu)
{
    struct test_thread_busy a = { 0 }, b = { 0 };
    unsigned int cpu = cpu_count() - 1;
    struct thread *ta, *tb;
    uint64_t a1, b1, sa, sb;

    ta = test_thread_start("busy-a", 1ULL << cpu, test_thread_busy_fn, &a);
    tb = test_thread_start("busy-b", 1ULL << cpu, test_thread_busy_fn, &b);

    while (a.loops == 0 || b.loops == 0) {
        thread_delay(1);
    }

    a1 = a.loops;
    b1 = b.loops;

    while (a.loops == a1 || b.loops == b1) {
        thread_delay(1);
    }

    /*
     * Both ran, then both ran again: on one CPU, with neither yielding
     * nor sleeping, one of them came back after the other had run, each
     * time switched in by a preemption (a plain read of a counter only
     * their CPU writes: a snapshot is enough).
     */
    sa = __atomic_load_n(&ta->nr_switches, __ATOMIC_RELAXED);
    sb = __atomic_load_n(&tb->nr_switches, __ATOMIC_RELAXED);
    a.stop = true;
    b.stop = true;
    thread_join(ta);
    thread_join(tb);
    TEST_ASSERT_GE(sa, 1);
    TEST_ASSERT_GE(sb, 1);
    TEST_ASSERT_GE(sa + sb, 3);
}

struct test_thread_yielders {
    unsigned int count;
    unsigned int arrived;
};

/*
 * Meet the peer first: a yield with no other thread ready does not
 * switch, and the first thread could otherwise finish before the second
 * one exists.
 */
static void
test_thread_yielder(void *arg)
{
    struct test_thread_yielders *y = arg;

    __atomic_fetch_add(&y->arrived, 1, __ATOMIC_SEQ_CST);

    while (__atomic_load_n(&y->arrived, __ATOMIC_SEQ_CST) < 2) {
        thread_yield();
    }

    for (unsigned int i = 0; i < y->count; i++) {
        thread_yield();
    }
}

/* Yielding to another ready thread switches each time. */
TEST_DEFINE(thread, switch_count_grows)
{
    struct test_thread_yielders y = { .count = 50 };
    unsigned int k = y.count;
    unsigned int cpu = cpu_count() - 1;
    struct thread *t1, *t2;

    t1 = test_thread_start("yield-1", 1ULL << cpu, test_thread_yielder, &y);
    t2 = test_thread_start("yield-2", 1ULL << cpu, test_thread_yielder, &y);
    thread_ref(t1);
    thread_ref(t2);
    thread_join(t1);
    thread_join(t2);
    /* Joined, but our extra references keep the structures readable. */
    TEST_ASSERT_GE(t1->nr_switches, k);
    TEST_ASSERT_GE(t2->nr_switches, k);
    thread_unref(t1);
    thread_unref(t2);
}

struct test_thread_mailbox {
    struct spinlock lock;
    struct thread *waiter;
    unsigned int value;
    bool full;
};

static void
test_thread_consumer(void *arg)
{
    struct test_thread_mailbox *box = arg;
    unsigned long flags;

    spinlock_lock_intr_save(&box->lock, &flags);

    for (unsigned int expected = 1; expected <= 20; expected++) {
        while (!box->full) {
            thread_sleep(&box->lock, flags);
        }

        TEST_ASSERT_EQ(box->value, expected);
        box->full = false;
    }

    spinlock_unlock_intr_restore(&box->lock, flags);
}

/* sleep/wakeup with an interlock loses no wakeup. */
TEST_DEFINE(thread, sleep_wakeup_handshake)
{
    struct test_thread_mailbox box = { .lock = SPINLOCK_INITIALIZER };
    struct thread *consumer;
    unsigned long flags;

    consumer = test_thread_start("consumer", 0, test_thread_consumer, &box);

    for (unsigned int i = 1; i <= 20; i++) {
        for (;;) {
            spinlock_lock_intr_save(&box.lock, &flags);

            if (!box.full) {
                break;
            }

            spinlock_unlock_intr_restore(&box.lock, flags);
            thread_yield();
        }

        box.value = i;
        box.full = true;
        thread_wakeup(consumer);
        spinlock_unlock_intr_restore(&box.lock, flags);
    }

    thread_join(consumer);
}

TEST_DEFINE(thread, lookup_by_name_takes_a_reference)
{
    struct test_thread_busy busy = { 0 };
    struct thread *thread, *found;

    thread = test_thread_start("lookup-me", 0, test_thread_busy_fn, &busy);
    found = thread_lookup("lookup-me");
    TEST_ASSERT(found == thread);
    TEST_ASSERT(thread_lookup("no-such-thread") == NULL);
    busy.stop = true;
    thread_join(thread);
    /* Our lookup reference keeps the exited thread's structure. */
    TEST_ASSERT_EQ(found->exited, true);
    thread_unref(found);
}

struct test_thread_target {
    volatile bool stop;
    volatile uint64_t loops;
};

static void
test_thread_target_main(void *arg)
{
    struct test_thread_target *t = arg;

    for (uint64_t i = 1; !t->stop; i++) {
        if (i % 1024 == 0) {
            thread_delay(1);
        } else {
            thread_yield();
        }

        t->loops = i;
    }
}

/* The changers' start line: all arrive, then the test sets end and go. */
struct test_thread_race {
    unsigned int arrived;
    bool go;
    uint64_t end;           /* clock tick to stop at, set before go */
};

struct test_thread_changer {
    struct thread *targets[2];
    struct test_thread_race *race;
    uint64_t seed;
};

static void
test_thread_changer_main(void *arg)
{
    struct test_thread_changer *c = arg;
    uint64_t online = (cpu_count() == 64) ? ~0ULL
                                          : (1ULL << cpu_count()) - 1;
    uint64_t end;

    __atomic_fetch_add(&c->race->arrived, 1, __ATOMIC_SEQ_CST);

    while (!__atomic_load_n(&c->race->go, __ATOMIC_ACQUIRE)) {
        thread_yield();
    }

    end = c->race->end;

    do {
        uint64_t r = test_rand(&c->seed);
        struct thread *target = c->targets[(r >> 4) % 8 == 0];
        uint64_t mask = (r >> 8) & online;

        /* Mostly single CPUs: each change is likely a move. */
        if (mask == 0 || r % 4 != 0) {
            mask = 1ULL << ((r >> 40) % cpu_count());
        }

        TEST_ASSERT_EQ(thread_set_affinity(target, mask), 0);

        /* Spurious wakeups are allowed: they race with the moves. */
        if (r % 5 == 0) {
            thread_wakeup(target);
        }

        if (r % 101 == 0) {
            thread_yield();
        }
    } while (clock_get_time() < end);
}

/*
 * For two seconds, threads on every CPU change the affinity of two targets
 * at once, mostly to single CPUs, while the targets yield, sleep and wake:
 * run queues stay consistent (no assertion, no crash), the targets keep
 * running, and a final single-CPU mask lands each target on that CPU.
 * The two seconds start once every changer runs, and each changes at
 * least once: at 64 vCPUs on a loaded host a new thread may wait seconds
 * for its vCPU, and a window counted from its creation could close first.
 */
TEST_DEFINE(thread, concurrent_affinity_changes_of_other_threads)
{
    struct test_thread_target targets[2] = { { 0 }, { 0 } };
    struct test_thread_changer changers[CPU_MAX];
    struct thread *target_threads[2], *changer_threads[CPU_MAX];
    struct test_thread_race race = { 0 };
    unsigned int last = cpu_count() - 1;

    test_require_cpus(2);

    for (unsigned int i = 0; i < 2; i++) {
        target_threads[i] = test_thread_start("aff-target", 0,
                                              test_thread_target_main,
                                              &targets[i]);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        changers[c].targets[0] = target_threads[0];
        changers[c].targets[1] = target_threads[1];
        changers[c].race = &race;
        changers[c].seed = 0xaff1 + c;
        changer_threads[c] = test_thread_start("aff-changer", 0,
                                               test_thread_changer_main,
                                               &changers[c]);
    }

    while (__atomic_load_n(&race.arrived, __ATOMIC_SEQ_CST) < cpu_count()) {
        thread_delay(1);
    }

    race.end = clock_get_time() + 200;
    __atomic_store_n(&race.go, true, __ATOMIC_RELEASE);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        thread_join(changer_threads[c]);
    }

    for (unsigned int i = 0; i < 2; i++) {
        uint64_t loops;

        TEST_ASSERT_EQ(thread_set_affinity(target_threads[i], 1ULL << last),
                       0);
        loops = targets[i].loops;

        /* It still runs, and it runs on the CPU its mask leaves it. */
        while (targets[i].loops < loops + 10) {
            thread_delay(1);
        }

        TEST_ASSERT_EQ(thread_cpu(target_threads[i]), last);
        targets[i].stop = true;
        thread_join(target_threads[i]);
    }
}

struct test_thread_restrict {
    struct thread *target;      /* set once the target exists */
    int error;                  /* what the target's set_affinity returned */
    int change_error;
    unsigned int cpu;           /* where the target's set_affinity returned */
    uint64_t affinity;          /* its mask then */
    volatile bool changed;      /* the changer's set_affinity returned */
    volatile bool returned;     /* the target's set_affinity returned */
};

/* Starts on CPU 0 and restricts itself to CPU 1. */
static void
test_thread_restrict_self(void *arg)
{
    struct test_thread_restrict *r = arg;

    r->error = thread_set_affinity(thread_self(), 1ULL << 1);
    r->cpu = cpu_id();
    r->affinity = thread_affinity(thread_self());
    r->returned = true;
}

/*
 * Runs on CPU 1 above the target's priority and never yields: once the
 * target has published its mask for CPU 1, it cannot run there before
 * this thread has sent it back to CPU 0.
 */
static void
test_thread_restrict_changer(void *arg)
{
    struct test_thread_restrict *r = arg;
    struct thread *target;

    while ((target = READ_ONCE(r->target)) == NULL
           || thread_affinity(target) != (1ULL << 1)) {
        cpu_pause();
    }

    r->change_error = thread_set_affinity(target, 1ULL << 0);
    r->changed = true;
}

/*
 * A thread restricts itself to CPU 1 while another thread, between its
 * mask update and its arrival on CPU 1, restricts it to CPU 0: its
 * set_affinity returns, on CPU 0, the mask the last change set. The test
 * thread shares CPU 0 with the target at its priority, so every yield
 * of the test lets the target run once: a target still yielding after
 * many turns waits for a CPU its mask no longer allows.
 */
TEST_DEFINE(thread, self_restriction_ends_on_a_concurrent_change)
{
    struct thread_attr attr = {
        .name = "restrict-changer",
        .priority = THREAD_PRIO_DEFAULT + 1,
        .affinity = 1ULL << 1,
    };
    struct test_thread_restrict r = { 0 };
    struct thread *changer, *target;
    unsigned int turns;

    test_require_cpus(2);
    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), 1ULL << 0), 0);
    TEST_ASSERT_EQ(thread_create(&changer, &attr, test_thread_restrict_changer,
                                 &r), 0);
    target = test_thread_start("restrict-self", 1ULL << 0,
                               test_thread_restrict_self, &r);
    WRITE_ONCE(r.target, target);

    while (!r.changed) {
        thread_yield();
    }

    thread_join(changer);

    for (turns = 0; !r.returned && turns < TEST_THREAD_RESTRICT_TURNS;
         turns++) {
        thread_yield();
    }

    if (!r.returned) {
        /* Let it reach the CPU it waits for, so it can be joined. */
        thread_set_affinity(target, 1ULL << 1);
    }

    thread_join(target);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_LT(turns, TEST_THREAD_RESTRICT_TURNS);
    TEST_ASSERT_EQ(r.change_error, 0);
    TEST_ASSERT_EQ(r.error, 0);
    TEST_ASSERT_EQ(r.affinity, 1ULL << 0);
    TEST_ASSERT_EQ(r.cpu, 0);
}

/*
 * What a prober saw of a thread being created, from inside
 * thread_create's window between setup and queuing.
 */
struct test_thread_publish {
    struct thread *shared;      /* thread_create's *threadp */
    unsigned int cpu;           /* the creator's and the prober's */
    bool by_name;               /* thread_lookup found it */
    bool by_id;                 /* thread_lookup_id found it */
    bool by_pointer;            /* *threadp was set */
    bool in_list;               /* thread_for_each saw it */
    bool done;
};

static struct test_thread_publish *test_thread_publish;

static void
test_thread_publish_scan(struct thread *thread, void *arg)
{
    struct test_thread_publish *p = arg;

    if (strcmp(thread_name(thread), "publish-me") == 0) {
        p->in_list = true;
    }
}

/*
 * Above the creator's priority on its CPU: whatever it finds, it wakes
 * and moves. A thread still in transit makes both spin until it lands,
 * which it cannot while this thread holds the creator's CPU.
 */
static void
test_thread_publish_probe(void *arg)
{
    struct test_thread_publish *p = arg;
    struct thread *found, *shared;

    found = thread_lookup("publish-me");

    if (found != NULL) {
        p->by_name = true;
        thread_wakeup(found);
        thread_set_affinity(found, THREAD_AFFINITY_ALL);
        p->by_id = (thread_lookup_id(thread_id(found)) != NULL);
        thread_unref(found);
    }

    shared = __atomic_load_n(&p->shared, __ATOMIC_ACQUIRE);

    if (shared != NULL) {
        p->by_pointer = true;
        thread_wakeup(shared);
    }

    thread_for_each(test_thread_publish_scan, p);
    __atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
}

/* Called once, in the creation of "publish-me": runs the prober there. */
static void
test_thread_publish_hook(void)
{
    struct test_thread_publish *p = test_thread_publish;
    struct thread_attr attr = {
        .name = "publish-probe",
        .priority = THREAD_PRIO_MAX,
        .affinity = 1ULL << p->cpu,
    };
    struct thread *prober;

    thread_set_create_hook(NULL);

    if (thread_create(&prober, &attr, test_thread_publish_probe, p) != 0) {
        return;
    }

    /* It preempts us at once; yield in case its wakeup is pending. */
    while (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
        thread_yield();
    }

    thread_join(prober);
}

/*
 * A thread is published - on the thread list, to thread_lookup and
 * thread_lookup_id, through *threadp - only once it is queued: a
 * higher-priority thread on the creator's CPU, run from inside
 * thread_create before the queuing, finds nothing. Before, it found the
 * thread in transit and spun in thread_wakeup for good (the run hung).
 */
TEST_DEFINE(thread, create_publishes_only_once_queued)
{
    struct test_thread_publish p = { .cpu = cpu_count() - 1 };
    struct test_thread_busy busy = { 0 };
    struct thread_attr attr = {
        .name = "publish-me",
        .affinity = 1ULL << p.cpu,
    };
    unsigned int alive = thread_nr_alive();
    struct thread *found;

    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), 1ULL << p.cpu), 0);
    test_thread_publish = &p;
    thread_set_create_hook(test_thread_publish_hook);
    TEST_ASSERT_EQ(thread_create(&p.shared, &attr, test_thread_busy_fn,
                                 &busy), 0);
    thread_set_create_hook(NULL);
    TEST_ASSERT(p.done);
    TEST_ASSERT(!p.by_name);
    TEST_ASSERT(!p.by_id);
    TEST_ASSERT(!p.by_pointer);
    TEST_ASSERT(!p.in_list);

    /* Once thread_create returns, the thread is there to find. */
    found = thread_lookup("publish-me");
    TEST_ASSERT(found == p.shared);
    thread_wakeup(found);
    thread_unref(found);
    TEST_ASSERT_EQ(thread_nr_alive(), alive + 1);
    busy.stop = true;
    thread_join(p.shared);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

#define TEST_THREAD_JOIN_ROUNDS 20

struct test_thread_joiner {
    bool go;                    /* the joiner is counted: start */
    unsigned int target_cpu;
    unsigned int rounds;        /* joins whose count matched */
    unsigned int before;        /* at the first mismatch */
    unsigned int after;
};

static void
test_thread_nothing(void *arg)
{
    (void)arg;
}

/*
 * Above its targets' priority: its wakeup by the target's exit preempts
 * whatever runs on their CPU when that is its own.
 */
static void
test_thread_joiner_fn(void *arg)
{
    struct test_thread_joiner *j = arg;
    struct thread_attr attr = {
        .name = "join-target",
        .affinity = 1ULL << j->target_cpu,
    };

    /* It may run before thread_create has put it on the list. */
    while (!__atomic_load_n(&j->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    for (unsigned int i = 0; i < TEST_THREAD_JOIN_ROUNDS; i++) {
        unsigned int before = thread_nr_alive();
        struct thread *target;
        unsigned int after;

        if (thread_create(&target, &attr, test_thread_nothing, NULL) != 0) {
            return;
        }

        thread_join(target);
        after = thread_nr_alive();

        if (after != before) {
            j->before = before;
            j->after = after;
            return;
        }

        j->rounds++;
    }
}

/*
 * thread_join returns once the joined thread's structure is freed:
 * thread_nr_alive() right after it is what it was before the create, for
 * a joiner of higher priority on the target's CPU (woken by the exit, it
 * used to run before the exiting thread had switched away and dropped its
 * own reference: one more structure than before, every round) and on
 * another CPU.
 */
TEST_DEFINE(thread, join_returns_after_the_structure_is_freed)
{
    unsigned int last = cpu_count() - 1;

    for (unsigned int k = 0; k < ((cpu_count() > 1) ? 2 : 1); k++) {
        struct test_thread_joiner j = {
            .target_cpu = (k == 0) ? last : 0,
        };
        struct thread_attr attr = {
            .name = "joiner",
            .priority = THREAD_PRIO_MAX,
            .affinity = 1ULL << last,
        };
        struct thread *joiner;

        TEST_ASSERT_EQ(thread_create(&joiner, &attr, test_thread_joiner_fn,
                                     &j), 0);
        __atomic_store_n(&j.go, true, __ATOMIC_RELEASE);
        thread_join(joiner);
        TEST_ASSERT_EQ(j.after, j.before);
        TEST_ASSERT_EQ(j.rounds, TEST_THREAD_JOIN_ROUNDS);
    }
}
