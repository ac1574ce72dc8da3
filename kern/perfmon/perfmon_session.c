/*
 * perfmon sessions: per-CPU rings of records, one producer per ring (its
 * CPU, interrupts disabled), one consumer thread per session.
 *
 * Ring positions are 64-bit byte counts that only grow: head (bytes
 * published by the producer) and tail (bytes consumed); the offset in the
 * buffer is the count modulo the ring size, and head - tail is what the
 * ring holds. They never wrap in practice (2^64 bytes).
 *
 * A record never straddles the end of the buffer. When one does not fit
 * in the bytes left before the end, the producer leaves them as a pad
 * and puts the record at the start of the buffer. The pad is marked by
 * its start in pad_from, not by a header in the buffer: a drained ring
 * starts over at the buffer's start whatever its offset, and its record
 * may then cover the pad's bytes. The consumer skips from pad_from to
 * the end and never hands pads out. A pad is published in the same
 * commit as the record after it (pad_from written before head's
 * release), so a pad is never the last thing in a ring; and a ring holds
 * at most one pad (a second one would be more than a ring size past the
 * first), so a new pad_from is only written once the consumer's tail is
 * past the old pad, and the consumer, whose tail is below head, never
 * sees a pad_from not yet published equal its tail.
 *
 * Ordering: the producer writes a record, then publishes head with
 * release order; the consumer reads head with acquire order before the
 * bytes below it, copies the record out, then publishes tail with release
 * order; the producer reads tail with acquire order before it reuses the
 * bytes below it. pad_from is relaxed both ways: head's release and
 * acquire order it (the pad_from a consumer at a pad needs is published
 * with the record after the pad, and is not replaced before the tail
 * that the producer acquires is past that pad).
 *
 * Statistics: each counter has a single writer (the producer's on the
 * producer's line, the consumer's on its own line), which reads it
 * plainly and stores it atomically; any context may read them all
 * (perfmon_session_ring_stats), in an order that pairs with the
 * writers' so that a snapshot never counts a record twice nor wraps:
 *  - the producer increments produced before it drops or publishes the
 *    record; its store of dropped is a release (it publishes produced);
 *  - the consumer counts a record it read in one counter, after head's
 *    acquire, with release (that publishes the produced count that
 *    covers it): a LOST record in nr_lost_records, after lost, a
 *    THROTTLE record in nr_read, before throttled, any other in
 *    nr_read. A record is counted once, in one store: no snapshot sees
 *    it half counted (nr_read leaves LOST records out for that reason;
 *    the watermark adds nr_lost_records back);
 *  - the reader loads nr_lost_records, lost, throttled, nr_read and
 *    dropped with acquire, in that order, then produced. So it sees no
 *    more LOST records than lost says, no more lost than dropped (the
 *    LOST record was published after its drops: dropped - lost never
 *    wraps), no more THROTTLE records than nr_read, and a produced
 *    count at least nr_read + dropped (the records read and those
 *    dropped were produced before it).
 *
 * Loss: a record that does not fit is counted in nr_pending; the next
 * reservation that succeeds carries a PERFMON_RECORD_LOST record with
 * that count, placed just before the record, and both must fit (else the
 * new record is dropped and counted too). So a LOST record is always
 * followed by a record, and the records of a CPU are read in the order
 * produced with every gap announced by the LOST record just before it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/macros.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/thread.h>
#include <machine/cpu.h>

int
perfmon_session_create(struct perfmon_session **sessionp, size_t ring_size)
{
    struct perfmon_session *session;
    struct perfmon_session_ring *ring;
    unsigned int cpu;

    if ((sessionp == NULL) || (ring_size < PERFMON_SESSION_RING_MIN)
        || (ring_size > PERFMON_SESSION_RING_MAX)
        || ((ring_size & (ring_size - 1)) != 0)) {
        return EINVAL;
    }

    session = kmem_zalloc(sizeof(*session));

    if (session == NULL) {
        goto error_session;
    }

    session->nr_cpus = cpu_count();
    session->ring_size = ring_size;
    session->wm_records = 1;
    session->rings = kmem_zalloc(session->nr_cpus * sizeof(*ring));

    if (session->rings == NULL) {
        goto error_rings;
    }

    for (cpu = 0; cpu < session->nr_cpus; cpu++) {
        ring = &session->rings[cpu];
        ring->buf = kmem_alloc(ring_size);

        if (ring->buf == NULL) {
            goto error_bufs;
        }

        ring->mask = ring_size - 1;
        ring->cpu = cpu;
        ring->pad_from = UINT64_MAX;
    }

    *sessionp = session;
    return 0;

error_bufs:
    while (cpu-- > 0) {
        kmem_free(session->rings[cpu].buf);
    }

    kmem_free(session->rings);
error_rings:
    kmem_free(session);
error_session:
    return ENOMEM;
}

int
perfmon_session_destroy(struct perfmon_session *session)
{
    if (session == NULL) {
        return EINVAL;
    }

    if (__atomic_load_n(&session->nr_refs, __ATOMIC_ACQUIRE) != 0) {
        return EBUSY;
    }

    for (unsigned int cpu = 0; cpu < session->nr_cpus; cpu++) {
        kmem_free(session->rings[cpu].buf);
    }

    kmem_free(session->rings);
    kmem_free(session);
    return 0;
}

void
perfmon_session_ref(struct perfmon_session *session)
{
    __atomic_fetch_add(&session->nr_refs, 1, __ATOMIC_RELAXED);
}

void
perfmon_session_unref(struct perfmon_session *session)
{
    unsigned int prev;

    /* Release: the user's last accesses come before a destroy. */
    prev = __atomic_fetch_sub(&session->nr_refs, 1, __ATOMIC_RELEASE);
    assert(prev != 0);
}

