/*
 * Intel PMU detection: CPUID leaf 0AH and IA32_PERF_CAPABILITIES read into
 * struct pmu_intel_info, and perfmon's generic events as architectural
 * events. The device operations are pmu_intel.c's; both share
 * pmu_intel.h.
 *
 * References: Intel SDM vol. 2A, CPUID leaf 0AH; vol. 3B, 21.2.1 to 21.2.7
 * (what each version adds), table 21-1 (architectural events), 21.2.6
 * (full-width writes); vol. 4, table 2-2 (IA32_PERF_CAPABILITIES).
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/macros.h>
#include <kern/perfmon.h>
#include <machine/cpu.h>
#include <pmu/pmu_intel.h>

#define PMU_INTEL_CPUID_LEAF        0xa
#define PMU_INTEL_MSR_PERF_CAP      0x345
#define PMU_INTEL_PERF_CAP_FW_WRITE (1ULL << 13)

/* perfmon's generic ids, in order, as architectural events. */
static const unsigned int pmu_intel_generic_events[] = {
    [PERFMON_EV_CYCLE] = 0,
    [PERFMON_EV_REF_CYCLE] = 2,
    [PERFMON_EV_INSTRUCTION] = 1,
    [PERFMON_EV_CACHE_REF] = 3,
    [PERFMON_EV_CACHE_MISS] = 4,
    [PERFMON_EV_BRANCH] = 5,
    [PERFMON_EV_BRANCH_MISS] = 6,
};

int
pmu_intel_generic_to_arch(unsigned int perfmon_id)
{
    if (perfmon_id >= ARRAY_SIZE(pmu_intel_generic_events)) {
        return -1;
    }

    return (int)pmu_intel_generic_events[perfmon_id];
}

/* ------------------------------------------------------------------ */
/* Detection                                                           */
/* ------------------------------------------------------------------ */

void
pmu_intel_detect(struct pmu_intel_info *info)
{
    uint32_t eax, ebx, ecx, edx, max_leaf, mask;
    uint64_t perf_cap;

    *info = (struct pmu_intel_info){ 0 };
    cpu_cpuid(0, 0, &max_leaf, &ebx, &ecx, &edx);

    if (max_leaf < PMU_INTEL_CPUID_LEAF) {
        return;
    }

    /* Any vendor: hypervisors may expose the leaf on other CPUs. */
    cpu_cpuid(PMU_INTEL_CPUID_LEAF, 0, &eax, &ebx, &ecx, &edx);
    info->version = eax & 0xff;

    if (info->version == 0) {
        return;
    }

    info->nr_gp = MIN((eax >> 8) & 0xff, PMU_INTEL_MAX_GP);
    info->gp_width = (eax >> 16) & 0xff;
    info->ebx_length = eax >> 24;

    /* EBX bit i set means event i is NOT available; only L bits count. */
    mask = (info->ebx_length >= 32) ? ~0U : (1U << info->ebx_length) - 1;
    info->events_available = ~ebx & mask;

    if (info->version >= 2) {
        info->nr_fixed = edx & 0x1f;
        info->fixed_width = (edx >> 5) & 0xff;
        info->fixed_mask = (info->nr_fixed >= 32)
                           ? ~0U : (1U << info->nr_fixed) - 1;

        /* Version 5: counter j exists if ECX[j] or EDX[4:0] > j. */
        if (info->version >= 5) {
            info->fixed_mask |= ecx;
        }

        info->fixed_mask &= (1U << PMU_INTEL_MAX_FIXED) - 1;

        if (info->fixed_width == 0 || info->fixed_width > 64) {
            info->fixed_mask = 0;
        }
    }

    if (info->gp_width == 0 || info->gp_width > 64) {
        info->nr_gp = 0;
    }

    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);

    /*
     * Displayed family and model (SDM vol. 2A, CPUID, "Processor Version
     * Information"): the extended model counts with families 6 and 0FH,
     * the extended family with 0FH only.
     */
    info->family = (eax >> 8) & 0xf;
    info->model = (eax >> 4) & 0xf;

    if (info->family == 0xf) {
        info->family += (eax >> 20) & 0xff;
    }

    if (info->family == 0x6 || info->family >= 0xf) {
        info->model |= ((eax >> 16) & 0xf) << 4;
    }

    /* A hypervisor may advertise PDCM yet fault on the MSR. */
    if ((ecx & CPU_CPUID1_ECX_PDCM)
        && cpu_get_msr_safe(PMU_INTEL_MSR_PERF_CAP, &perf_cap) == 0) {
        info->full_width_writes = (perf_cap
                                   & PMU_INTEL_PERF_CAP_FW_WRITE) != 0;
    }
}
