/*
 * perf script (kern/perf/perf_script.h): the last recording as the dump
 * tools/perf/perf-convert reads (a line per thread, per record and per
 * call chain), each line written at once so that no other output lands
 * inside it: to the console, or with --capture to the console's capture
 * channel (kern/console.h). Shell thread only, like the last recording
 * itself.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/console.h>
#include <kern/ksym.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/perf/perf_record.h>
#include <kern/perf/perf_record_i.h>
#include <kern/perf/perf_script.h>
#include <kern/perfmon_record.h>
#include <kern/printf.h>
#include <kern/string.h>

#define PERF_SCRIPT_LINE_SIZE       2048U
#define PERF_SCRIPT_DUMP_VERSION    2

/*
 * Formatting into one line, written at once so no other output lands in
 * it.
 */
struct perf_script_line {
    char buf[PERF_SCRIPT_LINE_SIZE];
    size_t len;
    bool overflow;
    bool capture;                       /* to the capture channel, not the
                                           log */
};

static void
perf_script_line_add(struct perf_script_line *line, const char *fmt, ...)
    __format_printf(2, 3);

static void
perf_script_line_add(struct perf_script_line *line, const char *fmt, ...)
{
    size_t left = sizeof(line->buf) - line->len;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line->buf + line->len, left, fmt, ap);
    va_end(ap);

    if (n < 0 || (size_t)n >= left) {
        line->overflow = true;
        line->buf[line->len] = '\0';
        return;
    }

    line->len += (size_t)n;
}

/* Write the line with a newline, and start the next one. */
static void
perf_script_line_put(struct perf_script_line *line, uint64_t *nr_linesp)
{
    line->buf[line->len++] = '\n';

    if (line->capture) {
        console_capture_write(line->buf, line->len);
    } else {
        log_write(line->buf, line->len);
    }

    line->len = 0;
    line->overflow = false;

    if (nr_linesp != NULL) {
        (*nr_linesp)++;
    }
}

static void
perf_script_line_frame(struct perf_script_line *line, uint64_t addr)
{
    const char *name;
    uintptr_t offset;
    size_t len = line->len;

    name = ksym_lookup((uintptr_t)addr, &offset);

    if (name != NULL) {
        perf_script_line_add(line, " 0x%llx %s+0x%llx",
                             (unsigned long long)addr, name,
                             (unsigned long long)offset);
    }

    if (name == NULL || line->overflow) {
        /* Without its name rather than cut. */
        line->len = len;
        line->overflow = false;
        perf_script_line_add(line, " 0x%llx ?", (unsigned long long)addr);
    }
}

/*
 * A sample's lines: its fixed part, then its call chain, when it has
 * callers, on a line of its own (the dump's lines follow the record's
 * parts: a new chunk type becomes a new kind of line after the sample).
 */
static void
perf_script_sample(struct perf_script_line *line,
                   const struct perfmon_record_sample *s,
                   uint64_t *nr_linesp)
{
    const struct perfmon_record_callchain *chain;
    unsigned int nr_frames;

    perf_script_line_add(line, "pd sample %u %llu %u %llu %llu",
                         s->header.cpu, (unsigned long long)s->time, s->tid,
                         (unsigned long long)s->period,
                         (unsigned long long)s->cookie);
    perf_script_line_frame(line, s->ip);
    perf_script_line_put(line, nr_linesp);
    chain = perfmon_record_sample_callchain(s, s->header.size);
    nr_frames = (chain == NULL) ? 0 : chain->chunk.nr;

    if (nr_frames == 0) {
        return;
    }

    perf_script_line_add(line, "pd callchain %u", nr_frames);

    for (unsigned int i = 0; i < nr_frames; i++) {
        perf_script_line_frame(line, chain->frames[i]);
    }

    perf_script_line_put(line, nr_linesp);
}

