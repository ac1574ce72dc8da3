/*
 * Register-level model of an Intel architectural PMU. See pmu_model.h for
 * the semantics and their SDM sections.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>

#include "pmu_model.h"
#include "pmu_model_env.h"
#include "pmu_model_i.h"

/* The fixed counters' architectural events (SDM vol. 3B, 21.2.2). */
const struct model_event model_fixed_events[MODEL_MAX_FIXED] = {
    { 0xc0, 0x00 },     /* instructions retired */
    { 0x3c, 0x00 },     /* unhalted core cycles */
    { 0x3c, 0x01 },     /* unhalted reference cycles */
    { 0xa4, 0x01 },     /* topdown slots */
};

struct model_state model_state MODEL_PERCPU;

void
model_reset(const struct model_config *config)
{
    uint32_t eax = config->a_eax, edx = config->a_edx;
    unsigned int nr_fixed;

    memset(&model, 0, sizeof(model));
    model.config = *config;

    if (config->max_leaf >= 0xa) {
        model.version = eax & 0xff;
    }

    if (model.version != 0) {
        model.nr_gp = (eax >> 8) & 0xff;
        model.gp_width = (eax >> 16) & 0xff;

        if (model.nr_gp > MODEL_MAX_GP) {
            model.nr_gp = MODEL_MAX_GP;
        }

        if (model.gp_width == 0 || model.gp_width > 64) {
            model.nr_gp = 0;
        }
    }

    if (model.version >= 2) {
        nr_fixed = edx & 0x1f;
        model.fixed_width = (edx >> 5) & 0xff;
        model.fixed_mask = (nr_fixed >= MODEL_MAX_FIXED)
                           ? (1U << MODEL_MAX_FIXED) - 1
                           : (1U << nr_fixed) - 1;

        if (model.version >= 5) {
            model.fixed_mask |= config->a_ecx;
        }

        model.fixed_mask &= (1U << MODEL_MAX_FIXED) - 1;

        if (model.fixed_width == 0 || model.fixed_width > 64) {
            model.fixed_mask = 0;
        }
    }

    model.has_perf_cap = (config->cpuid1_ecx & MODEL_CPUID1_ECX_PDCM) != 0;
    model.has_a_pmc = model.has_perf_cap
                      && (config->perf_capabilities
                          & MODEL_PERF_CAP_FW_WRITE);

    /* Reset: general counters enabled globally, LVT entry masked. */
    if (model.version >= 2) {
        model.regs.global_ctrl = model_mask(model.nr_gp);
    }

    model.regs.lvt_pmc = MODEL_LVT_MASKED;
}

bool
model_counter_exists(unsigned int id)
{
    if (id >= MODEL_FIXED_BASE) {
        id -= MODEL_FIXED_BASE;
        return id < MODEL_MAX_FIXED && (model.fixed_mask & (1U << id));
    }

    return id < model.nr_gp;
}

unsigned int
model_counter_width(unsigned int id)
{
    if (!model_counter_exists(id)) {
        return 0;
    }

    return (id >= MODEL_FIXED_BASE) ? model.fixed_width : model.gp_width;
}

uint64_t
model_nr_wraps(unsigned int id)
{
    return model_counter_exists(id) ? model.wraps[id] : 0;
}

uint64_t
model_nr_counted(unsigned int id)
{
    return model_counter_exists(id) ? model.counted[id] : 0;
}

uint64_t
model_counted_at_read(unsigned int id)
{
    return model_counter_exists(id) ? model.counted_at_read[id] : 0;
}

uint64_t
model_counted_at_write(unsigned int id)
{
    return model_counter_exists(id) ? model.counted_at_write[id] : 0;
}

void
model_set_drift(uint64_t events)
{
    model.drift = events;
}

void
model_set_stuck_status(uint64_t bits)
{
    model.stuck_status = bits;
}

void
model_set_debugctl_sticky(uint64_t bits)
{
    model.debugctl_sticky = bits;
}

static void __format_printf(1, 2)
model_fault(const char *fmt, ...)
{
    va_list ap;

    /* The kernel's fixup recovers a safe accessor's #GP. */
    if (model.safe_access) {
        model.safe_faulted = true;
        model.handled_faults++;
        return;
    }

    if (model.faults++ == 0) {
        va_start(ap, fmt);
        vsnprintf(model.first_fault, sizeof(model.first_fault), fmt, ap);
        va_end(ap);
    }
}

unsigned int
model_nr_faults(void)
{
    return model.faults;
}

