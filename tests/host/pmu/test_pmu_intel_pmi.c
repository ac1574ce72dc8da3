/*
 * Host tests of the Intel PMU driver: the overflow interrupt (PMI): what
 * it acknowledges, reports and gives up on, and NMIs.
 * The fixture and the PMU configurations are pmu_test_intel.h's;
 * test_pmu_intel.c says which binary has which PMU.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <pmu/pmu_intel.h>
#include <pmu/pmu_x86_test.h>
#include <machine/trap.h>

#include "host_env.h"
#include "host_test.h"
#include <pmu/model/pmu_model.h>
#include "pmu_sample_test.h"

#include "pmu_test_intel.h"

/* ------------------------------------------------------------------ */
/* Overflow interrupt                                                  */
/* ------------------------------------------------------------------ */

#if PMU_TEST_HAS_PMI

HOST_TEST(pmi_acknowledges_gp_and_fixed_overflow_once)
{
    const uint64_t bits = (1ULL << 0) | MODEL_GLOBAL_FIXED(0);
    uint64_t ctrl, pmis, spurious, overflows;
    struct perfmon_event *insns, *branches;
    unsigned long acks[64], eois;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_counter(branches), 0);

    model_retire(MODEL_EV_INSTRUCTIONS, 15, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), bits);
    HOST_ASSERT(model_pmi_pending());
    HOST_ASSERT_EQ(model_lvt_pmc(), PMU_TEST_LVT | MODEL_LVT_MASKED);
    ctrl = model_msr(MODEL_MSR_GLOBAL_CTRL);
    HOST_ASSERT_EQ(ctrl, bits);

    for (unsigned int bit = 0; bit < 64; bit++) {
        acks[bit] = model_nr_acks(bit);
    }

    eois = model_nr_eois();
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);
    overflows = perfmon_cpu_nr_overflows(0);
    pmu_test_deliver_pmi();

    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), ctrl);
    HOST_ASSERT_EQ(model_lvt_pmc(), PMU_TEST_LVT);

    for (unsigned int bit = 0; bit < 64; bit++) {
        HOST_ASSERT_EQ(model_nr_acks(bit) - acks[bit], (bits >> bit) & 1);
    }

    HOST_ASSERT_EQ(model_nr_eois() - eois, PMU_TEST_EOIS);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(pmu_test_read(insns), 15);
    HOST_ASSERT_EQ(pmu_test_read(branches), 12);

    /* Counting goes on after the handler. */
    model_retire(MODEL_EV_INSTRUCTIONS, 5, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(insns), 20);
    HOST_ASSERT_EQ(pmu_test_read(branches), 17);
    pmu_test_detach_all();
    pmu_test_end();
}

/*
 * The PMI as an NMI (the LVT entry in NMI delivery mode) landing while a
 * perfmon section is open on the CPU (perfmon_nmi_enter, as the context
 * switch or a read): the handler touches nothing: the status bit stays
 * set (unacknowledged), the LVT entry masked as the PMI left it, no PMI
 * counted, nothing reported. The section's end runs the handler: status
 * acknowledged, the entry unmasked (still NMI delivery), the wrap counted
 * once, the count exact.
 */
HOST_TEST(nmi_inside_a_section_is_handled_at_its_end)
{
    struct perfmon_event *branches;
    uint64_t pmis, overflows;
    unsigned long flags, eois;

    HOST_ASSERT(perfmon_nmi_enabled());
    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(branches), 0);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI);

    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI | MODEL_LVT_MASKED);
    pmis = pmu_intel_nr_pmis(0);
    overflows = perfmon_cpu_nr_overflows(0);
    eois = model_nr_eois();

    flags = cpu_intr_save();
    perfmon_nmi_enter();
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI | MODEL_LVT_MASKED);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0), pmis);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);
    perfmon_nmi_leave();
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_lvt_pmc(), MODEL_LVT_NMI);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    cpu_intr_restore(flags);

    HOST_ASSERT_EQ(model_nr_eois(), eois);
    HOST_ASSERT_EQ(pmu_test_read(branches), 12);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(branches), 17);
    pmu_test_detach_all();
    pmu_test_end();
}