unsigned int
perfmon_session_nr_refs(const struct perfmon_session *session)
{
    return __atomic_load_n(&session->nr_refs, __ATOMIC_RELAXED);
}

/* ---- producer ------------------------------------------------------ */

/* Where a record of size bytes goes when the ring's next byte is pos. */
static inline uint64_t
perfmon_session_place(const struct perfmon_session_ring *ring, uint64_t pos,
                      size_t size)
{
    uint64_t offset = pos & ring->mask;

    if (unlikely(offset + size > ring->mask + 1)) {
        return pos + (ring->mask + 1 - offset);
    }

    return pos;
}

/* A pad always runs to the buffer's end: only its start is recorded. */
static inline void
perfmon_session_pad(struct perfmon_session_ring *ring, uint64_t from,
                    uint64_t to)
{
    if (from != to) {
        __atomic_store_n(&ring->pad_from, from, __ATOMIC_RELAXED);
    }
}

static void
perfmon_session_drop(struct perfmon_session_ring *ring)
{
    ring->nr_pending++;

    /* Release: publishes produced (perfmon_session_ring_stats). */
    __atomic_store_n(&ring->dropped, ring->dropped + 1, __ATOMIC_RELEASE);
}

/*
 * A reservation that wraps, carries a LOST record or does not fit (the
 * fast path's fit check is the same as here, so it may come here with
 * any reservation).
 */
void *
perfmon_session_reserve_slow(struct perfmon_session_ring *ring, size_t size)
{
    struct perfmon_record_lost *lost;
    uint64_t head, tail, pos, lost_pos = 0;
    size_t need;

    assert_intr_disabled();
    head = ring->head;
    tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
    need = size + ((ring->nr_pending != 0) ? sizeof(*lost) : 0);

    /*
     * A drained ring holds nothing its pad could overlap: when the
     * pieces do not fit before the end, all of them start over at the
     * buffer's start, and they need only fit in the ring.
     */
    if (tail == head) {
        tail = perfmon_session_place(ring, head, need);
    }

    pos = tail > head ? tail : head;

    if (ring->nr_pending != 0) {
        lost_pos = perfmon_session_place(ring, pos, sizeof(*lost));
        pos = lost_pos + sizeof(*lost);
    }

    pos = perfmon_session_place(ring, pos, size);

    if (pos + size - tail > ring->mask + 1) {
        perfmon_session_drop(ring);
        return NULL;
    }

    if (ring->nr_pending != 0) {
        perfmon_session_pad(ring, head, lost_pos);
        lost = (struct perfmon_record_lost *)(ring->buf
                                              + (lost_pos & ring->mask));
        lost->header.type = PERFMON_RECORD_LOST;
        lost->header.size = sizeof(*lost);
        lost->header.cpu = ring->cpu;
        lost->nr_lost = ring->nr_pending;
        ring->nr_pending = 0;
        head = lost_pos + sizeof(*lost);
        ring->next_nr = 2;
    } else {
        ring->next_nr = 1;
    }

    perfmon_session_pad(ring, head, pos);
    ring->next_head = pos + size;
    ring->next_size = (uint16_t)size;
    return ring->buf + (pos & ring->mask);
}

