/*
 * Intel architectural performance monitoring driver.
 *
 * MSR numbers and layouts: Intel SDM vol. 3B, section 21.2 (architectural
 * performance monitoring), figures 21-1 (IA32_PERFEVTSELx), 21-2
 * (IA32_FIXED_CTR_CTRL), 21-3/21-4 (IA32_PERF_GLOBAL_CTRL, _STATUS,
 * _OVF_CTRL), section 21.2.6 (full-width writes) and vol. 4, table 2-2.
 *
 * Counter allocation is global (perfmon's device lock serializes alloc and
 * free): a slot gets the same hardware counter on every CPU, so a thread
 * moves between CPUs with nothing to re-allocate. What Intel shares with
 * AMD is the x86 layer's (pmu_x86.c): the per-CPU shadows of the control
 * registers, batching, the PMI loop, the statistics and the MSR probe;
 * detection is pmu_intel_detect.c's, and this file keeps the registers,
 * the events and the quirks.
 *
 * This file is also compiled unchanged into the host tests, against a
 * register-level model of the PMU (tests/host/pmu/pmu_model.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/assert.h>
#include <kern/bitops.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <pmu/pmu_intel.h>
#include <pmu/pmu_x86.h>
#include <pmu/pmu_x86_test.h>
#include <machine/trap.h>

#define PMU_INTEL_MSR_PMC(i)        (0xc1 + (i))
#define PMU_INTEL_MSR_EVTSEL(i)     (0x186 + (i))
#define PMU_INTEL_MSR_A_PMC(i)      (0x4c1 + (i))
#define PMU_INTEL_MSR_FIXED_CTR(j)  (0x309 + (j))
#define PMU_INTEL_MSR_FIXED_CTRL    0x38d
#define PMU_INTEL_MSR_GLOBAL_STATUS 0x38e
#define PMU_INTEL_MSR_GLOBAL_CTRL   0x38f
#define PMU_INTEL_MSR_GLOBAL_OVF    0x390
#define PMU_INTEL_MSR_DEBUGCTL      0x1d9

#define PMU_INTEL_DEBUGCTL_FREEZE_PERFMON   (1ULL << 12)

#define PMU_INTEL_EVTSEL_CODE       0xffffULL   /* event select + umask */

/* Bits a raw code may carry (the ring bits come from the flags). */
#define PMU_INTEL_RAW_ALLOWED       (PMU_INTEL_EVTSEL_CODE              \
                                     | PMU_X86_EVTSEL_EDGE              \
                                     | PMU_X86_EVTSEL_INV               \
                                     | PMU_X86_EVTSEL_CMASK)
#define PMU_INTEL_RAW_MODIFIERS     (PMU_X86_EVTSEL_EDGE                \
                                     | PMU_X86_EVTSEL_INV               \
                                     | PMU_X86_EVTSEL_CMASK)

#define PMU_INTEL_FIXED_OS          0x1
#define PMU_INTEL_FIXED_USR         0x2
#define PMU_INTEL_FIXED_PMI         0x8
#define PMU_INTEL_FIXED_FIELD(j, v) ((uint64_t)(v) << (4 * (j)))

/*
 * Configuration bit (above the PERFEVTSEL bits) of the generic ref-cycles
 * event: only fixed counter 2 serves it. That counter counts at the TSC
 * rate, while the architectural event on a general counter may count a
 * slower reference (bus or crystal) clock (SDM 21.2.1.2, table 21-1
 * notes), so falling back would change the unit behind the caller's back.
 */
#define PMU_INTEL_CFG_FIXED_ONLY    (1ULL << 32)

#define PMU_INTEL_STATUS_OTHER      ((1ULL << 62) | (1ULL << 63))
#define PMU_INTEL_STATUS_FROZEN     ((1ULL << 58) | (1ULL << 59))

/*
 * What the probe writes: a code with EN clear (nothing counts), and a
 * counter value with bit 31 clear, which a 32-bit write keeps as is.
 */
#define PMU_INTEL_PROBE_EVTSEL      (0xc0 | PMU_X86_EVTSEL_OS           \
                                     | PMU_X86_EVTSEL_USR)
#define PMU_INTEL_PROBE_COUNT       0x5a5a5a5aULL

/*
 * Events with model quirks (event select and unit mask): L1D_PEND_MISS.
 * PENDING and INST_RETIRED.ALL (SDM vol. 3B, the tables of
 * "Non-Architectural Performance Events" of the 4th and 5th generation
 * Intel Core processors).
 */
#define PMU_INTEL_EV_L1D_PEND_MISS  0x0148
#define PMU_INTEL_EV_INST_RETIRED_ALL   0x01c0

/*
 * The least period any counter is preset to: as Linux does, never 1, an
 * overflow on the very next event, which some models mishandle (the
 * errata below are about such short periods).
 */
#define PMU_INTEL_MIN_PERIOD        2

/*
 * Haswell and Broadwell errata HSW11 and BDM11 (specification updates of
 * the 4th and 5th generation Intel Core processor families): a counter of
 * INST_RETIRED.ALL preset to fewer than 100 events may raise a wrong PMI
 * or hold a wrong value. The erratum names PEBS; Linux applies the limit
 * to every use, and so does this driver, at the next power of two.
 */
#define PMU_INTEL_MIN_PERIOD_HSW11  128

struct pmu_intel_event {
    uint8_t select;
    uint8_t umask;
};

/* Architectural event index of the generic ref-cycles event. */
#define PMU_INTEL_ARCH_REF_CYCLES   2

