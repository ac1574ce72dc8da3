/*
 * perfmon sessions: per-CPU record rings, tested with PERFMON_RECORD_TEST
 * records that carry a per-CPU sequence number and a payload derived
 * from it. Producers are pinned threads with interrupts disabled, as the
 * overflow path is. Every record is accounted for: read, reported lost by
 * a LOST record, or counted as dropped, so every count has one value.
 * Suite perfmon_session: this file checks the API's errors and the
 * records and their loss on one ring at a time,
 * test_perfmon_session_conc.c concurrent producers and consumer and the
 * waits; what they share is in session_util.h.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/vm_page.h>
#include <machine/cpu.h>

#include "session_util.h"
#include "test_util.h"

/* Read one record, which must be TEST record seq. */
static void
test_ss_expect_seq(struct perfmon_session *session, unsigned int cpu,
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
test_ss_expect_lost(struct perfmon_session *session, unsigned int cpu,
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
    session = test_ss_create(PERFMON_SESSION_RING_MIN);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    session = test_ss_create(PERFMON_SESSION_RING_MAX);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

TEST_DEFINE(perfmon_session, destroy_errors_and_references)
{
    struct perfmon_session *session = test_ss_create(4096);
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
    TEST_ASSERT_EQ(test_ss_produce_n(session, 0, 1, TEST_SS_REC), 1);
    test_ss_expect_seq(session, cpu, 0);
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
    TEST_ASSERT_EQ(perfmon_session_destroy(test_ss_create(65536)), 0);

    before = vm_page_nr_free();
    session = test_ss_create(65536);
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
test_ss_exhaust(struct perfmon_session **sessions, unsigned int max)
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

    if (test_ss_exhaust(sessions, ARRAY_SIZE(sessions)) == 0) {
        test_skip("memory outlasted 1024 sessions");
    }

    after_first = vm_page_nr_free();
    TEST_ASSERT_EQ(test_ss_exhaust(sessions, ARRAY_SIZE(sessions)), ENOMEM);
    TEST_ASSERT_LE(after_first, vm_page_nr_free() + 2);
}

TEST_DEFINE(perfmon_session, read_errors)
{
    struct perfmon_session *session = test_ss_create(4096);
    uint64_t buf[TEST_SS_WORDS_MAX];
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
    TEST_ASSERT_EQ(test_ss_produce_n(session, 0, 1, 32), 1);
    memset(buf, 0xa5, sizeof(buf));
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, buf, 24, &size),
                   EMSGSIZE);
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, buf, 0, &size),
                   EMSGSIZE);
    TEST_ASSERT_EQ(size, 7);
    TEST_ASSERT_EQ(buf[0], 0xa5a5a5a5a5a5a5a5ULL);
    test_ss_expect_stats(session, cpu, 1, 0, 0, 0, 0);
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, buf, 32, &size), 0);
    TEST_ASSERT_EQ(size, 32);
    TEST_ASSERT_EQ(((struct perfmon_record_test *)buf)->seq, 0);
    TEST_ASSERT_EQ(buf[2], test_ss_word(cpu, 0, 2));
    TEST_ASSERT_EQ(buf[3], test_ss_word(cpu, 0, 3));
    test_ss_expect_stats(session, cpu, 1, 1, 0, 0, 0);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* Sizes the ring cannot frame are refused and count nothing. */
TEST_DEFINE(perfmon_session, reserve_rejects_bad_sizes)
{
    static const size_t bad[] = {
        0, 4, 12, 17, PERFMON_SESSION_RECORD_MAX + 8, 4096,
    };
    struct perfmon_session *session = test_ss_create(4096);
    unsigned long flags;
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
        flags = cpu_intr_save();
        TEST_ASSERT(perfmon_session_reserve(session, bad[i]) == NULL);
        cpu_intr_restore(flags);
    }

    test_ss_expect_stats(session, cpu, 0, 0, 0, 0, 0);

    /* The extremes that are valid. */
    TEST_ASSERT_EQ(test_ss_produce_n(session, 0, 1, 8), 1);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 1, 1,
                                     PERFMON_SESSION_RECORD_MAX), 1);
    test_ss_expect_stats(session, cpu, 2, 0, 0, 0, 0);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

