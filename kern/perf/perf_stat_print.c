/*
 * perf stat's output (kern/perf/perf_stat_i.h), Linux perf stat's
 * layout: each count right-aligned with thousands separators, the event,
 * a metric (CPUs utilized for a clock, instructions per cycle, GHz, else
 * a rate per second of task-clock), the share of its enabled time an
 * event ran when it was multiplexed, -r's deviation; or, with -x, the
 * same fields split by one character.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/perf/perf_num.h>
#include <kern/perf/perf_stat_i.h>
#include <kern/perfmon.h>
#include <kern/printf.h>
#include <kern/string.h>

/* The metric of a row: its value and unit ("" when there is none). */
struct perf_stat_print_metric {
    char value[24];
    const char *unit;
};

/* The value of the first counted event that matches, or 0. */
static uint64_t
perf_stat_print_find(const struct perf_stat *stat,
                     const struct perf_stat_row *rows,
                     const uint64_t *values, bool clock, uint64_t id)
{
    for (unsigned int i = 0; i < stat->nr_events; i++) {
        const struct perf_stat_event *ev = &stat->events[i];
        bool generic = !(ev->ev.flags & (PERFMON_EF_RAW | PERFMON_EF_SW));

        if (perf_stat_count_counted(ev, &rows[i])
            && (clock ? ev->ev.clock : (generic && ev->ev.id == id))) {
            return values[i];
        }
    }

    return 0;
}

/*
 * Linux's metrics: CPUs utilized for a clock, instructions per cycle,
 * cycles per nanosecond of task-clock (GHz), else a rate per second of
 * task-clock (the event's own time when no clock was counted) in K, M or
 * G units.
 */
static void
perf_stat_print_compute_metric(const struct perf_stat *stat,
                               const struct perf_stat_row *rows,
                               const uint64_t *values, unsigned int i,
                               uint64_t elapsed_ns,
                               struct perf_stat_print_metric *m)
{
    const struct perf_stat_event *ev = &stat->events[i];
    bool generic = !(ev->ev.flags & (PERFMON_EF_RAW | PERFMON_EF_SW));
    uint64_t task_ns, cycles, v = values[i];

    m->unit = "";
    task_ns = perf_stat_print_find(stat, rows, values, true, 0);

    if (task_ns == 0) {
        task_ns = perf_stat_count_scale(stat, &rows[i]);
    }

    cycles = perf_stat_print_find(stat, rows, values, false, PERFMON_EV_CYCLE);

    if (ev->ev.clock) {
        if (elapsed_ns != 0) {
            perf_num_format_fixed(m->value, sizeof(m->value),
                                  perf_num_muldiv(v, 1000, elapsed_ns), 3);
            m->unit = "CPUs utilized";
        }
    } else if (generic && ev->ev.id == PERFMON_EV_INSTRUCTION
               && cycles != 0) {
        perf_num_format_fixed(m->value, sizeof(m->value),
                              perf_num_muldiv(v, 100, cycles), 2);
        m->unit = "insn per cycle";
    } else if (generic && ev->ev.id == PERFMON_EV_CYCLE
               && task_ns != 0) {
        perf_num_format_fixed(m->value, sizeof(m->value),
                              perf_num_muldiv(v, 1000, task_ns), 3);
        m->unit = "GHz";
    } else if (task_ns >= 1000) {
        m->unit = perf_num_format_rate(m->value, sizeof(m->value), v,
                                       task_ns / 1000);
    }
}

/* " NN.NN": the percentage num / den, two decimals. */
static void
perf_stat_print_percent(char *buf, size_t size, uint64_t num,
                        uint64_t den)
{
    perf_num_format_fixed(buf, size,
                          (den == 0) ? 0 : perf_num_muldiv(num, 10000, den),
                          2);
}

/* Drop trailing blanks (the padding of a line's last column). */
static void
perf_stat_print_trim(char *line)
{
    size_t len = strlen(line);

    while (len > 0 && line[len - 1] == ' ') {
        line[--len] = '\0';
    }
}

