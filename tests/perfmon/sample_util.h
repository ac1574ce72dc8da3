/*
 * What the perfmon_sample suite's files (test_perfmon_sample.c,
 * test_perfmon_sample_period.c, test_perfmon_sample_throttle.c) share:
 * sessions and sampling events on the software PMU, the emitting function
 * samples must point into, and the drain of a CPU's ring that checks and
 * totals its records. Thread context, the running test's thread.
 */
#ifndef TESTS_PERFMON_SAMPLE_UTIL_H
#define TESTS_PERFMON_SAMPLE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_session.h>

#define TEST_PS_RING        (1U << 17)
#define TEST_PS_RECORD_MAX  PERFMON_SESSION_RECORD_MAX

/* One record as read from a ring, of any type. */
union test_ps_record {
    struct perfmon_record_header header;
    struct perfmon_record_sample sample;
    struct perfmon_record_lost lost;
    struct perfmon_record_throttle throttle;
    uint8_t bytes[TEST_PS_RECORD_MAX];
};

/* Where the suite's reads of a ring land. */
extern union test_ps_record test_ps_buf;

/* A session of size bytes per CPU; fails the test on error. */
struct perfmon_session *test_ps_session(size_t size);

/*
 * A software sampling event on raw event id, with the given session,
 * period and call chain depth, and the cookie 0xc0de0000 + id.
 */
void test_ps_init(struct perfmon_event *event, unsigned int id,
                  struct perfmon_session *session, uint64_t period,
                  unsigned int nr_frames);

/* Largest emit that cannot wrap a counter twice. */
uint64_t test_ps_max_emit(void);

/*
 * Emit n units on channel 0 from a function of its own: samples must
 * point into it (its name, "test_ps_emit", is what the tests look for).
 */
void test_ps_emit(uint64_t n);

/* Whether ip is in the function named fn. */
bool test_ps_in(uintptr_t ip, const char *fn);

/*
 * What a CPU's ring holds: sample records (checked against want_cookie,
 * want_tid unless ~0, and the emitting function fn unless NULL), LOST and
 * THROTTLE totals (each THROTTLE record checked against want_cookie, with
 * a period dropped at least).
 */
struct test_ps_drain {
    uint64_t nr_samples;
    uint64_t nr_lost;
    uint64_t nr_throttle_records;
    uint64_t throttled_periods;
    uint64_t throttled_events;
    uint64_t period_sum;
    uint64_t sample_size_min;   /* bytes of its sample records (0: none) */
    uint64_t sample_size_max;
};

/* Read cpu's ring until empty, adding what it held to d. */
void test_ps_drain(struct perfmon_session *session, unsigned int cpu,
                   uint64_t want_cookie, uint32_t want_tid, const char *fn,
                   struct test_ps_drain *d);

/* Pin the calling thread to cpu. */
void test_ps_pin(unsigned int cpu);

#endif /* TESTS_PERFMON_SAMPLE_UTIL_H */