TEST_DEFINE(perfmon_session, watermark_wait_and_stats_errors)
{
    struct perfmon_session *session = test_ss_create(4096);
    struct perfmon_session_stats stats;

    TEST_ASSERT_EQ(perfmon_session_set_watermark(NULL, 1, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 0, 4097), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4096 / 8 + 1, 0),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4096 / 8, 4096),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 0,
                       PERFMON_SESSION_WM_BYTES_MAX(4096) + 1), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 4096 / 8,
                       PERFMON_SESSION_WM_BYTES_MAX(4096)), 0);
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

    test_ss_expect_stats(session, 0, 0, 0, 0, 0, 0);
    test_ss_expect_stats(session, PERFMON_SESSION_ALL_CPUS, 0, 0, 0, 0, 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * 48-byte records fill a 4096-byte ring to 4080 bytes only: a byte
 * watermark at the maximum accepted is still reached.
 */
TEST_DEFINE(perfmon_session, watermark_at_the_maximum_is_reached)
{
    struct perfmon_session *session = test_ss_create(4096);

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    TEST_ASSERT_EQ(perfmon_session_set_watermark(session, 0,
                       PERFMON_SESSION_WM_BYTES_MAX(4096)), 0);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 0, 200, 48), 4096 / 48);
    TEST_ASSERT_EQ(perfmon_session_wait(session, 0), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
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
    struct perfmon_session *session = test_ss_create(256);
    const uint64_t capacity = 256 / TEST_SS_REC, k = 40;
    unsigned int cpu;
    uint64_t received = 0, lost = 0;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    for (uint64_t seq = 0; seq < k; seq++) {
        TEST_ASSERT_EQ(test_ss_produce_n(session, seq, 1, TEST_SS_REC),
                       seq < capacity);
    }

    test_ss_expect_stats(session, cpu, k, 0, 0, k - capacity, 0);

    for (uint64_t seq = 0; seq < capacity; seq++) {
        test_ss_expect_seq(session, cpu, seq);
        received++;
    }

    /* Drained, but the loss is only reported with the next record. */
    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, NULL, 0, NULL),
                   EAGAIN);
    test_ss_expect_stats(session, cpu, k, capacity, 0, k - capacity, 0);

    TEST_ASSERT_EQ(test_ss_produce_n(session, k, 3, TEST_SS_REC), 3);
    test_ss_expect_lost(session, cpu, k - capacity);
    lost += k - capacity;

    for (uint64_t seq = k; seq < k + 3; seq++) {
        test_ss_expect_seq(session, cpu, seq);
        received++;
    }

    TEST_ASSERT_EQ(perfmon_session_read(session, cpu, NULL, 0, NULL),
                   EAGAIN);
    TEST_ASSERT_EQ(received + lost, k + 3);
    test_ss_expect_stats(session, cpu, k + 3, received, lost, 0, 1);
    test_ss_expect_stats(session, PERFMON_SESSION_ALL_CPUS, k + 3, received,
                         lost, 0, 1);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        if (i != cpu) {
            test_ss_expect_stats(session, i, 0, 0, 0, 0, 0);
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
    struct perfmon_session *session = test_ss_create(256);
    struct test_ss_stream stream = { 0 };
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    TEST_ASSERT_EQ(test_ss_produce_n(session, 0, 30, 24), 10);

    for (unsigned int i = 0; i < 5; i++) {
        TEST_ASSERT_EQ(test_ss_read_one(session, cpu, &stream), 0);
    }

    /* Bytes 120 to 240 held: LOST at 240, record 30 at 256 (offset 0). */
    TEST_ASSERT_EQ(test_ss_produce_n(session, 30, 1, 24), 1);
    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 7);
    TEST_ASSERT_EQ(stream.next_seq, 31);
    TEST_ASSERT_EQ(stream.received, 11);
    TEST_ASSERT_EQ(stream.lost, 20);

    /*
     * Empty at 280 (offset 24): 9 records of 24 bytes reach offset 240;
     * the next needs 24 bytes and 16 are left, so it goes after a pad.
     */
    TEST_ASSERT_EQ(test_ss_produce_n(session, 31, 9, 24), 9);
    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 9);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 40, 3, 24), 3);
    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 3);
    TEST_ASSERT_EQ(stream.next_seq, 43);
    TEST_ASSERT_EQ(stream.received + stream.lost, 43);
    test_ss_expect_stats(session, cpu, 43, 23, 20, 0, 1);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/*
 * A drained ring takes any record that fits in it, wherever its head
 * stopped: after one 64-byte record (head at offset 64), 200-byte
 * records do not fit before the end and would overlap their pad at the
 * start, yet the ring is empty and starts over at the buffer's start.
 * Then the usual case: three 32-byte records, then 184-byte ones.
 */
static void
test_ss_expect_all_taken(size_t first_size, unsigned int nr_first,
                         size_t size)
{
    struct perfmon_session *session = test_ss_create(256);
    struct test_ss_stream stream = { 0 };
    uint64_t seq = 0;
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    for (unsigned int i = 0; i < nr_first; i++) {
        TEST_ASSERT_EQ(test_ss_produce_n(session, seq++, 1, first_size), 1);
        TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 1);
    }

    for (unsigned int i = 0; i < 1000; i++) {
        TEST_ASSERT_EQ(test_ss_produce_n(session, seq++, 1, size), 1);
        TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 1);
    }

    TEST_ASSERT_EQ(stream.next_seq, seq);
    TEST_ASSERT_EQ(stream.received, seq);
    TEST_ASSERT_EQ(stream.lost, 0);
    test_ss_expect_stats(session, cpu, seq, seq, 0, 0, 0);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

TEST_DEFINE(perfmon_session, drained_ring_takes_large_records)
{
    test_ss_expect_all_taken(64, 1, 200);
    test_ss_expect_all_taken(32, 3, 184);
}

/*
 * The fit rule of kern/perfmon_session.h at its edges, on a 256-byte
 * ring: a drained ring takes a 256-byte record wherever the last one
 * ended; after a drop, a 248-byte record does not fit with its LOST
 * record and is dropped too, a 240-byte one does; and the statistics of
 * a ring whose first record is a LOST one, before and after each read.
 */