const char *
model_first_fault(void)
{
    return (model.faults != 0) ? model.first_fault : "none";
}

void
model_clear_faults(void)
{
    model.faults = 0;
    model.first_fault[0] = '\0';
}

unsigned int
model_nr_handled_faults(void)
{
    return model.handled_faults;
}

/* ------------------------------------------------------------------ */
/* CPUID                                                               */
/* ------------------------------------------------------------------ */

void
model_cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax,
                uint32_t *ebx, uint32_t *ecx, uint32_t *edx)
{
    (void)subleaf;

    /* Beyond the highest basic leaf: that leaf's data (SDM vol. 2A). */
    if (leaf > model.config.max_leaf) {
        leaf = model.config.max_leaf;
    }

    *eax = *ebx = *ecx = *edx = 0;

    switch (leaf) {
    case 0:
        *eax = model.config.max_leaf;
        *ebx = 0x756e6547;  /* "GenuineIntel" */
        *edx = 0x49656e69;
        *ecx = 0x6c65746e;
        break;
    case 1:
        *eax = model.config.cpuid1_eax;
        *ecx = model.config.cpuid1_ecx;
        break;
    case 0xa:
        *eax = model.config.a_eax;
        *ebx = model.config.a_ebx;
        *ecx = model.config.a_ecx;
        *edx = model.config.a_edx;
        break;
    default:
        /* Not modelled: all ones, which no valid leaf 0AH reads as. */
        *eax = *ebx = *ecx = *edx = ~0U;
        break;
    }
}

/* ------------------------------------------------------------------ */
/* MSRs                                                                */
/* ------------------------------------------------------------------ */

/* Bits of GLOBAL_CTRL / GLOBAL_STATUS naming counters that exist. */
static uint64_t
model_counter_bits(void)
{
    return model_mask(model.nr_gp)
           | ((uint64_t)model.fixed_mask << MODEL_FIXED_BASE);
}

static uint64_t
model_fixed_ctrl_bits(void)
{
    uint64_t bits = 0;

    for (unsigned int j = 0; j < MODEL_MAX_FIXED; j++) {
        if (model.fixed_mask & (1U << j)) {
            bits |= MODEL_FIXED_FIELD(j, 0xf);
        }
    }

    return bits;
}

/*
 * Find the register behind msr: its storage (NULL for OVF_CTRL and
 * PERF_CAPABILITIES, which hold no state) and, for a counter, its id.
 * Return false when the configured PMU has no such register.
 */
static bool
model_lookup(uint32_t msr, uint64_t **regp, int *counterp)
{
    bool globals = model.version >= 2;
    uint32_t i;

    *regp = NULL;
    *counterp = -1;

    if (msr >= MODEL_MSR_PMC(0) && msr < MODEL_MSR_PMC(MODEL_MAX_GP)) {
        i = msr - MODEL_MSR_PMC(0);
        *regp = &model.regs.pmc[i];
        *counterp = (int)i;
        return i < model.nr_gp;
    }

    if (msr >= MODEL_MSR_A_PMC(0) && msr < MODEL_MSR_A_PMC(MODEL_MAX_GP)) {
        i = msr - MODEL_MSR_A_PMC(0);
        *regp = &model.regs.pmc[i];
        *counterp = (int)i;
        return model.has_a_pmc && i < model.nr_gp;
    }

    if (msr >= MODEL_MSR_EVTSEL(0) && msr < MODEL_MSR_EVTSEL(MODEL_MAX_GP)) {
        i = msr - MODEL_MSR_EVTSEL(0);
        *regp = &model.regs.evtsel[i];
        return i < model.nr_gp;
    }

    if (msr >= MODEL_MSR_FIXED_CTR(0)
        && msr < MODEL_MSR_FIXED_CTR(MODEL_MAX_FIXED)) {
        i = msr - MODEL_MSR_FIXED_CTR(0);
        *regp = &model.regs.fixed_ctr[i];
        *counterp = (int)(MODEL_FIXED_BASE + i);
        return (model.fixed_mask & (1U << i)) != 0;
    }

    switch (msr) {
    case MODEL_MSR_DEBUGCTL:
        *regp = &model.regs.debugctl;
        return true;
    case MODEL_MSR_FIXED_CTRL:
        *regp = &model.regs.fixed_ctrl;
        return globals;
    case MODEL_MSR_GLOBAL_CTRL:
        *regp = &model.regs.global_ctrl;
        return globals;
    case MODEL_MSR_GLOBAL_STATUS:
        *regp = &model.regs.global_status;
        return globals;
    case MODEL_MSR_GLOBAL_OVF:
        return globals;
    case MODEL_MSR_PERF_CAP:
        return model.has_perf_cap;
    default:
        return false;
    }
}

