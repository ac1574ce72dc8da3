/*
 * Hardware counters through perfmon, whichever driver registered (Intel
 * or AMD): runs where a hardware PMU device registered (KVM with the host
 * PMU exposed, `make check-hw`), and reports SKIP with the reason
 * everywhere else. Nothing here can pass on a machine without a PMU, and
 * nothing may be made to: the runner fails a check-hw run in which every
 * hardware test skipped.
 *
 * The checks use perfmon's public API and generic events only; the few
 * things that API does not say (the hook that presets counters, PMI
 * statistics, a global control or status to read) come from the
 * registered driver through pmu_hw_util.c's dispatch. Every count is
 * checked against the range pmu_hw_util.h lists for the known loop, never
 * against "non-zero". Vendor-only checks live in pmu_intel_hw (fixed
 * counters, IA32_PERF_GLOBAL_CTRL layout, full-width writes, reference
 * cycles against the TSC).
 *
 * Events are attached to the test thread itself; where a check needs a
 * counter to start exactly once, preemption is disabled, so the thread
 * neither migrates nor has its counters reloaded. Both drivers give an
 * event that no fixed counter takes the lowest free general counter, and
 * equal configurations share one.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/ksym.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "pmu_hw_util.h"
#include "test_util.h"

/*
 * Generic events for every counter at once, strongest ranges first; each
 * differs from the others in its event or its ring bits, so none shares
 * a counter. 19 entries: more than the 16 counters an AMD PerfMonV2 CPU
 * can report, and than an Intel CPU's 8 general and 3 fixed counters
 * that generic events reach. Reference cycles appear once: on Intel they
 * only go to fixed counter 2.
 */
static const struct hw_spec hw_all_specs[] = {
    { "instructions:k", PERFMON_EV_INSTRUCTION, HW_KERN, 0, HW_BOUND_INSNS },
    { "cycles:k", PERFMON_EV_CYCLE, HW_KERN, 0, HW_BOUND_CYCLES },
    { "branches:k", PERFMON_EV_BRANCH, HW_KERN, 0, HW_BOUND_BRANCHES },
    { "ref-cycles:k", PERFMON_EV_REF_CYCLE, HW_KERN, 0, HW_BOUND_REF },
    { "instructions:ku", PERFMON_EV_INSTRUCTION, HW_KERN | HW_USER, 0,
      HW_BOUND_INSNS },
    { "cycles:ku", PERFMON_EV_CYCLE, HW_KERN | HW_USER, 0, HW_BOUND_CYCLES },
    { "branches:ku", PERFMON_EV_BRANCH, HW_KERN | HW_USER, 0,
      HW_BOUND_BRANCHES },
    { "instructions:u", PERFMON_EV_INSTRUCTION, HW_USER, 0, HW_BOUND_ZERO },
    { "cycles:u", PERFMON_EV_CYCLE, HW_USER, 0, HW_BOUND_ZERO },
    { "branches:u", PERFMON_EV_BRANCH, HW_USER, 0, HW_BOUND_ZERO },
    { "branch-misses:k", PERFMON_EV_BRANCH_MISS, HW_KERN, 0,
      HW_BOUND_BRANCH_MISSES },
    { "branch-misses:ku", PERFMON_EV_BRANCH_MISS, HW_KERN | HW_USER, 0,
      HW_BOUND_BRANCH_MISSES },
    { "branch-misses:u", PERFMON_EV_BRANCH_MISS, HW_USER, 0, HW_BOUND_ZERO },
    { "cache-references:k", PERFMON_EV_CACHE_REF, HW_KERN, 0,
      HW_BOUND_CACHE },
    { "cache-references:ku", PERFMON_EV_CACHE_REF, HW_KERN | HW_USER, 0,
      HW_BOUND_CACHE },
    { "cache-references:u", PERFMON_EV_CACHE_REF, HW_USER, 0, HW_BOUND_ZERO },
    { "cache-misses:k", PERFMON_EV_CACHE_MISS, HW_KERN, 0, HW_BOUND_CACHE },
    { "cache-misses:ku", PERFMON_EV_CACHE_MISS, HW_KERN | HW_USER, 0,
      HW_BOUND_CACHE },
    { "cache-misses:u", PERFMON_EV_CACHE_MISS, HW_USER, 0, HW_BOUND_ZERO },
};

