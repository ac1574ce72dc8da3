/*
 * Host tests of the Intel PMU driver's detection (pmu_intel_detect) against
 * CPUID and IA32_PERF_CAPABILITIES answers of the PMU model. Detection
 * registers nothing, so every test reconfigures the model.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <pmu/pmu_intel.h>

#include "host_test.h"
#include <pmu/model/pmu_model.h>

/* EDX of a version 1 or 5 PMU that claims fixed counters it must not use. */
#define DETECT_EDX_3_FIXED_48   MODEL_CPUID_A_EDX(3, 48)

/* Detect with config and check that the PMU saw no access but reads. */
static void
detect_run(const struct model_config *config, struct pmu_intel_info *info)
{
    struct model_regs before, after;
    const char *diff;

    model_reset(config);
    model_snapshot(&before);
    memset(info, 0xa5, sizeof(*info));
    pmu_intel_detect(info);
    model_snapshot(&after);
    diff = model_regs_diff(&before, &after);

    if (diff != NULL) {
        HOST_FAIL("detection changed a register: %s", diff);
    }

    if (model_nr_faults() != 0) {
        HOST_FAIL("%u #GP, first: %s", model_nr_faults(),
                  model_first_fault());
    }
}

static void
detect_assert_none(const struct pmu_intel_info *info)
{
    HOST_ASSERT_EQ(info->version, 0);
    HOST_ASSERT_EQ(info->nr_gp, 0);
    HOST_ASSERT_EQ(info->gp_width, 0);
    HOST_ASSERT_EQ(info->nr_fixed, 0);
    HOST_ASSERT_EQ(info->fixed_width, 0);
    HOST_ASSERT_EQ(info->fixed_mask, 0);
    HOST_ASSERT_EQ(info->ebx_length, 0);
    HOST_ASSERT_EQ(info->events_available, 0);
    HOST_ASSERT_EQ(info->full_width_writes, false);
}

