/*
 * Helpers of the hardware PMU suites, see pmu_hw_util.h. What they need
 * of the registered driver comes from the x86 drivers' test interface
 * (pmu/pmu_x86_test.h); the vendors are named here only in a skip's
 * diagnostic.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <pmu/pmu_amd.h>
#include <pmu/pmu_intel.h>
#include <pmu/pmu_x86.h>
#include <pmu/pmu_x86_test.h>

#include "pmu_hw_util.h"

/* ------------------------------------------------------------------ */
/* The registered driver                                               */
/* ------------------------------------------------------------------ */

const struct pmu_x86_test *
hw_require_pmu(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);
    const struct pmu_x86_test *vendor = pmu_x86_test_get();

    if (dev == NULL) {
        test_diag("Intel: CPUID.0AH version %u; AMD: %s, PerfCtrExtCore %s, "
                  "PerfMonV2 %s", pmu_intel_get_info()->version,
                  pmu_amd_gen_name(pmu_amd_get_info()->gen),
                  pmu_amd_get_info()->ext_core ? "yes" : "no",
                  pmu_amd_get_info()->perfmon_v2 ? "yes" : "no");
        test_skip("no hardware PMU registered (no Intel architectural "
                  "PMU, no AMD PMU its probe proved)");
    }

    if (vendor == NULL || vendor->dev != dev) {
        test_fail_at(__FILE__, __LINE__, "hardware device %s: unknown to "
                     "this suite", dev->name);
    }

    return vendor;
}

bool
hw_event_supported(unsigned int id, unsigned int flags)
{
    return perfmon_event_check(id, flags) == 0;
}

void
hw_require_event(unsigned int id, unsigned int flags, const char *name)
{
    int error = perfmon_event_check(id, flags);

    if (error != 0) {
        test_diag("%s: perfmon_event_check: error %d", name, error);
        test_skip("event unavailable on this PMU");
    }
}

/* ------------------------------------------------------------------ */
/* The loop and its ranges                                             */
/* ------------------------------------------------------------------ */

/*
 * Exactly HW_LOOP_INSNS instructions per iteration: 8 adds, dec, jnz; one
 * of them (jnz) a branch. The adds form one dependency chain.
 */
void
hw_loop(uint64_t iters)
{
    uint64_t scratch = 0;

    __asm__ volatile("1:\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "addq $1, %1\n" "addq $1, %1\n"
                     "decq %0\n"
                     "jnz 1b\n"
                     : "+r"(iters), "+r"(scratch) : : "cc");
}

/*
 * CPUID.1:ECX[31], which real processors leave 0 and hypervisors set
 * (Intel SDM vol. 2A, CPUID, table 3-10; AMD APM vol. 3, CPUID Fn0000_0001
 * ECX[31], "reserved for use by hypervisor").
 */
bool
hw_under_hypervisor(void)
{
    uint32_t eax, ebx, ecx, edx;

    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);
    return (ecx & CPU_CPUID1_ECX_HYPERVISOR) != 0;
}

/*
 * What an event must count over hw_loop(iters), which took tsc TSC ticks.
 *
 * Instructions (Intel table 21-1 "Instructions Retired"; AMD PMCx0C0
 * "Retired Instructions"): the loop retires exactly 10 per iteration (a
 * fused dec/jnz still retires two instructions); up to 2% more for the
 * window's own code.
 *
 * Branches (Intel "Branch Instructions Retired"; AMD PMCx0C2 "Retired
 * Branch Instructions"): exactly one jnz per iteration, taken or not; up
 * to 10% more for the window's own code.
 *
 * Core cycles (Intel "UnHalted Core Cycles"; AMD PMCx076 "Cycles not in
 * Halt"): an iteration is at least 9 operations (dec and jnz may fuse
 * into one) and no core of either vendor dispatches more than 8 per
 * cycle, so it takes more than one cycle. At most 5 cycles per
 * instruction: the chain of 8 dependent adds needs about 8 cycles per
 * iteration, the rest leaves room for interrupts and a hypervisor.
 *
 * Branch misses (Intel "Branch Misses Retired", AMD PMCx0C3): the loop's
 * one branch is mispredicted at most at its exit; the window's own
 * branches are far fewer than 0.1N (kvm-unit-tests' bound).
 *
 * Cache references and misses (Intel "LLC Reference/Misses"; AMD 0x077D/
 * 0x077E before Zen, L2 requests 0xFF60 and misses 0x0964 from Zen): the
 * loop touches no memory, so only the window's code and interrupts
 * count; N is far above that and far below a wrap.
 *
 * Reference cycles, the loose range for both vendors: Intel's fixed
 * counter 2 counts at the TSC rate (see HW_BOUND_REF_INTEL); AMD's
 * PMCx120 (Zen 4 and later, the only generation the driver maps it on)
 * counts unhalted cycles at the P0 frequency (Zen 4 PPR, "PMCx120"),
 * which the invariant TSC (CPUID Fn8000_0007 EDX[8]) counts at too on
 * the processors we know of; not verified on hardware here, hence the
 * loose [0.5, 1.1] of the TSC ticks, which also allows for a guest whose
 * counter stops while the host runs but whose TSC does not.
 *
 * Intel reference cycles on fixed counter 2: IA32_FIXED_CTR2 increments
 * at the TSC frequency whenever the processor is not halted (SDM vol.
 * 3B, "Counting Clocks"); the loop never halts: [0.9, 1.05] of the TSC
 * ticks on bare metal, the 5% above for the reads around the TSC window;
 * [0.5, 1.1] under a hypervisor, as above.
 *
 * Topdown slots (Intel fixed counter 3): the issue slots of the unhalted
 * cycles, the pipeline width (at least 1, at most 8) times the cycles.
 *
 * USER-only events: the USR bit of either vendor's event select (Intel
 * figure 21-1, bit 1 of a fixed counter's field, figure 21-2; AMD
 * PerfEvtSel bit 16) counts at CPL > 0 only, which this kernel never
 * runs at: exactly 0.
 */
