/*
 * Host tests of the Intel PMU driver (arch/x86/pmu/pmu_intel.c) with
 * perfmon, on PMUs that real machines and hypervisors present but the
 * main suite's (test_pmu_intel.c) do not. A PMU registers once per
 * process, so each binary boots one, chosen by QUIRK_CONFIG:
 *   1  fixedonly: version 5 with fixed counters 0 to 2 and no general
 *      counter (CPUID.0AH:EAX[15:8] 0), as some hypervisors give.
 *   2  partial: version 5 advertising 8 general counters and fixed
 *      counters 0 to 2, of which a hypervisor emulates general counters
 *      0 to 2 and fixed counters 0 and 2: the others' MSRs #GP.
 *   3  firmware: version 5, 4 general and 3 fixed counters, of which
 *      firmware enabled general counter 1 and fixed counter 1 before the
 *      kernel (and left general counter 3 programmed but stopped).
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/init.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <pmu/pmu_intel.h>

#include "host_env.h"
#include "host_test.h"
#include <pmu/model/pmu_model.h>

#define QUIRK_FIXED(j)          (MODEL_FIXED_BASE + (j))
#define QUIRK_MAX_EVENTS        12

#if QUIRK_CONFIG == 1

static const struct model_config quirk_config = {
    .max_leaf = 0x23,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(5, 0, 0, 8),
    .a_edx = MODEL_CPUID_A_EDX(3, 48),
    .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
};

#elif QUIRK_CONFIG == 2

static const struct model_config quirk_config = {
    .max_leaf = 0x23,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(5, 8, 48, 8),
    .a_edx = MODEL_CPUID_A_EDX(3, 48),
    .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
    .nr_gp_emulated = 3,
    .fixed_unemulated = 0x2,
};

#elif QUIRK_CONFIG == 3

static const struct model_config quirk_config = {
    .max_leaf = 0x23,
    .cpuid1_ecx = MODEL_CPUID1_ECX_PDCM,
    .a_eax = MODEL_CPUID_A_EAX(5, 4, 48, 8),
    .a_edx = MODEL_CPUID_A_EDX(3, 48),
    .perf_capabilities = MODEL_PERF_CAP_FW_WRITE,
};

/* Firmware's event on general counter 1 (LLC misses). */
#define QUIRK_FW_EVENT          MODEL_EV_LLC_MISSES

#else
#error "QUIRK_CONFIG must be 1 to 3"
#endif

static bool quirk_booted;
static unsigned int quirk_boot_faults;
static unsigned int quirk_boot_log_lines;
static struct model_regs quirk_regs_before_setup;

static struct perfmon_event quirk_events[QUIRK_MAX_EVENTS];
static unsigned int quirk_nr_events;

/* What firmware did before the kernel, where the configuration says. */
static void
quirk_firmware(void)
{
#if QUIRK_CONFIG == 3
    model_firmware_counter(1, QUIRK_FW_EVENT);
    model_firmware_counter(QUIRK_FIXED(1), MODEL_EV_CYCLES);
    model_poke(MODEL_MSR_EVTSEL(3), MODEL_EVTSEL_EN | MODEL_EVTSEL_OS
                                    | model_event_code(MODEL_EV_BRANCHES));
    model_poke(MODEL_MSR_GLOBAL_CTRL,
               model_msr(MODEL_MSR_GLOBAL_CTRL) & ~(1ULL << 3));
#endif
}

static void
quirk_boot(void)
{
    unsigned int log_lines;

    if (quirk_booted) {
        return;
    }

    quirk_booted = true;
    model_reset(&quirk_config);
    quirk_firmware();
    model_snapshot(&quirk_regs_before_setup);
    HOST_ASSERT_EQ(init_op_perfmon_setup.fn(), 0);
    log_lines = host_env_nr_log_lines();
    HOST_ASSERT_EQ(init_op_pmu_intel_setup.fn(), 0);
    quirk_boot_log_lines = host_env_nr_log_lines() - log_lines;
    quirk_boot_faults = model_nr_faults();
}

static struct perfmon_dev *
quirk_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);

    HOST_ASSERT(dev != NULL);
    return dev;
}

static void
quirk_assert_no_fault(void)
{
    if (model_nr_faults() != 0) {
        HOST_FAIL("%u #GP, first: %s", model_nr_faults(),
                  model_first_fault());
    }
}

static void
quirk_begin(void)
{
    quirk_boot();
    host_env_recover();
    quirk_nr_events = 0;
}

