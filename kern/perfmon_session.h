/*
 * perfmon sessions: where sampling events put their records.
 *
 * A session is one consumer's set of rings, one per CPU, each sized at
 * creation. The producer of a CPU's ring is that CPU (the overflow path,
 * interrupts disabled: no lock, no allocation); the consumer is one thread
 * on any CPU. A record that does not fit is dropped and counted; when
 * space returns, the ring first takes one PERFMON_RECORD_LOST record with
 * the number dropped, then the record. So, per CPU and in total,
 *
 *   records read + records reported lost == records produced
 *
 * exactly, once the rings are drained (a count of records dropped but not
 * yet reported by a LOST record is in the statistics).
 *
 *   struct perfmon_session *session;
 *
 *   error = perfmon_session_create(&session, 4096);
 *   ... attach sampling events with it (perfmon_event_set_sampling) ...
 *   error = perfmon_session_wait(session, timeout);
 *   error = perfmon_session_read(session, cpu, buf, sizeof(buf), &size);
 *   ... detach the events ...
 *   error = perfmon_session_destroy(session);
 *
 * Record layout: kern/perfmon_record.h.
 */
#ifndef KERN_PERFMON_SESSION_H
#define KERN_PERFMON_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <kern/macros.h>
#include <kern/perfmon_record.h>
#include <machine/cpu.h>

/* Ring sizes, bytes per CPU: a power of two in this range. */
#define PERFMON_SESSION_RING_MIN    256
#define PERFMON_SESSION_RING_MAX    (1U << 20)

struct perfmon_session;

/*
 * Counts of a session, per CPU or summed. produced == read + lost +
 * dropped + what the rings hold (+ a reservation not yet committed);
 * records are counted once each, LOST records themselves not included.
 * A snapshot of rings in use (perfmon_session_stats) still has read +
 * lost + dropped <= produced and nr_lost_records <= lost: no count wraps.
 */
struct perfmon_session_stats {
    uint64_t produced;      /* records offered to the rings (reserve
                               calls with a valid size) */
    uint64_t read;          /* records the consumer read, LOST ones not
                               included (they are nr_lost_records) */
    uint64_t lost;          /* records dropped and reported by LOST records
                               the consumer read */
    uint64_t dropped;       /* records dropped, LOST record not read yet */
    uint64_t nr_lost_records;
    uint64_t throttled;     /* THROTTLE records read */
};

/*
 * Create a session whose rings hold ring_size bytes each. Return 0,
 * EINVAL (ring_size not a power of two in range, NULL sessionp), ENOMEM.
 * Thread context.
 */
int perfmon_session_create(struct perfmon_session **sessionp,
                           size_t ring_size);

/*
 * Destroy a session and free its memory. Return 0, EBUSY while events
 * still use it (its references, perfmon_session_ref), EINVAL for NULL.
 * The caller ensures no producer is inside reserve/commit (an event that
 * dropped its reference no longer produces). Thread context.
 */
int perfmon_session_destroy(struct perfmon_session *session);

/*
 * References held by sampling events, so a session is not destroyed
 * under them. Unref without a reference held panics (a kernel bug).
 * Thread context. nr_refs returns the count (a snapshot), any context.
 */
void perfmon_session_ref(struct perfmon_session *session);
void perfmon_session_unref(struct perfmon_session *session);
unsigned int perfmon_session_nr_refs(const struct perfmon_session *session);

