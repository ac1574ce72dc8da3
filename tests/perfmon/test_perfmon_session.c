/*
 * perfmon sessions: per-CPU record rings, tested with PERFMON_RECORD_TEST
 * records that carry a per-CPU sequence number and a payload derived
 * from it. Producers are pinned threads with interrupts disabled, as the
 * overflow path is. Every record is accounted for: read, reported lost by
 * a LOST record, or counted as dropped, so every count has one value.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/vm_page.h>
#include <machine/cpu.h>

#include "test_util.h"

#define TEST_PS_REC             sizeof(struct perfmon_record_test)
#define TEST_PS_WORDS_MAX       (PERFMON_SESSION_RECORD_MAX / 8)

/* What the payload word i of record seq of a CPU holds. */
static uint64_t
test_ps_word(unsigned int cpu, uint64_t seq, unsigned int i)
{
    return (seq * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)i << 56) ^ cpu;
}

/*
 * Offer record seq of size bytes to this CPU's ring. Return whether it
 * fitted. Odd records go through the inline producer of the overflow
 * path, even ones through the functions, so that every test covers both.
 * Interrupts disabled.
 */
static bool
test_ps_produce(struct perfmon_session *session, uint64_t seq, size_t size)
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
        words[i] = test_ps_word(cpu_id(), seq, i);
    }

    if (seq & 1) {
        perfmon_session_ring_commit(ring, record);
    } else {
        perfmon_session_commit(session, record);
    }

    return true;
}

/*
 * Offer records first..first+n-1 of size bytes, interrupts disabled
 * around each. Return how many fitted. Caller pinned to its CPU.
 */
static uint64_t
test_ps_produce_n(struct perfmon_session *session, uint64_t first,
                  uint64_t n, size_t size)
{
    uint64_t nr_fitted = 0;

    for (uint64_t seq = first; seq < first + n; seq++) {
        unsigned long flags = cpu_intr_save();

        nr_fitted += test_ps_produce(session, seq, size);
        cpu_intr_restore(flags);
    }

    return nr_fitted;
}

/* What the consumer saw of one CPU's records. */
struct test_ps_stream {
    uint64_t next_seq;          /* the sequence number due next */
    uint64_t received;          /* TEST records read */
    uint64_t lost;              /* sum of the LOST records' nr_lost */
    uint64_t nr_lost_records;
    bool after_lost;            /* the last record read was LOST */
};

/*
 * Check one record read from cpu's ring: whole (size, CPU and payload as
 * written), in order, and every gap in the sequence exactly the nr_lost
 * of the LOST record just before it.
 */
static void
test_ps_check(struct test_ps_stream *stream, unsigned int cpu,
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
    TEST_ASSERT_GE(size, TEST_PS_REC);
    TEST_ASSERT_EQ(((const struct perfmon_record_test *)buf)->seq,
                   stream->next_seq);

    for (unsigned int i = 2; i < size / 8; i++) {
        TEST_ASSERT_EQ(buf[i], test_ps_word(cpu, stream->next_seq, i));
    }

    stream->next_seq++;
    stream->received++;
    stream->after_lost = false;
}

/*
 * Read and check one record of cpu's ring. Return 0 or EAGAIN. A LOST
 * record is published with the record after it, so none can be missing.
 */
static int
test_ps_read_one(struct perfmon_session *session, unsigned int cpu,
                 struct test_ps_stream *stream)
{
    uint64_t buf[TEST_PS_WORDS_MAX];
    size_t size = 0;
    int error;

    error = perfmon_session_read(session, cpu, buf, sizeof(buf), &size);

    if (error == EAGAIN) {
        TEST_ASSERT(!stream->after_lost);
        return error;
    }

    TEST_ASSERT_EQ(error, 0);
    test_ps_check(stream, cpu, buf, size);
    return 0;
}

/* Read cpu's ring until empty; return the records read. */
static uint64_t
test_ps_drain(struct perfmon_session *session, unsigned int cpu,
              struct test_ps_stream *stream)
{
    uint64_t n = 0;

    while (test_ps_read_one(session, cpu, stream) == 0) {
        n++;
    }

    return n;
}

