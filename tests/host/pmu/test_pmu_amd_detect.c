/*
 * Host tests of the AMD PMU driver's detection (pmu_amd_detect) against
 * CPUID answers of the AMD model, and of its setup on CPUs where it must
 * register nothing: another vendor, PMU MSRs that fault or ignore writes.
 * None of these registers a device, so every test reconfigures the model;
 * the last one, with counters firmware holds, registers.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <pmu/pmu_amd.h>

#include "host_env.h"
#include "host_test.h"
#include <pmu/model/pmu_model_amd.h>

const struct init_op init_op_pmu_intel_setup = { .name = "pmu_intel_setup" };

/* perfmon's boot arguments: none set. */
int
arg_get_u64(const char *key, uint64_t *valuep)
{
    (void)key;
    (void)valuep;
    return ENOENT;
}

bool
arg_is_set(const char *key, const char *value)
{
    (void)key;
    (void)value;
    return false;
}

/* Detect with config; detection must not touch an MSR. */
static void
detect_run(const struct model_amd_config *config, struct pmu_amd_info *info)
{
    model_amd_reset(config);
    memset(info, 0xa5, sizeof(*info));
    pmu_amd_detect(info);
    HOST_ASSERT_EQ(model_amd_nr_all_reads() + model_amd_nr_all_writes(), 0);
}

static void
detect_expect(const struct model_amd_config *config, enum pmu_amd_gen gen,
              bool ext_core, bool v2, unsigned int nr)
{
    struct pmu_amd_info info;

    detect_run(config, &info);
    HOST_ASSERT_EQ(info.gen, gen);
    HOST_ASSERT_EQ(info.ext_core, ext_core);
    HOST_ASSERT_EQ(info.perfmon_v2, v2);
    HOST_ASSERT_EQ(info.nr_counters, nr);
}

HOST_TEST(other_vendor_or_pre_k7_has_no_pmu)
{
    struct model_amd_config intel = {
        .vendor = MODEL_AMD_VENDOR_INTEL, .family = 6, .model = 0x55,
        .ext_max = 0x80000008,
    };
    struct model_amd_config k6 = { .family = 5, .model = 8,
                                   .ext_max = 0x80000005 };

    detect_expect(&intel, PMU_AMD_GEN_NONE, false, false, 0);
    detect_expect(&k6, PMU_AMD_GEN_NONE, false, false, 0);
}

HOST_TEST(family_and_model_choose_the_event_table)
{
    static const struct {
        unsigned int family, model;
        enum pmu_amd_gen gen;
    } cases[] = {
        { 0x06, 0x08, PMU_AMD_GEN_K7 },
        { 0x0f, 0x21, PMU_AMD_GEN_K7 },   /* extended family 0 */
        { 0x15, 0x02, PMU_AMD_GEN_K7 },
        { 0x16, 0x30, PMU_AMD_GEN_K7 },
        { 0x17, 0x01, PMU_AMD_GEN_ZEN1 },
        { 0x17, 0x08, PMU_AMD_GEN_ZEN1 },
        { 0x17, 0x31, PMU_AMD_GEN_ZEN2 },
        { 0x17, 0x71, PMU_AMD_GEN_ZEN2 },
        { 0x17, 0xa0, PMU_AMD_GEN_ZEN2 },
        { 0x19, 0x01, PMU_AMD_GEN_ZEN2 },   /* Zen 3 */
        { 0x19, 0x21, PMU_AMD_GEN_ZEN2 },
        { 0x19, 0x11, PMU_AMD_GEN_ZEN4 },
        { 0x19, 0x61, PMU_AMD_GEN_ZEN4 },
        { 0x1a, 0x02, PMU_AMD_GEN_ZEN4 },
    };

    for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
        struct model_amd_config config = {
            .family = cases[i].family, .model = cases[i].model,
            .ext_max = 0x80000008,
        };
        struct pmu_amd_info info;

        detect_run(&config, &info);

        if (info.gen != cases[i].gen || info.family != cases[i].family
            || info.model != cases[i].model) {
            HOST_FAIL("family %xh model %xh: gen %d family %xh model %xh",
                      cases[i].family, cases[i].model, info.gen,
                      info.family, info.model);
        }
    }
}

HOST_TEST(hygon_is_driven_with_zen1_events)
{
    struct model_amd_config config = {
        .vendor = MODEL_AMD_VENDOR_HYGON, .family = 0x18, .model = 0x01,
        .ext_max = 0x8000001f, .ext_core = true,
    };

    detect_expect(&config, PMU_AMD_GEN_ZEN1, true, false, 6);
}