struct hw_range
hw_range_of(enum hw_bound bound, uint64_t iters, uint64_t tsc)
{
    uint64_t insns = iters * HW_LOOP_INSNS;

    switch (bound) {
    case HW_BOUND_INSNS:
        return (struct hw_range){ insns, insns + insns / 50 };
    case HW_BOUND_BRANCHES:
        return (struct hw_range){ iters, iters + iters / 10 };
    case HW_BOUND_CYCLES:
        return (struct hw_range){ iters, 50 * iters };
    case HW_BOUND_BRANCH_MISSES:
        return (struct hw_range){ 0, iters / 10 };
    case HW_BOUND_CACHE:
        return (struct hw_range){ 0, iters };
    case HW_BOUND_REF:
        return (struct hw_range){ tsc / 2, tsc + tsc / 10 };
    case HW_BOUND_REF_INTEL:
        if (hw_under_hypervisor()) {
            return (struct hw_range){ tsc / 2, tsc + tsc / 10 };
        }

        return (struct hw_range){ tsc - tsc / 10, tsc + tsc / 20 };
    case HW_BOUND_SLOTS:
        return (struct hw_range){ iters, 8 * 50 * iters };
    case HW_BOUND_ZERO:
    default:
        return (struct hw_range){ 0, 0 };
    }
}

void
hw_assert_range(const char *file, int line, const char *what, uint64_t value,
                struct hw_range range)
{
    test_diag("%s: %llu in [%llu, %llu]", what, (unsigned long long)value,
              (unsigned long long)range.lo, (unsigned long long)range.hi);

    if (value < range.lo || value > range.hi) {
        test_fail_at(file, line, "%s: %llu outside [%llu, %llu]", what,
                     (unsigned long long)value, (unsigned long long)range.lo,
                     (unsigned long long)range.hi);
    }
}

/* ------------------------------------------------------------------ */
/* Events and measurements                                             */
/* ------------------------------------------------------------------ */

void
hw_attach_self(struct perfmon_event *event, unsigned int id,
               unsigned int flags)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(event, thread_self()), 0);
}

void
hw_attach_spec(struct perfmon_event *event, const struct hw_spec *spec)
{
    hw_attach_self(event, spec->id, spec->flags);
}

void
hw_detach_all(struct perfmon_event *events, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&events[i]), 0);
    }
}

uint64_t
hw_low_bits(unsigned int n)
{
    return (n == 0) ? 0 : (n >= 64) ? ~0ULL : (1ULL << n) - 1;
}

void
hw_assert_counters_used(uint64_t bits)
{
    const struct pmu_x86_test *pmu = hw_require_pmu();
    uint64_t enabled;
    bool known;

    thread_preempt_disable();
    known = pmu->enabled(&enabled);
    thread_preempt_enable();

    if (known) {
        TEST_ASSERT_EQ(enabled, bits);
    }
}

uint64_t
hw_measure(struct perfmon_event *events, unsigned int n, uint64_t *deltas,
           uint64_t iters)
{
    uint64_t t0, t1;

    for (unsigned int i = 0; i < n; i++) {
        deltas[i] = perfmon_event_read(&events[i]);
    }

    thread_preempt_disable();
    t0 = cpu_get_tsc();
    hw_loop(iters);
    t1 = cpu_get_tsc();
    thread_preempt_enable();

    for (unsigned int i = 0; i < n; i++) {
        deltas[i] = perfmon_event_read(&events[i]) - deltas[i];
    }

    return t1 - t0;
}