/*
 * A reservation is a marked section until its commit (kern/perfmon_nmi.h):
 * the producer's fields (head, the reservation, the loss counts) are read,
 * modified and written here, and an overflow NMI produces samples into the
 * same ring. An NMI that lands between the two leaves its samples to the
 * commit, which takes them after publishing the record, in order; so each
 * ring keeps one producer at a time, and its loss accounting stays exact.
 * perfmon's own sample path runs in a marked section or in the NMI with
 * none open, and uses the ring directly. Local, interrupts disabled.
 */
void *
perfmon_session_reserve(struct perfmon_session *session, size_t size)
{
    void *record;

    assert_intr_disabled();

    if (unlikely((size == 0) || (size > PERFMON_SESSION_RECORD_MAX)
                 || ((size & 7) != 0))) {
        return NULL;
    }

    perfmon_nmi_enter();
    record = perfmon_session_ring_reserve(perfmon_session_ring_local(session),
                                          size);

    if (record == NULL) {
        perfmon_nmi_leave();
    }

    return record;
}

void
perfmon_session_commit(struct perfmon_session *session, void *record)
{
    assert_intr_disabled();
    perfmon_session_ring_commit(perfmon_session_ring_local(session), record);
    perfmon_nmi_leave();
}

/* ---- consumer ------------------------------------------------------ */

#define PERFMON_SESSION_COPY_WORD(n)                    \
    case n:                                             \
        dst[n - 1] = src[n - 1];                        \
        __attribute__((fallthrough))

/*
 * Copy the words of a record after its header word: a jump into a run of
 * word copies costs two instructions a word, where a loop costs four.
 */
static inline void
perfmon_session_copy(uint64_t *dst, const uint64_t *src, size_t nr_words)
{
    switch (nr_words) {
    PERFMON_SESSION_COPY_WORD(33);
    PERFMON_SESSION_COPY_WORD(32);
    PERFMON_SESSION_COPY_WORD(31);
    PERFMON_SESSION_COPY_WORD(30);
    PERFMON_SESSION_COPY_WORD(29);
    PERFMON_SESSION_COPY_WORD(28);
    PERFMON_SESSION_COPY_WORD(27);
    PERFMON_SESSION_COPY_WORD(26);
    PERFMON_SESSION_COPY_WORD(25);
    PERFMON_SESSION_COPY_WORD(24);
    PERFMON_SESSION_COPY_WORD(23);
    PERFMON_SESSION_COPY_WORD(22);
    PERFMON_SESSION_COPY_WORD(21);
    PERFMON_SESSION_COPY_WORD(20);
    PERFMON_SESSION_COPY_WORD(19);
    PERFMON_SESSION_COPY_WORD(18);
    PERFMON_SESSION_COPY_WORD(17);
    PERFMON_SESSION_COPY_WORD(16);
    PERFMON_SESSION_COPY_WORD(15);
    PERFMON_SESSION_COPY_WORD(14);
    PERFMON_SESSION_COPY_WORD(13);
    PERFMON_SESSION_COPY_WORD(12);
    PERFMON_SESSION_COPY_WORD(11);
    PERFMON_SESSION_COPY_WORD(10);
    PERFMON_SESSION_COPY_WORD(9);
    PERFMON_SESSION_COPY_WORD(8);
    PERFMON_SESSION_COPY_WORD(7);
    PERFMON_SESSION_COPY_WORD(6);
    PERFMON_SESSION_COPY_WORD(5);
    PERFMON_SESSION_COPY_WORD(4);
    PERFMON_SESSION_COPY_WORD(3);
    PERFMON_SESSION_COPY_WORD(2);
    case 1:
        break;
    default:
        /* The producer writes 8 to PERFMON_SESSION_RECORD_MAX bytes. */
        __builtin_unreachable();
    }
}

