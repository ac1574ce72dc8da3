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
 * detection is pmu_intel_detect.c's, the MSR probe, the per-CPU setup and
 * the registration pmu_intel_setup.c's, and this file keeps the counter
 * operations, the events and the quirks.
 *
 * This file is also compiled unchanged into the host tests, against a
 * register-level model of the PMU (arch/x86/pmu/model/pmu_model.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/bitops.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <machine/cpu.h>
#include <pmu/pmu_intel.h>
#include <pmu/pmu_intel_i.h>
#include <pmu/pmu_x86.h>
#include <pmu/pmu_x86_test.h>

#define PMU_INTEL_EVTSEL_CODE       0xffffULL   /* event select + umask */

/* Bits a raw code may carry (the ring bits come from the flags). */
#define PMU_INTEL_RAW_ALLOWED       (PMU_INTEL_EVTSEL_CODE              \
                                     | PMU_X86_EVTSEL_EDGE              \
                                     | PMU_X86_EVTSEL_INV               \
                                     | PMU_X86_EVTSEL_CMASK)
#define PMU_INTEL_RAW_MODIFIERS     (PMU_X86_EVTSEL_EDGE                \
                                     | PMU_X86_EVTSEL_INV               \
                                     | PMU_X86_EVTSEL_CMASK)

/*
 * Configuration bit (above the PERFEVTSEL bits) of the generic ref-cycles
 * event: only fixed counter 2 serves it. That counter counts at the TSC
 * rate, while the architectural event on a general counter may count a
 * slower reference (bus or crystal) clock (SDM 21.2.1.2, table 21-1
 * notes), so falling back would change the unit behind the caller's back.
 */
#define PMU_INTEL_CFG_FIXED_ONLY    (1ULL << 32)

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
const unsigned int pmu_intel_fixed_events[PMU_INTEL_MAX_FIXED] = {
    1, 0, PMU_INTEL_ARCH_REF_CYCLES, 7,
};

struct pmu_intel_info pmu_intel_info;
struct perfmon_dev pmu_intel_dev;

_Static_assert(PMU_INTEL_MAX_GP <= PMU_X86_MAX_EVTSEL,
               "the shadows hold every general counter's event select");

