/*
 * Host tests of the AMD PMU driver (arch/x86/pmu/pmu_amd.c) through
 * perfmon (kern/perfmon*.c), both compiled unchanged, against the register
 * model of pmu_model_amd.c in the single-CPU environment of host_env.c.
 *
 * One PMU per binary (perfmon registers one device per process), chosen
 * by PMU_TEST_CONFIG:
 *   1  legacy: family 10h, four legacy counters, PMI by the top bit.
 *   2  extcore: Zen 1 (17h model 01h), six PerfCtrExtCore counters, PMI
 *      by the top bit.
 *   3  v2: Zen 3 (19h model 01h) under a hypervisor exposing PerfMonV2
 *      with five counters, whose PMI masks the LVT entry (KVM's bug).
 *   4  zen4: 19h model 11h, PerfMonV2 with six counters.
 *   5  poll: Zen 2 (17h model 31h), PerfCtrExtCore, pmu_amd.pmi=0.
 *   6  fam15h: Piledriver (15h model 02h), six PerfCtrExtCore counters,
 *      PMI by the top bit, events confined to counters (pmu_model_amd.h).
 *
 * Expected event codes come from the tables below, written from the PPRs
 * (and the facts sheet quoting them), not from the driver.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <pmu/pmu_amd.h>
#include <machine/trap.h>

#include "host_env.h"
#include "host_test.h"
#include "pmu_model_amd.h"
#include "pmu_sample_test.h"

#define PMU_TEST_CYCLES         MODEL_AMD_EV_CYCLES
#define PMU_TEST_INSTRUCTIONS   MODEL_AMD_EV_INSTRUCTIONS

#if PMU_TEST_CONFIG == 1

#define PMU_TEST_NR             4
#define PMU_TEST_OVF            PMU_AMD_OVF_TOP_BIT
#define PMU_TEST_GEN            PMU_AMD_GEN_K7
static const struct model_amd_config pmu_test_config = {
    .family = 0x10, .model = 0x02, .ext_max = 0x8000001b,
};

#elif PMU_TEST_CONFIG == 2

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_TOP_BIT
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN1
static const struct model_amd_config pmu_test_config = {
    .family = 0x17, .model = 0x01, .ext_max = 0x8000001f, .ext_core = true,
};

#elif PMU_TEST_CONFIG == 3

#define PMU_TEST_NR             5
#define PMU_TEST_OVF            PMU_AMD_OVF_GLOBAL
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN2
static const struct model_amd_config pmu_test_config = {
    .family = 0x19, .model = 0x01, .ext_max = 0x80000022, .ext_core = true,
    .perfmon_v2 = true, .v2_nr = 5, .lvt_masks = true,
};

#elif PMU_TEST_CONFIG == 4

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_GLOBAL
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN4
static const struct model_amd_config pmu_test_config = {
    .family = 0x19, .model = 0x11, .ext_max = 0x80000028, .ext_core = true,
    .perfmon_v2 = true, .v2_nr = 6,
};

#elif PMU_TEST_CONFIG == 5

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_POLL
#define PMU_TEST_GEN            PMU_AMD_GEN_ZEN2
#define PMU_TEST_CMDLINE_PMI_OFF
static const struct model_amd_config pmu_test_config = {
    .family = 0x17, .model = 0x31, .ext_max = 0x80000020, .ext_core = true,
};

#elif PMU_TEST_CONFIG == 6

#define PMU_TEST_NR             6
#define PMU_TEST_OVF            PMU_AMD_OVF_TOP_BIT
#define PMU_TEST_GEN            PMU_AMD_GEN_K7
#define PMU_TEST_FAM15H
static const struct model_amd_config pmu_test_config = {
    .family = 0x15, .model = 0x02, .ext_max = 0x8000001e, .ext_core = true,
};

#else
#error "PMU_TEST_CONFIG must be 1 to 6"
#endif

#define PMU_TEST_HAS_PMI        (PMU_TEST_OVF != PMU_AMD_OVF_POLL)
#define PMU_TEST_V2             (PMU_TEST_OVF == PMU_AMD_OVF_GLOBAL)
#define PMU_TEST_WIDTH          ((PMU_TEST_OVF == PMU_AMD_OVF_TOP_BIT)   \
                                 ? 47 : 48)
#define PMU_TEST_PERIOD         (1ULL << PMU_TEST_WIDTH)
#define PMU_TEST_TOP_BIT        (1ULL << 47)
/* Half the time 2^48 events take at 100 per cycle at 1 GHz, in ticks. */
#define PMU_TEST_POLL_TICKS     ((PMU_TEST_OVF == PMU_AMD_OVF_POLL)      \
                                 ? 140737 : 0)

#define PMU_TEST_MAX_EVENTS     16
#define PMU_TEST_MAX_THREADS    2

/* Generic events per generation (PPR core PMC tables); 0: none. */
static const uint64_t pmu_test_generic[][PERFMON_NR_GENERIC_EVENTS] = {
    [PMU_AMD_GEN_K7] = {
        MODEL_AMD_EV_CYCLES, 0, MODEL_AMD_EV_INSTRUCTIONS,
        MODEL_AMD_EV_K7_DC_REFILL_L2, MODEL_AMD_EV_K7_DC_REFILL_SYS,
        MODEL_AMD_EV_BRANCHES, MODEL_AMD_EV_BRANCH_MISSES,
    },
    [PMU_AMD_GEN_ZEN1] = {
        MODEL_AMD_EV_CYCLES, 0, MODEL_AMD_EV_INSTRUCTIONS,
        MODEL_AMD_EV_ZEN_L2_REQUESTS, MODEL_AMD_EV_ZEN_L2_MISSES,
        MODEL_AMD_EV_BRANCHES, MODEL_AMD_EV_BRANCH_MISSES,
    },
    [PMU_AMD_GEN_ZEN2] = {
        MODEL_AMD_EV_CYCLES, 0, MODEL_AMD_EV_INSTRUCTIONS,
        MODEL_AMD_EV_ZEN_L2_REQUESTS, MODEL_AMD_EV_ZEN_L2_MISSES,
        MODEL_AMD_EV_BRANCHES, MODEL_AMD_EV_BRANCH_MISSES,
    },
    [PMU_AMD_GEN_ZEN4] = {
        MODEL_AMD_EV_CYCLES, MODEL_AMD_EV_ZEN4_P0_CYCLES,
        MODEL_AMD_EV_INSTRUCTIONS, MODEL_AMD_EV_ZEN_L2_REQUESTS,
        MODEL_AMD_EV_ZEN_L2_MISSES, MODEL_AMD_EV_BRANCHES,
        MODEL_AMD_EV_BRANCH_MISSES,
    },
};

/* The Intel driver's init op, which pmu_amd_setup orders itself after. */
const struct init_op init_op_pmu_intel_setup = { .name = "pmu_intel_setup" };

