/*
 * AMD core performance counter driver: setup. Detection (pmu_amd_detect.c)
 * says what CPUID tells; this file finds the counters firmware holds,
 * proves the MSRs before trusting them, puts every CPU's PMU in a known
 * idle state, registers the device with the x86 layer and describes the
 * driver to the tests. The counter operations are pmu_amd.c's.
 *
 * MSR numbers and layouts: AMD APM vol. 2, section 13.2. This file is
 * also compiled unchanged into the host tests.
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
#include <pmu/pmu_amd.h>
#include <pmu/pmu_amd_i.h>
#include <pmu/pmu_x86.h>
#include <pmu/pmu_x86_test.h>


/* What the probe writes: a code with EN clear, a 48-bit pattern. */
#define PMU_AMD_PROBE_EVTSEL        (0xc0 | PMU_X86_EVTSEL_OS           \
                                     | PMU_X86_EVTSEL_USR)
#define PMU_AMD_PROBE_COUNT         0x8a5a5a5a5a5aULL

/*
 * Counters firmware held at boot (PerfEvtSel EN set: BIOS or SMM code
 * counting for itself), found on the boot CPU before anything is
 * written: never allocated, their controls left as found on every CPU,
 * and with PerfMonV2 their PerfCntrGlobalCtl bits as found (fw_global),
 * which the shadow starts from so that every write keeps them.
 */
uint32_t pmu_amd_fw;
uint64_t pmu_amd_fw_global;

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

/*
 * Find the counters firmware holds (pmu_amd_fw, pmu_amd_fw_global), those
 * counting at boot: PerfEvtSel EN set and, with PerfMonV2, the
 * PerfCntrGlobalCtl bit too (both are needed to count, APM vol. 2,
 * 13.2.2; the global bits come out of reset set). Read through the safe
 * accessors before any write. Return 0, or EIO with the MSR in *msrp.
 * Boot CPU.
 */
static int
pmu_amd_find_fw(uint32_t *msrp)
{
    uint64_t value, global = ~0ULL;

    pmu_amd_fw = 0;
    pmu_amd_fw_global = 0;

    if (pmu_amd_info.perfmon_v2) {
        *msrp = PMU_AMD_MSR_GLOBAL_CTL;

        if (cpu_get_msr_safe(PMU_AMD_MSR_GLOBAL_CTL, &global) != 0) {
            return EIO;
        }
    }

    for (unsigned int n = 0; n < pmu_amd_info.nr_counters; n++) {
        *msrp = pmu_amd_msr_ctl(n);

        if (cpu_get_msr_safe(*msrp, &value) != 0) {
            return EIO;
        }

        if ((value & PMU_X86_EVTSEL_EN) && (global & (1ULL << n))) {
            pmu_amd_fw |= 1U << n;
        }
    }

    if (pmu_amd_info.perfmon_v2) {
        pmu_amd_fw_global = pmu_amd_fw;
    }

    return 0;
}

/*
 * Prove the registers before trusting them (pmu_x86_probe): the legacy
 * counters have no CPUID bit at all, and a hypervisor with its PMU off may
 * make them read 0 and drop writes, or fault on the extended and global
 * ones. The counters firmware holds found first (pmu_amd_find_fw) and
 * left alone; the global control (PerfMonV2) written with their enables
 * only, so that nothing else counts; the first and the last other
 * counter's control and counter written and read back, then left 0; the
 * global status read and a clear of nothing written. Return 0, or EIO or
 * ENODEV with the MSR in *msrp. Boot CPU.
 */
static int
pmu_amd_probe(uint32_t *msrp)
{
    unsigned int ends[2], nr_ends = 0;
    struct pmu_x86_probe_write writes[1 + 4 * ARRAY_SIZE(ends)];
    uint32_t own;
    unsigned int nr_writes = 0;
    int error;

    error = pmu_amd_find_fw(msrp);

    if (error) {
        return error;
    }

    own = (uint32_t)pmu_amd_counter_bits() & ~pmu_amd_fw;

    if (own != 0) {
        ends[nr_ends++] = __builtin_ctz(own);
        ends[nr_ends++] = 31 - __builtin_clz(own);
    }

    if (pmu_amd_info.perfmon_v2) {
        writes[nr_writes++] = (struct pmu_x86_probe_write){
            PMU_AMD_MSR_GLOBAL_CTL, pmu_amd_fw_global };
    }

    for (unsigned int i = 0; i < nr_ends; i++) {
        uint32_t ctl = pmu_amd_msr_ctl(ends[i]);
        uint32_t ctr = pmu_amd_msr_ctr(ends[i]);

        writes[nr_writes++] = (struct pmu_x86_probe_write){
            ctl, PMU_AMD_PROBE_EVTSEL };
        writes[nr_writes++] = (struct pmu_x86_probe_write){ ctl, 0 };
        writes[nr_writes++] = (struct pmu_x86_probe_write){
            ctr, PMU_AMD_PROBE_COUNT };
        writes[nr_writes++] = (struct pmu_x86_probe_write){ ctr, 0 };
    }

    return pmu_x86_probe(writes, nr_writes,
                         pmu_amd_info.perfmon_v2 ? PMU_AMD_MSR_GLOBAL_STATUS
                                                 : 0,
                         PMU_AMD_MSR_GLOBAL_STATUS_CLR, msrp);
}

