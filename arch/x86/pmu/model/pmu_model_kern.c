/*
 * The model kernel's PMU (pmu_model_kern.h): the register models, one per
 * CPU, configured from the command line, behind the drivers' machine
 * calls, counting the software PMU's emitted units, raising their PMIs
 * through the local APIC.
 *
 * Every entry runs with interrupts disabled on the calling CPU, so that
 * an access is one step of that CPU's model, as an instruction is on the
 * machine; a PMI the access generates is sent when the outermost entry
 * ends. An NMI from elsewhere (another CPU's, a test's) landing inside an
 * access finds the model in the middle of it, which real hardware never
 * shows; the model's own PMIs never do.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <machine/cpu.h>
#include <machine/lapic.h>

#include "pmu_model.h"
#include "pmu_model_amd.h"
#include "pmu_model_kern.h"

/* The emit channels' model events (pmu_model_emit_code). */
#define PMU_MODEL_EMIT_SELECT       0xfe

/* How long a PMI's self-NMI may take to arrive, in pause loops. */
#define PMU_MODEL_NMI_WAIT          10000000UL

ARG_DEFINE_STRING("pmu_model");
ARG_DEFINE_U64("pmu_model.version", 1, 5);
ARG_DEFINE_U64("pmu_model.counters", 1, 16);
ARG_DEFINE_U64("pmu_model.fixed", 0, 4);
ARG_DEFINE_U64("pmu_model.width", 8, 48);
ARG_DEFINE_STRING("pmu_model.amd");

/* The calling CPU's model and what its entries keep. */
struct pmu_model_cpu {
    bool ready;                 /* reset from the command line */
    enum pmu_model_vendor vendor;
    unsigned int depth;         /* entries in progress on this CPU */
    volatile unsigned long nmi_entries;    /* entries from an NMI */
};

static struct pmu_model_cpu pmu_model_cpu __percpu;

static uint64_t
pmu_model_arg(const char *key, uint64_t dflt)
{
    uint64_t value;

    return (arg_get_u64(key, &value) == 0) ? value : dflt;
}

/* An Intel PMU of the command line's version, counters and width. */
static void
pmu_model_intel_config(struct model_config *config)
{
    unsigned int version = pmu_model_arg("pmu_model.version", 5);
    unsigned int nr_gp = pmu_model_arg("pmu_model.counters", 4);
    unsigned int nr_fixed = pmu_model_arg("pmu_model.fixed", 3);
    unsigned int width = pmu_model_arg("pmu_model.width", 48);

    memset(config, 0, sizeof(*config));
    config->max_leaf = 0xa;
    config->a_eax = MODEL_CPUID_A_EAX(version, nr_gp, width, 7);

    /* A family 6 model with no quirk of the model's (not Haswell). */
    config->cpuid1_eax = MODEL_CPUID1_EAX_FAM6(0x8f);

    if (version >= 2) {
        config->a_edx = MODEL_CPUID_A_EDX(nr_fixed, width);
        config->cpuid1_ecx = MODEL_CPUID1_ECX_PDCM;
        config->perf_capabilities = MODEL_PERF_CAP_FW_WRITE;
    }

    if (version >= 5) {
        config->a_ecx = (1U << nr_fixed) - 1;
    }
}

/* An AMD PMU: PerfMonV2 (Zen 4), PerfCtrExtCore (Zen 3) or legacy. */
static void
pmu_model_amd_config(struct model_amd_config *config)
{
    const char *kind = arg_get("pmu_model.amd");

    memset(config, 0, sizeof(*config));
    config->vendor = MODEL_AMD_VENDOR_AMD;

    if (kind != NULL && strcmp(kind, "legacy") != 0
        && strcmp(kind, "extcore") != 0 && strcmp(kind, "v2") != 0) {
        panic("pmu_model: pmu_model.amd=%s: not v2, extcore or legacy",
              kind);
    }

    if (kind != NULL && strcmp(kind, "legacy") == 0) {
        config->family = 0x10;
        config->ext_max = 0x80000001;
    } else if (kind != NULL && strcmp(kind, "extcore") == 0) {
        config->family = 0x19;
        config->model = 0x01;
        config->ext_max = 0x80000008;
        config->ext_core = true;
    } else {
        config->family = 0x19;
        config->model = 0x61;
        config->ext_max = 0x80000022;
        config->ext_core = true;
        config->perfmon_v2 = true;
        config->v2_nr = pmu_model_arg("pmu_model.counters", 6);
    }
}

