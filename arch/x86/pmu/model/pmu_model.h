/*
 * Register-level model of an Intel architectural PMU on one CPU, for the
 * host tests of arch/x86/pmu/pmu_intel.c and the model kernel (one model
 * per CPU, pmu_model_kern.c): one source, built for both
 * (pmu_model_env.h). The model answers the driver's CPUID, RDMSR and
 * WRMSR (model_cpu_cpuid, model_cpu_get_msr, model_cpu_set_msr, which
 * stand for cpu_cpuid, cpu_get_msr, cpu_set_msr) and its local APIC calls
 * (model_lapic_pmc_setup, _unmask, _eoi), and counts events a test
 * retires.
 *
 * Semantics, from the Intel SDM:
 * - vol. 2A, CPUID: leaf 0 gives the highest basic leaf; a leaf above it
 *   returns the data of the highest basic leaf. Leaf 0AH: EAX version,
 *   general counters, their width, EBX vector length; EBX bit i set means
 *   architectural event i is unavailable; EDX[4:0] fixed counters and
 *   EDX[12:5] their width (version 2 on); ECX bit j: fixed counter j
 *   exists (version 5 on, in addition to the EDX count).
 * - vol. 3B, 21.2.1 (version 1): IA32_PMCi / IA32_PERFEVTSELi only;
 *   event select 7:0, umask 15:8, USR 16, OS 17, INT 20, EN 22.
 * - vol. 3B, 21.2.2 (version 2): fixed counters, IA32_FIXED_CTR_CTRL (a
 *   4-bit field per counter: OS, USR, AnyThread, PMI), and the global
 *   registers: a counter counts only with its IA32_PERF_GLOBAL_CTRL bit
 *   (general i: bit i, fixed j: bit 32 + j); an overflow sets that bit in
 *   IA32_PERF_GLOBAL_STATUS (read only), and writing it to
 *   IA32_PERF_GLOBAL_OVF_CTRL clears it (bits 62, 63 clear the other
 *   status conditions).
 * - vol. 3B, 21.2.5 (version 5): the ECX fixed-counter bitmask.
 * - vol. 3B, 21.2.6 (full-width writes): a write to IA32_PMCi keeps bits
 *   31:0 and sign-extends bit 31; IA32_A_PMCi exists when
 *   IA32_PERF_CAPABILITIES bit 13 is set, and a write wider than the
 *   counter raises #GP. IA32_PERF_CAPABILITIES exists when CPUID.1:ECX
 *   bit 15 (PDCM) is set.
 * - vol. 3B, 21.2.4 (version 4): IA32_PERF_GLOBAL_STATUS bits 58
 *   (LBR_Frz) and 59 (CTR_Frz); a counter counts only while CTR_Frz is
 *   clear (21.2.4.1); MSR 390H becomes IA32_PERF_GLOBAL_STATUS_RESET,
 *   which also clears bits 58 and 59 (21.2.4.2).
 * - vol. 3B, IA32_DEBUGCTL (MSR 1D9H) and "Freezing LBR and Performance
 *   Counters on PMI": with FREEZE_PERFMON_ON_PMI (bit 12) set, a PMI
 *   request clears every enable bit of IA32_PERF_GLOBAL_CTRL (versions 2
 *   and 3) or sets CTR_Frz (version 4 on, "streamlined" freeze); with
 *   FREEZE_LBRS_ON_PMI (bit 11), it clears DEBUGCTL.LBR (bit 0) or sets
 *   LBR_Frz. Both bits exist with CPUID.1:ECX.PDCM and version 2 on (vol.
 *   4, table 2-2). The freeze comes with the request, at the overflow,
 *   whether or not the LVT entry lets the interrupt through, so events
 *   after the overflow are lost until software unfreezes.
 * - vol. 3A, 11.5.1: the LVT performance counter entry is masked at reset
 *   and the CPU sets its mask bit (16) when it generates a PMI.
 * - vol. 2B, RDMSR/WRMSR: an access to an MSR that does not exist, or a
 *   write of a reserved bit, raises #GP(0).
 * - vol. 4, table 2-2: the MSR addresses.
 *
 * Inconvenient things real hardware (or a hypervisor) does, on demand:
 * - Drift: counters keep counting while the driver runs. With
 *   model_set_drift(n), every RDMSR and WRMSR the driver executes is
 *   preceded by n events that every counter enabled for ring 0 counts,
 *   whatever its event (the driver's own instructions, cycles,
 *   branches...), with overflow, PMI and freeze as for retired events.
 * - Stuck status bits (model_set_stuck_status): bits of
 *   IA32_PERF_GLOBAL_STATUS that an acknowledgment does not clear.
 * - A DEBUGCTL whose bits a write cannot clear (model_set_debugctl_sticky),
 *   as under a hypervisor that ignores the write.
 * - PMU MSRs that #GP or ignore writes (model_config.pmu_msrs), as under a
 *   hypervisor that advertises CPUID leaf 0AH without emulating them.
 * - Partial emulation (model_config.nr_gp_emulated, fixed_unemulated):
 *   the driver's accesses to the MSRs of counters CPUID advertises beyond
 *   those a hypervisor emulates #GP.
 * - Model quirks, by CPUID.1:EAX (model_config.cpuid1_eax), on Haswell and
 *   Broadwell (DisplayFamily_DisplayModel 06_3CH, 3FH, 45H, 46H, 3DH, 47H,
 *   4FH, 56H: SDM vol. 4, table 2-1): L1D_PEND_MISS.PENDING (event 48H,
 *   umask 01H) counts on general counter 2 only, on any other it counts
 *   nothing (SDM vol. 3B, the non-architectural event tables of those
 *   processors: "Counter 2 only"); and a general counter of
 *   INST_RETIRED.ALL (event C0H, umask 01H) written with fewer than 100
 *   events to its overflow is errata HSW11/BDM11 (specification updates
 *   of the 4th and 5th generation Intel Core processors), which the
 *   model records as a fault.
 * - Counters firmware enabled before the kernel
 *   (model_firmware_counter), which go on counting their event.
 *
 * Choices of the model: an access to a register the configured PMU lacks,
 * or a write of a reserved bit, is a #GP; the model records it (the tests
 * assert none happened) and the access does nothing (a read gives 0). A
 * #GP in cpu_get_msr_safe/cpu_set_msr_safe is handled instead: it is
 * counted apart and the accessor returns EIO, as the kernel's fixup does.
 * Reserved bits: 63:32 of IA32_PERFEVTSELi, counter bits above the width
 * (full-width aliases and fixed counters), fields of missing fixed
 * counters, GLOBAL_CTRL and OVF_CTRL bits of missing counters. Edge,
 * invert and counter mask filter per-cycle occurrences, which the model
 * does not have: it counts a matching event as if they were clear. At
 * reset the general counters' GLOBAL_CTRL enable bits are set, the state
 * a driver must not rely on.
 */