/* Read one record, which must be TEST record seq. */
static void
test_ps_expect_seq(struct perfmon_session *session, unsigned int cpu,
                   uint64_t seq)
{
    struct perfmon_record_test record;
    size_t size = 0;

    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, &record,
                                        sizeof(record), &size), 0);
    TEST_ASSERT_EQ(size, sizeof(record));
    TEST_ASSERT_EQ(record.header.type, PERFMON_RECORD_TEST);
    TEST_ASSERT_EQ(record.header.size, sizeof(record));
    TEST_ASSERT_EQ(record.header.cpu, cpu);
    TEST_ASSERT_EQ(record.seq, seq);
}

/* Read one record, which must be LOST with nr_lost. */
static void
test_ps_expect_lost(struct perfmon_session *session, unsigned int cpu,
                    uint64_t nr_lost)
{
    struct perfmon_record_lost record;
    size_t size = 0;

    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, &record,
                                        sizeof(record), &size), 0);
    TEST_ASSERT_EQ(size, sizeof(record));
    TEST_ASSERT_EQ(record.header.type, PERFMON_RECORD_LOST);
    TEST_ASSERT_EQ(record.header.size, sizeof(record));
    TEST_ASSERT_EQ(record.header.cpu, cpu);
    TEST_ASSERT_EQ(record.nr_lost, nr_lost);
}

