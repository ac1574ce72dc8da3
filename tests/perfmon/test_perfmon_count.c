/*
 * perfmon core, tested exactly with the software PMU (or, in the model
 * kernel, a modelled hardware PMU: perfmon_util.h): counting. CPU and
 * thread events count every unit emitted where and while they watch,
 * across reads from other CPUs, thread exits, and counter wraps (polled
 * or through the overflow interrupt); suite perfmon, with test_perfmon.c.
 *
 * The same suite runs with pmu_soft.width=64, 16 and 8 (polling), 12 and
 * 8 (overflow interrupt). With narrow polled counters, emitting threads
 * keep each CPU to the rate the software PMU promises (test_emit_paced);
 * with the overflow interrupt, bursts of at most TEST_PM_BURST_MAX units
 * wrap a counter at most once between two syncs.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/xcall.h>
#include <machine/cpu.h>

#include "perfmon_util.h"
#include "test_util.h"

#define TEST_PM_BURST_MAX   50
#define TEST_PM_BATCH       10
#define TEST_PM_BUDGET_TICKS        40  /* ticks of emission, polled */

/* ------------------------------------------------------------------ */
/* Emitters                                                            */
/* ------------------------------------------------------------------ */

struct test_pm_emitter {
    uint64_t total;             /* units to emit */
    unsigned int channel;
    bool migrate;               /* hop over the CPUs while emitting */
    bool spin;                  /* spin a tick between batches, not sleep */
    uint64_t seed;
    volatile bool go;
    volatile uint64_t emitted;  /* published after each emit */
    struct thread *thread;
};

/*
 * A total an emitter can emit in about TEST_PM_BUDGET_TICKS ticks when
 * polled narrow counters limit the rate, the whole total otherwise.
 */
static uint64_t
test_pm_total(uint64_t total)
{
    uint64_t rate = test_pm_max_rate();

    if (rate == UINT64_MAX) {
        return total;
    }

    return MIN(total, rate * TEST_PM_BUDGET_TICKS);
}

/*
 * Emit e->total units in paced bursts, yielding often and sleeping after
 * every TEST_PM_BATCH bursts, hopping CPUs when asked.
 */
static void
test_pm_emit(struct test_pm_emitter *e)
{
    unsigned int hop = cpu_id();

    e->total = test_pm_total(e->total);

    for (unsigned int i = 1; e->emitted < e->total; i++) {
        uint64_t n = 1 + test_rand(&e->seed) % TEST_PM_BURST_MAX;

        n = MIN(n, e->total - e->emitted);
        n = e->spin ? test_emit_paced_busy(e->channel, n)
                    : test_emit_paced(e->channel, n);
        WRITE_ONCE(e->emitted, e->emitted + n);

        if (i % TEST_PM_BATCH == 0) {
            if (e->spin) {
                test_spin_ticks(1);     /* stay loaded: readers go remote */
            } else {
                thread_delay(1);
            }
        } else if (i % 3 == 0) {
            thread_yield();
        }

        if (e->migrate && i % 7 == 0 && cpu_count() > 1) {
            hop = (hop + 1) % cpu_count();
            thread_set_affinity(thread_self(), 1ULL << hop);
        }
    }
}

static void
test_pm_emitter_main(void *arg)
{
    struct test_pm_emitter *e = arg;

    while (!e->go) {
        thread_delay(1);
    }

    test_pm_emit(e);
}

static struct thread *
test_pm_emitter_start(struct test_pm_emitter *e, const char *name,
                      uint64_t affinity)
{
    e->total = test_pm_total(e->total);
    e->thread = test_thread_start(name, affinity, test_pm_emitter_main, e);
    return e->thread;
}

/*
 * Read an event while its emitter runs: the count includes every unit the
 * emitter published before the read, and at most the burst in flight
 * beyond what it published after.
 */
static void
test_pm_read_bracketed(struct perfmon_event *event,
                       const struct test_pm_emitter *e)
{
    uint64_t before = READ_ONCE(e->emitted);
    uint64_t value = perfmon_event_read(event);
    uint64_t after = READ_ONCE(e->emitted);

    TEST_ASSERT_GE(value, before);
    TEST_ASSERT_LE(value, after + TEST_PM_BURST_MAX);
}

/* ------------------------------------------------------------------ */
/* CPU events                                                          */
/* ------------------------------------------------------------------ */

/*
 * A CPU event counts exactly what is emitted on its CPU while attached:
 * the test thread's own bursts and a helper's on the same CPU, nothing
 * from a helper on another CPU, nothing before attach or after detach.
 */
