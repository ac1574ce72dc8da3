/*
 * Register-level model of an Intel architectural PMU. See pmu_model.h for
 * the semantics and their SDM sections.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <machine/cpu.h>
#include <machine/lapic.h>

#include "pmu_model.h"

#define MODEL_MSR_SPACE     0x500   /* every modelled MSR is below */

/* The fixed counters' architectural events (SDM vol. 3B, 21.2.2). */
static const struct model_event model_fixed_events[MODEL_MAX_FIXED] = {
    { 0xc0, 0x00 },     /* instructions retired */
    { 0x3c, 0x00 },     /* unhalted core cycles */
    { 0x3c, 0x01 },     /* unhalted reference cycles */
    { 0xa4, 0x01 },     /* topdown slots */
};

struct model {
    struct model_config config;

    /* The PMU the configuration describes. */
    unsigned int version;
    unsigned int nr_gp;
    unsigned int gp_width;
    uint32_t fixed_mask;
    unsigned int fixed_width;
    bool has_perf_cap;
    bool has_a_pmc;

    struct model_regs regs;
    bool pmi_pending;

    uint64_t wraps[MODEL_FIXED_BASE + MODEL_MAX_FIXED];
    unsigned long reads[MODEL_MSR_SPACE];
    unsigned long writes[MODEL_MSR_SPACE];
    unsigned long accesses;
    unsigned long acks[64];
    unsigned long pmi_requests;
    unsigned long eois;
    unsigned int faults;
    char first_fault[128];
    void (*wrmsr_hook)(uint32_t msr, uint64_t value);
};

static struct model model;

static uint64_t
model_mask(unsigned int width)
{
    return (width >= 64) ? ~0ULL : (1ULL << width) - 1;
}

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

static void __format_printf(1, 2)
model_fault(const char *fmt, ...)
{
    va_list ap;

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

/* ------------------------------------------------------------------ */
/* CPUID                                                               */
/* ------------------------------------------------------------------ */

void
cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax, uint32_t *ebx,
          uint32_t *ecx, uint32_t *edx)
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

uint64_t
cpu_get_msr(uint32_t msr)
{
    uint64_t *reg;
    int counter;

    model_count_access(msr, model.reads);

    if (!model_lookup(msr, &reg, &counter)) {
        model_fault("#GP: rdmsr 0x%x", msr);
        return 0;
    }

    if (msr == MODEL_MSR_PERF_CAP) {
        return model.config.perf_capabilities;
    }

    return (reg != NULL) ? *reg : 0;
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
        return;
    }

    if (value & ~mask) {
        model_fault("#GP: wrmsr 0x%x <- 0x%llx: wider than %u bits", msr,
                    (unsigned long long)value, model_counter_width(id));
        return;
    }

    *reg = value;
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

