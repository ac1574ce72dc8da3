/*
 * Intel architectural performance monitoring driver: setup. Detection
 * (pmu_intel_detect.c) says what CPUID promises; this file finds the
 * counters firmware holds, proves the MSRs before trusting them, puts
 * every CPU's PMU in a known idle state, registers the device with the x86
 * layer and describes the driver to the tests. The counter operations
 * are pmu_intel.c's.
 *
 * MSR numbers and layouts: Intel SDM vol. 3B, section 21.2, and vol. 4,
 * table 2-2. This file is also compiled unchanged into the host tests.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/arg.h>
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
#include <pmu/pmu_intel.h>
#include <pmu/pmu_intel_i.h>
#include <pmu/pmu_x86.h>
#include <pmu/pmu_x86_test.h>

#define PMU_INTEL_MSR_DEBUGCTL      0x1d9

#define PMU_INTEL_DEBUGCTL_FREEZE_PERFMON   (1ULL << 12)

/*
 * What the probe writes: a code with EN clear (nothing counts), and a
 * counter value with bit 31 clear, which a 32-bit write keeps as is.
 */
#define PMU_INTEL_PROBE_EVTSEL      (0xc0 | PMU_X86_EVTSEL_OS           \
                                     | PMU_X86_EVTSEL_USR)
#define PMU_INTEL_PROBE_COUNT       0x5a5a5a5aULL

/*
 * Counters firmware held at boot (enabled: BIOS or SMM code counting for
 * itself), found on the boot CPU before anything is written: they are
 * never allocated, and setup leaves their event selects, fixed-counter
 * fields and global enables as found, on every CPU. fw_global: their
 * IA32_PERF_GLOBAL_CTRL bits that were set; fw_fixed_ctrl: their
 * IA32_FIXED_CTR_CTRL fields. The shadows start from these, so that every
 * write of those registers keeps them.
 */
uint32_t pmu_intel_fw_gp;
uint32_t pmu_intel_fw_fixed;
uint64_t pmu_intel_fw_global;
uint64_t pmu_intel_fw_fixed_ctrl;

/*
 * Haswell and Broadwell: family 6, models 3CH, 3FH, 45H, 46H and 3DH,
 * 47H, 4FH, 56H (SDM vol. 4, table 2-1, DisplayFamily_DisplayModel).
 * Decided once at setup (pmu_intel_hsw_bdw), since the PMI's preset asks.
 */
bool pmu_intel_hsw_bdw;

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
    pmu_intel_dev.nmi = pmu_intel_dev.overflow_intr && perfmon_nmi_enabled();
    pmu_intel_dev.preset_ends_overflows = pmu_intel_dev.overflow_intr;
    pmu_intel_dev.nr_counters = nr_general
                            + bitops_popcount(info->fixed_mask
                                              & ~pmu_intel_fw_fixed);
    pmu_intel_dev.fw_counters = pmu_intel_fw_bits();

    if (pmu_intel_dev.nr_counters == 0) {
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
