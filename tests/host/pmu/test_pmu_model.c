/*
 * Host tests of the PMU model itself (pmu_model.c): the driver tests
 * assert that it saw no #GP and count on its register semantics, so the
 * model must fault and count as pmu_model.h describes.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <machine/cpu.h>
#include <machine/lapic.h>

#include "host_test.h"
#include <pmu/model/pmu_model.h>

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

/* Version 2: 4 general and 3 fixed counters of 40 bits, PDCM, no FW_WRITE. */
static const struct model_config model_test_v2 = {
    .max_leaf = 0xd,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(2, 4, 40, 7),
    .a_edx = MODEL_CPUID_A_EDX(3, 40),
};

#define MODEL_TEST_EVTSEL(event)    (MODEL_EVTSEL_EN | MODEL_EVTSEL_OS     \
                                     | MODEL_EVTSEL_INT                 \
                                     | model_event_code(event))

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
    HOST_ASSERT_STREQ(model_first_fault(), "#GP: rdmsr 0xc3");

    /* IA32_DEBUGCTL exists, without the freeze bits (no PDCM, v1). */
    model_clear_faults();
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_DEBUGCTL), 0);
    cpu_set_msr(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_LBR);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
    model_test_assert_write_faults(MODEL_MSR_DEBUGCTL,
                                   MODEL_DEBUGCTL_FREEZE_PERFMON);
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

HOST_TEST(drift_advances_ring_0_counters_before_each_access)
{
    model_reset(&model_test_v5);
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 0x3 | MODEL_GLOBAL_FIXED(0));
    cpu_set_msr(MODEL_MSR_EVTSEL(0), MODEL_TEST_EVTSEL(MODEL_EV_BRANCHES));
    cpu_set_msr(MODEL_MSR_EVTSEL(1), MODEL_EVTSEL_EN | MODEL_EVTSEL_USR
                                     | model_event_code(MODEL_EV_CYCLES));
    cpu_set_msr(MODEL_MSR_FIXED_CTRL, MODEL_FIXED_FIELD(0, MODEL_FIXED_OS));
    model_set_drift(3);

    /* Events of any code, before the access itself. */
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 3);
    HOST_ASSERT_EQ(model_counted_at_read(0), 3);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_FIXED_CTR(0)), 6);
    HOST_ASSERT_EQ(model_nr_counted(0), 6);

    /* Not the ring 3 counter; not the test's own accesses or events. */
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)), 0);
    model_poke(MODEL_MSR_EVTSEL(2), 0);
    model_retire(MODEL_EV_BRANCHES, 10, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 16);
    HOST_ASSERT_EQ(model_nr_counted(0), 16);

    /* A write to the counter itself follows its drift. */
    cpu_set_msr(MODEL_MSR_A_PMC(0), 100);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 100);
    HOST_ASSERT_EQ(model_counted_at_write(0), 19);
    HOST_ASSERT_EQ(model_counted_at_read(0), 3);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

HOST_TEST(drift_wraps_a_counter_between_accesses)
{
    model_reset(&model_test_v5);
    lapic_pmc_setup(0xf2);
    cpu_set_msr(MODEL_MSR_A_PMC(0), (1ULL << 48) - 4);
    cpu_set_msr(MODEL_MSR_EVTSEL(0), MODEL_TEST_EVTSEL(MODEL_EV_BRANCHES));
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 1ULL << 0);
    model_set_drift(5);

    /* Enabled by the last write: the next access finds it wrapped. */
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << 0);
    HOST_ASSERT_EQ(model_nr_wraps(0), 1);
    HOST_ASSERT(model_pmi_pending());
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PMC(0)), 6);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

/* Counter 0 (INT) and 1 (no INT) on branches, 5 events from a wrap. */
static void
model_test_freeze_setup(const struct model_config *config)
{
    model_reset(config);
    lapic_pmc_setup(0xf2);
    cpu_set_msr(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_FREEZE_PERFMON);
    cpu_set_msr(MODEL_MSR_PMC(0), (uint32_t)-5);
    cpu_set_msr(MODEL_MSR_EVTSEL(0), MODEL_TEST_EVTSEL(MODEL_EV_BRANCHES));
    cpu_set_msr(MODEL_MSR_EVTSEL(1), MODEL_EVTSEL_EN | MODEL_EVTSEL_OS
                                     | model_event_code(MODEL_EV_BRANCHES));
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 0x3);
}

HOST_TEST(legacy_freeze_clears_global_ctrl_at_the_request)
{
    model_test_freeze_setup(&model_test_v2);

    /* The 5th event overflows: both counters stop there, the rest is lost. */
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)), 5);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << 0);
    HOST_ASSERT(model_pmi_take());

    /* Counting again: a request freezes even with the LVT entry masked. */
    cpu_set_msr(MODEL_MSR_PMC(0), (uint32_t)-2);
    cpu_set_msr(MODEL_MSR_GLOBAL_CTRL, 0x3);
    model_retire(MODEL_EV_BRANCHES, 10, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)), 7);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), 0);
    HOST_ASSERT(!model_pmi_pending());
    HOST_ASSERT_EQ(model_nr_pmi_requests(), 2);
    HOST_ASSERT_EQ(model_nr_faults(), 0);

    /* Version 2 has no freeze status bits to clear. */
    model_test_assert_write_faults(MODEL_MSR_GLOBAL_OVF,
                                   MODEL_STATUS_CTR_FRZ);
}