/* ------------------------------------------------------------------ */
/* Counts of the known loop                                            */
/* ------------------------------------------------------------------ */

/* Instructions in [10N, 10.2N], cycles in [N, 50N], counted together. */
TEST_DEFINE(pmu_hw, instructions_and_cycles_of_known_loop)
{
    struct perfmon_event events[2];
    uint64_t counts[2], tsc;

    hw_require_pmu();
    hw_require_event(PERFMON_EV_INSTRUCTION, HW_KERN, "instructions");
    hw_require_event(PERFMON_EV_CYCLE, HW_KERN, "cycles");
    hw_attach_self(&events[0], PERFMON_EV_INSTRUCTION, HW_KERN);
    hw_attach_self(&events[1], PERFMON_EV_CYCLE, HW_KERN);
    tsc = hw_measure(events, 2, counts, HW_N);
    HW_ASSERT_RANGE("instructions", counts[0],
                    hw_range_of(HW_BOUND_INSNS, HW_N, tsc));
    HW_ASSERT_RANGE("cycles", counts[1],
                    hw_range_of(HW_BOUND_CYCLES, HW_N, tsc));
    hw_detach_all(events, 2);
}

/* Branches in [N, 1.1N], on general counter 0 (no fixed counter has it). */
TEST_DEFINE(pmu_hw, branches_of_known_loop)
{
    const struct pmu_x86_test *pmu = hw_require_pmu();
    struct perfmon_event event;
    uint64_t count, tsc;

    hw_require_event(PERFMON_EV_BRANCH, HW_KERN, "branches");

    if (pmu->nr_general == 0) {
        test_skip("no general counter");
    }

    hw_attach_self(&event, PERFMON_EV_BRANCH, HW_KERN);
    hw_assert_counters_used(hw_low_bits(1));
    tsc = hw_measure(&event, 1, &count, HW_N);
    HW_ASSERT_RANGE("branches", count,
                    hw_range_of(HW_BOUND_BRANCHES, HW_N, tsc));
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
}

/*
 * Ring filtering: an event counted in USER mode only is exactly 0 in this
 * ring-0 kernel while the same event in KERN mode, counting at the same
 * time, counts the loop. Instructions, then branches, each on two
 * counters (on Intel the KERN instructions event takes fixed counter 0).
 */
TEST_DEFINE(pmu_hw, user_only_counts_zero_kern_only_counts_loop)
{
    static const struct {
        const char *kern, *user;
        unsigned int id;
        enum hw_bound bound;
    } rounds[] = {
        { "instructions:k", "instructions:u", PERFMON_EV_INSTRUCTION,
          HW_BOUND_INSNS },
        { "branches:k", "branches:u", PERFMON_EV_BRANCH, HW_BOUND_BRANCHES },
    };
    const struct pmu_x86_test *pmu = hw_require_pmu();
    struct perfmon_event events[2];
    uint64_t counts[2], tsc;

    hw_require_event(PERFMON_EV_INSTRUCTION, HW_KERN, "instructions");

    if (pmu->nr_general < 2) {
        test_skip("fewer than two general counters");
    }

    for (unsigned int r = 0; r < ARRAY_SIZE(rounds); r++) {
        if (!hw_event_supported(rounds[r].id, HW_KERN)) {
            test_diag("%s: unavailable, left out", rounds[r].kern);
            continue;
        }

        hw_attach_self(&events[0], rounds[r].id, HW_KERN);
        hw_attach_self(&events[1], rounds[r].id, HW_USER);
        tsc = hw_measure(events, 2, counts, HW_N);
        HW_ASSERT_RANGE(rounds[r].kern, counts[0],
                        hw_range_of(rounds[r].bound, HW_N, tsc));
        HW_ASSERT_RANGE(rounds[r].user, counts[1],
                        hw_range_of(HW_BOUND_ZERO, HW_N, tsc));
        hw_detach_all(events, 2);
    }
}

/* ------------------------------------------------------------------ */
/* Every counter at once                                               */
/* ------------------------------------------------------------------ */

