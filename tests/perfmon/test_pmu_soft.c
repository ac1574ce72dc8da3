/*
 * Software PMU events: each one counts the kernel event it names, checked
 * against the scheduler's and clock's own accounting.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/perfmon.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/xcall.h>
#include <machine/cpu.h>

#include "test_util.h"

static void
test_soft_attach_self(struct perfmon_event *event, unsigned int id)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, id, PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(event, thread_self()), 0);
}

/*
 * The cswitch event and the thread's nr_switches, sampled together.
 * thread_switch counts the event for the thread leaving the CPU, before
 * its counters unload, and nr_switches for the thread arriving: a running
 * thread has been switched back in after each switch out, so both advance
 * by one per round trip - but a tick between reading one and the other
 * (a peer shares the CPU, so it preempts) switches the thread out and in,
 * and only the later read sees it. Preemption stays disabled from the
 * attach or read to the snapshot; both are local, the thread being loaded
 * here, and neither sleeps. The attach error is returned rather than
 * asserted, as a failed assertion must not leave preemption disabled.
 */
static int
test_soft_attach_cswitch(struct perfmon_event *event, uint64_t *switchesp)
{
    int error;

    error = perfmon_event_init(event, PMU_SOFT_EV_CSWITCH, PERFMON_EF_SW);

    if (error) {
        return error;
    }

    thread_preempt_disable();
    error = perfmon_event_attach(event, thread_self());
    *switchesp = thread_self()->nr_switches;
    thread_preempt_enable();
    return error;
}

static void
test_soft_read_cswitch(struct perfmon_event *event, uint64_t *countp,
                       uint64_t *switchesp)
{
    thread_preempt_disable();
    *countp = perfmon_event_read(event);
    *switchesp = thread_self()->nr_switches;
    thread_preempt_enable();
}

struct test_soft_spinner {
    volatile bool stop;
};

static void
test_soft_yield_loop(void *arg)
{
    struct test_soft_spinner *s = arg;

    while (!s->stop) {
        thread_yield();
    }
}

/*
 * Yielding K times to another ready thread on the CPU switches K times at
 * least; the event equals the thread's own switch count exactly (a switch
 * out is counted before the counters unload, and every switch out is
 * followed by a switch in before the thread can read).
 */
TEST_DEFINE(pmu_soft, cswitch_counts_switches)
{
    struct test_soft_spinner spinner = { 0 };
    const unsigned int k = 100;
    struct perfmon_event event;
    struct thread *self = thread_self(), *other;
    uint64_t start, count, switches;
    unsigned int cpu;

    thread_set_affinity(self, 1ULL << cpu_id());
    cpu = cpu_id();
    other = test_thread_start("yield-peer", 1ULL << cpu,
                              test_soft_yield_loop, &spinner);
    TEST_ASSERT_EQ(test_soft_attach_cswitch(&event, &start), 0);

    for (unsigned int i = 0; i < k; i++) {
        thread_yield();
    }

    test_soft_read_cswitch(&event, &count, &switches);
    TEST_ASSERT_GE(count, k);
    TEST_ASSERT_EQ(count, switches - start);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    spinner.stop = true;
    thread_join(other);
    thread_set_affinity(self, THREAD_AFFINITY_ALL);
}

/* Each CPU hop is one migration, counted for the thread. */
TEST_DEFINE(pmu_soft, migration_counted_per_hop)
{
    struct thread *self = thread_self();
    struct perfmon_event event;
    uint64_t migrations;
    unsigned int hops = 0;

    test_require_cpus(2);
    thread_set_affinity(self, 1ULL << 0);
    test_soft_attach_self(&event, PMU_SOFT_EV_MIGRATION);
    /*
     * Pinned to CPU 0 here and after the last hop: no migration can fall
     * between a read and a snapshot, unlike the cswitch tests above.
     */
    migrations = self->nr_migrations;

    for (unsigned int round = 0; round < 4; round++) {
        for (unsigned int cpu = 1; cpu <= cpu_count(); cpu++) {
            thread_set_affinity(self, 1ULL << (cpu % cpu_count()));
            hops++;
        }
    }

    TEST_ASSERT_EQ(self->nr_migrations - migrations, hops);
    TEST_ASSERT_EQ(perfmon_event_read(&event), hops);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    thread_set_affinity(self, THREAD_AFFINITY_ALL);
}

/*
 * A CPU event on ticks advances with the clock, within one tick, on a CPU
 * kept busy and on a CPU left idle. The clock is read just inside and
 * just outside the attach-detach window: attach and detach run on the
 * target CPU (through a cross-CPU call for the idle one), which a loaded
 * host may delay, so the count lies between the inner and outer spans.
 */
TEST_DEFINE(pmu_soft, ticks_follow_the_clock)
{
    const uint64_t k = 30;

    for (unsigned int busy = 0; busy < 2; busy++) {
        unsigned int c = busy ? 0 : cpu_count() - 1;
        uint64_t outer0, inner0, inner1, outer1, value;
        struct perfmon_event event;

        TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_TICK,
                                          PERFMON_EF_SW), 0);

        if (busy) {
            thread_set_affinity(thread_self(), 1ULL << c);
        } else if (cpu_count() > 1) {
            thread_set_affinity(thread_self(), 1ULL << 0);
        }

        outer0 = clock_get_time();
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
        inner0 = clock_get_time();

        if (busy) {
            test_spin_ticks(k);
        } else {
            thread_delay(k);
        }

        inner1 = clock_get_time();
        TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
        outer1 = clock_get_time();
        value = perfmon_event_read(&event);
        TEST_ASSERT_GE(inner1 - inner0, k);
        TEST_ASSERT_GE(value + 1, inner1 - inner0);
        TEST_ASSERT_LE(value, outer1 - outer0 + 1);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

