/*
 * Host tests of the PMU model itself (pmu_model.c): the driver tests
 * assert that it saw no #GP and count on its register semantics, so the
 * model must fault and count as pmu_model.h describes.
 */
#include <stdbool.h>
#include <stdint.h>

#include <machine/cpu.h>
#include <machine/lapic.h>

#include "host_test.h"
#include "pmu_model.h"

/* Version 1: 2 general counters of 40 bits, no PDCM. */
static const struct model_config model_test_v1 = {
    .max_leaf = 0xd,
    .a_eax = MODEL_CPUID_A_EAX(1, 2, 40, 7),
    .a_edx = MODEL_CPUID_A_EDX(3, 48),
};

/* Version 5: 8 general of 48 bits, fixed 0 and 2 of 40 bits, FW_WRITE. */
static const struct model_config model_test_v5 = {
    .max_leaf = 0x23,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
    .a_ecx = 0x5,
    .a_edx = MODEL_CPUID_A_EDX(0, 40),
    .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
};

/* A read and a write of msr each raise exactly one #GP. */
static void
model_test_assert_missing(uint32_t msr)
{
    unsigned int faults = model_nr_faults();

    HOST_ASSERT_EQ(cpu_get_msr(msr), 0);
    HOST_ASSERT_EQ(model_nr_faults(), faults + 1);
    cpu_set_msr(msr, 0);
    HOST_ASSERT_EQ(model_nr_faults(), faults + 2);
}

/* Writing value to msr raises exactly one #GP and changes nothing. */
static void
model_test_assert_write_faults(uint32_t msr, uint64_t value)
{
    unsigned int faults = model_nr_faults();
    struct model_regs before, after;

    model_snapshot(&before);
    cpu_set_msr(msr, value);
    model_snapshot(&after);
    HOST_ASSERT_EQ(model_nr_faults(), faults + 1);
    HOST_ASSERT(model_regs_diff(&before, &after) == NULL);
}

HOST_TEST(registers_a_version_1_pmu_lacks_fault)
{
    model_reset(&model_test_v1);
    cpu_get_msr(MODEL_MSR_PMC(1));
    cpu_set_msr(MODEL_MSR_EVTSEL(1), 0);
    HOST_ASSERT_EQ(model_nr_faults(), 0);

    model_test_assert_missing(MODEL_MSR_PMC(2));
    model_test_assert_missing(MODEL_MSR_EVTSEL(2));
    model_test_assert_missing(MODEL_MSR_A_PMC(0));
    model_test_assert_missing(MODEL_MSR_FIXED_CTR(0));
    model_test_assert_missing(MODEL_MSR_FIXED_CTRL);
    model_test_assert_missing(MODEL_MSR_GLOBAL_STATUS);
    model_test_assert_missing(MODEL_MSR_GLOBAL_CTRL);
    model_test_assert_missing(MODEL_MSR_GLOBAL_OVF);
    model_test_assert_missing(MODEL_MSR_PERF_CAP);
    model_test_assert_missing(0x1d9);
    HOST_ASSERT_STREQ(model_first_fault(), "#GP: rdmsr 0xc3");
}

HOST_TEST(reserved_bits_fault)
{
    model_reset(&model_test_v5);
    model_test_assert_missing(MODEL_MSR_FIXED_CTR(1));
    model_test_assert_write_faults(MODEL_MSR_EVTSEL(0), 1ULL << 32);
    model_test_assert_write_faults(MODEL_MSR_A_PMC(0), 1ULL << 48);
    model_test_assert_write_faults(MODEL_MSR_FIXED_CTR(0), 1ULL << 40);
    model_test_assert_write_faults(MODEL_MSR_FIXED_CTRL,
                                   MODEL_FIXED_FIELD(1, MODEL_FIXED_OS));
    model_test_assert_write_faults(MODEL_MSR_GLOBAL_CTRL,
                                   MODEL_GLOBAL_FIXED(1));
    model_test_assert_write_faults(MODEL_MSR_GLOBAL_CTRL, 1ULL << 8);
    model_test_assert_write_faults(MODEL_MSR_GLOBAL_OVF, 1ULL << 40);
    model_test_assert_write_faults(MODEL_MSR_GLOBAL_STATUS, 0);
    model_test_assert_write_faults(MODEL_MSR_PERF_CAP, 0);

    /* What does exist takes its bits. */
    model_clear_faults();
    cpu_set_msr(MODEL_MSR_FIXED_CTRL, MODEL_FIXED_FIELD(0, 0xf)
                                      | MODEL_FIXED_FIELD(2, 0xf));
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 0xff | MODEL_GLOBAL_FIXED(0)
                                       | MODEL_GLOBAL_FIXED(2));
    cpu_set_msr(MODEL_MSR_GLOBAL_OVF, MODEL_STATUS_OVF_BUF
                                      | MODEL_STATUS_COND_CHGD);
    cpu_set_msr(MODEL_MSR_A_PMC(7), (1ULL << 48) - 1);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PERF_CAP), MODEL_PERF_CAP_FW_WRITE);
}