/*
 * As many distinct generic events as the device has counters that
 * generic events reach (every counter on AMD; Intel's general counters
 * and fixed counters 0 to 2), all counting one loop, each within its
 * range: a counter left disabled, or two events on one counter, falls
 * out of range. Where the driver has a global control and no fixed
 * counters (AMD PerfMonV2), it must enable exactly counters 0 to n - 1.
 */
TEST_DEFINE(pmu_hw, all_counters_at_once)
{
    const struct pmu_x86_test *pmu = hw_require_pmu();
    struct perfmon_event events[ARRAY_SIZE(hw_all_specs)];
    const struct hw_spec *specs[ARRAY_SIZE(hw_all_specs)];
    uint64_t counts[ARRAY_SIZE(hw_all_specs)], tsc;
    unsigned int n = 0;

    test_diag("%s: %u counters, %u reachable by generic events",
              pmu->dev->name, pmu->dev->nr_counters,
              pmu->nr_generic_slots);

    for (unsigned int i = 0; i < ARRAY_SIZE(hw_all_specs); i++) {
        if (n == pmu->nr_generic_slots) {
            break;
        }

        if (!hw_event_supported(hw_all_specs[i].id, hw_all_specs[i].flags)) {
            test_diag("%s: unavailable, left out", hw_all_specs[i].name);
            continue;
        }

        specs[n] = &hw_all_specs[i];
        hw_attach_spec(&events[n], specs[n]);
        n++;
    }

    TEST_ASSERT_EQ(n, pmu->nr_generic_slots);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(perfmon_dev_get(false)), n);

    if (pmu->nr_generic_slots == pmu->nr_general) {
        hw_assert_counters_used(hw_low_bits(n));
    }

    tsc = hw_measure(events, n, counts, HW_N);

    for (unsigned int i = 0; i < n; i++) {
        HW_ASSERT_RANGE(specs[i]->name, counts[i],
                        hw_range_of(specs[i]->bound, HW_N, tsc));
    }

    hw_detach_all(events, n);
}

/* ------------------------------------------------------------------ */
/* Overflow interrupts                                                 */
/* ------------------------------------------------------------------ */

/*
 * An overflow interrupt from each general counter: branches pushed onto
 * counter i by i fillers, the wrap placed in the middle of the loop by
 * the driver's start-gap hook, twice (hw_pmi_check): PMIs minus spurious
 * PMIs rise by exactly one per run, the count stays in [N, 1.1N] (a lost
 * or doubled wrap is off by at least 2^31), nothing is left pending in
 * the overflow status (Intel IA32_PERF_GLOBAL_STATUS, AMD
 * PerfCntrGlobalStatus; without PerfMonV2, bit 47 of the counter set
 * again) and the LVT entry is unmasked.
 */
TEST_DEFINE(pmu_hw, overflow_pmi_on_every_general_counter)
{
    static const struct hw_spec branches = {
        "branches:k", PERFMON_EV_BRANCH, HW_KERN, 0, HW_BOUND_BRANCHES,
    };
    const struct pmu_x86_test *pmu = hw_require_pmu();
    struct hw_pmi_setup setup;

    if (!perfmon_dev_get(false)->overflow_intr) {
        test_skip("polled device: no overflow interrupt");
    }

    hw_require_event(PERFMON_EV_BRANCH, HW_KERN, "branches");

    for (unsigned int i = 0; i < pmu->nr_general; i++) {
        setup.target = &branches;
        setup.nr_fillers = i;
        setup.bits = hw_low_bits(i + 1);
        hw_pmi_check(&setup);
    }
}

/* ------------------------------------------------------------------ */
/* Thread and CPU events                                               */
/* ------------------------------------------------------------------ */

struct hw_worker {
    bool busy;
    uint64_t count;
};

static void
hw_worker_main(void *arg)
{
    struct hw_worker *w = arg;
    struct perfmon_event insns;

    hw_attach_self(&insns, PERFMON_EV_INSTRUCTION, HW_KERN);

    if (w->busy) {
        hw_loop(HW_N);
    } else {
        thread_delay(5);
    }

    w->count = perfmon_event_read(&insns);
    TEST_ASSERT_EQ(perfmon_event_detach(&insns), 0);
}

