/*
 * The AMD driver's private header, shared by its counter operations
 * (pmu_amd.c) and its setup (pmu_amd_setup.c): the registers, the state
 * setup finds and the operations read, and the small helpers both use.
 * Not for any other module.
 */
#ifndef X86_PMU_AMD_I_H
#define X86_PMU_AMD_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon_dev.h>
#include <machine/cpu.h>
#include <pmu/pmu_amd.h>
#include <pmu/pmu_x86.h>

/* Legacy counters (APM vol. 2, 13.2.1 and 13.2.2). */
#define PMU_AMD_MSR_LEGACY_CTL(n)   (0xc0010000U + (n))
#define PMU_AMD_MSR_LEGACY_CTR(n)   (0xc0010004U + (n))

/* PerfCtrExtCore counters: control and counter interleaved. */
#define PMU_AMD_MSR_CTL(n)          (0xc0010200U + 2 * (n))
#define PMU_AMD_MSR_CTR(n)          (0xc0010201U + 2 * (n))

/* PerfMonV2 global registers. */
#define PMU_AMD_MSR_GLOBAL_STATUS   0xc0000300U
#define PMU_AMD_MSR_GLOBAL_CTL      0xc0000301U
#define PMU_AMD_MSR_GLOBAL_STATUS_CLR   0xc0000302U

#define PMU_AMD_COUNTER_MASK        ((1ULL << PMU_AMD_WIDTH) - 1)

/*
 * Without PerfMonV2, bit 47 is the overflow flag: the driver keeps it set
 * and the counter's wrap past 2^48 clears it. The low 47 bits are what
 * perfmon counts.
 */
#define PMU_AMD_TOP_BIT             (1ULL << (PMU_AMD_WIDTH - 1))
#define PMU_AMD_TOP_BIT_WIDTH       (PMU_AMD_WIDTH - 1)

/* What detection found, at setup (pmu_amd_setup.c). */
extern struct pmu_amd_info pmu_amd_info;

/* How overflows are found, decided at setup. */
extern enum pmu_amd_ovf pmu_amd_ovf;

/* The perfmon device, filled in by setup. */
extern struct perfmon_dev pmu_amd_dev;

/* Its operations (pmu_amd.c). */
extern const struct perfmon_dev_ops pmu_amd_ops;

/*
 * What the x86 layer drives (its PMI loop and the global registers only
 * in PMU_AMD_OVF_GLOBAL); setup adds the counters that exist.
 */
extern struct pmu_x86_vendor pmu_amd_vendor;

/*
 * Counters firmware held at boot (PerfEvtSel EN set: BIOS or SMM code
 * counting for itself), found on the boot CPU before anything is
 * written: never allocated, their controls left as found on every CPU,
 * and with PerfMonV2 their PerfCntrGlobalCtl bits as found (fw_global),
 * which the shadow starts from so that every write keeps them.
 */
extern uint32_t pmu_amd_fw;
extern uint64_t pmu_amd_fw_global;

static inline uint32_t
pmu_amd_msr_ctl(unsigned int n)
{
    return pmu_amd_info.ext_core ? PMU_AMD_MSR_CTL(n)
                                 : PMU_AMD_MSR_LEGACY_CTL(n);
}

static inline uint32_t
pmu_amd_msr_ctr(unsigned int n)
{
    return pmu_amd_info.ext_core ? PMU_AMD_MSR_CTR(n)
                                 : PMU_AMD_MSR_LEGACY_CTR(n);
}

/* Global control and status bits of the counters that exist. */
static inline uint64_t
pmu_amd_counter_bits(void)
{
    return (1ULL << pmu_amd_info.nr_counters) - 1;
}

/* The width perfmon counts: bit 47 is the flag in top-bit mode. */
static inline unsigned int
pmu_amd_width(void)
{
    return (pmu_amd_ovf == PMU_AMD_OVF_TOP_BIT) ? PMU_AMD_TOP_BIT_WIDTH
                                                : PMU_AMD_WIDTH;
}

static inline uint64_t
pmu_amd_width_mask(void)
{
    return (1ULL << pmu_amd_width()) - 1;
}

static inline bool
pmu_amd_has_pmi(void)
{
    return pmu_amd_ovf != PMU_AMD_OVF_POLL;
}

/*
 * The longest preset: 2^46. A counter is 48 bits, written in full (APM
 * vol. 2, 13.2.2); in top-bit mode its bit 47 is the overflow flag and a
 * preset counter must start with it set, so 2^48 - n for n <= 2^47, whose
 * 48-bit wrap clears the flag after n events, as a counter started by
 * start does. perfmon sees the 47 bits below the flag, and a switch that
 * passes a preset counter from sampler to sampler tells a wrap by a
 * decrease of those (preset_ends_overflows), which needs the preset in
 * their top half: n <= 2^46. With PerfMonV2 the same bound keeps both
 * modes alike. 0 when polled (no overflow interrupt, no sampling).
 */
#define PMU_AMD_MAX_PERIOD          (1ULL << (PMU_AMD_WIDTH - 2))

static inline uint64_t
pmu_amd_max_period(void)
{
    return pmu_amd_has_pmi() ? PMU_AMD_MAX_PERIOD : 0;
}

/* Top-bit mode: a counter whose flag reads 0 wrapped unreported. */
static inline bool
pmu_amd_top_bit_cleared(unsigned int counter)
{
    return !(cpu_get_msr(pmu_amd_msr_ctr(counter)) & PMU_AMD_TOP_BIT);
}

#endif /* X86_PMU_AMD_I_H */
