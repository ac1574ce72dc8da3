/*
 * What the perfmon_session suite's files (test_perfmon_session.c,
 * test_perfmon_session_conc.c) share: PERFMON_RECORD_TEST records with a
 * per-CPU sequence number and a payload derived from it, their producers
 * (interrupts disabled, as the overflow path is) and a consumer that
 * checks every record it reads. Thread context, the running test's
 * thread.
 */
#ifndef TESTS_PERFMON_SESSION_UTIL_H
#define TESTS_PERFMON_SESSION_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>

#define TEST_SS_REC             sizeof(struct perfmon_record_test)
#define TEST_SS_WORDS_MAX       (PERFMON_SESSION_RECORD_MAX / 8)

/* What the payload word i of record seq of a CPU holds. */
uint64_t test_ss_word(unsigned int cpu, uint64_t seq, unsigned int i);

/*
 * Offer record seq of size bytes to this CPU's ring. Return whether it
 * fitted. Odd records go through the inline producer of the overflow
 * path, even ones through the functions, so that every test covers both.
 * Interrupts disabled.
 */
bool test_ss_produce(struct perfmon_session *session, uint64_t seq,
                     size_t size);

/*
 * Offer records first..first+n-1 of size bytes, interrupts disabled
 * around each. Return how many fitted. Caller pinned to its CPU.
 */
uint64_t test_ss_produce_n(struct perfmon_session *session, uint64_t first,
                           uint64_t n, size_t size);

/* What the consumer saw of one CPU's records. */
struct test_ss_stream {
    uint64_t next_seq;          /* the sequence number due next */
    uint64_t received;          /* TEST records read */
    uint64_t lost;              /* sum of the LOST records' nr_lost */
    uint64_t nr_lost_records;
    bool after_lost;            /* the last record read was LOST */
};

/*
 * Read and check one record of cpu's ring: whole (size, CPU and payload
 * as written), in order, and every gap in the sequence exactly the
 * nr_lost of the LOST record just before it. Return 0 or EAGAIN.
 */
int test_ss_read_one(struct perfmon_session *session, unsigned int cpu,
                     struct test_ss_stream *stream);

/* Read cpu's ring until empty; return the records read. */
uint64_t test_ss_drain(struct perfmon_session *session, unsigned int cpu,
                       struct test_ss_stream *stream);

/* The session's statistics for cpu (or PERFMON_SESSION_ALL_CPUS). */
void test_ss_expect_stats(struct perfmon_session *session, unsigned int cpu,
                          uint64_t produced, uint64_t read, uint64_t lost,
                          uint64_t dropped, uint64_t nr_lost_records);

/* A session of ring_size bytes per CPU; fails the test on error. */
struct perfmon_session *test_ss_create(size_t ring_size);

#endif /* TESTS_PERFMON_SESSION_UTIL_H */
