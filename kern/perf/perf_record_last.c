/*
 * The last recording (kern/perf/perf_record_i.h): its buffer, filled by
 * perf record (kern/perf/perf_record.c) from a session's rings, its
 * thread table, and the walk of its records that perf report, perf
 * annotate and perf script (kern/perf/perf_report.c, perf_annotate.c,
 * perf_script.c) read it by.
 *
 * The buffer keeps the records in the order read (per CPU, the order
 * produced); once a record does not fit, no later record is kept, so the
 * buffer holds a prefix of the recording and the dump says how many
 * samples are missing from it. Allocated at the first recording, it is
 * reused by every later one. Shell thread only, as the recording is.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/cpu.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/macros.h>
#include <kern/perf/perf_record.h>
#include <kern/perf/perf_record_i.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>

static struct perf_record_last perf_record_last;

/* ---- the thread table ------------------------------------------------ */

static bool
perf_record_last_thread_known(const struct perf_record_last *last,
                              uint32_t tid)
{
    for (unsigned int i = 0; i < last->nr_threads; i++) {
        if (last->threads[i].tid == tid) {
            return true;
        }
    }

    return false;
}

static void
perf_record_last_thread_add(struct thread *thread, void *arg)
{
    struct perf_record_last *last = arg;
    struct perf_record_thread *entry;
    uint32_t tid = thread_id(thread);

    if (tid == 0 || perf_record_last_thread_known(last, tid)) {
        return;     /* idle threads share id 0, named "idle" in the dump */
    }

    if (last->nr_threads == ARRAY_SIZE(last->threads)) {
        last->threads_full = true;
        return;
    }

    entry = &last->threads[last->nr_threads++];
    entry->tid = tid;
    strlcpy(entry->name, thread_name(thread), sizeof(entry->name));
}

/* Add every live thread the table lacks. */
void
perf_record_last_scan_threads(struct perf_record_last *last)
{
    thread_for_each(perf_record_last_thread_add, last);
}

/* ---- recording ------------------------------------------------------- */

static void
perf_record_last_keep(struct perf_record_last *last,
                      const union perf_record_rec *rec, size_t size)
{
    if (last->full || size > last->buf_size - last->used) {
        last->full = true;
        last->dropped += (rec->header.type == PERFMON_RECORD_SAMPLE);
        return;
    }

    memcpy(last->buf + last->used, rec, size);
    last->used += size;
}

/*
 * Copy what the rings hold into the buffer. Return whether a sample came
 * from a thread the table lacks.
 */
bool
perf_record_last_drain(struct perf_record_last *last,
                       struct perfmon_session *session)
{
    union perf_record_rec rec;
    bool unknown = false;
    size_t size;

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        while (perfmon_session_read(session, cpu, &rec, sizeof(rec), &size)
               == 0) {
            switch (rec.header.type) {
            case PERFMON_RECORD_SAMPLE:
                last->received++;
                unknown |= (rec.sample.tid != 0
                            && !perf_record_last_thread_known(last,
                                                              rec.sample.tid));
                perf_record_last_keep(last, &rec, size);
                break;
            case PERFMON_RECORD_THROTTLE:
                last->throttled++;
                last->throttled_periods += rec.throttle.nr_periods;

                /* A record without its events (an earlier layout) adds
                   none: the figure is then a lower bound. */
                if (size >= offsetof(struct perfmon_record_throttle,
                                     nr_events)
                            + sizeof(rec.throttle.nr_events)) {
                    last->throttled_events += rec.throttle.nr_events;
                }

                perf_record_last_keep(last, &rec, size);
                break;
            default:
                /* LOST: counted from the session's statistics. */
                break;
            }
        }
    }

    return unknown;
}

/* The session's final counts into the last recording. */
void
perf_record_last_account(struct perf_record_last *last,
                         const struct perfmon_session *session)
{
    struct perfmon_session_stats stats;

    for (unsigned int cpu = 0; cpu < last->nr_cpus; cpu++) {
        if (perfmon_session_stats(session, cpu, &stats) == 0) {
            last->lost[cpu] = stats.lost + stats.dropped;
            last->produced += stats.produced;
        }
    }
}

/* The size of the last recording's buffer (see perf_record.h). */
static size_t
perf_record_last_buf_size(void)
{
    size_t size = (size_t)PERF_RECORD_BUF_PER_CPU * cpu_count();

    return MIN(MAX(size, PERF_RECORD_BUF_MIN), PERF_RECORD_BUF_MAX);
}

int
perf_record_last_reset(struct perf_record_last **lastp)
{
    struct perf_record_last *last = &perf_record_last;
    unsigned char *buf = last->buf;
    size_t size = perf_record_last_buf_size();

    if (buf == NULL) {
        buf = kmem_alloc(size);

        if (buf == NULL) {
            return ENOMEM;
        }
    }

    memset(last, 0, sizeof(*last));
    last->buf = buf;
    last->buf_size = size;
    last->tsc_hz = cpu_get_freq();
    last->nr_cpus = cpu_count();
    *lastp = last;
    return 0;
}

/* ---- reading --------------------------------------------------------- */

const struct perf_record_last *
perf_record_last_get(void)
{
    return perf_record_last.valid ? &perf_record_last : NULL;
}

const struct perf_record_last *
perf_record_last_require(void)
{
    const struct perf_record_last *last = perf_record_last_get();

    if (last == NULL) {
        printf("perf: no recording yet (perf record first)\n");
    }

    return last;
}

const union perf_record_rec *
perf_record_last_next(const struct perf_record_last *last, size_t *offsetp)
{
    const union perf_record_rec *rec;

    if (*offsetp >= last->used) {
        return NULL;
    }

    rec = (const void *)(last->buf + *offsetp);

    if (rec->header.size < sizeof(rec->header)) {
        return NULL;    /* never kept: perf record keeps the sizes read */
    }

    *offsetp += rec->header.size;
    return rec;
}

const struct perfmon_record_sample *
perf_record_last_next_sample(const struct perf_record_last *last,
                             size_t *offsetp)
{
    const union perf_record_rec *rec;

    while ((rec = perf_record_last_next(last, offsetp)) != NULL) {
        if (rec->header.type == PERFMON_RECORD_SAMPLE) {
            return &rec->sample;
        }
    }

    return NULL;
}