HOST_TEST(pmi_without_status_is_spurious)
{
    uint64_t pmis, spurious;
    struct model_regs before, after;
    struct perfmon_event *event;
    unsigned long eois, acks;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(3), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    model_snapshot(&before);
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);
    eois = model_nr_eois();
    acks = model_nr_writes(MODEL_MSR_GLOBAL_OVF);

    /* Nothing overflowed. */
    host_env_raise_trap(TRAP_PMI);
    model_snapshot(&after);
    pmu_test_assert_regs_eq(&before, &after);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(model_nr_eois() - eois, PMU_TEST_EOIS);
    HOST_ASSERT_EQ(model_nr_writes(MODEL_MSR_GLOBAL_OVF), acks);

    /* A real one: counted, not spurious. */
    model_retire(MODEL_EV_BRANCHES, 3, MODEL_RING_KERN);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 2);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 3);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(read_between_wrap_and_pmi_counts_wrap_once)
{
    struct perfmon_event *event;
    uint64_t overflows;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(100), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    overflows = perfmon_cpu_nr_overflows(0);
    model_retire(MODEL_EV_BRANCHES, 150, MODEL_RING_KERN);
    HOST_ASSERT(model_pmi_pending());

    /* The read sees the counter go down before the PMI is taken. */
    HOST_ASSERT_EQ(pmu_test_read(event), 150);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_read(event), 150);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);

    /* The next wrap, a whole period with no read before its PMI. */
    model_retire(MODEL_EV_BRANCHES, PMU_TEST_GP_PERIOD, MODEL_RING_KERN);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_GP_PERIOD + 150);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(full_period_before_pmi_counts_a_wrap)
{
    struct perfmon_event *event;
    uint64_t overflows;

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 5);
    overflows = perfmon_cpu_nr_overflows(0);

    /* Back at the value perfmon last read: only the PMI tells. */
    model_retire(MODEL_EV_BRANCHES, PMU_TEST_GP_PERIOD, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(0)), 5);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_GP_PERIOD + 5);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(overflow_pending_at_detach_is_not_reported)
{
    struct perfmon_event *event;
    uint64_t overflows, spurious;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    overflows = perfmon_cpu_nr_overflows(0);
    spurious = pmu_intel_nr_spurious(0);
    model_retire(MODEL_EV_BRANCHES, 15, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << 0);

    /* Stopping acknowledges the overflow; the late PMI finds nothing. */
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    pmu_test_assert_disabled(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 15);
    pmu_test_end();
}

HOST_TEST(stray_overflow_bits_are_never_reported)
{
    struct perfmon_event *first, *second, *insns, *event;
    uint64_t overflows, pmis, spurious;
    unsigned long acks;

    pmu_test_begin();

    /* General counter 0 is left free after serving the slot insns gets. */
    first = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    second = pmu_test_attach_cpu(0x01d0, PERFMON_EF_RAW | PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(first), 0);
    HOST_ASSERT_EQ(pmu_test_counter(second), 1);
    HOST_ASSERT_EQ(perfmon_event_detach(first), 0);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(perfmon_event_slot_index(insns),
                   perfmon_event_slot_index(first));
    model_retire(MODEL_EV_INSTRUCTIONS, 20, MODEL_RING_KERN);

    /* An overflow of the free counter: acknowledged, reported to no one. */
    overflows = perfmon_cpu_nr_overflows(0);
    pmis = pmu_intel_nr_pmis(0);
    spurious = pmu_intel_nr_spurious(0);
    acks = model_nr_acks(0);
    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << 0);
    host_env_raise_trap(TRAP_PMI);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_nr_acks(0) - acks, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);
    HOST_ASSERT_EQ(pmu_test_read(insns), 20);

    /* Starting the counter again clears an overflow left from before. */
    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(event), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    host_env_raise_trap(TRAP_PMI);
    HOST_ASSERT_EQ(pmu_intel_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);
    HOST_ASSERT_EQ(pmu_test_read(event), 0);
    HOST_ASSERT_EQ(pmu_test_read(insns), 20);
    pmu_test_detach_all();
    pmu_test_end();
}

