/*
 * Reading the last recording (kern/perf_report.h): perf report and perf
 * script.
 *
 * Both walk the records perf record kept (kern/perf_record.c), in the
 * order kept, through perf_record_last_get and the layout in
 * kern/perf_record_i.h; neither changes the recording, so either may run
 * any number of times after one perf record. perf report counts the
 * samples per function (the interrupted instruction's, from the kernel's
 * symbol table) and prints the most sampled; perf script prints the
 * dump tools/perf-convert reads (a line per thread, per record and per
 * call chain), each line written at once so that no other output lands
 * inside it.
 *
 * Shell thread only, like the last recording itself.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/ksym.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/perf_record.h>
#include <kern/perf_record_i.h>
#include <kern/perf_report.h>
#include <kern/perf_util.h>
#include <kern/perfmon_record.h>
#include <kern/printf.h>
#include <kern/string.h>

#define PERF_REPORT_MAX_FUNCS       512U
#define PERF_REPORT_TOP             20U
#define PERF_REPORT_LINE_SIZE       2048U
#define PERF_REPORT_DUMP_VERSION    2

/* ---- perf report ------------------------------------------------------- */

struct perf_report_func {
    const char *name;                   /* NULL: outside the kernel text */
    uint64_t nr_samples;
};

/* The next kept record at *offsetp, advancing it; NULL at the end. */
static const union perf_record_rec *
perf_report_next(const struct perf_record_last *last, size_t *offsetp)
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

static const char *
perf_report_func_name(uint64_t ip)
{
    uintptr_t offset;

    return ksym_lookup((uintptr_t)ip, &offset);
}

/* The last recording, or NULL after saying there is none. */
static const struct perf_record_last *
perf_report_require_last(void)
{
    const struct perf_record_last *last = perf_record_last_get();

    if (last == NULL) {
        printf("perf: no recording yet (perf record first)\n");
    }

    return last;
}

/* Sort by count, most first, then by name (insertion: few entries). */
static void
perf_report_funcs_sort(struct perf_report_func *funcs, unsigned int nr)
{
    for (unsigned int i = 1; i < nr; i++) {
        struct perf_report_func f = funcs[i];
        unsigned int j = i;

        while (j > 0 && (funcs[j - 1].nr_samples < f.nr_samples
                         || (funcs[j - 1].nr_samples == f.nr_samples
                             && strcmp(funcs[j - 1].name ?: "",
                                       f.name ?: "") > 0))) {
            funcs[j] = funcs[j - 1];
            j--;
        }

        funcs[j] = f;
    }
}

static void
perf_report_print_pct(uint64_t part, uint64_t total)
{
    uint64_t bp = (total == 0) ? 0 : part * 10000 / total;

    printf("%6llu.%02llu%%", (unsigned long long)(bp / 100),
           (unsigned long long)(bp % 100));
}

void
perf_report_cmd_report(int argc, char **argv)
{
    const struct perf_record_last *last;
    const union perf_record_rec *rec;
    struct perf_report_func *funcs;
    uint64_t nr_kept = 0, other = 0, lost = 0;
    unsigned int nr_funcs = 0;
    size_t offset = 0;

    if (argc != 2) {
        perf_util_unexpected(argv[1], argv[2], "it takes no options");
        return;
    }

    last = perf_report_require_last();

    if (last == NULL) {
        return;
    }

    funcs = kmem_zalloc(PERF_REPORT_MAX_FUNCS * sizeof(funcs[0]));

    if (funcs == NULL) {
        perf_util_error("report", ENOMEM);
        return;
    }

    while ((rec = perf_report_next(last, &offset)) != NULL) {
        const char *name;
        unsigned int i;

        if (rec->header.type != PERFMON_RECORD_SAMPLE) {
            continue;
        }

        nr_kept++;
        name = perf_report_func_name(rec->sample.ip);

        for (i = 0; i < nr_funcs && funcs[i].name != name; i++) {
            continue;
        }

        if (i == nr_funcs) {
            if (nr_funcs == PERF_REPORT_MAX_FUNCS) {
                other++;
                continue;
            }

            funcs[nr_funcs++].name = name;
        }

        funcs[i].nr_samples++;
    }

    perf_report_funcs_sort(funcs, nr_funcs);

    for (unsigned int cpu = 0; cpu < last->nr_cpus; cpu++) {
        lost += last->lost[cpu];
    }

    printf("# Samples: %llu of event '%s', period %llu, target %s, %llu ms\n"
           "#\n# Overhead   Samples  Symbol\n#\n",
           (unsigned long long)nr_kept, last->event,
           (unsigned long long)last->period, last->target,
           (unsigned long long)last->ms);

    for (unsigned int i = 0; i < nr_funcs && i < PERF_REPORT_TOP;
         i++) {
        perf_report_print_pct(funcs[i].nr_samples, nr_kept);
        printf("  %8llu  %s\n", (unsigned long long)funcs[i].nr_samples,
               (funcs[i].name == NULL) ? "[unknown]" : funcs[i].name);
    }

    if (nr_funcs > PERF_REPORT_TOP || other != 0) {
        for (unsigned int i = PERF_REPORT_TOP; i < nr_funcs; i++) {
            other += funcs[i].nr_samples;
        }

        perf_report_print_pct(other, nr_kept);
        printf("  %8llu  (other functions)\n", (unsigned long long)other);
    }

    printf("#\n# %llu received, %llu lost, %llu throttled (%llu produced)",
           (unsigned long long)last->received, (unsigned long long)lost,
           (unsigned long long)last->throttled,
           (unsigned long long)last->produced);

    if (last->dropped != 0) {
        printf("; %llu did not fit the buffer",
               (unsigned long long)last->dropped);
    }

    printf("\n");
    kmem_free(funcs);
}

