/*
 * perfmon core, tested exactly with the software PMU: every unit a test
 * emits is accounted for, so every count has one right value. Here the
 * API's errors, slots and device registration; what CPU and thread events
 * count is in test_perfmon_count.c (same suite).
 *
 * The same suite runs with pmu_soft.width=64, 16 and 8 (polling), 12 and
 * 8 (overflow interrupt). With narrow polled counters, emitting threads
 * keep each CPU to the rate the software PMU promises (test_emit_paced);
 * with the overflow interrupt, bursts of at most TEST_PM_BURST_MAX units
 * wrap a counter at most once between two syncs.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/xcall.h>
#include <machine/cpu.h>

#include "perfmon_util.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* API errors                                                          */
/* ------------------------------------------------------------------ */

TEST_DEFINE(perfmon, init_rejects_bad_ids_and_flags)
{
    struct perfmon_event event;

    /* A refused init leaves the event untouched. */
    memset(&event, 0x5a, sizeof(event));
    TEST_ASSERT_EQ(perfmon_event_init(&event, 0, 0x100), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_init(&event, 0, PERFMON_EF_SW
                                                 | PERFMON_EF_RAW), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_init(&event, PERFMON_EV_CYCLE, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_init(&event, PERFMON_EV_CYCLE,
                                      PERFMON_EF_RAW), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_init(&event, PERFMON_NR_GENERIC_EVENTS,
                                      PERFMON_EF_KERN), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_init(NULL, 0, PERFMON_EF_SW), EINVAL);
    TEST_ASSERT_EQ(event.magic, 0x5a5a5a5a);

    /* The valid shapes. */
    TEST_ASSERT_EQ(perfmon_event_init(&event, PERFMON_EV_INSTRUCTION,
                                      PERFMON_EF_KERN | PERFMON_EF_USER), 0);
    TEST_ASSERT_EQ(perfmon_event_init(&event, 0x00c0, PERFMON_EF_RAW
                                                      | PERFMON_EF_USER), 0);
    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_TICK,
                                      PERFMON_EF_SW | PERFMON_EF_KERN), 0);
}

TEST_DEFINE(perfmon, attach_errors_change_nothing)
{
    struct perfmon_dev *soft = test_pm_soft_dev();
    struct perfmon_event event, garbage, other;
    struct thread *self = thread_self();
    unsigned int refs = self->refs;
    uint64_t value = 7;

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);

    /* Never initialized. */
    memset(&garbage, 0xa5, sizeof(garbage));
    TEST_ASSERT_EQ(perfmon_event_attach(&garbage, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&garbage, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_detach(&garbage), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_get(&garbage, &value), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read(&garbage), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(NULL, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_detach(NULL), EINVAL);

    /* Initialized but not attached. */
    test_pm_init(&event, PMU_SOFT_EV_EMIT);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_get(&event, &value), EINVAL);
    TEST_ASSERT_EQ(value, 7);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 0);

    /* Bad targets. */
    TEST_ASSERT_EQ(perfmon_event_attach(&event, NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_count()), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, ~0U), EINVAL);

    /* A software id the device does not know. */
    test_pm_init(&other, PMU_SOFT_NR_EVENTS);
    TEST_ASSERT_EQ(perfmon_event_attach(&other, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&other, 0), EINVAL);

    /* Attached twice. */
    TEST_ASSERT_EQ(perfmon_event_attach(&event, self), 0);
    TEST_ASSERT_EQ(self->refs, refs + 1);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, self), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), EINVAL);
    TEST_ASSERT_EQ(self->refs, refs + 1);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);

    /* Initialized again while attached: refused, nothing leaks. */
    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_TICK,
                                      PERFMON_EF_SW), EINVAL);
    TEST_ASSERT(perfmon_event_attached(&event));
    TEST_ASSERT_EQ(self->refs, refs + 1);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 1);

    /* The event still works after the refusals. */
    pmu_soft_emit(5);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 5);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 5);
    TEST_ASSERT_EQ(self->refs, refs);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
}

