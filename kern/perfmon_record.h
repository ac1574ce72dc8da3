/*
 * perfmon records: what sampling writes into a session's per-CPU rings
 * (kern/perfmon_session.h) and what a consumer reads back.
 *
 * The layout is stable and host-readable: fixed-width little-endian
 * fields, naturally aligned, every record a multiple of 8 bytes and
 * starting with a header giving its type and size in bytes (header
 * included), so a reader skips types it does not know. New fields are
 * only ever appended to a record type (a reader uses the size to tell).
 */
#ifndef KERN_PERFMON_RECORD_H
#define KERN_PERFMON_RECORD_H

#include <stdint.h>

#define PERFMON_RECORD_SAMPLE   1   /* struct perfmon_record_sample */
#define PERFMON_RECORD_LOST     2   /* struct perfmon_record_lost */
#define PERFMON_RECORD_THROTTLE 3   /* struct perfmon_record_throttle */
#define PERFMON_RECORD_TEST     4   /* struct perfmon_record_test */

/*
 * The most call chain frames a sample carries: its record, 48 bytes and 8
 * a frame, stays within the 256 bytes a session record may have.
 */
#define PERFMON_MAX_FRAMES      26

struct perfmon_record_header {
    uint16_t type;
    uint16_t size;              /* bytes, header included, multiple of 8 */
    uint32_t cpu;               /* the CPU whose ring holds the record */
};

/*
 * One sample: an event's period expired. ip is where the CPU was when the
 * overflow was taken (for a software event: the code that counted it);
 * frames[] the return addresses of the callers, innermost first (none
 * unless the event asked for a call chain). The record has room for the
 * depth the event asked for; a shorter chain leaves the rest of it unused
 * (nr_frames frames are valid).
 */
struct perfmon_record_sample {
    struct perfmon_record_header header;
    uint64_t cookie;            /* chosen by the event's owner */
    uint64_t time;              /* TSC at the sample */
    uint64_t ip;
    uint64_t period;            /* events this sample stands for */
    uint32_t tid;               /* thread running (thread_id), 0: idle */
    uint32_t nr_frames;
    uint64_t frames[];
};

/*
 * Records that did not fit in the ring since the last record that did;
 * written before the next record that fits.
 */
struct perfmon_record_lost {
    struct perfmon_record_header header;
    uint64_t nr_lost;
};

/*
 * Sampling on the CPU was throttled (more than the per-tick limit of
 * samples) from time_start to time_end (TSC); nr_periods periods of
 * sampling events expired meanwhile without a sample. Written when
 * sampling resumes.
 */
struct perfmon_record_throttle {
    struct perfmon_record_header header;
    uint64_t time_start;
    uint64_t time_end;
    uint64_t nr_periods;
};

/* Written by tests only: a per-CPU sequence number. */
struct perfmon_record_test {
    struct perfmon_record_header header;
    uint64_t seq;
};

#endif /* KERN_PERFMON_RECORD_H */