/*
 * A thread event counts its thread only: a busy thread and a sleeping
 * one share a CPU; the busy one counts at least the loop, the sleeping
 * one less than 1% of that.
 */
TEST_DEFINE(pmu_hw, thread_event_counts_only_its_thread)
{
    struct hw_worker busy = { .busy = true }, idle = { .busy = false };
    unsigned int cpu = cpu_count() - 1;
    struct thread *tb, *ti;

    hw_require_pmu();
    hw_require_event(PERFMON_EV_INSTRUCTION, HW_KERN, "instructions");
    tb = test_thread_start("hw-busy", 1ULL << cpu, hw_worker_main, &busy);
    ti = test_thread_start("hw-idle", 1ULL << cpu, hw_worker_main, &idle);
    thread_join(tb);
    thread_join(ti);
    test_diag("busy %llu, sleeping %llu", (unsigned long long)busy.count,
              (unsigned long long)idle.count);
    TEST_ASSERT_GE(busy.count, HW_N * HW_LOOP_INSNS);
    TEST_ASSERT_LT(idle.count, busy.count / 100);
}

static void
hw_loop_main(void *arg)
{
    (void)arg;
    hw_loop(HW_N);
}

/*
 * CPU events on every CPU, each CPU running the loop in a thread bound to
 * it: each CPU's events count at least the loop (instructions 10N,
 * cycles N); there is no upper bound, as a CPU event counts whatever else
 * ran there.
 */
TEST_DEFINE(pmu_hw, cpu_events_count_every_cpu_loop)
{
    static struct perfmon_event insns[CPU_MAX], cycles[CPU_MAX];
    static struct thread *threads[CPU_MAX];
    unsigned int nr_cpus = cpu_count();

    hw_require_pmu();
    hw_require_event(PERFMON_EV_INSTRUCTION, HW_KERN, "instructions");
    hw_require_event(PERFMON_EV_CYCLE, HW_KERN, "cycles");

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        TEST_ASSERT_EQ(perfmon_event_init(&insns[cpu],
                                          PERFMON_EV_INSTRUCTION,
                                          HW_KERN), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&insns[cpu], cpu), 0);
        TEST_ASSERT_EQ(perfmon_event_init(&cycles[cpu], PERFMON_EV_CYCLE,
                                          HW_KERN), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&cycles[cpu], cpu), 0);
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        threads[cpu] = test_thread_start("hw-loop", 1ULL << cpu,
                                         hw_loop_main, NULL);
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        thread_join(threads[cpu]);
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        uint64_t i = perfmon_event_read(&insns[cpu]);
        uint64_t c = perfmon_event_read(&cycles[cpu]);

        test_diag("cpu%u: %llu instructions, %llu cycles", cpu,
                  (unsigned long long)i, (unsigned long long)c);
        TEST_ASSERT_GE(i, HW_N * HW_LOOP_INSNS);
        TEST_ASSERT_GE(c, HW_N);
        TEST_ASSERT_EQ(perfmon_event_detach(&insns[cpu]), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&cycles[cpu]), 0);
    }
}

/* ------------------------------------------------------------------ */
/* Sampling                                                            */
/* ------------------------------------------------------------------ */

/*
 * Sampling instructions retired over hw_loop. The period is prime, so
 * that it never lines up with the loop's ten instructions (every sample
 * would otherwise land on the same one); the loop is a quarter of HW_N
 * iterations, about 250 samples, well under perfmon's throttling limit of
 * 1000 samples per CPU and clock tick.
 */
#define HW_SAMPLE_PERIOD    10007
#define HW_SAMPLE_ITERS     (HW_N / 4)
#define HW_SAMPLE_RING      65536   /* bytes per CPU: 1365 samples */

struct hw_sample_run {
    bool cpu_event;             /* else the calling thread's event */
    bool intr_off;              /* the loop runs with interrupts disabled */
    uint64_t nr_inside;         /* samples taken before they came back */
    uint64_t count;             /* the sampling event's count */
    uint64_t nr_samples;        /* as the event tells */
    uint64_t ticks;             /* clock ticks the run took */
    uint32_t tid;               /* the thread running the loop */
    unsigned int nr_read;       /* sample records read back */
    unsigned int nr_in_loop;    /* of them, with an ip in hw_loop */
};