/* Architectural events, indexed by their CPUID.0AH:EBX bit (table 21-1). */
static const struct pmu_intel_event pmu_intel_arch_events[] = {
    { 0x3c, 0x00 },     /* unhalted core cycles */
    { 0xc0, 0x00 },     /* instructions retired */
    { 0x3c, 0x01 },     /* unhalted reference cycles */
    { 0x2e, 0x4f },     /* last level cache references */
    { 0x2e, 0x41 },     /* last level cache misses */
    { 0xc4, 0x00 },     /* branch instructions retired */
    { 0xc5, 0x00 },     /* branch mispredicts retired */
    { 0xa4, 0x01 },     /* topdown slots */
};

/* The architectural event each fixed counter counts. */
static const unsigned int pmu_intel_fixed_events[PMU_INTEL_MAX_FIXED] = {
    1, 0, PMU_INTEL_ARCH_REF_CYCLES, 7,
};

static struct pmu_intel_info pmu_intel_info;
static struct perfmon_dev pmu_intel_dev;

_Static_assert(PMU_INTEL_MAX_GP <= PMU_X86_MAX_EVTSEL,
               "the shadows hold every general counter's event select");

/* Allocation state, under perfmon's device lock. */
static uint32_t pmu_intel_gp_used;
static uint32_t pmu_intel_fixed_used;

/*
 * Counters firmware held at boot (enabled: BIOS or SMM code counting for
 * itself), found on the boot CPU before anything is written: they are
 * never allocated, and setup leaves their event selects, fixed-counter
 * fields and global enables as found, on every CPU. fw_global: their
 * IA32_PERF_GLOBAL_CTRL bits that were set; fw_fixed_ctrl: their
 * IA32_FIXED_CTR_CTRL fields. The shadows start from these, so that every
 * write of those registers keeps them.
 */
static uint32_t pmu_intel_fw_gp;
static uint32_t pmu_intel_fw_fixed;
static uint64_t pmu_intel_fw_global;
static uint64_t pmu_intel_fw_fixed_ctrl;

static uint64_t pmu_intel_start_gap;

/*
 * The shadows (struct pmu_x86_cpu): the driver writes the control
 * registers from them and never reads them back: with
 * FREEZE_PERFMON_ON_PMI set (firmware may leave it, a hypervisor may
 * ignore clearing it) a PMI request clears GLOBAL_CTRL behind the
 * driver's back (SDM vol. 3B, "Freezing LBR and Performance Counters on
 * PMI"), so a handler restoring what it read would leave counting off for
 * good; and a read-modify-write costs a RDMSR per start and stop.
 *
 * From version 2 a counter counts only while both its enable in
 * IA32_PERFEVTSELx or IA32_FIXED_CTR_CTRL and its IA32_PERF_GLOBAL_CTRL
 * bit are set (SDM vol. 3B, 21.2.2: the bits are ANDed). So start and stop
 * only flip the GLOBAL_CTRL bit and leave the event select programmed:
 * evtsel and fixed_ctrl are what those registers hold, and a counter
 * started again with the same configuration costs no control write. In a
 * batch (a context switch, perfmon's batch_begin/batch_end, which are the
 * shared layer's) the GLOBAL_CTRL write waits for batch_end. Version 1 has
 * no global registers: EN in the event select starts and stops a counter.
 * The PMI (version 2 on) is the shared layer's too (pmu_x86_global_intr).
 */

const struct pmu_intel_info *
pmu_intel_get_info(void)
{
    return &pmu_intel_info;
}

/* ------------------------------------------------------------------ */
/* perfmon device operations                                           */
/* ------------------------------------------------------------------ */

static bool
pmu_intel_has_pmi(void)
{
    return pmu_intel_info.version >= 2;
}

/*
 * Haswell and Broadwell: family 6, models 3CH, 3FH, 45H, 46H and 3DH,
 * 47H, 4FH, 56H (SDM vol. 4, table 2-1, DisplayFamily_DisplayModel).
 * Decided once at setup (pmu_intel_hsw_bdw), since the PMI's preset asks.
 */
static bool pmu_intel_hsw_bdw;

static bool
pmu_intel_find_hsw_bdw(void)
{
    static const uint8_t models[] = {
        0x3c, 0x3f, 0x45, 0x46, 0x3d, 0x47, 0x4f, 0x56,
    };

    if (pmu_intel_info.family != 6) {
        return false;
    }

    for (unsigned int i = 0; i < ARRAY_SIZE(models); i++) {
        if (pmu_intel_info.model == models[i]) {
            return true;
        }
    }

    return false;
}

/*
 * The general counters that count config. On Haswell and Broadwell,
 * L1D_PEND_MISS.PENDING counts on general counter 2 only (SDM vol. 3B,
 * tables of non-architectural events of the 4th and 5th generation Intel
 * Core processors: "Counter 2 only"); elsewhere any counter.
 */
static uint32_t
pmu_intel_gp_allowed(uint64_t config)
{
    uint32_t all = (1U << pmu_intel_info.nr_gp) - 1;

    if (pmu_intel_hsw_bdw
        && (config & PMU_INTEL_EVTSEL_CODE) == PMU_INTEL_EV_L1D_PEND_MISS) {
        return all & (1U << 2);
    }

    return all;
}

/* General counters some event counts on alone: the others take them last. */
static uint32_t
pmu_intel_gp_scarce(void)
{
    return pmu_intel_hsw_bdw ? (1U << 2) : 0;
}

/* The least period config may be preset to. */
static uint64_t
pmu_intel_min_period(uint64_t config)
{
    if (pmu_intel_hsw_bdw
        && (config & PMU_INTEL_EVTSEL_CODE)
           == PMU_INTEL_EV_INST_RETIRED_ALL) {
        return PMU_INTEL_MIN_PERIOD_HSW11;
    }

    return PMU_INTEL_MIN_PERIOD;
}

/* A period shorter than the model's least is refused, never raised. */
static int
pmu_intel_check_period(uint64_t config, uint64_t period)
{
    return (period < pmu_intel_min_period(config)) ? EINVAL : 0;
}

