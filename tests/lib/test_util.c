/*
 * Helpers shared by the in-kernel tests.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"

struct thread *
test_thread_start(const char *name, uint64_t affinity,
                  void (*fn)(void *arg), void *arg)
{
    struct thread_attr attr = { .name = name, .affinity = affinity };
    struct thread *thread = NULL;

    TEST_ASSERT_EQ(test_helper_start(&thread, &attr, fn, arg), 0);
    return thread;
}

void
test_spin_ticks(uint64_t ticks)
{
    uint64_t end = clock_get_time() + ticks;

    while (clock_get_time() < end) {
        cpu_pause();
    }
}

uint64_t
test_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

struct test_pace {
    uint64_t intrs;     /* the tick interrupt the units belong to */
    uint64_t units;
};

static struct test_pace test_pace[CPU_MAX];

/*
 * Emit n units on channel (and as many on channel + 1 at the same instant
 * when pair), paced to this CPU's share.
 */
static uint64_t
test_emit_paced_wait(unsigned int channel, uint64_t n, bool busy, bool pair)
{
    uint64_t rate = pmu_soft_max_rate();
    uint64_t units;

    n = MIN(n, pair ? rate / 2 : rate);
    units = pair ? 2 * n : n;

    for (;;) {
        /* Interrupts off: no migration or tick between check and emit. */
        unsigned long flags = cpu_intr_save();
        struct test_pace *pace = &test_pace[cpu_id()];
        uint64_t intrs = clock_nr_intrs(cpu_id());

        if (pace->intrs != intrs) {
            pace->intrs = intrs;
            pace->units = 0;
        }

        if (rate == UINT64_MAX || pace->units + units <= rate) {
            pace->units += units;
            pmu_soft_emit_channel(channel, n);

            if (pair) {
                pmu_soft_emit_channel(channel + 1, n);
            }

            cpu_intr_restore(flags);
            return n;
        }

        cpu_intr_restore(flags);

        if (busy) {
            test_spin_ticks(1);
        } else {
            thread_delay(1);
        }
    }
}

uint64_t
test_emit_paced(unsigned int channel, uint64_t n)
{
    return test_emit_paced_wait(channel, n, false, false);
}

uint64_t
test_emit_paced_busy(unsigned int channel, uint64_t n)
{
    return test_emit_paced_wait(channel, n, true, false);
}

uint64_t
test_emit_paced_pair(unsigned int channel, uint64_t n)
{
    return test_emit_paced_wait(channel, n, false, true);
}

void
test_require_cpus(unsigned int n)
{
    if (cpu_count() < n) {
        test_skip("needs more CPUs");
    }
}

static void
test_detach_undo(void *arg)
{
    struct perfmon_event *event = arg;

    if (perfmon_event_attached(event)) {
        perfmon_event_detach(event);
    }
}

void
test_detach_on_failure(struct perfmon_event *event)
{
    TEST_ASSERT_EQ(test_undo_on_failure(test_detach_undo, event), 0);
}

/* A group not attached (any more) refuses the detach: nothing to undo. */
static void
test_group_detach_undo(void *arg)
{
    perfmon_group_detach(arg);
}

void
test_group_detach_on_failure(struct perfmon_group *group)
{
    TEST_ASSERT_EQ(test_undo_on_failure(test_group_detach_undo, group), 0);
}
