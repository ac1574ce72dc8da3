/*
 * The fixture of the Intel PMU driver's host tests (test_pmu_intel*.c),
 * one binary per PMU configuration (PMU_TEST_VERSION, see
 * test_pmu_intel.c): the configuration's constants, the boot of the model,
 * perfmon and the driver, the pools of events and threads, the checks
 * every test ends with, and what several test files use (the generic
 * events' table, the overflow reports the driver makes). Single CPU
 * (host_env), CPU 0.
 */
#ifndef HOST_PMU_TEST_INTEL_H
#define HOST_PMU_TEST_INTEL_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/thread.h>
#include <machine/trap.h>

#include "host_test.h"
#include <pmu/model/pmu_model.h>

#define PMU_TEST_FIXED(j)   (MODEL_FIXED_BASE + (j))

#if PMU_TEST_VERSION == 1

#define PMU_TEST_NR_GP          2
#define PMU_TEST_GP_WIDTH       40
#define PMU_TEST_FIXED_WIDTH    0
#define PMU_TEST_FIXED_MASK     0x0
#define PMU_TEST_EVENTS         0x77
#define PMU_TEST_FULL_WIDTH     false
#define PMU_TEST_NR_COUNTERS        2
/* Half the time 2^40 events take at 100 per cycle at 1 GHz, in ticks. */
#define PMU_TEST_POLL_TICKS     549
#define PMU_TEST_UNAVAILABLE    PERFMON_EV_CACHE_REF

#elif PMU_TEST_VERSION == 2

#define PMU_TEST_NR_GP          4
#define PMU_TEST_GP_WIDTH       40
#define PMU_TEST_FIXED_WIDTH    40
#define PMU_TEST_FIXED_MASK     0x7
#define PMU_TEST_EVENTS         0x3f
#define PMU_TEST_FULL_WIDTH     false
#define PMU_TEST_NR_COUNTERS        7
#define PMU_TEST_POLL_TICKS     0
#define PMU_TEST_UNAVAILABLE    PERFMON_EV_BRANCH_MISS

#define PMU_TEST_HASWELL       true

#elif PMU_TEST_VERSION == 5

#define PMU_TEST_NR_GP          8
#define PMU_TEST_GP_WIDTH       48
#define PMU_TEST_FIXED_WIDTH    40
#define PMU_TEST_FIXED_MASK     0x5
#define PMU_TEST_EVENTS         0xef
#define PMU_TEST_FULL_WIDTH     true
#define PMU_TEST_NR_COUNTERS        10
#define PMU_TEST_POLL_TICKS     0
#define PMU_TEST_UNAVAILABLE    PERFMON_EV_CACHE_MISS

#else
#error "PMU_TEST_VERSION must be 1, 2 or 5"
#endif

#ifndef PMU_TEST_HASWELL
#define PMU_TEST_HASWELL        false
#endif

#define PMU_TEST_HAS_PMI        (PMU_TEST_VERSION >= 2)

/*
 * The LVT entry as the driver programs it: NMI delivery (perfmon.pmi=nmi,
 * the default, as here with an empty command line) or the PMI vector;
 * and the EOIs a PMI takes (an NMI none).
 */
#define PMU_TEST_LVT    (perfmon_nmi_enabled() ? MODEL_LVT_NMI : TRAP_PMI)
#define PMU_TEST_EOIS   (perfmon_nmi_enabled() ? 0UL : 1UL)
/* The narrowest counter, the width perfmon's device reports. */
#define PMU_TEST_MIN_WIDTH      ((PMU_TEST_FIXED_MASK == 0)               \
                                 ? PMU_TEST_GP_WIDTH                    \
                                 : MIN(PMU_TEST_GP_WIDTH,               \
                                       PMU_TEST_FIXED_WIDTH))
#define PMU_TEST_GP_PERIOD      (1ULL << PMU_TEST_GP_WIDTH)

#define PMU_TEST_MAX_EVENTS     16
#define PMU_TEST_MAX_THREADS    4

/* Rows of pmu_test_generics: one per generic event. */
#define PMU_TEST_NR_GENERICS    7

extern int pmu_test_perfmon_setup_error;
extern int pmu_test_setup_error;
extern unsigned int pmu_test_boot_faults;
extern struct model_regs pmu_test_regs_before_setup;
extern struct model_regs pmu_test_regs_after_setup;