/*
 * Put the calling CPU's PMU in a known, idle state, shadows zeroed.
 * Firmware, an earlier kernel or a rebooted guest (QEMU does not reset
 * these MSRs) may leave counters enabled, and PerfCntrGlobalCtl comes out
 * of reset with every counter enabled. With PerfCtrExtCore, the legacy
 * controls are cleared too: whether they alias the first four extended
 * counters on hardware is not documented here, and a hypervisor does
 * alias them.
 */
static void
pmu_amd_setup_local(void *arg)
{
    struct pmu_x86_cpu *cpu;

    (void)arg;
    pmu_x86_cpu_reset();
    cpu = pmu_x86_cpu_local();

    /* Firmware's counters keep their enables, which the shadow holds. */
    if (pmu_amd_info.perfmon_v2) {
        if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL) {
            cpu->global_ctrl = pmu_amd_fw_global;
        }

        cpu_set_msr(PMU_AMD_MSR_GLOBAL_CTL, pmu_amd_fw_global);
    }

    for (unsigned int n = 0; n < pmu_amd_info.nr_counters; n++) {
        if (!(pmu_amd_fw & (1U << n))) {
            cpu_set_msr(pmu_amd_msr_ctl(n), 0);
        }
    }

    if (pmu_amd_info.ext_core) {
        for (unsigned int n = 0; n < PMU_AMD_LEGACY_NR; n++) {
            if (!(pmu_amd_fw & (1U << n))) {
                cpu_set_msr(PMU_AMD_MSR_LEGACY_CTL(n), 0);
            }
        }
    }

    if (pmu_amd_info.perfmon_v2) {
        cpu_set_msr(PMU_AMD_MSR_GLOBAL_STATUS_CLR,
                    pmu_amd_counter_bits() & ~(uint64_t)pmu_amd_fw);
    }

    if (pmu_amd_has_pmi()) {
        pmu_x86_lvt_setup();
    }
}

/*
 * The hardware suites' queries (struct pmu_x86_test): the counters
 * PerfCntrGlobalCtl enables (PerfMonV2); and the overflows not
 * acknowledged: with the PMI on PerfMonV2, any counter's bit in
 * PerfCntrGlobalStatus; else a counter of bits whose flag (bit 47) reads
 * 0, i.e. that wrapped and was not re-armed. Of the counters this driver
 * uses (not firmware's).
 */
static bool
pmu_amd_test_enabled(uint64_t *bitsp)
{
    if (!pmu_amd_info.perfmon_v2) {
        return false;
    }

    *bitsp = cpu_get_msr(PMU_AMD_MSR_GLOBAL_CTL) & ~(uint64_t)pmu_amd_fw;
    return true;
}

static uint64_t
pmu_amd_test_pending(uint64_t bits)
{
    uint64_t pending = 0;

    if (pmu_amd_ovf == PMU_AMD_OVF_GLOBAL) {
        return cpu_get_msr(PMU_AMD_MSR_GLOBAL_STATUS)
               & pmu_amd_counter_bits() & ~(uint64_t)pmu_amd_fw;
    }

    for (unsigned int n = 0; n < pmu_amd_info.nr_counters; n++) {
        if ((bits & (1ULL << n)) && pmu_amd_top_bit_cleared(n)) {
            pending |= 1ULL << n;
        }
    }

    return pending;
}

static const char *
pmu_amd_ovf_name(void)
{
    switch (pmu_amd_ovf) {
    case PMU_AMD_OVF_GLOBAL:
        return "PMI, global status";
    case PMU_AMD_OVF_TOP_BIT:
        return "PMI, counter top bit";
    default:
        return "polled";
    }
}

/* Boot option: pmu_amd.pmi=0 polls the counters instead of the PMI. */
ARG_DEFINE_U64("pmu_amd.pmi", 0, 1);

