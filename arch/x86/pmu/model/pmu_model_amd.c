/*
 * Register-level model of AMD core performance counters. See
 * pmu_model_amd.h for the semantics and their sources.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>

#include "pmu_model_amd.h"
#include "pmu_model_env.h"

#define MODEL_AMD_MASK48        ((1ULL << 48) - 1)

/* PerfEvtSel bits that exist, and the reserved ones that stick. */
#define MODEL_AMD_EVTSEL_VALID  (0xffffULL | (0x3ULL << 16) | (1ULL << 18) \
                                 | (1ULL << 20) | (0x3ULL << 22)        \
                                 | (0xffULL << 24) | (0xfULL << 32)     \
                                 | (0x3ULL << 40))
#define MODEL_AMD_EVTSEL_STICKY ((1ULL << 19) | (1ULL << 42))

/* Register slots for access statistics. */
enum {
    MODEL_AMD_SLOT_LEGACY_CTL = 0,
    MODEL_AMD_SLOT_LEGACY_CTR = 4,
    MODEL_AMD_SLOT_EXT = 8,             /* 2 per counter */
    MODEL_AMD_SLOT_GLOBAL = MODEL_AMD_SLOT_EXT + 2 * MODEL_AMD_MAX_COUNTERS,
    MODEL_AMD_NR_SLOTS = MODEL_AMD_SLOT_GLOBAL + 4,
};

struct model_amd {
    struct model_amd_config config;
    unsigned int nr;
    struct model_amd_regs regs;
    bool pmi_pending;
    uint64_t drift;
    uint64_t stuck_status;

    uint64_t counted[MODEL_AMD_MAX_COUNTERS];
    uint64_t counted_at_read[MODEL_AMD_MAX_COUNTERS];
    uint64_t wraps[MODEL_AMD_MAX_COUNTERS];
    unsigned long reads[MODEL_AMD_NR_SLOTS];
    unsigned long writes[MODEL_AMD_NR_SLOTS];
    unsigned long all_reads;
    unsigned long all_writes;
    unsigned long counter_reads;
    unsigned long clears[64];
    unsigned long pmi_requests;
    unsigned long eois;
    unsigned int reserved_writes;
    unsigned int faults;
    char first_fault[128];
    bool safe_access;
    bool safe_faulted;
    unsigned int handled_faults;
    void (*rdmsr_hook)(uint32_t msr);
};

/*
 * The model's state: the host's one CPU's, or in the kernel each CPU's
 * own (pmu_model_env.h). The code below names it m, as one variable,
 * whichever copy the calling CPU reaches.
 */
static struct model_amd model_amd_state MODEL_PERCPU;

static inline struct model_amd *
model_amd_self(void)
{
    return MODEL_LOCAL(model_amd_state);
}

#define m (*model_amd_self())

void
model_amd_reset(const struct model_amd_config *config)
{
    memset(&m, 0, sizeof(m));
    m.config = *config;

    if (config->vendor != MODEL_AMD_VENDOR_INTEL) {
        if (config->perfmon_v2 && config->ext_core) {
            m.nr = config->v2_nr;
        } else {
            m.nr = config->ext_core ? 6 : 4;
        }
    }

    if (m.nr > MODEL_AMD_MAX_COUNTERS) {
        m.nr = MODEL_AMD_MAX_COUNTERS;
    }

    /* Reset: every counter globally enabled (APM), LVT entry masked. */
    if (config->perfmon_v2) {
        m.regs.global_ctl = (1ULL << m.nr) - 1;
    }

    m.regs.lvt_pmc = MODEL_AMD_LVT_MASKED;
}

unsigned int
model_amd_nr_counters(void)
{
    return m.nr;
}

static void __format_printf(1, 2)
model_amd_fault(const char *fmt, ...)
{
    va_list ap;

    if (m.safe_access) {
        m.safe_faulted = true;
        m.handled_faults++;
        return;
    }

    if (m.faults++ == 0) {
        va_start(ap, fmt);
        vsnprintf(m.first_fault, sizeof(m.first_fault), fmt, ap);
        va_end(ap);
    }
}

