/*
 * AMD PMU detection and event tables: which register set and which
 * generation's generic event codes a CPU gets, from CPUID alone (no MSR
 * access). The device operations are pmu_amd.c's; both share
 * pmu_amd.h.
 *
 * References: AMD APM vol. 3, appendix E (CPUID Fn0000_0000,
 * Fn8000_0001 ECX[23], Fn8000_0022); the family PPRs, "Core Performance
 * Monitor Counters" (event codes) and their CPUID tables (models).
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/macros.h>
#include <kern/perfmon.h>
#include <machine/cpu.h>
#include <pmu/pmu_amd.h>

/* CPUID leaves and bits (APM vol. 3, appendix E). */
#define PMU_AMD_CPUID_EXT_MAX       0x80000000U
#define PMU_AMD_CPUID_EXT_FEATURES  0x80000001U
#define PMU_AMD_CPUID_EXT_PERFMON   0x80000022U
#define PMU_AMD_EXT_ECX_PERFCTR_CORE    (1U << 23)
#define PMU_AMD_PERFMON_EAX_V2      (1U << 0)
#define PMU_AMD_PERFMON_EBX_NR_CORE 0xfU

/* Event select 11:8 sits in bits 35:32 of the register. */
#define PMU_AMD_CODE(event, umask)  (((uint64_t)(event) & 0xff)         \
                                     | ((uint64_t)(umask) << 8)         \
                                     | (((uint64_t)(event) >> 8) << 32))

/*
 * Generic events per generation, from the PPRs' core PMC tables (0: no
 * equivalent). Cache references and misses are L2 events from Zen on
 * (PMCx060 requests, PMCx064 misses); K7 to family 16h count data cache
 * refills from L2 or the system (PMCx07D, PMCx07E). Reference cycles
 * exist from Zen 4 only, as PMCx120, unhalted cycles at the P0 rate,
 * which is the TSC's. The Zen generations agree on the rest.
 */
#define PMU_AMD_ZEN_EVENTS                                              \
    [PERFMON_EV_CYCLE] = PMU_AMD_CODE(0x076, 0x00),                     \
    [PERFMON_EV_INSTRUCTION] = PMU_AMD_CODE(0x0c0, 0x00),               \
    [PERFMON_EV_CACHE_REF] = PMU_AMD_CODE(0x060, 0xff),                 \
    [PERFMON_EV_CACHE_MISS] = PMU_AMD_CODE(0x064, 0x09),                \
    [PERFMON_EV_BRANCH] = PMU_AMD_CODE(0x0c2, 0x00),                    \
    [PERFMON_EV_BRANCH_MISS] = PMU_AMD_CODE(0x0c3, 0x00)

static const uint64_t pmu_amd_events[][PERFMON_NR_GENERIC_EVENTS] = {
    [PMU_AMD_GEN_K7] = {
        [PERFMON_EV_CYCLE] = PMU_AMD_CODE(0x076, 0x00),
        [PERFMON_EV_INSTRUCTION] = PMU_AMD_CODE(0x0c0, 0x00),
        [PERFMON_EV_CACHE_REF] = PMU_AMD_CODE(0x07d, 0x07),
        [PERFMON_EV_CACHE_MISS] = PMU_AMD_CODE(0x07e, 0x07),
        [PERFMON_EV_BRANCH] = PMU_AMD_CODE(0x0c2, 0x00),
        [PERFMON_EV_BRANCH_MISS] = PMU_AMD_CODE(0x0c3, 0x00),
    },
    [PMU_AMD_GEN_ZEN1] = { PMU_AMD_ZEN_EVENTS },
    [PMU_AMD_GEN_ZEN2] = { PMU_AMD_ZEN_EVENTS },
    [PMU_AMD_GEN_ZEN4] = {
        PMU_AMD_ZEN_EVENTS,
        [PERFMON_EV_REF_CYCLE] = PMU_AMD_CODE(0x120, 0x00),
    },
};

static const char *const pmu_amd_gen_names[] = {
    [PMU_AMD_GEN_NONE] = "none",
    [PMU_AMD_GEN_K7] = "K7 to family 16h",
    [PMU_AMD_GEN_ZEN1] = "Zen 1",
    [PMU_AMD_GEN_ZEN2] = "Zen 2/3",
    [PMU_AMD_GEN_ZEN4] = "Zen 4",
};

const char *
pmu_amd_gen_name(enum pmu_amd_gen gen)
{
    if ((unsigned int)gen >= ARRAY_SIZE(pmu_amd_gen_names)) {
        return "?";
    }

    return pmu_amd_gen_names[gen];
}