/* The command line, as kern/arg.c would parse it. */
/* perfmon's boot arguments: none set. */
int
arg_get_u64(const char *key, uint64_t *valuep)
{
    (void)key;
    (void)valuep;
    return ENOENT;
}

bool
arg_is_set(const char *key, const char *value)
{
#ifdef PMU_TEST_CMDLINE_PMI_OFF
    return strcmp(key, "pmu_amd.pmi") == 0 && strcmp(value, "0") == 0;
#else
    (void)key;
    (void)value;
    return false;
#endif
}

static bool pmu_test_booted;
static int pmu_test_setup_error;
static unsigned int pmu_test_boot_faults;
static struct perfmon_event pmu_test_events[PMU_TEST_MAX_EVENTS];
static unsigned int pmu_test_nr_events;
static struct thread pmu_test_threads[PMU_TEST_MAX_THREADS];
static unsigned int pmu_test_nr_threads;

static uint32_t
pmu_test_msr_ctl(unsigned int n)
{
    return pmu_test_config.ext_core ? MODEL_AMD_MSR_CTL(n)
                                    : MODEL_AMD_MSR_LEGACY_CTL(n);
}

static uint32_t
pmu_test_msr_ctr(unsigned int n)
{
    return pmu_test_config.ext_core ? MODEL_AMD_MSR_CTR(n)
                                    : MODEL_AMD_MSR_LEGACY_CTR(n);
}

/*
 * State firmware, an earlier kernel or a rebooted guest leaves, with EN
 * clear: an enabled counter is firmware's, which the driver leaves alone
 * (test_pmu_amd_fw below).
 */
static void
pmu_test_dirty_pmu(void)
{
    model_amd_poke(pmu_test_msr_ctl(0), MODEL_AMD_EVTSEL_OS
                   | MODEL_AMD_EVTSEL_INT | PMU_TEST_CYCLES);
    model_amd_poke(pmu_test_msr_ctl(PMU_TEST_NR - 1), MODEL_AMD_EVTSEL_USR
                   | PMU_TEST_INSTRUCTIONS);
    model_amd_poke(MODEL_AMD_MSR_LEGACY_CTL(3), MODEL_AMD_EVTSEL_OS
                   | PMU_TEST_CYCLES);

    if (PMU_TEST_V2) {
        model_amd_poke(MODEL_AMD_MSR_GLOBAL_STATUS, 0x3);
    }
}

static void
pmu_test_boot(void)
{
    if (pmu_test_booted) {
        return;
    }

    pmu_test_booted = true;
    model_amd_reset(&pmu_test_config);
    pmu_test_dirty_pmu();
    HOST_ASSERT_EQ(init_op_perfmon_setup.fn(), 0);
    pmu_test_setup_error = init_op_pmu_amd_setup.fn();
    pmu_test_boot_faults = model_amd_nr_faults();
}

static struct perfmon_dev *
pmu_test_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);

    HOST_ASSERT(dev != NULL);
    return dev;
}

static void
pmu_test_assert_no_fault(void)
{
    if (model_amd_nr_faults() != 0) {
        HOST_FAIL("%u #GP, first: %s", model_amd_nr_faults(),
                  model_amd_first_fault());
    }

    HOST_ASSERT_EQ(model_amd_nr_reserved_writes(), 0);
}

static void
pmu_test_begin(void)
{
    pmu_test_boot();
    host_env_recover();

    /*
     * A failed test may leave a marked section open, which would defer
     * every later NMI: close it, running what it deferred.
     */
    if (perfmon_nmi_nest() != 0) {
        unsigned long flags = cpu_intr_save();

        perfmon_nmi_set_nest(1);
        perfmon_nmi_leave();
        cpu_intr_restore(flags);
    }
    model_amd_set_drift(0);
    model_amd_set_stuck_status(0);
    model_amd_set_rdmsr_hook(NULL);

    if (model_amd_pmi_take()) {
        host_env_raise_trap(TRAP_PMI);
    }

    for (unsigned int i = 0; i < pmu_test_nr_threads; i++) {
        struct thread *thread = &pmu_test_threads[i];

        if (thread->perfmon_td.loaded_cpu != PERFMON_CPU_NONE) {
            host_env_switch_out(thread);
        }
    }

    for (unsigned int i = 0; i < pmu_test_nr_events; i++) {
        if (perfmon_event_attached(&pmu_test_events[i])) {
            perfmon_event_detach(&pmu_test_events[i]);
        }
    }

    pmu_test_nr_events = 0;
    pmu_test_nr_threads = 0;
    pmu_amd_set_start_gap(0);
    host_env_advance(PMU_TEST_POLL_TICKS);
    model_amd_clear_faults();
    pmu_test_dev();
}

/* The counter n is idle: no EN, no global enable. */
static void
pmu_test_assert_disabled(unsigned int n)
{
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctl(n)), 0);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL)
                       & (1ULL << n), 0);
    }
}

static void
pmu_test_end(void)
{
    pmu_test_assert_no_fault();
    HOST_ASSERT(!model_amd_pmi_pending());
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_test_dev()), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_slots(0), 0);
    HOST_ASSERT_EQ(host_env_nr_locks_held(), 0);
    HOST_ASSERT(cpu_intr_enabled());

    for (unsigned int n = 0; n < PMU_TEST_NR; n++) {
        pmu_test_assert_disabled(n);
    }
}

static struct perfmon_event *
pmu_test_event(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event;

    HOST_ASSERT(pmu_test_nr_events < PMU_TEST_MAX_EVENTS);
    event = &pmu_test_events[pmu_test_nr_events++];
    HOST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    return event;
}

static struct perfmon_event *
pmu_test_attach_cpu(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event = pmu_test_event(id, flags);

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    return event;
}

static struct thread *
pmu_test_thread(void)
{
    struct thread *thread;

    HOST_ASSERT(pmu_test_nr_threads < PMU_TEST_MAX_THREADS);
    thread = &pmu_test_threads[pmu_test_nr_threads++];
    host_env_thread_init(thread);
    return thread;
}

static uint64_t
pmu_test_read(struct perfmon_event *event)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
    return value;
}

static unsigned int
pmu_test_counter(const struct perfmon_event *event)
{
    unsigned int counter, width;

    HOST_ASSERT(perfmon_slot_counter(pmu_test_dev(),
                                     perfmon_event_slot_index(event), &counter,
                                     &width));
    return counter;
}

static uint64_t
pmu_test_evtsel(uint64_t code, unsigned int flags)
{
    return code | MODEL_AMD_EVTSEL_EN
           | (PMU_TEST_HAS_PMI ? MODEL_AMD_EVTSEL_INT : 0)
           | ((flags & PERFMON_EF_KERN) ? MODEL_AMD_EVTSEL_OS : 0)
           | ((flags & PERFMON_EF_USER) ? MODEL_AMD_EVTSEL_USR : 0);
}