TEST_DEFINE(perfmon, cpu_event_counts_its_cpu_exactly)
{
    unsigned int c = cpu_count() - 1;
    struct test_pm_emitter same = { .total = 3000, .seed = 11 };
    struct test_pm_emitter elsewhere = { .total = 3000, .seed = 12 };
    struct test_pm_emitter mine = { .total = 2000, .seed = 13 };
    struct perfmon_event event;

    thread_set_affinity(thread_self(), 1ULL << c);
    test_pm_init_emit(&event, 0);

    pmu_soft_emit(100);     /* before attach: not counted */
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    test_pm_emitter_start(&same, "emit-same", 1ULL << c);

    if (cpu_count() > 1) {
        test_pm_emitter_start(&elsewhere, "emit-other", ~(1ULL << c));
        elsewhere.go = true;
    }

    same.go = true;
    test_pm_emit(&mine);
    thread_join(same.thread);

    if (cpu_count() > 1) {
        thread_join(elsewhere.thread);
    }

    TEST_ASSERT_EQ(perfmon_event_read(&event), mine.total + same.total);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    pmu_soft_emit(100);     /* after detach: not counted */
    TEST_ASSERT_EQ(perfmon_event_read(&event), mine.total + same.total);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Reads from another CPU see every unit emitted before them; each is one
 * cross-CPU call to the event's CPU, counted there (the read of the
 * counting event itself adds one).
 */
TEST_DEFINE(perfmon, cpu_event_remote_reads_are_current)
{
    unsigned int c = cpu_count() - 1;
    struct test_pm_emitter e = { .total = 4000, .seed = 21 };
    struct perfmon_event event, xcalls;
    unsigned int nr_reads = 0;

    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);
    test_pm_init_emit(&event, 0);
    test_pm_init(&xcalls, PMU_SOFT_EV_XCALL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    test_pm_emitter_start(&e, "emit", 1ULL << c);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&xcalls, c), 0);
    e.go = true;

    while (READ_ONCE(e.emitted) < e.total) {
        test_pm_read_bracketed(&event, &e);
        nr_reads++;
        thread_delay(1);
    }

    thread_join(e.thread);
    TEST_ASSERT_GT(nr_reads, 0);
    TEST_ASSERT_EQ(perfmon_event_read(&xcalls), nr_reads + 1);
    TEST_ASSERT_EQ(perfmon_event_detach(&xcalls), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), e.total);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* ------------------------------------------------------------------ */
/* Thread events                                                       */
/* ------------------------------------------------------------------ */

/*
 * A thread event counts exactly what its thread emits, while it is
 * preempted by other emitting threads on its CPU and while it migrates;
 * the other threads' events count exactly theirs, although all share one
 * slot. Reads from another CPU while it runs are current.
 */
TEST_DEFINE(perfmon, thread_event_follows_thread_exactly)
{
    struct test_pm_emitter target = { .total = 20000, .seed = 31,
                                      .migrate = true, .spin = true };
    /* Static: 64 of each would not fit on a thread stack. */
    static struct test_pm_emitter others[CPU_MAX];
    static struct perfmon_event other_evs[CPU_MAX], xcalls[CPU_MAX];
    struct perfmon_event target_ev;
    unsigned int n = cpu_count();
    uint64_t nr_reads = 0, nr_remote_reads = 0;

    test_pm_init_emit(&target_ev, 0);
    test_pm_emitter_start(&target, "target", 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&target_ev, target.thread), 0);

    for (unsigned int i = 0; i < n; i++) {
        others[i] = (struct test_pm_emitter){ .total = 5000, .seed = 40 + i };
        test_pm_emitter_start(&others[i], "other", 1ULL << i);
        test_pm_init_emit(&other_evs[i], 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&other_evs[i], others[i].thread),
                       0);
        TEST_ASSERT_EQ(perfmon_event_slot_index(&other_evs[i]),
                       perfmon_event_slot_index(&target_ev));
    }

    /*
     * The reader stays on CPU 0 and counts the cross-CPU calls the other
     * CPUs receive: reads of a target running elsewhere are such calls.
     */
    thread_set_affinity(thread_self(), 1ULL << 0);

    for (unsigned int i = 1; i < n; i++) {
        test_pm_init(&xcalls[i], PMU_SOFT_EV_XCALL);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&xcalls[i], i), 0);
    }

    target.go = true;

    for (unsigned int i = 0; i < n; i++) {
        others[i].go = true;
    }

    /*
     * Sleeping between reads lets the target run here; while it is on
     * another CPU, reads come every eighth of a tick without sleeping, so
     * that some catch it running there (with sleeps alone, none did once
     * in a few dozen boots).
     */
    while (READ_ONCE(target.emitted) < target.total) {
        test_pm_read_bracketed(&target_ev, &target);
        nr_reads++;

        if (thread_cpu(target.thread) == cpu_id()) {
            thread_delay(1);
        } else {
            uint64_t end = cpu_get_tsc() + clock_tsc_per_tick() / 8;

            while (cpu_get_tsc() < end) {
                cpu_pause();
            }
        }
    }

    /* Each read of a counting event adds its own call. */
    for (unsigned int i = 1; i < n; i++) {
        nr_remote_reads += perfmon_event_read(&xcalls[i]) - 1;
        TEST_ASSERT_EQ(perfmon_event_detach(&xcalls[i]), 0);
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    test_diag("%llu of %llu reads ran on the target's CPU",
              (unsigned long long)nr_remote_reads,
              (unsigned long long)nr_reads);
    thread_join(target.thread);

    for (unsigned int i = 0; i < n; i++) {
        thread_join(others[i].thread);
    }

    TEST_ASSERT_EQ(perfmon_event_read(&target_ev), target.total);
    TEST_ASSERT_EQ(perfmon_event_detach(&target_ev), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&target_ev), target.total);

    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&other_evs[i]), 0);
        TEST_ASSERT_EQ(perfmon_event_read(&other_evs[i]), others[i].total);
    }

    if (n > 1) {
        TEST_ASSERT_GT(nr_remote_reads, 0);
        TEST_ASSERT_LE(nr_remote_reads, nr_reads);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_dev()), 0);
}

