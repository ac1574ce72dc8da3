/*
 * Register-level model of AMD core performance counters on one CPU, for
 * the host tests of arch/x86/pmu/pmu_amd.c and the model kernel (one
 * model per CPU, pmu_model_kern.c): one source, built for both
 * (pmu_model_env.h). It answers the driver's CPUID, RDMSR and WRMSR
 * (model_amd_cpu_*, which stand for machine/cpu.h's) and its local APIC
 * calls (model_amd_lapic_*), and counts events a test retires.
 *
 * Semantics, from AMD APM vol. 2 section 13.2, APM vol. 3 appendix E
 * (CPUID) and the family PPRs:
 * - CPUID 0: vendor string; 1: family/model in EAX (base family 0Fh adds
 *   the extended family, and the extended model goes above the base);
 *   8000_0000h: highest extended leaf; 8000_0001h ECX[23] PerfCtrExtCore;
 *   8000_0022h EAX[0] PerfMonV2, EBX[3:0] core counters. Leaves above the
 *   highest read as zero. Leaf 0AH reads zero (no Intel PMU).
 * - Legacy PerfEvtSel0-3 / PerfCtr0-3 at C001_0000h / C001_0004h always
 *   exist with a PMU. With PerfCtrExtCore, PERF_CTL/PERF_CTR n at
 *   C001_0200h + 2n / + 2n + 1 (n < 6, or < EBX[3:0] with PerfMonV2), and
 *   legacy pair n is the same counter as extended pair n, as hypervisors
 *   implement it (the APM's word on aliasing was not available).
 * - PerfEvtSel: event select 7:0 and 35:32, unit mask 15:8, USR 16, OS
 *   17, edge 18, INT 20, EN 22, invert 23, counter mask 31:24, GuestOnly
 *   40, HostOnly 41. Writes never fault: of the reserved bits, 19 and 42
 *   stick and the others are dropped (as on Zen 3). The model records
 *   each write of a reserved bit. With SVM off, GuestOnly or HostOnly
 *   stops the counter (an inconvenient reading of an unverified point).
 * - Counters: 48 bits; a write keeps bits 47:0.
 * - PerfMonV2: PerfCntrGlobalCtl (C000_0301h, bit n enables counter n,
 *   reset value all counters enabled), PerfCntrGlobalStatus (C000_0300h,
 *   read only; writes are ignored), PerfCntrGlobalStatusClr (C000_0302h,
 *   write 1 to clear, reads 0), PerfCntrGlobalStatusSet (C000_0303h).
 *   Reserved bits of those are ignored (and recorded).
 * - Overflow: a counter wrapping past 2^48 sets its status bit
 *   (PerfMonV2) and, with INT, requests a PMI through the LVT
 *   performance counter entry. AMD does not mask the entry on delivery;
 *   model_amd_config.lvt_masks makes it do so, as KVM did for AMD guests.
 *
 * - Family 15h confines events to counters (BKDG for family 15h, each
 *   event's PERF_CTL restriction): events 060h to 09Fh and 0D0h to 0DFh
 *   count on PERF_CTL[2:0] only, floating-point events 000h to 00Fh on
 *   PERF_CTL[5:3] only; on another counter they count nothing.
 *
 * Inconvenient things, on demand: drift (counters count n events before
 * every driver RDMSR/WRMSR, as in the Intel model), stuck global status
 * bits, PMU MSRs that fault or read 0 and drop writes (a hypervisor with
 * its PMU off), and counters left running by firmware (model_amd_poke).
 *
 * An access to an MSR that does not exist is a #GP: the model records it
 * (tests assert none) and the access does nothing. In the safe accessors
 * it is counted apart and returns EIO, as the kernel's fixup does.
 */
#ifndef HOST_PMU_MODEL_AMD_H
#define HOST_PMU_MODEL_AMD_H

#include <stdbool.h>
#include <stdint.h>

#define MODEL_AMD_MAX_COUNTERS  16

