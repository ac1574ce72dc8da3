/*
 * What the hardware PMU suites share (pmu_hw, vendor-neutral, and
 * pmu_intel_hw): the loop whose instructions are known exactly, the
 * ranges its counts must fall in, measurement and overflow-interrupt
 * helpers, and the registered driver's description in the x86 drivers'
 * test interface (pmu/pmu_x86_test.h), for the few things perfmon's
 * public API does not say (the test hook that presets counters, PMI
 * statistics, the overflow status).
 *
 * The loop (hw_loop): N iterations of exactly ten instructions, one of
 * them a branch. Ranges, with N the iterations (hw_range_of explains each
 * bound; references: Intel SDM vol. 3B, chapter 21, table 21-1; for AMD
 * the family PPRs, "Core Performance Monitor Counters": PMCx076 cycles
 * not in halt, PMCx0C0 retired instructions, PMCx0C2 retired branch
 * instructions; kvm-unit-tests x86/pmu.c uses the same three ranges for
 * the same loop on both vendors):
 *
 *   instructions retired    [10N, 10.2N]  exactly 10N in the loop
 *   branches retired        [N, 1.1N]     exactly N in the loop
 *   core cycles             [N, 50N]
 *   branch misses           [0, 0.1N]     one predictable branch
 *   cache references/misses [0, N]        the loop touches no memory
 *   reference cycles        [0.5, 1.1] x TSC ticks over the loop
 *   topdown slots (Intel)   [N, 400N]     pipeline width (<= 8) x cycles
 *   USER-only events        exactly 0     this kernel never leaves ring 0
 *
 * Every upper bound stays far below 2^31, the least a counter can wrap
 * by, so a wrap lost or counted twice always lands outside the range.
 */
#ifndef TESTS_PMU_HW_UTIL_H
#define TESTS_PMU_HW_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <pmu/pmu_x86.h>
#include <pmu/pmu_x86_test.h>

#define HW_N                1000000ULL  /* iterations of hw_loop */
#define HW_LOOP_INSNS       10          /* instructions per iteration */

#define HW_KERN             PERFMON_EF_KERN
#define HW_USER             PERFMON_EF_USER
#define HW_RAW              PERFMON_EF_RAW

/* Counter mask field, bits 31:24 of both vendors' event select. */
#define HW_EVTSEL_CMASK(n)  ((unsigned int)(n) << 24)

/* Ranges, see hw_range_of. */
enum hw_bound {
    HW_BOUND_INSNS,
    HW_BOUND_BRANCHES,
    HW_BOUND_CYCLES,
    HW_BOUND_BRANCH_MISSES,
    HW_BOUND_CACHE,
    HW_BOUND_REF,           /* the loose range, both vendors */
    HW_BOUND_REF_INTEL,     /* Intel fixed counter 2, see hw_range_of */
    HW_BOUND_SLOTS,
    HW_BOUND_ZERO,
};

struct hw_range {
    uint64_t lo;
    uint64_t hi;
};

/* An event a test attaches, and the range it must count over hw_loop. */
struct hw_spec {
    const char *name;
    unsigned int id;
    unsigned int flags;
    unsigned int arch;      /* Intel: the CPUID.0AH:EBX bit it needs */
    enum hw_bound bound;
};

/*
 * The driver that registered the hardware perfmon device, as the x86 PMU
 * layer describes it; skip the test ("no hardware PMU registered ...")
 * when none did. Thread context.
 */
const struct pmu_x86_test *hw_require_pmu(void);

/* Skip unless perfmon accepts the event (the driver maps it). */
void hw_require_event(unsigned int id, unsigned int flags, const char *name);

/* True when the hardware device can count the event. */
bool hw_event_supported(unsigned int id, unsigned int flags);

/* Exactly HW_LOOP_INSNS instructions per iteration, one a branch. */
void hw_loop(uint64_t iters);

/* True under a hypervisor (CPUID.1:ECX[31]). */
bool hw_under_hypervisor(void);

/* What an event must count over hw_loop(iters), which took tsc ticks. */
struct hw_range hw_range_of(enum hw_bound bound, uint64_t iters,
                            uint64_t tsc);

#define HW_ASSERT_RANGE(what, value, range) \
    hw_assert_range(__FILE__, __LINE__, what, value, range)

/* Print the value (a hardware run's record), fail when out of range. */
void hw_assert_range(const char *file, int line, const char *what,
                     uint64_t value, struct hw_range range);

void hw_attach_self(struct perfmon_event *event, unsigned int id,
                    unsigned int flags);
void hw_attach_spec(struct perfmon_event *event, const struct hw_spec *spec);
void hw_detach_all(struct perfmon_event *events, unsigned int n);

/* The bits of counters 0 to n - 1. */
uint64_t hw_low_bits(unsigned int n);

/*
 * Fail unless the thread's events use exactly the counters in bits, where
 * the driver has a global control to read.
 */
void hw_assert_counters_used(uint64_t bits);

/*
 * Read every event, run the loop, read them again: counts in deltas.
 * Return the TSC ticks the loop took, with preemption disabled so that
 * the thread's counters run for all of them.
 */
uint64_t hw_measure(struct perfmon_event *events, unsigned int n,
                    uint64_t *deltas, uint64_t iters);

#define HW_PMI_MAX_EVENTS   (PERFMON_MAX_COUNTERS + 1)

/* Events of one overflow check: fillers, then the counter under test. */
struct hw_pmi_setup {
    const struct hw_spec *target;
    unsigned int nr_fillers;    /* general counters to occupy first */
    uint64_t bits;              /* counters of all of them */
    struct perfmon_event events[HW_PMI_MAX_EVENTS];
};

/*
 * Measure the target over one loop, preset its counter to overflow in the
 * middle of the next loop, run twice: each time exactly one PMI that
 * found an overflow, nothing left pending, the LVT entry unmasked, and
 * the count in its range.
 */
void hw_pmi_check(struct hw_pmi_setup *setup);

#endif /* TESTS_PMU_HW_UTIL_H */