/* What the WRMSR hooks below saw and do. */
static uint64_t pmu_test_hook_bits;     /* status bits to (re)raise */
static bool pmu_test_hook_stuck;        /* on every acknowledgment */
static unsigned int pmu_test_hook_acks;
static uint64_t pmu_test_hook_ctrl;     /* GLOBAL_CTRL bits at any ack */

/*
 * On acknowledgments: raise hook_bits in GLOBAL_STATUS, after the first
 * one only (an overflow that shows up while the handler runs) or after
 * every one (a stuck status bit).
 */
static void
pmu_test_status_hook(uint32_t msr, uint64_t value)
{
    (void)value;

    if (msr != MODEL_MSR_GLOBAL_OVF) {
        return;
    }

    pmu_test_hook_ctrl |= model_msr(MODEL_MSR_GLOBAL_CTRL);

    if (pmu_test_hook_acks++ == 0 || pmu_test_hook_stuck) {
        model_poke(MODEL_MSR_GLOBAL_STATUS,
                   model_msr(MODEL_MSR_GLOBAL_STATUS) | pmu_test_hook_bits);
    }
}

static void
pmu_test_set_status_hook(uint64_t bits, bool stuck)
{
    pmu_test_hook_bits = bits;
    pmu_test_hook_stuck = stuck;
    pmu_test_hook_acks = 0;
    pmu_test_hook_ctrl = 0;
    model_set_wrmsr_hook(pmu_test_status_hook);
}

HOST_TEST(pmi_handler_stops_counting_and_rereads_status)
{
    struct perfmon_event *insns, *branches;
    uint64_t ctrl, overflows;
    unsigned long acks0, acks32;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_counter(branches), 0);
    model_retire(MODEL_EV_INSTRUCTIONS, 15, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 12, MODEL_RING_KERN);
    ctrl = model_msr(MODEL_MSR_GLOBAL_CTRL);
    overflows = perfmon_cpu_nr_overflows(0);
    acks0 = model_nr_acks(0);
    acks32 = model_nr_acks(32);

    /* The fixed counter's bit appears only after the first pass's ack. */
    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << 0);
    pmu_test_set_status_hook(MODEL_GLOBAL_FIXED(0), false);
    pmu_test_deliver_pmi();
    model_set_wrmsr_hook(NULL);

    HOST_ASSERT_EQ(pmu_test_hook_acks, 2);
    HOST_ASSERT_EQ(pmu_test_hook_ctrl, 0);
    HOST_ASSERT_EQ(model_nr_acks(0) - acks0, 1);
    HOST_ASSERT_EQ(model_nr_acks(32) - acks32, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), ctrl);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(pmu_test_read(insns), 15);
    HOST_ASSERT_EQ(pmu_test_read(branches), 12);
    pmu_test_detach_all();
    pmu_test_end();
}

/* The driver's bound on handler passes (PMU_INTEL_PMI_MAX_LOOPS). */
#define PMU_TEST_PMI_MAX_PASSES 16

/* PMIs whose handler gave up on a stuck status, as the syscnt says. */
static uint64_t
pmu_test_nr_giveups(void)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(syscnt_lookup("pmu_intel_pmi_giveup/0", &value), 0);
    HOST_ASSERT_EQ(value, pmu_intel_nr_pmi_giveups(0));
    return value;
}