TEST_DEFINE(perfmon, hardware_event_without_pmu_is_enodev)
{
    struct perfmon_dev *soft = test_pm_soft_dev();
    struct perfmon_event event;

    if (perfmon_dev_get(false) != NULL) {
        test_skip("a hardware PMU is registered");
    }

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        TEST_ASSERT_EQ(perfmon_event_init(&event, id, PERFMON_EF_KERN), 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), ENODEV);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), ENODEV);
    }

    TEST_ASSERT_EQ(perfmon_event_init(&event, 0xc0, PERFMON_EF_RAW
                                                    | PERFMON_EF_KERN), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), ENODEV);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);

    /* Software events keep working. */
    test_pm_init(&event, PMU_SOFT_EV_EMIT);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), 0);
    pmu_soft_emit(3);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 3);
}

/* ------------------------------------------------------------------ */
/* Slots                                                               */
/* ------------------------------------------------------------------ */

/*
 * Slots: one per distinct raw event, shared by the events on one. Pinned
 * events hold their counters: with every counter pinned, a raw event more
 * could never count, pinned or not: EAGAIN, and nothing changes.
 */
TEST_DEFINE(perfmon, slots_shared_by_raw_event_and_pinned)
{
    struct perfmon_dev *soft = test_pm_soft_dev();
    struct perfmon_event events[PMU_SOFT_NR_COUNTERS];
    struct perfmon_event twin, extra, waiting;
    unsigned int refs = thread_self()->refs, counter, width;

    TEST_ASSERT_EQ(soft->nr_counters, PMU_SOFT_NR_COUNTERS);

    /* One distinct pinned event per counter: emit channels. */
    for (unsigned int i = 0; i < PMU_SOFT_NR_COUNTERS; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&events[i],
                                          PMU_SOFT_NR_EVENTS - 1 - i,
                                          PERFMON_EF_SW | PERFMON_EF_PINNED),
                       0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[i], 0), 0);
        TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), i + 1);
    }

    /* A pinned raw event more finds no counter, and nothing changes. */
    TEST_ASSERT_EQ(perfmon_event_init(&extra, PMU_SOFT_EV_CSWITCH,
                                      PERFMON_EF_SW | PERFMON_EF_PINNED), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&extra, 0), EAGAIN);
    TEST_ASSERT_EQ(perfmon_event_attach(&extra, thread_self()), EAGAIN);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), PMU_SOFT_NR_COUNTERS);
    TEST_ASSERT_EQ(thread_self()->refs, refs);
    TEST_ASSERT(!perfmon_event_attached(&extra));

    /* A multiplexed one could never have a turn: refused as well. */
    test_pm_init(&waiting, PMU_SOFT_EV_CSWITCH);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&waiting, 0), EAGAIN);
    TEST_ASSERT_EQ(perfmon_event_attach(&waiting, thread_self()), EAGAIN);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), PMU_SOFT_NR_COUNTERS);
    TEST_ASSERT_EQ(thread_self()->refs, refs);
    TEST_ASSERT(!perfmon_mux_rotate(soft));

    /* An event already counted shares its slot, thread or CPU. */
    test_pm_init(&twin, events[3].id);
    TEST_ASSERT_EQ(perfmon_event_attach(&twin, thread_self()), 0);
    TEST_ASSERT_EQ(perfmon_event_slot_index(&twin),
                   perfmon_event_slot_index(&events[3]));
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), PMU_SOFT_NR_COUNTERS);
    TEST_ASSERT_EQ(perfmon_event_detach(&twin), 0);

    /* Freeing one counter lets the refused event in. */
    TEST_ASSERT_EQ(perfmon_event_detach(&events[0]), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&extra, 0), 0);
    TEST_ASSERT(perfmon_slot_counter(soft, perfmon_event_slot_index(&extra),
                                     &counter, &width));
    TEST_ASSERT_EQ(perfmon_event_detach(&extra), 0);

    for (unsigned int i = 1; i < PMU_SOFT_NR_COUNTERS; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
}

/*
 * More raw events than counters attach, up to PERFMON_MAX_SLOTS; one
 * more is EAGAIN and changes nothing.
 */