HOST_TEST(counter_sets_follow_cpuid)
{
    struct model_amd_config legacy = { .family = 0x10, .model = 2,
                                       .ext_max = 0x8000001b };
    struct model_amd_config ext = { .family = 0x15, .model = 2,
                                    .ext_max = 0x8000001e,
                                    .ext_core = true };
    struct model_amd_config v2 = { .family = 0x19, .model = 0x11,
                                   .ext_max = 0x80000026, .ext_core = true,
                                   .perfmon_v2 = true, .v2_nr = 5 };

    detect_expect(&legacy, PMU_AMD_GEN_K7, false, false, 4);
    detect_expect(&ext, PMU_AMD_GEN_K7, true, false, 6);
    detect_expect(&v2, PMU_AMD_GEN_ZEN4, true, true, 5);
}

HOST_TEST(perfmon_v2_needs_the_leaf_ext_core_and_counters)
{
    /* The leaf above the highest extended leaf is not read. */
    struct model_amd_config short_max = {
        .family = 0x19, .model = 0x11, .ext_max = 0x80000021,
        .ext_core = true, .perfmon_v2 = true, .v2_nr = 6,
    };
    /* This workplace's VM: leaf present, all zero, no ExtCore. */
    struct model_amd_config vm = {
        .family = 0x19, .model = 0x01, .ext_max = 0x80000022,
    };
    /* V2 without ExtCore is not believed. */
    struct model_amd_config no_ext = {
        .family = 0x19, .model = 0x11, .ext_max = 0x80000022,
        .perfmon_v2 = true, .v2_nr = 6,
    };
    /* V2 with no counter: the six ExtCore counters, no global registers. */
    struct model_amd_config zero = {
        .family = 0x19, .model = 0x11, .ext_max = 0x80000022,
        .ext_core = true, .perfmon_v2 = true, .v2_nr = 0,
    };

    detect_expect(&short_max, PMU_AMD_GEN_ZEN4, true, false, 6);
    detect_expect(&vm, PMU_AMD_GEN_ZEN2, false, false, 4);
    detect_expect(&no_ext, PMU_AMD_GEN_ZEN4, false, false, 4);
    detect_expect(&zero, PMU_AMD_GEN_ZEN4, true, false, 6);
}

HOST_TEST(reference_cycles_exist_from_zen4_only)
{
    HOST_ASSERT_EQ(pmu_amd_generic_code(PMU_AMD_GEN_K7,
                                        PERFMON_EV_REF_CYCLE), 0);
    HOST_ASSERT_EQ(pmu_amd_generic_code(PMU_AMD_GEN_ZEN1,
                                        PERFMON_EV_REF_CYCLE), 0);
    HOST_ASSERT_EQ(pmu_amd_generic_code(PMU_AMD_GEN_ZEN2,
                                        PERFMON_EV_REF_CYCLE), 0);
    HOST_ASSERT_EQ(pmu_amd_generic_code(PMU_AMD_GEN_ZEN4,
                                        PERFMON_EV_REF_CYCLE),
                   MODEL_AMD_EV_ZEN4_P0_CYCLES);
    HOST_ASSERT_EQ(pmu_amd_generic_code(PMU_AMD_GEN_NONE,
                                        PERFMON_EV_CYCLE), 0);
}

/* ------------------------------------------------------------------ */
/* Setup that must register nothing                                    */
/* ------------------------------------------------------------------ */

static void
setup_run(const struct model_amd_config *config)
{
    static bool perfmon_ready;
    unsigned int lines;

    if (!perfmon_ready) {
        perfmon_ready = true;
        HOST_ASSERT_EQ(init_op_perfmon_setup.fn(), 0);
    }

    model_amd_reset(config);
    lines = host_env_nr_log_lines();
    HOST_ASSERT_EQ(init_op_pmu_amd_setup.fn(), 0);
    HOST_ASSERT(perfmon_dev_get(false) == NULL);
    HOST_ASSERT_EQ(model_amd_nr_faults(), 0);
    HOST_ASSERT_EQ(host_env_nr_log_lines() - lines, 1);
    HOST_ASSERT_EQ(pmu_amd_get_info()->nr_counters, 0);
}