static void
quirk_end(void)
{
    for (unsigned int i = 0; i < quirk_nr_events; i++) {
        if (perfmon_event_attached(&quirk_events[i])) {
            HOST_ASSERT_EQ(perfmon_event_detach(&quirk_events[i]), 0);
        }
    }

    quirk_assert_no_fault();
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(quirk_dev()), 0);
    HOST_ASSERT_EQ(host_env_nr_locks_held(), 0);
}

static struct perfmon_event *
quirk_event(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event;

    HOST_ASSERT(quirk_nr_events < QUIRK_MAX_EVENTS);
    event = &quirk_events[quirk_nr_events++];
    HOST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    return event;
}

static __attribute__((unused)) struct perfmon_event *
quirk_attach_cpu(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event = quirk_event(id, flags);

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    return event;
}

static __attribute__((unused)) uint64_t
quirk_read(struct perfmon_event *event)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
    return value;
}

/* Whether an attached event holds a counter, and which. */
static bool
quirk_counter(const struct perfmon_event *event, unsigned int *counterp)
{
    unsigned int width;

    return perfmon_slot_counter(quirk_dev(), perfmon_event_slot_index(event),
                                counterp, &width);
}

#if QUIRK_CONFIG == 1

static struct thread quirk_thread;

/*
 * Fixed counters only: a slot that never held a counter on the CPU (an
 * instructions event of other rings, waiting for fixed counter 0) is
 * never read, at a switch or anywhere: its counter id names no counter,
 * and reading general counter 0 would #GP (a panic in the kernel).
 */
HOST_TEST(fixed_only_pmu_never_reads_a_general_counter)
{
    struct perfmon_event *kern, *user, *cycles;
    struct thread *thread = &quirk_thread;
    unsigned int counter;

    quirk_begin();
    HOST_ASSERT_EQ(quirk_boot_faults, 0);
    HOST_ASSERT_EQ(quirk_dev()->nr_counters, 3);
    HOST_ASSERT_EQ(pmu_intel_get_info()->nr_gp, 0);

    host_env_thread_init(thread);
    kern = quirk_event(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    user = quirk_event(PERFMON_EV_INSTRUCTION, PERFMON_EF_USER);
    cycles = quirk_event(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_attach(kern, thread), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(user, thread), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(cycles, thread), 0);
    HOST_ASSERT(quirk_counter(kern, &counter));
    HOST_ASSERT_EQ(counter, QUIRK_FIXED(0));
    HOST_ASSERT(!quirk_counter(user, &counter));

    host_env_switch_in(thread);
    model_retire(MODEL_EV_INSTRUCTIONS, 100, MODEL_RING_KERN);
    model_retire(MODEL_EV_CYCLES, 300, MODEL_RING_KERN);
    HOST_ASSERT_EQ(quirk_read(user), 0);
    host_env_switch_out(thread);
    quirk_assert_no_fault();
    HOST_ASSERT_EQ(quirk_read(kern), 100);
    HOST_ASSERT_EQ(quirk_read(cycles), 300);

    /* Its turn: the user event gets fixed counter 0 and counts. */
    HOST_ASSERT(perfmon_mux_rotate(quirk_dev()));
    HOST_ASSERT(quirk_counter(user, &counter));
    HOST_ASSERT_EQ(counter, QUIRK_FIXED(0));
    host_env_switch_in(thread);
    model_retire(MODEL_EV_INSTRUCTIONS, 40, MODEL_RING_USER);
    model_retire(MODEL_EV_INSTRUCTIONS, 7, MODEL_RING_KERN);
    host_env_switch_out(thread);
    quirk_assert_no_fault();
    HOST_ASSERT_EQ(quirk_read(user), 40);
    HOST_ASSERT_EQ(quirk_read(kern), 100);
    quirk_end();
}

#elif QUIRK_CONFIG == 2

/*
 * A hypervisor that emulates fewer counters than CPUID.0AH advertises:
 * setup probes every counter through the safe accessors, uses those
 * that work (general counters 0 to 2, fixed counters 0 and 2), says so
 * in one line, and never touches the others: no #GP, no panic.
 */
HOST_TEST(partially_emulated_pmu_uses_the_counters_that_work)
{
    const struct pmu_intel_info *info;
    struct perfmon_event *events[6];
    unsigned int counter;

    quirk_begin();
    HOST_ASSERT_EQ(quirk_boot_faults, 0);
    HOST_ASSERT(model_nr_handled_faults() != 0);
    info = pmu_intel_get_info();
    HOST_ASSERT_EQ(info->nr_gp, 3);
    HOST_ASSERT_EQ(info->fixed_mask, 0x5);
    HOST_ASSERT_EQ(quirk_dev()->nr_counters, 5);
    HOST_ASSERT_EQ(host_env_nr_log_lines_with("using 3 general counters"),
                   1);

    /* Every counter that works is used, and counts exactly. */
    events[0] = quirk_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    events[1] = quirk_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_KERN);
    events[2] = quirk_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    events[3] = quirk_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    events[4] = quirk_attach_cpu(PERFMON_EV_CACHE_REF, PERFMON_EF_KERN);
    events[5] = quirk_attach_cpu(PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);

    for (unsigned int k = 0; k < 5; k++) {
        HOST_ASSERT(quirk_counter(events[k], &counter));
        HOST_ASSERT(counter < 3 || counter == QUIRK_FIXED(0)
                    || counter == QUIRK_FIXED(2));
    }

    HOST_ASSERT(!quirk_counter(events[5], &counter));
    model_retire(MODEL_EV_CYCLES, 70, MODEL_RING_KERN);
    model_retire(MODEL_EV_BRANCHES, 30, MODEL_RING_KERN);
    HOST_ASSERT_EQ(quirk_read(events[2]), 70);
    HOST_ASSERT_EQ(quirk_read(events[3]), 30);
    HOST_ASSERT(perfmon_mux_rotate(quirk_dev()));
    HOST_ASSERT(quirk_counter(events[5], &counter));
    HOST_ASSERT(counter < 3);
    quirk_end();
}

