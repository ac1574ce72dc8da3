/*
 * perfmon's times with the software PMU: a thread event's time enabled
 * grows only while its thread runs with the event enabled (Linux's
 * meaning), so that perfmon_scale is unbiased for threads and returns
 * the count unchanged for an event that never waited for a counter; a
 * CPU event's grows all the time it is enabled; neither goes back
 * between reads, whatever CPUs the thread and the readers run on. Suite
 * perfmon_mux, with test_perfmon_mux.c, whose header states the method
 * and the tolerances of the multiplexed estimates (25% of the units
 * emitted, up to 4 CPUs, where the steps kept their pace).
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "mux_util.h"
#include "perfmon_util.h"
#include "test_util.h"

#define TEST_PT_CHANNEL     2
#define TEST_PT_ROUNDS      4
#define TEST_PT_UNITS       100
#define TEST_PT_SLEEP       3       /* ticks asleep per round */
#define TEST_PT_HOPS        3       /* rounds over the CPUs */

/*
 * The times of an event read between two run times of its thread (TSC
 * cycles), the first before its attach, the second after the read:
 * enabled within [ns(read_lo - attach_hi), ns(read_hi - attach_lo)].
 */
static void
test_pt_check_enabled(const struct perfmon_value *value, uint64_t attach_lo,
                      uint64_t attach_hi, uint64_t read_lo, uint64_t read_hi)
{
    TEST_ASSERT_GE(value->time_enabled,
                   perfmon_tsc_to_ns(read_lo - attach_hi));
    TEST_ASSERT_LE(value->time_enabled,
                   perfmon_tsc_to_ns(read_hi - attach_lo));
}

/*
 * A thread event without multiplexing, its thread sleeping most of the
 * time: time enabled is the thread's run time, not the time since the
 * attach; running equals it, so the estimate is the count exactly, at
 * a read and after the detach. Before time enabled was the thread's, a
 * count of 400 read enabled 115 ms against 0.87 ms running, an estimate
 * of some 53000.
 */
TEST_DEFINE(perfmon_mux, times_sleeping_thread_scales_to_its_count)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *event = &set->events[0];
    struct perfmon_value value;
    uint64_t r0, r1, r2, r3, t0, emitted = 0;

    test_px_init(set, 1, TEST_PT_CHANNEL);
    t0 = cpu_get_tsc();
    r0 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_attach(event, thread_self()), 0);
    r1 = test_px_run_time();

    for (unsigned int k = 0; k < TEST_PT_ROUNDS; k++) {
        emitted += test_emit_paced(TEST_PT_CHANNEL, TEST_PT_UNITS);
        thread_delay(TEST_PT_SLEEP);
    }

    r2 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_read_value(event, &value), 0);
    r3 = test_px_run_time();
    test_diag("count %llu, enabled %llu ns, running %llu ns, %llu ns since "
              "the attach", (unsigned long long)value.count,
              (unsigned long long)value.time_enabled,
              (unsigned long long)value.time_running,
              (unsigned long long)perfmon_tsc_to_ns(cpu_get_tsc() - t0));
    TEST_ASSERT_EQ(value.count, emitted);
    TEST_ASSERT_EQ(value.time_running, value.time_enabled);
    TEST_ASSERT_EQ(perfmon_scale(value.count, value.time_enabled,
                                 value.time_running), emitted);
    test_pt_check_enabled(&value, r0, r1, r2, r3);

    r2 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_detach(event), 0);
    r3 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_read_value(event, &value), 0);
    TEST_ASSERT_EQ(value.count, emitted);
    TEST_ASSERT_EQ(value.time_running, value.time_enabled);
    TEST_ASSERT_EQ(perfmon_scale(value.count, value.time_enabled,
                                 value.time_running), emitted);
    test_pt_check_enabled(&value, r0, r1, r2, r3);
}

/* A worker that emits and sleeps, read from the test's thread. */
struct test_pt_worker {
    bool go;                    /* attached: emit */
    bool done;
    uint64_t emitted;
};