unsigned int
model_amd_nr_faults(void)
{
    return m.faults;
}

const char *
model_amd_first_fault(void)
{
    return (m.faults != 0) ? m.first_fault : "none";
}

void
model_amd_clear_faults(void)
{
    m.faults = 0;
    m.first_fault[0] = '\0';
}

unsigned int
model_amd_nr_handled_faults(void)
{
    return m.handled_faults;
}

unsigned int
model_amd_nr_reserved_writes(void)
{
    return m.reserved_writes;
}

void
model_amd_set_drift(uint64_t events)
{
    m.drift = events;
}

void
model_amd_set_stuck_status(uint64_t bits)
{
    m.stuck_status = bits;
}

uint64_t
model_amd_nr_counted(unsigned int n)
{
    return (n < m.nr) ? m.counted[n] : 0;
}

uint64_t
model_amd_counted_at_read(unsigned int n)
{
    return (n < m.nr) ? m.counted_at_read[n] : 0;
}

uint64_t
model_amd_nr_wraps(unsigned int n)
{
    return (n < m.nr) ? m.wraps[n] : 0;
}

/* ------------------------------------------------------------------ */
/* CPUID                                                               */
/* ------------------------------------------------------------------ */

static const uint32_t model_amd_vendors[][3] = {
    [MODEL_AMD_VENDOR_AMD] = { 0x68747541, 0x69746e65, 0x444d4163 },
    [MODEL_AMD_VENDOR_HYGON] = { 0x6f677948, 0x6e65476e, 0x656e6975 },
    [MODEL_AMD_VENDOR_INTEL] = { 0x756e6547, 0x49656e69, 0x6c65746e },
};

/* CPUID 1 EAX of the displayed family and model (APM vol. 3, E.3.2). */
static uint32_t
model_amd_signature(void)
{
    unsigned int family = m.config.family, model = m.config.model;
    uint32_t eax = (model & 0xf) << 4;

    if (family >= 0xf) {
        eax |= 0xfU << 8 | (uint32_t)(family - 0xf) << 20
               | (uint32_t)(model >> 4) << 16;
    } else {
        eax |= (uint32_t)family << 8;
    }

    return eax;
}

