/*
 * Forced into each PMU driver source (the .c files of arch/x86/pmu/) and
 * each hardware suite (of tests/hw/) of the model kernel only (the
 * Makefile's -include):
 * their machine calls go to the register models (pmu_model_kern.h). The
 * machine headers come first, so that their own inline accessors stay
 * the machine's; the names below then stand for the model's in the
 * including file alone.
 */
#ifndef X86_PMU_MODEL_REDIRECT_H
#define X86_PMU_MODEL_REDIRECT_H

#include <machine/cpu.h>
#include <machine/lapic.h>
#include <pmu/model/pmu_model_kern.h>

#define cpu_cpuid               pmu_model_cpuid
#define cpu_get_msr             pmu_model_get_msr
#define cpu_set_msr             pmu_model_set_msr
#define cpu_get_msr_safe        pmu_model_get_msr_safe
#define cpu_set_msr_safe        pmu_model_set_msr_safe
#define lapic_pmc_setup         pmu_model_lapic_pmc_setup
#define lapic_pmc_setup_nmi     pmu_model_lapic_pmc_setup_nmi
#define lapic_pmc_unmask        pmu_model_lapic_pmc_unmask
#define lapic_pmc_masked        pmu_model_lapic_pmc_masked

#endif /* X86_PMU_MODEL_REDIRECT_H */