HOST_TEST(pmi_with_stuck_status_bit_returns)
{
    const unsigned int stray = PMU_TEST_NR_GP - 1;  /* a free counter */
    struct perfmon_event *event;
    unsigned long acks, acks62, acks63;
    uint64_t ctrl, giveups, pmis;

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT(pmu_test_counter(event) != stray);
    ctrl = model_msr(MODEL_MSR_GLOBAL_CTRL);
    giveups = pmu_test_nr_giveups();
    pmis = pmu_intel_nr_pmis(0);
    acks = model_nr_acks(stray);
    acks62 = model_nr_acks(62);
    acks63 = model_nr_acks(63);

    model_poke(MODEL_MSR_GLOBAL_STATUS, 1ULL << stray);
    pmu_test_set_status_hook(1ULL << stray, true);
    host_env_raise_trap(TRAP_PMI);
    model_set_wrmsr_hook(NULL);

    /* Each pass acknowledges it, then one acknowledgment of everything. */
    HOST_ASSERT_EQ(pmu_test_hook_acks, PMU_TEST_PMI_MAX_PASSES + 1);
    HOST_ASSERT_EQ(model_nr_acks(stray) - acks, PMU_TEST_PMI_MAX_PASSES + 1);
    HOST_ASSERT_EQ(model_nr_acks(62) - acks62, 1);
    HOST_ASSERT_EQ(model_nr_acks(63) - acks63, 1);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), ctrl);
    HOST_ASSERT_EQ(model_lvt_pmc(), PMU_TEST_LVT);
    HOST_ASSERT_EQ(pmu_test_nr_giveups() - giveups, 1);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 1);

    /* The bit is still stuck in the model; counting goes on. */
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << stray);
    model_poke(MODEL_MSR_GLOBAL_STATUS, 0);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 5);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * The driver keeps what GLOBAL_CTRL and FIXED_CTR_CTRL should hold and
 * only ever writes them: starting, stopping and the PMI never read them
 * back (a freeze clears GLOBAL_CTRL behind the driver's back).
 */
HOST_TEST(control_registers_are_written_never_read_back)
{
    unsigned long global_reads, fixed_reads;
    struct perfmon_event *insns, *branches, *ref = NULL;
    struct thread *thread;

    pmu_test_begin();
    global_reads = model_nr_reads(MODEL_MSR_GLOBAL_CTRL);
    fixed_reads = model_nr_reads(MODEL_MSR_FIXED_CTRL);
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    thread = pmu_test_thread();
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(branches, thread), 0);

    if (PMU_TEST_FIXED_MASK & 0x4) {
        ref = pmu_test_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_USER);
    }

    for (unsigned int i = 0; i < 3; i++) {
        host_env_switch_in(thread);
        model_retire(MODEL_EV_BRANCHES, 20, MODEL_RING_KERN);
        model_retire(MODEL_EV_INSTRUCTIONS, 30, MODEL_RING_KERN);
        model_retire(MODEL_EV_REF_CYCLES, 40, MODEL_RING_USER);
        pmu_test_catch_up();
        host_env_switch_out(thread);
    }

    HOST_ASSERT_EQ(pmu_test_read(branches), 60);
    HOST_ASSERT_EQ(pmu_test_read(insns), 90);

    if (ref != NULL) {
        HOST_ASSERT_EQ(pmu_test_read(ref), 120);
    }

    pmu_test_detach_all();
    HOST_ASSERT_EQ(model_nr_reads(MODEL_MSR_GLOBAL_CTRL), global_reads);
    HOST_ASSERT_EQ(model_nr_reads(MODEL_MSR_FIXED_CTRL), fixed_reads);
    pmu_test_end();
}

/*
 * FREEZE_PERFMON_ON_PMI left on where the driver cannot clear it (a
 * hypervisor ignoring the DEBUGCTL write): every PMI request freezes the
 * counters (version 2 clears GLOBAL_CTRL, version 4 on sets CTR_Frz), and
 * each PMI must start them again, from the driver's copy of GLOBAL_CTRL
 * and by acknowledging CTR_Frz. Each batch of events ends exactly at a
 * wrap, so the freeze loses none and the counts stay exact over many PMIs.
 */
