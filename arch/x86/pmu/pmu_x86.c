/*
 * The x86 PMU layer, see pmu_x86.h.
 *
 * References for the global registers the PMI loop drives: Intel SDM vol.
 * 3B, 21.2.2 and 21.2.4 (IA32_PERF_GLOBAL_CTRL, _STATUS, _OVF_CTRL); AMD
 * APM vol. 2, 13.2 (PerfCntrGlobalCtl, PerfCntrGlobalStatus,
 * PerfCntrGlobalStatusClr). The two work alike: a counter counts while its
 * global enable bit is set, its overflow sets its status bit, and writing
 * 1 to that bit of the clear register clears it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/printf.h>
#include <kern/syscnt.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <pmu/pmu_x86.h>
#include <machine/trap.h>

/*
 * A bound on the events one counter counts per cycle, for the poll period
 * of a PMU without an overflow interrupt: the events that count several
 * per cycle (uops, dispatch and retire events, cycles with a counter
 * mask) stay a few; 100 leaves a wide margin. Events that need a merged
 * counter pair (AMD's "large increment" ones) are not offered.
 */
#define PMU_X86_MAX_EVENTS_PER_CYCLE    100

/* PMI handler passes before the status is forced clear. */
#define PMU_X86_PMI_MAX_LOOPS           16

struct pmu_x86_cpu pmu_x86_cpu __percpu;

static const struct pmu_x86_vendor *pmu_x86_registered;
static bool pmu_x86_syscnts_registered;

static struct syscnt pmu_x86_sc_pmis __percpu;
static struct syscnt pmu_x86_sc_spurious __percpu;
static struct syscnt pmu_x86_sc_giveups __percpu;

int
pmu_x86_raw_check(uint64_t code, uint64_t allowed)
{
    if ((code & ~allowed) != 0) {
        return EINVAL;
    }

    if ((code & PMU_X86_EVTSEL_INV) && !(code & PMU_X86_EVTSEL_CMASK)) {
        return EINVAL;
    }

    return 0;
}

/* ------------------------------------------------------------------ */
/* Batching                                                            */
/* ------------------------------------------------------------------ */

void
pmu_x86_batch_begin(void)
{
    assert_intr_disabled();

    pmu_x86_cpu_local()->batch = true;
}

void
pmu_x86_batch_end(void)
{
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();

    assert_intr_disabled();

    cpu->batch = false;
    pmu_x86_global_flush(cpu, pmu_x86_registered->msr_global_ctrl,
                         pmu_x86_registered->msr_global_clear);
}

/* ------------------------------------------------------------------ */
/* Overflow interrupt                                                  */
/* ------------------------------------------------------------------ */

void
pmu_x86_report(uint64_t mask, const struct perfmon_intr_ctx *ctx)
{
    assert_intr_disabled();

    while (mask != 0) {
        unsigned int n = __builtin_ctzll(mask);

        mask &= mask - 1;
        perfmon_sample_report_overflow(pmu_x86_registered->dev, n, ctx);
    }
}

uint64_t
pmu_x86_stale_drop(struct pmu_x86_cpu *cpu, uint64_t status)
{
    uint64_t found = status & cpu->unguarded;

    assert_intr_disabled();

    cpu->unguarded &= ~found;

    for (; found != 0; found &= found - 1) {
        unsigned int n = __builtin_ctzll(found);

        if (!pmu_x86_registered->wrapped(n)) {
            status &= ~(1ULL << n);
        }
    }

    return status;
}

void
pmu_x86_pmi_enter(struct pmu_x86_cpu *cpu)
{
    assert_intr_disabled();

    syscnt_inc(cpu_local_ptr(pmu_x86_sc_pmis));
    cpu->pmi = true;
}

void
pmu_x86_pmi_spurious(void)
{
    assert_intr_disabled();

    syscnt_inc(cpu_local_ptr(pmu_x86_sc_spurious));
}

/*
 * Acknowledging before reporting matters for sampling: perfmon reloads a
 * sampling counter from the report (preset), and the overflow bit of a
 * reloaded counter must be clear for its next sample (Intel SDM vol. 3B,
 * 21.2.2, IA32_PERF_GLOBAL_OVF_CTRL). Had the clear come after the
 * report, it would clear the bit of an overflow of the new period; here
 * counting is off during the report, and the next overflow of a preset
 * counter sets its bit and requests a new PMI after the handler.
 *
 * Nothing counts once the global control is zero, so a counter overflows
 * at most once per PMI: a bit that stays set after its clear, or shows up
 * again, is the same overflow (a stuck bit, a hypervisor replaying it),
 * and reporting it again would add 2^width each pass. Each counter is
 * reported once per PMI; bits still there after the last pass are forced
 * clear and reported to no one, and the give-up is counted so that it
 * shows. A stale bit of an unguarded counter (pmu_x86_stale_drop) is
 * cleared and not reported: its overflow came before the counter's
 * preset. A PMI that reports nothing is counted as spurious. Status
 * bits outside ack_mask are neither reported nor cleared: some
 * hypervisors fault on clearing bits they do not know.
 *
 * The LVT entry is unmasked before counting resumes: Intel masks it on
 * every PMI (SDM vol. 3A, 11.5.1), some hypervisors did on AMD too, and a
 * counter preset to a short period may overflow right after the enable;
 * a request that finds the entry masked raises nothing. Counting resumes
 * from the shadow: a freeze (Intel's FREEZE_PERFMON_ON_PMI) may have
 * cleared the register itself.
 */
