/*
 * What the perfmon_session suite's files share (session_util.h).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/test.h>
#include <machine/cpu.h>

#include "session_util.h"
#include "test_util.h"

uint64_t
test_ss_word(unsigned int cpu, uint64_t seq, unsigned int i)
{
    return (seq * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)i << 56) ^ cpu;
}

bool
test_ss_produce(struct perfmon_session *session, uint64_t seq, size_t size)
{
    struct perfmon_session_ring *ring = perfmon_session_ring_local(session);
    struct perfmon_record_test *record;
    uint64_t *words;

    record = (seq & 1) ? perfmon_session_ring_reserve(ring, size)
                       : perfmon_session_reserve(session, size);

    if (record == NULL) {
        return false;
    }

    record->header.type = PERFMON_RECORD_TEST;
    record->header.size = (uint16_t)size;
    record->header.cpu = cpu_id();
    record->seq = seq;
    words = (uint64_t *)record;

    for (unsigned int i = 2; i < size / 8; i++) {
        words[i] = test_ss_word(cpu_id(), seq, i);
    }

    if (seq & 1) {
        perfmon_session_ring_commit(ring, record);
    } else {
        perfmon_session_commit(session, record);
    }

    return true;
}

uint64_t
test_ss_produce_n(struct perfmon_session *session, uint64_t first,
                  uint64_t n, size_t size)
{
    uint64_t nr_fitted = 0;

    for (uint64_t seq = first; seq < first + n; seq++) {
        unsigned long flags = cpu_intr_save();

        nr_fitted += test_ss_produce(session, seq, size);
        cpu_intr_restore(flags);
    }

    return nr_fitted;
}

/*
 * Check one record read from cpu's ring: whole (size, CPU and payload as
 * written), in order, and every gap in the sequence exactly the nr_lost
 * of the LOST record just before it.
 */
static void
test_ss_check(struct test_ss_stream *stream, unsigned int cpu,
              const uint64_t *buf, size_t size)
{
    const struct perfmon_record_header *header = (const void *)buf;

    TEST_ASSERT_EQ(header->size, size);
    TEST_ASSERT_EQ(header->cpu, cpu);

    if (header->type == PERFMON_RECORD_LOST) {
        const struct perfmon_record_lost *lost = (const void *)buf;

        TEST_ASSERT_EQ(size, sizeof(*lost));
        TEST_ASSERT(!stream->after_lost);
        TEST_ASSERT_GT(lost->nr_lost, 0);
        stream->lost += lost->nr_lost;
        stream->next_seq += lost->nr_lost;
        stream->nr_lost_records++;
        stream->after_lost = true;
        return;
    }

    TEST_ASSERT_EQ(header->type, PERFMON_RECORD_TEST);
    TEST_ASSERT_GE(size, TEST_SS_REC);
    TEST_ASSERT_EQ(((const struct perfmon_record_test *)buf)->seq,
                   stream->next_seq);

    for (unsigned int i = 2; i < size / 8; i++) {
        TEST_ASSERT_EQ(buf[i], test_ss_word(cpu, stream->next_seq, i));
    }

    stream->next_seq++;
    stream->received++;
    stream->after_lost = false;
}

/*
 * A LOST record is published with the record after it, so none can be
 * missing.
 */
int
test_ss_read_one(struct perfmon_session *session, unsigned int cpu,
                 struct test_ss_stream *stream)
{
    uint64_t buf[TEST_SS_WORDS_MAX];
    size_t size = 0;
    int error;

    error = perfmon_session_read(session, cpu, buf, sizeof(buf), &size);

    if (error == EAGAIN) {
        TEST_ASSERT(!stream->after_lost);
        return error;
    }

    TEST_ASSERT_EQ(error, 0);
    test_ss_check(stream, cpu, buf, size);
    return 0;
}

uint64_t
test_ss_drain(struct perfmon_session *session, unsigned int cpu,
              struct test_ss_stream *stream)
{
    uint64_t n = 0;

    while (test_ss_read_one(session, cpu, stream) == 0) {
        n++;
    }

    return n;
}

void
test_ss_expect_stats(struct perfmon_session *session, unsigned int cpu,
                     uint64_t produced, uint64_t read, uint64_t lost,
                     uint64_t dropped, uint64_t nr_lost_records)
{
    struct perfmon_session_stats stats;

    TEST_ASSERT_EQ(perfmon_session_stats(session, cpu, &stats), 0);
    TEST_ASSERT_EQ(stats.produced, produced);
    TEST_ASSERT_EQ(stats.read, read);
    TEST_ASSERT_EQ(stats.lost, lost);
    TEST_ASSERT_EQ(stats.dropped, dropped);
    TEST_ASSERT_EQ(stats.nr_lost_records, nr_lost_records);
    TEST_ASSERT_EQ(stats.throttled, 0);
}

struct perfmon_session *
test_ss_create(size_t ring_size)
{
    struct perfmon_session *session = NULL;

    TEST_ASSERT_EQ(perfmon_session_create(&session, ring_size), 0);
    TEST_ASSERT(session != NULL);
    return session;
}
