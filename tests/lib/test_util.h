/*
 * Helpers shared by the in-kernel tests.
 */
#ifndef TESTS_TEST_UTIL_H
#define TESTS_TEST_UTIL_H

#include <stdint.h>

#include <kern/test.h>
#include <kern/thread.h>

/*
 * Create a thread with a name, optional CPU mask (0: any) and priority
 * (0: default); fail the test when creation fails.
 */
struct thread *test_thread_start(const char *name, uint64_t affinity,
                                 void (*fn)(void *arg), void *arg);

struct perfmon_event;
struct perfmon_group;

/*
 * Detach event (group) if the test fails before it does: what a failed
 * test leaves attached fails the tests after it. The object must live as
 * long as the test function runs (test_undo_on_failure).
 */
void test_detach_on_failure(struct perfmon_event *event);
void test_group_detach_on_failure(struct perfmon_group *group);

/* Busy-wait (no sleep, no yield) until the clock passes ticks from now. */
void test_spin_ticks(uint64_t ticks);

/* A small deterministic PRNG (xorshift64*), for tests that shuffle. */
uint64_t test_rand(uint64_t *state);

/*
 * Emit n units on a software PMU channel, keeping this CPU within the rate
 * that polled narrow counters count exactly (pmu_soft_max_rate() units per
 * tick interrupt, all channels and threads of the CPU together): when this
 * tick's share is spent, sleep to the next tick. n is cut to the rate.
 * Return the units emitted. Thread context.
 */
uint64_t test_emit_paced(unsigned int channel, uint64_t n);

/* The same, busy-waiting for the next tick instead of sleeping. */
uint64_t test_emit_paced_busy(unsigned int channel, uint64_t n);

/*
 * The same, emitting n units on channel and n on channel + 1 at one
 * instant (interrupts disabled around the pair), 2n units of the CPU's
 * share; n is cut to half the rate. Return n. Thread context.
 */
uint64_t test_emit_paced_pair(unsigned int channel, uint64_t n);

/* Skip the running test unless at least n CPUs are online. */
void test_require_cpus(unsigned int n);

#endif /* TESTS_TEST_UTIL_H */
