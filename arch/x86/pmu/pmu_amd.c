/*
 * AMD core performance counter driver.
 *
 * MSR numbers and layouts: AMD APM vol. 2, section 13.2 (13.2.1
 * PerfEvtSel/PERF_CTL, 13.2.2 PerfCtr/PERF_CTR, the PerfMonV2 global
 * control and status registers) and the family PPRs, "Core Performance
 * Monitor Counters" (event codes). Where a behaviour is known only from a
 * hypervisor's implementation, the comment says so.
 *
 * Counter allocation is global (perfmon's device lock serializes alloc and
 * free): a slot gets the same counter on every CPU. Per CPU, the driver
 * keeps shadows of what it wrote to the control registers (PerfEvtSel and
 * PerfCntrGlobalCtl, in the x86 layer's struct pmu_x86_cpu), so that it
 * never reads one back: a switch between threads counting the same events
 * costs counter reads only (perfmon keeps those counters running), and a
 * start or stop costs writes only. The PerfMonV2 PMI loop, the statistics
 * and the MSR probe are the x86 layer's too (pmu_x86.c); detection and the
 * generations' event tables are pmu_amd_detect.c's; the MSR probe, the
 * per-CPU setup and the registration pmu_amd_setup.c's.
 *
 * This file is also compiled unchanged into the host tests, against a
 * register-level model of the AMD PMU (arch/x86/pmu/model/pmu_model_amd.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <pmu/pmu_amd.h>
#include <pmu/pmu_amd_i.h>
#include <pmu/pmu_x86.h>
#include <pmu/pmu_x86_test.h>

/* PerfEvtSel (APM vol. 2, figure 13-7); the other bits are PMU_X86_'s. */
#define PMU_AMD_EVTSEL_EVENT_LO     0xffULL
#define PMU_AMD_EVTSEL_UMASK        (0xffULL << 8)
#define PMU_AMD_EVTSEL_EVENT_HI     (0xfULL << 32)

/*
 * Bits a raw code may carry. The ring bits come from the flags; INT and
 * EN are the driver's; GuestOnly and HostOnly (bits 40, 41) are never
 * set, since with SVM off either one may stop the counter and some
 * hypervisors raise #GP on HostOnly; the rest is reserved.
 */
#define PMU_AMD_RAW_ALLOWED         (PMU_AMD_EVTSEL_EVENT_LO            \
                                     | PMU_AMD_EVTSEL_EVENT_HI          \
                                     | PMU_AMD_EVTSEL_UMASK             \
                                     | PMU_X86_EVTSEL_EDGE              \
                                     | PMU_X86_EVTSEL_INV               \
                                     | PMU_X86_EVTSEL_CMASK)

struct pmu_amd_info pmu_amd_info;
enum pmu_amd_ovf pmu_amd_ovf;
struct perfmon_dev pmu_amd_dev;

_Static_assert(PMU_AMD_MAX_COUNTERS <= PMU_X86_MAX_EVTSEL,
               "the shadows hold every counter's PerfEvtSel");

/* Allocation state, under perfmon's device lock. */
static uint32_t pmu_amd_used;

/*
 * The least period a counter is preset to: never 1, an overflow on the
 * very next event (Linux's floor as well, for every x86 PMU).
 */
#define PMU_AMD_MIN_PERIOD          2

static uint64_t pmu_amd_start_gap;

/*
 * The shadows (struct pmu_x86_cpu) as this driver uses them: global_ctrl
 * holds the counters started and not stopped in every mode, and is what
 * PerfCntrGlobalCtl holds with PerfMonV2 (written at once: no batching,
 * so global_hw and stopped stay 0); evtsel is each started counter's
 * PerfEvtSel, which the top-bit overflow path restores after re-arming
 * the counter; pmi is set while the PMI handler runs (with PerfMonV2,
 * counting off).
 */

const struct pmu_amd_info *
pmu_amd_get_info(void)
{
    return &pmu_amd_info;
}

enum pmu_amd_ovf
pmu_amd_get_ovf_mode(void)
{
    return pmu_amd_ovf;
}

/* ------------------------------------------------------------------ */
/* Registers                                                           */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* perfmon device operations                                           */
/* ------------------------------------------------------------------ */