/*
 * Producer: make room for a record of size bytes (a multiple of 8, at
 * most PERFMON_SESSION_RECORD_MAX) in this CPU's ring and return where to
 * write it, or NULL when it does not fit (then it is counted as dropped
 * and reported by the LOST record that the next reservation that fits
 * writes just before its record; that LOST record and the record must
 * both fit, else the record is dropped too). A size that is 0, not a
 * multiple of 8 or above the maximum returns NULL and counts nothing.
 * The caller fills the record (header included) and publishes it with
 * perfmon_session_commit, on the same CPU with interrupts still disabled,
 * before its next reserve: a reservation cannot be abandoned (a LOST
 * record it carries would go unread). Commit stores the reserved size
 * in the header (the ring's framing relies on it). Local, interrupts
 * disabled, no lock, no allocation: callable from the overflow interrupt
 * and from the context switch. In NMI mode (kern/perfmon_nmi.h) a
 * reservation holds back perfmon's NMI work on the CPU until its commit
 * (interrupts must stay disabled in between: a reservation that migrated
 * would hold it back on its first CPU for good),
 * so that the NMI's samples never land inside it. The inline pair below
 * has no such guard: it is for code that already runs in a marked
 * section or in perfmon's NMI.
 *
 * Which records fit, in a ring of R bytes: a record never straddles the
 * buffer's end, so one of s bytes goes where the last one ended (offset
 * o) when s <= R - o, else at the buffer's start, the R - o bytes
 * skipped; after drops, the 16-byte LOST record goes first, by the same
 * rule, and the record right after it. Then:
 *  - a drained ring (the consumer has read all it held) takes the
 *    record whenever s <= R, or s + 16 <= R after drops, wherever o is
 *    (it starts over at the buffer's start when need be);
 *  - a ring that holds h bytes takes it when the bytes so placed, the
 *    skipped ones included, come to at most R - h.
 * A record that does not fit is dropped, and so is every one after it
 * until one fits with its LOST record. So a 256-byte ring never holds a
 * 264-byte record, nor one above 240 bytes with a LOST record before it
 * (after drops, records above 240 bytes are dropped until a smaller one
 * comes), and a ring should hold several of the largest records written
 * to it. The maximum is a sample with the deepest call chain
 * (kern/perfmon_record.h).
 */
#define PERFMON_SESSION_RECORD_MAX  264
void *perfmon_session_reserve(struct perfmon_session *session, size_t size);
void perfmon_session_commit(struct perfmon_session *session, void *record);

/*
 * The same inline, for the sampling overflow path: the ring of this CPU,
 * looked up once for both calls, and a reservation that needs no pad, no
 * LOST record and no drop made with no call. size must be valid (the
 * caller ensures it; it is not checked). Same context and rules as above,
 * from a marked section or perfmon's NMI only (interrupts disabled:
 * asserted by the overflow path's entry, not here);
 * the structures below are public for these only.
 *
 *   ring = perfmon_session_ring_local(session);
 *   record = perfmon_session_ring_reserve(ring, size);
 *   ... fill the record, if not NULL ...
 *   perfmon_session_ring_commit(ring, record);
 */
#define PERFMON_SESSION_LINE        64

/*
 * One CPU's ring. The first line is written by the producer only (plus
 * what never changes after creation), the second by the consumer only.
 */
struct perfmon_session_ring {
    /* Producer (that CPU, interrupts disabled). */
    uint64_t head;              /* bytes published, release order */
    uint64_t nr_committed;      /* records published, LOST ones included */
    uint64_t produced;          /* records offered to the ring */
    uint64_t dropped;           /* records dropped since creation */
    uint64_t nr_pending;        /* dropped since the last that fitted */
    uint64_t next_head;         /* head once the reservation is committed */
    uint16_t next_size;         /* size of the reserved record */
    uint16_t next_nr;           /* records the reservation adds (1 or 2) */
    uint32_t cpu;
    uint64_t pad_from;          /* where the last pad starts (~0: none) */

    /* Consumer (one thread). */
    uint64_t tail __aligned(PERFMON_SESSION_LINE); /* release order */
    uint64_t mask;              /* ring size - 1, fixed */
    char *buf;                  /* fixed after creation */
    uint64_t nr_read;           /* records read, LOST ones not included */
    uint64_t lost;              /* sum of nr_lost of LOST records read */
    uint64_t nr_lost_records;   /* LOST records read */
    uint64_t throttled;         /* THROTTLE records read */
} __aligned(PERFMON_SESSION_LINE);

struct perfmon_session {
    struct perfmon_session_ring *rings;
    unsigned int nr_cpus;
    unsigned int nr_refs;
    size_t ring_size;
    unsigned int wm_records;    /* 0: criterion unused */
    size_t wm_bytes;            /* 0: criterion unused */
};

/*
 * The rest of a reservation: a pad, a LOST record or a drop. Local,
 * interrupts disabled.
 */
void *perfmon_session_reserve_slow(struct perfmon_session_ring *ring,
                                   size_t size);

static inline struct perfmon_session_ring *
perfmon_session_ring_local(struct perfmon_session *session)
{
    return &session->rings[cpu_id()];
}

