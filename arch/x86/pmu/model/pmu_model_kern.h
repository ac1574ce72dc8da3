/*
 * The model kernel's PMU: the register models of arch/x86/pmu/model/ (the
 * host tests' own, pmu_model.c and pmu_model_amd.c), one per CPU, behind
 * the machine calls of the PMU drivers and the hardware suites. Only the
 * model kernel (make: build/model/kernel.elf, build/perfmon-model.iso)
 * has it: there the drivers' sources are compiled with
 * pmu_model_redirect.h, which sends their cpu_cpuid, cpu_get_msr,
 * cpu_set_msr (and _safe) and lapic_pmc_* calls here; the production
 * kernel's drivers reach the hardware, with no model code and no branch.
 *
 * The command line picks the modelled PMU (docs/cmdline.md):
 *   pmu_model=intel        Intel architectural perfmon:
 *       pmu_model.version=1..5 (default 5), pmu_model.counters=1..16
 *       general counters (default 4), pmu_model.fixed=0..4 fixed counters
 *       (version 2 on; default 3), pmu_model.width=8..48 (default 48) of
 *       both kinds
 *   pmu_model=amd          AMD: pmu_model.amd=v2 (PerfMonV2, Zen 4, the
 *       default), extcore (PerfCtrExtCore, Zen 3) or legacy (family 10h,
 *       4 counters); pmu_model.counters=1..16 for PerfMonV2 (default 6)
 * Without pmu_model, every call reaches the machine, as in production.
 *
 * Events: every unit the software PMU's emit channel ch counts
 * (pmu_soft_emit_channel, kern/pmu_soft.h) also retires, at ring 0, the
 * model event pmu_model_emit_code(ch) on the emitting CPU: the link wraps
 * pmu_soft_count. An overflow that requests a PMI, with the modelled LVT
 * entry unmasked, masks the entry and sends the interrupt the driver
 * programmed there through the local APIC: a self-NMI, which the model
 * waits for (so that it lands at the emitting instruction, never inside
 * a later model access), or a self-IPI on the entry's vector, taken when
 * the emitting code enables interrupts. A #GP the model records (an
 * access to a missing register, a reserved bit) panics, as the machine's
 * would.
 */
#ifndef X86_PMU_MODEL_KERN_H
#define X86_PMU_MODEL_KERN_H

#include <stdbool.h>
#include <stdint.h>

/* The machine calls of the drivers, as machine/cpu.h's and lapic.h's. */
void pmu_model_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax,
                     uint32_t *ebx, uint32_t *ecx, uint32_t *edx);
uint64_t pmu_model_get_msr(uint32_t msr);
void pmu_model_set_msr(uint32_t msr, uint64_t value);
int pmu_model_get_msr_safe(uint32_t msr, uint64_t *valuep);
int pmu_model_set_msr_safe(uint32_t msr, uint64_t value);
void pmu_model_lapic_pmc_setup(unsigned int vector);
void pmu_model_lapic_pmc_setup_nmi(void);
void pmu_model_lapic_pmc_unmask(void);
bool pmu_model_lapic_pmc_masked(void);

/* The modelled vendor; PMU_MODEL_NONE without pmu_model. Any context. */
enum pmu_model_vendor {
    PMU_MODEL_NONE,
    PMU_MODEL_INTEL,
    PMU_MODEL_AMD,
};

enum pmu_model_vendor pmu_model_vendor(void);

/*
 * The raw code (perfmon_event_init with PERFMON_EF_RAW) of the model
 * event that counts emit channel ch's units. Return 0, or ENODEV without
 * a model, EINVAL for a channel past PMU_SOFT_NR_CHANNELS. Any context.
 */
int pmu_model_emit_code(unsigned int channel, uint64_t *codep);

#endif /* X86_PMU_MODEL_KERN_H */