static int
pmu_intel_translate(uint64_t *configp, uint64_t id, unsigned int flags)
{
    const struct pmu_intel_event *event;
    int arch;

    if (flags & PERFMON_EF_RAW) {
        if (pmu_x86_raw_check(id, PMU_INTEL_RAW_ALLOWED) != 0
            || (id & 0xff) == 0) {
            return EINVAL;
        }

        *configp = id | pmu_x86_ring_bits(flags);
        return 0;
    }

    arch = pmu_intel_generic_to_arch(id);

    if (arch < 0) {
        return EINVAL;
    }

    if (!(pmu_intel_info.events_available & (1U << arch))) {
        return ENODEV;
    }

    event = &pmu_intel_arch_events[arch];
    *configp = event->select | ((uint64_t)event->umask << 8)
               | pmu_x86_ring_bits(flags);

    if (arch == PMU_INTEL_ARCH_REF_CYCLES
        && (pmu_intel_info.fixed_mask & (1U << 2))) {
        *configp |= PMU_INTEL_CFG_FIXED_ONLY;
    }

    return 0;
}

/*
 * The fixed counter that counts config, or -1. A raw code never gets fixed
 * counter 2, whose unit differs (see PMU_INTEL_CFG_FIXED_ONLY).
 */
static int
pmu_intel_fixed_for(uint64_t config)
{
    if (config & PMU_INTEL_CFG_FIXED_ONLY) {
        return 2;
    }

    if (config & PMU_INTEL_RAW_MODIFIERS) {
        return -1;
    }

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        const struct pmu_intel_event *event;

        if (pmu_intel_fixed_events[j] == PMU_INTEL_ARCH_REF_CYCLES) {
            continue;
        }

        event = &pmu_intel_arch_events[pmu_intel_fixed_events[j]];

        if ((config & PMU_INTEL_EVTSEL_CODE)
            == (event->select | ((uint64_t)event->umask << 8))) {
            return (int)j;
        }
    }

    return -1;
}

static int
pmu_intel_alloc(unsigned int *pmc_idp, unsigned int *widthp, uint64_t config)
{
    int fixed = pmu_intel_fixed_for(config);
    uint32_t avail, pick;

    if (fixed >= 0 && (pmu_intel_info.fixed_mask & (1U << fixed))
        && !((pmu_intel_fixed_used | pmu_intel_fw_fixed) & (1U << fixed))) {
        pmu_intel_fixed_used |= 1U << fixed;
        *pmc_idp = PMU_INTEL_FIXED_BASE + fixed;
        *widthp = pmu_intel_info.fixed_width;
        return 0;
    }

    if (config & PMU_INTEL_CFG_FIXED_ONLY) {
        return EAGAIN;
    }

    avail = pmu_intel_gp_allowed(config)
            & ~(pmu_intel_gp_used | pmu_intel_fw_gp);

    if (avail == 0) {
        return EAGAIN;
    }

    /* Counters that some event needs alone go last to any other event. */
    pick = avail & ~pmu_intel_gp_scarce();
    pick = (pick != 0) ? pick : avail;
    pmu_intel_gp_used |= pick & -pick;
    *pmc_idp = __builtin_ctz(pick);
    *widthp = pmu_intel_info.gp_width;
    return 0;
}

static void
pmu_intel_free(unsigned int pmc_id)
{
    if (pmc_id >= PMU_INTEL_FIXED_BASE) {
        pmu_intel_fixed_used &= ~(1U << (pmc_id - PMU_INTEL_FIXED_BASE));
    } else {
        pmu_intel_gp_used &= ~(1U << pmc_id);
    }
}

/* The GLOBAL_* bit of a counter. */
static uint64_t
pmu_intel_global_bit(unsigned int pmc_id)
{
    return 1ULL << pmc_id;  /* fixed counters start at bit 32 */
}

/* pmu_x86_global_flush on IA32_PERF_GLOBAL_CTRL. Version 2 and later. */
static void
pmu_intel_global_flush(struct pmu_x86_cpu *cpu)
{
    pmu_x86_global_flush(cpu, PMU_INTEL_MSR_GLOBAL_CTRL,
                         PMU_INTEL_MSR_GLOBAL_OVF);
}

/* Write a general counter's event select unless it holds evtsel already. */
static void
pmu_intel_evtsel_set(struct pmu_x86_cpu *cpu, unsigned int i,
                     uint64_t evtsel)
{
    assert(i < PMU_INTEL_MAX_GP);

    if (cpu->evtsel[i] != evtsel) {
        cpu->evtsel[i] = evtsel;
        cpu_set_msr(PMU_INTEL_MSR_EVTSEL(i), evtsel);
    }
}

/* Set the 4-bit IA32_FIXED_CTR_CTRL field of fixed counter j. */
static void
pmu_intel_fixed_ctrl_set(struct pmu_x86_cpu *cpu, unsigned int j,
                         unsigned int field)
{
    uint64_t ctrl = (cpu->fixed_ctrl & ~PMU_INTEL_FIXED_FIELD(j, 0xf))
                    | PMU_INTEL_FIXED_FIELD(j, field);

    if (cpu->fixed_ctrl != ctrl) {
        cpu->fixed_ctrl = ctrl;
        cpu_set_msr(PMU_INTEL_MSR_FIXED_CTRL, ctrl);
    }
}

/*
 * Write a counter so that it overflows after n events: 2^width - n (SDM
 * vol. 3B, 21.2.6, "Full-Width Writes to Performance Counter Registers").
 * Fixed counters and the IA32_A_PMCx aliases take the full width (bits
 * above it are reserved: 21.2.2 for fixed counters, #GP for the aliases).
 * IA32_PMCx keeps bits 31:0 of a write and sign-extends bit 31 to the
 * width, which gives 2^width - n exactly when 1 <= n <= 2^31 (bit 31 of
 * 2^32 - n set). The return is the value the counter holds, computed as
 * the CPU does. The caller keeps n within those bounds.
 */
