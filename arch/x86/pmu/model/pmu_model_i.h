/*
 * The Intel register model's private header, shared by its register
 * accesses (pmu_model.c) and its counting, overflows and local APIC
 * (pmu_model_count.c). Not for the tests, which see pmu_model.h.
 */
#ifndef HOST_PMU_MODEL_I_H
#define HOST_PMU_MODEL_I_H

#include <stdbool.h>
#include <stdint.h>

#include "pmu_model.h"
#include "pmu_model_env.h"

#define MODEL_MSR_SPACE     0x500   /* every modelled MSR is below */
#define MODEL_NR_COUNTERS   (MODEL_FIXED_BASE + MODEL_MAX_FIXED)

/*
 * IA32_DEBUGCTL bits any modelled CPU takes (SDM vol. 4, table 2-2): LBR,
 * BTF, TR, BTS, BTINT, BTS_OFF_OS, BTS_OFF_USR. The freeze bits need PDCM
 * and version 2; the others are reserved here.
 */
#define MODEL_DEBUGCTL_BASE_BITS    (0x3ULL | (0x1fULL << 6))

/* The fixed counters' architectural events (SDM vol. 3B, 21.2.2). */
extern const struct model_event model_fixed_events[MODEL_MAX_FIXED];

struct model_state {
    struct model_config config;

    /* The PMU the configuration describes. */
    unsigned int version;
    unsigned int nr_gp;
    unsigned int gp_width;
    uint32_t fixed_mask;
    unsigned int fixed_width;
    bool has_perf_cap;
    bool has_a_pmc;

    struct model_regs regs;
    bool pmi_pending;

    uint64_t drift;
    uint64_t stuck_status;
    uint64_t debugctl_sticky;

    uint64_t wraps[MODEL_NR_COUNTERS];
    uint64_t counted[MODEL_NR_COUNTERS];
    uint64_t counted_at_read[MODEL_NR_COUNTERS];
    uint64_t counted_at_write[MODEL_NR_COUNTERS];
    unsigned long reads[MODEL_MSR_SPACE];
    unsigned long writes[MODEL_MSR_SPACE];
    unsigned long accesses;
    unsigned long acks[64];
    unsigned long pmi_requests;
    unsigned long eois;
    unsigned int faults;
    char first_fault[128];
    bool safe_access;           /* in cpu_get/set_msr_safe */
    bool safe_faulted;
    unsigned int handled_faults;
    void (*wrmsr_hook)(uint32_t msr, uint64_t value);
    void (*rdmsr_hook)(uint32_t msr);
};

/*
 * The model's whole state: the host's one CPU's, or in the kernel each
 * CPU's own (pmu_model_env.h). The model's code names it model, as one
 * variable, whichever copy the calling CPU reaches; only the model's own
 * files include this header, after every other.
 */
extern struct model_state model_state MODEL_PERCPU;

static inline struct model_state *
model_self(void)
{
    return MODEL_LOCAL(model_state);
}

#define model (*model_self())

static inline uint64_t
model_mask(unsigned int width)
{
    return (width >= 64) ? ~0ULL : (1ULL << width) - 1;
}

/* Haswell or Broadwell (SDM vol. 4, table 2-1), by CPUID.1:EAX. */
bool model_is_hsw_bdw(void);

/* The driver's own instructions, counted before each of its accesses. */
void model_drift(void);

#endif /* HOST_PMU_MODEL_I_H */