/* ------------------------------------------------------------------ */
/* Overflow interrupts                                                 */
/* ------------------------------------------------------------------ */

/*
 * Fillers push the target onto a given general counter: USER-only, so
 * they count nothing and never overflow, and instructions with distinct
 * counter masks (bits 31:24 on both vendors), so they are distinct
 * configurations that no Intel fixed counter takes.
 */
static void
hw_pmi_attach(const struct pmu_x86_test *pmu, struct hw_pmi_setup *setup)
{
    for (unsigned int k = 0; k < setup->nr_fillers; k++) {
        hw_attach_self(&setup->events[k],
                       pmu->raw_insns | HW_EVTSEL_CMASK(k + 1),
                       HW_RAW | HW_USER);
    }

    hw_attach_spec(&setup->events[setup->nr_fillers], setup->target);
    hw_assert_counters_used(setup->bits);
}

static void
hw_pmi_detach(struct hw_pmi_setup *setup)
{
    hw_detach_all(setup->events, setup->nr_fillers + 1);
}

/*
 * One run: the target's counter starts gap events before its overflow
 * (the driver's set_start_gap, applied at attach), the loop crosses it
 * once. Preemption stays disabled around the loop so the counter is not
 * reloaded (a reload would start it at the gap again) and the statistics
 * read are this CPU's. Exactly one PMI that found an overflow must have
 * arrived (spurious ones, which found none, are set apart); the handler
 * must have acknowledged the overflow (pending) and left the LVT entry
 * unmasked (Intel masks it on each PMI, SDM vol. 3A, 11.5.1; AMD does
 * not, but KVM did for AMD guests in 2023-2024); and the count must be
 * the loop's, one wrap included.
 */
static void
hw_pmi_run(const struct pmu_x86_test *pmu, struct hw_pmi_setup *setup,
           unsigned int run)
{
    struct perfmon_event *target = &setup->events[setup->nr_fillers];
    uint64_t pmis, overflows, pending, v0, v1, t0, t1;
    unsigned int cpu;
    bool masked;

    hw_pmi_attach(pmu, setup);
    v0 = perfmon_event_read(target);
    thread_preempt_disable();
    cpu = cpu_id();
    pmis = pmu_x86_nr_pmis(cpu) - pmu_x86_nr_spurious(cpu);
    overflows = perfmon_cpu_nr_overflows(cpu);
    t0 = cpu_get_tsc();
    hw_loop(HW_N);
    t1 = cpu_get_tsc();
    pmis = pmu_x86_nr_pmis(cpu) - pmu_x86_nr_spurious(cpu) - pmis;
    overflows = perfmon_cpu_nr_overflows(cpu) - overflows;
    pending = pmu->pending(setup->bits);
    masked = lapic_pmc_masked();
    thread_preempt_enable();
    v1 = perfmon_event_read(target);
    hw_pmi_detach(setup);

    test_diag("%s, run %u: %llu PMIs, %llu overflows, pending 0x%llx, "
              "LVT %s", setup->target->name, run, (unsigned long long)pmis,
              (unsigned long long)overflows, (unsigned long long)pending,
              masked ? "masked" : "unmasked");
    TEST_ASSERT_EQ(pmis, 1);
    TEST_ASSERT_GE(overflows, 1);
    TEST_ASSERT_EQ(pending, 0);
    TEST_ASSERT(!masked);
    HW_ASSERT_RANGE(setup->target->name, v1 - v0,
                    hw_range_of(setup->target->bound, HW_N, t1 - t0));
}

void
hw_pmi_check(struct hw_pmi_setup *setup)
{
    const struct pmu_x86_test *pmu = hw_require_pmu();
    struct perfmon_event *target = &setup->events[setup->nr_fillers];
    uint64_t count, tsc;

    TEST_ASSERT_LT(setup->nr_fillers, HW_PMI_MAX_EVENTS);
    hw_pmi_attach(pmu, setup);
    tsc = hw_measure(target, 1, &count, HW_N);
    hw_pmi_detach(setup);
    HW_ASSERT_RANGE(setup->target->name, count,
                    hw_range_of(setup->target->bound, HW_N, tsc));

    TEST_ASSERT_EQ(pmu->set_start_gap(count / 2), 0);

    for (unsigned int run = 1; run <= 2; run++) {
        hw_pmi_run(pmu, setup, run);
    }

    TEST_ASSERT_EQ(pmu->set_start_gap(0), 0);
}