static void
pmu_test_assert_programmed(unsigned int n, uint64_t code, unsigned int flags)
{
    HOST_ASSERT(n < PMU_TEST_NR);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctl(n)),
                   pmu_test_evtsel(code, flags));

    if (PMU_TEST_V2) {
        HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL) & (1ULL << n));
    }
}

static void
pmu_test_deliver_pmi(void)
{
    HOST_ASSERT(model_amd_pmi_take());
    host_env_raise_trap(TRAP_PMI);
}

/* Let perfmon see the counters: the pending PMI, or the next poll. */
static void
pmu_test_catch_up(void)
{
    if (PMU_TEST_HAS_PMI) {
        if (model_amd_pmi_pending()) {
            pmu_test_deliver_pmi();
        }
    } else {
        host_env_advance(PMU_TEST_POLL_TICKS);
    }
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

HOST_TEST(setup_registers_device_and_idles_pmu)
{
    const struct pmu_amd_info *info;
    struct perfmon_dev *dev;
    uint64_t value;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_test_setup_error, 0);
    HOST_ASSERT_EQ(pmu_test_boot_faults, 0);

    info = pmu_amd_get_info();
    HOST_ASSERT_EQ(info->family, pmu_test_config.family);
    HOST_ASSERT_EQ(info->model, pmu_test_config.model);
    HOST_ASSERT_EQ(info->gen, PMU_TEST_GEN);
    HOST_ASSERT_EQ(info->ext_core, pmu_test_config.ext_core);
    HOST_ASSERT_EQ(info->perfmon_v2, pmu_test_config.perfmon_v2);
    HOST_ASSERT_EQ(info->nr_counters, PMU_TEST_NR);
    HOST_ASSERT_EQ(pmu_amd_get_ovf_mode(), PMU_TEST_OVF);

    dev = pmu_test_dev();
    HOST_ASSERT_STREQ(dev->name, "pmu_amd");
    HOST_ASSERT_EQ(dev->sw, false);
    HOST_ASSERT_EQ(dev->nr_counters, PMU_TEST_NR);
    HOST_ASSERT_EQ(dev->min_width, PMU_TEST_WIDTH);
    HOST_ASSERT_EQ(dev->overflow_intr, PMU_TEST_HAS_PMI);
    HOST_ASSERT_EQ(perfmon_dev_poll_ticks(dev), PMU_TEST_POLL_TICKS);

    /* What firmware left running is off, legacy aliases included. */
    for (unsigned int n = 0; n < PMU_TEST_NR; n++) {
        pmu_test_assert_disabled(n);
    }

    for (unsigned int n = 0; n < 4; n++) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_LEGACY_CTL(n)), 0);
    }

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL), 0);
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
    }

    if (PMU_TEST_HAS_PMI) {
        HOST_ASSERT_EQ(model_amd_lvt_pmc(),
                       perfmon_pmi_nmi() ? MODEL_AMD_LVT_NMI : TRAP_PMI);
    } else {
        HOST_ASSERT(model_amd_lvt_pmc() & MODEL_AMD_LVT_MASKED);
    }

    value = ~0ULL;
    HOST_ASSERT_EQ(syscnt_lookup("pmu_amd_pmis/0", &value), 0);
    HOST_ASSERT_EQ(value, pmu_amd_nr_pmis(0));
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

HOST_TEST(generic_events_program_the_family_codes)
{
    unsigned int flags = PERFMON_EF_KERN | PERFMON_EF_USER;

    pmu_test_begin();

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        uint64_t code = pmu_test_generic[PMU_TEST_GEN][id];
        struct perfmon_event *event;
        unsigned int n;

        if (code == 0) {
            HOST_ASSERT_EQ(perfmon_event_check(id, flags), ENODEV);
            continue;
        }

        HOST_ASSERT_EQ(pmu_amd_generic_code(PMU_TEST_GEN, id), code);
        event = pmu_test_attach_cpu(id, flags);
        n = pmu_test_counter(event);
        pmu_test_assert_programmed(n, code, flags);
        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
        pmu_test_assert_disabled(n);
    }

    pmu_test_end();
}

HOST_TEST(ring_flags_select_os_and_usr)
{
    static const unsigned int rings[] = {
        PERFMON_EF_KERN, PERFMON_EF_USER, PERFMON_EF_KERN | PERFMON_EF_USER,
    };

    pmu_test_begin();

    for (unsigned int i = 0; i < ARRAY_SIZE(rings); i++) {
        struct perfmon_event *event;

        event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, rings[i]);
        pmu_test_assert_programmed(pmu_test_counter(event),
                                   PMU_TEST_INSTRUCTIONS, rings[i]);
        model_amd_retire(PMU_TEST_INSTRUCTIONS, 10, MODEL_AMD_RING_KERN);
        model_amd_retire(PMU_TEST_INSTRUCTIONS, 1000, MODEL_AMD_RING_USER);
        HOST_ASSERT_EQ(pmu_test_read(event),
                       ((rings[i] & PERFMON_EF_KERN) ? 10 : 0)
                       + ((rings[i] & PERFMON_EF_USER) ? 1000 : 0));
        HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    }

    pmu_test_end();
}

