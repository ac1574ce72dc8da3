/*
 * What perf record (kern/perf/perf_record.c) and its readers, perf
 * report, perf annotate and perf script (kern/perf/perf_report.c,
 * perf_annotate.c, perf_script.c), share: the last recording
 * (kern/perf/perf_record_last.c) and the records it holds. Private to
 * those files; the shell's perf command includes kern/perf/perf_record.h,
 * perf_report.h, perf_annotate.h and perf_script.h only.
 *
 * The last recording belongs to the shell thread: perf record writes it,
 * perf report and perf script only read it, and the shell runs one
 * command at a time.
 */
#ifndef KERN_PERF_RECORD_I_H
#define KERN_PERF_RECORD_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/cpu.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/thread.h>

#define PERF_RECORD_MAX_THREADS     128U
#define PERF_RECORD_MAX_EVENTS      4U
#define PERF_RECORD_NAME_SIZE       32
#define PERF_RECORD_EVENTS_SIZE     (PERF_RECORD_MAX_EVENTS \
                                     * PERF_RECORD_NAME_SIZE)
#define PERF_RECORD_TARGET_SIZE     48

struct perf_record_thread {
    uint32_t tid;
    char name[THREAD_NAME_SIZE];
};

/*
 * The buffer holds the records kept, back to back, each as read from a
 * ring (header.size bytes, at least the header): a prefix of the
 * recording, in the order read (per CPU, the order produced). Each
 * sample's cookie is the index of its event in names and periods.
 */
struct perf_record_last {
    bool valid;
    char event[PERF_RECORD_EVENTS_SIZE];    /* the names, comma-separated */
    char target[PERF_RECORD_TARGET_SIZE];
    unsigned int nr_events;
    char names[PERF_RECORD_MAX_EVENTS][PERF_RECORD_NAME_SIZE];
    uint64_t periods[PERF_RECORD_MAX_EVENTS];   /* 0: sampled at freq */
    uint64_t freq;                      /* samples a second, or 0 */
    uint64_t ms;
    uint64_t tsc_hz;
    unsigned int nr_cpus;
    unsigned char *buf;                 /* buf_size bytes */
    size_t buf_size;                    /* perf_record_last_buf_size() */
    size_t used;
    bool full;                          /* a record did not fit */
    uint64_t received;                  /* SAMPLE records read */
    uint64_t throttled;                 /* THROTTLE records read */
    uint64_t throttled_periods;         /* periods they dropped */
    uint64_t throttled_events;          /* events those periods held */
    uint64_t produced;                  /* records the rings were offered */
    uint64_t dropped;                   /* samples read but not kept */
    uint64_t lost[CPU_MAX];             /* records the rings dropped */
    unsigned int nr_threads;
    bool threads_full;
    struct perf_record_thread threads[PERF_RECORD_MAX_THREADS];
};

/* A record as read from a ring: the largest one a session holds. */
union perf_record_rec {
    struct perfmon_record_header header;
    struct perfmon_record_sample sample;
    struct perfmon_record_throttle throttle;
    struct perfmon_record_lost lost;
    uint64_t raw[PERFMON_SESSION_RECORD_MAX / sizeof(uint64_t)];
};

struct perfmon_session;

/*
 * Start a new last recording, replacing the last one: its buffer
 * allocated (at the first recording; reused after), everything else
 * zeroed but the CPUs and the TSC frequency; perf record then describes
 * it (events, target, duration) and fills it. It stays invalid (see
 * perf_record_last_get) until perf record sets valid. Return 0 with
 * *lastp set, or ENOMEM, leaving the last recording as it was. Shell
 * thread only.
 */
int perf_record_last_reset(struct perf_record_last **lastp);

/*
 * Copy what the session's rings hold into the buffer (samples and
 * throttles; losses are the session's statistics). Return whether a
 * sample came from a thread the table lacks. Shell thread only.
 */
bool perf_record_last_drain(struct perf_record_last *last,
                            struct perfmon_session *session);

/* Add every live thread the thread table lacks. Shell thread only. */
void perf_record_last_scan_threads(struct perf_record_last *last);

/*
 * The session's final counts (lost, produced) into the last recording,
 * after its events are detached. Shell thread only.
 */
void perf_record_last_account(struct perf_record_last *last,
                              const struct perfmon_session *session);

/*
 * The last complete recording, or NULL before the first one (and while
 * perf record replaces it). Cannot fail. Shell thread only.
 */
const struct perf_record_last *perf_record_last_get(void);

/*
 * The same, or NULL after printing that there is none (perf record
 * first). Shell thread only.
 */
const struct perf_record_last *perf_record_last_require(void);

/*
 * The next kept record at *offsetp (0 for the first), advancing it; NULL
 * at the end. perf_record_last_next_sample: the same, skipping what is
 * not a sample. Shell thread only.
 */
const union perf_record_rec *
perf_record_last_next(const struct perf_record_last *last, size_t *offsetp);
const struct perfmon_record_sample *
perf_record_last_next_sample(const struct perf_record_last *last,
                             size_t *offsetp);

#endif /* KERN_PERF_RECORD_I_H */