/*
 * Read every record of every CPU's ring: samples only (a LOST record
 * would mean the ring was too small, a THROTTLE record that the rate
 * limit hid periods: either makes the count check meaningless), each
 * with the event's cookie and period; count those whose ip is in
 * hw_loop, which must come from the thread running it.
 */
static void
hw_sample_read_all(struct perfmon_session *session, struct hw_sample_run *run)
{
    static union {
        struct perfmon_record_header header;
        struct perfmon_record_sample sample;
        uint8_t bytes[PERFMON_SESSION_RECORD_MAX];
    } buf;
    size_t size;

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        int error;

        while ((error = perfmon_session_read(session, cpu, &buf,
                                             sizeof(buf), &size)) == 0) {
            uintptr_t offset = 0;
            const char *name;

            TEST_ASSERT_EQ(buf.header.type, PERFMON_RECORD_SAMPLE);
            TEST_ASSERT_EQ(buf.header.cpu, cpu);
            TEST_ASSERT_EQ(buf.sample.cookie, HW_SAMPLE_PERIOD);
            TEST_ASSERT_EQ(buf.sample.period, HW_SAMPLE_PERIOD);
            run->nr_read++;
            name = ksym_lookup((uintptr_t)buf.sample.ip, &offset);

            if (name != NULL && strcmp(name, "hw_loop") == 0) {
                TEST_ASSERT_EQ(buf.sample.tid, run->tid);
                run->nr_in_loop++;
            } else {
                test_diag("sample outside hw_loop: ip %#llx (%s+%#lx), "
                          "tid %u", (unsigned long long)buf.sample.ip,
                          (name != NULL) ? name : "?",
                          (unsigned long)offset, buf.sample.tid);
            }
        }

        TEST_ASSERT_EQ(error, EAGAIN);
    }
}

/*
 * One sampling run: instructions retired in kernel mode with
 * HW_SAMPLE_PERIOD, on the calling thread or (cpu_event) on the CPU it
 * is bound to, over hw_loop(HW_SAMPLE_ITERS) with preemption disabled.
 */
static void
hw_sample_once(struct hw_sample_run *run)
{
    struct perfmon_sample_attr attr = {
        .period = HW_SAMPLE_PERIOD, .cookie = HW_SAMPLE_PERIOD,
    };
    struct perfmon_session *session;
    struct perfmon_event event;
    uint64_t t0;

    TEST_ASSERT_EQ(perfmon_session_create(&session, HW_SAMPLE_RING), 0);
    attr.session = session;
    run->tid = thread_id(thread_self());
    TEST_ASSERT_EQ(perfmon_event_init(&event, PERFMON_EV_INSTRUCTION,
                                      HW_KERN), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    t0 = clock_get_time();

    if (run->cpu_event) {
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_id()), 0);
    } else {
        TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), 0);
    }

    if (run->intr_off) {
        unsigned long flags = cpu_intr_save();

        hw_loop(HW_SAMPLE_ITERS);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &run->nr_inside),
                       0);
        cpu_intr_restore(flags);
    } else {
        thread_preempt_disable();
        hw_loop(HW_SAMPLE_ITERS);
        thread_preempt_enable();
    }

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    run->ticks = clock_get_time() - t0;
    run->count = perfmon_event_read(&event);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &run->nr_samples), 0);
    hw_sample_read_all(session, run);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * Check a run. The loop alone retires 10 instructions per iteration
 * (hw_range_of), so the event counts at least that and, over the
 * attach-to-detach window, at most 2% more (HW_BOUND_INSNS, measured
 * with a counting event first).
 *
 * Samples: one per period of the event's own count. perfmon counts the
 * events it samples on, so the count and the sample number agree
 * exactly but for the last period, whose overflow may still be on its
 * way (skid: the PMI comes a few events after the overflow, the
 * imprecision PEBS exists to remove, Intel SDM vol. 3B, chapter 21; AMD
 * APM vol. 2, 13.3 on instruction-based sampling) when detach reads the
 * count: count / period, plus or minus one.
 *
 * Where: a sample's ip is where the PMI came. The setup and teardown
 * around the loop run far fewer than HW_SAMPLE_PERIOD instructions, so
 * together they hold at most one period's end; each interrupt taken
 * during the run (a clock tick, a cross-CPU call) runs fewer too, so
 * holds at most one more. Every other sample lies in hw_loop, from the
 * thread running it.
 */