HOST_TEST(raw_codes_with_modifiers_are_programmed)
{
    /* Event 0xC0, unit mask 0x01, edge, counter mask 2 with invert. */
    uint64_t code = 0xc0 | (0x01 << 8) | MODEL_AMD_EVTSEL_EDGE
                    | MODEL_AMD_EVTSEL_INV | MODEL_AMD_EVTSEL_CMASK(2);
    struct perfmon_event *event;

    pmu_test_begin();
    event = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_KERN);
    pmu_test_assert_programmed(pmu_test_counter(event), code,
                               PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * Event select bits 11:8 sit in PerfEvtSel bits 35:32 (AMD APM vol. 2,
 * 13.2.1): a raw code carrying them reaches the register whole.
 */
HOST_TEST(raw_code_with_extended_event_select_is_programmed)
{
    uint64_t code = (0x1ULL << 32) | 0x20 | (0x01 << 8);
    struct perfmon_event *event;

    pmu_test_begin();
    event = pmu_test_attach_cpu(code, PERFMON_EF_RAW | PERFMON_EF_KERN);
    pmu_test_assert_programmed(pmu_test_counter(event), code,
                               PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(refused_raw_codes_touch_no_register)
{
    static const uint64_t refused[] = {
        0xc0 | (1U << 16),              /* USR */
        0xc0 | (1U << 17),              /* OS */
        0xc0 | (1U << 19),              /* reserved */
        0xc0 | (1U << 20),              /* INT */
        0xc0 | (1U << 21),              /* reserved */
        0xc0 | (1U << 22),              /* EN */
        0xc0 | (1U << 23),              /* invert without counter mask */
        0xc0 | (1ULL << 40),            /* guest only */
        0xc0 | (1ULL << 41),            /* host only */
    };
    struct model_amd_regs before, after;
    unsigned long writes;
    const char *diff;

    pmu_test_begin();
    model_amd_snapshot(&before);
    writes = model_amd_nr_all_writes();

    for (unsigned int i = 0; i < ARRAY_SIZE(refused); i++) {
        struct perfmon_event *event;

        HOST_ASSERT_EQ(perfmon_event_check(refused[i], PERFMON_EF_RAW
                                                       | PERFMON_EF_KERN),
                       EINVAL);
        event = pmu_test_event(refused[i], PERFMON_EF_RAW | PERFMON_EF_KERN);
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), EINVAL);
    }

    model_amd_snapshot(&after);
    diff = model_amd_regs_diff(&before, &after);

    if (diff != NULL) {
        HOST_FAIL("a refused code changed a register: %s", diff);
    }

    HOST_ASSERT_EQ(model_amd_nr_all_writes(), writes);
    pmu_test_end();
}

HOST_TEST(exhausted_counters_multiplex)
{
    struct perfmon_event *extra;
    unsigned int counter, width;
    uint32_t seen = 0;

    pmu_test_begin();

    for (unsigned int i = 0; i < PMU_TEST_NR; i++) {
        struct perfmon_event *event;

        event = pmu_test_attach_cpu(0x10 + i, PERFMON_EF_RAW
                                              | PERFMON_EF_KERN);
        seen |= 1U << pmu_test_counter(event);
    }

    HOST_ASSERT_EQ(seen, (1U << PMU_TEST_NR) - 1);

    /* It waits for its turn, then a rotation gives it a counter. */
    extra = pmu_test_event(0x40, PERFMON_EF_RAW | PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(extra, 0), 0);
    HOST_ASSERT(!perfmon_slot_counter(pmu_test_dev(),
                                      perfmon_event_slot_index(extra), &counter,
                                      &width));
    HOST_ASSERT(perfmon_mux_rotate(pmu_test_dev()));
    HOST_ASSERT(perfmon_slot_counter(pmu_test_dev(),
                                     perfmon_event_slot_index(extra), &counter,
                                     &width));

    for (unsigned int i = 0; i < pmu_test_nr_events; i++) {
        HOST_ASSERT_EQ(perfmon_event_detach(&pmu_test_events[i]), 0);
    }

    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Counting                                                            */
/* ------------------------------------------------------------------ */

HOST_TEST(cpu_event_counts_exactly_with_drift)
{
    struct perfmon_event *event;
    uint64_t before;
    unsigned int n;

    pmu_test_begin();
    model_amd_set_drift(3);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    before = model_amd_nr_counted(n);
    model_amd_retire(PMU_TEST_CYCLES, 12345, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event),
                   model_amd_counted_at_read(n) - before);
    HOST_ASSERT(model_amd_counted_at_read(n) - before > 12345);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(thread_event_counts_only_while_switched_in)
{
    struct perfmon_event *event;
    struct thread *thread;

    pmu_test_begin();
    thread = pmu_test_thread();
    event = pmu_test_event(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 100, MODEL_AMD_RING_KERN);
    host_env_switch_in(thread);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 700, MODEL_AMD_RING_KERN);
    host_env_switch_out(thread);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 100, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(event), 700);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * Many wraps with drift: each round retires most of a period, so the
 * counter wraps every round or two; perfmon's count must equal what the
 * counter counted, exactly.
 */
HOST_TEST(hundreds_of_wraps_stay_exact)
{
    uint64_t before_pmis = pmu_amd_nr_pmis(0);
    uint64_t counted, wraps;
    struct perfmon_event *event;
    unsigned int n;

    pmu_test_begin();
    model_amd_set_drift(5);
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(1000), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    counted = model_amd_nr_counted(n);
    wraps = model_amd_nr_wraps(n);

    for (unsigned int round = 0; round < 300; round++) {
        model_amd_retire(PMU_TEST_CYCLES, PMU_TEST_PERIOD / 2 + round * 7,
                         MODEL_AMD_RING_KERN);
        pmu_test_catch_up();
    }

    HOST_ASSERT(model_amd_nr_wraps(n) - wraps >= 140);
    HOST_ASSERT_EQ(pmu_test_read(event),
                   model_amd_counted_at_read(n) - counted);

    if (PMU_TEST_HAS_PMI) {
        HOST_ASSERT(pmu_amd_nr_pmis(0) - before_pmis >= 140);
    }

    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(thread_counts_exactly_through_wraps_and_switches)
{
    struct perfmon_event *event;
    struct thread *thread;
    uint64_t expected = 0;

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(50), 0);
    thread = pmu_test_thread();
    event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);

    for (unsigned int round = 0; round < 50; round++) {
        host_env_switch_in(thread);
        model_amd_retire(MODEL_AMD_EV_BRANCHES, 40 + round,
                         MODEL_AMD_RING_KERN);
        expected += 40 + round;
        pmu_test_catch_up();
        host_env_switch_out(thread);
        model_amd_retire(MODEL_AMD_EV_BRANCHES, 1000, MODEL_AMD_RING_KERN);
    }

    HOST_ASSERT_EQ(pmu_test_read(event), expected);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Overflow interrupt                                                  */
/* ------------------------------------------------------------------ */

HOST_TEST(pmi_acknowledges_overflow_and_reports_once)
{
    uint64_t pmis, spurious, wraps;
    struct perfmon_event *event;
    unsigned int n;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(100), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    wraps = model_amd_nr_wraps(n);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 150, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(model_amd_nr_wraps(n) - wraps, 1);
    HOST_ASSERT(model_amd_pmi_pending());

    if (PMU_TEST_V2) {
        HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & (1ULL << n));
    } else {
        HOST_ASSERT(!(model_amd_msr(pmu_test_msr_ctr(n)) & PMU_TEST_TOP_BIT));
    }

    pmis = pmu_amd_nr_pmis(0);
    spurious = pmu_amd_nr_spurious(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0), pmis + 1);
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0), spurious);

    /* Acknowledged, and the LVT entry open for the next one. */
    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
        pmu_test_assert_programmed(n, PMU_TEST_INSTRUCTIONS,
                                   PERFMON_EF_KERN);
    } else {
        HOST_ASSERT(model_amd_msr(pmu_test_msr_ctr(n)) & PMU_TEST_TOP_BIT);
        pmu_test_assert_programmed(n, PMU_TEST_INSTRUCTIONS,
                                   PERFMON_EF_KERN);
    }

    HOST_ASSERT_EQ(model_amd_lvt_pmc() & MODEL_AMD_LVT_MASKED, 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 150);

    /* A second PMI with nothing new reports nothing. */
    host_env_raise_trap(TRAP_PMI);
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0), spurious + 1);
    HOST_ASSERT_EQ(pmu_test_read(event), 150);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(read_between_wrap_and_pmi_counts_wrap_once)
{
    struct perfmon_event *event;
    uint64_t spurious;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(100), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    model_amd_retire(PMU_TEST_INSTRUCTIONS, PMU_TEST_PERIOD + 50,
                     MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());

    /* The interrupt is held back; the read consumes the overflow. */
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_PERIOD + 50);
    spurious = pmu_amd_nr_spurious(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0), spurious + 1);
    HOST_ASSERT_EQ(pmu_test_read(event), PMU_TEST_PERIOD + 50);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(overflow_pending_at_detach_is_not_reported)
{
    struct perfmon_event *event, *next;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 20);

    /* The next user of the counter starts clean. */
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(0), 0);
    next = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    pmu_test_deliver_pmi();
    model_amd_retire(PMU_TEST_CYCLES, 5, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(next), 5);
    HOST_ASSERT_EQ(perfmon_event_detach(next), 0);
    pmu_test_end();
}