static uint64_t
pmu_intel_write_count(unsigned int pmc_id, uint64_t n)
{
    uint64_t value, mask;

    if (pmc_id >= PMU_INTEL_FIXED_BASE) {
        value = -n & bitops_width_mask(pmu_intel_info.fixed_width);
        cpu_set_msr(PMU_INTEL_MSR_FIXED_CTR(pmc_id - PMU_INTEL_FIXED_BASE),
                    value);
        return value;
    }

    mask = bitops_width_mask(pmu_intel_info.gp_width);
    value = -n & mask;

    if (pmu_intel_info.full_width_writes) {
        cpu_set_msr(PMU_INTEL_MSR_A_PMC(pmc_id), value);
        return value;
    }

    cpu_set_msr(PMU_INTEL_MSR_PMC(pmc_id), value & 0xffffffffULL);
    return (uint64_t)(int64_t)(int32_t)(uint32_t)value & mask;
}

static uint64_t
pmu_intel_read(unsigned int pmc_id)
{
    if (pmc_id >= PMU_INTEL_FIXED_BASE) {
        return cpu_get_msr(PMU_INTEL_MSR_FIXED_CTR(pmc_id
                                                   - PMU_INTEL_FIXED_BASE));
    }

    return cpu_get_msr(PMU_INTEL_MSR_PMC(pmc_id));
}

/*
 * The value a stopped counter starts from, which perfmon counts from; it
 * does not count until its enable, after this. In a batch (a context
 * switch) the counter keeps the value it holds (one read, no write);
 * elsewhere (attach, a CPU's first thread) it is written to zero or, with
 * a start gap (tests), that many events before its wrap, which a batch
 * writes too.
 */
static uint64_t
pmu_intel_start_value(const struct pmu_x86_cpu *cpu, unsigned int pmc_id)
{
    if (cpu->batch && pmu_intel_start_gap == 0) {
        return pmu_intel_read(pmc_id);
    }

    return pmu_intel_write_count(pmc_id, pmu_intel_start_gap);
}

/*
 * Version 1: EN starts the counter, after its value is set. Version 2
 * on: the event select is programmed (if it changed) with the counter
 * still off in GLOBAL_CTRL, and the GLOBAL_CTRL bit starts it, at once or
 * at batch_end. A counter stopped in this batch still counts until then:
 * not in perfmon's use (a switch stops and starts different counters),
 * but should it happen, the flush first stops it.
 *
 * No overflow may be pending: a stop clears the bit of a counter once it
 * no longer counts, so a stopped counter has none; outside a batch, an
 * acknowledgment before the enable also covers a bit set by something
 * else (a hypervisor), at no cost to the context switch.
 */
static uint64_t
pmu_intel_start(unsigned int pmc_id, uint64_t config)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = pmu_intel_global_bit(pmc_id);
    uint64_t value;

    if (!pmu_intel_has_pmi()) {
        value = pmu_intel_start_value(cpu, pmc_id);
        pmu_intel_evtsel_set(cpu, pmc_id, config | PMU_X86_EVTSEL_EN);
        return value;
    }

    if (cpu->global_hw & bit) {
        pmu_intel_global_flush(cpu);
    }

    /*
     * Stopped earlier in this batch, and not counting (global_hw lacks
     * its bit, the flush above made sure): its overflow bit is cleared
     * now rather than at batch_end, which enables counting before it
     * clears the stopped counters' bits and would clear an overflow of
     * this new use (a short preset overflowing between the two writes:
     * a lost sample, and a counter left to run a whole 2^width).
     */
    if (cpu->stopped & bit) {
        cpu_set_msr(PMU_INTEL_MSR_GLOBAL_OVF, bit);
        cpu->stopped &= ~bit;
    }

    if (pmc_id >= PMU_INTEL_FIXED_BASE) {
        unsigned int field = PMU_INTEL_FIXED_PMI;

        field |= (config & PMU_X86_EVTSEL_OS) ? PMU_INTEL_FIXED_OS : 0;
        field |= (config & PMU_X86_EVTSEL_USR) ? PMU_INTEL_FIXED_USR : 0;
        pmu_intel_fixed_ctrl_set(cpu, pmc_id - PMU_INTEL_FIXED_BASE, field);
    } else {
        pmu_intel_evtsel_set(cpu, pmc_id, config | PMU_X86_EVTSEL_EN
                                          | PMU_X86_EVTSEL_INT);
    }

    value = pmu_intel_start_value(cpu, pmc_id);
    cpu->global_ctrl |= bit;

    if (!cpu->batch) {
        cpu_set_msr(PMU_INTEL_MSR_GLOBAL_OVF, bit);
        pmu_intel_global_flush(cpu);
    }

    return value;
}

/*
 * Version 1: clear EN. Version 2 on: clear the GLOBAL_CTRL bit, at once or
 * at batch_end, then the overflow bit (pmu_intel_global_flush); the event
 * select stays programmed for the next start.
 */
static void
pmu_intel_stop(unsigned int pmc_id)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = pmu_intel_global_bit(pmc_id);

    if (!pmu_intel_has_pmi()) {
        pmu_intel_evtsel_set(cpu, pmc_id, 0);
        return;
    }

    cpu->global_ctrl &= ~bit;
    cpu->stopped |= bit;
    cpu->unguarded &= ~bit;     /* the flush clears its status bit */

    if (!cpu->batch) {
        pmu_intel_global_flush(cpu);
    }
}

/* The event select a counter is programmed with (0: a fixed counter). */
static uint64_t
pmu_intel_config_of(const struct pmu_x86_cpu *cpu, unsigned int pmc_id)
{
    if (pmc_id >= PMU_INTEL_MAX_GP) {
        return 0;
    }

    return cpu->evtsel[pmc_id];
}

