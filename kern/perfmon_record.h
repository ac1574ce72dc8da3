/*
 * perfmon records: what sampling writes into a session's per-CPU rings
 * (kern/perfmon_session.h) and what a consumer reads back.
 *
 * The layout is stable and host-readable: fixed-width little-endian
 * fields, naturally aligned, every record a multiple of 8 bytes and
 * starting with a header giving its type and size in bytes (header
 * included), so a reader skips types it does not know. New fields are
 * only ever appended to a record type (a reader uses the size to tell);
 * a sample, which has a variable part, says where its fixed part ends
 * (struct perfmon_record_sample).
 */
#ifndef KERN_PERFMON_RECORD_H
#define KERN_PERFMON_RECORD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Record types. 1 was the sample whose call chain ended its fixed fields
 * (no field could follow it); it is retired and never reused, so that a
 * reader of that layout skips today's samples instead of misreading them.
 */
#define PERFMON_RECORD_LOST     2   /* struct perfmon_record_lost */
#define PERFMON_RECORD_THROTTLE 3   /* struct perfmon_record_throttle */
#define PERFMON_RECORD_TEST     4   /* struct perfmon_record_test */
#define PERFMON_RECORD_SAMPLE   5   /* struct perfmon_record_sample */

/* Chunk types of a sample's extension area. */
#define PERFMON_CHUNK_CALLCHAIN 1   /* struct perfmon_record_callchain */

/*
 * The most call chain frames a sample carries: its fixed part (48 bytes),
 * the chain's chunk header (8) and 8 bytes a frame fill the 264 bytes a
 * session record may have (PERFMON_SESSION_RECORD_MAX).
 */
#define PERFMON_MAX_FRAMES      26

struct perfmon_record_header {
    uint16_t type;
    uint16_t size;              /* bytes, header included, multiple of 8 */
    uint32_t cpu;               /* the CPU whose ring holds the record */
};

/*
 * One sample: an event's period expired. ip is where the CPU was when the
 * overflow was taken (for a software event: the code that counted it).
 *
 * A sample is a fixed part (this structure, fixed_size bytes) followed by
 * an extension area of ext_size bytes: chunks back to back, each a
 * multiple of 8 bytes starting with a struct perfmon_record_chunk. The
 * area is all that is optional or variable: today, when the event asked
 * for one, the call chain (PERFMON_CHUNK_CALLCHAIN). Extending:
 *
 * - a new field is appended to the fixed part (keeping it a multiple of 8
 *   and each field naturally aligned) and fixed_size grows; a reader
 *   knows a field is there when fixed_size covers it, and finds the
 *   extension area at fixed_size whatever it knows of the fixed part;
 * - a new optional or variable part is a new chunk type; a reader skips
 *   the chunks it does not know by their size.
 *
 * The record may end with bytes after the extension area, which readers
 * ignore. perfmon_record_sample_chunk finds a chunk with every bound
 * checked.
 */
struct perfmon_record_sample {
    struct perfmon_record_header header;
    union {
        struct {
            uint16_t fixed_size;    /* bytes of the fixed part, header
                                       included */
            uint16_t ext_size;      /* bytes of chunks right after it */
        };
        uint32_t sizes;             /* both: the writer's one store */
    };
    uint32_t tid;               /* thread running (thread_id), 0: idle */
    uint64_t cookie;            /* chosen by the event's owner */
    uint64_t time;              /* TSC at the sample */
    uint64_t ip;
    uint64_t period;            /* events this sample stands for */
    /* New fields go here, and fixed_size tells a reader they are. */
};

/* The head of each chunk of a sample's extension area. */
struct perfmon_record_chunk {
    union {
        struct {
            uint16_t type;          /* PERFMON_CHUNK_* */
            uint16_t size;          /* bytes, this head included,
                                       multiple of 8 */
        };
        uint32_t type_size;         /* both: the writer's one store */
    };
    uint32_t nr;                /* items of the payload, per type */
};

/*
 * The sizes word of a sample, the type_size word of a chunk: the first
 * field in the low half (little-endian). A sum rather than an or, which
 * the compiler can fold into an address computation (lea).
 */
