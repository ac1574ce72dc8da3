/*
 * What perf record (kern/perf/perf_record.c) and its readers, perf report and
 * perf script (kern/perf/perf_report.c), share: the last recording and the
 * records it holds. Private to those two files; the shell's perf command
 * includes kern/perf/perf_record.h and kern/perf/perf_report.h only.
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

#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/thread.h>
#include <machine/cpu.h>

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
    size_t buf_size;                    /* perf_record_buf_size() */
    size_t used;
    bool full;                          /* a record did not fit */
    uint64_t received;                  /* SAMPLE records read */
    uint64_t throttled;                 /* THROTTLE records read */
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

/*
 * The last complete recording, or NULL before the first one (and while
 * perf record replaces it). Cannot fail. Shell thread only.
 */
const struct perf_record_last *perf_record_last_get(void);

#endif /* KERN_PERF_RECORD_I_H */