void
model_amd_cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax,
                    uint32_t *ebx, uint32_t *ecx, uint32_t *edx)
{
    const uint32_t *vendor = model_amd_vendors[m.config.vendor];

    (void)subleaf;
    *eax = *ebx = *ecx = *edx = 0;

    if (leaf >= 0x80000000U && leaf > m.config.ext_max) {
        return;
    }

    switch (leaf) {
    case 0:
        *eax = 0x10;
        *ebx = vendor[0];
        *edx = vendor[1];
        *ecx = vendor[2];
        break;
    case 1:
        *eax = model_amd_signature();
        break;
    case 0x80000000U:
        *eax = m.config.ext_max;
        break;
    case 0x80000001U:
        *ecx = m.config.ext_core ? (1U << 23) : 0;
        break;
    case 0x80000022U:
        *eax = m.config.perfmon_v2 ? 1 : 0;
        *ebx = m.config.perfmon_v2 ? (m.config.v2_nr & 0xf) : 0;
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------ */
/* MSRs                                                                */
/* ------------------------------------------------------------------ */

enum model_amd_kind {
    MODEL_AMD_NONE,
    MODEL_AMD_CTL,
    MODEL_AMD_CTR,
    MODEL_AMD_GSTATUS,
    MODEL_AMD_GCTL,
    MODEL_AMD_GCLR,
    MODEL_AMD_GSET,
};

struct model_amd_reg {
    enum model_amd_kind kind;
    unsigned int n;             /* counter of CTL/CTR */
    int slot;                   /* statistics slot, -1: none */
    bool legacy;
};

/* What msr is on the configured CPU, ignoring misbehaviour. */
static struct model_amd_reg
model_amd_lookup(uint32_t msr)
{
    struct model_amd_reg reg = { MODEL_AMD_NONE, 0, -1, false };
    bool v2 = m.config.perfmon_v2 && m.config.ext_core;

    if (m.nr == 0) {
        return reg;
    }

    if (msr >= MODEL_AMD_MSR_LEGACY_CTL(0)
        && msr < MODEL_AMD_MSR_LEGACY_CTR(4)) {
        reg.n = (msr - MODEL_AMD_MSR_LEGACY_CTL(0)) & 3;
        reg.kind = (msr < MODEL_AMD_MSR_LEGACY_CTR(0)) ? MODEL_AMD_CTL
                                                        : MODEL_AMD_CTR;
        reg.slot = (int)(msr - MODEL_AMD_MSR_LEGACY_CTL(0));
        reg.legacy = true;
        return reg;
    }

    if (m.config.ext_core && msr >= MODEL_AMD_MSR_CTL(0)
        && msr < MODEL_AMD_MSR_CTL(m.nr)) {
        reg.n = (msr - MODEL_AMD_MSR_CTL(0)) / 2;
        reg.kind = ((msr - MODEL_AMD_MSR_CTL(0)) & 1) ? MODEL_AMD_CTR
                                                       : MODEL_AMD_CTL;
        reg.slot = MODEL_AMD_SLOT_EXT + (int)(msr - MODEL_AMD_MSR_CTL(0));
        return reg;
    }

    if (v2 && msr >= MODEL_AMD_MSR_GLOBAL_STATUS
        && msr <= MODEL_AMD_MSR_GLOBAL_SET) {
        static const enum model_amd_kind kinds[] = {
            MODEL_AMD_GSTATUS, MODEL_AMD_GCTL, MODEL_AMD_GCLR, MODEL_AMD_GSET,
        };

        reg.kind = kinds[msr - MODEL_AMD_MSR_GLOBAL_STATUS];
        reg.slot = MODEL_AMD_SLOT_GLOBAL
                   + (int)(msr - MODEL_AMD_MSR_GLOBAL_STATUS);
    }

    return reg;
}

static void model_amd_drift(void);

/* With MODEL_AMD_MSRS_FAULT or _IGNORED, the registers that fault. */
static bool
model_amd_faults_on(const struct model_amd_reg *reg)
{
    if (reg->kind == MODEL_AMD_NONE) {
        return true;
    }

    switch (m.config.msrs) {
    case MODEL_AMD_MSRS_FAULT:
        return true;
    case MODEL_AMD_MSRS_IGNORED:
        return !reg->legacy;
    default:
        return false;
    }
}

static uint64_t
model_amd_rdmsr(uint32_t msr)
{
    struct model_amd_reg reg;

    reg = model_amd_lookup(msr);
    m.all_reads++;

    if (reg.slot >= 0) {
        m.reads[reg.slot]++;
    }

    if (model_amd_faults_on(&reg)) {
        model_amd_fault("#GP: rdmsr 0x%x", msr);
        return 0;
    }

    if (m.config.msrs == MODEL_AMD_MSRS_IGNORED) {
        return 0;
    }

    switch (reg.kind) {
    case MODEL_AMD_CTL:
        return m.regs.ctl[reg.n];
    case MODEL_AMD_CTR:
        m.counter_reads++;
        m.counted_at_read[reg.n] = m.counted[reg.n];
        return m.regs.ctr[reg.n];
    case MODEL_AMD_GSTATUS:
        return m.regs.global_status;
    case MODEL_AMD_GCTL:
        return m.regs.global_ctl;
    default:
        return 0;
    }
}

uint64_t
model_amd_cpu_get_msr(uint32_t msr)
{
    unsigned int faults = m.faults + m.handled_faults;
    uint64_t value;

    model_amd_drift();
    value = model_amd_rdmsr(msr);

    if (m.rdmsr_hook != NULL && m.faults + m.handled_faults == faults) {
        m.rdmsr_hook(msr);
    }

    return value;
}

/* Keep the valid bits of value; record (and return) the others. */
static uint64_t
model_amd_valid(uint64_t value, uint64_t valid)
{
    if (value & ~valid) {
        m.reserved_writes++;
    }

    return value & valid;
}

static void
model_amd_wrmsr(uint32_t msr, uint64_t value)
{
    struct model_amd_reg reg = model_amd_lookup(msr);
    uint64_t counters = (1ULL << m.nr) - 1;

    if (model_amd_faults_on(&reg)) {
        model_amd_fault("#GP: wrmsr 0x%x <- 0x%llx", msr,
                        (unsigned long long)value);
        return;
    }

    if (m.config.msrs == MODEL_AMD_MSRS_IGNORED) {
        return;
    }

    switch (reg.kind) {
    case MODEL_AMD_CTL:
        m.regs.ctl[reg.n] = model_amd_valid(value, MODEL_AMD_EVTSEL_VALID)
                            | (value & MODEL_AMD_EVTSEL_STICKY);
        break;
    case MODEL_AMD_CTR:
        m.regs.ctr[reg.n] = value & MODEL_AMD_MASK48;
        break;
    case MODEL_AMD_GCTL:
        m.regs.global_ctl = model_amd_valid(value, counters);
        break;
    case MODEL_AMD_GSTATUS:
        m.reserved_writes++;
        break;
    case MODEL_AMD_GCLR:
        value = model_amd_valid(value, counters);

        for (unsigned int bit = 0; bit < 64; bit++) {
            if (value & (1ULL << bit)) {
                m.clears[bit]++;
            }
        }

        m.regs.global_status &= ~(value & ~m.stuck_status);
        break;
    case MODEL_AMD_GSET:
        m.regs.global_status |= model_amd_valid(value, counters);
        break;
    default:
        break;
    }
}

void
model_amd_cpu_set_msr(uint32_t msr, uint64_t value)
{
    struct model_amd_reg reg;

    model_amd_drift();
    reg = model_amd_lookup(msr);
    m.all_writes++;

    if (reg.slot >= 0) {
        m.writes[reg.slot]++;
    }

    model_amd_wrmsr(msr, value);
}

int
model_amd_cpu_get_msr_safe(uint32_t msr, uint64_t *valuep)
{
    uint64_t value;

    m.safe_access = true;
    m.safe_faulted = false;
    value = model_amd_cpu_get_msr(msr);
    m.safe_access = false;
    *valuep = m.safe_faulted ? 0 : value;
    return m.safe_faulted ? EIO : 0;
}

int
model_amd_cpu_set_msr_safe(uint32_t msr, uint64_t value)
{
    m.safe_access = true;
    m.safe_faulted = false;
    model_amd_cpu_set_msr(msr, value);
    m.safe_access = false;
    return m.safe_faulted ? EIO : 0;
}

uint64_t
model_amd_msr(uint32_t msr)
{
    struct model_amd_reg reg = model_amd_lookup(msr);

    switch (reg.kind) {
    case MODEL_AMD_CTL:
        return m.regs.ctl[reg.n];
    case MODEL_AMD_CTR:
        return m.regs.ctr[reg.n];
    case MODEL_AMD_GSTATUS:
        return m.regs.global_status;
    case MODEL_AMD_GCTL:
        return m.regs.global_ctl;
    default:
        return 0;
    }
}

void
model_amd_poke(uint32_t msr, uint64_t value)
{
    struct model_amd_reg reg = model_amd_lookup(msr);

    switch (reg.kind) {
    case MODEL_AMD_CTL:
        m.regs.ctl[reg.n] = value;
        break;
    case MODEL_AMD_CTR:
        m.regs.ctr[reg.n] = value & MODEL_AMD_MASK48;
        break;
    case MODEL_AMD_GSTATUS:
        m.regs.global_status = value;
        break;
    case MODEL_AMD_GCTL:
        m.regs.global_ctl = value;
        break;
    default:
        break;
    }
}

static int
model_amd_slot(uint32_t msr)
{
    return model_amd_lookup(msr).slot;
}

unsigned long
model_amd_nr_reads(uint32_t msr)
{
    int slot = model_amd_slot(msr);

    return (slot >= 0) ? m.reads[slot] : 0;
}

unsigned long
model_amd_nr_writes(uint32_t msr)
{
    int slot = model_amd_slot(msr);

    return (slot >= 0) ? m.writes[slot] : 0;
}

unsigned long
model_amd_nr_all_reads(void)
{
    return m.all_reads;
}

unsigned long
model_amd_nr_all_writes(void)
{
    return m.all_writes;
}

unsigned long
model_amd_nr_counter_reads(void)
{
    return m.counter_reads;
}

unsigned long
model_amd_nr_clears(unsigned int n)
{
    return (n < 64) ? m.clears[n] : 0;
}

void
model_amd_snapshot(struct model_amd_regs *regs)
{
    *regs = m.regs;
}

const char *
model_amd_regs_diff(const struct model_amd_regs *a,
                    const struct model_amd_regs *b)
{
    static char buf[128];

    for (unsigned int n = 0; n < MODEL_AMD_MAX_COUNTERS; n++) {
        if (a->ctl[n] != b->ctl[n] || a->ctr[n] != b->ctr[n]) {
            snprintf(buf, sizeof(buf),
                     "counter %u: ctl 0x%llx ctr 0x%llx vs 0x%llx 0x%llx", n,
                     (unsigned long long)a->ctl[n],
                     (unsigned long long)a->ctr[n],
                     (unsigned long long)b->ctl[n],
                     (unsigned long long)b->ctr[n]);
            return buf;
        }
    }

    if (a->global_ctl != b->global_ctl
        || a->global_status != b->global_status
        || a->lvt_pmc != b->lvt_pmc) {
        snprintf(buf, sizeof(buf), "global ctl/status/lvt 0x%llx 0x%llx "
                 "0x%llx vs 0x%llx 0x%llx 0x%llx",
                 (unsigned long long)a->global_ctl,
                 (unsigned long long)a->global_status,
                 (unsigned long long)a->lvt_pmc,
                 (unsigned long long)b->global_ctl,
                 (unsigned long long)b->global_status,
                 (unsigned long long)b->lvt_pmc);
        return buf;
    }

    return NULL;
}

/* ------------------------------------------------------------------ */
/* Counting and overflow                                               */
/* ------------------------------------------------------------------ */

static void
model_amd_request_pmi(void)
{
    m.pmi_requests++;

    if (m.regs.lvt_pmc & MODEL_AMD_LVT_MASKED) {
        return;
    }

    if (m.config.lvt_masks) {
        m.regs.lvt_pmc |= MODEL_AMD_LVT_MASKED;
    }

    m.pmi_pending = true;
}

static void
model_amd_count(unsigned int n, uint64_t events)
{
    uint64_t room = MODEL_AMD_MASK48 - m.regs.ctr[n];
    uint64_t wraps;

    m.counted[n] += events;

    if (events <= room) {
        m.regs.ctr[n] += events;
        return;
    }

    wraps = 1 + (events - room - 1) / (MODEL_AMD_MASK48 + 1);
    m.regs.ctr[n] = (m.regs.ctr[n] + events) & MODEL_AMD_MASK48;
    m.wraps[n] += wraps;

    if (m.config.perfmon_v2) {
        m.regs.global_status |= 1ULL << n;
    }

    if (m.regs.ctl[n] & MODEL_AMD_EVTSEL_INT) {
        model_amd_request_pmi();
    }
}

/*
 * Family 15h: the counters that count an event (event select 11:0), the
 * others counting nothing of it (BKDG for family 15h processors, each
 * event's PERF_CTL restriction): 060h to 09Fh and 0D0h to 0DFh on
 * PERF_CTL[2:0], the floating-point events 000h to 00Fh on PERF_CTL[5:3].
 * Other families: every counter.
 */
static bool
model_amd_counter_takes(unsigned int n, uint64_t ctl)
{
    unsigned int event = (unsigned int)((ctl & 0xff) | ((ctl >> 24) & 0xf00));

    if (m.config.family != 0x15) {
        return true;
    }

    if ((event >= 0x060 && event <= 0x09f)
        || (event >= 0x0d0 && event <= 0x0df)) {
        return n <= 2;
    }

    if (event <= 0x00f) {
        return n >= 3 && n <= 5;
    }

    return true;
}

/* Whether counter n counts code (any event when all) at ring now. */
static bool
model_amd_counts(unsigned int n, uint64_t code, bool all,
                 enum model_amd_ring ring)
{
    uint64_t ctl = m.regs.ctl[n];
    uint64_t code_bits = 0xffffULL | (0xfULL << 32);

    if (!(ctl & MODEL_AMD_EVTSEL_EN)
        || (ctl & (MODEL_AMD_EVTSEL_GUEST | MODEL_AMD_EVTSEL_HOST))) {
        return false;
    }

    if (m.config.perfmon_v2 && !(m.regs.global_ctl & (1ULL << n))) {
        return false;
    }

    if (!(ctl & ((ring == MODEL_AMD_RING_KERN) ? MODEL_AMD_EVTSEL_OS
                                               : MODEL_AMD_EVTSEL_USR))) {
        return false;
    }

    if (!model_amd_counter_takes(n, ctl)) {
        return false;
    }

    return all || (ctl & code_bits) == code;
}

static void
model_amd_advance(uint64_t code, bool all, uint64_t events,
                  enum model_amd_ring ring)
{
    uint32_t counting = 0;

    /* Who counts is decided before any overflow. */
    for (unsigned int n = 0; n < m.nr; n++) {
        if (model_amd_counts(n, code, all, ring)) {
            counting |= 1U << n;
        }
    }

    for (unsigned int n = 0; n < m.nr; n++) {
        if (counting & (1U << n)) {
            model_amd_count(n, events);
        }
    }
}

void
model_amd_retire(uint64_t code, uint64_t n, enum model_amd_ring ring)
{
    model_amd_advance(code, false, n, ring);
}

static void
model_amd_drift(void)
{
    if (m.drift != 0) {
        model_amd_advance(0, true, m.drift, MODEL_AMD_RING_KERN);
    }
}

unsigned long
model_amd_nr_pmi_requests(void)
{
    return m.pmi_requests;
}

bool
model_amd_pmi_pending(void)
{
    return m.pmi_pending;
}

bool
model_amd_pmi_take(void)
{
    bool pending = m.pmi_pending;

    m.pmi_pending = false;
    return pending;
}

/* ------------------------------------------------------------------ */
/* Local APIC                                                          */
/* ------------------------------------------------------------------ */

void
model_amd_lapic_pmc_setup(unsigned int vector)
{
    m.regs.lvt_pmc = vector & 0xff;
}

void
model_amd_lapic_pmc_setup_nmi(void)
{
    m.regs.lvt_pmc = MODEL_AMD_LVT_NMI;
}

bool
model_amd_lvt_nmi(void)
{
    return (m.regs.lvt_pmc & MODEL_AMD_LVT_MODE) == MODEL_AMD_LVT_NMI;
}

void
model_amd_lapic_pmc_unmask(void)
{
    m.regs.lvt_pmc &= ~(uint64_t)MODEL_AMD_LVT_MASKED;
}

void
model_amd_lapic_eoi(void)
{
    m.eois++;
}

unsigned long
model_amd_nr_eois(void)
{
    return m.eois;
}

uint32_t
model_amd_lvt_pmc(void)
{
    return (uint32_t)m.regs.lvt_pmc;
}

void
model_amd_set_rdmsr_hook(void (*hook)(uint32_t msr))
{
    m.rdmsr_hook = hook;
}