/*
 * Events and threads come from pools, not from test stacks, so that
 * pmu_test_begin() can detach and unload what a failed test left behind.
 */
extern unsigned int pmu_test_nr_events;

struct perfmon_dev *pmu_test_dev(void);

void pmu_test_assert_no_fault(void);

#define pmu_test_assert_regs_eq(a, b)                                   \
    do {                                                                \
        const char *diff_ = model_regs_diff(a, b);                      \
                                                                        \
        if (diff_ != NULL) {                                            \
            HOST_FAIL("registers differ: %s", diff_);                   \
        }                                                               \
    } while (0)

void pmu_test_begin(void);

bool pmu_test_global_enabled(unsigned int counter);

/*
 * The counter cannot count: version 1, EN clear in its event select;
 * version 2 on, its IA32_PERF_GLOBAL_CTRL bit clear (the event select may
 * stay programmed: SDM vol. 3B, 21.2.2, the enables are ANDed).
 */
void pmu_test_assert_disabled(unsigned int counter);

void pmu_test_end(void);

struct perfmon_event *pmu_test_event(uint64_t id, unsigned int flags);

struct perfmon_event *pmu_test_attach_cpu(unsigned int id, unsigned int flags);

void pmu_test_detach_all(void);

struct thread *pmu_test_thread(void);

uint64_t pmu_test_read(struct perfmon_event *event);

/* The hardware counter behind an attached event. */
unsigned int pmu_test_counter(const struct perfmon_event *event);

/* What the driver must write to PERFEVTSELi for a code and flags. */
uint64_t pmu_test_evtsel(uint64_t code, unsigned int flags);

/* What the driver must write to a fixed counter's FIXED_CTR_CTRL field. */
uint64_t pmu_test_fixed_field(unsigned int flags);

uint64_t pmu_test_fixed_ctrl_field(unsigned int j);

/* The counter exists, counts code with flags, and is enabled. */
void pmu_test_assert_programmed(unsigned int counter, uint64_t code,
                                unsigned int flags);

void pmu_test_deliver_pmi(void);

/*
 * Let perfmon see the counters, as the hardware would make it: the pending
 * PMI with an interrupt, the poll timer's next firing without.
 */
void pmu_test_catch_up(void);

/* Events from one wrap of counter counter to the next. */
uint64_t pmu_test_period(unsigned int counter);

/* A counter's expected position, to know when it wraps. */
struct pmu_test_ref {
    uint64_t period;
    uint64_t pos;
    uint64_t wraps;
};

void pmu_test_ref_init(struct pmu_test_ref *ref, unsigned int counter);

/* The counter (re)starts gap events before a wrap. */
void pmu_test_ref_start(struct pmu_test_ref *ref, uint64_t gap);

void pmu_test_ref_add(struct pmu_test_ref *ref, uint64_t n);

/* A generic event, and where it must go: a counter id, or -errno. */
struct pmu_test_generic {
    unsigned int id;
    struct model_event event;
    struct model_event decoy;   /* a close event it must not count */
    int alone;                  /* attached by itself */
    int together;               /* attached after the rows above */
};

extern const struct pmu_test_generic pmu_test_generics[PMU_TEST_NR_GENERICS];

/*
 * The reports the driver makes, seen through the linker's --wrap of
 * perfmon_sample_report_overflow (the Makefile's HOST_LDFLAGS_pmu_intel_*): the
 * slot and the context of each, then perfmon's own handling. With
 * pmu_test_reload set, the wrapper first presets the counter to that
 * many events, as perfmon does for a sampling event.
 */
#define PMU_TEST_MAX_REPORTS    16

struct pmu_test_report {
    unsigned int counter;
    bool has_ctx;
    struct perfmon_intr_ctx ctx;
};

extern struct pmu_test_report pmu_test_reports[PMU_TEST_MAX_REPORTS];
extern unsigned int pmu_test_nr_reports;
extern uint64_t pmu_test_reload;

void pmu_test_reports_reset(void);

/* Preset event's counter to n, as perfmon does, interrupts disabled. */
uint64_t pmu_test_preset(const struct perfmon_event *event, uint64_t n);

/* The model event behind a generic event. */
struct model_event pmu_test_model_event(unsigned int id);

#endif /* HOST_PMU_TEST_INTEL_H */
