/*
 * The fixture of the AMD PMU driver's host tests (test_pmu_amd*.c), one
 * binary per PMU configuration (PMU_TEST_CONFIG, see test_pmu_amd.c): the
 * configuration's constants and model, the generic events' expected
 * codes, the boot of the model, perfmon and the driver, the pools of
 * events and threads and the checks every test ends with. Single CPU
 * (host_env), CPU 0.
 */
#ifndef HOST_PMU_TEST_AMD_H
#define HOST_PMU_TEST_AMD_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/thread.h>
#include <pmu/pmu_amd.h>

#include "host_test.h"
#include <pmu/model/pmu_model_amd.h>

#define PMU_TEST_CYCLES         MODEL_AMD_EV_CYCLES
#define PMU_TEST_INSTRUCTIONS   MODEL_AMD_EV_INSTRUCTIONS

#if PMU_TEST_CONFIG == 1

#define PMU_TEST_NR             4
#define PMU_TEST_OVF            PMU_AMD_OVF_TOP_BIT
#define PMU_TEST_GEN            PMU_AMD_GEN_K7
static const struct model_amd_config pmu_test_config = {
    .family = 0x10, .model = 0x02, .ext_max = 0x8000001b,
};

#elif PMU_TEST_CONFIG == 2

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_TOP_BIT
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN1
static const struct model_amd_config pmu_test_config = {
    .family = 0x17, .model = 0x01, .ext_max = 0x8000001f, .ext_core = true,
};

#elif PMU_TEST_CONFIG == 3

#define PMU_TEST_NR             5
#define PMU_TEST_OVF            PMU_AMD_OVF_GLOBAL
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN2
static const struct model_amd_config pmu_test_config = {
    .family = 0x19, .model = 0x01, .ext_max = 0x80000022, .ext_core = true,
    .perfmon_v2 = true, .v2_nr = 5, .lvt_masks = true,
};

#elif PMU_TEST_CONFIG == 4

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_GLOBAL
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN4
static const struct model_amd_config pmu_test_config = {
    .family = 0x19, .model = 0x11, .ext_max = 0x80000028, .ext_core = true,
    .perfmon_v2 = true, .v2_nr = 6,
};

#elif PMU_TEST_CONFIG == 5

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_POLL
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN2
#define PMU_TEST_CMDLINE_PMI_OFF
static const struct model_amd_config pmu_test_config = {
    .family = 0x17, .model = 0x31, .ext_max = 0x80000020, .ext_core = true,
};

#elif PMU_TEST_CONFIG == 6

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_TOP_BIT
#define PMU_TEST_GEN            PMU_AMD_GEN_K7
#define PMU_TEST_FAM15H
static const struct model_amd_config pmu_test_config = {
    .family = 0x15, .model = 0x02, .ext_max = 0x8000001e, .ext_core = true,
};

#else
#error "PMU_TEST_CONFIG must be 1 to 6"
#endif

#define PMU_TEST_HAS_PMI        (PMU_TEST_OVF != PMU_AMD_OVF_POLL)
#define PMU_TEST_V2             (PMU_TEST_OVF == PMU_AMD_OVF_GLOBAL)
#define PMU_TEST_WIDTH          ((PMU_TEST_OVF == PMU_AMD_OVF_TOP_BIT)   \
                                 ? 47 : 48)
#define PMU_TEST_PERIOD         (1ULL << PMU_TEST_WIDTH)
#define PMU_TEST_TOP_BIT        (1ULL << 47)
/* Half the time 2^48 events take at 100 per cycle at 1 GHz, in ticks. */
#define PMU_TEST_POLL_TICKS     ((PMU_TEST_OVF == PMU_AMD_OVF_POLL)      \
                                 ? 140737 : 0)

#define PMU_TEST_MAX_EVENTS     16
#define PMU_TEST_MAX_THREADS    2

/* Generic events per generation (PPR core PMC tables); 0: none. */
static const uint64_t pmu_test_generic[][PERFMON_NR_GENERIC_EVENTS] = {
    [PMU_AMD_GEN_K7] = {
        MODEL_AMD_EV_CYCLES, 0, MODEL_AMD_EV_INSTRUCTIONS,
        MODEL_AMD_EV_K7_DC_REFILL_L2, MODEL_AMD_EV_K7_DC_REFILL_SYS,
        MODEL_AMD_EV_BRANCHES, MODEL_AMD_EV_BRANCH_MISSES,
    },
    [PMU_AMD_GEN_ZEN1] = {
        MODEL_AMD_EV_CYCLES, 0, MODEL_AMD_EV_INSTRUCTIONS,
        MODEL_AMD_EV_ZEN_L2_REQUESTS, MODEL_AMD_EV_ZEN_L2_MISSES,
        MODEL_AMD_EV_BRANCHES, MODEL_AMD_EV_BRANCH_MISSES,
    },
    [PMU_AMD_GEN_ZEN2] = {
        MODEL_AMD_EV_CYCLES, 0, MODEL_AMD_EV_INSTRUCTIONS,
        MODEL_AMD_EV_ZEN_L2_REQUESTS, MODEL_AMD_EV_ZEN_L2_MISSES,
        MODEL_AMD_EV_BRANCHES, MODEL_AMD_EV_BRANCH_MISSES,
    },
    [PMU_AMD_GEN_ZEN4] = {
        MODEL_AMD_EV_CYCLES, MODEL_AMD_EV_ZEN4_P0_CYCLES,
        MODEL_AMD_EV_INSTRUCTIONS, MODEL_AMD_EV_ZEN_L2_REQUESTS,
        MODEL_AMD_EV_ZEN_L2_MISSES, MODEL_AMD_EV_BRANCHES,
        MODEL_AMD_EV_BRANCH_MISSES,
    },
};

extern int pmu_test_setup_error;
extern unsigned int pmu_test_boot_faults;
extern struct perfmon_event pmu_test_events[PMU_TEST_MAX_EVENTS];
extern unsigned int pmu_test_nr_events;

uint32_t pmu_test_msr_ctl(unsigned int n);

uint32_t pmu_test_msr_ctr(unsigned int n);

struct perfmon_dev *pmu_test_dev(void);

void pmu_test_assert_no_fault(void);

void pmu_test_begin(void);

/* The counter n is idle: no EN, no global enable. */
void pmu_test_assert_disabled(unsigned int n);

void pmu_test_end(void);

struct perfmon_event *pmu_test_event(uint64_t id, unsigned int flags);

struct perfmon_event *pmu_test_attach_cpu(uint64_t id, unsigned int flags);

struct thread *pmu_test_thread(void);

uint64_t pmu_test_read(struct perfmon_event *event);

unsigned int pmu_test_counter(const struct perfmon_event *event);

uint64_t pmu_test_evtsel(uint64_t code, unsigned int flags);

void pmu_test_assert_programmed(unsigned int n, uint64_t code,
                                unsigned int flags);

void pmu_test_deliver_pmi(void);

/* Let perfmon see the counters: the pending PMI, or the next poll. */
void pmu_test_catch_up(void);

#endif /* HOST_PMU_TEST_AMD_H */
