/*
 * What the host multiplexing tests (test_perfmon_mux.c,
 * test_perfmon_mux_groups.c, linked into one binary per device
 * configuration) share: the device PX_CONFIG chooses, the pool of events
 * and groups, the set-up and checks around each test, and the steps that
 * say what happened on the device. See test_perfmon_mux.c for the method.
 */
#ifndef TESTS_HOST_PERFMON_MUX_FIXTURE_H
#define TESTS_HOST_PERFMON_MUX_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>

#include "pmu_fake.h"

#if PX_CONFIG == 1
#define PX_NR_COUNTERS      1
#define PX_WIDTH        16
#define PX_INTR         true
#elif PX_CONFIG == 2
#define PX_NR_COUNTERS      2
#define PX_WIDTH        48
#define PX_INTR         true
#elif PX_CONFIG == 4
#define PX_NR_COUNTERS      4
#define PX_WIDTH        32
#define PX_INTR         false
#elif PX_CONFIG == 16
#define PX_NR_COUNTERS      PERFMON_MAX_COUNTERS
#define PX_WIDTH        64
#define PX_INTR         false
#else
#error "PX_CONFIG must be 1, 2, 4 or 16"
#endif

#define PX_S            PX_NR_COUNTERS
#define PX_STEP         1000            /* TSC cycles (ns) per step */
#define PX_UNITS        7               /* events per step and raw event */
#define PX_MAX_EVENTS   (PERFMON_MAX_SLOTS + 2)
#define PX_FLAGS        (PERFMON_EF_RAW | PERFMON_EF_KERN)
#define PX_CODE(i)      (0x10 + (i))    /* raw event i's code */
#define PX_CONFIG_OF(i) PMU_FAKE_CONFIG(PX_CODE(i), PX_FLAGS)

/*
 * Events and groups come from a pool, not from test stacks, so that
 * px_begin() can detach what a failed test left behind.
 */
extern struct perfmon_event px_events[PX_MAX_EVENTS];
extern struct perfmon_group px_groups[3];

/* The fake device. */
struct perfmon_dev *px_dev(void);

/*
 * Every test starts with nothing attached and no constraint (perfmon and
 * the device set up at the first test).
 */
void px_begin(void);

/* Whatever a test did, the device is left as it found it. */
void px_end(void);

/* Event i, initialized on raw event i (flags added to PX_FLAGS). */
struct perfmon_event *px_event(unsigned int i, unsigned int flags);

/* Events first to first + nr - 1 attached to CPU 0, on their raw events. */
void px_attach_cpu(unsigned int first, unsigned int nr, unsigned int flags);

/* Events first to first + nr - 1 detached. */
void px_detach(unsigned int first, unsigned int nr);

/* Whether event i counts on CPU 0 now (as a step with interrupts off). */
bool px_counting(unsigned int i);

/* Events counting among first to first + nr - 1, as a bit mask. */
uint64_t px_counting_mask(unsigned int first, unsigned int nr);

/*
 * Whether the slot of event i holds a counter (the schedule), and which
 * (UINT32_MAX if none) when counterp is not NULL.
 */
bool px_held(unsigned int i, unsigned int *counterp);

/*
 * One step of PX_STEP cycles: every raw event of events 0 to nr - 1
 * happens PX_UNITS times, and the events that count (noted before) are
 * expected to count them. turns[i] counts the steps event i counted in.
 */
void px_step(unsigned int nr, uint64_t *expected, unsigned int *turns);

/* Event i's value, read. */
struct perfmon_value px_value(unsigned int i);

#endif /* TESTS_HOST_PERFMON_MUX_FIXTURE_H */
