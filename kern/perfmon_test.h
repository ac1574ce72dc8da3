/*
 * perfmon's queries for tests and the benchmark: what perfmon
 * holds (slots, counters, the schedule), and a few operations run on
 * demand that perfmon otherwise runs on its own (a poll, a rotation). Not
 * for other kernel code, which has kern/perfmon.h.
 */
#ifndef KERN_PERFMON_TEST_H
#define KERN_PERFMON_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>

/*
 * Whether slot index of dev holds a raw event that holds a counter, and
 * then the counter's id and width. Any context (a snapshot).
 */
bool perfmon_slot_counter(const struct perfmon_dev *dev, unsigned int index,
                          unsigned int *counterp, unsigned int *widthp);

/*
 * Inheritance: the members' records allocated and not yet freed (every
 * family's, roots included), for leak checks. Any context.
 */
unsigned int perfmon_family_nr_records_alive(void);

/*
 * Make the next nr allocations of members' records fail (0: none), as if
 * memory were exhausted, to test the creations that then fail. Any
 * context.
 */
void perfmon_family_fail_allocs(unsigned int nr);

/* The poll period of a device in ticks, 0 when it is not polled. */
uint64_t perfmon_dev_poll_ticks(const struct perfmon_dev *dev);

/*
 * Slots of a device holding a raw event, a snapshot taken without a lock.
 * Any context, interrupt handlers included.
 */
unsigned int perfmon_dev_nr_used_slots(struct perfmon_dev *dev);

/* The slot an attached event uses. Any context. */
unsigned int perfmon_event_slot_index(const struct perfmon_event *event);

/* Slots of all devices in use on a CPU (per-CPU tier). Any context. */
unsigned int perfmon_cpu_nr_used_slots(unsigned int cpu);

/* A CPU's overflow count (syscnt perfmon_overflows/<cpu>). */
uint64_t perfmon_cpu_nr_overflows(unsigned int cpu);

/*
 * Run the poll of dev on the calling CPU now, as its timer does (for the
 * benchmark). Local.
 */
void perfmon_cpu_poll_local(struct perfmon_dev *dev);

/*
 * Multiplexing. Whether an attached, enabled event's raw event holds a
 * counter on the calling CPU now (whether its count advances here; false
 * for an event that is not attached, disabled, or a clock, which holds
 * none): local, with
 * interrupts disabled, which keeps the answer true until they are
 * enabled (a rotation reaches a CPU through an interrupt). Meaningful on
 * a CPU where the event counts (its CPU, or its thread's while loaded):
 * elsewhere the CPU's copy of the schedule may lag, since changes reach
 * only the CPUs that use the slots they change.
 */
bool perfmon_cpu_event_counting(const struct perfmon_event *event);

/*
 * Rotate dev's multiplexed raw events now, as the rotation thread does,
 * and bring every CPU that uses a slot whose counter changed to the new
 * schedule before returning (the others follow when they next take such
 * a slot into use). Return
 * whether anything rotated (some raw event was waiting). Thread context.
 */
bool perfmon_mux_rotate(struct perfmon_dev *dev);

/* Rotations of dev so far (by the thread or perfmon_mux_rotate). */
uint64_t perfmon_mux_nr_rotations(const struct perfmon_dev *dev);

/*
 * The version of dev's schedule: it moves whenever a slot gains or loses
 * a counter, so a call that must move no counter leaves it as it was.
 * Any context.
 */
uint64_t perfmon_mux_sched_seq(const struct perfmon_dev *dev);

/* The rotation interval in ticks (perfmon.mux_ticks). Any context. */
uint64_t perfmon_mux_ticks(void);

/*
 * Take and release dev's lock (the global tier's) as an attach does, with
 * interrupts left as they are: for tests of what other contexts may do
 * meanwhile. Thread context.
 */
void perfmon_dev_test_lock(struct perfmon_dev *dev);
void perfmon_dev_test_unlock(struct perfmon_dev *dev);

#endif /* KERN_PERFMON_TEST_H */