#define MODEL_AMD_MSR_LEGACY_CTL(n) (0xc0010000U + (n))
#define MODEL_AMD_MSR_LEGACY_CTR(n) (0xc0010004U + (n))
#define MODEL_AMD_MSR_CTL(n)        (0xc0010200U + 2 * (n))
#define MODEL_AMD_MSR_CTR(n)        (0xc0010201U + 2 * (n))
#define MODEL_AMD_MSR_GLOBAL_STATUS 0xc0000300U
#define MODEL_AMD_MSR_GLOBAL_CTL    0xc0000301U
#define MODEL_AMD_MSR_GLOBAL_CLR    0xc0000302U
#define MODEL_AMD_MSR_GLOBAL_SET    0xc0000303U

#define MODEL_AMD_EVTSEL_USR        (1ULL << 16)
#define MODEL_AMD_EVTSEL_OS         (1ULL << 17)
#define MODEL_AMD_EVTSEL_EDGE       (1ULL << 18)
#define MODEL_AMD_EVTSEL_INT        (1ULL << 20)
#define MODEL_AMD_EVTSEL_EN         (1ULL << 22)
#define MODEL_AMD_EVTSEL_INV        (1ULL << 23)
#define MODEL_AMD_EVTSEL_CMASK(n)   ((uint64_t)(n) << 24)
#define MODEL_AMD_EVTSEL_GUEST      (1ULL << 40)
#define MODEL_AMD_EVTSEL_HOST       (1ULL << 41)

#define MODEL_AMD_LVT_MASKED        (1U << 16)
#define MODEL_AMD_LVT_MODE          (7U << 8)   /* delivery mode */
#define MODEL_AMD_LVT_NMI           (4U << 8)

/* An event select (12 bits) and unit mask as PerfEvtSel bits. */
#define MODEL_AMD_CODE(event, umask)                                    \
    (((uint64_t)(event) & 0xff) | ((uint64_t)(umask) << 8)              \
     | (((uint64_t)(event) >> 8) << 32))

/* Events from the PPRs' core PMC tables. */
#define MODEL_AMD_EV_CYCLES         MODEL_AMD_CODE(0x076, 0x00)
#define MODEL_AMD_EV_INSTRUCTIONS   MODEL_AMD_CODE(0x0c0, 0x00)
#define MODEL_AMD_EV_BRANCHES       MODEL_AMD_CODE(0x0c2, 0x00)
#define MODEL_AMD_EV_BRANCH_MISSES  MODEL_AMD_CODE(0x0c3, 0x00)
#define MODEL_AMD_EV_K7_DC_REFILL_L2    MODEL_AMD_CODE(0x07d, 0x07)
#define MODEL_AMD_EV_K7_DC_REFILL_SYS   MODEL_AMD_CODE(0x07e, 0x07)
#define MODEL_AMD_EV_ZEN_L2_REQUESTS    MODEL_AMD_CODE(0x060, 0xff)
#define MODEL_AMD_EV_ZEN_L2_MISSES      MODEL_AMD_CODE(0x064, 0x09)
#define MODEL_AMD_EV_ZEN4_P0_CYCLES     MODEL_AMD_CODE(0x120, 0x00)

enum model_amd_vendor {
    MODEL_AMD_VENDOR_AMD,
    MODEL_AMD_VENDOR_HYGON,
    MODEL_AMD_VENDOR_INTEL,
};

enum model_amd_msrs {
    MODEL_AMD_MSRS_WORK,
    MODEL_AMD_MSRS_FAULT,       /* every PMU MSR raises #GP */
    MODEL_AMD_MSRS_IGNORED,     /* legacy read 0, drop writes; others #GP */
};

struct model_amd_config {
    enum model_amd_vendor vendor;
    unsigned int family;        /* displayed family, e.g. 0x19 */
    unsigned int model;         /* displayed model */
    uint32_t ext_max;           /* CPUID 8000_0000h EAX */
    bool ext_core;              /* 8000_0001h ECX[23] */
    bool perfmon_v2;            /* 8000_0022h EAX[0] */
    unsigned int v2_nr;         /* 8000_0022h EBX[3:0] */
    enum model_amd_msrs msrs;
    bool lvt_masks;             /* delivery masks the LVT entry (KVM bug) */
};