static int
pmu_amd_translate(uint64_t *configp, uint64_t id, unsigned int flags)
{
    /* Checked as 64 bits: event select 11:8 is bits 35:32. */
    uint64_t code = id;

    if (flags & PERFMON_EF_RAW) {
        if (pmu_x86_raw_check(code, PMU_AMD_RAW_ALLOWED) != 0) {
            return EINVAL;
        }

        *configp = code | pmu_x86_ring_bits(flags);
        return 0;
    }

    if (id >= PERFMON_NR_GENERIC_EVENTS) {
        return EINVAL;
    }

    code = pmu_amd_generic_code(pmu_amd_info.gen, id);

    if (code == 0) {
        return ENODEV;
    }

    *configp = code | pmu_x86_ring_bits(flags);
    return 0;
}

/*
 * Family 15h (Bulldozer to Excavator) counts some events on some counters
 * only (BKDG for AMD family 15h processors, "Core Performance Counter
 * Events": each event's PERF_CTL restriction): the events of 060h to 09Fh
 * and 0D0h to 0DFh count on PERF_CTL[2:0] only, the floating-point events
 * (000h to 00Fh) on PERF_CTL[5:3] only. Elsewhere any counter counts any
 * event. Return the counters that count config.
 */
static uint32_t
pmu_amd_allowed(uint64_t config)
{
    uint32_t all = (uint32_t)pmu_amd_counter_bits();
    unsigned int event = (unsigned int)((config & PMU_AMD_EVTSEL_EVENT_LO)
                                        | ((config & PMU_AMD_EVTSEL_EVENT_HI)
                                           >> 24));

    if (pmu_amd_info.family != 0x15) {
        return all;
    }

    if ((event >= 0x060 && event <= 0x09f)
        || (event >= 0x0d0 && event <= 0x0df)) {
        return all & 0x07;
    }

    if (event <= 0x00f) {
        return all & 0x38;
    }

    return all;
}

/*
 * A free counter that counts config. On family 15h an event that any
 * counter counts takes the highest free one, so that the low three stay
 * for cycles (PMCx076) and the other events confined to them, which are
 * more common than the floating-point ones confined to the high three.
 */
static int
pmu_amd_alloc(unsigned int *counterp, unsigned int *widthp, uint64_t config)
{
    uint32_t all = (uint32_t)pmu_amd_counter_bits();
    uint32_t allowed = pmu_amd_allowed(config);
    uint32_t avail = allowed & ~(pmu_amd_used | pmu_amd_fw);
    unsigned int n;

    assert_intr_disabled();

    if (avail == 0) {
        return EAGAIN;
    }

    if (pmu_amd_info.family == 0x15 && allowed == all) {
        n = 31 - __builtin_clz(avail);
    } else {
        n = __builtin_ctz(avail);
    }

    pmu_amd_used |= 1U << n;
    *counterp = n;
    *widthp = pmu_amd_width();
    return 0;
}

static void
pmu_amd_free(unsigned int counter)
{
    assert_intr_disabled();

    pmu_amd_used &= ~(1U << counter);
}

/*
 * The value a counter starts from: zero or start_gap events before the
 * wrap perfmon sees, with the flag bit set in top-bit mode.
 */
static uint64_t
pmu_amd_start_value(void)
{
    uint64_t value = -pmu_amd_start_gap & pmu_amd_width_mask();

    if (pmu_amd_ovf == PMU_AMD_OVF_TOP_BIT) {
        value |= PMU_AMD_TOP_BIT;
    }

    return value;
}

/*
 * Program and enable. A stopped counter has PerfEvtSel 0 and, with
 * PerfMonV2, its global enable bit clear (setup and stop leave it so), so
 * the counter and its status can be written without EN to clear first;
 * PerfEvtSel goes last but for the global enable, which starts it.
 */
static uint64_t
pmu_amd_start(unsigned int counter, uint64_t config)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = 1ULL << counter;
    uint64_t value = pmu_amd_start_value();
    uint64_t evtsel = config | PMU_X86_EVTSEL_EN
                      | (pmu_amd_has_pmi() ? PMU_X86_EVTSEL_INT : 0);

    assert_intr_disabled();

    cpu_set_msr(pmu_amd_msr_ctr(counter), value);

    if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL) {
        cpu_set_msr(PMU_AMD_MSR_GLOBAL_STATUS_CLR, bit);
    }

    cpu_set_msr(pmu_amd_msr_ctl(counter), evtsel);
    cpu->evtsel[counter] = evtsel;
    cpu->global_ctrl |= bit;

    if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL) {
        cpu_set_msr(PMU_AMD_MSR_GLOBAL_CTL, cpu->global_ctrl);
    }

    return value;
}

