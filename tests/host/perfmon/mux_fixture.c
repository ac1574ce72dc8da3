/*
 * What the host multiplexing tests share (mux_fixture.h).
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <machine/cpu.h>

#include "host_env.h"
#include "host_test.h"
#include "mux_fixture.h"
#include "pmu_fake.h"

struct perfmon_event px_events[PX_MAX_EVENTS];
struct perfmon_group px_groups[3];
static bool px_booted;
static int px_setup_error;
static int px_register_error;

struct perfmon_dev *
px_dev(void)
{
    return pmu_fake_dev();
}

static void
px_boot(void)
{
    if (px_booted) {
        return;
    }

    px_booted = true;
    host_env_tsc_hold();
    px_setup_error = init_op_perfmon_setup.fn();
    px_register_error = pmu_fake_register(&(struct pmu_fake_config){
        .nr_counters = PX_NR_COUNTERS,
        .width = PX_WIDTH,
        .overflow_intr = PX_INTR,
        .max_rate = 1ULL << 20,
    });
}

/* Every test starts with nothing attached and no constraint. */
void
px_begin(void)
{
    px_boot();
    host_env_recover();
    HOST_ASSERT_EQ(px_setup_error, 0);
    HOST_ASSERT_EQ(px_register_error, 0);

    for (unsigned int g = 0; g < ARRAY_SIZE(px_groups); g++) {
        perfmon_group_detach(&px_groups[g]);
    }

    for (unsigned int i = 0; i < PX_MAX_EVENTS; i++) {
        if (perfmon_event_attached(&px_events[i])) {
            perfmon_event_detach(&px_events[i]);
        }
    }

    for (unsigned int i = 0; i < PX_MAX_EVENTS; i++) {
        pmu_fake_constrain(PX_CONFIG_OF(i), 0);
    }

    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(px_dev()), 0);
    HOST_ASSERT_EQ(pmu_fake_reserved(), 0);
}

/* Whatever a test did, the device is left as it found it. */
void
px_end(void)
{
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(px_dev()), 0);
    HOST_ASSERT_EQ(perfmon_cpu_nr_used_slots(0), 0);
    HOST_ASSERT_EQ(pmu_fake_reserved(), 0);
    HOST_ASSERT_EQ(pmu_fake_started(), 0);
    HOST_ASSERT_EQ(pmu_fake_nr_bad_frees(), 0);
    HOST_ASSERT_EQ(host_env_nr_locks_held(), 0);
    HOST_ASSERT(cpu_intr_enabled());
}

/* Event i, initialized on raw event i (flags added to PX_FLAGS). */
struct perfmon_event *
px_event(unsigned int i, unsigned int flags)
{
    struct perfmon_event *event = &px_events[i];

    HOST_ASSERT(i < PX_MAX_EVENTS);
    HOST_ASSERT_EQ(perfmon_event_init(event, PX_CODE(i), PX_FLAGS | flags),
                   0);
    return event;
}

/* Events first to first + nr - 1 attached to CPU 0, on their raw events. */
void
px_attach_cpu(unsigned int first, unsigned int nr, unsigned int flags)
{
    for (unsigned int i = first; i < first + nr; i++) {
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(px_event(i, flags), 0), 0);
    }
}

void
px_detach(unsigned int first, unsigned int nr)
{
    for (unsigned int i = first; i < first + nr; i++) {
        HOST_ASSERT_EQ(perfmon_event_detach(&px_events[i]), 0);
    }
}

/* Whether event i counts on CPU 0 now (as a step with interrupts off). */
bool
px_counting(unsigned int i)
{
    unsigned long flags = cpu_intr_save();
    bool counting = perfmon_cpu_event_counting(&px_events[i]);

    cpu_intr_restore(flags);
    return counting;
}

/* Events counting among first to first + nr - 1, as a bit mask. */
uint64_t
px_counting_mask(unsigned int first, unsigned int nr)
{
    uint64_t mask = 0;

    for (unsigned int i = first; i < first + nr; i++) {
        mask |= (uint64_t)px_counting(i) << (i - first);
    }

    return mask;
}

/* Whether the slot of event i holds a counter (the schedule). */
bool
px_held(unsigned int i, unsigned int *counterp)
{
    unsigned int counter, width;
    bool held;

    held = perfmon_slot_counter(px_dev(),
                                perfmon_event_slot_index(&px_events[i]),
                                &counter, &width);

    if (held) {
        HOST_ASSERT_EQ(width, PX_WIDTH);
    }

    if (counterp != NULL) {
        *counterp = held ? counter : UINT32_MAX;
    }

    return held;
}

/*
 * One step of PX_STEP cycles: every raw event of events 0 to nr - 1
 * happens PX_UNITS times, and the events that count (noted before) are
 * expected to count them. turns[i] counts the steps event i counted in.
 */
void
px_step(unsigned int nr, uint64_t *expected, unsigned int *turns)
{
    for (unsigned int i = 0; i < nr; i++) {
        if (px_counting(i)) {
            expected[i] += PX_UNITS;
            turns[i]++;
        }
    }

    for (unsigned int i = 0; i < nr; i++) {
        pmu_fake_count(PX_CONFIG_OF(i), PX_UNITS);
    }

    host_env_tsc_advance(PX_STEP);
}

struct perfmon_value
px_value(unsigned int i)
{
    struct perfmon_value value;

    HOST_ASSERT_EQ(perfmon_event_read_value(&px_events[i], &value), 0);
    return value;
}