HOST_TEST(pmi_with_stuck_status_bit_gives_up_and_returns)
{
    struct perfmon_event *event;
    uint64_t giveups;
    unsigned int n;

    if (!PMU_TEST_V2) {
        return;
    }

    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_amd_set_start_gap(10), 0);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    model_amd_set_stuck_status(1ULL << n);
    giveups = pmu_amd_nr_pmi_giveups(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_pmi_giveups(0), giveups + 1);

    /* Reported once, not once per pass; counting goes on. */
    HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL) & (1ULL << n));
    model_amd_set_stuck_status(0);
    model_amd_poke(MODEL_AMD_MSR_GLOBAL_STATUS, 0);
    HOST_ASSERT_EQ(pmu_test_read(event), 20);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Switch budget                                                       */
/* ------------------------------------------------------------------ */

/*
 * A switch between two threads counting the same event (nothing else
 * keeps the counter in use) costs exactly one counter read, and no write
 * and no control register read (the driver's shadows stand in for them).
 * The overflow check adds one global status read per switch with
 * PerfMonV2, one more counter read (bit 47) in top-bit mode.
 */
HOST_TEST(switch_between_threads_with_same_events_only_reads)
{
    const unsigned long per_switch = 1 + (PMU_TEST_OVF == PMU_AMD_OVF_TOP_BIT);
    unsigned long writes, reads, counter_reads, status_reads = 0;
    struct perfmon_event *ea, *eb;
    struct thread *a, *b;
    unsigned long flags;

    pmu_test_begin();
    a = pmu_test_thread();
    b = pmu_test_thread();
    ea = pmu_test_event(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    eb = pmu_test_event(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(ea, a), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(eb, b), 0);
    host_env_switch_in(a);
    model_amd_retire(PMU_TEST_CYCLES, 10, MODEL_AMD_RING_KERN);

    writes = model_amd_nr_all_writes();
    reads = model_amd_nr_all_reads();
    counter_reads = model_amd_nr_counter_reads();

    if (PMU_TEST_V2) {
        status_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS);
    }

    flags = cpu_intr_save();
    perfmon_td_switch(&a->perfmon_td, &b->perfmon_td, cpu_get_tsc());
    cpu_intr_restore(flags);
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    flags = cpu_intr_save();
    perfmon_td_switch(&b->perfmon_td, &a->perfmon_td, cpu_get_tsc());
    cpu_intr_restore(flags);

    HOST_ASSERT_EQ(model_amd_nr_all_writes(), writes);
    counter_reads = model_amd_nr_counter_reads() - counter_reads;
    HOST_ASSERT_EQ(counter_reads, 2 * per_switch);

    if (PMU_TEST_V2) {
        status_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS)
                       - status_reads;
        HOST_ASSERT_EQ(status_reads, 2);
    }

    HOST_ASSERT_EQ(model_amd_nr_all_reads() - reads,
                   counter_reads + status_reads);

    model_amd_retire(PMU_TEST_CYCLES, 5, MODEL_AMD_RING_KERN);
    host_env_switch_out(a);
    HOST_ASSERT_EQ(pmu_test_read(ea), 15);
    HOST_ASSERT_EQ(pmu_test_read(eb), 20);
    HOST_ASSERT_EQ(perfmon_event_detach(ea), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(eb), 0);
    pmu_test_end();
}

/* Start and stop write, and never read, control registers. */
HOST_TEST(start_and_stop_never_read_control_registers)
{
    struct perfmon_event *event;
    unsigned long reads, ctl_reads, global_reads, counter_reads;
    unsigned long status_reads;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    reads = model_amd_nr_all_reads();
    ctl_reads = model_amd_nr_reads(pmu_test_msr_ctl(0));
    global_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_CTL);
    counter_reads = model_amd_nr_counter_reads();
    status_reads = model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS);
    event = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);

    /* Attach and detach read counters and the status, nothing else. */
    HOST_ASSERT_EQ(model_amd_nr_all_reads() - reads,
                   model_amd_nr_counter_reads() - counter_reads
                   + model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_STATUS)
                   - status_reads);
    HOST_ASSERT_EQ(model_amd_nr_reads(pmu_test_msr_ctl(0)), ctl_reads);
    HOST_ASSERT_EQ(model_amd_nr_reads(MODEL_AMD_MSR_GLOBAL_CTL),
                   global_reads);

    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Sampling support: preset and max_period                             */
/* ------------------------------------------------------------------ */

/* 2^46 with an overflow interrupt (both modes), 0 when polled. */
#define PMU_TEST_MAX_PERIOD     (PMU_TEST_HAS_PMI ? (1ULL << 46) : 0)
#define PMU_TEST_CTR_MASK       ((1ULL << 48) - 1)

HOST_TEST(max_period_is_two_to_the_46_with_a_pmi)
{
    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_test_dev()->max_period, PMU_TEST_MAX_PERIOD);
    HOST_ASSERT(pmu_test_dev()->ops->preset != NULL);
    pmu_test_end();
}

static uint64_t
pmu_test_preset(const struct perfmon_event *event, uint64_t n)
{
    unsigned long flags = cpu_intr_save();
    uint64_t value = pmu_test_dev()->ops->preset(pmu_test_counter(event), n);

    cpu_intr_restore(flags);
    return value;
}

/*
 * A preset of n writes 2^48 - n, bit 47 (the top-bit mode's flag) and
 * bit 46 set, up to 2^46; beyond, n is limited to 2^46, and below 2 to 2
 * (never an overflow on the next event).
 */