/* ---- perf script: the dump ------------------------------------------- */

/* Formatting into one line, written at once so no other output lands in
 * it. */
struct perf_report_line {
    char buf[PERF_REPORT_LINE_SIZE];
    size_t len;
    bool overflow;
};

static void
perf_report_line_add(struct perf_report_line *line, const char *fmt, ...)
    __format_printf(2, 3);

static void
perf_report_line_add(struct perf_report_line *line, const char *fmt, ...)
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
perf_report_line_put(struct perf_report_line *line, uint64_t *nr_linesp)
{
    line->buf[line->len++] = '\n';
    log_write(line->buf, line->len);
    line->len = 0;
    line->overflow = false;

    if (nr_linesp != NULL) {
        (*nr_linesp)++;
    }
}

static void
perf_report_line_frame(struct perf_report_line *line, uint64_t addr)
{
    const char *name;
    uintptr_t offset;
    size_t len = line->len;

    name = ksym_lookup((uintptr_t)addr, &offset);

    if (name != NULL) {
        perf_report_line_add(line, " 0x%llx %s+0x%llx",
                             (unsigned long long)addr, name,
                             (unsigned long long)offset);
    }

    if (name == NULL || line->overflow) {
        /* Without its name rather than cut. */
        line->len = len;
        line->overflow = false;
        perf_report_line_add(line, " 0x%llx ?", (unsigned long long)addr);
    }
}

/*
 * A sample's lines: its fixed part, then its call chain, when it has
 * callers, on a line of its own (the dump's lines follow the record's
 * parts: a new chunk type becomes a new kind of line after the sample).
 */
static void
perf_report_script_sample(struct perf_report_line *line,
                          const struct perfmon_record_sample *s,
                          uint64_t *nr_linesp)
{
    const struct perfmon_record_callchain *chain;
    unsigned int nr_frames;

    perf_report_line_add(line, "pd sample %u %llu %u %llu %llu",
                         s->header.cpu, (unsigned long long)s->time, s->tid,
                         (unsigned long long)s->period,
                         (unsigned long long)s->cookie);
    perf_report_line_frame(line, s->ip);
    perf_report_line_put(line, nr_linesp);
    chain = perfmon_record_sample_callchain(s, s->header.size);
    nr_frames = (chain == NULL) ? 0 : chain->chunk.nr;

    if (nr_frames == 0) {
        return;
    }

    perf_report_line_add(line, "pd callchain %u", nr_frames);

    for (unsigned int i = 0; i < nr_frames; i++) {
        perf_report_line_frame(line, chain->frames[i]);
    }

    perf_report_line_put(line, nr_linesp);
}

void
perf_report_cmd_script(int argc, char **argv)
{
    static struct perf_report_line line;
    const struct perf_record_last *last;
    const union perf_record_rec *rec;
    uint64_t nr_lines = 0, lost = 0;
    size_t offset = 0;

    if (argc != 2) {
        perf_util_unexpected(argv[1], argv[2], "it takes no options");
        return;
    }

    last = perf_report_require_last();

    if (last == NULL) {
        return;
    }

    line.len = 0;
    perf_report_line_add(&line, "perfmon-dump %u begin cpus=%u tsc_hz=%llu "
                         "event=%s period=%llu frames=%u ms=%llu target=%s",
                         PERF_REPORT_DUMP_VERSION, last->nr_cpus,
                         (unsigned long long)last->tsc_hz, last->event,
                         (unsigned long long)last->period,
                         PERF_RECORD_NR_FRAMES, (unsigned long long)last->ms,
                         last->target);
    perf_report_line_put(&line, NULL);
    perf_report_line_add(&line, "pd thread 0 idle");
    perf_report_line_put(&line, &nr_lines);

    for (unsigned int i = 0; i < last->nr_threads; i++) {
        perf_report_line_add(&line, "pd thread %u %s", last->threads[i].tid,
                             last->threads[i].name);
        perf_report_line_put(&line, &nr_lines);
    }

    while ((rec = perf_report_next(last, &offset)) != NULL) {
        if (rec->header.type == PERFMON_RECORD_SAMPLE) {
            perf_report_script_sample(&line, &rec->sample, &nr_lines);
            continue;
        }

        perf_report_line_add(&line, "pd throttle %u %llu %llu %llu",
                             rec->header.cpu,
                             (unsigned long long)rec->throttle.time_start,
                             (unsigned long long)rec->throttle.time_end,
                             (unsigned long long)rec->throttle.nr_periods);
        perf_report_line_put(&line, &nr_lines);
    }

    for (unsigned int cpu = 0; cpu < last->nr_cpus; cpu++) {
        lost += last->lost[cpu];

        if (last->lost[cpu] != 0) {
            perf_report_line_add(&line, "pd lost %u %llu", cpu,
                                 (unsigned long long)last->lost[cpu]);
            perf_report_line_put(&line, &nr_lines);
        }
    }

    perf_report_line_add(&line, "pd totals received=%llu lost=%llu "
                         "throttled=%llu produced=%llu dropped=%llu",
                         (unsigned long long)last->received,
                         (unsigned long long)lost,
                         (unsigned long long)last->throttled,
                         (unsigned long long)last->produced,
                         (unsigned long long)last->dropped);
    perf_report_line_put(&line, &nr_lines);
    perf_report_line_add(&line, "perfmon-dump %u end lines=%llu",
                         PERF_REPORT_DUMP_VERSION,
                         (unsigned long long)nr_lines);
    perf_report_line_put(&line, NULL);
}