static void
pmu_amd_stop(unsigned int counter)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = 1ULL << counter;

    assert_intr_disabled();

    cpu->global_ctrl &= ~bit;
    cpu->unguarded &= ~bit;     /* its status bit is cleared below */

    if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL) {
        cpu_set_msr(PMU_AMD_MSR_GLOBAL_CTL, cpu->global_ctrl);
    }

    cpu_set_msr(pmu_amd_msr_ctl(counter), 0);
    cpu->evtsel[counter] = 0;

    /*
     * An overflow of this use must not be reported to the next one: the
     * status bit is cleared here; in top-bit mode the flag stays clear
     * in a stopped counter, which no handler looks at, and start sets
     * it again.
     */
    if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL) {
        cpu_set_msr(PMU_AMD_MSR_GLOBAL_STATUS_CLR, bit);
    }
}

/*
 * Sampling: make the running counter overflow after n more events, n
 * limited to [2, max_period] (a remainder of 1, what is left of a period
 * when a thread comes back, is raised: the sample comes an event later,
 * the count stays exact): 2^48 - n, which has bits 47 (the top-bit
 * mode's flag) and 46 set. Return the value written.
 *
 * An overflow pending on the counter is discarded: it happened before
 * the write, and reported later against the preset value it would add a
 * whole 2^width. In top-bit mode the write does it (the flag is set
 * again, so neither the PMI nor overflow_consume sees a wrap). With
 * PerfMonV2 the write leaves the status bit: in the PMI, counting is off
 * and the handler cleared it before reporting; a stopped counter's bit
 * was cleared by its stop; a counter that counts is left unguarded
 * (pmu_x86.h): its status bit counts only once the counter wrapped since
 * its preset.
 */
static uint64_t
pmu_amd_preset(unsigned int counter, uint64_t n)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t bit = 1ULL << counter;
    uint64_t value;

    assert_intr_disabled();

    n = MAX(n, PMU_AMD_MIN_PERIOD);
    n = MIN(n, pmu_amd_max_period());
    value = -n & PMU_AMD_COUNTER_MASK;

    if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL && !cpu->pmi
        && (cpu->global_ctrl & bit)) {
        cpu->unguarded |= bit;
    }

    cpu_set_msr(pmu_amd_msr_ctr(counter), value);
    return value;
}

/* The least period a counter is preset to, whatever the event. */
static uint64_t
pmu_amd_min_period(uint64_t config)
{
    (void)config;
    return PMU_AMD_MIN_PERIOD;
}

static uint64_t
pmu_amd_read(unsigned int counter)
{
    assert_intr_disabled();

    return cpu_get_msr(pmu_amd_msr_ctr(counter)) & PMU_AMD_COUNTER_MASK;
}

/*
 * Top-bit mode: set the flag of a counter that wrapped, keeping what it
 * counted. The counter is stopped meanwhile (PerfEvtSel EN clear), so
 * that nothing it counts between the read and the write is lost; the few
 * events in that window go uncounted, as by any stopped counter.
 */
static void
pmu_amd_rearm(unsigned int counter)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint32_t ctr = pmu_amd_msr_ctr(counter);
    uint64_t value;

    cpu_set_msr(pmu_amd_msr_ctl(counter), 0);
    value = cpu_get_msr(ctr) & PMU_AMD_COUNTER_MASK;
    cpu_set_msr(ctr, value | PMU_AMD_TOP_BIT);
    cpu_set_msr(pmu_amd_msr_ctl(counter), cpu->evtsel[counter]);
}

/*
 * Take back the overflows the PMI has not reported yet, of the counters in
 * ids (bit n for counter n). PerfMonV2: one status read for the batch.
 * Top-bit mode: each counter's bit 47 tells (a read per counter).
 */