static inline void *
perfmon_session_ring_reserve(struct perfmon_session_ring *ring, size_t size)
{
    uint64_t head = ring->head;
    uint64_t ring_size = ring->mask + 1;    /* loaded once, not twice */
    uint64_t offset = head & ring->mask;

    /* Before the record is dropped or published (statistics' order). */
    __atomic_store_n(&ring->produced, ring->produced + 1, __ATOMIC_RELAXED);

    /* Whatever is not a plain fit, the slow path sorts out. */
    if (unlikely((ring->nr_pending != 0) || (offset + size > ring_size)
                 || (head + size
                     - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE)
                     > ring_size))) {
        return perfmon_session_reserve_slow(ring, size);
    }

    ring->next_head = head + size;
    ring->next_size = (uint16_t)size;
    ring->next_nr = 1;
    return ring->buf + offset;
}

static inline void
perfmon_session_ring_commit(struct perfmon_session_ring *ring, void *record)
{
    struct perfmon_record_header *header = record;

    /* The ring's framing relies on the size: it is the reserved one. */
    header->size = ring->next_size;
    __atomic_store_n(&ring->head, ring->next_head, __ATOMIC_RELEASE);
    __atomic_store_n(&ring->nr_committed, ring->nr_committed + ring->next_nr,
                     __ATOMIC_RELEASE);
}

/*
 * Consumer: copy the oldest record of a CPU's ring into buf and remove
 * it, storing its size. Records of one CPU come out in the order they
 * were produced. Return 0, EAGAIN (ring empty), EMSGSIZE (buf smaller
 * than the record, which stays), EINVAL (bad CPU). LOST records come
 * out like any other (they are how the consumer learns of a gap); pads
 * the ring uses internally never do. One consumer thread per session at
 * a time; session must be a live session. Thread context (or any, it
 * does not block).
 */
int perfmon_session_read(struct perfmon_session *session, unsigned int cpu,
                         void *buf, size_t size, size_t *sizep);

/*
 * Wake the waiter when a ring holds at least nr_records records or
 * nr_bytes bytes (0: that criterion unused; both 0: any record, the
 * default). Records count LOST ones too; bytes count what the ring holds,
 * pads included. Return 0 or EINVAL (NULL session, nr_bytes above
 * PERFMON_SESSION_WM_BYTES_MAX of the ring size, nr_records above what a
 * ring can hold: ring size / 8). A ring that drops a record holds more
 * than its size less that record, a LOST record and their pads (each
 * under what it pads for), so a byte watermark up to the maximum is
 * always reached by a ring left to fill, whatever its record sizes; the
 * ring size itself may not be (48-byte records fill 4096 bytes to 4080).
 * Thread context.
 */
#define PERFMON_SESSION_WM_SLACK \
    (2 * (PERFMON_SESSION_RECORD_MAX + sizeof(struct perfmon_record_lost)))
#define PERFMON_SESSION_WM_BYTES_MAX(ring_size) \
    ((ring_size) > PERFMON_SESSION_WM_SLACK \
     ? (ring_size) - PERFMON_SESSION_WM_SLACK : 0)
int perfmon_session_set_watermark(struct perfmon_session *session,
                                  unsigned int nr_records, size_t nr_bytes);

/*
 * Block until some ring of the session reaches the watermark, or for at
 * most timeout_ticks clock ticks (0: do not block). Return 0 (a ring is
 * at its watermark), ETIMEDOUT (at least timeout_ticks ticks passed) or
 * EINVAL (NULL session). Producers cannot wake a thread (they may run
 * inside the context switch), so the waiter re-checks the rings once per
 * clock tick: it returns at most about one tick after the watermark is
 * reached. Called by the session's consumer thread. Thread context.
 */
int perfmon_session_wait(struct perfmon_session *session,
                         uint64_t timeout_ticks);

/*
 * Counts of one CPU's ring (cpu < cpu_count()) or of all of them
 * (PERFMON_SESSION_ALL_CPUS). Return 0 or EINVAL (NULL session or stats,
 * bad CPU; stats unchanged). Any context (a snapshot: counters of a ring
 * in use move while they are read, but read + lost + dropped never
 * exceeds produced, and none wraps: see struct perfmon_session_stats).
 */
#define PERFMON_SESSION_ALL_CPUS (~0U)
int perfmon_session_stats(const struct perfmon_session *session,
                          unsigned int cpu,
                          struct perfmon_session_stats *stats);

#endif /* KERN_PERFMON_SESSION_H */