static void
model_count_access(uint32_t msr, unsigned long *counts)
{
    model.accesses++;

    if (msr < MODEL_MSR_SPACE) {
        counts[msr]++;
    }
}

/*
 * Whether a hypervisor emulates msr (model_config.nr_gp_emulated,
 * fixed_unemulated): the MSRs of the other counters #GP.
 */
static bool
model_emulated(uint32_t msr)
{
    unsigned int nr = model.config.nr_gp_emulated;

    if (nr != 0
        && ((msr >= MODEL_MSR_PMC(nr) && msr < MODEL_MSR_PMC(MODEL_MAX_GP))
            || (msr >= MODEL_MSR_A_PMC(nr)
                && msr < MODEL_MSR_A_PMC(MODEL_MAX_GP))
            || (msr >= MODEL_MSR_EVTSEL(nr)
                && msr < MODEL_MSR_EVTSEL(MODEL_MAX_GP)))) {
        return false;
    }

    if (msr >= MODEL_MSR_FIXED_CTR(0)
        && msr < MODEL_MSR_FIXED_CTR(MODEL_MAX_FIXED)
        && (model.config.fixed_unemulated
            & (1U << (msr - MODEL_MSR_FIXED_CTR(0))))) {
        return false;
    }

    return true;
}

/* Haswell or Broadwell (SDM vol. 4, table 2-1), by CPUID.1:EAX. */
bool
model_is_hsw_bdw(void)
{
    static const unsigned int models[] = {
        0x3c, 0x3f, 0x45, 0x46, 0x3d, 0x47, 0x4f, 0x56,
    };
    uint32_t eax = model.config.cpuid1_eax;
    unsigned int model_nr = ((eax >> 4) & 0xf) | (((eax >> 16) & 0xf) << 4);

    if (((eax >> 8) & 0xf) != 6) {
        return false;
    }

    for (unsigned int i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        if (model_nr == models[i]) {
            return true;
        }
    }

    return false;
}

/*
 * The register a driver access reaches, as model_lookup, but with the
 * configured misbehaviour of the PMU MSRs: with MODEL_PMU_MSRS_FAULT
 * none exists.
 */
static bool
model_lookup_access(uint32_t msr, uint64_t **regp, int *counterp)
{
    bool exists = model_lookup(msr, regp, counterp);

    if (msr != MODEL_MSR_DEBUGCTL
        && model.config.pmu_msrs == MODEL_PMU_MSRS_FAULT) {
        return false;
    }

    return exists && model_emulated(msr);
}

static bool
model_pmu_msrs_ignored(uint32_t msr)
{
    return msr != MODEL_MSR_DEBUGCTL
           && model.config.pmu_msrs == MODEL_PMU_MSRS_IGNORED;
}

static uint64_t
model_rdmsr(uint32_t msr)
{
    uint64_t *reg;
    int counter;

    model_count_access(msr, model.reads);

    if (!model_lookup_access(msr, &reg, &counter)) {
        model_fault("#GP: rdmsr 0x%x", msr);
        return 0;
    }

    if (model_pmu_msrs_ignored(msr)) {
        return 0;
    }

    if (counter >= 0) {
        model.counted_at_read[counter] = model.counted[counter];
    }

    if (msr == MODEL_MSR_PERF_CAP) {
        return model.config.perf_capabilities;
    }

    return (reg != NULL) ? *reg : 0;
}

uint64_t
model_cpu_get_msr(uint32_t msr)
{
    unsigned int faults = model.faults + model.handled_faults;
    uint64_t value;

    model_drift();
    value = model_rdmsr(msr);

    if (model.rdmsr_hook != NULL
        && model.faults + model.handled_faults == faults) {
        model.rdmsr_hook(msr);
    }

    return value;
}