#define PERFMON_RECORD_WORD(low, high) \
    ((uint32_t)(low) + ((uint32_t)(high) << 16))

/*
 * The call chain: frames[] the return addresses of the callers of ip,
 * innermost first, nr of them valid. The chunk has room for the depth
 * the event asked for; a shorter chain leaves the rest of it unused.
 */
struct perfmon_record_callchain {
    struct perfmon_record_chunk chunk;  /* PERFMON_CHUNK_CALLCHAIN */
    uint64_t frames[];
};

/*
 * The first chunk of a type in the extension area of a sample of size
 * bytes (as read from the session), or NULL when it has none or the
 * framing on the way does not hold (a size out of the record or not a
 * multiple of 8): a damaged record is not read past its end. Any
 * context.
 */
static inline const struct perfmon_record_chunk *
perfmon_record_sample_chunk(const struct perfmon_record_sample *sample,
                            size_t size, unsigned int type)
{
    const unsigned char *base = (const unsigned char *)sample;
    size_t offset = sample->fixed_size;
    size_t end = offset + sample->ext_size;

    if (offset < sizeof(*sample) || (offset % 8) != 0 || end > size
        || (end % 8) != 0) {
        return NULL;
    }

    while (end - offset >= sizeof(struct perfmon_record_chunk)) {
        const struct perfmon_record_chunk *chunk = (const void *)(base
                                                                  + offset);

        if (chunk->size < sizeof(*chunk) || (chunk->size % 8) != 0
            || chunk->size > end - offset) {
            return NULL;
        }

        if (chunk->type == type) {
            return chunk;
        }

        offset += chunk->size;
    }

    return NULL;
}

/*
 * The call chain of a sample of size bytes, NULL when it has none (the
 * event asked for no call chain) or a damaged one.
 */
static inline const struct perfmon_record_callchain *
perfmon_record_sample_callchain(const struct perfmon_record_sample *sample,
                                size_t size)
{
    const struct perfmon_record_chunk *chunk;

    chunk = perfmon_record_sample_chunk(sample, size,
                                        PERFMON_CHUNK_CALLCHAIN);

    if (chunk == NULL
        || chunk->nr > (chunk->size - sizeof(*chunk)) / sizeof(uint64_t)) {
        return NULL;
    }

    return (const struct perfmon_record_callchain *)chunk;
}

/*
 * Records that did not fit in the ring since the last record that did;
 * written before the next record that fits.
 */
struct perfmon_record_lost {
    struct perfmon_record_header header;
    uint64_t nr_lost;
};

/*
 * Periods of one sampling event (cookie) that ended on the CPU while its
 * sampling there was throttled (its samples past the per-tick limit,
 * perfmon.max_samples_per_tick), from time_start to time_end (TSC):
 * nr_periods periods without a sample, which held nr_events events (each
 * period of the length in force when it began: a period changed during
 * the throttle counts in the new length from the period after the one in
 * flight, as a sample would). time_start is when the CPU's throttle
 * began, not when this event first dropped a period. Per event, from the
 * records alone: the sum of its samples' periods plus its THROTTLE
 * records' nr_events is its count, less the period in flight and less
 * what LOST records stand for (a lost sample's period, or a lost THROTTLE
 * record's events: a LOST record does not say which), with two more
 * exceptions: the events counted after a refresh budget ran out (the
 * event counts on without periods until refreshed) and a reset (which
 * zeroes the count, not the period in flight). Written when sampling
 * resumes and each time the event leaves the CPU during the throttle (a
 * thread sampler switched out and in again writes one per switch-out),
 * and only when a period was dropped. cookie and nr_events were appended
 * (header.size 48); a record of 32 bytes, from an earlier kernel, has
 * neither.
 */
struct perfmon_record_throttle {
    struct perfmon_record_header header;
    uint64_t time_start;
    uint64_t time_end;
    uint64_t nr_periods;
    uint64_t cookie;            /* the event's, as in its samples */
    uint64_t nr_events;         /* events in the nr_periods periods */
};

/* Written by tests only: a per-CPU sequence number. */
struct perfmon_record_test {
    struct perfmon_record_header header;
    uint64_t seq;
};

#endif /* KERN_PERFMON_RECORD_H */