HOST_TEST(preset_writes_two_to_the_48_minus_n_and_limits_n)
{
    const uint64_t ns[] = { 1, 2, 1000, 1ULL << 31, 1ULL << 40,
                            PMU_TEST_MAX_PERIOD };
    const uint64_t beyond[] = { PMU_TEST_MAX_PERIOD + 1, PMU_TEST_TOP_BIT,
                                1ULL << 48, UINT64_MAX };
    const uint64_t longest = -PMU_TEST_MAX_PERIOD & PMU_TEST_CTR_MASK;
    struct perfmon_event *event;
    unsigned int n;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    n = pmu_test_counter(event);

    for (unsigned int k = 0; k < ARRAY_SIZE(ns); k++) {
        uint64_t value = -MAX(ns[k], 2) & PMU_TEST_CTR_MASK;

        HOST_ASSERT(value & PMU_TEST_TOP_BIT);
        HOST_ASSERT(value & (PMU_TEST_TOP_BIT >> 1));
        HOST_ASSERT_EQ(pmu_test_preset(event, ns[k]), value);
        HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)), value);
    }

    for (unsigned int k = 0; k < ARRAY_SIZE(beyond); k++) {
        HOST_ASSERT_EQ(pmu_test_preset(event, beyond[k]), longest);
        HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)), longest);
    }

    HOST_ASSERT_EQ(pmu_test_preset(event, 0), PMU_TEST_CTR_MASK - 1);
    pmu_test_assert_no_fault();
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * Counters preset to n overflow after exactly n events (in top-bit mode
 * their flag clears then); several overflowing before the PMI is taken
 * are each reported once by it, and the handler leaves no overflow
 * behind (flag set again, status clear).
 */
HOST_TEST(preset_counters_overflow_after_n_and_report_once_each)
{
    const uint64_t ns[3] = { 10, 20, 30 };
    struct perfmon_event *events[3];
    uint64_t overflows, pmis;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    events[0] = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION,
                                    PERFMON_EF_KERN);
    events[1] = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    events[2] = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    overflows = perfmon_cpu_nr_overflows(0);
    pmis = pmu_amd_nr_pmis(0);

    for (unsigned int k = 0; k < 3; k++) {
        pmu_test_preset(events[k], ns[k]);
    }

    model_amd_retire(PMU_TEST_INSTRUCTIONS, 9, MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 30, MODEL_AMD_RING_KERN);

    for (unsigned int k = 0; k < 3; k++) {
        unsigned int n = pmu_test_counter(events[k]);

        if (PMU_TEST_V2) {
            HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS)
                        & (1ULL << n));
        } else {
            HOST_ASSERT(!(model_amd_msr(pmu_test_msr_ctr(n))
                          & PMU_TEST_TOP_BIT));
        }
    }

    pmu_test_deliver_pmi();

    /* The model may have a second PMI pending: it reports nothing. */
    pmu_test_catch_up();
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 3);

    for (unsigned int k = 0; k < 3; k++) {
        unsigned int n = pmu_test_counter(events[k]);

        if (PMU_TEST_V2) {
            HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
        } else {
            HOST_ASSERT(model_amd_msr(pmu_test_msr_ctr(n))
                        & PMU_TEST_TOP_BIT);
        }
    }

    HOST_ASSERT(pmu_amd_nr_pmis(0) - pmis >= 1);

    for (unsigned int k = 0; k < 3; k++) {
        HOST_ASSERT_EQ(perfmon_event_detach(events[k]), 0);
    }

    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Sampling end to end (pmu_sample_test.c)                             */
/* ------------------------------------------------------------------ */

static void
pmu_test_sample_retire(unsigned int id, uint64_t n)
{
    model_amd_retire(pmu_test_generic[PMU_TEST_GEN][id], n,
                     MODEL_AMD_RING_KERN);
}

static uint64_t
pmu_test_sample_counter(unsigned int counter)
{
    return model_amd_msr(pmu_test_msr_ctr(counter));
}

/* Every counter is 48 bits, whatever perfmon counts of it. */
static unsigned int
pmu_test_sample_counter_width(unsigned int counter)
{
    (void)counter;
    return 48;
}

static int
pmu_test_sample_counter_of_msr(uint32_t msr)
{
    for (unsigned int n = 0; n < PMU_TEST_NR; n++) {
        if (msr == pmu_test_msr_ctr(n)) {
            return (int)n;
        }
    }

    return -1;
}

static struct perfmon_event *
pmu_test_sample_event(uint64_t id, unsigned int flags)
{
    return pmu_test_event(id, flags);
}

static unsigned long
pmu_test_sample_nr_accesses(void)
{
    return model_amd_nr_all_reads() + model_amd_nr_all_writes();
}

#define PMU_TEST_MSRS_EXT(msr) \
    msr(0), msr(1), msr(2), msr(3), msr(4), msr(5)

/* Every PMU register of the model. */
static const uint32_t pmu_test_msrs[] = {
    MODEL_AMD_MSR_LEGACY_CTL(0), MODEL_AMD_MSR_LEGACY_CTL(1),
    MODEL_AMD_MSR_LEGACY_CTL(2), MODEL_AMD_MSR_LEGACY_CTL(3),
    MODEL_AMD_MSR_LEGACY_CTR(0), MODEL_AMD_MSR_LEGACY_CTR(1),
    MODEL_AMD_MSR_LEGACY_CTR(2), MODEL_AMD_MSR_LEGACY_CTR(3),
    PMU_TEST_MSRS_EXT(MODEL_AMD_MSR_CTL), PMU_TEST_MSRS_EXT(MODEL_AMD_MSR_CTR),
    MODEL_AMD_MSR_GLOBAL_STATUS, MODEL_AMD_MSR_GLOBAL_CTL,
    MODEL_AMD_MSR_GLOBAL_CLR, MODEL_AMD_MSR_GLOBAL_SET,
};

/* In top-bit mode overflow_consume reads the counter before perfmon. */
static const struct pmu_sample_env pmu_test_sample_env = {
    .retire = pmu_test_sample_retire,
    .pmi_pending = model_amd_pmi_pending,
    .pmi_take = model_amd_pmi_take,
    .counter = pmu_test_sample_counter,
    .counter_width = pmu_test_sample_counter_width,
    .counter_of_msr = pmu_test_sample_counter_of_msr,
    .update_counter_reads = PMU_TEST_V2 ? 1 : 2,
    .set_rdmsr_hook = model_amd_set_rdmsr_hook,
    .event = pmu_test_sample_event,
    .thread = pmu_test_thread,
    .nr_accesses = pmu_test_sample_nr_accesses,
    .nr_msr_reads = model_amd_nr_reads,
    .nr_msr_writes = model_amd_nr_writes,
    .msrs = pmu_test_msrs,
    .nr_msrs = ARRAY_SIZE(pmu_test_msrs),
};

/* PMU_TEST_HAS_PMI for the preprocessor, which sees no enum. */
#if PMU_TEST_CONFIG != 5