#ifndef HOST_PMU_MODEL_H
#define HOST_PMU_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#define MODEL_MAX_GP            16
#define MODEL_MAX_FIXED         4
#define MODEL_FIXED_BASE        32  /* counter id of fixed counter 0 */

#define MODEL_MSR_PMC(i)        (0xc1 + (i))
#define MODEL_MSR_EVTSEL(i)     (0x186 + (i))
#define MODEL_MSR_A_PMC(i)      (0x4c1 + (i))
#define MODEL_MSR_FIXED_CTR(j)  (0x309 + (j))
#define MODEL_MSR_PERF_CAP      0x345
#define MODEL_MSR_FIXED_CTRL    0x38d
#define MODEL_MSR_GLOBAL_STATUS 0x38e
#define MODEL_MSR_GLOBAL_CTRL   0x38f
#define MODEL_MSR_GLOBAL_OVF    0x390   /* _STATUS_RESET from version 4 */
#define MODEL_MSR_DEBUGCTL      0x1d9

#define MODEL_EVTSEL_USR        (1ULL << 16)
#define MODEL_EVTSEL_OS         (1ULL << 17)
#define MODEL_EVTSEL_EDGE       (1ULL << 18)
#define MODEL_EVTSEL_PC         (1ULL << 19)
#define MODEL_EVTSEL_INT        (1ULL << 20)
#define MODEL_EVTSEL_ANY        (1ULL << 21)
#define MODEL_EVTSEL_EN         (1ULL << 22)
#define MODEL_EVTSEL_INV        (1ULL << 23)
#define MODEL_EVTSEL_CMASK(n)   ((uint64_t)(n) << 24)

#define MODEL_FIXED_OS          0x1
#define MODEL_FIXED_USR         0x2
#define MODEL_FIXED_ANY         0x4
#define MODEL_FIXED_PMI         0x8
#define MODEL_FIXED_FIELD(j, v) ((uint64_t)(v) << (4 * (j)))

#define MODEL_GLOBAL_FIXED(j)   (1ULL << (MODEL_FIXED_BASE + (j)))
#define MODEL_STATUS_LBR_FRZ    (1ULL << 58)
#define MODEL_STATUS_CTR_FRZ    (1ULL << 59)
#define MODEL_STATUS_OVF_BUF    (1ULL << 62)
#define MODEL_STATUS_COND_CHGD  (1ULL << 63)

#define MODEL_DEBUGCTL_LBR              (1ULL << 0)
#define MODEL_DEBUGCTL_FREEZE_LBRS      (1ULL << 11)
#define MODEL_DEBUGCTL_FREEZE_PERFMON   (1ULL << 12)

