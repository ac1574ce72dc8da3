/*
 * The x86 PMU drivers' test interface: what the host tests (tests/host/)
 * and the hardware suites (tests/hw/) may ask of a driver beyond
 * perfmon's API. None of it is on a production path: the driver's
 * struct pmu_x86_vendor, which the x86 layer drives, carries no test
 * hook; a driver whose device registered describes itself to the tests
 * apart, in a struct pmu_x86_test (pmu_x86_test_register).
 */
#ifndef X86_PMU_X86_TEST_H
#define X86_PMU_X86_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon_dev.h>

/*
 * What the hardware suites (tests/hw/pmu_hw_util.c) query of the
 * registered driver. The driver fills every field before
 * pmu_x86_test_register and changes none after.
 */
struct pmu_x86_test {
    struct perfmon_dev *dev;        /* the driver's registered device */

    /*
     * Counters that take any event (Intel: the general ones); counters
     * generic events can fill together (Intel adds the fixed counters 0
     * to 2 whose events CPUID reports); the raw code of instructions
     * retired.
     */
    unsigned int nr_general;
    unsigned int nr_generic_slots;
    unsigned int raw_insns;

    /* The driver's start gap hook (pmu_intel_set_start_gap, ...). */
    int (*set_start_gap)(uint64_t gap);

    /*
     * Local, preemption disabled: store the calling CPU's enabled
     * counters (bit i: counter i, Intel fixed counter j at 32 + j) and
     * return true, or return false where there is no global control
     * register to read (Intel version 1, AMD without PerfMonV2).
     */
    bool (*enabled)(uint64_t *bitsp);

    /*
     * Local, preemption disabled: of the running counters in bits, those
     * with an overflow the driver has not acknowledged.
     */
    uint64_t (*pending)(uint64_t bits);
};

/*
 * Make test the description the suites get (pmu_x86_test_get). Called by
 * a driver once its device registered. Boot only, thread context.
 */
void pmu_x86_test_register(const struct pmu_x86_test *test);

/*
 * The registered driver's description, or NULL when no driver's device
 * registered. Any context.
 */
const struct pmu_x86_test *pmu_x86_test_get(void);

/*
 * The smallest start gap. A counter keeps counting while the driver and
 * perfmon work on it, so it may wrap before perfmon first reads it; that
 * is counted exactly, because start returns the value it programmed and
 * perfmon counts from there. A gap of 1 would preset the counter to all
 * ones, where its overflow is the first event after the WRMSR that
 * enables it - possibly that WRMSR's own retirement, which the SDM does
 * not say is counted or not; the floor keeps at least one known event
 * between the enable and the wrap.
 */
#define PMU_INTEL_START_GAP_MIN 2

/*
 * Make every counter start gap events before it overflows, instead of at
 * zero (0 restores the default); tests use it to reach overflows quickly.
 * Return 0, or EINVAL when the gap is below PMU_INTEL_START_GAP_MIN (and
 * not 0), exceeds the narrowest counter or, without full-width writes,
 * 2^31. Thread context, with no event attached.
 */
int pmu_intel_set_start_gap(uint64_t gap);

/*
 * The smallest start gap: a gap of 1 would put the overflow on the first
 * event after the enabling WRMSR, possibly that WRMSR itself; the floor
 * keeps one known event between the two.
 */
#define PMU_AMD_START_GAP_MIN   2

/*
 * Make every counter start gap events before it overflows instead of at
 * its default (0 restores it); tests use it to reach overflows quickly.
 * Return 0, or EINVAL when the gap is below PMU_AMD_START_GAP_MIN (and
 * not 0) or larger than the counter. Thread context, no event attached.
 */
int pmu_amd_set_start_gap(uint64_t gap);

#endif /* X86_PMU_X86_TEST_H */