static void
test_soft_nop(void *arg)
{
    (void)arg;
}

/*
 * Cross-CPU calls received: K calls, plus the detach's own call (counted
 * before it reads; the attach's call is counted before it starts).
 */
TEST_DEFINE(pmu_soft, xcalls_received_counted)
{
    const unsigned int k = 25;
    struct perfmon_event event;
    unsigned int c;

    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);
    c = cpu_count() - 1;
    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_XCALL,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    for (unsigned int i = 0; i < k; i++) {
        TEST_ASSERT_EQ(xcall_call(c, test_soft_nop, NULL), 0);
    }

    /* Calls to the calling CPU run directly, no IPI: not counted. */
    TEST_ASSERT_EQ(xcall_call(0, test_soft_nop, NULL), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), k + 1);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Emit channels are independent events. More channels than counters:
 * they are checked PMU_SOFT_NR_COUNTERS at a time, none multiplexed.
 */
TEST_DEFINE(pmu_soft, emit_channels_are_independent)
{
    struct perfmon_event events[PMU_SOFT_NR_COUNTERS];

    for (unsigned int base = 0; base < PMU_SOFT_NR_CHANNELS;
         base += PMU_SOFT_NR_COUNTERS) {
        unsigned int n = MIN(PMU_SOFT_NR_COUNTERS, PMU_SOFT_NR_CHANNELS - base);

        for (unsigned int i = 0; i < n; i++) {
            test_soft_attach_self(&events[i], PMU_SOFT_EV_EMIT + base + i);
        }

        for (unsigned int ch = 0; ch < PMU_SOFT_NR_CHANNELS; ch++) {
            pmu_soft_emit_channel(ch, ch + 1);
        }

        pmu_soft_emit_channel(PMU_SOFT_NR_CHANNELS, 1000);  /* ignored */

        for (unsigned int i = 0; i < n; i++) {
            TEST_ASSERT_EQ(perfmon_event_read(&events[i]), base + i + 1);
            TEST_ASSERT_EQ(perfmon_event_detach(&events[i]), 0);
        }
    }

    TEST_ASSERT(pmu_soft_event_name(PMU_SOFT_EV_CSWITCH) != NULL);
    TEST_ASSERT(pmu_soft_event_name(PMU_SOFT_NR_EVENTS - 1) != NULL);
    TEST_ASSERT(pmu_soft_event_name(PMU_SOFT_NR_EVENTS) == NULL);
}

struct test_soft_pinger {
    unsigned int rounds;
    unsigned int *arrived;      /* start barrier shared by the pair */
    uint64_t counted;
    uint64_t switched;
};

static void
test_soft_pinger_main(void *arg)
{
    struct test_soft_pinger *p = arg;
    struct perfmon_event event;
    uint64_t start, switches;

    TEST_ASSERT_EQ(test_soft_attach_cswitch(&event, &start), 0);

    /* Start together, so that every yield switches to the peer. */
    __atomic_fetch_add(p->arrived, 1, __ATOMIC_SEQ_CST);

    while (__atomic_load_n(p->arrived, __ATOMIC_SEQ_CST) < 2) {
        thread_yield();
    }

    for (unsigned int i = 0; i < p->rounds; i++) {
        thread_yield();
    }

    test_soft_read_cswitch(&event, &p->counted, &switches);
    p->switched = switches - start;
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
}

/*
 * Two threads on one CPU count their switches on one shared counter, which
 * (with narrow counters) wraps inside the context switch itself, with
 * interrupts disabled, right before the counter is synchronized, stopped
 * and started again for the other thread: each count stays exact.
 */
TEST_DEFINE(pmu_soft, cswitch_exact_when_wrapping_inside_switches)
{
    unsigned int arrived = 0;
    struct test_soft_pinger a = { .rounds = 6000, .arrived = &arrived };
    struct test_soft_pinger b = { .rounds = 6000, .arrived = &arrived };
    unsigned int c = cpu_count() - 1;
    struct thread *ta, *tb;
    uint64_t overflows = perfmon_cpu_nr_overflows(c);

    ta = test_thread_start("pinger-a", 1ULL << c, test_soft_pinger_main, &a);
    tb = test_thread_start("pinger-b", 1ULL << c, test_soft_pinger_main, &b);
    thread_join(ta);
    thread_join(tb);
    TEST_ASSERT_GE(a.counted, a.rounds / 2);
    TEST_ASSERT_EQ(a.counted, a.switched);
    TEST_ASSERT_EQ(b.counted, b.switched);

    /*
     * The shared counter advanced by exactly what the two counted (it
     * runs only while one of them is current): it wrapped that many
     * times over its width, one more when it started near the top.
     */
    if (pmu_soft_width() < 64) {
        uint64_t wraps = (a.counted + b.counted) >> pmu_soft_width();

        overflows = perfmon_cpu_nr_overflows(c) - overflows;
        test_diag("%llu switches counted, %llu wraps at width %u",
                  (unsigned long long)(a.counted + b.counted),
                  (unsigned long long)overflows, pmu_soft_width());
        TEST_ASSERT_GE(overflows, wraps);
        TEST_ASSERT_LE(overflows, wraps + 1);
    }
}
