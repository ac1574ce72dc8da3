/*
 * Host tests of the Intel PMU driver's setup on PMUs whose MSRs do not do
 * what CPUID leaf 0AH promises, as under a hypervisor that advertises the
 * leaf without emulating the MSRs: the driver must probe them through the
 * exception-safe accessors, log one line and register nothing, leaving
 * perfmon to its software PMU - no unhandled #GP (a panic in the kernel).
 * A PMU registers once per process, so the PMU that works comes last.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/init.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/syscnt.h>
#include <pmu/pmu_intel.h>

#include "host_env.h"
#include "host_test.h"
#include <pmu/model/pmu_model.h>

/* Version 5, full-width writes (so IA32_PERF_CAPABILITIES is read too). */
static const struct model_config probe_config = {
    .max_leaf = 0x23,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
    .a_ecx = 0x5,
    .a_edx = MODEL_CPUID_A_EDX(0, 40),
    .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
};

static bool probe_perfmon_ready;

/* Set the model up as config with MSRs behaving as pmu_msrs, and run setup. */
static void
probe_setup(enum model_pmu_msrs pmu_msrs, unsigned int *log_linesp)
{
    struct model_config config = probe_config;
    unsigned int log_lines;

    config.pmu_msrs = pmu_msrs;
    model_reset(&config);

    if (!probe_perfmon_ready) {
        HOST_ASSERT_EQ(init_op_perfmon_setup.fn(), 0);
        probe_perfmon_ready = true;
    }

    log_lines = host_env_nr_log_lines();
    HOST_ASSERT_EQ(init_op_pmu_intel_setup.fn(), 0);
    *log_linesp = host_env_nr_log_lines() - log_lines;
}

/* Nothing registered: no device, no syscnt, one line logged. */
static void
probe_assert_not_registered(unsigned int log_lines)
{
    uint64_t value;

    HOST_ASSERT(perfmon_dev_get(false) == NULL);
    HOST_ASSERT_EQ(syscnt_lookup("pmu_intel_pmis/0", &value), ENOENT);
    HOST_ASSERT_EQ(log_lines, 1);

    if (model_nr_faults() != 0) {
        HOST_FAIL("%u unhandled #GP, first: %s", model_nr_faults(),
                  model_first_fault());
    }
}

HOST_TEST(pmu_msrs_that_fault_leave_the_software_pmu)
{
    unsigned int log_lines;

    probe_setup(MODEL_PMU_MSRS_FAULT, &log_lines);
    probe_assert_not_registered(log_lines);
    HOST_ASSERT(model_nr_handled_faults() != 0);

    /* Detection survives IA32_PERF_CAPABILITIES faulting too. */
    HOST_ASSERT_EQ(pmu_intel_get_info()->version, 5);
    HOST_ASSERT(!pmu_intel_get_info()->full_width_writes);
}

HOST_TEST(pmu_msrs_that_ignore_writes_leave_the_software_pmu)
{
    unsigned int log_lines;

    probe_setup(MODEL_PMU_MSRS_IGNORED, &log_lines);
    probe_assert_not_registered(log_lines);
    HOST_ASSERT_EQ(model_nr_handled_faults(), 0);
}

HOST_TEST(working_pmu_msrs_register_the_device)
{
    struct perfmon_dev *dev;
    unsigned int log_lines;
    uint64_t value;

    probe_setup(MODEL_PMU_MSRS_WORK, &log_lines);
    dev = perfmon_dev_get(false);
    HOST_ASSERT(dev != NULL);
    HOST_ASSERT_STREQ(dev->name, "pmu_intel");
    HOST_ASSERT_EQ(syscnt_lookup("pmu_intel_pmis/0", &value), 0);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
    HOST_ASSERT_EQ(model_nr_handled_faults(), 0);

    /* The probe leaves no trace: counting off, probed counters at 0. */
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(0)), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_FIXED_CTR(0)), 0);
}

HOST_TEST_MAIN()