static void
test_ps_expect_stats(struct perfmon_session *session, unsigned int cpu,
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

static struct perfmon_session *
test_ps_create(size_t ring_size)
{
    struct perfmon_session *session = NULL;

    TEST_ASSERT_EQ(perfmon_session_create(&session, ring_size), 0);
    TEST_ASSERT(session != NULL);
    return session;
}

/* ------------------------------------------------------------------ */
/* API errors                                                          */
/* ------------------------------------------------------------------ */

TEST_DEFINE(perfmon_session, create_rejects_bad_sizes)
{
    static const size_t bad[] = {
        0, 8, PERFMON_SESSION_RING_MIN / 2, PERFMON_SESSION_RING_MIN - 8,
        PERFMON_SESSION_RING_MIN + 8, 384, 3000, 4095,
        PERFMON_SESSION_RING_MAX - 4096, PERFMON_SESSION_RING_MAX + 1,
        PERFMON_SESSION_RING_MAX * 2, ~(size_t)0,
    };
    struct perfmon_session *session = (void *)0x5a5a;

    for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
        TEST_ASSERT_EQ(perfmon_session_create(&session, bad[i]), EINVAL);
        TEST_ASSERT(session == (void *)0x5a5a);
    }

    TEST_ASSERT_EQ(perfmon_session_create(NULL, 4096), EINVAL);

    /* The limits themselves are valid. */
    session = test_ps_create(PERFMON_SESSION_RING_MIN);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    session = test_ps_create(PERFMON_SESSION_RING_MAX);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

TEST_DEFINE(perfmon_session, destroy_errors_and_references)
{
    struct perfmon_session *session = test_ps_create(4096);
    unsigned int cpu;

    TEST_ASSERT_EQ(perfmon_session_destroy(NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_nr_refs(session), 0);
    perfmon_session_ref(session);
    perfmon_session_ref(session);
    TEST_ASSERT_EQ(perfmon_session_nr_refs(session), 2);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), EBUSY);

    /* A refused destroy changed nothing: the session still works. */
    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();
    TEST_ASSERT_EQ(test_ps_produce_n(session, 0, 1, TEST_PS_REC), 1);
    test_ps_expect_seq(session, cpu, 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);

    perfmon_session_unref(session);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), EBUSY);
    perfmon_session_unref(session);
    TEST_ASSERT_EQ(perfmon_session_nr_refs(session), 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* Rings of a page or more come from the page allocator: all go back. */
TEST_DEFINE(perfmon_session, destroy_frees_everything)
{
    struct perfmon_session *session;
    size_t before;

    /* A first cycle grows the heap's small-object caches, which keep it. */
    TEST_ASSERT_EQ(perfmon_session_destroy(test_ps_create(65536)), 0);

    before = vm_page_nr_free();
    session = test_ps_create(65536);
    TEST_ASSERT_LE(vm_page_nr_free() + cpu_count() * 16, before);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    TEST_ASSERT_EQ(vm_page_nr_free(), before);
}

/*
 * Create sessions with the largest rings until memory runs out, then
 * destroy them. Return the create error that stopped it (0: the array
 * filled first); the failed create must leave *sessionp alone and give
 * back the rings it had allocated (all but what the heap's small-object
 * caches may keep: a page or two).
 */
static int
test_ps_exhaust(struct perfmon_session **sessions, unsigned int max)
{
    struct perfmon_session *session = (void *)0x5a5a;
    unsigned int n = 0;
    size_t free_before = 0;
    int error = 0;

    while (n < max) {
        free_before = vm_page_nr_free();
        error = perfmon_session_create(&session, PERFMON_SESSION_RING_MAX);

        if (error != 0) {
            break;
        }

        sessions[n++] = session;
        session = (void *)0x5a5a;
    }

    if (error != 0) {
        TEST_ASSERT_EQ(error, ENOMEM);
        TEST_ASSERT(session == (void *)0x5a5a);
        TEST_ASSERT_LE(free_before, vm_page_nr_free() + 2);
    }

    while (n > 0) {
        TEST_ASSERT_EQ(perfmon_session_destroy(sessions[--n]), 0);
    }

    return error;
}

/*
 * ENOMEM, twice: the first run grows the heap's caches for the sessions'
 * small parts; after the second, every page is back.
 */
TEST_DEFINE(perfmon_session, create_enomem_frees_partial_work)
{
    static struct perfmon_session *sessions[1024];
    size_t after_first;

    if (test_ps_exhaust(sessions, ARRAY_SIZE(sessions)) == 0) {
        test_skip("memory outlasted 1024 sessions");
    }

    after_first = vm_page_nr_free();
    TEST_ASSERT_EQ(test_ps_exhaust(sessions, ARRAY_SIZE(sessions)), ENOMEM);
    TEST_ASSERT_LE(after_first, vm_page_nr_free() + 2);
}

TEST_DEFINE(perfmon_session, read_errors)
{
    struct perfmon_session *session = test_ps_create(4096);
    uint64_t buf[TEST_PS_WORDS_MAX];
    size_t size = 7;
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    TEST_ASSERT_EQ(perfmon_session_read(session, cpu_count(), buf,
                                        sizeof(buf), &size), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_read(session, ~0U, buf, sizeof(buf),
                                        &size), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, buf, sizeof(buf),
                                        &size), EAGAIN);
    TEST_ASSERT_EQ(size, 7);

    /* Too small a buffer leaves the record where it is. */
    TEST_ASSERT_EQ(test_ps_produce_n(session, 0, 1, 32), 1);
    memset(buf, 0xa5, sizeof(buf));
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, buf, 24, &size),
                   EMSGSIZE);
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, buf, 0, &size),
                   EMSGSIZE);
    TEST_ASSERT_EQ(size, 7);
    TEST_ASSERT_EQ(buf[0], 0xa5a5a5a5a5a5a5a5ULL);
    test_ps_expect_stats(session, cpu, 1, 0, 0, 0, 0);
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, buf, 32, &size), 0);
    TEST_ASSERT_EQ(size, 32);
    TEST_ASSERT_EQ(((struct perfmon_record_test *)buf)->seq, 0);
    TEST_ASSERT_EQ(buf[2], test_ps_word(cpu, 0, 2));
    TEST_ASSERT_EQ(buf[3], test_ps_word(cpu, 0, 3));
    test_ps_expect_stats(session, cpu, 1, 1, 0, 0, 0);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* Sizes the ring cannot frame are refused and count nothing. */
TEST_DEFINE(perfmon_session, reserve_rejects_bad_sizes)
{
    static const size_t bad[] = {
        0, 4, 12, 17, PERFMON_SESSION_RECORD_MAX + 8, 4096,
    };
    struct perfmon_session *session = test_ps_create(4096);
    unsigned long flags;
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
        flags = cpu_intr_save();
        TEST_ASSERT(perfmon_session_reserve(session, bad[i]) == NULL);
        cpu_intr_restore(flags);
    }

    test_ps_expect_stats(session, cpu, 0, 0, 0, 0, 0);

    /* The extremes that are valid. */
    TEST_ASSERT_EQ(test_ps_produce_n(session, 0, 1, 8), 1);
    TEST_ASSERT_EQ(test_ps_produce_n(session, 1, 1,
                                     PERFMON_SESSION_RECORD_MAX), 1);
    test_ps_expect_stats(session, cpu, 2, 0, 0, 0, 0);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