static void
test_pt_worker_main(void *arg)
{
    struct test_pt_worker *w = arg;

    while (!__atomic_load_n(&w->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    for (unsigned int k = 0; k < TEST_PT_ROUNDS; k++) {
        w->emitted += test_emit_paced(TEST_PT_CHANNEL, TEST_PT_UNITS);
        thread_delay(TEST_PT_SLEEP);
    }

    __atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
}

/*
 * The same for another thread, read while it sleeps (off every CPU) and
 * after it exited: the estimate is its count, its time enabled at most
 * its run time.
 */
TEST_DEFINE(perfmon_mux, times_other_sleeping_thread_scales_to_its_count)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *event = &set->events[0];
    struct test_pt_worker w = { .go = false, .done = false };
    struct perfmon_value value;
    struct thread *thread;
    uint64_t run;
    bool ok = true;

    test_px_init(set, 1, TEST_PT_CHANNEL);
    thread = test_thread_start("test_pt_worker", 0, test_pt_worker_main, &w);
    ok = (perfmon_event_attach(event, thread) == 0);
    __atomic_store_n(&w.go, true, __ATOMIC_RELEASE);

    /* No assertion while the worker runs: it writes the stack's w. */
    while (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
        ok = ok && perfmon_event_read_value(event, &value) == 0
             && value.time_running == value.time_enabled
             && perfmon_scale(value.count, value.time_enabled,
                              value.time_running) == value.count;
    }

    /* The event's reference keeps the exited thread's run time. */
    thread_join(thread);
    TEST_ASSERT(ok);
    run = thread_run_total(thread);
    TEST_ASSERT_EQ(perfmon_event_read_value(event, &value), 0);
    TEST_ASSERT_EQ(value.count, w.emitted);
    TEST_ASSERT_EQ(value.time_running, value.time_enabled);
    TEST_ASSERT_LE(value.time_enabled, perfmon_tsc_to_ns(run));
    TEST_ASSERT_EQ(perfmon_event_detach(event), 0);
}

/*
 * 2S thread events on S counters, their thread hopping over the CPUs and
 * sleeping between its intervals of steps about as long as it runs: each
 * counts exactly what was emitted while it counted, its time enabled is
 * the thread's run time since its attach, and its estimate comes within
 * the suite's bound of the units emitted (25%, up to 4 CPUs, where the
 * steps kept their pace). Before time enabled was the thread's, the
 * estimates came to 1.7 times the units emitted (272637 of 160000).
 */
TEST_DEFINE(perfmon_mux, times_multiplexed_sleeping_thread_estimates)
{
    struct perfmon_dev *dev = test_px_dev();
    struct test_px_set *set = &test_px_set;
    struct thread *self = thread_self();
    uint64_t r0, r1, r2, r3, start;
    bool checked;

    test_px_init(set, 2 * test_pm_nr_counters(), TEST_PT_CHANNEL);
    r0 = test_px_run_time();

    for (unsigned int i = 0; i < set->nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_attach(&set->events[i], self), 0);
    }

    r1 = test_px_run_time();
    start = perfmon_mux_nr_rotations(dev);

    /* Sleeps of 1 to 3 ticks: the turns do not keep one phase. */
    for (unsigned int k = 0;
         perfmon_mux_nr_rotations(dev) - start < TEST_PX_ROTATIONS; k++) {
        test_px_run(set, 1, true);
        thread_delay(1 + k % 3);
    }

    thread_set_affinity(self, THREAD_AFFINITY_ALL);
    r2 = test_px_run_time();
    test_px_finish(set);
    r3 = test_px_run_time();
    test_px_assert_exact(set);
    checked = (cpu_count() <= 4
               && perfmon_tsc_to_ns(set->stalled) * 20
                  <= perfmon_tsc_to_ns(r2 - r1));

    for (unsigned int i = 0; i < set->nr_events; i++) {
        const struct perfmon_value *value = &set->values[i];
        uint64_t scaled = perfmon_scale(value->count, value->time_enabled,
                                        value->time_running);

        test_diag("event %u: count %llu, enabled %llu ns, running %llu ns, "
                  "estimate %llu of %llu", i,
                  (unsigned long long)value->count,
                  (unsigned long long)value->time_enabled,
                  (unsigned long long)value->time_running,
                  (unsigned long long)scaled,
                  (unsigned long long)set->emitted);
        TEST_ASSERT_LE(value->time_running, value->time_enabled);
        test_pt_check_enabled(value, r0, r1, r2, r3);
        test_px_assert_share(set, value->time_running, value->time_enabled);

        if (checked) {
            TEST_ASSERT_GE(scaled * 4, set->emitted * 3);
            TEST_ASSERT_LE(scaled * 4, set->emitted * 5);
        }
    }

    test_px_report(set);
}