/* Allocation state, under perfmon's device lock. */
static uint32_t pmu_intel_gp_used;
static uint32_t pmu_intel_fixed_used;

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
pmu_intel_alloc(unsigned int *counterp, unsigned int *widthp, uint64_t config)
{
    int fixed = pmu_intel_fixed_for(config);
    uint32_t avail, pick;

    assert_intr_disabled();

    if (fixed >= 0 && (pmu_intel_info.fixed_mask & (1U << fixed))
        && !((pmu_intel_fixed_used | pmu_intel_fw_fixed) & (1U << fixed))) {
        pmu_intel_fixed_used |= 1U << fixed;
        *counterp = PMU_INTEL_FIXED_BASE + fixed;
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
    *counterp = __builtin_ctz(pick);
    *widthp = pmu_intel_info.gp_width;
    return 0;
}

static void
pmu_intel_free(unsigned int counter)
{
    assert_intr_disabled();

    if (counter >= PMU_INTEL_FIXED_BASE) {
        pmu_intel_fixed_used &= ~(1U << (counter - PMU_INTEL_FIXED_BASE));
    } else {
        pmu_intel_gp_used &= ~(1U << counter);
    }
}

/* The GLOBAL_* bit of a counter. */
static uint64_t
pmu_intel_global_bit(unsigned int counter)
{
    return 1ULL << counter;  /* fixed counters start at bit 32 */
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
pmu_intel_write_count(unsigned int counter, uint64_t n)
{
    uint64_t value, mask;

    if (counter >= PMU_INTEL_FIXED_BASE) {
        value = -n & bitops_width_mask(pmu_intel_info.fixed_width);
        cpu_set_msr(PMU_INTEL_MSR_FIXED_CTR(counter - PMU_INTEL_FIXED_BASE),
                    value);
        return value;
    }

    mask = bitops_width_mask(pmu_intel_info.gp_width);
    value = -n & mask;

    if (pmu_intel_info.full_width_writes) {
        cpu_set_msr(PMU_INTEL_MSR_A_PMC(counter), value);
        return value;
    }

    cpu_set_msr(PMU_INTEL_MSR_PMC(counter), value & 0xffffffffULL);
    return (uint64_t)(int64_t)(int32_t)(uint32_t)value & mask;
}

static uint64_t
pmu_intel_read(unsigned int counter)
{
    assert_intr_disabled();

    if (counter >= PMU_INTEL_FIXED_BASE) {
        return cpu_get_msr(PMU_INTEL_MSR_FIXED_CTR(counter
                                                   - PMU_INTEL_FIXED_BASE));
    }

    return cpu_get_msr(PMU_INTEL_MSR_PMC(counter));
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
pmu_intel_start_value(const struct pmu_x86_cpu *cpu, unsigned int counter)
{
    if (cpu->batch && pmu_intel_start_gap == 0) {
        return pmu_intel_read(counter);
    }

    return pmu_intel_write_count(counter, pmu_intel_start_gap);
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
pmu_intel_start(unsigned int counter, uint64_t config)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = pmu_intel_global_bit(counter);
    uint64_t value;

    assert_intr_disabled();

    if (!pmu_intel_has_pmi()) {
        value = pmu_intel_start_value(cpu, counter);
        pmu_intel_evtsel_set(cpu, counter, config | PMU_X86_EVTSEL_EN);
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

    if (counter >= PMU_INTEL_FIXED_BASE) {
        unsigned int field = PMU_INTEL_FIXED_PMI;

        field |= (config & PMU_X86_EVTSEL_OS) ? PMU_INTEL_FIXED_OS : 0;
        field |= (config & PMU_X86_EVTSEL_USR) ? PMU_INTEL_FIXED_USR : 0;
        pmu_intel_fixed_ctrl_set(cpu, counter - PMU_INTEL_FIXED_BASE, field);
    } else {
        pmu_intel_evtsel_set(cpu, counter, config | PMU_X86_EVTSEL_EN
                                          | PMU_X86_EVTSEL_INT);
    }

    value = pmu_intel_start_value(cpu, counter);
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
pmu_intel_stop(unsigned int counter)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = pmu_intel_global_bit(counter);

    assert_intr_disabled();

    if (!pmu_intel_has_pmi()) {
        pmu_intel_evtsel_set(cpu, counter, 0);
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
pmu_intel_config_of(const struct pmu_x86_cpu *cpu, unsigned int counter)
{
    if (counter >= PMU_INTEL_MAX_GP) {
        return 0;
    }

    return cpu->evtsel[counter];
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
pmu_intel_preset(unsigned int counter, uint64_t n)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = pmu_intel_global_bit(counter);

    assert_intr_disabled();

    /* The remainder of a period may be shorter than the model allows. */
    n = MAX(n, pmu_intel_min_period(pmu_intel_config_of(cpu, counter)));
    n = MIN(n, pmu_intel_dev.max_period);

    if (!cpu->pmi && (cpu->global_hw & bit)) {
        cpu->unguarded |= bit;
    }

    return pmu_intel_write_count(counter, n);
}

/* The top bit of a preset counter reads 0 once it wrapped (pmu_x86.h). */
static bool
pmu_intel_wrapped(unsigned int counter)
{
    unsigned int width = (counter >= PMU_INTEL_FIXED_BASE)
                         ? pmu_intel_info.fixed_width
                         : pmu_intel_info.gp_width;

    return !(pmu_intel_read(counter) & (1ULL << (width - 1)));
}

/* Take back the overflows the PMI has not reported yet. */
static uint64_t
pmu_intel_overflow_consume(uint64_t ids)
{
    assert_intr_disabled();

    /* Version 1 has no status (and no PMI: never called). */
    if (!pmu_intel_has_pmi()) {
        return 0;
    }

    /* A counter's id is its GLOBAL_STATUS bit: one read for the batch. */
    return pmu_x86_global_consume(ids, PMU_INTEL_MSR_GLOBAL_STATUS,
                                  PMU_INTEL_MSR_GLOBAL_OVF);
}

const struct perfmon_dev_ops pmu_intel_ops = {
    .translate = pmu_intel_translate,
    .alloc = pmu_intel_alloc,
    .free = pmu_intel_free,
    .start = pmu_intel_start,
    .stop = pmu_intel_stop,
    .read = pmu_intel_read,
    .overflow_consume = pmu_intel_overflow_consume,
    .handle_overflow_intr = pmu_x86_global_intr,
    .preset = pmu_intel_preset,
    .min_period = pmu_intel_min_period,
    .batch_begin = pmu_x86_batch_begin,
    .batch_end = pmu_x86_batch_end,
};

/* What the x86 layer drives; setup adds the counters that exist. */
struct pmu_x86_vendor pmu_intel_vendor = {
    .dev = &pmu_intel_dev,
    .msr_global_ctrl = PMU_INTEL_MSR_GLOBAL_CTRL,
    .msr_global_status = PMU_INTEL_MSR_GLOBAL_STATUS,
    .msr_global_clear = PMU_INTEL_MSR_GLOBAL_OVF,
    .wrapped = pmu_intel_wrapped,
};

/*
 * The longest preset every counter takes (SDM vol. 3B, 21.2.6): 2^31
 * through the sign-extending IA32_PMCx, else 2^(width - 1), so that a
 * preset counter holds a negative number of its width on every path (and
 * as AMD's top-bit counters do); perfmon makes longer periods from
 * several. 0 without a PMI (version 1): no sampling.
 */
uint64_t
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
unsigned int
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