enum model_amd_ring {
    MODEL_AMD_RING_KERN,
    MODEL_AMD_RING_USER,
};

/* The whole architectural state, for snapshots. */
struct model_amd_regs {
    uint64_t ctl[MODEL_AMD_MAX_COUNTERS];
    uint64_t ctr[MODEL_AMD_MAX_COUNTERS];
    uint64_t global_ctl;
    uint64_t global_status;
    uint64_t lvt_pmc;
};

/*
 * The driver's view of the modelled CPU, as machine/cpu.h's and
 * machine/lapic.h's functions of the same names without the model_amd_
 * prefix (the host tests' tests/host/pmu/pmu_model_amd_host.c calls them
 * for those). model_amd_lvt_nmi: whether the entry delivers an NMI.
 */
void model_amd_cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax,
                         uint32_t *ebx, uint32_t *ecx, uint32_t *edx);
uint64_t model_amd_cpu_get_msr(uint32_t msr);
void model_amd_cpu_set_msr(uint32_t msr, uint64_t value);
int model_amd_cpu_get_msr_safe(uint32_t msr, uint64_t *valuep);
int model_amd_cpu_set_msr_safe(uint32_t msr, uint64_t value);
void model_amd_lapic_pmc_setup(unsigned int vector);
void model_amd_lapic_pmc_setup_nmi(void);
void model_amd_lapic_pmc_unmask(void);
void model_amd_lapic_eoi(void);
bool model_amd_lvt_nmi(void);

void model_amd_reset(const struct model_amd_config *config);

/* Counters of the configured PMU (0 without one). */
unsigned int model_amd_nr_counters(void);

/* n occurrences of an event (MODEL_AMD_CODE form) at a ring. */
void model_amd_retire(uint64_t code, uint64_t n, enum model_amd_ring ring);

/* Events counter n counted since reset, and its wraps past 2^48. */
uint64_t model_amd_nr_counted(unsigned int n);
uint64_t model_amd_nr_wraps(unsigned int n);

/* Events counter n had counted at its last RDMSR. */
uint64_t model_amd_counted_at_read(unsigned int n);

void model_amd_set_drift(uint64_t events);
void model_amd_set_stuck_status(uint64_t bits);

/* Direct access, without #GP, statistics or side effects. */
uint64_t model_amd_msr(uint32_t msr);
void model_amd_poke(uint32_t msr, uint64_t value);

void model_amd_snapshot(struct model_amd_regs *regs);
const char *model_amd_regs_diff(const struct model_amd_regs *a,
                                const struct model_amd_regs *b);

/* Unhandled #GPs (each a kernel panic) and the first, as text. */
unsigned int model_amd_nr_faults(void);
const char *model_amd_first_fault(void);
void model_amd_clear_faults(void);
unsigned int model_amd_nr_handled_faults(void);

/* Writes of reserved bits (dropped, sticky or ignored) and to GlobalStatus. */
unsigned int model_amd_nr_reserved_writes(void);

/* Accesses: on one MSR, and reads and writes of all, since reset. */
unsigned long model_amd_nr_reads(uint32_t msr);
unsigned long model_amd_nr_writes(uint32_t msr);
unsigned long model_amd_nr_all_reads(void);
unsigned long model_amd_nr_all_writes(void);

/* Reads of counters (legacy or extended PerfCtr) since reset. */
unsigned long model_amd_nr_counter_reads(void);

/* Times bit n was written as 1 to PerfCntrGlobalStatusClr. */
unsigned long model_amd_nr_clears(unsigned int n);

/* PMIs: requested, pending (generated, not yet taken). */
unsigned long model_amd_nr_pmi_requests(void);
bool model_amd_pmi_pending(void);
bool model_amd_pmi_take(void);
unsigned long model_amd_nr_eois(void);
uint32_t model_amd_lvt_pmc(void);

/*
 * Call hook after every RDMSR that did not fault, once the value read is
 * taken (NULL: none), as in the Intel model. model_amd_reset clears it.
 */
void model_amd_set_rdmsr_hook(void (*hook)(uint32_t msr));

#endif /* HOST_PMU_MODEL_AMD_H */