/* One event's line, Linux's layout or -x's fields. */
static void
perf_stat_print_row(const struct perf_stat *stat,
                    const struct perf_stat_row *rows,
                    const uint64_t *values, const uint64_t *vars,
                    unsigned int i, uint64_t elapsed_ns,
                    const char *prefix)
{
    const struct perf_stat_event *ev = &stat->events[i];
    const struct perf_stat_row *row = &rows[i];
    struct perf_stat_print_metric m = { .unit = "" };
    char count[32], var[16] = "", pct[16] = "", line[192];
    uint64_t scale = perf_stat_count_scale(stat, row);
    /* A clock's equals its time enabled: perfmon never multiplexes it. */
    uint64_t running = row->running;
    const char *unit = ev->ev.clock ? "msec" : "";
    bool csv = (stat->sep != '\0');
    char sep = stat->sep;

    if (ev->error) {
        strlcpy(count, "<not supported>", sizeof(count));
    } else if (!perf_stat_count_counted(ev, row)) {
        strlcpy(count, "<not counted>", sizeof(count));
    } else {
        if (ev->ev.clock && csv) {
            perf_num_format_fixed(count, sizeof(count), values[i] / 10000, 2);
        } else if (ev->ev.clock) {
            perf_num_format_msec(count, sizeof(count), values[i]);
        } else if (csv) {
            snprintf(count, sizeof(count), "%llu",
                     (unsigned long long)values[i]);
        } else {
            perf_num_format_count(count, sizeof(count), values[i]);
        }

        perf_stat_print_compute_metric(stat, rows, values, i, elapsed_ns, &m);
        perf_stat_print_percent(pct, sizeof(pct), running, scale);
    }

    if (vars != NULL) {
        perf_num_format_fixed(var, sizeof(var), vars[i], 2);
    }

    if (csv) {
        char var_field[24] = "";    /* -r: "0.12%," */

        if (vars != NULL) {
            snprintf(var_field, sizeof(var_field), "%s%%%c", var, sep);
        }

        printf("%s%s%c%s%c%s%c%s%llu%c%s%c%s%c%s\n", prefix, count, sep,
               unit, sep, ev->name, sep, var_field,
               (unsigned long long)running, sep,
               (pct[0] != '\0') ? pct : "0.00", sep, m.value, sep, m.unit);
        return;
    }

    snprintf(line, sizeof(line), "%s%18s %-4s %-25s", prefix, count, unit,
             ev->name);

    if (m.unit[0] != '\0') {
        size_t len = strlen(line);

        snprintf(line + len, sizeof(line) - len, " # %8s %-14s", m.value,
                 m.unit);
    }

    if (vars != NULL && perf_stat_count_counted(ev, row)) {
        size_t len = strlen(line);

        snprintf(line + len, sizeof(line) - len, "  ( +- %5s%% )", var);
    }

    /* The share an event ran only when it was multiplexed (never a
       clock). */
    if (perf_stat_count_counted(ev, row) && running != scale) {
        size_t len = strlen(line);

        snprintf(line + len, sizeof(line) - len, "  (%s%%)", pct);
    }

    if (ev->error && stat->verbose) {
        size_t len = strlen(line);

        snprintf(line + len, sizeof(line) - len, " # %s",
                 errno_str(ev->error));
    }

    perf_stat_print_trim(line);
    printf("%s\n", line);
}

void
perf_stat_print_counts(const struct perf_stat *stat,
                       const struct perf_stat_row *rows,
                       const uint64_t *values, const uint64_t *vars,
                       uint64_t elapsed_ns, uint64_t time_ns)
{
    char prefix[32] = "";

    if (time_ns != ~0ULL) {
        snprintf(prefix, sizeof(prefix), "%6llu.%09llu%c",
                 (unsigned long long)(time_ns / 1000000000),
                 (unsigned long long)(time_ns % 1000000000),
                 (stat->sep != '\0') ? stat->sep : ' ');
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        perf_stat_print_row(stat, rows, values, vars, i, elapsed_ns,
                            prefix);
    }
}

void
perf_stat_print_summary(const struct perf_stat *stat,
                        unsigned int nr_runs)
{
    struct perf_stat_row rows[PERF_STAT_MAX_EVENTS];
    uint64_t values[PERF_STAT_MAX_EVENTS], vars[PERF_STAT_MAX_EVENTS];
    uint64_t elapsed, elapsed_var;
    bool csv = (stat->sep != '\0');

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        const struct perf_stat_event *ev = &stat->events[i];

        rows[i] = ev->sum;
        values[i] = perf_num_mean(ev->values, nr_runs, &vars[i]);
    }

    elapsed = perf_num_mean(stat->elapsed, nr_runs, &elapsed_var);

    for (unsigned int i = 0; stat->verbose && i < stat->nr_events; i++) {
        const struct perf_stat_event *ev = &stat->events[i];

        /* A clock's three are one time: its count is the ns it ran. */
        if (ev->error == 0) {
            printf("%s: %llu %llu %llu\n", ev->name,
                   (unsigned long long)ev->sum.count,
                   (unsigned long long)ev->sum.enabled,
                   (unsigned long long)ev->sum.running);
        }
    }

    if (!csv) {
        printf("\n Performance counter stats for '%s'", stat->target.desc);

        if (nr_runs > 1) {
            printf(" (%u runs)", nr_runs);
        }

        printf(":\n\n");
    }

    perf_stat_print_counts(stat, rows, values, (nr_runs > 1) ? vars : NULL,
                           elapsed, ~0ULL);

    if (csv) {
        return;
    }

    if (nr_runs > 1) {
        char var[16];

        perf_num_format_fixed(var, sizeof(var), elapsed_var, 2);
        printf("\n%8llu.%06llu +- %llu.%06llu seconds time elapsed  "
               "( +- %5s%% )\n\n", (unsigned long long)(elapsed / 1000000000),
               (unsigned long long)(elapsed / 1000 % 1000000),
               (unsigned long long)(perf_num_muldiv(elapsed, elapsed_var,
                                                    10000) / 1000000000),
               (unsigned long long)(perf_num_muldiv(elapsed, elapsed_var,
                                                    10000)
                                    / 1000 % 1000000), var);
    } else {
        printf("\n%8llu.%03llu seconds time elapsed\n\n",
               (unsigned long long)(elapsed / 1000000000),
               (unsigned long long)(elapsed / 1000000 % 1000));
    }
}