/*
 * Sampling: the counter overflows after n more events. n is limited to
 * [pmu_intel_min_period, max_period]: a remainder shorter than the model
 * allows (what is left of a period when a thread comes back) is raised,
 * the sample coming that much later, its count still exact; and the
 * write never needs bits the register does not take (see
 * pmu_intel_write_count).
 *
 * An overflow pending on the counter is discarded: it happened before
 * the write, and reported later against the preset value it would add a
 * whole 2^width. In the PMI counting is off and the handler acknowledged
 * the bit before reporting; in a switch a counter started there counts
 * only from batch_end, and its bit was cleared when it last stopped: the
 * write alone does. A counter that counts (a switch from one thread's
 * sampler to another's, attach, a refresh, the end of throttling) is
 * written once and left unguarded (pmu_x86.h): its status bit, which
 * the write does not clear (IA32_PERF_GLOBAL_OVF_CTRL does, SDM vol. 3B,
 * 21.2.2), counts only once the counter wrapped since.
 */
static uint64_t
pmu_intel_preset(unsigned int pmc_id, uint64_t n)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = pmu_intel_global_bit(pmc_id);

    /* The remainder of a period may be shorter than the model allows. */
    n = MAX(n, pmu_intel_min_period(pmu_intel_config_of(cpu, pmc_id)));
    n = MIN(n, pmu_intel_dev.max_period);

    if (!cpu->pmi && (cpu->global_hw & bit)) {
        cpu->unguarded |= bit;
    }

    return pmu_intel_write_count(pmc_id, n);
}

/* The top bit of a preset counter reads 0 once it wrapped (pmu_x86.h). */
static bool
pmu_intel_wrapped(unsigned int pmc_id)
{
    unsigned int width = (pmc_id >= PMU_INTEL_FIXED_BASE)
                         ? pmu_intel_info.fixed_width
                         : pmu_intel_info.gp_width;

    return !(pmu_intel_read(pmc_id) & (1ULL << (width - 1)));
}

/* Take back the overflows the PMI has not reported yet. */
static uint64_t
pmu_intel_overflow_consume(uint64_t ids)
{
    /* Version 1 has no status (and no PMI: never called). */
    if (!pmu_intel_has_pmi()) {
        return 0;
    }

    /* A counter's id is its GLOBAL_STATUS bit: one read for the batch. */
    return pmu_x86_global_consume(ids, PMU_INTEL_MSR_GLOBAL_STATUS,
                                  PMU_INTEL_MSR_GLOBAL_OVF);
}

/* GLOBAL_STATUS bits of the counters that exist. */
static uint64_t
pmu_intel_counter_bits(void)
{
    return ((1ULL << pmu_intel_info.nr_gp) - 1)
           | ((uint64_t)pmu_intel_info.fixed_mask << PMU_INTEL_FIXED_BASE);
}

/* GLOBAL_STATUS bits of the counters firmware holds. */
static uint64_t
pmu_intel_fw_bits(void)
{
    return pmu_intel_fw_gp
           | ((uint64_t)pmu_intel_fw_fixed << PMU_INTEL_FIXED_BASE);
}

/* GLOBAL_STATUS bits of the counters this driver uses. */
static uint64_t
pmu_intel_own_bits(void)
{
    return pmu_intel_counter_bits() & ~pmu_intel_fw_bits();
}

/*
 * GLOBAL_STATUS bits besides the counters' that the PMI acknowledges:
 * CondChgd and OvfBuf and, from version 4, CTR_Frz and LBR_Frz, which a
 * PMI request sets with the freeze bits of DEBUGCTL and which stop
 * counting until IA32_PERF_GLOBAL_STATUS_RESET (the OVF_CTRL address)
 * clears them (SDM vol. 3B, 21.2.4.1 and 21.2.4.2). Earlier versions
 * reserve those bits.
 */
static uint64_t
pmu_intel_status_other(void)
{
    return PMU_INTEL_STATUS_OTHER
           | ((pmu_intel_info.version >= 4) ? PMU_INTEL_STATUS_FROZEN : 0);
}

static const struct perfmon_dev_ops pmu_intel_ops = {
    .translate = pmu_intel_translate,
    .alloc = pmu_intel_alloc,
    .free = pmu_intel_free,
    .start = pmu_intel_start,
    .stop = pmu_intel_stop,
    .read = pmu_intel_read,
    .overflow_consume = pmu_intel_overflow_consume,
    .handle_overflow_intr = pmu_x86_global_intr,
    .preset = pmu_intel_preset,
    .check_period = pmu_intel_check_period,
    .batch_begin = pmu_x86_batch_begin,
    .batch_end = pmu_x86_batch_end,
};

/*
 * The longest preset every counter takes (SDM vol. 3B, 21.2.6): 2^31
 * through the sign-extending IA32_PMCx, else 2^(width - 1), so that a
 * preset counter holds a negative number of its width on every path (and
 * as AMD's top-bit counters do); perfmon makes longer periods from
 * several. 0 without a PMI (version 1): no sampling.
 */
static uint64_t
pmu_intel_max_period(void)
{
    uint64_t max = 1ULL << 62;

    if (!pmu_intel_has_pmi()) {
        return 0;
    }

    if (pmu_intel_info.nr_gp != 0) {
        max = MIN(max, 1ULL << (pmu_intel_info.gp_width - 1));

        if (!pmu_intel_info.full_width_writes) {
            max = MIN(max, 1ULL << 31);
        }
    }

    if (pmu_intel_info.fixed_mask != 0) {
        max = MIN(max, 1ULL << (pmu_intel_info.fixed_width - 1));
    }

    return max;
}