/* What the tests ask of the driver; setup adds the counters that exist. */
static struct pmu_x86_test pmu_amd_test = {
    .dev = &pmu_amd_dev,
    .raw_insns = 0xc0,                  /* PMCx0C0, retired instructions */
    .set_start_gap = pmu_amd_set_start_gap,
    .enabled = pmu_amd_test_enabled,
    .pending = pmu_amd_test_pending,
};

static int
pmu_amd_setup(void)
{
    struct pmu_amd_info *info = &pmu_amd_info;
    struct pmu_x86_vendor *vendor = &pmu_amd_vendor;
    struct perfmon_dev *other;
    uint32_t msr;
    int error;

    pmu_amd_detect(info);

    if (info->nr_counters == 0) {
        log_debug("pmu_amd: not an AMD CPU of family 6 or later");
        return 0;
    }

    other = perfmon_dev_get(false);

    if (other != NULL) {
        log_info("pmu_amd: %s drives the hardware PMU already", other->name);
        return 0;
    }

    if (arg_is_set("pmu_amd.pmi", "0")) {
        pmu_amd_ovf = PMU_AMD_OVF_POLL;
    } else if (info->perfmon_v2) {
        pmu_amd_ovf = PMU_AMD_OVF_GLOBAL;
    } else {
        pmu_amd_ovf = PMU_AMD_OVF_TOP_BIT;
    }

    error = pmu_amd_probe(&msr);

    if (error) {
        /*
         * No CPUID bit announces the legacy counters: a virtual machine
         * without a PMU is found here, the expected case, not an alarm.
         */
        log_info("pmu_amd: no hardware PMU (family %xh, MSR 0x%x %s, as "
                 "in a virtual machine without one): software events and "
                 "the software PMU work, hardware events do not",
                 info->family, msr,
                 (error == EIO) ? "faults" : "ignores writes");
        info->nr_counters = 0;
        return 0;
    }

    if (pmu_amd_fw != 0) {
        log_warning("pmu_amd: firmware holds counters 0x%x (enabled at "
                    "boot): left alone, never used", pmu_amd_fw);
    }

    pmu_amd_dev.name = "pmu_amd";
    pmu_amd_dev.ops = &pmu_amd_ops;
    pmu_amd_dev.overflow_intr = pmu_amd_has_pmi();
    pmu_amd_dev.nmi = pmu_amd_dev.overflow_intr && perfmon_nmi_enabled();
    pmu_amd_dev.preset_ends_overflows = pmu_amd_dev.overflow_intr;
    pmu_amd_dev.nr_counters = info->nr_counters - bitops_popcount(pmu_amd_fw);
    pmu_amd_dev.fw_counters = pmu_amd_fw;
    pmu_amd_dev.min_width = pmu_amd_width();
    pmu_amd_dev.max_period = pmu_amd_max_period();

    if (pmu_amd_dev.nr_counters == 0) {
        log_info("pmu_amd: no counter left to use: software events only");
        return 0;
    }

    vendor->counters = pmu_amd_counter_bits() & ~(uint64_t)pmu_amd_fw;
    vendor->ack_mask = vendor->counters;
    error = pmu_x86_register(vendor, pmu_amd_setup_local);

    if (error) {
        return error;
    }

    pmu_amd_test.nr_general = pmu_amd_dev.nr_counters;
    pmu_amd_test.nr_generic_slots = pmu_amd_dev.nr_counters;
    pmu_x86_test_register(&pmu_amd_test);

    log_info("pmu_amd: family %xh model %xh (%s events), %u counters of "
             "%u bits (%s), %s", info->family, info->model,
             pmu_amd_gen_name(info->gen), info->nr_counters, PMU_AMD_WIDTH,
             info->perfmon_v2 ? "PerfMonV2"
                              : (info->ext_core ? "PerfCtrExtCore"
                                                : "legacy"),
             pmu_amd_ovf_name());
    return 0;
}

/*
 * After the Intel driver, so that the order is fixed: on an AMD CPU its
 * leaf 0AH is absent and it registers nothing; should a hypervisor
 * expose that leaf anyway, the driver that registered first keeps the
 * PMU and this one steps aside (see pmu_amd_setup).
 */
INIT_OP_DECLARE(pmu_intel_setup);

INIT_OP_DEFINE(pmu_amd_setup,
               INIT_OP_DEP(perfmon_setup, true),
               INIT_OP_DEP(pmu_intel_setup, false),
               INIT_OP_DEP(xcall_setup, true));