void
pmu_x86_global_intr(const struct perfmon_intr_ctx *ctx)
{
    const struct pmu_x86_vendor *vendor = pmu_x86_registered;
    struct pmu_x86_cpu *cpu = pmu_x86_cpu_local();
    uint64_t counters = vendor->counters;
    uint64_t ack_mask = vendor->ack_mask;
    uint64_t status, fresh, reported = 0, told = 0;

    assert_intr_disabled();

    pmu_x86_pmi_enter(cpu);
    cpu_set_msr(vendor->msr_global_ctrl, 0);
    status = cpu_get_msr(vendor->msr_global_status) & ack_mask;

    for (unsigned int loops = 0; status != 0; loops++) {
        if (loops == PMU_X86_PMI_MAX_LOOPS) {
            cpu_set_msr(vendor->msr_global_clear, ack_mask);
            syscnt_inc(cpu_local_ptr(pmu_x86_sc_giveups));
            break;
        }

        cpu_set_msr(vendor->msr_global_clear, status);
        fresh = status & counters & ~reported;

        if (fresh & cpu->unguarded) {
            fresh = pmu_x86_stale_drop(cpu, fresh);
        }

        pmu_x86_report(fresh, ctx);
        told |= fresh;
        reported |= status & counters;
        status = cpu_get_msr(vendor->msr_global_status) & ack_mask;
    }

    if (told == 0) {
        pmu_x86_pmi_spurious();
    }

    lapic_pmc_unmask();
    cpu->pmi = false;
    cpu_set_msr(vendor->msr_global_ctrl, cpu->global_ctrl);
}

void
pmu_x86_lvt_setup(void)
{
    assert_intr_disabled();

    if (perfmon_nmi_enabled()) {
        lapic_pmc_setup_nmi();
    } else {
        lapic_pmc_setup(TRAP_PMI);
    }
}

uint64_t
pmu_x86_nr_pmis(unsigned int cpu)
{
    return syscnt_read(percpu_ptr(pmu_x86_sc_pmis, cpu));
}

uint64_t
pmu_x86_nr_spurious(unsigned int cpu)
{
    return syscnt_read(percpu_ptr(pmu_x86_sc_spurious, cpu));
}

uint64_t
pmu_x86_nr_pmi_giveups(unsigned int cpu)
{
    return syscnt_read(percpu_ptr(pmu_x86_sc_giveups, cpu));
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

/* Write value to an MSR and read it back, through the safe accessors. */
static int
pmu_x86_probe_msr(uint32_t msr, uint64_t value, uint32_t *msrp)
{
    uint64_t readback;
    int error;

    *msrp = msr;
    error = cpu_set_msr_safe(msr, value);

    if (error) {
        return error;
    }

    error = cpu_get_msr_safe(msr, &readback);

    if (error) {
        return error;
    }

    return (readback == value) ? 0 : ENODEV;
}

int
pmu_x86_probe(const struct pmu_x86_probe_write *writes,
              unsigned int nr_writes, uint32_t msr_status,
              uint32_t msr_clear, uint32_t *msrp)
{
    uint64_t status;
    int error;

    for (unsigned int i = 0; i < nr_writes; i++) {
        error = pmu_x86_probe_msr(writes[i].msr, writes[i].value, msrp);

        if (error) {
            return error;
        }
    }

    if (msr_status == 0) {
        return 0;
    }

    *msrp = msr_status;
    error = cpu_get_msr_safe(msr_status, &status);

    if (error) {
        return error;
    }

    *msrp = msr_clear;
    return cpu_set_msr_safe(msr_clear, 0);
}

void
pmu_x86_cpu_reset(void)
{
    *pmu_x86_cpu_local() = (struct pmu_x86_cpu){ 0 };
}

/*
 * The statistics are registered once: should a driver's registration
 * fail after its probe passed, the next driver counts in the same
 * syscnts, under the first one's names.
 */
static void
pmu_x86_register_syscnts(const char *name)
{
    char buf[SYSCNT_NAME_SIZE];

    if (pmu_x86_syscnts_registered) {
        return;
    }

    pmu_x86_syscnts_registered = true;

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        snprintf(buf, sizeof(buf), "%s_pmis/%u", name, cpu);
        syscnt_register(percpu_ptr(pmu_x86_sc_pmis, cpu), buf);
        snprintf(buf, sizeof(buf), "%s_spurious/%u", name, cpu);
        syscnt_register(percpu_ptr(pmu_x86_sc_spurious, cpu), buf);
        snprintf(buf, sizeof(buf), "%s_pmi_giveup/%u", name, cpu);
        syscnt_register(percpu_ptr(pmu_x86_sc_giveups, cpu), buf);
    }
}

int
pmu_x86_register(const struct pmu_x86_vendor *vendor,
                 void (*setup_local)(void *arg))
{
    struct perfmon_dev *dev = vendor->dev;
    int error;

    pmu_x86_register_syscnts(dev->name);
    pmu_x86_registered = vendor;
    xcall_broadcast(setup_local, NULL);

    dev->max_rate = cpu_get_freq() / CLOCK_HZ * PMU_X86_MAX_EVENTS_PER_CYCLE;
    dev->sw = false;
    error = perfmon_dev_register(dev);

    if (error) {
        log_err("%s: registration failed: %s", dev->name,
                errno_name(error));
        pmu_x86_registered = NULL;
        return error;
    }

    return 0;
}