TEST_DEFINE(perfmon, slots_exhausted)
{
    static struct perfmon_event events[PERFMON_MAX_SLOTS];
    struct perfmon_dev *soft = test_pm_soft_dev();
    struct perfmon_event extra;
    unsigned int refs = thread_self()->refs;

    TEST_ASSERT_LT(PERFMON_MAX_SLOTS, PMU_SOFT_NR_EVENTS);

    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        test_pm_init(&events[i], i);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[i], 0), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), PERFMON_MAX_SLOTS);
    test_pm_init(&extra, PERFMON_MAX_SLOTS);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&extra, 0), EAGAIN);
    TEST_ASSERT_EQ(perfmon_event_attach(&extra, thread_self()), EAGAIN);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), PERFMON_MAX_SLOTS);
    TEST_ASSERT_EQ(thread_self()->refs, refs);
    TEST_ASSERT(!perfmon_event_attached(&extra));

    for (unsigned int i = 0; i < PERFMON_MAX_SLOTS; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&events[i]), 0);
    }

    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */

static int
test_pm_fake_translate(uint64_t *configp, uint64_t id, unsigned int flags)
{
    (void)flags;
    *configp = id;
    return 0;
}

static int
test_pm_fake_alloc(unsigned int *counterp, unsigned int *widthp,
                   uint64_t config)
{
    (void)config;
    *counterp = 0;
    *widthp = 32;
    return 0;
}

static void
test_pm_fake_free(unsigned int counter)
{
    (void)counter;
}

static uint64_t
test_pm_fake_start(unsigned int counter, uint64_t config)
{
    (void)counter;
    (void)config;
    return 0;
}

static uint64_t
test_pm_fake_read(unsigned int counter)
{
    (void)counter;
    return 0;
}

static const struct perfmon_dev_ops test_pm_fake_ops = {
    .translate = test_pm_fake_translate,
    .alloc = test_pm_fake_alloc,
    .free = test_pm_fake_free,
    .start = test_pm_fake_start,
    .stop = test_pm_fake_free,
    .read = test_pm_fake_read,
};

static const struct perfmon_dev_ops test_pm_fake_ops_no_read = {
    .translate = test_pm_fake_translate,
    .alloc = test_pm_fake_alloc,
    .free = test_pm_fake_free,
    .start = test_pm_fake_start,
    .stop = test_pm_fake_free,
};

static void
test_pm_fake_intr(const struct perfmon_intr_ctx *ctx)
{
    (void)ctx;
}

static const struct perfmon_dev_ops test_pm_fake_ops_intr_no_consume = {
    .translate = test_pm_fake_translate,
    .alloc = test_pm_fake_alloc,
    .free = test_pm_fake_free,
    .start = test_pm_fake_start,
    .stop = test_pm_fake_free,
    .read = test_pm_fake_read,
    .handle_overflow_intr = test_pm_fake_intr,
};

/* Bad devices are refused and nothing is registered. */
TEST_DEFINE(perfmon, register_rejects_bad_devices)
{
    struct perfmon_dev *hw = perfmon_dev_get(false);
    struct perfmon_dev dev = {
        .name = "fake", .ops = &test_pm_fake_ops, .nr_counters = 4,
        .min_width = 32, .sw = false, .max_rate = 1000,
    };

    dev.nr_counters = 0;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.nr_counters = PERFMON_MAX_COUNTERS + 1;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.nr_counters = 4;
    dev.min_width = 0;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.min_width = 65;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.min_width = 32;

    /* Polled with no rate, or so fast that no poll period is safe. */
    dev.max_rate = 0;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.max_rate = (1ULL << 32) / 2 + 1;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.max_rate = 1000;

    dev.ops = &test_pm_fake_ops_no_read;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.ops = NULL;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);

    /* An overflow interrupt without its handler, or without consume. */
    dev.ops = &test_pm_fake_ops;
    dev.overflow_intr = true;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.ops = &test_pm_fake_ops_intr_no_consume;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.overflow_intr = false;

    /* A preset that ends overflows must stay in the top half. */
    dev.ops = &test_pm_fake_ops;
    dev.preset_ends_overflows = true;
    dev.max_period = (1ULL << 31) + 1;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EINVAL);
    dev.preset_ends_overflows = false;
    dev.max_period = 0;

    /* A second software device, or the soft PMU again. */
    dev.ops = &test_pm_fake_ops;
    dev.sw = true;
    TEST_ASSERT_EQ(perfmon_dev_register(&dev), EBUSY);
    TEST_ASSERT_EQ(perfmon_dev_register(test_pm_soft_dev()), EBUSY);

    TEST_ASSERT(perfmon_dev_get(true) == test_pm_soft_dev());
    TEST_ASSERT(perfmon_dev_get(false) == hw);
}