static void
hw_sample_check(const struct hw_sample_run *run)
{
    struct hw_range insns = hw_range_of(HW_BOUND_INSNS, HW_SAMPLE_ITERS, 0);
    uint64_t expected = run->count / HW_SAMPLE_PERIOD;
    unsigned int outside = run->nr_read - run->nr_in_loop;

    test_diag("%s event: %llu instructions, %llu samples (%u read, %u in "
              "hw_loop), expected %llu +/- 1, %llu ticks",
              run->cpu_event ? "CPU" : "thread",
              (unsigned long long)run->count,
              (unsigned long long)run->nr_samples, run->nr_read,
              run->nr_in_loop, (unsigned long long)expected,
              (unsigned long long)run->ticks);

    if (!run->cpu_event) {
        HW_ASSERT_RANGE("sampled instructions", run->count, insns);
    } else {
        TEST_ASSERT_GE(run->count, insns.lo);
    }

    TEST_ASSERT_EQ(run->nr_read, run->nr_samples);
    TEST_ASSERT_GE(run->nr_samples + 1, expected);
    TEST_ASSERT_LE(run->nr_samples, expected + 1);
    TEST_ASSERT_LE(outside, 2 + run->ticks);
}

static void
hw_sample_require(void)
{
    hw_require_pmu();

    if (perfmon_dev_get(false)->max_period == 0) {
        test_skip("the device cannot sample (polled, no overflow "
                  "interrupt)");
    }

    hw_require_event(PERFMON_EV_INSTRUCTION, HW_KERN, "instructions");
}

/*
 * Sampling instructions of the calling thread over the known loop, after
 * measuring the loop with a counting event: see hw_sample_check.
 */
TEST_DEFINE(pmu_hw, sampling_thread_event_lands_in_known_loop)
{
    struct hw_sample_run run = { .cpu_event = false };
    struct perfmon_event event;
    uint64_t count;

    hw_sample_require();
    hw_attach_self(&event, PERFMON_EV_INSTRUCTION, HW_KERN);
    hw_measure(&event, 1, &count, HW_SAMPLE_ITERS);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    HW_ASSERT_RANGE("counted instructions", count,
                    hw_range_of(HW_BOUND_INSNS, HW_SAMPLE_ITERS, 0));
    hw_sample_once(&run);
    hw_sample_check(&run);
}

/*
 * The PMI as an NMI (perfmon.pmi=nmi, the default): the same run with
 * interrupts disabled around the loop. Every period's sample but the
 * last's (skid) is taken before interrupts come back on, and lies in
 * hw_loop: a maskable PMI would have been held back to the loop's end.
 */
TEST_DEFINE(pmu_hw, nmi_samples_land_in_interrupts_disabled_loop)
{
    struct hw_sample_run run = { .intr_off = true };

    hw_sample_require();

    if (!perfmon_dev_get(false)->nmi) {
        test_skip("the PMI is a maskable vector (perfmon.pmi=irq)");
    }

    hw_sample_once(&run);
    hw_sample_check(&run);
    TEST_ASSERT_GE(run.nr_inside + 1, run.count / HW_SAMPLE_PERIOD);
    TEST_ASSERT_GE(run.nr_in_loop + 2, run.nr_inside);
}

static void
hw_sample_cpu_main(void *arg)
{
    hw_sample_once(arg);
}

/*
 * The same with a CPU event, from a thread bound to the last CPU: the
 * event counts whatever runs there (the idle thread halts), so only the
 * lower bound of the count holds; the samples are checked as above.
 */
TEST_DEFINE(pmu_hw, sampling_cpu_event_lands_in_known_loop)
{
    struct hw_sample_run run = { .cpu_event = true };
    unsigned int cpu = cpu_count() - 1;

    hw_sample_require();
    thread_join(test_thread_start("hw-sample", 1ULL << cpu,
                                  hw_sample_cpu_main, &run));
    hw_sample_check(&run);
}