HOST_TEST(sampling_cpu_event_one_sample_per_period_with_skid)
{
    pmu_test_begin();
    pmu_sample_check_cpu_event(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_sample_check_cpu_event(&pmu_test_sample_env, PERFMON_EV_INSTRUCTION);
    pmu_test_end();
}

HOST_TEST(sampling_thread_event_only_while_it_runs)
{
    pmu_test_begin();
    pmu_sample_check_thread_event(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_test_end();
}

/*
 * Two threads' samplers of one event on one counter: a switch between
 * them reads the counter once and presets it once, nothing else.
 */
HOST_TEST(switch_between_samplers_of_one_event_reads_once_presets_once)
{
    pmu_test_begin();
    pmu_sample_check_switch_samplers(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(switch_between_samplers_when_the_counter_wraps_around_it)
{
    pmu_test_begin();
    pmu_sample_check_switch_samplers_wraps(&pmu_test_sample_env,
                                           PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(switch_between_samplers_after_a_longest_preset_wrapped)
{
    pmu_test_begin();
    pmu_sample_check_switch_longest_preset(&pmu_test_sample_env,
                                           PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(sampling_several_counters_in_one_pmi_one_sample_each)
{
    const unsigned int ids[3] = {
        PERFMON_EV_BRANCH, PERFMON_EV_INSTRUCTION, PERFMON_EV_CYCLE,
    };

    pmu_test_begin();
    pmu_sample_check_several_in_one_pmi(&pmu_test_sample_env, ids);
    pmu_test_end();
}

HOST_TEST(sampling_period_beyond_max_period_samples_once)
{
    pmu_test_begin();
    pmu_sample_check_long_period(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(sampling_refresh_and_set_period)
{
    pmu_test_begin();
    pmu_sample_check_refresh_and_period(&pmu_test_sample_env,
                                        PERFMON_EV_BRANCH);
    pmu_test_end();
}

HOST_TEST(sampling_overflow_before_preset_is_discarded)
{
    pmu_test_begin();
    pmu_sample_check_overflow_before_preset(&pmu_test_sample_env,
                                            PERFMON_EV_BRANCH);
    pmu_test_end();
}

/*
 * The driver's half of the preset contract: an overflow pending on the
 * counter is never reported after a preset outside the PMI, which is the
 * counter write alone (PerfMonV2: the status bit stays, stale, and the
 * PMI already requested clears it and reports nothing, the counter's top
 * bit being set, while a status read outside the PMI returns nothing and
 * leaves the bit to the PMI; top-bit mode: the
 * flag set again by the write), and a period of 2 preset that way still
 * overflows and interrupts.
 */
HOST_TEST(preset_discards_an_overflow_pending_on_its_counter)
{
    struct perfmon_event *event;
    uint64_t bit, ctl, spurious, overflows;
    unsigned long ctl_writes, clr_writes, flags;
    unsigned int n;

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    bit = 1ULL << n;
    ctl = model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL);
    pmu_test_preset(event, 10);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 12, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());

    ctl_writes = model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CTL);
    clr_writes = model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CLR);
    HOST_ASSERT_EQ(pmu_test_preset(event, 2), PMU_TEST_CTR_MASK - 1);
    HOST_ASSERT_EQ(model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CTL), ctl_writes);
    HOST_ASSERT_EQ(model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CLR),
                   clr_writes);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & bit, bit);
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL), ctl);
        HOST_ASSERT(ctl & bit);
    } else {
        HOST_ASSERT(model_amd_msr(pmu_test_msr_ctr(n)) & PMU_TEST_TOP_BIT);
    }

    spurious = pmu_amd_nr_spurious(0);
    overflows = perfmon_cpu_nr_overflows(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);

    /* The same pending overflow met by a status read outside the PMI. */
    pmu_test_preset(event, 10);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 12, MODEL_AMD_RING_KERN);
    pmu_test_preset(event, 2);
    flags = cpu_intr_save();
    HOST_ASSERT_EQ(pmu_test_dev()->ops->overflow_consume(bit), 0);
    cpu_intr_restore(flags);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & bit, bit);
    }

    pmu_test_deliver_pmi();

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & bit, 0);
    }

    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0) - spurious, 2);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);

    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

HOST_TEST(sampling_period_below_two_is_einval)
{
    pmu_test_begin();
    pmu_sample_check_least_period(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_test_end();
}

/* The LVT entry once the PMI was requested: KVM's bug masks it. */
#define PMU_TEST_LVT_REQUESTED  (MODEL_AMD_LVT_NMI                      \
                                 | (pmu_test_config.lvt_masks           \
                                    ? MODEL_AMD_LVT_MASKED : 0))

/* CPU 0's sample records: each is the event's (cookie, period, idle). */
static unsigned int
pmu_test_collect_ips(struct perfmon_session *session, uint64_t cookie,
                     uint64_t period, uint64_t *ips, unsigned int max)
{
    union {
        struct perfmon_record_header header;
        struct perfmon_record_sample sample;
        uint8_t bytes[PERFMON_SESSION_RECORD_MAX];
    } buf;
    unsigned int nr = 0;
    size_t size;
    int error;

    while ((error = perfmon_session_read(session, 0, &buf, sizeof(buf),
                                         &size)) == 0) {
        HOST_ASSERT_EQ(buf.header.type, PERFMON_RECORD_SAMPLE);
        HOST_ASSERT_EQ(size, sizeof(buf.sample));
        HOST_ASSERT_EQ(buf.header.cpu, 0);
        HOST_ASSERT_EQ(buf.sample.cookie, cookie);
        HOST_ASSERT_EQ(buf.sample.period, period);
        HOST_ASSERT_EQ(buf.sample.tid, 0);
        HOST_ASSERT(nr < max);
        ips[nr++] = buf.sample.ip;
    }

    HOST_ASSERT_EQ(error, EAGAIN);
    return nr;
}

/*
 * The PMI as an NMI (the LVT entry in NMI delivery mode, perfmon.pmi=nmi,
 * the default) of a sampling counter, landing while a marked section is
 * open on the CPU (perfmon_nmi_enter, as a read or the context switch):
 * it touches no MSR and no perfmon state. The overflow stays pending
 * (PerfMonV2: the status bit; top-bit mode: bit 47 clear), the counter
 * as it wrapped, the LVT entry as delivery left it, no PMI counted, no
 * sample. The section's end runs the handler: one sample, carrying where
 * the NMI landed, the overflow acknowledged, the counter reloaded to the
 * period's rest (2^48 - (period - skid)), the entry unmasked, no EOI, the
 * count exact. The next overflow, no section open, is its NMI's.
 */