void
perf_script_cmd(int argc, char **argv)
{
    static struct perf_script_line line;
    const struct perf_record_last *last;
    const union perf_record_rec *rec;
    uint64_t nr_lines = 0, lost = 0;
    size_t offset = 0;

    line.capture = (argc == 3 && strcmp(argv[2], "--capture") == 0);

    if (argc != 2 && !line.capture) {
        printf("usage: perf script [--capture]\n"
               "  --capture: write the dump to the capture channel, QEMU's "
               "debugcon\n");
        return;
    }

    if (line.capture && !console_capture_present()) {
        printf("perf script: no capture channel: boot QEMU with "
               "-debugcon file:PATH (make profile does)\n");
        return;
    }

    last = perf_record_last_require();

    if (last == NULL) {
        return;
    }

    line.len = 0;
    perf_script_line_add(&line, "perfmon-dump %u begin cpus=%u tsc_hz=%llu "
                         "event=%s period=", PERF_SCRIPT_DUMP_VERSION,
                         last->nr_cpus, (unsigned long long)last->tsc_hz,
                         last->event);

    /* A period per event, in the order of the names (0: at freq). */
    for (unsigned int e = 0; e < last->nr_events; e++) {
        perf_script_line_add(&line, "%s%llu", (e != 0) ? "," : "",
                             (unsigned long long)last->periods[e]);
    }

    perf_script_line_add(&line, " freq=%llu frames=%u ms=%llu target=%s",
                         (unsigned long long)last->freq,
                         PERF_RECORD_NR_FRAMES, (unsigned long long)last->ms,
                         last->target);
    perf_script_line_put(&line, NULL);
    perf_script_line_add(&line, "pd thread 0 idle");
    perf_script_line_put(&line, &nr_lines);

    for (unsigned int i = 0; i < last->nr_threads; i++) {
        perf_script_line_add(&line, "pd thread %u %s", last->threads[i].tid,
                             last->threads[i].name);
        perf_script_line_put(&line, &nr_lines);
    }

    while ((rec = perf_record_last_next(last, &offset)) != NULL) {
        if (rec->header.type == PERFMON_RECORD_SAMPLE) {
            perf_script_sample(&line, &rec->sample, &nr_lines);
            continue;
        }

        perf_script_line_add(&line, "pd throttle %u %llu %llu %llu %llu %llu",
                             rec->header.cpu,
                             (unsigned long long)rec->throttle.time_start,
                             (unsigned long long)rec->throttle.time_end,
                             (unsigned long long)rec->throttle.nr_periods,
                             (unsigned long long)rec->throttle.cookie,
                             (unsigned long long)rec->throttle.nr_events);
        perf_script_line_put(&line, &nr_lines);
    }

    for (unsigned int cpu = 0; cpu < last->nr_cpus; cpu++) {
        lost += last->lost[cpu];

        if (last->lost[cpu] != 0) {
            perf_script_line_add(&line, "pd lost %u %llu", cpu,
                                 (unsigned long long)last->lost[cpu]);
            perf_script_line_put(&line, &nr_lines);
        }
    }

    perf_script_line_add(&line, "pd totals received=%llu lost=%llu "
                         "throttled=%llu produced=%llu dropped=%llu "
                         "throttled_periods=%llu throttled_events=%llu",
                         (unsigned long long)last->received,
                         (unsigned long long)lost,
                         (unsigned long long)last->throttled,
                         (unsigned long long)last->produced,
                         (unsigned long long)last->dropped,
                         (unsigned long long)last->throttled_periods,
                         (unsigned long long)last->throttled_events);
    perf_script_line_put(&line, &nr_lines);
    perf_script_line_add(&line, "perfmon-dump %u end lines=%llu",
                         PERF_SCRIPT_DUMP_VERSION,
                         (unsigned long long)nr_lines);
    perf_script_line_put(&line, NULL);

    if (line.capture) {
        printf("perf script: %llu lines written to the capture channel\n",
               (unsigned long long)nr_lines + 2);
    }
}