HOST_TEST(streamlined_freeze_sets_ctr_frz_until_reset)
{
    model_test_freeze_setup(&model_test_v5);
    cpu_set_msr(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_FREEZE_PERFMON
                                    | MODEL_DEBUGCTL_FREEZE_LBRS
                                    | MODEL_DEBUGCTL_LBR);

    /* GLOBAL_CTRL stays; CTR_Frz stops every counter at the overflow. */
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)), 5);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), 0x3);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS),
                   (1ULL << 0) | MODEL_STATUS_CTR_FRZ
                   | MODEL_STATUS_LBR_FRZ);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_DEBUGCTL),
                   MODEL_DEBUGCTL_FREEZE_PERFMON | MODEL_DEBUGCTL_FREEZE_LBRS
                   | MODEL_DEBUGCTL_LBR);
    model_retire(MODEL_EV_BRANCHES, 10, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)), 5);

    /* Clearing the counter's bit alone leaves the counters frozen. */
    cpu_set_msr(MODEL_MSR_GLOBAL_OVF, 1ULL << 0);
    model_retire(MODEL_EV_BRANCHES, 10, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)), 5);

    /* STATUS_RESET bit 59 unfreezes them. */
    cpu_set_msr(MODEL_MSR_GLOBAL_OVF, MODEL_STATUS_CTR_FRZ
                                      | MODEL_STATUS_LBR_FRZ);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    model_retire(MODEL_EV_BRANCHES, 3, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 3);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)), 8);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

HOST_TEST(stuck_bits_and_sticky_debugctl_resist_writes)
{
    model_reset(&model_test_v5);
    model_poke(MODEL_MSR_GLOBAL_STATUS, 0x3);
    model_set_stuck_status(1ULL << 1);
    cpu_set_msr(MODEL_MSR_GLOBAL_OVF, 0x3);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << 1);
    HOST_ASSERT_EQ(model_nr_acks(1), 1);
    model_set_stuck_status(0);
    cpu_set_msr(MODEL_MSR_GLOBAL_OVF, 0x3);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);

    model_poke(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_FREEZE_PERFMON);
    model_set_debugctl_sticky(MODEL_DEBUGCTL_FREEZE_PERFMON);
    cpu_set_msr(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_LBR);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_DEBUGCTL),
                   MODEL_DEBUGCTL_FREEZE_PERFMON | MODEL_DEBUGCTL_LBR);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
}

HOST_TEST(pmu_msrs_that_fault_or_ignore_writes)
{
    struct model_config config = model_test_v5;
    uint64_t value;

    /* Every PMU MSR faults; the safe accessors handle it. */
    config.pmu_msrs = MODEL_PMU_MSRS_FAULT;
    model_reset(&config);
    model_test_assert_missing(MODEL_MSR_PMC(0));
    model_test_assert_missing(MODEL_MSR_GLOBAL_CTRL);
    model_test_assert_missing(MODEL_MSR_PERF_CAP);
    model_clear_faults();
    value = 1;
    HOST_ASSERT_EQ(cpu_get_msr_safe(MODEL_MSR_EVTSEL(0), &value), EIO);
    HOST_ASSERT_EQ(value, 0);
    HOST_ASSERT_EQ(cpu_set_msr_safe(MODEL_MSR_A_PMC(0), 1), EIO);
    HOST_ASSERT_EQ(model_nr_handled_faults(), 2);
    HOST_ASSERT_EQ(model_nr_faults(), 0);
    HOST_ASSERT_EQ(cpu_set_msr_safe(MODEL_MSR_DEBUGCTL, 0), 0);

    /* Writes dropped, reads 0, no fault. */
    config.pmu_msrs = MODEL_PMU_MSRS_IGNORED;
    model_reset(&config);
    HOST_ASSERT_EQ(cpu_set_msr_safe(MODEL_MSR_A_PMC(0), 1234), 0);
    HOST_ASSERT_EQ(cpu_get_msr_safe(MODEL_MSR_A_PMC(0), &value), 0);
    HOST_ASSERT_EQ(value, 0);
    HOST_ASSERT_EQ(cpu_get_msr(MODEL_MSR_PERF_CAP), 0);
    HOST_ASSERT_EQ(model_nr_handled_faults(), 0);
    HOST_ASSERT_EQ(model_nr_faults(), 0);

    /* And as the SDM says, the safe accessors return what is there. */
    model_reset(&model_test_v5);
    HOST_ASSERT_EQ(cpu_set_msr_safe(MODEL_MSR_A_PMC(0), 1234), 0);
    HOST_ASSERT_EQ(cpu_get_msr_safe(MODEL_MSR_PMC(0), &value), 0);
    HOST_ASSERT_EQ(value, 1234);
    HOST_ASSERT_EQ(cpu_set_msr_safe(MODEL_MSR_EVTSEL(0), 1ULL << 32), EIO);
    HOST_ASSERT_EQ(model_nr_handled_faults(), 1);
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