#define MODEL_PERF_CAP_FW_WRITE (1ULL << 13)
#define MODEL_CPUID1_ECX_PDCM   (1U << 15)

#define MODEL_LVT_MASKED        (1U << 16)
#define MODEL_LVT_MODE          (7U << 8)   /* delivery mode */
#define MODEL_LVT_NMI           (4U << 8)

/* CPUID.0AH:EAX and EDX from their fields. */
#define MODEL_CPUID_A_EAX(version, nr_gp, width, ebx_length)           \
    ((uint32_t)(version) | ((uint32_t)(nr_gp) << 8)                     \
     | ((uint32_t)(width) << 16) | ((uint32_t)(ebx_length) << 24))
#define MODEL_CPUID_A_EDX(nr_fixed, width)                              \
    ((uint32_t)(nr_fixed) | ((uint32_t)(width) << 5))

/* How the PMU MSRs behave (every one but IA32_DEBUGCTL). */
enum model_pmu_msrs {
    MODEL_PMU_MSRS_WORK,        /* as the SDM describes */
    MODEL_PMU_MSRS_FAULT,       /* every access raises #GP */
    MODEL_PMU_MSRS_IGNORED,     /* writes are dropped, reads give 0 */
};

/* What the modelled CPU reports; the registers follow from it. */
struct model_config {
    uint32_t max_leaf;          /* CPUID.0:EAX */
    uint32_t cpuid1_ecx;        /* CPUID.1:ECX */
    uint32_t a_eax;             /* CPUID.0AH */
    uint32_t a_ebx;
    uint32_t a_ecx;
    uint32_t a_edx;
    uint64_t perf_capabilities; /* IA32_PERF_CAPABILITIES, with PDCM */
    enum model_pmu_msrs pmu_msrs;
    uint32_t cpuid1_eax;        /* CPUID.1:EAX: family, model, stepping */
    unsigned int nr_gp_emulated;    /* general counters whose MSRs work
                                       (0: every advertised one) */
    uint32_t fixed_unemulated;  /* fixed counters whose MSRs #GP */
};

/* CPUID.1:EAX of a family 6 model (displayed model, stepping 0). */
#define MODEL_CPUID1_EAX_FAM6(model)                                    \
    ((6U << 8) | (((model) & 0xfU) << 4) | ((((model) >> 4) & 0xfU) << 16))
#define MODEL_HASWELL           0x3c

#define MODEL_EV_L1D_PEND_MISS  ((struct model_event){ 0x48, 0x01 })
#define MODEL_EV_INST_RETIRED_ALL   ((struct model_event){ 0xc0, 0x01 })

/* An event by event select and unit mask. */
struct model_event {
    uint8_t select;
    uint8_t umask;
};

/* Architectural events (SDM vol. 3B, table 21-1), by CPUID.0AH:EBX bit. */
#define MODEL_EV_CYCLES         ((struct model_event){ 0x3c, 0x00 })
#define MODEL_EV_INSTRUCTIONS   ((struct model_event){ 0xc0, 0x00 })
#define MODEL_EV_REF_CYCLES     ((struct model_event){ 0x3c, 0x01 })
#define MODEL_EV_LLC_REFS       ((struct model_event){ 0x2e, 0x4f })
#define MODEL_EV_LLC_MISSES     ((struct model_event){ 0x2e, 0x41 })
#define MODEL_EV_BRANCHES       ((struct model_event){ 0xc4, 0x00 })
#define MODEL_EV_BRANCH_MISSES  ((struct model_event){ 0xc5, 0x00 })
#define MODEL_EV_TOPDOWN_SLOTS  ((struct model_event){ 0xa4, 0x01 })

/* The event select and unit mask as PERFEVTSEL bits 15:0. */
static inline uint64_t
model_event_code(struct model_event event)
{
    return event.select | ((uint64_t)event.umask << 8);
}

enum model_ring {
    MODEL_RING_KERN,            /* CPL 0: counted with OS */
    MODEL_RING_USER,            /* CPL > 0: counted with USR */
};

/* The whole architectural state: what a snapshot compares. */
struct model_regs {
    uint64_t pmc[MODEL_MAX_GP];
    uint64_t evtsel[MODEL_MAX_GP];
    uint64_t fixed_ctr[MODEL_MAX_FIXED];
    uint64_t fixed_ctrl;
    uint64_t global_ctrl;
    uint64_t global_status;
    uint64_t debugctl;
    uint64_t lvt_pmc;
};

/*
 * The driver's view of the modelled CPU: CPUID, RDMSR and WRMSR (the
 * safe ones return EIO on a #GP and store 0, as the kernel's fixup) and
 * the local APIC's performance counter entry, with machine/cpu.h's and
 * machine/lapic.h's semantics. The host tests' shadow of those headers
 * calls them (tests/host/pmu/pmu_model_host.c), the model kernel its
 * drivers' calls (pmu_model_kern.c). model_lvt_nmi: whether the entry
 * delivers an NMI.
 */