static uint64_t
pmu_amd_overflow_consume(uint64_t ids)
{
    uint64_t status = 0;

    assert_intr_disabled();

    if (pmu_amd_ovf == PMU_AMD_OVF_TOP_BIT) {
        while (ids != 0) {
            unsigned int n = __builtin_ctzll(ids);

            ids &= ids - 1;

            if (pmu_amd_top_bit_cleared(n)) {
                pmu_amd_rearm(n);
                status |= 1ULL << n;
            }
        }

        return status;
    }

    if (pmu_amd_ovf != PMU_AMD_OVF_GLOBAL) {
        return 0;
    }

    return pmu_x86_global_consume(ids, PMU_AMD_MSR_GLOBAL_STATUS,
                                  PMU_AMD_MSR_GLOBAL_STATUS_CLR);
}

/*
 * PMI without PerfMonV2: no status register, so every started counter is
 * read and those whose flag is clear are re-armed and reported, once each.
 * A counter that perfmon reloads from the report with a short period may
 * wrap again before the handler returns: its flag is clear again and its
 * request, with the LVT entry already unmasked, is the next PMI, which
 * reports it.
 */
static void
pmu_amd_top_bit_intr(const struct perfmon_intr_ctx *ctx)
{
    uint64_t started = pmu_x86_cpu_local()->global_ctrl;
    uint64_t wrapped = 0;

    for (uint64_t mask = started; mask != 0; mask &= mask - 1) {
        unsigned int n = __builtin_ctzll(mask);

        if (pmu_amd_top_bit_cleared(n)) {
            pmu_amd_rearm(n);
            wrapped |= 1ULL << n;
        }
    }

    if (wrapped == 0) {
        pmu_x86_pmi_spurious();
    }

    pmu_x86_report(wrapped, ctx);
}

/*
 * The PMI. With PerfMonV2, the x86 layer's loop over the global status
 * (pmu_x86_global_intr): status bits besides the counters' (LBR frozen,
 * bits some microcode sets in error) are neither reported nor written to
 * the clear register, which some hypervisors fault on for bits they do
 * not know. Without it, the top-bit loop above.
 *
 * AMD CPUs do not mask the LVT entry on delivery, but some hypervisors
 * did (KVM, 2023 to 2024): unmasking it again is one write that keeps the
 * PMI alive there. It comes before anything can overflow again: perfmon
 * reloads a sampling counter from the report (preset), and with a short
 * period it may overflow before the handler returns; that request,
 * finding the entry masked, would raise nothing, and in top-bit mode
 * nothing else would look at the counter until its next use. So in
 * top-bit mode (counters keep running) the entry is unmasked first, and
 * with PerfMonV2 before the global control counts again.
 */
static void
pmu_amd_handle_overflow_intr(const struct perfmon_intr_ctx *ctx)
{
    struct pmu_x86_cpu *cpu;

    assert_intr_disabled();

    if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL) {
        pmu_x86_global_intr(ctx);
        return;
    }

    cpu = pmu_x86_cpu_local();
    pmu_x86_pmi_enter(cpu);
    lapic_pmc_unmask();
    pmu_amd_top_bit_intr(ctx);
    cpu->pmi = false;
}

const struct perfmon_dev_ops pmu_amd_ops = {
    .translate = pmu_amd_translate,
    .alloc = pmu_amd_alloc,
    .free = pmu_amd_free,
    .start = pmu_amd_start,
    .stop = pmu_amd_stop,
    .read = pmu_amd_read,
    .overflow_consume = pmu_amd_overflow_consume,
    .handle_overflow_intr = pmu_amd_handle_overflow_intr,
    .preset = pmu_amd_preset,
    .min_period = pmu_amd_min_period,
};

int
pmu_amd_set_start_gap(uint64_t gap)
{
    if ((gap != 0 && gap < PMU_AMD_START_GAP_MIN)
        || gap > pmu_amd_width_mask()) {
        return EINVAL;
    }

    pmu_amd_start_gap = gap;
    return 0;
}

/*
 * What the x86 layer drives (its PMI loop and the global registers only
 * in PMU_AMD_OVF_GLOBAL); setup adds the counters that exist.
 */
struct pmu_x86_vendor pmu_amd_vendor = {
    .dev = &pmu_amd_dev,
    .msr_global_ctrl = PMU_AMD_MSR_GLOBAL_CTL,
    .msr_global_status = PMU_AMD_MSR_GLOBAL_STATUS,
    .msr_global_clear = PMU_AMD_MSR_GLOBAL_STATUS_CLR,
    .wrapped = pmu_amd_top_bit_cleared,
};