TEST_DEFINE(perfmon_session, fit_rule_edges_and_first_lost_stats)
{
    struct perfmon_session *session = test_ss_create(256);
    struct test_ss_stream stream = { 0 };
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    /* The first record dropped: the first one read is a LOST record. */
    TEST_ASSERT_EQ(test_ss_produce_n(session, 0, 1, 264), 0);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 1, 1, 24), 1);
    test_ss_expect_stats(session, cpu, 2, 0, 0, 1, 0);
    TEST_ASSERT_EQ(test_ss_read_one(session, cpu, &stream), 0);
    TEST_ASSERT(stream.after_lost);
    test_ss_expect_stats(session, cpu, 2, 0, 1, 0, 1);
    TEST_ASSERT_EQ(test_ss_read_one(session, cpu, &stream), 0);
    test_ss_expect_stats(session, cpu, 2, 1, 1, 0, 1);

    /* Drained at offset 40 (a pad and a LOST record ago): 256 fits. */
    TEST_ASSERT_EQ(test_ss_produce_n(session, 2, 1, 256), 1);
    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 1);

    /* A drop, then R - 8 with its LOST record: dropped; R - 16 fits. */
    TEST_ASSERT_EQ(test_ss_produce_n(session, 3, 1, 264), 0);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 4, 1, 248), 0);
    TEST_ASSERT_EQ(test_ss_produce_n(session, 5, 1, 240), 1);
    test_ss_expect_stats(session, cpu, 6, 2, 1, 2, 1);
    TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), 2);
    TEST_ASSERT_EQ(stream.next_seq, 6);
    TEST_ASSERT_EQ(stream.received, 3);
    TEST_ASSERT_EQ(stream.lost, 3);
    TEST_ASSERT_EQ(stream.nr_lost_records, 2);
    test_ss_expect_stats(session, cpu, 6, 3, 3, 0, 2);

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
    struct perfmon_session *session = test_ss_create(512);
    struct test_ss_stream stream = { 0 };
    uint64_t rng = 0x5e55, seq = 0;
    unsigned int cpu;

    thread_set_affinity(thread_self(), 1ULL << cpu_id());
    cpu = cpu_id();

    for (unsigned int round = 0; round < 2000; round++) {
        unsigned int nr_produce = test_rand(&rng) % 8;
        unsigned int nr_read = test_rand(&rng) % 8;

        for (unsigned int i = 0; i < nr_produce; i++) {
            size_t size = 8 * (2 + test_rand(&rng) % 31);

            test_ss_produce_n(session, seq++, 1, size);
        }

        for (unsigned int i = 0; i < nr_read; i++) {
            if (test_ss_read_one(session, cpu, &stream) != 0) {
                break;
            }
        }
    }

    test_ss_drain(session, cpu, &stream);

    /* The last drops are reported by one more record, which fits. */
    TEST_ASSERT_EQ(test_ss_produce_n(session, seq++, 1, TEST_SS_REC), 1);
    test_ss_drain(session, cpu, &stream);
    TEST_ASSERT_EQ(stream.next_seq, seq);
    TEST_ASSERT_EQ(stream.received + stream.lost, seq);

    /*
     * One producer and one consumer on one CPU, the sizes and the runs
     * drawn from a fixed seed: the ring's placement decides every loss,
     * so the figures are exact (a change to how records are placed,
     * padded or announced changes them).
     */
    TEST_ASSERT_EQ(seq, 6949);
    TEST_ASSERT_EQ(stream.received, 3672);
    TEST_ASSERT_EQ(stream.lost, 3277);
    TEST_ASSERT_EQ(stream.nr_lost_records, 1301);
    test_ss_expect_stats(session, cpu, seq, stream.received, stream.lost, 0,
                         stream.nr_lost_records);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* Each CPU's records go to its own ring and say so. */
TEST_DEFINE(perfmon_session, records_stay_on_their_cpu)
{
    struct perfmon_session *session = test_ss_create(1024);
    unsigned int n = cpu_count();
    uint64_t total = 0;

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        thread_set_affinity(thread_self(), 1ULL << cpu);
        TEST_ASSERT_EQ(cpu_id(), cpu);
        TEST_ASSERT_EQ(test_ss_produce_n(session, 0, cpu + 1, TEST_SS_REC),
                       cpu + 1);
        total += cpu + 1;
    }

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    test_ss_expect_stats(session, PERFMON_SESSION_ALL_CPUS, total, 0, 0, 0,
                         0);

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        struct test_ss_stream stream = { 0 };

        test_ss_expect_stats(session, cpu, cpu + 1, 0, 0, 0, 0);
        TEST_ASSERT_EQ(test_ss_drain(session, cpu, &stream), cpu + 1);
        test_ss_expect_stats(session, cpu, cpu + 1, cpu + 1, 0, 0, 0);
    }

    test_ss_expect_stats(session, PERFMON_SESSION_ALL_CPUS, total, total, 0,
                         0, 0);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}
