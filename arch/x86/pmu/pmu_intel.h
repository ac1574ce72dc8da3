/*
 * Intel architectural performance monitoring (versions 1 to 5), a perfmon
 * device. References: Intel SDM vol. 3B, chapter 21 "Performance
 * Monitoring", sections 21.2.1 to 21.2.7 (architectural performance
 * monitoring versions 1 to 5) and table 21-1 (architectural events); vol.
 * 2A, CPUID leaf 0AH.
 *
 * Counters: general-purpose counters (IA32_PERFEVTSELx / IA32_PMCx, or
 * IA32_A_PMCx when IA32_PERF_CAPABILITIES allows full-width writes) and,
 * from version 2, fixed counters for instructions retired, core cycles and
 * reference cycles, used first for those events. Version 2 and later
 * deliver an overflow interrupt (PMI) through the local APIC; version 1
 * has none and perfmon polls its counters.
 *
 * Raw events (PERFMON_EF_RAW) use the IA32_PERFEVTSELx layout: event
 * select in bits 7:0, unit mask in 15:8, and optionally edge detect (bit
 * 18), invert (bit 23, only with a counter mask) and counter mask (31:24).
 * The ring bits come from PERFMON_EF_KERN / PERFMON_EF_USER; any other bit,
 * or a zero event select, is refused with EINVAL.
 */
#ifndef X86_PMU_INTEL_H
#define X86_PMU_INTEL_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <pmu/pmu_x86.h>

#define PMU_INTEL_MAX_GP        8
#define PMU_INTEL_MAX_FIXED     4
#define PMU_INTEL_FIXED_BASE    32  /* counter of fixed counter 0 */

/* What detection found. */
struct pmu_intel_info {
    unsigned int version;           /* 0: no architectural PMU */
    unsigned int nr_gp;
    unsigned int gp_width;
    unsigned int nr_fixed;          /* fixed counters EDX[4:0] reports */
    unsigned int fixed_width;
    uint32_t fixed_mask;            /* bit j: fixed counter j exists */
    unsigned int ebx_length;        /* length of the CPUID.0AH:EBX vector */
    uint32_t events_available;      /* bit i: architectural event i */
    bool full_width_writes;
    unsigned int family;            /* displayed family and model */
    unsigned int model;             /* (CPUID.1:EAX), for the quirks */
};

/* Detection results, valid after pmu_intel_setup. Any context. */
const struct pmu_intel_info *pmu_intel_get_info(void);

/*
 * Read CPUID leaf 0AH (and PERF_CAPABILITIES) into info. Pure detection,
 * no side effect on the PMU. Any context.
 */
void pmu_intel_detect(struct pmu_intel_info *info);

/* The architectural event a generic perfmon id maps to, or -1. */
int pmu_intel_generic_to_arch(unsigned int perfmon_id);

/*
 * On a CPU: PMIs taken, spurious PMIs (no counter bit in the status), and
 * PMIs whose handler gave up after its 16 passes, forcing the status
 * clear without reporting what remained (syscnts pmu_intel_pmis/<cpu>,
 * pmu_intel_spurious/<cpu>, pmu_intel_pmi_giveup/<cpu>). The x86 layer
 * counts them for whichever driver registered. Any context.
 */
#define pmu_intel_nr_pmis           pmu_x86_nr_pmis
#define pmu_intel_nr_spurious       pmu_x86_nr_spurious
#define pmu_intel_nr_pmi_giveups    pmu_x86_nr_pmi_giveups

INIT_OP_DECLARE(pmu_intel_setup);

#endif /* X86_PMU_INTEL_H */