HOST_TEST(pmc_writes_sign_extend_bit_31)
{
    model_reset(&model_test_v5);
    cpu_set_msr(MODEL_MSR_PMC(0), 0x80000000);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), (1ULL << 48) - (1ULL << 31));
    cpu_set_msr(MODEL_MSR_PMC(0), 0x7fffffff);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 0x7fffffff);
    cpu_set_msr(MODEL_MSR_PMC(0), 0x500000005ULL);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 5);
    cpu_set_msr(MODEL_MSR_A_PMC(0), 1ULL << 47);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 1ULL << 47);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_A_PMC(0)), 1ULL << 47);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

HOST_TEST(general_counter_counts_only_when_every_condition_holds)
{
    const uint64_t evtsel = MODEL_EVTSEL_EN | MODEL_EVTSEL_OS
                            | model_event_code(MODEL_EV_LLC_MISSES);

    model_reset(&model_test_v5);
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 1ULL << 0);
    cpu_set_msr(MODEL_MSR_EVTSEL(0), evtsel);
    model_retire(MODEL_EV_LLC_MISSES, 3, MODEL_RING_KERN);
    model_retire(MODEL_EV_LLC_MISSES, 100, MODEL_RING_USER);
    model_retire(MODEL_EV_LLC_REFS, 100, MODEL_RING_KERN);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 3);

    cpu_set_msr(MODEL_MSR_EVTSEL(0), evtsel & ~MODEL_EVTSEL_EN);
    model_retire(MODEL_EV_LLC_MISSES, 100, MODEL_RING_KERN);
    cpu_set_msr(MODEL_MSR_EVTSEL(0), evtsel);
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 0);
    model_retire(MODEL_EV_LLC_MISSES, 100, MODEL_RING_KERN);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 3);

    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 1ULL << 0);
    cpu_set_msr(MODEL_MSR_EVTSEL(0), evtsel | MODEL_EVTSEL_USR);
    model_retire(MODEL_EV_LLC_MISSES, 10, MODEL_RING_USER);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 13);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

HOST_TEST(fixed_counter_counts_its_event_per_field)
{
    model_reset(&model_test_v5);
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, MODEL_GLOBAL_FIXED(2));
    cpu_set_msr(MODEL_MSR_FIXED_CTRL,
                MODEL_FIXED_FIELD(2, MODEL_FIXED_USR));
    model_retire(MODEL_EV_REF_CYCLES, 4, MODEL_RING_USER);
    model_retire(MODEL_EV_REF_CYCLES, 100, MODEL_RING_KERN);
    model_retire(MODEL_EV_CYCLES, 100, MODEL_RING_USER);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_FIXED_CTR(2)), 4);

    /* Field set, global bit clear: nothing. */
    cpu_set_msr(MODEL_MSR_FIXED_CTRL, MODEL_FIXED_FIELD(0, MODEL_FIXED_OS));
    model_retire(MODEL_EV_INSTRUCTIONS, 100, MODEL_RING_KERN);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_FIXED_CTR(0)), 0);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

HOST_TEST(overflow_sets_status_and_requests_pmi)
{
    model_reset(&model_test_v5);
    lapic_pmc_setup(0xf2);
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 1ULL << 1);
    cpu_set_msr(MODEL_MSR_A_PMC(1), (1ULL << 48) - 2);
    cpu_set_msr(MODEL_MSR_EVTSEL(1), MODEL_EVTSEL_EN | MODEL_EVTSEL_OS
                                     | MODEL_EVTSEL_INT
                                     | model_event_code(MODEL_EV_BRANCHES));
    model_retire(MODEL_EV_BRANCHES, 1, MODEL_RING_KERN);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT(!model_pmi_pending());

    /* Three wraps in one go: one status bit, one PMI. */
    model_retire(MODEL_EV_BRANCHES, 2 * (1ULL << 48) + 3, MODEL_RING_KERN);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(1)), 2);
    HOST_ASSERT_EQ(model_nr_wraps(1), 3);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << 1);
    HOST_ASSERT_EQ(model_nr_pmi_requests(), 1);
    HOST_ASSERT(model_pmi_pending());
    HOST_ASSERT_EQ(model_lvt_pmc(), 0xf2 | MODEL_LVT_MASKED);

    /* While the entry is masked a request generates nothing. */
    HOST_ASSERT(model_pmi_take());
    model_retire(MODEL_EV_BRANCHES, 1ULL << 48, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_nr_pmi_requests(), 2);
    HOST_ASSERT(!model_pmi_pending());

    cpu_set_msr(MODEL_MSR_GLOBAL_OVF, (1ULL << 1) | (1ULL << 0));
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_nr_acks(1), 1);
    HOST_ASSERT_EQ(model_nr_acks(0), 1);
    lapic_pmc_unmask();
    HOST_ASSERT_EQ(model_lvt_pmc(), 0xf2);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

HOST_TEST(cpuid_above_max_leaf_returns_highest_leaf)
{
    uint32_t eax, ebx, ecx, edx;

    model_reset(&model_test_v1);
    cpu_cpuid(0xa, 0, &eax, &ebx, &ecx, &edx);
    HOST_ASSERT_EQ(eax, model_test_v1.a_eax);
    HOST_ASSERT_EQ(edx, model_test_v1.a_edx);

    /* Leaf 0DH is the highest and is not modelled: all ones. */
    cpu_cpuid(0x80000000, 0, &eax, &ebx, &ecx, &edx);
    HOST_ASSERT_EQ(eax, 0xffffffff);
    HOST_ASSERT_EQ(edx, 0xffffffff);
}

HOST_TEST_MAIN()