HOST_TEST(nmi_inside_a_section_is_handled_at_its_end)
{
    const uint64_t period = 1000, skid = 3, skid2 = 2, cookie = 0x4e4d49;
    const uintptr_t ip = 0xffffffff80123450, ip2 = 0xffffffff80123460;
    struct perfmon_session_stats stats;
    struct perfmon_session *session;
    struct perfmon_sample_attr attr;
    struct perfmon_event *event;
    uint64_t bit, nr, pmis, overflows, ips[4];
    unsigned long flags, eois, reads, writes;
    unsigned int n;

    HOST_ASSERT(perfmon_pmi_nmi());
    pmu_test_begin();
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), MODEL_AMD_LVT_NMI);

    /* A new tick: earlier tests' samples take none of its budget. */
    host_env_advance(1);
    HOST_ASSERT_EQ(perfmon_session_create(&session, 4096), 0);
    attr = (struct perfmon_sample_attr){
        .session = session, .period = period, .cookie = cookie,
    };
    event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    n = pmu_test_counter(event);
    bit = 1ULL << n;
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)),
                   -period & PMU_TEST_CTR_MASK);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, period - 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    pmis = pmu_amd_nr_pmis(0);
    overflows = perfmon_cpu_nr_overflows(0);
    eois = model_amd_nr_eois();

    /* The period ends, and its NMI lands, inside the section. */
    flags = cpu_intr_save();
    perfmon_nmi_enter();
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1 + skid, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), PMU_TEST_LVT_REQUESTED);
    reads = model_amd_nr_all_reads();
    writes = model_amd_nr_all_writes();
    host_env_set_intr_ctx(ip, 0);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);

    HOST_ASSERT_EQ(model_amd_nr_all_reads(), reads);
    HOST_ASSERT_EQ(model_amd_nr_all_writes(), writes);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)), skid);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), bit);
    }

    HOST_ASSERT_EQ(model_amd_lvt_pmc(), PMU_TEST_LVT_REQUESTED);
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0), pmis);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);
    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);
    HOST_ASSERT_EQ(nr, 0);
    HOST_ASSERT_EQ(perfmon_session_stats(session, 0, &stats), 0);
    HOST_ASSERT_EQ(stats.produced, 0);

    /* Its end handles the overflow, once. */
    perfmon_nmi_leave();
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);
    HOST_ASSERT_EQ(nr, 1);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)),
                   -(period - skid) & PMU_TEST_CTR_MASK);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
    pmu_test_assert_programmed(n, MODEL_AMD_EV_BRANCHES, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), MODEL_AMD_LVT_NMI);
    HOST_ASSERT(!model_amd_pmi_pending());
    cpu_intr_restore(flags);
    HOST_ASSERT_EQ(pmu_test_read(event), period + skid);

    /* The next period's overflow, no section open: its NMI handles it. */
    model_amd_retire(MODEL_AMD_EV_BRANCHES, period - skid - 1,
                     MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1 + skid2, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    host_env_set_intr_ctx(ip2, 0);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0) - pmis, 2);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);
    HOST_ASSERT_EQ(nr, 2);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)),
                   -(period - skid2) & PMU_TEST_CTR_MASK);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), MODEL_AMD_LVT_NMI);
    HOST_ASSERT_EQ(model_amd_nr_eois(), eois);
    HOST_ASSERT_EQ(pmu_test_read(event), 2 * period + skid2);

    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(pmu_test_collect_ips(session, cookie, period, ips,
                                        ARRAY_SIZE(ips)), 2);
    HOST_ASSERT_EQ(ips[0], ip);
    HOST_ASSERT_EQ(ips[1], ip2);
    HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    pmu_test_end();
}

#else /* PMU_TEST_CONFIG == 5 */

/* Polled: no PMI, no sampling; attach refuses a sampling event. */
HOST_TEST(sampling_event_attach_is_einval_when_polled)
{
    pmu_test_begin();
    pmu_sample_check_refused(&pmu_test_sample_env, PERFMON_EV_BRANCH);
    pmu_test_end();
}

#endif /* PMU_TEST_CONFIG */

#ifdef PMU_TEST_FAM15H

/* Every attached event that holds a counter holds one that counts it. */
static void
pmu_test_assert_confined(struct perfmon_event *const *events,
                         unsigned int nr, uint32_t confined)
{
    unsigned int counter, width;

    for (unsigned int k = 0; k < nr; k++) {
        if ((confined & (1U << k))
            && perfmon_slot_counter(pmu_test_dev(),
                                    perfmon_event_slot_index(events[k]),
                                    &counter, &width)) {
            HOST_ASSERT(counter <= 2);
        }
    }
}

/*
 * Family 15h: cycles (PMCx076) counts on PERF_CTL[2:0] only. Attached
 * after instructions, branches and branch misses, which any counter
 * counts, it still gets one of those three, and counts exactly. Then
 * more events confined there than the three counters (PMCx0D0, PMCx080,
 * PMCx081): they take turns, and no rotation moves one to a counter
 * that does not count it; a floating-point one (PMCx003) gets one of
 * PERF_CTL[5:3] once the others leave room.
 */
HOST_TEST(fam15h_events_get_only_counters_that_count_them)
{
    struct perfmon_event *events[7], *fp;
    uint64_t before;

    pmu_test_begin();
    events[0] = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    events[1] = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    events[2] = pmu_test_attach_cpu(PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    events[3] = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT(pmu_test_counter(events[3]) <= 2);
    model_amd_retire(MODEL_AMD_EV_CYCLES, 1000, MODEL_AMD_RING_KERN);
    model_amd_retire(MODEL_AMD_EV_INSTRUCTIONS, 500, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(events[3]), 1000);
    HOST_ASSERT_EQ(pmu_test_read(events[0]), 500);

    events[4] = pmu_test_attach_cpu(MODEL_AMD_CODE(0x0d0, 0x00),
                                    PERFMON_EF_RAW | PERFMON_EF_KERN);
    events[5] = pmu_test_attach_cpu(MODEL_AMD_CODE(0x080, 0x00),
                                    PERFMON_EF_RAW | PERFMON_EF_KERN);
    events[6] = pmu_test_attach_cpu(MODEL_AMD_CODE(0x081, 0x00),
                                    PERFMON_EF_RAW | PERFMON_EF_KERN);
    pmu_test_assert_confined(events, 7, 0x78);

    for (unsigned int r = 0; r < 8; r++) {
        HOST_ASSERT(perfmon_mux_rotate(pmu_test_dev()));
        pmu_test_assert_confined(events, 7, 0x78);

        /* Cycles counts exactly while it holds a counter. */
        before = pmu_test_read(events[3]);
        model_amd_retire(MODEL_AMD_EV_CYCLES, 10, MODEL_AMD_RING_KERN);

        if (pmu_test_read(events[3]) != before) {
            HOST_ASSERT_EQ(pmu_test_read(events[3]) - before, 10);
            HOST_ASSERT(pmu_test_counter(events[3]) <= 2);
        }
    }

    for (unsigned int k = 0; k < 7; k++) {
        HOST_ASSERT_EQ(perfmon_event_detach(events[k]), 0);
    }

    fp = pmu_test_attach_cpu(MODEL_AMD_CODE(0x003, 0x01),
                             PERFMON_EF_RAW | PERFMON_EF_KERN);
    HOST_ASSERT(pmu_test_counter(fp) >= 3);
    model_amd_retire(MODEL_AMD_CODE(0x003, 0x01), 7, MODEL_AMD_RING_KERN);
    HOST_ASSERT_EQ(pmu_test_read(fp), 7);
    HOST_ASSERT_EQ(perfmon_event_detach(fp), 0);
    pmu_test_end();
}

#endif /* PMU_TEST_FAM15H */

HOST_TEST_MAIN()