TEST_DEFINE(perfmon_session, watermark_wait_and_stats_errors)
{
    struct perfmon_session *session = test_ps_create(4096);
    struct perfmon_session_stats stats;

    TEST_ASSERT_EQ(perfmon_session_set_watermark(NULL, 1, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 0, 4097), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4096 / 8 + 1, 0),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4096 / 8, 4096),
                   0);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 0, 0), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(NULL, 0), EINVAL);

    memset(&stats, 0x5a, sizeof(stats));
    TEST_ASSERT_EQ(perfmon_session_stats(NULL, 0, &stats), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_stats(session, 0, NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_stats(session, cpu_count(), &stats),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_session_stats(session, PERFMON_SESSION_ALL_CPUS
                                                  - 1, &stats), EINVAL);
    TEST_ASSERT_EQ(stats.produced, 0x5a5a5a5a5a5a5a5aULL);
    TEST_ASSERT_EQ(stats.throttled, 0x5a5a5a5a5a5a5a5aULL);

    test_ps_expect_stats(session, 0, 0, 0, 0, 0, 0);
    test_ps_expect_stats(session, PERFMON_SESSION_ALL_CPUS, 0, 0, 0, 0, 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Records and loss                                                    */
/* ------------------------------------------------------------------ */

/*
 * A 256-byte ring holds 16 records of 16 bytes. Of 40 produced with no
 * consumer, records 0 to 15 are kept and 24 dropped; the next records
 * produced come after one LOST record saying 24.
 */
TEST_DEFINE(perfmon_session, loss_is_exact)
{
    struct perfmon_session *session = test_ps_create(256);
    const uint64_t capacity = 256 / TEST_PS_REC, k = 40;
    unsigned int cpu;
    uint64_t received = 0, lost = 0;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    for (uint64_t seq = 0; seq < k; seq++) {
        TEST_ASSERT_EQ(test_ps_produce_n(session, seq, 1, TEST_PS_REC),
                       seq < capacity);
    }

    test_ps_expect_stats(session, cpu, k, 0, 0, k - capacity, 0);

    for (uint64_t seq = 0; seq < capacity; seq++) {
        test_ps_expect_seq(session, cpu, seq);
        received++;
    }

    /* Drained, but the loss is only reported with the next record. */
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, NULL, 0, NULL),
                   EAGAIN);
    test_ps_expect_stats(session, cpu, k, capacity, 0, k - capacity, 0);

    TEST_ASSERT_EQ(test_ps_produce_n(session, k, 3, TEST_PS_REC), 3);
    test_ps_expect_lost(session, cpu, k - capacity);
    lost += k - capacity;

    for (uint64_t seq = k; seq < k + 3; seq++) {
        test_ps_expect_seq(session, cpu, seq);
        received++;
    }

    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, NULL, 0, NULL),
                   EAGAIN);
    TEST_ASSERT_EQ(received + lost, k + 3);
    test_ps_expect_stats(session, cpu, k + 3, received, lost, 0, 1);
    test_ps_expect_stats(session, PERFMON_SESSION_ALL_CPUS, k + 3, received,
                         lost, 0, 1);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        if (i != cpu) {
            test_ps_expect_stats(session, i, 0, 0, 0, 0, 0);
        }
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * Records of 24 bytes in a 256-byte ring: 10 fit, leaving 16 bytes at
 * the end. With 5 read, the LOST record takes those 16 bytes and the
 * record after it starts the buffer again; then a record too long for
 * the end goes after a pad the consumer never sees.
 */