HOST_TEST(faulting_msrs_leave_software_events_only)
{
    struct model_amd_config config = {
        .family = 0x19, .model = 0x11, .ext_max = 0x80000022,
        .ext_core = true, .perfmon_v2 = true, .v2_nr = 6,
        .msrs = MODEL_AMD_MSRS_FAULT,
    };

    setup_run(&config);
    HOST_ASSERT(model_amd_nr_handled_faults() >= 1);
}

HOST_TEST(extended_msrs_faulting_under_a_pmu_less_hypervisor)
{
    struct model_amd_config config = {
        .family = 0x19, .model = 0x01, .ext_max = 0x80000022,
        .ext_core = true, .msrs = MODEL_AMD_MSRS_IGNORED,
    };

    setup_run(&config);
    HOST_ASSERT(model_amd_nr_handled_faults() >= 1);
}

HOST_TEST(legacy_msrs_dropping_writes_leave_software_events_only)
{
    struct model_amd_config config = {
        .family = 0x19, .model = 0x01, .ext_max = 0x80000022,
        .msrs = MODEL_AMD_MSRS_IGNORED,
    };

    setup_run(&config);
    HOST_ASSERT_EQ(model_amd_nr_handled_faults(), 0);
}

HOST_TEST(other_vendor_setup_touches_no_msr)
{
    struct model_amd_config config = {
        .vendor = MODEL_AMD_VENDOR_INTEL, .family = 6, .model = 0x55,
        .ext_max = 0x80000008,
    };

    setup_run(&config);
    HOST_ASSERT_EQ(model_amd_nr_all_reads() + model_amd_nr_all_writes(), 0);
}

/* ------------------------------------------------------------------ */
/* Setup that registers (last: a device registers once per process)   */
/* ------------------------------------------------------------------ */

/*
 * A counter firmware enabled before the kernel (PerfEvtSel EN, and its
 * PerfCntrGlobalCtl bit, which resets set) is left alone: setup writes
 * none of its registers, the driver never hands it out, it keeps
 * counting, and one line says so; perfmon's device names it (perf list
 * shows it).
 */
HOST_TEST(counters_firmware_enabled_are_left_alone)
{
    static struct perfmon_event events[6];
    const uint64_t fw_ctl = MODEL_AMD_EVTSEL_EN | MODEL_AMD_EVTSEL_OS
                            | MODEL_AMD_EVTSEL_USR | MODEL_AMD_EV_CYCLES;
    struct model_amd_config config = {
        .family = 0x19, .model = 0x11, .ext_max = 0x80000028,
        .ext_core = true, .perfmon_v2 = true, .v2_nr = 6,
    };
    struct perfmon_dev *dev;
    unsigned int counter, width, lines;
    uint64_t fw_count;

    model_amd_reset(&config);
    model_amd_poke(MODEL_AMD_MSR_CTL(2), fw_ctl);
    lines = host_env_nr_log_lines();
    HOST_ASSERT_EQ(init_op_pmu_amd_setup.fn(), 0);
    HOST_ASSERT_EQ(model_amd_nr_faults(), 0);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_CTL(2)), fw_ctl);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL), 1ULL << 2);
    dev = perfmon_dev_get(false);
    HOST_ASSERT(dev != NULL);
    HOST_ASSERT_EQ(dev->fw_counters, 1ULL << 2);
    HOST_ASSERT_EQ(dev->nr_counters, 5);
    HOST_ASSERT_EQ(host_env_nr_log_lines_with("firmware holds"), 1);
    HOST_ASSERT(host_env_nr_log_lines() - lines >= 1);

    fw_count = model_amd_msr(MODEL_AMD_MSR_CTR(2));

    for (unsigned int k = 0; k < 6; k++) {
        HOST_ASSERT_EQ(perfmon_event_init(&events[k], 0x80 + k,
                                          PERFMON_EF_RAW | PERFMON_EF_KERN),
                       0);
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(&events[k], 0), 0);

        if (perfmon_slot_counter(dev, perfmon_event_slot_index(&events[k]),
                                 &counter, &width)) {
            HOST_ASSERT(counter != 2);
        }
    }

    model_amd_retire(MODEL_AMD_EV_CYCLES, 30, MODEL_AMD_RING_USER);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_CTR(2)) - fw_count, 30);

    for (unsigned int k = 0; k < 6; k++) {
        HOST_ASSERT_EQ(perfmon_event_detach(&events[k]), 0);
    }

    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_CTL(2)), fw_ctl);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL), 1ULL << 2);
    HOST_ASSERT_EQ(model_amd_nr_faults(), 0);
}

HOST_TEST_MAIN()