uint64_t
pmu_amd_generic_code(enum pmu_amd_gen gen, unsigned int perfmon_id)
{
    if (gen == PMU_AMD_GEN_NONE
        || (unsigned int)gen >= ARRAY_SIZE(pmu_amd_events)
        || perfmon_id >= PERFMON_NR_GENERIC_EVENTS) {
        return 0;
    }

    return pmu_amd_events[gen][perfmon_id];
}

/* ------------------------------------------------------------------ */
/* Detection                                                           */
/* ------------------------------------------------------------------ */

/* CPUID 0 vendor strings, as EBX, EDX, ECX. */
static bool
pmu_amd_vendor_is_amd(uint32_t ebx, uint32_t ecx, uint32_t edx)
{
    /* "AuthenticAMD" */
    if (ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163) {
        return true;
    }

    /* "HygonGenuine": Zen 1 derived, driven with the same registers. */
    return ebx == 0x6f677948 && edx == 0x6e65476e && ecx == 0x656e6975;
}

/*
 * The event table of a family and model. Zen models of family 17h and
 * 19h per the PPRs' CPUID tables: 17h 30h-4Fh, 60h-7Fh, 90h-91h and
 * A0h-AFh are Zen 2, the rest Zen 1; 19h 10h-1Fh and 60h-AFh are Zen 4,
 * the rest Zen 3, whose generic events are Zen 2's. Hygon's family 18h is
 * given Zen 1's table, an assumption from its Zen 1 lineage, not checked
 * against a Hygon document.
 */
static enum pmu_amd_gen
pmu_amd_gen_of(unsigned int family, unsigned int model)
{
    if (family < 6) {
        return PMU_AMD_GEN_NONE;
    }

    if (family < 0x17) {
        return PMU_AMD_GEN_K7;
    }

    if (family == 0x17) {
        if ((model >= 0x30 && model <= 0x4f)
            || (model >= 0x60 && model <= 0x7f)
            || (model >= 0x90 && model <= 0x91)
            || (model >= 0xa0 && model <= 0xaf)) {
            return PMU_AMD_GEN_ZEN2;
        }

        return PMU_AMD_GEN_ZEN1;
    }

    if (family == 0x18) {
        return PMU_AMD_GEN_ZEN1;
    }

    if (family == 0x19) {
        if ((model >= 0x10 && model <= 0x1f)
            || (model >= 0x60 && model <= 0xaf)) {
            return PMU_AMD_GEN_ZEN4;
        }

        return PMU_AMD_GEN_ZEN2;
    }

    return PMU_AMD_GEN_ZEN4;
}

void
pmu_amd_detect(struct pmu_amd_info *info)
{
    uint32_t eax, ebx, ecx, edx, ext_max;

    *info = (struct pmu_amd_info){ 0 };
    cpu_cpuid(0, 0, &eax, &ebx, &ecx, &edx);

    if (eax < 1 || !pmu_amd_vendor_is_amd(ebx, ecx, edx)) {
        return;
    }

    /* Family = base + extended when base is 0Fh; model likewise. */
    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);
    info->family = (eax >> 8) & 0xf;
    info->model = (eax >> 4) & 0xf;

    if (info->family == 0xf) {
        info->family += (eax >> 20) & 0xff;
        info->model |= ((eax >> 16) & 0xf) << 4;
    }

    info->gen = pmu_amd_gen_of(info->family, info->model);

    if (info->gen == PMU_AMD_GEN_NONE) {
        return;
    }

    /* The legacy counters have no CPUID bit: the probe decides. */
    info->nr_counters = PMU_AMD_LEGACY_NR;
    cpu_cpuid(PMU_AMD_CPUID_EXT_MAX, 0, &ext_max, &ebx, &ecx, &edx);

    if (ext_max < PMU_AMD_CPUID_EXT_FEATURES || ext_max > 0x8000ffffU) {
        return;
    }

    cpu_cpuid(PMU_AMD_CPUID_EXT_FEATURES, 0, &eax, &ebx, &ecx, &edx);

    if (!(ecx & PMU_AMD_EXT_ECX_PERFCTR_CORE)) {
        return;
    }

    info->ext_core = true;
    info->nr_counters = PMU_AMD_EXT_CORE_NR;

    if (ext_max < PMU_AMD_CPUID_EXT_PERFMON) {
        return;
    }

    /*
     * PerfMonV2 counts the core counters itself, and a guest may get
     * fewer than six. A leaf that claims version 2 with no counter is
     * not believed: the six PerfCtrExtCore counters are used without the
     * global registers.
     */
    cpu_cpuid(PMU_AMD_CPUID_EXT_PERFMON, 0, &eax, &ebx, &ecx, &edx);

    if ((eax & PMU_AMD_PERFMON_EAX_V2)
        && (ebx & PMU_AMD_PERFMON_EBX_NR_CORE) != 0) {
        info->perfmon_v2 = true;
        info->nr_counters = ebx & PMU_AMD_PERFMON_EBX_NR_CORE;
    }
}
