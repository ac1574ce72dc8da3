/*
 * perfmon: synchronizations that race the overflow they should count.
 *
 * Each test builds one interleaving deterministically with the software
 * PMU at a narrow width: a counter wraps while interrupts are disabled, so
 * its overflow interrupt is pending when perfmon brings the counter up to
 * date (a read, a detach, a context switch, a cross-CPU call). Emitting
 * exactly 2^width units brings the raw value back where it was: only the
 * pending overflow tells that anything was counted. Also here: the polled
 * rate contract of the software PMU, and the lost-wrap accounting that
 * makes any breach of it visible.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/spinlock.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <machine/trap.h>

#include "test_util.h"

static uint64_t
test_sync_wrap(void)
{
    return 1ULL << pmu_soft_width();
}

static void
test_sync_require_narrow_intr(void)
{
    if (pmu_soft_width() == 64 || !pmu_soft_intr_mode()) {
        test_skip("needs narrow counters with the overflow interrupt");
    }

    /* An NMI is not held back by disabled interrupts. */
    if (pmu_soft_nmi_mode()) {
        test_skip("needs the maskable overflow interrupt (perfmon.pmi=irq)");
    }
}

static void
test_sync_attach_self(struct perfmon_event *event, unsigned int channel)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, PMU_SOFT_EV_EMIT + channel,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(event, thread_self()), 0);
}

static void
test_sync_attach_cpu(struct perfmon_event *event, unsigned int channel,
                     unsigned int cpu)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, PMU_SOFT_EV_EMIT + channel,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(event, cpu), 0);
}

/*
 * A wrap pending behind disabled interrupts is counted by a local read
 * and by a detach (which stops the counter, dropping the interrupt), and
 * reaches the CPU event sharing the slot: the interrupt itself, taken
 * afterwards, finds nothing left to report.
 */