/* The narrowest counter that exists (general or fixed). */
static unsigned int
pmu_intel_min_width(void)
{
    unsigned int width = 64;

    if (pmu_intel_info.nr_gp != 0) {
        width = pmu_intel_info.gp_width;
    }

    if (pmu_intel_info.fixed_mask != 0) {
        width = MIN(width, pmu_intel_info.fixed_width);
    }

    return width;
}

int
pmu_intel_set_start_gap(uint64_t gap)
{
    unsigned int width = pmu_intel_min_width();

    if ((gap != 0 && gap < PMU_INTEL_START_GAP_MIN)
        || gap > bitops_width_mask(width)
        || (!pmu_intel_info.full_width_writes && gap > (1ULL << 31))) {
        return EINVAL;
    }

    pmu_intel_start_gap = gap;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

/*
 * Find the counters firmware holds (pmu_intel_fw_*), those counting at
 * boot: a general counter whose event select has EN set, a fixed counter
 * whose field enables a ring, and from version 2 with its
 * IA32_PERF_GLOBAL_CTRL bit set too (the enables are ANDed, SDM vol. 3B,
 * 21.2.2), so that a counter an earlier kernel stopped (this driver stops
 * with the global bit alone) and a warm reboot left programmed is not
 * taken for firmware's. Read through the safe accessors, before any
 * write. Return 0, or
 * EIO with the MSR in *msrp when a global register faults; a general
 * counter whose event select faults ends *nr_gpp there (the probe of the
 * others follows, pmu_intel_probe).
 */
static int
pmu_intel_find_fw(unsigned int *nr_gpp, uint32_t *msrp)
{
    const struct pmu_intel_info *info = &pmu_intel_info;
    uint64_t value, fixed_ctrl = 0, global = 0;

    pmu_intel_fw_gp = 0;
    pmu_intel_fw_fixed = 0;
    pmu_intel_fw_fixed_ctrl = 0;

    if (pmu_intel_has_pmi()) {
        *msrp = PMU_INTEL_MSR_GLOBAL_CTRL;

        if (cpu_get_msr_safe(PMU_INTEL_MSR_GLOBAL_CTRL, &global) != 0) {
            return EIO;
        }

        *msrp = PMU_INTEL_MSR_FIXED_CTRL;

        if (info->fixed_mask != 0
            && cpu_get_msr_safe(PMU_INTEL_MSR_FIXED_CTRL, &fixed_ctrl) != 0) {
            return EIO;
        }
    }

    for (unsigned int i = 0; i < *nr_gpp; i++) {
        if (cpu_get_msr_safe(PMU_INTEL_MSR_EVTSEL(i), &value) != 0) {
            *nr_gpp = i;
            break;
        }

        if ((value & PMU_X86_EVTSEL_EN)
            && (!pmu_intel_has_pmi() || (global & (1ULL << i)))) {
            pmu_intel_fw_gp |= 1U << i;
        }
    }

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        uint64_t field = PMU_INTEL_FIXED_FIELD(j, 0xf);

        if ((info->fixed_mask & (1U << j))
            && (global & (1ULL << (PMU_INTEL_FIXED_BASE + j)))
            && (fixed_ctrl & PMU_INTEL_FIXED_FIELD(j, PMU_INTEL_FIXED_OS
                                                   | PMU_INTEL_FIXED_USR))) {
            pmu_intel_fw_fixed |= 1U << j;
            pmu_intel_fw_fixed_ctrl |= fixed_ctrl & field;
        }
    }

    pmu_intel_fw_global = global
                          & (pmu_intel_fw_gp
                             | ((uint64_t)pmu_intel_fw_fixed
                                << PMU_INTEL_FIXED_BASE));
    return 0;
}

/* Prove general counter i: its event select and counter (start's). */
static int
pmu_intel_probe_gp(unsigned int i, uint32_t *msrp)
{
    const struct pmu_intel_info *info = &pmu_intel_info;
    uint32_t msr = info->full_width_writes ? PMU_INTEL_MSR_A_PMC(i)
                                           : PMU_INTEL_MSR_PMC(i);
    const struct pmu_x86_probe_write writes[] = {
        { PMU_INTEL_MSR_EVTSEL(i), PMU_INTEL_PROBE_EVTSEL },
        { PMU_INTEL_MSR_EVTSEL(i), 0 },
        { msr, PMU_INTEL_PROBE_COUNT & bitops_width_mask(info->gp_width) },
        { msr, 0 },
    };

    return pmu_x86_probe(writes, ARRAY_SIZE(writes), 0, 0, msrp);
}

/* Prove fixed counter j. */
static int
pmu_intel_probe_fixed(unsigned int j, uint32_t *msrp)
{
    uint32_t msr = PMU_INTEL_MSR_FIXED_CTR(j);
    const struct pmu_x86_probe_write writes[] = {
        { msr, PMU_INTEL_PROBE_COUNT
               & bitops_width_mask(pmu_intel_info.fixed_width) },
        { msr, 0 },
    };

    return pmu_x86_probe(writes, ARRAY_SIZE(writes), 0, 0, msrp);
}

/*
 * Check that the MSRs CPUID leaf 0AH promises work before trusting them
 * (pmu_x86_probe), each counter's: a hypervisor may advertise more
 * counters than it emulates, and faults on the others. The global
 * registers first (version 2 on: the global control, the fixed counter
 * control, written with what firmware's counters hold, and the status),
 * which all must work; then every general counter that firmware does not
 * hold (its event select and counter, at the address start writes),
 * where the first that fails ends the general counters used, and every
 * fixed counter firmware does not hold, each kept only if it works.
 * Counting stays off throughout, so a counter reads back what was
 * written; the probed counters are left at zero. Return 0, with
 * pmu_intel_info trimmed to the counters that work and, in *msrp and
 * *errorp, the first MSR that failed and how (0 when none did); or EIO or
 * ENODEV with the MSR in *msrp when a global register fails. Boot CPU,
 * before any other access but detection's.
 */