#else /* QUIRK_CONFIG == 3 */

/*
 * Counters firmware enabled before the kernel (general counter 1, fixed
 * counter 1) are left alone: setup writes none of their registers, the
 * driver never hands them out, they keep counting firmware's event, and
 * one line says so; perfmon's device names them (perf list shows them).
 * A counter left programmed but stopped (general counter 3, its global
 * enable clear) is not firmware's, and is used.
 */
HOST_TEST(counters_firmware_enabled_are_left_alone)
{
    const uint64_t fw_bits = (1ULL << 1) | (1ULL << QUIRK_FIXED(1));
    struct perfmon_event *events[6];
    bool seen3 = false;
    unsigned int counter;
    uint64_t fw_count, fw_cycles;

    quirk_begin();
    HOST_ASSERT_EQ(quirk_boot_faults, 0);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(1)),
                   quirk_regs_before_setup.evtsel[1]);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_FIXED_CTRL),
                   quirk_regs_before_setup.fixed_ctrl);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), fw_bits);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(3)), 0);
    HOST_ASSERT_EQ(quirk_dev()->fw_counters, fw_bits);
    HOST_ASSERT_EQ(quirk_dev()->nr_counters, 5);
    HOST_ASSERT_EQ(host_env_nr_log_lines_with("firmware holds"), 1);

    fw_count = model_msr(MODEL_MSR_PMC(1));
    fw_cycles = model_msr(MODEL_MSR_FIXED_CTR(1));
    events[0] = quirk_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    events[1] = quirk_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    events[2] = quirk_attach_cpu(PERFMON_EV_REF_CYCLE, PERFMON_EF_KERN);
    events[3] = quirk_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    events[4] = quirk_attach_cpu(PERFMON_EV_CACHE_REF, PERFMON_EF_KERN);
    events[5] = quirk_attach_cpu(PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);

    for (unsigned int r = 0; r < 4; r++) {
        for (unsigned int k = 0; k < ARRAY_SIZE(events); k++) {
            if (quirk_counter(events[k], &counter)) {
                HOST_ASSERT(!(fw_bits & (1ULL << counter)));
                seen3 |= (counter == 3);
            }
        }

        HOST_ASSERT(perfmon_mux_rotate(quirk_dev()));
    }

    HOST_ASSERT(seen3);
    model_retire(QUIRK_FW_EVENT, 50, MODEL_RING_KERN);
    model_retire(MODEL_EV_CYCLES, 20, MODEL_RING_USER);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_PMC(1)) - fw_count, 50);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_FIXED_CTR(1)) - fw_cycles, 20);
    quirk_end();

    /*
     * Detached, firmware's counters are as firmware left them (the other
     * fixed fields stay programmed: the global enables stop them).
     */
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_EVTSEL(1)),
                   quirk_regs_before_setup.evtsel[1]);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_FIXED_CTRL) & MODEL_FIXED_FIELD(1, 0xf),
                   quirk_regs_before_setup.fixed_ctrl);
    HOST_ASSERT_EQ(model_msr(MODEL_MSR_GLOBAL_CTRL), fw_bits);
}

#endif /* QUIRK_CONFIG */

HOST_TEST_MAIN()