TEST_DEFINE(perfmon_session, records_wrap_around_the_ring)
{
    struct perfmon_session *session = test_ps_create(256);
    struct test_ps_stream stream = { 0 };
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    TEST_ASSERT_EQ(test_ps_produce_n(session, 0, 30, 24), 10);

    for (unsigned int i = 0; i < 5; i++) {
        TEST_ASSERT_EQ(test_ps_read_one(session, cpu, &stream), 0);
    }

    /* Bytes 120 to 240 held: LOST at 240, record 30 at 256 (offset 0). */
    TEST_ASSERT_EQ(test_ps_produce_n(session, 30, 1, 24), 1);
    TEST_ASSERT_EQ(test_ps_drain(session, cpu, &stream), 7);
    TEST_ASSERT_EQ(stream.next_seq, 31);
    TEST_ASSERT_EQ(stream.received, 11);
    TEST_ASSERT_EQ(stream.lost, 20);

    /*
     * Empty at 280 (offset 24): 9 records of 24 bytes reach offset 240;
     * the next needs 24 bytes and 16 are left, so it goes after a pad.
     */
    TEST_ASSERT_EQ(test_ps_produce_n(session, 31, 9, 24), 9);
    TEST_ASSERT_EQ(test_ps_drain(session, cpu, &stream), 9);
    TEST_ASSERT_EQ(test_ps_produce_n(session, 40, 3, 24), 3);
    TEST_ASSERT_EQ(test_ps_drain(session, cpu, &stream), 3);
    TEST_ASSERT_EQ(stream.next_seq, 43);
    TEST_ASSERT_EQ(stream.received + stream.lost, 43);
    test_ps_expect_stats(session, cpu, 43, 23, 20, 0, 1);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * Random sizes from 8 to 256 bytes, random runs of production and
 * consumption on one CPU, rings of 512 bytes: every record read whole and
 * in order, each gap announced, and in the end everything accounted for.
 */
TEST_DEFINE(perfmon_session, random_sizes_stay_framed)
{
    struct perfmon_session *session = test_ps_create(512);
    struct test_ps_stream stream = { 0 };
    uint64_t rng = 0x5e55, seq = 0;
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    for (unsigned int round = 0; round < 2000; round++) {
        unsigned int nr_produce = test_rand(&rng) % 8;
        unsigned int nr_read = test_rand(&rng) % 8;

        for (unsigned int i = 0; i < nr_produce; i++) {
            size_t size = 8 * (2 + test_rand(&rng) % 31);

            test_ps_produce_n(session, seq++, 1, size);
        }

        for (unsigned int i = 0; i < nr_read; i++) {
            if (test_ps_read_one(session, cpu, &stream) != 0) {
                break;
            }
        }
    }

    test_ps_drain(session, cpu, &stream);

    /* The last drops are reported by one more record, which fits. */
    TEST_ASSERT_EQ(test_ps_produce_n(session, seq++, 1, TEST_PS_REC), 1);
    test_ps_drain(session, cpu, &stream);
    TEST_ASSERT_EQ(stream.next_seq, seq);
    TEST_ASSERT_EQ(stream.received + stream.lost, seq);
    TEST_ASSERT_GT(stream.lost, 0);
    TEST_ASSERT_GT(stream.received, 1000);
    test_ps_expect_stats(session, cpu, seq, stream.received, stream.lost, 0,
                         stream.nr_lost_records);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* Each CPU's records go to its own ring and say so. */
TEST_DEFINE(perfmon_session, records_stay_on_their_cpu)
{
    struct perfmon_session *session = test_ps_create(1024);
    unsigned int n = cpu_count();
    uint64_t total = 0;

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        thread_set_affinity(thread_self(), 1ULL << cpu);
        TEST_ASSERT_EQ(cpu_id(), cpu);
        TEST_ASSERT_EQ(test_ps_produce_n(session, 0, cpu + 1, TEST_PS_REC),
                       cpu + 1);
        total += cpu + 1;
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    test_ps_expect_stats(session, PERFMON_SESSION_ALL_CPUS, total, 0, 0, 0,
                         0);

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        struct test_ps_stream stream = { 0 };

        test_ps_expect_stats(session, cpu, cpu + 1, 0, 0, 0, 0);
        TEST_ASSERT_EQ(test_ps_drain(session, cpu, &stream), cpu + 1);
        test_ps_expect_stats(session, cpu, cpu + 1, cpu + 1, 0, 0, 0);
    }

    test_ps_expect_stats(session, PERFMON_SESSION_ALL_CPUS, total, total, 0,
                         0, 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Concurrent producers and consumer                                   */
/* ------------------------------------------------------------------ */

#define TEST_PS_CONC_RING       512
#define TEST_PS_CONC_BURST      100     /* before the consumer starts */
#define TEST_PS_CONC_RECORDS    6000    /* per producer */
#define TEST_PS_CONC_BATCH      4       /* records per interrupts-off run */

struct test_ps_producer {
    struct perfmon_session *session;
    struct thread *thread;
    volatile bool *go;
    const struct test_ps_stream *stream;   /* the consumer's view */
    volatile bool burst_done;
    volatile bool done;
    uint64_t nr_fitted;
};

static size_t
test_ps_conc_size(uint64_t seq)
{
    return TEST_PS_REC + 8 * (seq % 7);
}

static void
test_ps_producer_main(void *arg)
{
    struct test_ps_producer *p = arg;
    uint64_t seq = 0, rng = 0x9e37 + cpu_id();

    /* A burst the ring cannot hold: some records are surely dropped. */
    for (; seq < TEST_PS_CONC_BURST; seq++) {
        p->nr_fitted += test_ps_produce_n(p->session, seq, 1,
                                          test_ps_conc_size(seq));
    }

    p->burst_done = true;

    while (!*p->go) {
        cpu_pause();
    }

    while (seq < TEST_PS_CONC_RECORDS) {
        unsigned long flags = cpu_intr_save();

        for (unsigned int i = 0; (i < TEST_PS_CONC_BATCH)
                                 && (seq < TEST_PS_CONC_RECORDS); i++) {
            p->nr_fitted += test_ps_produce(p->session, seq,
                                            test_ps_conc_size(seq));
            seq++;
        }

        cpu_intr_restore(flags);

        /*
         * Now and then let the consumer come within a random distance
         * (bounded wait: after drops it cannot see the last records), so
         * the ring goes from full to not full many times.
         */
        if ((test_rand(&rng) & 3) == 0) {
            uint64_t behind = test_rand(&rng) % 48;

            for (unsigned int i = 0; (i < 20000)
                                     && (READ_ONCE(p->stream->next_seq)
                                         + behind < seq); i++) {
                cpu_pause();
            }
        }
    }

    p->done = true;
}

/*
 * Producers on CPUs 1 to n-1, the consumer on CPU 0 draining their rings
 * as they fill: no record torn or out of order, every gap announced by
 * the LOST record before it. Once the producers are done and the rings
 * drained, one more record on each CPU reports the last drops: then
 * received + lost == produced, exactly, per CPU and in total.
 */
TEST_DEFINE(perfmon_session, concurrent_consumer_sees_every_record)
{
    static struct test_ps_producer producers[CPU_MAX];
    static struct test_ps_stream streams[CPU_MAX];
    struct perfmon_session *session = test_ps_create(TEST_PS_CONC_RING);
    unsigned int n = cpu_count();
    volatile bool go = false;
    uint64_t received = 0, lost = 0, nr_lost_records = 0;
    bool all_done;

    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        producers[cpu] = (struct test_ps_producer){ .session = session,
                                                    .go = &go,
                                                    .stream = &streams[cpu] };
        streams[cpu] = (struct test_ps_stream){ 0 };
        producers[cpu].thread = test_thread_start("ps-producer", 1ULL << cpu,
                                                  test_ps_producer_main,
                                                  &producers[cpu]);
    }

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        while (!producers[cpu].burst_done) {
            thread_delay(1);
        }
    }

    go = true;

    do {
        all_done = true;

        for (unsigned int cpu = 1; cpu < n; cpu++) {
            all_done = all_done && producers[cpu].done;
        }

        for (unsigned int cpu = 1; cpu < n; cpu++) {
            test_ps_drain(session, cpu, &streams[cpu]);
        }
    } while (!all_done);

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        thread_join(producers[cpu].thread);
    }

    /* Drained: one more record on each CPU fits and reports what is left. */
    for (unsigned int cpu = 1; cpu < n; cpu++) {
        thread_set_affinity(thread_self(), 1ULL << cpu);
        TEST_ASSERT_EQ(test_ps_produce_n(session, TEST_PS_CONC_RECORDS, 1,
                                         TEST_PS_REC), 1);
    }

    thread_set_affinity(thread_self(), 1ULL << 0);

    for (unsigned int cpu = 1; cpu < n; cpu++) {
        struct test_ps_stream *s = &streams[cpu];

        test_ps_drain(session, cpu, s);
        TEST_ASSERT_EQ(s->next_seq, TEST_PS_CONC_RECORDS + 1);
        TEST_ASSERT_EQ(s->received + s->lost, TEST_PS_CONC_RECORDS + 1);
        TEST_ASSERT_EQ(s->received, producers[cpu].nr_fitted + 1);
        TEST_ASSERT_GE(s->lost, TEST_PS_CONC_BURST
                                - TEST_PS_CONC_RING / TEST_PS_REC);
        test_ps_expect_stats(session, cpu, TEST_PS_CONC_RECORDS + 1,
                             s->received, s->lost, 0, s->nr_lost_records);
        received += s->received;
        lost += s->lost;
        nr_lost_records += s->nr_lost_records;
    }

    TEST_ASSERT_EQ(received + lost, (n - 1) * (TEST_PS_CONC_RECORDS + 1));
    test_ps_expect_stats(session, PERFMON_SESSION_ALL_CPUS,
                         (n - 1) * (TEST_PS_CONC_RECORDS + 1), received,
                         lost, 0, nr_lost_records);
    test_diag("%llu records read, %llu lost in %llu LOST records",
              (unsigned long long)received, (unsigned long long)lost,
              (unsigned long long)nr_lost_records);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

TEST_DEFINE(perfmon_session, wait_times_out)
{
    struct perfmon_session *session = test_ps_create(4096);
    uint64_t t0;

    t0 = clock_get_time();
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);
    t0 = clock_get_time();
    TEST_ASSERT_EQ(perfmon_session_wait(session, 5), ETIMEDOUT);
    TEST_ASSERT_GE(clock_get_time() - t0, 5);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* Watermarks checked without waiting: records, then bytes. */
TEST_DEFINE(perfmon_session, watermark_counts_records_and_bytes)
{
    struct perfmon_session *session = test_ps_create(4096);
    struct test_ps_stream stream = { 0 };
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    /* Default: any record. */
    TEST_ASSERT_EQ(test_ps_produce_n(session, 0, 1, TEST_PS_REC), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);
    TEST_ASSERT_EQ(test_ps_drain(session, cpu, &stream), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);

    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 3, 0), 0);
    TEST_ASSERT_EQ(test_ps_produce_n(session, 1, 2, TEST_PS_REC), 2);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);
    TEST_ASSERT_EQ(test_ps_produce_n(session, 3, 1, TEST_PS_REC), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);
    TEST_ASSERT_EQ(test_ps_read_one(session, cpu, &stream), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);

    /* 2 records of 16 bytes held; 64 bytes wanted. */
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 0, 64), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);
    TEST_ASSERT_EQ(test_ps_produce_n(session, 4, 1, 32), 1);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);

    /* Either criterion wakes. */
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 3, 4096), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4, 4096), 0);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), ETIMEDOUT);

    TEST_ASSERT_EQ(test_ps_drain(session, cpu, &stream), 3);
    TEST_ASSERT_EQ(stream.next_seq, 5);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