/* Write a counter through its 32-bit or full-width address. */
static void
model_write_counter(uint32_t msr, uint64_t *reg, unsigned int id,
                    uint64_t value)
{
    uint64_t mask = model_mask(model_counter_width(id));

    if (msr >= MODEL_MSR_PMC(0) && msr < MODEL_MSR_PMC(MODEL_MAX_GP)) {
        /* Bits 31:0, bit 31 sign-extended (SDM vol. 3B, 21.2.6). */
        *reg = (uint64_t)(int64_t)(int32_t)(uint32_t)value & mask;
    } else if (value & ~mask) {
        model_fault("#GP: wrmsr 0x%x <- 0x%llx: wider than %u bits", msr,
                    (unsigned long long)value, model_counter_width(id));
        return;
    } else {
        *reg = value;
    }

    model.counted_at_write[id] = model.counted[id];

    /* Errata HSW11 and BDM11: INST_RETIRED.ALL preset below 100. */
    if (id < MODEL_FIXED_BASE && model_is_hsw_bdw()
        && (model.regs.evtsel[id] & 0xffff)
           == model_event_code(MODEL_EV_INST_RETIRED_ALL)
        && *reg != 0 && mask + 1 - *reg < 100) {
        model_fault("erratum HSW11: INST_RETIRED.ALL counter %u preset to "
                    "%llu events", id,
                    (unsigned long long)(mask + 1 - *reg));
    }
}

static bool
model_check_reserved(uint32_t msr, uint64_t value, uint64_t allowed)
{
    if (value & ~allowed) {
        model_fault("#GP: wrmsr 0x%x <- 0x%llx: reserved bits 0x%llx", msr,
                    (unsigned long long)value,
                    (unsigned long long)(value & ~allowed));
        return false;
    }

    return true;
}

/* Bits IA32_DEBUGCTL takes on this CPU. */
static uint64_t
model_debugctl_bits(void)
{
    uint64_t bits = MODEL_DEBUGCTL_BASE_BITS;

    if (model.has_perf_cap && model.version >= 2) {
        bits |= MODEL_DEBUGCTL_FREEZE_LBRS | MODEL_DEBUGCTL_FREEZE_PERFMON;
    }

    return bits;
}

/* Bits IA32_PERF_GLOBAL_OVF_CTRL (STATUS_RESET) clears on this CPU. */
static uint64_t
model_status_reset_bits(void)
{
    uint64_t bits = model_counter_bits() | MODEL_STATUS_OVF_BUF
                    | MODEL_STATUS_COND_CHGD;

    if (model.version >= 4) {
        bits |= MODEL_STATUS_LBR_FRZ | MODEL_STATUS_CTR_FRZ;
    }

    return bits;
}

static void
model_wrmsr(uint32_t msr, uint64_t value)
{
    uint64_t *reg;
    int counter;

    if (!model_lookup_access(msr, &reg, &counter)) {
        model_fault("#GP: wrmsr 0x%x <- 0x%llx: no such register", msr,
                    (unsigned long long)value);
        return;
    }

    if (model_pmu_msrs_ignored(msr)) {
        return;
    }

    if (counter >= 0) {
        model_write_counter(msr, reg, (unsigned int)counter, value);
        return;
    }

    switch (msr) {
    case MODEL_MSR_DEBUGCTL:
        if (model_check_reserved(msr, value, model_debugctl_bits())) {
            *reg = value | (*reg & model.debugctl_sticky);
        }

        break;
    case MODEL_MSR_FIXED_CTRL:
        if (model_check_reserved(msr, value, model_fixed_ctrl_bits())) {
            *reg = value;
        }

        break;
    case MODEL_MSR_GLOBAL_CTRL:
        if (model_check_reserved(msr, value, model_counter_bits())) {
            *reg = value;
        }

        break;
    case MODEL_MSR_GLOBAL_OVF:
        if (!model_check_reserved(msr, value, model_status_reset_bits())) {
            break;
        }

        for (unsigned int bit = 0; bit < 64; bit++) {
            if (value & (1ULL << bit)) {
                model.acks[bit]++;
            }
        }

        model.regs.global_status &= ~(value & ~model.stuck_status);
        break;
    case MODEL_MSR_GLOBAL_STATUS:
    case MODEL_MSR_PERF_CAP:
        model_fault("#GP: wrmsr 0x%x <- 0x%llx: read-only register", msr,
                    (unsigned long long)value);
        break;
    default:
        /* An event select: bits 63:32 are reserved. */
        if (model_check_reserved(msr, value, 0xffffffffULL)) {
            *reg = value;
        }

        break;
    }
}

void
model_cpu_set_msr(uint32_t msr, uint64_t value)
{
    unsigned int faults = model.faults + model.handled_faults;

    model_drift();
    model_count_access(msr, model.writes);
    model_wrmsr(msr, value);

    if (model.wrmsr_hook != NULL
        && model.faults + model.handled_faults == faults) {
        model.wrmsr_hook(msr, value);
    }
}