static int
pmu_intel_probe(uint32_t *msrp, int *errorp)
{
    struct pmu_intel_info *info = &pmu_intel_info;
    struct pmu_x86_probe_write writes[2];
    unsigned int nr_writes = 0, nr_gp = info->nr_gp;
    uint32_t msr;
    int error;

    error = pmu_intel_find_fw(&nr_gp, msrp);

    if (error) {
        return error;
    }

    *errorp = 0;

    if (nr_gp < info->nr_gp) {
        *errorp = EIO;
        *msrp = PMU_INTEL_MSR_EVTSEL(nr_gp);
    }

    if (pmu_intel_has_pmi()) {
        writes[nr_writes++] = (struct pmu_x86_probe_write){
            PMU_INTEL_MSR_GLOBAL_CTRL, pmu_intel_fw_global };

        if (info->fixed_mask != 0) {
            writes[nr_writes++] = (struct pmu_x86_probe_write){
                PMU_INTEL_MSR_FIXED_CTRL, pmu_intel_fw_fixed_ctrl };
        }
    }

    error = pmu_x86_probe(writes, nr_writes,
                          pmu_intel_has_pmi() ? PMU_INTEL_MSR_GLOBAL_STATUS
                                              : 0,
                          PMU_INTEL_MSR_GLOBAL_OVF, &msr);

    if (error) {
        *msrp = msr;
        return error;
    }

    for (unsigned int i = 0; i < nr_gp; i++) {
        if (pmu_intel_fw_gp & (1U << i)) {
            continue;
        }

        error = pmu_intel_probe_gp(i, &msr);

        if (error) {
            if (*errorp == 0) {
                *errorp = error;
                *msrp = msr;
            }

            nr_gp = i;
            break;
        }
    }

    info->nr_gp = nr_gp;
    pmu_intel_fw_gp &= (1U << nr_gp) - 1;

    for (unsigned int j = 0; j < PMU_INTEL_MAX_FIXED; j++) {
        if (!(info->fixed_mask & (1U << j))
            || (pmu_intel_fw_fixed & (1U << j))) {
            continue;
        }

        error = pmu_intel_probe_fixed(j, &msr);

        if (error) {
            if (*errorp == 0) {
                *errorp = error;
                *msrp = msr;
            }

            info->fixed_mask &= ~(1U << j);
        }
    }

    return 0;
}

/*
 * Firmware may leave IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI set: every PMI
 * request would then stop all counters until the handler restarts them,
 * and whatever happens in between would go uncounted (SDM vol. 3B,
 * "Freezing LBR and Performance Counters on PMI"). The bit exists with
 * PDCM and version 2; the safe accessors cover a hypervisor that does not
 * emulate DEBUGCTL, and one that ignores the write leaves the handler's
 * restart (from the shadow, and CTR_Frz acknowledged) to cope.
 */
static void
pmu_intel_freeze_disable(void)
{
    uint64_t debugctl;

    if (cpu_get_msr_safe(PMU_INTEL_MSR_DEBUGCTL, &debugctl) == 0
        && (debugctl & PMU_INTEL_DEBUGCTL_FREEZE_PERFMON)) {
        cpu_set_msr_safe(PMU_INTEL_MSR_DEBUGCTL,
                         debugctl & ~PMU_INTEL_DEBUGCTL_FREEZE_PERFMON);
    }
}

/*
 * Put the calling CPU's counters in a known, idle state, shadows zeroed,
 * but for those firmware holds, left as found: their event selects and
 * fixed fields, their global enables (which the shadows start from, so
 * that every later write keeps them) and their overflow bits.
 */
static void
pmu_intel_setup_local(void *arg)
{
    struct pmu_x86_cpu *cpu;

    (void)arg;
    pmu_x86_cpu_reset();
    cpu = pmu_x86_cpu_local();

    for (unsigned int i = 0; i < pmu_intel_info.nr_gp; i++) {
        if (!(pmu_intel_fw_gp & (1U << i))) {
            cpu_set_msr(PMU_INTEL_MSR_EVTSEL(i), 0);
        }
    }

    if (pmu_intel_has_pmi()) {
        pmu_intel_freeze_disable();

        /* GLOBAL_CTRL may come out of reset with counters enabled. */
        cpu->global_ctrl = pmu_intel_fw_global;
        cpu->global_hw = pmu_intel_fw_global;
        cpu_set_msr(PMU_INTEL_MSR_GLOBAL_CTRL, cpu->global_hw);

        if (pmu_intel_info.fixed_mask != 0) {
            cpu->fixed_ctrl = pmu_intel_fw_fixed_ctrl;
            cpu_set_msr(PMU_INTEL_MSR_FIXED_CTRL, cpu->fixed_ctrl);
        }

        /* Stale overflows, and counters a firmware PMI left frozen. */
        cpu_set_msr(PMU_INTEL_MSR_GLOBAL_OVF,
                    pmu_intel_own_bits() | pmu_intel_status_other());
        pmu_x86_lvt_setup();
    }
}

/* Boot option: pmu_intel.full_width=0 writes counters 32 bits wide. */
ARG_DEFINE_U64("pmu_intel.full_width", 0, 1);

/*
 * The hardware suites' queries (struct pmu_x86_test): the counters
 * IA32_PERF_GLOBAL_CTRL enables, and any counter's bit in
 * IA32_PERF_GLOBAL_STATUS, not only those asked about; of the counters
 * this driver uses (not firmware's). Version 2 on.
 */
static bool
pmu_intel_test_enabled(uint64_t *bitsp)
{
    if (!pmu_intel_has_pmi()) {
        return false;
    }

    *bitsp = cpu_get_msr(PMU_INTEL_MSR_GLOBAL_CTRL) & ~pmu_intel_fw_bits();
    return true;
}

