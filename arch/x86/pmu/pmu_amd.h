/*
 * AMD core performance counters, a perfmon device. References: AMD64
 * Architecture Programmer's Manual (APM) vol. 2, section 13.2 "Hardware
 * Performance Monitoring and Control" (PerfEvtSel/PerfCtr, the
 * PerfCtrExtCore counters, PerfMonV2 global registers); vol. 3, CPUID
 * Fn8000_0001 ECX[23] and Fn8000_0022; the family Processor Programming
 * References (PPR), "Core Performance Monitor Counters", for the event
 * codes.
 *
 * Three register sets, chosen by CPUID:
 * - legacy: four counters, PerfEvtSel0-3 (C001_0000h + n) and PerfCtr0-3
 *   (C001_0004h + n). No CPUID bit announces them: a probe proves them.
 * - PerfCtrExtCore (Fn8000_0001 ECX[23]): six counters, PERF_CTL n at
 *   C001_0200h + 2n and PERF_CTR n at C001_0201h + 2n.
 * - PerfMonV2 (Fn8000_0022 EAX[0], with PerfCtrExtCore): the count of
 *   core counters in Fn8000_0022 EBX[3:0], and PerfCntrGlobalCtl,
 *   PerfCntrGlobalStatus and PerfCntrGlobalStatusClr (C000_0301h, 0300h,
 *   0302h).
 * Every counter is 48 bits wide (enumerated nowhere).
 *
 * Overflow: with PerfMonV2 an overflow sets the counter's global status
 * bit and, with INT, requests the PMI through the local APIC's LVT
 * performance counter entry. Without PerfMonV2 there is no status: the
 * driver presets bit 47 of each counter and an overflow is that bit read
 * back as 0 (the driver then reports the counter to perfmon as 47 bits
 * wide, bit 47 being its overflow flag). Boot argument pmu_amd.pmi=0
 * makes perfmon poll instead, for hypervisors whose PMI cannot be
 * trusted.
 *
 * Raw events (PERFMON_EF_RAW) use the PerfEvtSel layout: event select
 * 7:0 and 35:32, unit mask 15:8, edge 18, invert 23 (only with a counter
 * mask) and counter mask 31:24. The ring bits come from PERFMON_EF_KERN
 * and PERFMON_EF_USER; INT, EN, the host/guest bits and reserved bits are
 * the driver's, and a raw code with any of them is refused with EINVAL.
 */
#ifndef X86_PMU_AMD_H
#define X86_PMU_AMD_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <pmu/pmu_x86.h>

#define PMU_AMD_MAX_COUNTERS    16  /* Fn8000_0022 EBX[3:0] */
#define PMU_AMD_LEGACY_NR       4   /* legacy counters */
#define PMU_AMD_EXT_CORE_NR     6   /* PerfCtrExtCore counters */
#define PMU_AMD_WIDTH           48

/* Event tables: which family's generic event codes apply. */
enum pmu_amd_gen {
    PMU_AMD_GEN_NONE,           /* not an AMD CPU, or older than K7 */
    PMU_AMD_GEN_K7,             /* K7 to family 16h */
    PMU_AMD_GEN_ZEN1,
    PMU_AMD_GEN_ZEN2,           /* Zen 2 and Zen 3 */
    PMU_AMD_GEN_ZEN4,           /* Zen 4 and later */
};

/* How overflows reach perfmon. */
enum pmu_amd_ovf {
    PMU_AMD_OVF_POLL,           /* perfmon polls */
    PMU_AMD_OVF_TOP_BIT,        /* PMI, overflow = bit 47 read as 0 */
    PMU_AMD_OVF_GLOBAL,         /* PMI, PerfMonV2 global status */
};

/* What detection found. */
struct pmu_amd_info {
    unsigned int family;
    unsigned int model;
    enum pmu_amd_gen gen;
    bool ext_core;              /* PerfCtrExtCore */
    bool perfmon_v2;
    unsigned int nr_counters;   /* 0: no PMU to drive */
};

/* Detection results, valid after pmu_amd_setup. Any context. */
const struct pmu_amd_info *pmu_amd_get_info(void);

/*
 * Read CPUID into info: vendor, family and model, PerfCtrExtCore and
 * PerfMonV2. Pure detection, no MSR access. Any context.
 */
void pmu_amd_detect(struct pmu_amd_info *info);

/* The overflow mode the registered device uses. Any context. */
enum pmu_amd_ovf pmu_amd_get_ovf_mode(void);

/* The generation's name ("Zen 4"), for logs and tests. Any context. */
const char *pmu_amd_gen_name(enum pmu_amd_gen gen);

/*
 * The PerfEvtSel code (event select and unit mask) of a generic perfmon
 * event on a generation, or 0 when it has none. Any context.
 */
uint64_t pmu_amd_generic_code(enum pmu_amd_gen gen, unsigned int perfmon_id);

/*
 * On a CPU: PMIs taken, PMIs that found no overflowed counter, and PMIs
 * whose handler gave up on a status that would not clear (syscnts
 * pmu_amd_pmis/<cpu>, pmu_amd_spurious/<cpu>, pmu_amd_pmi_giveup/<cpu>).
 * The x86 layer counts them for whichever driver registered. Any context.
 */
#define pmu_amd_nr_pmis             pmu_x86_nr_pmis
#define pmu_amd_nr_spurious         pmu_x86_nr_spurious
#define pmu_amd_nr_pmi_giveups      pmu_x86_nr_pmi_giveups

INIT_OP_DECLARE(pmu_amd_setup);

#endif /* X86_PMU_AMD_H */