_Static_assert(PERFMON_SESSION_RECORD_MAX == 33 * sizeof(uint64_t),
               "perfmon_session_copy covers records of up to 33 words");

/* The counts a LOST or THROTTLE record adds, off the common path. */
static void __attribute__((noinline))
perfmon_session_account(struct perfmon_session_ring *ring,
                        const uint64_t *record)
{
    const struct perfmon_record_header *header = (const void *)record;
    const struct perfmon_record_lost *lost = (const void *)record;

    /*
     * Releases: each publishes the produced count head's acquire saw, and
     * the count stored before it, to the statistics' reader, which loads
     * the later one first (nr_lost_records before lost, throttled before
     * nr_read).
     */
    if (header->type == PERFMON_RECORD_LOST) {
        __atomic_store_n(&ring->lost, ring->lost + lost->nr_lost,
                         __ATOMIC_RELEASE);
        __atomic_store_n(&ring->nr_lost_records, ring->nr_lost_records + 1,
                         __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&ring->nr_read, ring->nr_read + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&ring->throttled, ring->throttled + 1,
                         __ATOMIC_RELEASE);
    }
}

/*
 * The header is read as one little-endian word (type in bits 15:0, size
 * in 31:16), so the ring is read once.
 */
#define PERFMON_SESSION_WORD_TYPE(word)     ((uint16_t)(word))
#define PERFMON_SESSION_WORD_SIZE(word)     ((size_t)((uint32_t)(word) >> 16))

int
perfmon_session_read(struct perfmon_session *session, unsigned int cpu,
                     void *buf, size_t size, size_t *sizep)
{
    struct perfmon_session_ring *ring;
    const uint64_t *src;
    uint64_t *dst = buf;
    uint64_t tail, word;
    size_t record_size;

    if (unlikely(cpu >= session->nr_cpus)) {
        return EINVAL;
    }

    ring = &session->rings[cpu];
    tail = ring->tail;

    if (unlikely(tail == __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE))) {
        return EAGAIN;
    }

    src = (const uint64_t *)(ring->buf + (tail & ring->mask));

    /*
     * A pad runs to the end of the buffer and a record follows it: skip
     * it for good (the producer may reuse its bytes at once). pad_from
     * is read after head's acquire, so a published pad is seen.
     */
    if (unlikely(tail == __atomic_load_n(&ring->pad_from,
                                         __ATOMIC_RELAXED))) {
        tail += ring->mask + 1 - (tail & ring->mask);
        __atomic_store_n(&ring->tail, tail, __ATOMIC_RELEASE);
        src = (const uint64_t *)ring->buf;
    }

    word = src[0];

    record_size = PERFMON_SESSION_WORD_SIZE(word);

    if (unlikely(record_size > size)) {
        return EMSGSIZE;
    }

    perfmon_session_copy(dst, src, record_size / sizeof(*dst));
    dst[0] = word;

    /*
     * Single writer, one store per record. Release: publishes the
     * produced count head's acquire saw, which covers this record
     * (perfmon_session_ring_stats).
     */
    if (unlikely((uint16_t)(PERFMON_SESSION_WORD_TYPE(word)
                            - PERFMON_RECORD_LOST)
                 <= PERFMON_RECORD_THROTTLE - PERFMON_RECORD_LOST)) {
        perfmon_session_account(ring, dst);
    } else {
        __atomic_store_n(&ring->nr_read, ring->nr_read + 1,
                         __ATOMIC_RELEASE);
    }

    __atomic_store_n(&ring->tail, tail + record_size, __ATOMIC_RELEASE);
    *sizep = record_size;
    return 0;
}

int
perfmon_session_set_watermark(struct perfmon_session *session,
                              unsigned int nr_records, size_t nr_bytes)
{
    if ((session == NULL)
        || (nr_bytes > PERFMON_SESSION_WM_BYTES_MAX(session->ring_size))
        || (nr_records > session->ring_size
                         / sizeof(struct perfmon_record_header))) {
        return EINVAL;
    }

    if ((nr_records == 0) && (nr_bytes == 0)) {
        nr_records = 1;
    }

    /*
     * Read by the consumer's readiness check without a lock: relaxed,
     * each a threshold on its own (a wait that races the change may use
     * the old pair or a mix for one check; the next check sees both).
     */
    __atomic_store_n(&session->wm_records, nr_records, __ATOMIC_RELAXED);
    __atomic_store_n(&session->wm_bytes, nr_bytes, __ATOMIC_RELAXED);
    return 0;
}

