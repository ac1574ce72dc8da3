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

/* Busy-wait (no sleep, no yield) until the clock passes ticks from now. */
void test_spin_ticks(uint64_t ticks);

/* A small deterministic PRNG (xorshift64*), for tests that shuffle. */
uint64_t test_rand(uint64_t *state);

/* Skip the running test unless at least n CPUs are online. */
void test_require_cpus(unsigned int n);

#endif /* TESTS_TEST_UTIL_H */
