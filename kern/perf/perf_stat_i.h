/*
 * What the files of perf stat share: the request the command parses
 * (kern/perf/perf_stat.c), counts (kern/perf/perf_stat_count.c) and
 * prints (kern/perf/perf_stat_print.c). Private to them; the shell's perf
 * command includes kern/perf/perf_stat.h only. Shell thread only, as
 * perf stat is.
 */
#ifndef KERN_PERF_STAT_I_H
#define KERN_PERF_STAT_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/cpu.h>
#include <kern/perf/perf_util.h>
#include <kern/perf/perf_work.h>
#include <kern/perfmon.h>
#include <kern/thread.h>

#define PERF_STAT_MAX_EVENTS    16U
#define PERF_STAT_MAX_MS        60000ULL
#define PERF_STAT_MAX_RUNS      100U
#define PERF_STAT_NAME_SIZE     PERF_UTIL_NAME_SIZE

/* One row of output: an event's values summed over its targets. */
struct perf_stat_row {
    uint64_t count;
    uint64_t enabled;                   /* the time to scale by */
    uint64_t running;
};

struct perf_stat_event {
    char name[PERF_STAT_NAME_SIZE];
    struct perf_util_event ev;
    int error;                          /* why it is not counted, or 0 */
    unsigned int nr_attached;           /* targets, this run */
    bool attached;                      /* by itself, not in a group */
    bool in_group;                      /* -g, or in -e's {...} */
    struct perfmon_event *events;       /* one per target, this run */
    struct perf_stat_row last;          /* -I: at the last interval */
    struct perf_stat_row sum;           /* over the runs */
    uint64_t *values;                   /* -r: each run's estimate */
};

/* The CPUs or threads perf stat attaches each event to. */
struct perf_stat_target {
    char desc[48];
    const char *word;                   /* as the user named it, or NULL */
    unsigned int nr;
    unsigned int cpus[CPU_MAX];         /* CPU targets */
    struct thread *thread;              /* a thread target, referenced */
    struct perf_work *work;             /* the workload's threads, or NULL */
};

/* What perf stat was asked to do, and what its runs counted. */
struct perf_stat {
    struct perf_stat_event events[PERF_STAT_MAX_EVENTS];
    unsigned int nr_events;
    struct perf_stat_target target;
    const char *work_kind;              /* NULL: no workload */
    const char *work_value;
    const char *work_value2;            /* fanout's DEPTH, or NULL */
    uint64_t ms;                        /* 0: until the workload ends */
    uint64_t interval_ms;               /* -I, or 0 */
    unsigned int nr_runs;               /* -r */
    char sep;                           /* -x, or '\0' */
    bool grouped;                       /* -g, or a {...} group */
    bool braces;                        /* a {...} group was given */
    bool verbose;                       /* -v */
    bool no_inherit;                    /* -i: a workload's first threads
                                           only, not those they create */
    bool per_thread;                    /* --per-thread */
    uint64_t elapsed[PERF_STAT_MAX_RUNS];       /* ns of each run */
};

/*
 * One run (kern/perf/perf_stat_count.c): start the workload, attach,
 * count (printing -I's counts), detach; add each event's values to its
 * sum and to values[nr_run], the run's time to elapsed[nr_run]. Return
 * 0, or an error after a message (nothing could be counted);
 * *interruptedp tells whether Ctrl-C ended the run.
 */
int perf_stat_count_run(struct perf_stat *stat, unsigned int nr_run,
                        bool *interruptedp);

/*
 * The time a row's count is scaled to (its time enabled, for thread and
 * CPU targets alike), the estimate a row prints (the scaled count; a
 * clock's is its count, its time running being its time enabled), and
 * whether a row counted anything (ran).
 */
uint64_t perf_stat_count_scale(const struct perf_stat *stat,
                               const struct perf_stat_row *row);
uint64_t perf_stat_count_value(const struct perf_stat *stat,
                               const struct perf_stat_event *ev,
                               const struct perf_stat_row *row);
bool perf_stat_count_counted(const struct perf_stat_event *ev,
                             const struct perf_stat_row *row);

/*
 * Every event's line (kern/perf/perf_stat_print.c): rows, values (and,
 * with -r, vars, the relative deviations) per event; time_ns: -I's time
 * stamp, or ~0 for none.
 */
void perf_stat_print_counts(const struct perf_stat *stat,
                            const struct perf_stat_row *rows,
                            const uint64_t *values, const uint64_t *vars,
                            uint64_t elapsed_ns, uint64_t time_ns);

/* The summary after nr_runs runs: the means, and the time elapsed. */
void perf_stat_print_summary(const struct perf_stat *stat,
                             unsigned int nr_runs);

#endif /* KERN_PERF_STAT_I_H */