HOST_TEST(freeze_left_on_does_not_stop_counting)
{
    const uint64_t gap = 1000;
    const uint64_t fixed_period = 1ULL << PMU_TEST_FIXED_WIDTH;
    struct perfmon_event *insns, *branches;
    uint64_t pmis, overflows, counted;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(gap), 0);
    model_poke(MODEL_MSR_DEBUGCTL, MODEL_DEBUGCTL_FREEZE_PERFMON);
    model_set_debugctl_sticky(MODEL_DEBUGCTL_FREEZE_PERFMON);
    insns = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    branches = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(pmu_test_counter(insns), PMU_TEST_FIXED(0));
    HOST_ASSERT_EQ(pmu_test_counter(branches), 0);
    pmis = pmu_intel_nr_pmis(0);
    overflows = perfmon_cpu_nr_overflows(0);

    /* The premise: the first wrap freezes every counter. */
    model_retire(MODEL_EV_BRANCHES, gap, MODEL_RING_KERN);
    HOST_ASSERT(model_pmi_pending());

    if (PMU_TEST_VERSION >= 4) {
        HOST_ASSERT(model_msr(MODEL_MSR_GLOBAL_STATUS)
                    & MODEL_STATUS_CTR_FRZ);
    } else {
        HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), 0);
    }

    counted = model_nr_counted(PMU_TEST_FIXED(0));
    model_retire(MODEL_EV_INSTRUCTIONS, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_nr_counted(PMU_TEST_FIXED(0)), counted);
    pmu_test_deliver_pmi();
    model_retire(MODEL_EV_INSTRUCTIONS, gap, MODEL_RING_KERN);
    pmu_test_deliver_pmi();

    for (unsigned int i = 0; i < 50; i++) {
        model_retire(MODEL_EV_BRANCHES, PMU_TEST_GP_PERIOD, MODEL_RING_KERN);
        pmu_test_deliver_pmi();
        model_retire(MODEL_EV_INSTRUCTIONS, fixed_period, MODEL_RING_KERN);
        pmu_test_deliver_pmi();
    }

    HOST_ASSERT_EQ(pmu_test_read(branches), gap + 50 * PMU_TEST_GP_PERIOD);
    HOST_ASSERT_EQ(pmu_test_read(insns), gap + 50 * fixed_period);
    HOST_ASSERT_EQ(pmu_intel_nr_pmis(0) - pmis, 102);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 102);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_DEBUGCTL),
                   MODEL_DEBUGCTL_FREEZE_PERFMON);
    pmu_test_detach_all();
    pmu_test_end();
}

/*
 * Counting is off while the handler runs, so a status bit that stays set
 * or comes back during one PMI is still the overflow it already saw: a
 * counter in use gets one report, 2^width once, and the forced clear of
 * the give-up path reports nothing.
 */
HOST_TEST(pmi_reports_a_stuck_bit_of_a_counter_in_use_once)
{
    struct perfmon_event *event;
    uint64_t overflows, giveups;
    unsigned int counter;
    unsigned long acks;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    counter = pmu_test_counter(event);
    model_retire(MODEL_EV_BRANCHES, 15, MODEL_RING_KERN);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 1ULL << counter);
    overflows = perfmon_cpu_nr_overflows(0);
    acks = model_nr_acks(counter);

    /* No acknowledgment clears it during this PMI. */
    giveups = pmu_test_nr_giveups();
    model_set_stuck_status(1ULL << counter);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(model_nr_acks(counter) - acks, PMU_TEST_PMI_MAX_PASSES + 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(pmu_test_nr_giveups() - giveups, 1);

    /* Then the bit lets go; the count holds one wrap, no more. */
    model_set_stuck_status(0);
    model_poke(MODEL_MSR_GLOBAL_STATUS, 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 15);
    model_retire(MODEL_EV_BRANCHES, 5, MODEL_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 20);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(pmi_reports_a_reappearing_bit_once)
{
    struct perfmon_event *event;
    uint64_t overflows, giveups;
    unsigned int counter;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_intel_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    counter = pmu_test_counter(event);
    model_retire(MODEL_EV_BRANCHES, 15, MODEL_RING_KERN);
    overflows = perfmon_cpu_nr_overflows(0);

    /* Set again after the first acknowledgment, once: no give-up. */
    giveups = pmu_test_nr_giveups();
    pmu_test_set_status_hook(1ULL << counter, false);
    pmu_test_deliver_pmi();
    model_set_wrmsr_hook(NULL);
    HOST_ASSERT_EQ(pmu_test_hook_acks, 2);
    HOST_ASSERT_EQ(pmu_test_nr_giveups(), giveups);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 15);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

#endif /* PMU_TEST_HAS_PMI */