/*
 * A CPU event's times are unchanged: it is enabled all the time since its
 * attach, sleeping or not, and runs all of it without multiplexing.
 */
TEST_DEFINE(perfmon_mux, times_cpu_event_enabled_all_the_time)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *event = &set->events[0];
    unsigned int cpu = cpu_count() - 1;
    struct perfmon_value value;
    uint64_t t0, t1, t2, t3, emitted;

    test_px_init(set, 1, TEST_PT_CHANNEL);
    test_px_pin_self(cpu);
    t0 = cpu_get_tsc();
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(event, cpu), 0);
    t1 = cpu_get_tsc();
    emitted = test_emit_paced(TEST_PT_CHANNEL, TEST_PT_UNITS);
    thread_delay(TEST_PT_SLEEP);
    t2 = cpu_get_tsc();
    TEST_ASSERT_EQ(perfmon_event_read_value(event, &value), 0);
    t3 = cpu_get_tsc();
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_event_detach(event), 0);
    TEST_ASSERT_EQ(value.count, emitted);
    TEST_ASSERT_EQ(value.time_running, value.time_enabled);
    test_pt_check_enabled(&value, t0, t1, t2, t3);
}

/* A reader of the hopping thread's event, on CPU 0. */
struct test_pt_reader {
    struct perfmon_event *event;
    volatile bool stop;
    uint64_t nr_reads;
    int error;                  /* a read that failed or went back */
};

static void
test_pt_reader_main(void *arg)
{
    struct test_pt_reader *r = arg;
    struct perfmon_value last = { 0 }, value;

    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        if (perfmon_event_read_value(r->event, &value) != 0
            || value.time_enabled < last.time_enabled
            || value.time_running < last.time_running
            || value.time_running > value.time_enabled
            || value.count < last.count) {
            r->error = EINVAL;
            return;
        }

        last = value;
        r->nr_reads++;
        thread_yield();
    }
}

/*
 * Times never go back between reads of one event: a thread event whose
 * thread hops over every CPU (and sleeps), read by the thread itself
 * after each hop and by a reader on CPU 0 all along. Each difference is
 * taken on one CPU's TSC (kern/perfmon.h), which this checks as far as a
 * machine whose TSCs agree can: the times stay within the thread's run
 * time and never decrease.
 */
TEST_DEFINE(perfmon_mux, times_never_go_back_across_cpus)
{
    struct test_px_set *set = &test_px_set;
    struct perfmon_event *event = &set->events[0];
    struct test_pt_reader reader = { .event = event, .stop = false };
    struct perfmon_value last = { 0 }, value;
    struct thread *self = thread_self();
    struct thread *thread;
    uint64_t r0, r1;
    bool ok = true;

    test_require_cpus(2);
    test_px_init(set, 1, TEST_PT_CHANNEL);
    r0 = test_px_run_time();
    TEST_ASSERT_EQ(perfmon_event_attach(event, self), 0);
    thread = test_thread_start("test_pt_reader", 1, test_pt_reader_main,
                               &reader);

    /* No assertion while the reader runs: it reads the stack's event. */
    for (unsigned int k = 0; k < TEST_PT_HOPS * cpu_count() && ok; k++) {
        thread_set_affinity(self, 1ULL << (k % cpu_count()));
        test_emit_paced(TEST_PT_CHANNEL, TEST_PT_UNITS / 10);
        ok = (perfmon_event_read_value(event, &value) == 0);
        r1 = test_px_run_time();
        ok = ok && value.time_enabled >= last.time_enabled
             && value.time_running >= last.time_running
             && value.time_running <= value.time_enabled
             && value.time_enabled <= perfmon_tsc_to_ns(r1 - r0);
        last = value;

        if (k % 2 == 0) {
            thread_delay(1);
        }
    }

    __atomic_store_n(&reader.stop, true, __ATOMIC_RELEASE);
    thread_join(thread);
    thread_set_affinity(self, THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_event_detach(event), 0);
    TEST_ASSERT(ok);
    TEST_ASSERT_EQ(reader.error, 0);
    TEST_ASSERT_GT(reader.nr_reads, 0);
}