HOST_TEST(no_pmu_when_max_leaf_below_0a)
{
    /* Leaf 0AH would describe a PMU, but the CPU does not have the leaf. */
    struct model_config config = {
        .max_leaf = 0x9,
        .a_eax = MODEL_CPUID_A_EAX(2, 4, 48, 7),
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    detect_assert_none(&info);
}

HOST_TEST(no_pmu_when_version_is_0)
{
    /* Only the version says whether the other fields mean anything. */
    struct model_config config = {
        .max_leaf = 0xd,
        .a_eax = MODEL_CPUID_A_EAX(0, 8, 48, 7),
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    detect_assert_none(&info);
}

HOST_TEST(version_1_two_counters_no_fixed)
{
    /* Version 1 has no fixed counters, whatever EDX and ECX say. */
    struct model_config config = {
        .max_leaf = 0xd,
        .a_eax = MODEL_CPUID_A_EAX(1, 2, 40, 7),
        .a_ecx = 0x7,
        .a_edx = DETECT_EDX_3_FIXED_48,
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.version, 1);
    HOST_ASSERT_EQ(info.nr_gp, 2);
    HOST_ASSERT_EQ(info.gp_width, 40);
    HOST_ASSERT_EQ(info.nr_fixed, 0);
    HOST_ASSERT_EQ(info.fixed_width, 0);
    HOST_ASSERT_EQ(info.fixed_mask, 0);
    HOST_ASSERT_EQ(info.ebx_length, 7);
    HOST_ASSERT_EQ(info.events_available, 0x7f);
    HOST_ASSERT_EQ(info.full_width_writes, false);
}

HOST_TEST(version_2_four_gp_three_fixed)
{
    /* ECX only lists fixed counters from version 5 on: ignored here. */
    struct model_config config = {
        .max_leaf = 0xd,
        .a_eax = MODEL_CPUID_A_EAX(2, 4, 48, 7),
        .a_ecx = 0x8,
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.version, 2);
    HOST_ASSERT_EQ(info.nr_gp, 4);
    HOST_ASSERT_EQ(info.gp_width, 48);
    HOST_ASSERT_EQ(info.nr_fixed, 3);
    HOST_ASSERT_EQ(info.fixed_width, 48);
    HOST_ASSERT_EQ(info.fixed_mask, 0x7);
    HOST_ASSERT_EQ(info.ebx_length, 7);
    HOST_ASSERT_EQ(info.events_available, 0x7f);
    HOST_ASSERT_EQ(info.full_width_writes, false);
}

HOST_TEST(version_4_eight_gp)
{
    struct model_config config = {
        .max_leaf = 0x1f,
        .a_eax = MODEL_CPUID_A_EAX(4, 8, 48, 7),
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.version, 4);
    HOST_ASSERT_EQ(info.nr_gp, 8);
    HOST_ASSERT_EQ(info.gp_width, 48);
    HOST_ASSERT_EQ(info.fixed_mask, 0x7);
    HOST_ASSERT_EQ(info.fixed_width, 48);
}

HOST_TEST(gp_counters_beyond_driver_limit_are_not_used)
{
    struct model_config config = {
        .max_leaf = 0x1f,
        .a_eax = MODEL_CPUID_A_EAX(4, 12, 48, 7),
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
    };
    struct pmu_intel_info info;

    /* The driver handles 8 (PMU_INTEL_MAX_GP). */
    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.nr_gp, 8);
    HOST_ASSERT_EQ(info.gp_width, 48);
}

HOST_TEST(version_5_fixed_bitmask_skips_counter_1)
{
    /* EDX[4:0] = 0: only the ECX bitmask names fixed counters 0 and 2. */
    struct model_config config = {
        .max_leaf = 0x23,
        .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
        .a_ecx = 0x5,
        .a_edx = MODEL_CPUID_A_EDX(0, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.version, 5);
    HOST_ASSERT_EQ(info.nr_gp, 8);
    HOST_ASSERT_EQ(info.fixed_mask, 0x5);
    HOST_ASSERT_EQ(info.fixed_width, 48);
    HOST_ASSERT_EQ(info.ebx_length, 8);
    HOST_ASSERT_EQ(info.events_available, 0xff);
}

HOST_TEST(version_5_fixed_bitmask_adds_to_count)
{
    /* Counter j exists when ECX[j] is set or EDX[4:0] > j. */
    struct model_config config = {
        .max_leaf = 0x23,
        .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
        .a_ecx = 0x4,
        .a_edx = MODEL_CPUID_A_EDX(1, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.fixed_mask, 0x5);
}

HOST_TEST(ebx_vector_of_8_with_llc_misses_unavailable)
{
    struct model_config config = {
        .max_leaf = 0x23,
        .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
        .a_ebx = 1U << 4,
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.ebx_length, 8);
    HOST_ASSERT_EQ(info.events_available, 0xef);
}

HOST_TEST(ebx_bits_beyond_vector_length_mean_nothing)
{
    /*
     * A vector of 5: branches and branch misses are unavailable although
     * their EBX bits are clear, and set bits past the length are ignored.
     */
    struct model_config config = {
        .max_leaf = 0xd,
        .a_eax = MODEL_CPUID_A_EAX(2, 4, 48, 5),
        .a_ebx = 0xffffff20 | (1U << 0),
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
    };
    struct pmu_intel_info info;

    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.ebx_length, 5);
    HOST_ASSERT_EQ(info.events_available, 0x1e);
}

HOST_TEST(perf_capabilities_read_only_with_pdcm)
{
    struct model_config config = {
        .max_leaf = 0xd,
        .a_eax = MODEL_CPUID_A_EAX(2, 4, 48, 7),
        .a_edx = MODEL_CPUID_A_EDX(3, 48),
        .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
    };
    struct pmu_intel_info info;

    /* Without PDCM the MSR does not exist: reading it would #GP. */
    config.cpuid1_ecx = 0;
    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.full_width_writes, false);
    HOST_ASSERT_EQ(model_nr_reads(MODEL_MSR_PERF_CAP), 0);
    HOST_ASSERT_EQ(model_nr_accesses(), 0);

    config.cpuid1_ecx = MODEL_CPUID1_ECX_PDCM;
    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.full_width_writes, true);
    HOST_ASSERT_EQ(model_nr_reads(MODEL_MSR_PERF_CAP), 1);
    HOST_ASSERT_EQ(model_nr_accesses(), 1);

    /* PDCM with other capabilities but not FW_WRITE. */
    config.perf_capabilities = ~MODEL_PERF_CAP_FW_WRITE;
    detect_run(&config, &info);
    HOST_ASSERT_EQ(info.full_width_writes, false);
    HOST_ASSERT_EQ(model_nr_reads(MODEL_MSR_PERF_CAP), 1);
}

HOST_TEST_MAIN()