enum pmu_model_vendor
pmu_model_vendor(void)
{
    const char *vendor = arg_get("pmu_model");

    if (vendor == NULL) {
        return PMU_MODEL_NONE;
    }

    if (strcmp(vendor, "intel") == 0) {
        return PMU_MODEL_INTEL;
    }

    if (strcmp(vendor, "amd") == 0) {
        return PMU_MODEL_AMD;
    }

    panic("pmu_model: pmu_model=%s: not intel or amd", vendor);
}

/*
 * Power the calling CPU's model up, on its first entry: each CPU reads the
 * command line itself, so no CPU waits for another's reset.
 */
static void
pmu_model_cpu_reset(struct pmu_model_cpu *pc)
{
    struct model_amd_config amd;
    struct model_config intel;

    pc->vendor = pmu_model_vendor();

    if (pc->vendor == PMU_MODEL_INTEL) {
        pmu_model_intel_config(&intel);
        model_reset(&intel);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        pmu_model_amd_config(&amd);
        model_amd_reset(&amd);
    }

    pc->ready = true;
}

/*
 * Enter the calling CPU's model: interrupts disabled (the previous flags
 * in *flagsp), the model reset on first use. Any context.
 */
static struct pmu_model_cpu *
pmu_model_enter(unsigned long *flagsp)
{
    struct pmu_model_cpu *pc;

    *flagsp = cpu_intr_save();
    pc = cpu_local_ptr(pmu_model_cpu);

    if (!pc->ready) {
        pmu_model_cpu_reset(pc);
    }

    if (cpu_in_nmi()) {
        pc->nmi_entries++;
    }

    pc->depth++;
    return pc;
}

/* A fault the model recorded: the machine's #GP, which panics. */
static void
pmu_model_check_faults(const struct pmu_model_cpu *pc)
{
    if (pc->vendor == PMU_MODEL_INTEL && model_nr_faults() != 0) {
        panic("pmu_model: cpu%u: %s", cpu_id(), model_first_fault());
    }

    if (pc->vendor == PMU_MODEL_AMD && model_amd_nr_faults() != 0) {
        panic("pmu_model: cpu%u: %s", cpu_id(), model_amd_first_fault());
    }
}

/*
 * Send the PMI the model generated (its LVT entry now masked), as that
 * entry says: an NMI, which outside an NMI is waited for, or a fixed
 * interrupt on its vector.
 */
static void
pmu_model_deliver(struct pmu_model_cpu *pc)
{
    unsigned long seen;
    uint32_t lvt;
    bool nmi;

    if (pc->vendor == PMU_MODEL_INTEL) {
        if (!model_pmi_take()) {
            return;
        }

        nmi = model_lvt_nmi();
        lvt = model_lvt_pmc();
    } else {
        if (!model_amd_pmi_take()) {
            return;
        }

        nmi = model_amd_lvt_nmi();
        lvt = model_amd_lvt_pmc();
    }

    if (!nmi) {
        if (cpu_in_nmi()) {
            lapic_send_self_ipi_from_nmi(lvt & 0xff);
        } else {
            lapic_send_self_ipi(lvt & 0xff);
        }

        return;
    }

    seen = pc->nmi_entries;
    lapic_send_nmi(lapic_get_id());

    /* Within an NMI the next one waits for its end. */
    if (cpu_in_nmi()) {
        return;
    }

    /* The driver's NMI handler reads the model's status: it came. */
    for (unsigned long i = 0; pc->nmi_entries == seen; i++) {
        if (i == PMU_MODEL_NMI_WAIT) {
            panic("pmu_model: cpu%u: the PMI's NMI did not arrive",
                  cpu_id());
        }

        cpu_pause();
    }
}

static void
pmu_model_exit(struct pmu_model_cpu *pc, unsigned long flags)
{
    pmu_model_check_faults(pc);
    pc->depth--;

    if (pc->depth == 0 && pc->vendor != PMU_MODEL_NONE) {
        pmu_model_deliver(pc);
    }

    cpu_intr_restore(flags);
}

void
pmu_model_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax,
                uint32_t *ebx, uint32_t *ecx, uint32_t *edx)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        model_cpu_cpuid(leaf, subleaf, eax, ebx, ecx, edx);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        model_amd_cpu_cpuid(leaf, subleaf, eax, ebx, ecx, edx);
    } else {
        cpu_cpuid(leaf, subleaf, eax, ebx, ecx, edx);
    }

    pmu_model_exit(pc, flags);
}

uint64_t
pmu_model_get_msr(uint32_t msr)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;
    uint64_t value;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        value = model_cpu_get_msr(msr);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        value = model_amd_cpu_get_msr(msr);
    } else {
        value = cpu_get_msr(msr);
    }

    pmu_model_exit(pc, flags);
    return value;
}