struct test_ps_waker {
    struct perfmon_session *session;
    volatile unsigned int nr_committed;
};

/* Three records, a pause, the fourth that reaches the watermark. */
static void
test_ps_waker_main(void *arg)
{
    struct test_ps_waker *w = arg;

    thread_delay(2);

    for (uint64_t seq = 0; seq < 3; seq++) {
        TEST_ASSERT_EQ(test_ps_produce_n(w->session, seq, 1, TEST_PS_REC),
                       1);
        w->nr_committed++;
    }

    thread_delay(3);
    TEST_ASSERT_EQ(test_ps_produce_n(w->session, 3, 1, TEST_PS_REC), 1);
    w->nr_committed++;
}

/*
 * A waiter on CPU 0, a producer on the last CPU (the same one with one
 * CPU): wait returns once, and only once, 4 records are there.
 */
TEST_DEFINE(perfmon_session, wait_returns_at_watermark)
{
    struct perfmon_session *session = test_ps_create(4096);
    struct test_ps_waker w = { .session = session };
    unsigned int cpu = cpu_count() - 1;
    struct test_ps_stream stream = { 0 };
    struct thread *thread;
    uint64_t t0;

    thread_set_affinity(thread_self(), 1ULL << 0);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4, 0), 0);
    t0 = clock_get_time();
    thread = test_thread_start("ps-waker", 1ULL << cpu, test_ps_waker_main,
                               &w);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 1000), 0);
    TEST_ASSERT_LT(clock_get_time() - t0, 1000);

    /* Never early: the 4 records are readable now. */
    TEST_ASSERT_EQ(test_ps_drain(session, cpu, &stream), 4);
    TEST_ASSERT_EQ(stream.next_seq, 4);
    thread_join(thread);
    TEST_ASSERT_EQ(w.nr_committed, 4);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}
