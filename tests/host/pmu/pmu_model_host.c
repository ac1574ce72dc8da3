/*
 * The host tests' machine: the shadow machine/cpu.h's CPUID and MSR
 * accessors and the local APIC calls of machine/lapic.h, answered by the
 * Intel register model (pmu_model.h), which names them apart so that
 * the model kernel can build the same model source.
 */
#include <stdbool.h>
#include <stdint.h>

#include <machine/cpu.h>
#include <machine/lapic.h>
#include <pmu/model/pmu_model.h>

#include "host_env.h"

void
cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax, uint32_t *ebx,
          uint32_t *ecx, uint32_t *edx)
{
    model_cpu_cpuid(leaf, subleaf, eax, ebx, ecx, edx);
}

uint64_t
cpu_get_msr(uint32_t msr)
{
    return model_cpu_get_msr(msr);
}

void
cpu_set_msr(uint32_t msr, uint64_t value)
{
    model_cpu_set_msr(msr, value);
}

int
cpu_get_msr_safe(uint32_t msr, uint64_t *valuep)
{
    return model_cpu_get_msr_safe(msr, valuep);
}

int
cpu_set_msr_safe(uint32_t msr, uint64_t value)
{
    return model_cpu_set_msr_safe(msr, value);
}

void
lapic_pmc_setup(unsigned int vector)
{
    model_lapic_pmc_setup(vector);
}

void
lapic_pmc_setup_nmi(void)
{
    model_lapic_pmc_setup_nmi();
}

void
lapic_pmc_unmask(void)
{
    model_lapic_pmc_unmask();
}

void
lapic_eoi(void)
{
    model_lapic_eoi();
}

bool
host_env_pmi_nmi(void)
{
    return model_lvt_nmi();
}