void
pmu_model_set_msr(uint32_t msr, uint64_t value)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        model_cpu_set_msr(msr, value);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        model_amd_cpu_set_msr(msr, value);
    } else {
        cpu_set_msr(msr, value);
    }

    pmu_model_exit(pc, flags);
}

int
pmu_model_get_msr_safe(uint32_t msr, uint64_t *valuep)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;
    int error;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        error = model_cpu_get_msr_safe(msr, valuep);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        error = model_amd_cpu_get_msr_safe(msr, valuep);
    } else {
        error = cpu_get_msr_safe(msr, valuep);
    }

    pmu_model_exit(pc, flags);
    return error;
}

int
pmu_model_set_msr_safe(uint32_t msr, uint64_t value)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;
    int error;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        error = model_cpu_set_msr_safe(msr, value);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        error = model_amd_cpu_set_msr_safe(msr, value);
    } else {
        error = cpu_set_msr_safe(msr, value);
    }

    pmu_model_exit(pc, flags);
    return error;
}

void
pmu_model_lapic_pmc_setup(unsigned int vector)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        model_lapic_pmc_setup(vector);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        model_amd_lapic_pmc_setup(vector);
    } else {
        lapic_pmc_setup(vector);
    }

    pmu_model_exit(pc, flags);
}

void
pmu_model_lapic_pmc_setup_nmi(void)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        model_lapic_pmc_setup_nmi();
    } else if (pc->vendor == PMU_MODEL_AMD) {
        model_amd_lapic_pmc_setup_nmi();
    } else {
        lapic_pmc_setup_nmi();
    }

    pmu_model_exit(pc, flags);
}

void
pmu_model_lapic_pmc_unmask(void)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        model_lapic_pmc_unmask();
    } else if (pc->vendor == PMU_MODEL_AMD) {
        model_amd_lapic_pmc_unmask();
    } else {
        lapic_pmc_unmask();
    }

    pmu_model_exit(pc, flags);
}

bool
pmu_model_lapic_pmc_masked(void)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;
    bool masked;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        masked = (model_lvt_pmc() & MODEL_LVT_MASKED) != 0;
    } else if (pc->vendor == PMU_MODEL_AMD) {
        masked = (model_amd_lvt_pmc() & MODEL_AMD_LVT_MASKED) != 0;
    } else {
        masked = lapic_pmc_masked();
    }

    pmu_model_exit(pc, flags);
    return masked;
}

/* The raw code of emit channel ch's event on vendor's model. */
static uint64_t
pmu_model_code(enum pmu_model_vendor vendor, unsigned int channel)
{
    if (vendor == PMU_MODEL_INTEL) {
        return model_event_code((struct model_event){
            PMU_MODEL_EMIT_SELECT, (uint8_t)channel });
    }

    return MODEL_AMD_CODE(PMU_MODEL_EMIT_SELECT, channel);
}

int
pmu_model_emit_code(unsigned int channel, uint64_t *codep)
{
    enum pmu_model_vendor vendor = pmu_model_vendor();

    if (vendor == PMU_MODEL_NONE) {
        return ENODEV;
    }

    if (channel >= PMU_SOFT_NR_CHANNELS) {
        return EINVAL;
    }

    *codep = pmu_model_code(vendor, channel);
    return 0;
}

/* Retire n units of emit channel ch on the calling CPU's model. */
static void
pmu_model_emit(unsigned int channel, uint64_t n)
{
    struct pmu_model_cpu *pc;
    unsigned long flags;

    pc = pmu_model_enter(&flags);

    if (pc->vendor == PMU_MODEL_INTEL) {
        model_retire((struct model_event){ PMU_MODEL_EMIT_SELECT,
                                           (uint8_t)channel },
                     n, MODEL_RING_KERN);
    } else if (pc->vendor == PMU_MODEL_AMD) {
        model_amd_retire(pmu_model_code(PMU_MODEL_AMD, channel), n,
                         MODEL_AMD_RING_KERN);
    }

    pmu_model_exit(pc, flags);
}

/*
 * The link's --wrap=pmu_soft_count: every count of the software PMU's,
 * then the model's retirement of an emit channel's units.
 */
void __real_pmu_soft_count(unsigned int event, uint64_t n);
void __wrap_pmu_soft_count(unsigned int event, uint64_t n);

void
__wrap_pmu_soft_count(unsigned int event, uint64_t n)
{
    if (event >= PMU_SOFT_EV_EMIT && event < PMU_SOFT_NR_EVENTS) {
        pmu_model_emit(event - PMU_SOFT_EV_EMIT, n);
    }

    __real_pmu_soft_count(event, n);
}