static uint64_t
pmu_intel_test_pending(uint64_t bits)
{
    (void)bits;

    if (!pmu_intel_has_pmi()) {
        return 0;
    }

    return cpu_get_msr(PMU_INTEL_MSR_GLOBAL_STATUS) & pmu_intel_own_bits();
}

/* Fixed counters 0 to 2 that generic events take (CPUID has their event). */
static unsigned int
pmu_intel_nr_generic_fixed(void)
{
    unsigned int n = 0;

    for (unsigned int j = 0; j < 3; j++) {
        if ((pmu_intel_info.fixed_mask & ~pmu_intel_fw_fixed & (1U << j))
            && (pmu_intel_info.events_available
                & (1U << pmu_intel_fixed_events[j]))) {
            n++;
        }
    }

    return n;
}

/* What the x86 layer drives; setup adds the counters that exist. */
static struct pmu_x86_vendor pmu_intel_vendor = {
    .dev = &pmu_intel_dev,
    .msr_global_ctrl = PMU_INTEL_MSR_GLOBAL_CTRL,
    .msr_global_status = PMU_INTEL_MSR_GLOBAL_STATUS,
    .msr_global_clear = PMU_INTEL_MSR_GLOBAL_OVF,
    .wrapped = pmu_intel_wrapped,
};

/* What the tests ask of the driver; setup adds the counters that exist. */
static struct pmu_x86_test pmu_intel_test = {
    .dev = &pmu_intel_dev,
    .raw_insns = 0xc0,                  /* table 21-1 */
    .set_start_gap = pmu_intel_set_start_gap,
    .enabled = pmu_intel_test_enabled,
    .pending = pmu_intel_test_pending,
};

static int
pmu_intel_setup(void)
{
    struct pmu_intel_info *info = &pmu_intel_info;
    struct pmu_x86_vendor *vendor = &pmu_intel_vendor;
    unsigned int nr_gp, fixed_mask, nr_general;
    uint32_t msr;
    int error, partial;

    pmu_intel_detect(info);
    pmu_intel_hsw_bdw = pmu_intel_find_hsw_bdw();

    /* Boot argument: write through IA32_PMCx anyway, to test that path. */
    if (arg_is_set("pmu_intel.full_width", "0")) {
        info->full_width_writes = false;
    }

    if (info->version == 0 || (info->nr_gp == 0 && info->fixed_mask == 0)) {
        log_info("pmu_intel: no architectural PMU (CPUID.0AH version %u): "
                 "hardware events unavailable, software events only",
                 info->version);
        return 0;
    }

    nr_gp = info->nr_gp;
    fixed_mask = info->fixed_mask;
    error = pmu_intel_probe(&msr, &partial);

    if (!error && info->nr_gp == 0 && info->fixed_mask == 0) {
        error = partial;
    }

    if (error) {
        log_warning("pmu_intel: CPUID.0AH reports version %u but MSR 0x%x "
                    "%s: hardware events unavailable, software events "
                    "only", info->version, msr,
                    (error == EIO) ? "faults" : "ignores writes");
        return 0;
    }

    /* Counters that work, as a hypervisor emulating fewer may leave. */
    if (partial) {
        log_warning("pmu_intel: CPUID.0AH reports %u general counters and "
                    "fixed counters 0x%x but MSR 0x%x %s: using %u "
                    "general counters and fixed counters 0x%x", nr_gp,
                    fixed_mask, msr,
                    (partial == EIO) ? "faults" : "ignores writes",
                    info->nr_gp, info->fixed_mask);
    }

    if (pmu_intel_fw_bits() != 0) {
        log_warning("pmu_intel: firmware holds general counters 0x%x and "
                    "fixed counters 0x%x (enabled at boot): left alone, "
                    "never used", pmu_intel_fw_gp, pmu_intel_fw_fixed);
    }

    nr_general = info->nr_gp - bitops_popcount(pmu_intel_fw_gp);
    pmu_intel_dev.name = "pmu_intel";
    pmu_intel_dev.ops = &pmu_intel_ops;
    pmu_intel_dev.overflow_intr = pmu_intel_has_pmi();
    pmu_intel_dev.nmi = pmu_intel_dev.overflow_intr && perfmon_pmi_nmi();
    pmu_intel_dev.preset_ends_overflows = pmu_intel_dev.overflow_intr;
    pmu_intel_dev.nr_pmcs = nr_general
                            + bitops_popcount(info->fixed_mask
                                              & ~pmu_intel_fw_fixed);
    pmu_intel_dev.fw_pmcs = pmu_intel_fw_bits();

    if (pmu_intel_dev.nr_pmcs == 0) {
        log_info("pmu_intel: no counter left to use: software events only");
        return 0;
    }

    pmu_intel_dev.min_width = pmu_intel_min_width();
    pmu_intel_dev.max_period = pmu_intel_max_period();

    vendor->counters = pmu_intel_own_bits();
    vendor->ack_mask = vendor->counters | pmu_intel_status_other();
    error = pmu_x86_register(vendor, pmu_intel_setup_local);

    if (error) {
        return error;
    }

    pmu_intel_test.nr_general = nr_general;
    pmu_intel_test.nr_generic_slots = nr_general
                                      + pmu_intel_nr_generic_fixed();
    pmu_x86_test_register(&pmu_intel_test);

    log_info("pmu_intel: version %u, %u general counters of %u bits, fixed "
             "counters 0x%x of %u bits, events 0x%x, %s writes",
             info->version, info->nr_gp, info->gp_width, info->fixed_mask,
             info->fixed_width, info->events_available,
             info->full_width_writes ? "full-width" : "32-bit");
    return 0;
}

INIT_OP_DEFINE(pmu_intel_setup,
               INIT_OP_DEP(perfmon_setup, true),
               INIT_OP_DEP(xcall_setup, true));
