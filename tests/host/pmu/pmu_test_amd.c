/*
 * The fixture of the AMD PMU driver's host tests, see pmu_test_amd.h.
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
#include <pmu/pmu_x86_test.h>
#include <machine/trap.h>

#include "host_env.h"
#include "host_test.h"
#include <pmu/model/pmu_model_amd.h>
#include "pmu_sample_test.h"
#include "pmu_test_amd.h"

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
int pmu_test_setup_error;
unsigned int pmu_test_boot_faults;
struct perfmon_event pmu_test_events[PMU_TEST_MAX_EVENTS];
unsigned int pmu_test_nr_events;
static struct thread pmu_test_threads[PMU_TEST_MAX_THREADS];
static unsigned int pmu_test_nr_threads;

uint32_t
pmu_test_msr_ctl(unsigned int n)
{
    return pmu_test_config.ext_core ? MODEL_AMD_MSR_CTL(n)
                                    : MODEL_AMD_MSR_LEGACY_CTL(n);
}

uint32_t
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

struct perfmon_dev *
pmu_test_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);

    HOST_ASSERT(dev != NULL);
    return dev;
}

void
pmu_test_assert_no_fault(void)
{
    if (model_amd_nr_faults() != 0) {
        HOST_FAIL("%u #GP, first: %s", model_amd_nr_faults(),
                  model_amd_first_fault());
    }

    HOST_ASSERT_EQ(model_amd_nr_reserved_writes(), 0);
}

void
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

    pmu_sample_release(pmu_test_threads, pmu_test_nr_threads,
                       pmu_test_events, pmu_test_nr_events);

    pmu_test_nr_events = 0;
    pmu_test_nr_threads = 0;
    pmu_amd_set_start_gap(0);
    host_env_advance(PMU_TEST_POLL_TICKS);
    model_amd_clear_faults();
    pmu_test_dev();
}

void
pmu_test_assert_disabled(unsigned int n)
{
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctl(n)), 0);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL)
                       & (1ULL << n), 0);
    }
}

void
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

struct perfmon_event *
pmu_test_event(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event;

    HOST_ASSERT(pmu_test_nr_events < PMU_TEST_MAX_EVENTS);
    event = &pmu_test_events[pmu_test_nr_events++];
    HOST_ASSERT_EQ(perfmon_event_init(event, id, flags), 0);
    return event;
}

struct perfmon_event *
pmu_test_attach_cpu(uint64_t id, unsigned int flags)
{
    struct perfmon_event *event = pmu_test_event(id, flags);

    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    return event;
}

struct thread *
pmu_test_thread(void)
{
    struct thread *thread;

    HOST_ASSERT(pmu_test_nr_threads < PMU_TEST_MAX_THREADS);
    thread = &pmu_test_threads[pmu_test_nr_threads++];
    host_env_thread_init(thread);
    return thread;
}

uint64_t
pmu_test_read(struct perfmon_event *event)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
    return value;
}

unsigned int
pmu_test_counter(const struct perfmon_event *event)
{
    unsigned int counter, width;

    HOST_ASSERT(perfmon_slot_counter(pmu_test_dev(),
                                     perfmon_event_slot_index(event),
                                &counter, &width));
    return counter;
}

uint64_t
pmu_test_evtsel(uint64_t code, unsigned int flags)
{
    return code | MODEL_AMD_EVTSEL_EN
           | (PMU_TEST_HAS_PMI ? MODEL_AMD_EVTSEL_INT : 0)
           | ((flags & PERFMON_EF_KERN) ? MODEL_AMD_EVTSEL_OS : 0)
           | ((flags & PERFMON_EF_USER) ? MODEL_AMD_EVTSEL_USR : 0);
}

void
pmu_test_assert_programmed(unsigned int n, uint64_t code, unsigned int flags)
{
    HOST_ASSERT(n < PMU_TEST_NR);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctl(n)),
                   pmu_test_evtsel(code, flags));

    if (PMU_TEST_V2) {
        HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL) & (1ULL << n));
    }
}

void
pmu_test_deliver_pmi(void)
{
    HOST_ASSERT(model_amd_pmi_take());
    host_env_raise_trap(TRAP_PMI);
}

void
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