static void
model_wrmsr(uint32_t msr, uint64_t value)
{
    uint64_t *reg;
    int counter;

    if (!model_lookup(msr, &reg, &counter)) {
        model_fault("#GP: wrmsr 0x%x <- 0x%llx: no such register", msr,
                    (unsigned long long)value);
        return;
    }

    if (counter >= 0) {
        model_write_counter(msr, reg, (unsigned int)counter, value);
        return;
    }

    switch (msr) {
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
        if (!model_check_reserved(msr, value, model_counter_bits()
                                  | MODEL_STATUS_OVF_BUF
                                  | MODEL_STATUS_COND_CHGD)) {
            break;
        }

        for (unsigned int bit = 0; bit < 64; bit++) {
            if (value & (1ULL << bit)) {
                model.acks[bit]++;
            }
        }

        model.regs.global_status &= ~value;
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
cpu_set_msr(uint32_t msr, uint64_t value)
{
    unsigned int faults = model.faults;

    model_count_access(msr, model.writes);
    model_wrmsr(msr, value);

    if (model.wrmsr_hook != NULL && model.faults == faults) {
        model.wrmsr_hook(msr, value);
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

    if (a->lvt_pmc != b->lvt_pmc) {
        return model_diff_u64("lvt_pmc", -1, a->lvt_pmc, b->lvt_pmc);
    }

    return NULL;
}

/* ------------------------------------------------------------------ */
/* Counting and overflow                                               */
/* ------------------------------------------------------------------ */

static void
model_request_pmi(void)
{
    model.pmi_requests++;

    /* A masked entry generates nothing; generating one masks it. */
    if (!(model.regs.lvt_pmc & MODEL_LVT_MASKED)) {
        model.regs.lvt_pmc |= MODEL_LVT_MASKED;
        model.pmi_pending = true;
    }
}

/* Add n to counter id; on a wrap set its status bit and maybe a PMI. */
static void
model_count(unsigned int id, uint64_t *reg, uint64_t n, bool intr)
{
    uint64_t mask = model_mask(model_counter_width(id));
    uint64_t room = mask - *reg;
    uint64_t wraps;

    if (n <= room) {
        *reg += n;
        return;
    }

    /* The first wrap takes room + 1 events, each later one 2^width. */
    wraps = 1;

    if (mask != ~0ULL) {
        wraps += (n - room - 1) / (mask + 1);
    }

    *reg = (*reg + n) & mask;
    model.wraps[id] += wraps;

    if (model.version >= 2) {
        model.regs.global_status |= 1ULL << id;
    }

    if (intr) {
        model_request_pmi();
    }
}

static bool
model_global_enabled(unsigned int id)
{
    return model.version < 2 || (model.regs.global_ctrl & (1ULL << id));
}

void
model_retire(struct model_event event, uint64_t n, enum model_ring ring)
{
    uint64_t code = model_event_code(event);

    for (unsigned int i = 0; i < model.nr_gp; i++) {
        uint64_t evtsel = model.regs.evtsel[i];
        uint64_t ring_bit = (ring == MODEL_RING_KERN) ? MODEL_EVTSEL_OS
                                                      : MODEL_EVTSEL_USR;

        if ((evtsel & MODEL_EVTSEL_EN) && (evtsel & 0xffff) == code
            && (evtsel & ring_bit) && model_global_enabled(i)) {
            model_count(i, &model.regs.pmc[i], n,
                        (evtsel & MODEL_EVTSEL_INT) != 0);
        }
    }

    for (unsigned int j = 0; j < MODEL_MAX_FIXED; j++) {
        unsigned int id = MODEL_FIXED_BASE + j;
        unsigned int field = (model.regs.fixed_ctrl >> (4 * j)) & 0xf;
        unsigned int ring_bit = (ring == MODEL_RING_KERN) ? MODEL_FIXED_OS
                                                          : MODEL_FIXED_USR;

        if (model_counter_exists(id)
            && code == model_event_code(model_fixed_events[j])
            && (field & ring_bit) && model_global_enabled(id)) {
            model_count(id, &model.regs.fixed_ctr[j], n,
                        (field & MODEL_FIXED_PMI) != 0);
        }
    }
}

unsigned long
model_nr_pmi_requests(void)
{
    return model.pmi_requests;
}

bool
model_pmi_pending(void)
{
    return model.pmi_pending;
}

bool
model_pmi_take(void)
{
    bool pending = model.pmi_pending;

    model.pmi_pending = false;
    return pending;
}

/* ------------------------------------------------------------------ */
/* Local APIC                                                          */
/* ------------------------------------------------------------------ */

void
lapic_pmc_setup(unsigned int vector)
{
    /* Fixed delivery mode (000), unmasked. */
    model.regs.lvt_pmc = vector & 0xff;
}

void
lapic_pmc_unmask(void)
{
    model.regs.lvt_pmc &= ~(uint64_t)MODEL_LVT_MASKED;
}

void
lapic_eoi(void)
{
    model.eois++;
}

unsigned long
model_nr_eois(void)
{
    return model.eois;
}

uint32_t
model_lvt_pmc(void)
{
    return (uint32_t)model.regs.lvt_pmc;
}

void
model_set_wrmsr_hook(void (*hook)(uint32_t msr, uint64_t value))
{
    model.wrmsr_hook = hook;
}