void model_cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax,
                     uint32_t *ebx, uint32_t *ecx, uint32_t *edx);
uint64_t model_cpu_get_msr(uint32_t msr);
void model_cpu_set_msr(uint32_t msr, uint64_t value);
int model_cpu_get_msr_safe(uint32_t msr, uint64_t *valuep);
int model_cpu_set_msr_safe(uint32_t msr, uint64_t value);
void model_lapic_pmc_setup(unsigned int vector);
void model_lapic_pmc_setup_nmi(void);
void model_lapic_pmc_unmask(void);
void model_lapic_eoi(void);
bool model_lvt_nmi(void);

/*
 * Power the modelled CPU up with config: registers at their reset values,
 * statistics and the fault record cleared.
 */
void model_reset(const struct model_config *config);

/* Retire n occurrences of event at a privilege level. */
void model_retire(struct model_event event, uint64_t n, enum model_ring ring);

/* True when counter id (i, or MODEL_FIXED_BASE + j) exists. */
bool model_counter_exists(unsigned int id);

/* Width in bits of counter id; 0 when it does not exist. */
unsigned int model_counter_width(unsigned int id);

/* Times counter id wrapped past its width since reset. */
uint64_t model_nr_wraps(unsigned int id);

/*
 * Events counter id counted since reset: in all, and as of the last RDMSR
 * and the last WRMSR of the counter itself. What a correct perfmon
 * reports follows from them, drift included.
 */
uint64_t model_nr_counted(unsigned int id);
uint64_t model_counted_at_read(unsigned int id);
uint64_t model_counted_at_write(unsigned int id);

/* Events every ring-0 counter counts before each driver RDMSR/WRMSR. */
void model_set_drift(uint64_t events);

/*
 * Firmware's use of counter id before the kernel boots: event counted in
 * both rings, the counter enabled in its event select (or fixed field)
 * and, from version 2, in IA32_PERF_GLOBAL_CTRL.
 */
void model_firmware_counter(unsigned int id, struct model_event event);

/* IA32_PERF_GLOBAL_STATUS bits that acknowledgments do not clear. */
void model_set_stuck_status(uint64_t bits);

/* IA32_DEBUGCTL bits that, once set, writes do not clear. */
void model_set_debugctl_sticky(uint64_t bits);

/*
 * Direct access for tests, with no #GP, no side effect and no statistics:
 * model_msr reads a modelled register (0 for one that is not modelled),
 * model_poke sets one (e.g. state left by firmware, or GLOBAL_STATUS).
 */
uint64_t model_msr(uint32_t msr);
void model_poke(uint32_t msr, uint64_t value);

void model_snapshot(struct model_regs *regs);

/* NULL when equal, else the first difference, as text (static buffer). */
const char *model_regs_diff(const struct model_regs *a,
                            const struct model_regs *b);

/*
 * Unhandled #GPs since reset (or model_clear_faults) and the first one,
 * as text: in the kernel each would be a panic.
 */
unsigned int model_nr_faults(void);
const char *model_first_fault(void);
void model_clear_faults(void);

/* #GPs the safe accessors handled since reset. */
unsigned int model_nr_handled_faults(void);

/* RDMSR and WRMSR executed on one address, and on all, since reset. */
unsigned long model_nr_reads(uint32_t msr);
unsigned long model_nr_writes(uint32_t msr);
unsigned long model_nr_accesses(void);

/* Times bit was written as 1 to IA32_PERF_GLOBAL_OVF_CTRL. */
unsigned long model_nr_acks(unsigned int bit);

/*
 * PMIs. An overflow of a counter with INT (or its fixed PMI bit) set
 * requests one; it is generated when the LVT entry is unmasked, which then
 * masks it and leaves the interrupt pending until a test takes it.
 */
unsigned long model_nr_pmi_requests(void);
bool model_pmi_pending(void);
bool model_pmi_take(void);      /* return the pending flag and clear it */
unsigned long model_nr_eois(void);

/* The LVT performance counter entry (xAPIC offset 340H). */
uint32_t model_lvt_pmc(void);

/*
 * Call hook after every WRMSR that did not fault (NULL: none), so a test
 * can make things happen in the middle of driver code, e.g. a status bit
 * that shows up while the PMI handler runs. model_reset clears it.
 */
void model_set_wrmsr_hook(void (*hook)(uint32_t msr, uint64_t value));

/*
 * Call hook after every RDMSR that did not fault, once the value read is
 * taken (NULL: none): events it retires come after the driver's read,
 * e.g. an overflow between perfmon's read of a counter and its reload.
 * model_reset clears it.
 */
void model_set_rdmsr_hook(void (*hook)(uint32_t msr));

#endif /* HOST_PMU_MODEL_H */
