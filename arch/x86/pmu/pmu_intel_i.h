/*
 * The Intel driver's private header, shared by its counter operations
 * (pmu_intel.c) and its setup (pmu_intel_setup.c): the registers, the
 * state setup finds and the operations read, and the bit sets both
 * compute. Not for any other module.
 */
#ifndef X86_PMU_INTEL_I_H
#define X86_PMU_INTEL_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon_dev.h>
#include <pmu/pmu_intel.h>
#include <pmu/pmu_x86.h>

#define PMU_INTEL_MSR_PMC(i)        (0xc1 + (i))
#define PMU_INTEL_MSR_EVTSEL(i)     (0x186 + (i))
#define PMU_INTEL_MSR_A_PMC(i)      (0x4c1 + (i))
#define PMU_INTEL_MSR_FIXED_CTR(j)  (0x309 + (j))
#define PMU_INTEL_MSR_FIXED_CTRL    0x38d
#define PMU_INTEL_MSR_GLOBAL_STATUS 0x38e
#define PMU_INTEL_MSR_GLOBAL_CTRL   0x38f
#define PMU_INTEL_MSR_GLOBAL_OVF    0x390

#define PMU_INTEL_FIXED_OS          0x1
#define PMU_INTEL_FIXED_USR         0x2
#define PMU_INTEL_FIXED_PMI         0x8
#define PMU_INTEL_FIXED_FIELD(j, v) ((uint64_t)(v) << (4 * (j)))

#define PMU_INTEL_STATUS_OTHER      ((1ULL << 62) | (1ULL << 63))
#define PMU_INTEL_STATUS_FROZEN     ((1ULL << 58) | (1ULL << 59))

/* What detection found, trimmed by the probe (pmu_intel_setup.c). */
extern struct pmu_intel_info pmu_intel_info;

/* The perfmon device, filled in by setup. */
extern struct perfmon_dev pmu_intel_dev;

/* Its operations (pmu_intel.c). */
extern const struct perfmon_dev_ops pmu_intel_ops;

/* What the x86 layer drives; setup adds the counters that exist. */
extern struct pmu_x86_vendor pmu_intel_vendor;

/* The architectural event each fixed counter counts. */
extern const unsigned int pmu_intel_fixed_events[PMU_INTEL_MAX_FIXED];

/*
 * Counters firmware held at boot (enabled: BIOS or SMM code counting for
 * itself), found on the boot CPU before anything is written: they are
 * never allocated, and setup leaves their event selects, fixed-counter
 * fields and global enables as found, on every CPU. fw_global: their
 * IA32_PERF_GLOBAL_CTRL bits that were set; fw_fixed_ctrl: their
 * IA32_FIXED_CTR_CTRL fields. The shadows start from these, so that every
 * write of those registers keeps them.
 */
extern uint32_t pmu_intel_fw_gp;
extern uint32_t pmu_intel_fw_fixed;
extern uint64_t pmu_intel_fw_global;
extern uint64_t pmu_intel_fw_fixed_ctrl;

/*
 * Haswell and Broadwell (pmu_intel_find_hsw_bdw), decided once at setup,
 * since the PMI's preset asks.
 */
extern bool pmu_intel_hsw_bdw;

static inline bool
pmu_intel_has_pmi(void)
{
    return pmu_intel_info.version >= 2;
}

/* GLOBAL_STATUS bits of the counters that exist. */
static inline uint64_t
pmu_intel_counter_bits(void)
{
    return ((1ULL << pmu_intel_info.nr_gp) - 1)
           | ((uint64_t)pmu_intel_info.fixed_mask << PMU_INTEL_FIXED_BASE);
}

/* GLOBAL_STATUS bits of the counters firmware holds. */
static inline uint64_t
pmu_intel_fw_bits(void)
{
    return pmu_intel_fw_gp
           | ((uint64_t)pmu_intel_fw_fixed << PMU_INTEL_FIXED_BASE);
}

/* GLOBAL_STATUS bits of the counters this driver uses. */
static inline uint64_t
pmu_intel_own_bits(void)
{
    return pmu_intel_counter_bits() & ~pmu_intel_fw_bits();
}

/*
 * GLOBAL_STATUS bits besides the counters' that the PMI acknowledges:
 * CondChgd and OvfBuf and, from version 4, CTR_Frz and LBR_Frz, which a
 * PMI request sets with the freeze bits of DEBUGCTL and which stop
 * counting until IA32_PERF_GLOBAL_STATUS_RESET (the OVF_CTRL address)
 * clears them (SDM vol. 3B, 21.2.4.1 and 21.2.4.2). Earlier versions
 * reserve those bits.
 */
static inline uint64_t
pmu_intel_status_other(void)
{
    return PMU_INTEL_STATUS_OTHER
           | ((pmu_intel_info.version >= 4) ? PMU_INTEL_STATUS_FROZEN : 0);
}

/*
 * The longest preset every counter takes, and the narrowest counter that
 * exists (pmu_intel.c). Any context, after detection.
 */
uint64_t pmu_intel_max_period(void);
unsigned int pmu_intel_min_width(void);

#endif /* X86_PMU_INTEL_I_H */