/*
 * A CPU event and a thread event on the same raw event share one slot and
 * each count their own: the CPU event everything on the CPU, the thread
 * event its thread only.
 */
TEST_DEFINE(perfmon, cpu_and_thread_events_share_a_slot)
{
    unsigned int c = cpu_count() - 1;
    struct test_pm_emitter a = { .total = 6000, .seed = 51 };
    struct test_pm_emitter b = { .total = 4000, .seed = 52 };
    struct perfmon_event cpu_ev, thread_ev;

    test_pm_init_emit(&cpu_ev, 2);
    test_pm_init_emit(&thread_ev, 2);
    a.channel = b.channel = 2;
    test_pm_emitter_start(&a, "emit-a", 1ULL << c);
    test_pm_emitter_start(&b, "emit-b", 1ULL << c);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&cpu_ev, c), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&thread_ev, a.thread), 0);
    TEST_ASSERT_EQ(perfmon_event_slot_index(&cpu_ev),
                   perfmon_event_slot_index(&thread_ev));
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_dev()), 1);
    a.go = b.go = true;
    thread_join(a.thread);
    thread_join(b.thread);
    TEST_ASSERT_EQ(perfmon_event_detach(&cpu_ev), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&thread_ev), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&cpu_ev), a.total + b.total);
    TEST_ASSERT_EQ(perfmon_event_read(&thread_ev), a.total);
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */
/* ------------------------------------------------------------------ */

/* A thread that exits while monitored keeps its count until detach. */
TEST_DEFINE(perfmon, thread_exits_before_detach)
{
    struct test_pm_emitter e = { .total = 1234, .seed = 61 };
    unsigned int alive = thread_nr_alive();
    struct perfmon_event event;
    struct thread *thread;

    test_pm_init_emit(&event, 0);
    thread = test_pm_emitter_start(&e, "short-lived", 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, thread), 0);
    e.go = true;
    thread_join(thread);

    /* Exited and joined: the event's reference keeps its structure. */
    TEST_ASSERT_EQ(thread_nr_alive(), alive + 1);
    TEST_ASSERT_EQ(perfmon_event_read(&event), e.total);

    /* No new attach to an exited thread. */
    {
        struct perfmon_event late;

        test_pm_init_emit(&late, 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&late, thread), EINVAL);
    }

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(thread_nr_alive(), alive);
    TEST_ASSERT_EQ(perfmon_event_read(&event), e.total);
}

/* Detach keeps the final count; a new attach counts from zero. */
TEST_DEFINE(perfmon, reattach_counts_from_zero)
{
    struct perfmon_event event;
    uint64_t value = 0;

    test_pm_init_emit(&event, 0);

    for (unsigned int round = 1; round <= 3; round++) {
        TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), 0);
        pmu_soft_emit(10 * round);
        TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
        pmu_soft_emit(1000);
        TEST_ASSERT_EQ(perfmon_event_get(&event, &value), 0);
        TEST_ASSERT_EQ(value, 10 * round);

        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_id()), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    }
}

/* ------------------------------------------------------------------ */
/* Overflow                                                            */
/* ------------------------------------------------------------------ */

static void
test_pm_require_narrow(void)
{
    if (test_pm_width() == 64) {
        test_skip("64-bit counters (pmu_soft.width=64) never wrap");
    }
}

/*
 * A thread event on the test thread and a CPU event on its CPU, both on one
 * emit channel, for the wrap tests; the thread stays on that CPU.
 */
struct test_pm_wraps {
    struct perfmon_event tev;
    struct perfmon_event cev;
    unsigned int channel;
    unsigned int cpu;
    uint64_t burst;         /* 2^width - 1: at most one wrap per burst */
    uint64_t overflows;     /* the CPU's overflow count at the start */
};

