/*
 * Intel PMU on real counters: runs where CPUID reports an architectural
 * PMU (KVM with the host PMU exposed, `make check-hw`), and reports SKIP
 * with the reason everywhere else. Bounds follow what an exactly known
 * loop must count: the loop below retires 10 instructions per iteration.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/perfmon.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <machine/pmu_intel.h>

#include "test_util.h"

#define HW_LOOP_ITERS       1000000ULL
#define HW_LOOP_INSNS       10      /* instructions per iteration */

static void
hw_require_pmu(void)
{
    if (pmu_intel_get_info()->version == 0 || perfmon_get_dev(false) == NULL) {
        test_skip("no architectural PMU (CPUID.0AH version 0)");
    }
}

/* Exactly HW_LOOP_INSNS instructions per iteration: 8 adds, dec, jnz. */
static void
hw_loop(uint64_t iters)
{
    uint64_t scratch = 0;

    __asm__ volatile("1:\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "decq %0\n"
                     "jnz 1b\n"
                     : "+r"(iters), "+r"(scratch) : : "cc");
}

static void
hw_attach_self(struct perfmon_event *event, unsigned int id,
               unsigned int flags)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(event, thread_self()), 0);
}

/* Instructions retired by the loop: within [1.0, 1.02] of 10 per pass. */
TEST_DEFINE(pmu_intel_hw, instructions_of_known_loop)
{
    const uint64_t expected = HW_LOOP_ITERS * HW_LOOP_INSNS;
    struct perfmon_event insns, cycles;
    uint64_t i0, i1, c0, c1;

    hw_require_pmu();
    hw_attach_self(&insns, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    hw_attach_self(&cycles, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    i0 = perfmon_event_read(&insns);
    c0 = perfmon_event_read(&cycles);
    hw_loop(HW_LOOP_ITERS);
    i1 = perfmon_event_read(&insns);
    c1 = perfmon_event_read(&cycles);
    test_diag("loop: %llu instructions, %llu cycles (expected %llu "
              "instructions)", (unsigned long long)(i1 - i0),
              (unsigned long long)(c1 - c0), (unsigned long long)expected);
    TEST_ASSERT_GE(i1 - i0, expected);
    TEST_ASSERT_LE(i1 - i0, expected + expected / 50);
    TEST_ASSERT_GT(c1 - c0, 0);
    TEST_ASSERT_GE(c1 - c0, (i1 - i0) / 8);
    TEST_ASSERT_EQ(perfmon_event_detach(&insns), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&cycles), 0);
}

/*
 * The fixed instructions counter and a general counter programmed with the
 * same event (different ring bits, so they cannot share a slot) agree
 * within 1% in kernel code.
 */
TEST_DEFINE(pmu_intel_hw, fixed_and_general_counters_agree)
{
    struct perfmon_event fixed, general;
    uint64_t f, g;

    hw_require_pmu();

    if (!(pmu_intel_get_info()->fixed_mask & 1)) {
        test_skip("no fixed counter 0");
    }

    hw_attach_self(&fixed, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    hw_attach_self(&general, 0x00c0, PERFMON_EF_RAW | PERFMON_EF_KERN
                                     | PERFMON_EF_USER);
    TEST_ASSERT_NE(perfmon_event_pmc_index(&fixed),
                   perfmon_event_pmc_index(&general));
    hw_loop(HW_LOOP_ITERS);
    f = perfmon_event_read(&fixed);
    g = perfmon_event_read(&general);
    test_diag("fixed %llu, general %llu", (unsigned long long)f,
              (unsigned long long)g);
    TEST_ASSERT_GT(f, 0);
    TEST_ASSERT_LE(f > g ? f - g : g - f, f / 100);
    TEST_ASSERT_EQ(perfmon_event_detach(&fixed), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&general), 0);
}

/*
 * A counter started just before overflow raises a PMI that perfmon sees:
 * the PMI and overflow counts grow and the count stays within bounds.
 */
TEST_DEFINE(pmu_intel_hw, preset_counter_raises_pmi)
{
    const uint64_t expected = HW_LOOP_ITERS * HW_LOOP_INSNS;
    struct perfmon_event insns;
    uint64_t pmis, overflows, i0, i1;
    unsigned int cpu;

    hw_require_pmu();

    if (pmu_intel_get_info()->version < 2) {
        test_skip("version 1 has no overflow interrupt");
    }

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();
    TEST_ASSERT_EQ(pmu_intel_set_start_gap(1000), 0);
    pmis = pmu_intel_nr_pmis(cpu);
    overflows = perfmon_nr_overflows(cpu);
    hw_attach_self(&insns, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    i0 = perfmon_event_read(&insns);
    hw_loop(HW_LOOP_ITERS);
    i1 = perfmon_event_read(&insns);
    TEST_ASSERT_EQ(perfmon_event_detach(&insns), 0);
    TEST_ASSERT_EQ(pmu_intel_set_start_gap(0), 0);
    TEST_ASSERT_GT(pmu_intel_nr_pmis(cpu), pmis);
    TEST_ASSERT_GT(perfmon_nr_overflows(cpu), overflows);
    TEST_ASSERT_GE(i1 - i0, expected);
    TEST_ASSERT_LE(i1 - i0, expected + expected / 50);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

struct hw_worker {
    bool busy;
    uint64_t count;
};

static void
hw_worker_main(void *arg)
{
    struct hw_worker *w = arg;
    struct perfmon_event insns;

    hw_attach_self(&insns, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);

    if (w->busy) {
        hw_loop(HW_LOOP_ITERS);
    } else {
        thread_delay(5);
    }

    w->count = perfmon_event_read(&insns);
    TEST_ASSERT_EQ(perfmon_event_detach(&insns), 0);
}

/* A thread event counts its thread only: busy thread vs sleeping one. */
TEST_DEFINE(pmu_intel_hw, thread_event_counts_only_its_thread)
{
    struct hw_worker busy = { .busy = true }, idle = { .busy = false };
    unsigned int cpu = cpu_count() - 1;
    struct thread *tb, *ti;

    hw_require_pmu();
    tb = test_thread_start("hw-busy", 1ULL << cpu, hw_worker_main, &busy);
    ti = test_thread_start("hw-idle", 1ULL << cpu, hw_worker_main, &idle);
    thread_join(tb);
    thread_join(ti);
    test_diag("busy %llu, sleeping %llu", (unsigned long long)busy.count,
              (unsigned long long)idle.count);
    TEST_ASSERT_GE(busy.count, HW_LOOP_ITERS * HW_LOOP_INSNS);
    TEST_ASSERT_LT(idle.count, busy.count / 100);
}

/* CPU events count on every CPU (each runs its tick interrupts). */
TEST_DEFINE(pmu_intel_hw, cpu_events_count_on_every_cpu)
{
    struct perfmon_event events[CPU_MAX];

    hw_require_pmu();

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        TEST_ASSERT_EQ(perfmon_event_init(&events[cpu],
                                          PERFMON_EV_INSTRUCTION,
                                          PERFMON_EF_KERN), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[cpu], cpu), 0);
    }

    thread_delay(5);

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        uint64_t value = perfmon_event_read(&events[cpu]);

        test_diag("cpu%u: %llu instructions", cpu,
                  (unsigned long long)value);
        TEST_ASSERT_GT(value, 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&events[cpu]), 0);
    }
}