int
model_cpu_get_msr_safe(uint32_t msr, uint64_t *valuep)
{
    uint64_t value;

    model.safe_access = true;
    model.safe_faulted = false;
    value = model_cpu_get_msr(msr);
    model.safe_access = false;

    if (model.safe_faulted) {
        *valuep = 0;
        return EIO;
    }

    *valuep = value;
    return 0;
}

int
model_cpu_set_msr_safe(uint32_t msr, uint64_t value)
{
    model.safe_access = true;
    model.safe_faulted = false;
    model_cpu_set_msr(msr, value);
    model.safe_access = false;
    return model.safe_faulted ? EIO : 0;
}

void
model_firmware_counter(unsigned int id, struct model_event event)
{
    if (id >= MODEL_FIXED_BASE) {
        unsigned int j = id - MODEL_FIXED_BASE;

        model.regs.fixed_ctrl |= MODEL_FIXED_FIELD(j, MODEL_FIXED_OS
                                                      | MODEL_FIXED_USR);
    } else {
        model.regs.evtsel[id] = MODEL_EVTSEL_EN | MODEL_EVTSEL_OS
                                | MODEL_EVTSEL_USR | model_event_code(event);
    }

    if (model.version >= 2) {
        model.regs.global_ctrl |= 1ULL << id;
    }
}

uint64_t
model_msr(uint32_t msr)
{
    uint64_t *reg;
    int counter;

    model_lookup(msr, &reg, &counter);

    if (msr == MODEL_MSR_PERF_CAP) {
        return model.config.perf_capabilities;
    }

    return (reg != NULL) ? *reg : 0;
}

void
model_poke(uint32_t msr, uint64_t value)
{
    uint64_t *reg;
    int counter;

    model_lookup(msr, &reg, &counter);

    if (reg != NULL) {
        *reg = value;
    }
}

unsigned long
model_nr_reads(uint32_t msr)
{
    return (msr < MODEL_MSR_SPACE) ? model.reads[msr] : 0;
}

unsigned long
model_nr_writes(uint32_t msr)
{
    return (msr < MODEL_MSR_SPACE) ? model.writes[msr] : 0;
}

unsigned long
model_nr_accesses(void)
{
    return model.accesses;
}

unsigned long
model_nr_acks(unsigned int bit)
{
    return (bit < 64) ? model.acks[bit] : 0;
}

void
model_snapshot(struct model_regs *regs)
{
    *regs = model.regs;
}

static const char *
model_diff_u64(const char *name, int index, uint64_t a, uint64_t b)
{
    static char buf[128];

    if (index >= 0) {
        snprintf(buf, sizeof(buf), "%s[%d]: 0x%llx vs 0x%llx", name, index,
                 (unsigned long long)a, (unsigned long long)b);
    } else {
        snprintf(buf, sizeof(buf), "%s: 0x%llx vs 0x%llx", name,
                 (unsigned long long)a, (unsigned long long)b);
    }

    return buf;
}

const char *
model_regs_diff(const struct model_regs *a, const struct model_regs *b)
{
    for (int i = 0; i < MODEL_MAX_GP; i++) {
        if (a->pmc[i] != b->pmc[i]) {
            return model_diff_u64("pmc", i, a->pmc[i], b->pmc[i]);
        }

        if (a->evtsel[i] != b->evtsel[i]) {
            return model_diff_u64("evtsel", i, a->evtsel[i], b->evtsel[i]);
        }
    }

    for (int j = 0; j < MODEL_MAX_FIXED; j++) {
        if (a->fixed_ctr[j] != b->fixed_ctr[j]) {
            return model_diff_u64("fixed_ctr", j, a->fixed_ctr[j],
                                  b->fixed_ctr[j]);
        }
    }

    if (a->fixed_ctrl != b->fixed_ctrl) {
        return model_diff_u64("fixed_ctrl", -1, a->fixed_ctrl, b->fixed_ctrl);
    }

    if (a->global_ctrl != b->global_ctrl) {
        return model_diff_u64("global_ctrl", -1, a->global_ctrl,
                              b->global_ctrl);
    }

    if (a->global_status != b->global_status) {
        return model_diff_u64("global_status", -1, a->global_status,
                              b->global_status);
    }

    if (a->debugctl != b->debugctl) {
        return model_diff_u64("debugctl", -1, a->debugctl, b->debugctl);
    }

    if (a->lvt_pmc != b->lvt_pmc) {
        return model_diff_u64("lvt_pmc", -1, a->lvt_pmc, b->lvt_pmc);
    }

    return NULL;
}