static void
test_pm_wraps_begin(struct test_pm_wraps *w, unsigned int channel)
{
    w->channel = channel;
    w->burst = (1ULL << test_pm_width()) - 1;
    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    w->cpu = cpu_id();
    test_pm_init_emit(&w->tev, channel);
    test_pm_init_emit(&w->cev, channel);
    TEST_ASSERT_EQ(perfmon_event_attach(&w->tev, thread_self()), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&w->cev, w->cpu), 0);
    w->overflows = perfmon_cpu_nr_overflows(w->cpu);
}

/*
 * Check both events counted every burst and the CPU's overflow counter grew
 * once per wrap: a burst of 2^w - 1 moves the counter back by one and
 * wraps unless it starts at 0, which happens once every 2^w bursts.
 */
static void
test_pm_wraps_end(struct test_pm_wraps *w, unsigned int bursts)
{
    uint64_t overflows, period = w->burst + 1;

    TEST_ASSERT_EQ(perfmon_event_read(&w->tev), bursts * w->burst);
    TEST_ASSERT_EQ(perfmon_event_read(&w->cev), bursts * w->burst);
    overflows = perfmon_cpu_nr_overflows(w->cpu) - w->overflows;
    TEST_ASSERT_GE(overflows, bursts - DIV_CEIL(bursts, period));
    TEST_ASSERT_LE(overflows, bursts - bursts / period);
    TEST_ASSERT_EQ(perfmon_event_detach(&w->tev), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&w->cev), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Thousands of wraps, each burst of 2^width - 1 units followed by a read
 * (which synchronizes): the counts stay exact at every step and the CPU's
 * overflow counter grows by one per wrap.
 */
TEST_DEFINE(perfmon, exact_through_thousands_of_wraps)
{
    const unsigned int bursts = 3000;
    struct test_pm_wraps w;

    test_pm_require_narrow();
    test_pm_wraps_begin(&w, 1);

    for (unsigned int i = 0; i < bursts; i++) {
        pmu_soft_emit_channel(w.channel, w.burst);
        TEST_ASSERT_EQ(perfmon_event_read(&w.tev), (i + 1) * w.burst);
    }

    test_pm_wraps_end(&w, bursts);
}

/*
 * Polling: only the poll timer synchronizes a CPU event while its CPU
 * sleeps; bursts of 2^width - 1 per poll window stay exact.
 */
TEST_DEFINE(perfmon, poll_timer_keeps_cpu_event_exact)
{
    struct perfmon_dev *dev = test_pm_dev();
    const unsigned int bursts = 12;
    uint64_t burst, overflows;
    struct perfmon_event event;
    unsigned int c;

    test_pm_require_narrow();
    test_pm_require_soft("software PMU only: its poll period, 2 ticks at "
                         "the rate it promises (pmu_soft.h)");

    if (test_pm_intr_mode()) {
        test_skip("overflow interrupt (pmu_soft.intr=1): no poll timer");
    }

    /* Twice per wrap time at the promised rate (pmu_soft.h). */
    TEST_ASSERT_EQ(perfmon_dev_poll_ticks(dev), 2);
    burst = (1ULL << test_pm_width()) - 1;
    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    c = cpu_id();
    test_pm_init_emit(&event, 1);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);
    overflows = perfmon_cpu_nr_overflows(c);

    for (unsigned int i = 0; i < bursts; i++) {
        pmu_soft_emit_channel(1, burst);
        thread_delay(perfmon_dev_poll_ticks(dev) + 1);
    }

    /*
     * The counter advanced by bursts * (2^width - 1): that is bursts - 1
     * wraps, one more unless it started below bursts.
     */
    overflows = perfmon_cpu_nr_overflows(c) - overflows;
    TEST_ASSERT_GE(overflows, bursts - 1);
    TEST_ASSERT_LE(overflows, bursts);
    TEST_ASSERT_EQ(perfmon_event_read(&event), bursts * burst);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * Overflow interrupt: back-to-back bursts of 2^width - 1, with no read or
 * switch between them, stay exact because each wrap interrupts at once.
 */
TEST_DEFINE(perfmon, overflow_interrupt_keeps_counts_exact)
{
    const unsigned int bursts = 3000;
    struct test_pm_wraps w;

    test_pm_require_narrow();

    if (!test_pm_intr_mode()) {
        test_skip("polled counters (pmu_soft.intr=0): no overflow interrupt");
    }

    test_pm_wraps_begin(&w, 3);

    for (unsigned int i = 0; i < bursts; i++) {
        pmu_soft_emit_channel(w.channel, w.burst);
    }

    test_pm_wraps_end(&w, bursts);
}