/*
 * Whether a ring holds the watermark. Called by the consumer, so tail,
 * nr_read and nr_lost_records are its own (the records read, LOST ones
 * included, are their sum). The producer publishes nr_committed after head:
 * the count seen may lag records already read (then the difference is
 * negative: nothing held) but never runs ahead of records published, so
 * a ring is never reported at its watermark before it is.
 */
static bool
perfmon_session_ring_ready(const struct perfmon_session *session,
                           const struct perfmon_session_ring *ring)
{
    unsigned int wm_records = __atomic_load_n(&session->wm_records,
                                              __ATOMIC_RELAXED);
    size_t wm_bytes = __atomic_load_n(&session->wm_bytes, __ATOMIC_RELAXED);
    int64_t nr_held;
    uint64_t nr_bytes;

    nr_held = (int64_t)(__atomic_load_n(&ring->nr_committed,
                                        __ATOMIC_ACQUIRE)
                        - (ring->nr_read + ring->nr_lost_records));
    nr_bytes = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE) - ring->tail;

    return ((wm_records != 0) && (nr_held >= (int64_t)wm_records))
           || ((wm_bytes != 0) && (nr_bytes >= wm_bytes));
}

int
perfmon_session_wait(struct perfmon_session *session, uint64_t timeout_ticks)
{
    uint64_t deadline;

    if (session == NULL) {
        return EINVAL;
    }

    deadline = clock_get_time() + timeout_ticks;

    if (deadline < timeout_ticks) {
        deadline = UINT64_MAX;
    }

    /*
     * The producer may run inside the context switch with run queue locks
     * held, where it cannot wake a thread: the waiter polls once per tick
     * instead, so it sees a watermark at most about one tick late.
     */
    for (;;) {
        for (unsigned int cpu = 0; cpu < session->nr_cpus; cpu++) {
            if (perfmon_session_ring_ready(session, &session->rings[cpu])) {
                return 0;
            }
        }

        if (clock_get_time() >= deadline) {
            return ETIMEDOUT;
        }

        thread_delay(1);
    }
}

static void
perfmon_session_ring_stats(const struct perfmon_session_ring *ring,
                           struct perfmon_session_stats *stats)
{
    uint64_t lost, nr_read, nr_lost_records, throttled, dropped, produced;

    /*
     * Each load before the counts that bound it (see the overview): the
     * LOST records before lost, THROTTLE records before nr_read, lost
     * before dropped, whose drops a LOST record read reports; all of
     * them before produced, which counts each record before it is read
     * or dropped.
     */
    nr_lost_records = __atomic_load_n(&ring->nr_lost_records,
                                      __ATOMIC_ACQUIRE);
    lost = __atomic_load_n(&ring->lost, __ATOMIC_ACQUIRE);
    throttled = __atomic_load_n(&ring->throttled, __ATOMIC_ACQUIRE);
    nr_read = __atomic_load_n(&ring->nr_read, __ATOMIC_ACQUIRE);
    dropped = __atomic_load_n(&ring->dropped, __ATOMIC_ACQUIRE);
    produced = __atomic_load_n(&ring->produced, __ATOMIC_RELAXED);

    stats->produced += produced;
    stats->read += nr_read;
    stats->lost += lost;
    stats->dropped += dropped - lost;
    stats->nr_lost_records += nr_lost_records;
    stats->throttled += throttled;
}

int
perfmon_session_stats(const struct perfmon_session *session,
                      unsigned int cpu, struct perfmon_session_stats *stats)
{
    struct perfmon_session_stats sum = { 0 };

    if ((session == NULL) || (stats == NULL)
        || ((cpu != PERFMON_SESSION_ALL_CPUS) && (cpu >= session->nr_cpus))) {
        return EINVAL;
    }

    if (cpu == PERFMON_SESSION_ALL_CPUS) {
        for (unsigned int i = 0; i < session->nr_cpus; i++) {
            perfmon_session_ring_stats(&session->rings[i], &sum);
        }
    } else {
        perfmon_session_ring_stats(&session->rings[cpu], &sum);
    }

    *stats = sum;
    return 0;
}