TEST_DEFINE(perfmon, pending_wrap_counted_by_read_and_detach)
{
    struct perfmon_event tev, cev;
    uint64_t wrap, read1, final, intrs, lost;
    unsigned long flags;
    unsigned int c;

    test_sync_require_narrow_intr();
    wrap = test_sync_wrap();
    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    c = cpu_id();
    test_sync_attach_self(&tev, 5);
    test_sync_attach_cpu(&cev, 5, c);
    intrs = pmu_soft_nr_intrs(c);
    lost = pmu_soft_nr_lost(c);

    flags = cpu_intr_save();
    pmu_soft_emit_channel(5, wrap);
    read1 = perfmon_event_read(&tev);
    pmu_soft_emit_channel(5, wrap);
    TEST_ASSERT_EQ(perfmon_event_detach(&tev), 0);
    cpu_intr_restore(flags);

    TEST_ASSERT_EQ(read1, wrap);
    TEST_ASSERT_EQ(perfmon_event_get(&tev, &final), 0);
    TEST_ASSERT_EQ(final, 2 * wrap);
    TEST_ASSERT_EQ(perfmon_event_read(&cev), 2 * wrap);
    TEST_ASSERT_EQ(pmu_soft_nr_intrs(c), intrs);
    TEST_ASSERT_EQ(perfmon_event_detach(&cev), 0);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

struct test_sync_pair {
    struct perfmon_event ev;
    volatile bool *wrapped;     /* set by a before it switches to b */
    volatile unsigned int *ready;
    uint64_t count;
    bool switched;              /* a: the yield did switch it out */
};

/* a: wrap the counter with interrupts off, then yield to b. */
static void
test_sync_switch_a(void *arg)
{
    struct test_sync_pair *p = arg;
    unsigned long flags;
    uint64_t switches;

    test_sync_attach_self(&p->ev, 6);
    __atomic_fetch_add(p->ready, 1, __ATOMIC_SEQ_CST);

    while (__atomic_load_n(p->ready, __ATOMIC_SEQ_CST) < 2) {
        thread_yield();
    }

    flags = cpu_intr_save();
    switches = thread_self()->nr_switches;
    pmu_soft_emit_channel(6, test_sync_wrap());
    *p->wrapped = true;
    thread_yield();     /* b is ready: this switches with the wrap pending */
    p->switched = thread_self()->nr_switches != switches;
    cpu_intr_restore(flags);
    p->count = perfmon_event_read(&p->ev);
    TEST_ASSERT_EQ(perfmon_event_detach(&p->ev), 0);
}

/* b: wait for a's wrap; the interrupt is taken here, after b loaded. */
static void
test_sync_switch_b(void *arg)
{
    struct test_sync_pair *p = arg;

    test_sync_attach_self(&p->ev, 6);
    __atomic_fetch_add(p->ready, 1, __ATOMIC_SEQ_CST);

    while (!*p->wrapped) {
        thread_yield();
    }

    p->count = perfmon_event_read(&p->ev);
    TEST_ASSERT_EQ(perfmon_event_detach(&p->ev), 0);
}

/*
 * A thread switched out with a wrap pending is credited that wrap at its
 * unload; the next thread, loaded on the same slot (kept running by a CPU
 * event) before the interrupt is taken, is credited nothing.
 */
TEST_DEFINE(perfmon, pending_wrap_credited_to_the_thread_switched_out)
{
    volatile bool wrapped = false;
    volatile unsigned int ready = 0;
    struct test_sync_pair a = { .wrapped = &wrapped, .ready = &ready };
    struct test_sync_pair b = { .wrapped = &wrapped, .ready = &ready };
    unsigned int c = cpu_count() - 1;
    struct perfmon_event cev;
    struct thread *ta, *tb;
    uint64_t lost;

    test_sync_require_narrow_intr();
    lost = pmu_soft_nr_lost(c);
    test_sync_attach_cpu(&cev, 6, c);
    ta = test_thread_start("wrap-a", 1ULL << c, test_sync_switch_a, &a);
    tb = test_thread_start("wrap-b", 1ULL << c, test_sync_switch_b, &b);
    thread_join(ta);
    thread_join(tb);
    TEST_ASSERT(a.switched);
    TEST_ASSERT_EQ(a.count, test_sync_wrap());
    TEST_ASSERT_EQ(b.count, 0);
    TEST_ASSERT_EQ(perfmon_event_read(&cev), test_sync_wrap());
    TEST_ASSERT_EQ(perfmon_event_detach(&cev), 0);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
}

/* The operations a remote caller makes while the target holds a wrap. */
enum test_sync_remote_op {
    TEST_SYNC_READ_CPU,
    TEST_SYNC_READ_THREAD,
    TEST_SYNC_DETACH_THREAD,
    TEST_SYNC_DETACH_CPU,
    TEST_SYNC_NR_OPS,
};

struct test_sync_target {
    struct perfmon_event tev;
    volatile unsigned int round;    /* set by the caller: go */
    volatile unsigned int wrapped;  /* set by the target: wrap pending */
    volatile bool attached;
};

/*
 * On the target CPU, each round: wrap the counter with interrupts off,
 * then hold them off until the caller's cross-CPU call is requested too.
 * The call's vector has the higher priority, so it runs first, with the
 * software PMU's interrupt still pending.
 */
static void
test_sync_target_main(void *arg)
{
    struct test_sync_target *t = arg;

    test_sync_attach_self(&t->tev, 7);
    t->attached = true;

    for (unsigned int round = 1; round <= TEST_SYNC_NR_OPS; round++) {
        unsigned long flags;

        while (t->round < round) {
            cpu_pause();
        }

        flags = cpu_intr_save();
        pmu_soft_emit_channel(7, test_sync_wrap());
        t->wrapped = round;

        while (!lapic_intr_requested(TRAP_XCALL)) {
            cpu_pause();
        }

        cpu_intr_restore(flags);
    }
}

/*
 * A cross-CPU call that reads or detaches a CPU or thread event runs on
 * the target while a wrap's interrupt is pending there: each counts the
 * wrap, exactly once.
 */
TEST_DEFINE(perfmon, pending_wrap_counted_by_remote_calls)
{
    struct test_sync_target t = { 0 };
    unsigned int c = cpu_count() - 1;
    uint64_t wrap, value, intrs, lost;
    struct perfmon_event cev;
    struct thread *thread;

    test_sync_require_narrow_intr();
    test_require_cpus(2);
    wrap = test_sync_wrap();
    thread_set_affinity(thread_self(), 1ULL << 0);
    test_sync_attach_cpu(&cev, 7, c);
    thread = test_thread_start("wrap-target", 1ULL << c,
                               test_sync_target_main, &t);

    while (!t.attached) {
        thread_yield();
    }

    intrs = pmu_soft_nr_intrs(c);
    lost = pmu_soft_nr_lost(c);

    for (unsigned int op = 0; op < TEST_SYNC_NR_OPS; op++) {
        unsigned int round = op + 1;

        t.round = round;

        while (t.wrapped < round) {
            cpu_pause();
        }

        switch (op) {
        case TEST_SYNC_READ_CPU:
            TEST_ASSERT_EQ(perfmon_event_read(&cev), round * wrap);
            break;
        case TEST_SYNC_READ_THREAD:
            TEST_ASSERT_EQ(perfmon_event_read(&t.tev), round * wrap);
            break;
        case TEST_SYNC_DETACH_THREAD:
            TEST_ASSERT_EQ(perfmon_event_detach(&t.tev), 0);
            TEST_ASSERT_EQ(perfmon_event_get(&t.tev, &value), 0);
            TEST_ASSERT_EQ(value, round * wrap);
            break;
        default:
            TEST_ASSERT_EQ(perfmon_event_detach(&cev), 0);
            TEST_ASSERT_EQ(perfmon_event_get(&cev, &value), 0);
            TEST_ASSERT_EQ(value, round * wrap);
            break;
        }
    }

    thread_join(thread);

    /* Every wrap was consumed by a call: no interrupt had one to report. */
    TEST_ASSERT_EQ(pmu_soft_nr_intrs(c), intrs);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Beyond the limits of pmu_soft.h a wrap is lost, visibly: the count is
 * short by exactly 2^width per wrap the lost-wrap counter shows. Polling:
 * 2^width units unread. Interrupt: a second wrap with the first pending.
 */
TEST_DEFINE(perfmon, wraps_beyond_the_limits_are_counted_as_lost)
{
    struct perfmon_event tev;
    uint64_t wrap, lost, value, emitted;
    unsigned long flags;
    unsigned int c;

    if (pmu_soft_width() == 64) {
        test_skip("pmu_soft.width=64 never wraps");
    }

    wrap = test_sync_wrap();
    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    c = cpu_id();
    test_sync_attach_self(&tev, 4);
    lost = pmu_soft_nr_lost(c);

    /*
     * Interrupt mode: two wraps, or three when the counter started within
     * 5 of wrapping; all but the pending one are lost. NMI mode: each
     * count's NMI comes at once, interrupts off or not, so the two wraps
     * are made by one count.
     */
    emitted = wrap + 5;
    flags = cpu_intr_save();

    if (pmu_soft_nmi_mode()) {
        emitted += wrap;
    } else if (pmu_soft_intr_mode()) {
        pmu_soft_emit_channel(4, wrap);
        emitted += wrap;
    }

    pmu_soft_emit_channel(4, pmu_soft_nmi_mode() ? emitted : wrap + 5);
    value = perfmon_event_read(&tev);
    cpu_intr_restore(flags);

    lost = pmu_soft_nr_lost(c) - lost;
    TEST_ASSERT_GE(lost, 1);
    TEST_ASSERT_EQ(value + lost * wrap, emitted);
    TEST_ASSERT_EQ(perfmon_event_detach(&tev), 0);
    lost = pmu_soft_nr_lost(c);

    /* Back within the limits: nothing more is lost. */
    test_sync_attach_self(&tev, 4);
    pmu_soft_emit_channel(4, wrap - 1);
    TEST_ASSERT_EQ(perfmon_event_read(&tev), wrap - 1);
    TEST_ASSERT_EQ(perfmon_event_detach(&tev), 0);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Polling at the rate the software PMU promises: a thread and a CPU event
 * driven at exactly pmu_soft_max_rate() units per tick (after each tick
 * interrupt of the CPU, clock_nr_intrs) for many poll periods, by a thread
 * that never sleeps or yields (only the poll timer and preemption sync the
 * counter), stay exact.
 */
TEST_DEFINE(perfmon, poll_exact_at_the_promised_rate)
{
    struct perfmon_dev *soft = perfmon_dev_get(true);
    const unsigned int nr_ticks = 60;
    struct perfmon_event tev, cev;
    uint64_t rate, tick, lost, emitted = 0;
    unsigned int c;

    if (pmu_soft_width() == 64 || pmu_soft_intr_mode()) {
        test_skip("needs narrow counters with polling");
    }

    rate = pmu_soft_max_rate();
    TEST_ASSERT_EQ(rate, 1ULL << (pmu_soft_width() - 2));
    TEST_ASSERT_EQ(perfmon_dev_poll_ticks(soft), 2);
    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    c = cpu_id();
    test_sync_attach_self(&tev, 3);
    test_detach_on_failure(&tev);
    test_sync_attach_cpu(&cev, 3, c);
    test_detach_on_failure(&cev);
    lost = pmu_soft_nr_lost(c);
    tick = clock_nr_intrs(c);

    for (unsigned int i = 0; i < nr_ticks; i++) {
        while (clock_nr_intrs(c) == tick) {
            cpu_pause();
        }

        tick = clock_nr_intrs(c);
        pmu_soft_emit_channel(3, rate);
        emitted += rate;
    }

    TEST_ASSERT_EQ(perfmon_event_read(&tev), emitted);
    TEST_ASSERT_EQ(perfmon_event_read(&cev), emitted);
    TEST_ASSERT_EQ(perfmon_event_detach(&tev), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&cev), 0);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

struct test_sync_query {
    struct perfmon_dev *dev;
    volatile unsigned int result;
    volatile bool done;
};

static void
test_sync_query_timer(struct timer *timer)
{
    struct test_sync_query *q = timer_arg(timer);

    q->result = perfmon_dev_nr_used_slots(q->dev);
    q->done = true;
}

/*
 * perfmon_dev_nr_used_slots is documented for any context: an interrupt
 * handler may call it on a CPU where a thread holds the device lock (as
 * attach and detach do, with interrupts enabled).
 */
TEST_DEFINE(perfmon, nr_used_pmcs_from_an_interrupt_under_the_device_lock)
{
    struct test_sync_query q = { .dev = perfmon_dev_get(true) };
    struct perfmon_event event;
    struct timer timer;
    uint64_t deadline;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    test_sync_attach_self(&event, 2);
    timer_init(&timer, test_sync_query_timer, &q, cpu_id());

    /* The device lock is perfmon's, taken here to stand for an attach. */
    perfmon_dev_test_lock(q.dev);
    deadline = clock_get_time() + 50;
    timer_schedule(&timer, clock_get_time() + 1);

    while (!q.done && clock_get_time() < deadline) {
        cpu_pause();
    }

    perfmon_dev_test_unlock(q.dev);
    timer_cancel(&timer);
    TEST_ASSERT(q.done);
    TEST_ASSERT_EQ(q.result, 1);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
