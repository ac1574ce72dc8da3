/*
 * perf list and perf stat (kern/perf/perf_stat.h):
 *
 *   perf list
 *   perf stat [options] [cpu N | thread NAME | all] [EVENTS] [MS]
 *             [-- spin MS | -- pingpong N | -- calltree N]
 *
 * Options, Linux's spellings: -e EVENTS (repeatable), -a (every online
 * CPU, as all), -C CPUS (0,2-3), -t TID (an id as perf script prints it),
 * -I MS (print counts every MS ms), -r N (N runs: the mean and its
 * relative standard deviation), -x SEP (one line per event, fields split
 * by SEP, as -x,), -g (the events as one group per target), -v (each
 * event's count, time enabled and time running in nanoseconds).
 *
 * perf stat counts the events on CPUs, a thread, or (with a built-in
 * workload and no target) the workload's own threads, for MS
 * milliseconds or until the workload ends, then prints Linux perf's
 * layout: each count right-aligned with thousands separators, the event,
 * a metric (a rate per second of task-clock, instructions per cycle, CPUs
 * utilized for the clocks), the share of its enabled time an event ran
 * when it was multiplexed, and the measured time. No event named: Linux's
 * default set. Counts are scaled as Linux scales multiplexed events
 * (count * enabled / running, perfmon_scale). An event that cannot be
 * counted prints <not supported> and the others still count (with -g,
 * none counts); one that never ran prints <not counted>. Ctrl-C ends the
 * count early and prints what was counted. Event names are perf_util's
 * (kern/perf/perf_util.c).
 *
 * task-clock and cpu-clock are no device's events: each is counted by a
 * software event (its carrier) attached as the others are, whose time
 * running (a thread's) or enabled (a CPU's) is the clock's count, so the
 * clocks also follow multiplexing and -g as the other events do.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/perf/perf_num.h>
#include <kern/perf/perf_util.h>
#include <kern/perf/perf_work.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perf/perf_stat.h>
#include <kern/perfmon/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#define PERFMON_SHELL_MAX_EVENTS 16U
#define PERFMON_SHELL_MAX_MS     60000ULL
#define PERFMON_SHELL_MAX_RUNS   100U
#define PERFMON_SHELL_NAME_SIZE  PERF_UTIL_NAME_SIZE

/* Linux perf stat's default events, when none is named. */
static const char *const perfmon_shell_default_events[] = {
    "task-clock", "context-switches", "cpu-migrations", "cycles",
    "instructions", "branches", "branch-misses",
};

/* One row of output: an event's values summed over its targets. */
struct perfmon_shell_row {
    uint64_t count;
    uint64_t enabled;                   /* the time to scale by */
    uint64_t running;
};

struct perfmon_shell_event {
    char name[PERFMON_SHELL_NAME_SIZE];
    struct perf_util_event ev;
    int error;                          /* why it is not counted, or 0 */
    unsigned int nr_attached;           /* targets, this run */
    bool attached;                      /* by itself, not in a group */
    struct perfmon_event *events;       /* one per target, this run */
    struct perfmon_shell_row last;      /* -I: at the last interval */
    struct perfmon_shell_row sum;       /* over the runs */
    uint64_t *values;                   /* -r: each run's estimate */
};

static const char *const perfmon_shell_generic_help[] = {
    [PERFMON_EV_CYCLE] = "core cycles while not halted",
    [PERFMON_EV_REF_CYCLE] = "reference cycles (TSC rate) while not halted",
    [PERFMON_EV_INSTRUCTION] = "instructions retired",
    [PERFMON_EV_CACHE_REF] = "last level cache references",
    [PERFMON_EV_CACHE_MISS] = "last level cache misses",
    [PERFMON_EV_BRANCH] = "branch instructions retired",
    [PERFMON_EV_BRANCH_MISS] = "mispredicted branches retired",
};

static const char *const perfmon_shell_soft_help[] = {
    [PMU_SOFT_EV_CSWITCH] = "context switches away from the thread "
                            "(context-switches, cs)",
    [PMU_SOFT_EV_MIGRATION] = "a thread starting on another CPU "
                              "(cpu-migrations, migrations)",
    [PMU_SOFT_EV_TICK] = "clock ticks, 100 per second per CPU (ticks)",
    [PMU_SOFT_EV_XCALL] = "cross-CPU calls received",
};

void
perfmon_shell_list(void)
{
    struct perfmon_dev *hw = perfmon_dev_get(false);
    struct perfmon_dev *sw = perfmon_dev_get(true);

    if (hw == NULL) {
        printf("hardware events: none counted here (no hardware PMU)\n");
    } else {
        printf("hardware events (%s, %u counters, :k kernel / :u user "
               "only):\n", hw->name, hw->nr_counters);

        /* The driver logged them once at boot; they stay unusable. */
        if (hw->fw_counters != 0) {
            printf("  (firmware holds counters 0x%llx, enabled at boot: "
                   "left alone, not counted above)\n",
                   (unsigned long long)hw->fw_counters);
        }
    }

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        int error = perfmon_event_check(id, PERFMON_EF_KERN
                                            | PERFMON_EF_USER);

        printf("  %-20s %s%s\n", perfmon_generic_name(id),
               perfmon_shell_generic_help[id],
               (error == 0) ? "" : " [unavailable]");
    }

    if (hw != NULL) {
        printf("  %-20s %s\n", "raw:0xCODE",
               "raw event code, validated by the driver");
    }

    if (sw != NULL) {
        printf("software events (%s, %u counters of %u bits):\n", sw->name,
               sw->nr_counters, sw->min_width);

        for (unsigned int id = 0; id < PMU_SOFT_NR_EVENTS; id++) {
            if (id < PMU_SOFT_EV_EMIT) {
                printf("  %-20s %s\n", pmu_soft_event_name(id),
                       perfmon_shell_soft_help[id]);
            } else {
                printf("  %-20s units code emits on channel %u "
                       "(pmu_soft_emit_channel)\n", pmu_soft_event_name(id),
                       id - PMU_SOFT_EV_EMIT);
            }
        }

        printf("  %-20s %s\n  %-20s %s\n", "task-clock",
               "time the targets ran, in ms (perf stat only)", "cpu-clock",
               "the same, Linux's name for CPU targets");
    }

    printf("software events and clocks take :k (kernel mode is all there "
           "is), not :u\n");
}

/* ---- perf stat: arguments ------------------------------------------- */

/* The CPUs or threads perf stat attaches each event to. */
struct perfmon_shell_target {
    char desc[48];
    const char *word;                   /* as the user named it, or NULL */
    unsigned int nr;
    unsigned int cpus[CPU_MAX];         /* CPU targets */
    struct thread *thread;              /* a thread target, referenced */
    struct perf_work *work;             /* the workload's threads, or NULL */
};

/* What perf stat was asked to do. */
struct perfmon_shell_stat {
    struct perfmon_shell_event events[PERFMON_SHELL_MAX_EVENTS];
    unsigned int nr_events;
    struct perfmon_shell_target target;
    const char *work_kind;              /* NULL: no workload */
    const char *work_value;
    uint64_t ms;                        /* 0: until the workload ends */
    uint64_t interval_ms;               /* -I, or 0 */
    unsigned int nr_runs;               /* -r */
    char sep;                           /* -x, or '\0' */
    bool grouped;                       /* -g */
    bool verbose;                       /* -v */
    bool threads;                       /* thread targets, not CPUs */
    uint64_t elapsed[PERFMON_SHELL_MAX_RUNS];   /* ns of each run */
};

/* The options that take a value, and what it is. */
static const struct perfmon_shell_option {
    char letter;
    const char *value;                  /* NULL: a flag */
} perfmon_shell_options[] = {
    { 'e', "EVENTS, as tick,cs (see perf list)" },
    { 'a', NULL },
    { 'C', "CPUS, as 0,2-3" },
    { 't', "TID, a thread id as perf script prints it" },
    { 'I', "MS between prints, 10 to 60000" },
    { 'r', "N runs, 1 to 100" },
    { 'x', "one separator character, as -x," },
    { 'g', NULL },
    { 'v', NULL },
};

#define PERFMON_SHELL_OPTIONS "-e EVENTS, -a, -C CPUS, -t TID, -I MS, " \
                              "-r N, -x SEP, -g, -v"

void
perfmon_shell_stat_usage(void)
{
    printf("usage: perf stat [options] [cpu N | thread NAME | all] "
           "[EVENTS] [MS]\n"
           "                 [" PERF_WORK_USAGE "]\n"
           "  -e EVENTS  events, as tick,cs (instead of the EVENTS word; "
           "repeatable)\n"
           "  -a         every online CPU (all)\n"
           "  -C CPUS    these CPUs, as 0,2-3 (cpu N)\n"
           "  -t TID     the thread of that id, as perf script prints it\n"
           "  -I MS      print the counts every MS ms (10 to %llu)\n"
           "  -r N       run N times (1 to %u): the mean, +- its relative "
           "deviation\n"
           "  -x SEP     one line per event, fields split by SEP, as -x,\n"
           "  -g         the events as one group per target\n"
           "  -v         counts with times enabled and running, in ns\n"
           "  EVENTS: at most %u, names as perf list prints them, default "
           "task-clock,\n"
           "  context-switches, cpu-migrations, cycles, instructions, "
           "branches, branch-misses;\n"
           "  MS 1 to %llu; with a workload and no target, count the "
           "workload's threads;\n"
           "  Ctrl-C stops early\n",
           PERFMON_SHELL_MAX_MS, PERFMON_SHELL_MAX_RUNS,
           PERFMON_SHELL_MAX_EVENTS, PERFMON_SHELL_MAX_MS);
    perf_work_usage();
}

/* Whether word is a number (a duration, where an event list may be). */
static bool
perfmon_shell_is_number(const char *word)
{
    unsigned long long v;

    return string_parse_u64(word, &v) == 0;
}

/* Parse a number from min to max; return 0 or EINVAL after a message. */
static int
perfmon_shell_parse_range(const char *what, const char *word, uint64_t min,
                          uint64_t max, uint64_t *valuep)
{
    unsigned long long v;

    if (string_parse_u64(word, &v) != 0 || v < min || v > max) {
        printf("perf stat: bad %s '%s': %llu to %llu\n", what, word,
               (unsigned long long)min, (unsigned long long)max);
        return EINVAL;
    }

    *valuep = v;
    return 0;
}

/* Add the events of "a,b,c". Return 0, or EINVAL after a message. */
static int
perfmon_shell_add_events(struct perfmon_shell_stat *stat, const char *list)
{
    for (const char *p = list; *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t len = (comma == NULL) ? strlen(p) : (size_t)(comma - p);
        struct perfmon_shell_event *ev = &stat->events[stat->nr_events];

        if (stat->nr_events == PERFMON_SHELL_MAX_EVENTS) {
            printf("perf stat: at most %u events\n",
                   PERFMON_SHELL_MAX_EVENTS);
            return EINVAL;
        }

        if (len == 0) {
            printf("perf stat: empty name in event list '%s'\n", list);
            return EINVAL;
        }

        if (len >= sizeof(ev->name)) {
            printf("perf: event name '%.*s' is too long (at most %u "
                   "characters)\n", (int)len, p,
                   (unsigned int)sizeof(ev->name) - 1);
            return EINVAL;
        }

        memcpy(ev->name, p, len);
        ev->name[len] = '\0';

        if (perf_util_parse_event(ev->name, &ev->ev) != 0) {
            return EINVAL;
        }

        stat->nr_events++;
        p += len + (comma != NULL);
    }

    return 0;
}

/* Refuse a second target. Return 0 or EINVAL after a message. */
static int
perfmon_shell_target_once(struct perfmon_shell_target *target,
                          const char *word)
{
    if (target->word != NULL) {
        printf("perf stat: two targets ('%s' and '%s'): name one\n",
               target->word, word);
        return EINVAL;
    }

    target->word = word;
    return 0;
}

static int
perfmon_shell_target_all(struct perfmon_shell_target *target,
                         const char *word)
{
    if (perfmon_shell_target_once(target, word) != 0) {
        return EINVAL;
    }

    target->nr = perf_util_online_cpus(target->cpus);
    snprintf(target->desc, sizeof(target->desc), "all %u CPU%s",
             target->nr, (target->nr == 1) ? "" : "s");
    return 0;
}

static int
perfmon_shell_target_cpus(struct perfmon_shell_target *target,
                          const char *word, const char *list)
{
    if (perfmon_shell_target_once(target, word) != 0
        || perf_util_parse_cpus(list, target->cpus, &target->nr) != 0) {
        return EINVAL;
    }

    snprintf(target->desc, sizeof(target->desc), "%s %s",
             (target->nr == 1) ? "cpu" : "CPUs", list);
    return 0;
}

static int
perfmon_shell_target_thread(struct perfmon_shell_target *target,
                            const char *word, struct thread *thread)
{
    if (perfmon_shell_target_once(target, word) != 0) {
        thread_unref(thread);
        return EINVAL;
    }

    target->thread = thread;
    target->nr = 1;
    snprintf(target->desc, sizeof(target->desc), "thread %s",
             thread_name(thread));
    return 0;
}

/* Apply option word (argv[*ip]), taking its value from the next word. */
static int
perfmon_shell_parse_option(struct perfmon_shell_stat *stat, int *ip,
                           int end, char **argv)
{
    const struct perfmon_shell_option *opt = NULL;
    char *word = argv[*ip];
    struct thread *thread;
    char *value = NULL;
    uint64_t v;

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_shell_options); i++) {
        if (word[1] == perfmon_shell_options[i].letter) {
            opt = &perfmon_shell_options[i];
        }
    }

    if (opt == NULL || (opt->value == NULL && word[2] != '\0')) {
        printf("perf stat: unknown option '%s' (%s)\n", word,
               PERFMON_SHELL_OPTIONS);
        return EINVAL;
    }

    if (opt->value != NULL) {
        if (word[2] != '\0') {
            value = word + 2;           /* -x, -C0 */
        } else if (*ip + 1 < end) {
            value = argv[++*ip];
        } else {
            printf("perf stat: -%c needs a value: %s\n", opt->letter,
                   opt->value);
            return EINVAL;
        }
    }

    switch (opt->letter) {
    case 'e':
        return perfmon_shell_add_events(stat, value);
    case 'a':
        return perfmon_shell_target_all(&stat->target, word);
    case 'C':
        return perfmon_shell_target_cpus(&stat->target, word, value);
    case 't':
        if (perf_util_parse_tid(value, &thread) != 0) {
            return EINVAL;
        }

        return perfmon_shell_target_thread(&stat->target, word, thread);
    case 'I':
        return perfmon_shell_parse_range("interval (-I)", value, 10,
                                         PERFMON_SHELL_MAX_MS,
                                         &stat->interval_ms);
    case 'r':
        if (perfmon_shell_parse_range("run count (-r)", value, 1,
                                      PERFMON_SHELL_MAX_RUNS, &v) != 0) {
            return EINVAL;
        }

        stat->nr_runs = (unsigned int)v;
        return 0;
    case 'x':
        if (strlen(value) != 1) {
            printf("perf stat: -x takes %s (got '%s')\n", opt->value, value);
            return EINVAL;
        }

        stat->sep = value[0];
        return 0;
    case 'g':
        stat->grouped = true;
        return 0;
    default:
        stat->verbose = true;
        return 0;
    }
}

/*
 * The words that are not options: [target] [EVENTS] [MS]. Return 0, or
 * EINVAL after a message.
 */
static int
perfmon_shell_parse_words(struct perfmon_shell_stat *stat, int nr_words,
                          char **words, bool have_events)
{
    struct thread *thread;
    int i = 0;

    if (i < nr_words && strcmp(words[i], "all") == 0) {
        if (perfmon_shell_target_all(&stat->target, words[i]) != 0) {
            return EINVAL;
        }

        i++;
    } else if (i < nr_words && (strcmp(words[i], "cpu") == 0
                                || strcmp(words[i], "thread") == 0)) {
        if (i + 1 == nr_words) {
            printf("perf stat: %s needs %s\n", words[i],
                   (words[i][0] == 'c') ? "a CPU number, as cpu 0"
                                        : "a name (see threads)");
            return EINVAL;
        }

        if (words[i][0] == 'c') {
            if (perfmon_shell_target_cpus(&stat->target, "cpu",
                                          words[i + 1]) != 0) {
                return EINVAL;
            }
        } else {
            thread = thread_lookup(words[i + 1]);

            if (thread == NULL) {
                printf("perf: no thread named '%s' (see threads)\n",
                       words[i + 1]);
                return EINVAL;
            }

            if (perfmon_shell_target_thread(&stat->target, "thread",
                                            thread) != 0) {
                return EINVAL;
            }
        }

        i += 2;
    }

    if (i < nr_words && !have_events && !perfmon_shell_is_number(words[i])) {
        if (perfmon_shell_add_events(stat, words[i]) != 0) {
            return EINVAL;
        }

        i++;
    }

    if (i < nr_words) {
        if (!perfmon_shell_is_number(words[i])) {
            printf("perf stat: '%s' is not a duration: MS, 1 to %llu%s\n",
                   words[i], PERFMON_SHELL_MAX_MS,
                   have_events ? " (the events are -e's)" : "");
            return EINVAL;
        }

        if (perfmon_shell_parse_range("duration", words[i], 1,
                                      PERFMON_SHELL_MAX_MS, &stat->ms) != 0) {
            return EINVAL;
        }

        i++;
    }

    if (i < nr_words) {
        printf("perf stat: unexpected '%s' after the duration (a workload "
               "goes after --, as -- spin 100)\n", words[i]);
        return EINVAL;
    }

    return 0;
}

/* Parse argv ("perf", "stat", ...). Return 0 or EINVAL after a message. */
static int
perfmon_shell_parse(struct perfmon_shell_stat *stat, int argc, char **argv)
{
    char *words[PERFMON_SHELL_MAX_EVENTS + 8];
    int nr_words = 0, dashes = argc;
    bool have_events;

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            dashes = i;
            break;
        }
    }

    for (int i = 2; i < dashes; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            if (perfmon_shell_parse_option(stat, &i, dashes, argv) != 0) {
                return EINVAL;
            }
        } else if (nr_words < (int)ARRAY_SIZE(words)) {
            words[nr_words++] = argv[i];
        }
    }

    have_events = (stat->nr_events != 0);

    if (perfmon_shell_parse_words(stat, nr_words, words, have_events) != 0) {
        return EINVAL;
    }

    have_events = (stat->nr_events != 0);

    if (dashes != argc) {
        if (argc - dashes != 3) {
            printf("perf stat: after -- comes one workload: spin MS (1 to "
                   "%llu), pingpong N or calltree N (1 to %llu)\n",
                   PERF_WORK_MAX_MS, PERF_WORK_MAX_ROUNDS);
            return EINVAL;
        }

        stat->work_kind = argv[dashes + 1];
        stat->work_value = argv[dashes + 2];
    }

    if (stat->target.nr == 0 && stat->work_kind == NULL) {
        printf("perf stat: nothing to count on: name a target (cpu N, all, "
               "thread NAME; -C CPUS, -a, -t TID) or a workload (-- spin "
               "MS, -- pingpong N, -- calltree N)\n");
        return EINVAL;
    }

    if (stat->ms == 0 && stat->work_kind == NULL) {
        printf("perf stat: for how long? MS (1 to %llu) after the events, "
               "or a workload after --\n", PERFMON_SHELL_MAX_MS);
        return EINVAL;
    }

    /* A workload without a target: its threads are the targets. */
    stat->threads = (stat->target.thread != NULL
                     || (stat->work_kind != NULL
                         && stat->target.word == NULL));

    if (stat->interval_ms != 0 && stat->nr_runs > 1) {
        printf("perf stat: -I and -r do not go together\n");
        return EINVAL;
    }

    for (size_t i = 0; !have_events
                       && i < ARRAY_SIZE(perfmon_shell_default_events); i++) {
        if (perfmon_shell_add_events(stat, perfmon_shell_default_events[i])
            != 0) {
            return EINVAL;
        }
    }

    return 0;
}

/* ---- perf stat: counting --------------------------------------------- */

/*
 * The time an event's count is scaled to. perfmon's time enabled of a
 * thread event includes the time its thread was off its CPU, which
 * Linux's does not: scaling by it would estimate what the thread would
 * have counted running all along. So thread targets scale by the time
 * the thread ran (running, until multiplexing can hold an event off a
 * counter while its thread runs), CPU targets by time enabled.
 */
static uint64_t
perfmon_shell_row_scale(const struct perfmon_shell_stat *stat,
                        const struct perfmon_shell_row *row)
{
    return stat->threads ? row->running : row->enabled;
}

/* The estimate a row prints: a clock's time, or the scaled count. */
static uint64_t
perfmon_shell_row_value(const struct perfmon_shell_stat *stat,
                        const struct perfmon_shell_event *ev,
                        const struct perfmon_shell_row *row)
{
    uint64_t scale = perfmon_shell_row_scale(stat, row);

    if (ev->ev.clock) {
        return scale;
    }

    return perfmon_scale(row->count, scale, row->running);
}

/* An event's counts and times summed over its targets, as Linux does. */
static void
perfmon_shell_event_read(struct perfmon_shell_event *ev,
                         struct perfmon_shell_row *row)
{
    struct perfmon_value value;

    *row = (struct perfmon_shell_row){ 0 };

    for (unsigned int i = 0; i < ev->nr_attached; i++) {
        if (perfmon_event_read_value(&ev->events[i], &value) == 0) {
            row->count += value.count;
            row->enabled += value.time_enabled;
            row->running += value.time_running;
        }
    }
}

static int
perfmon_shell_attach_one(struct perfmon_shell_event *ev,
                         const struct perfmon_shell_target *target,
                         unsigned int i)
{
    struct perfmon_event *event = &ev->events[i];
    int error;

    error = perfmon_event_init(event, ev->ev.id, ev->ev.flags);

    if (error) {
        return error;
    }

    if (target->work != NULL) {
        return perfmon_event_attach(event, target->work->threads[i]);
    }

    if (target->thread != NULL) {
        return perfmon_event_attach(event, target->thread);
    }

    return perfmon_event_attach_cpu(event, target->cpus[i]);
}

/* Attach ev to every target, or to none with ev->error set. */
static void
perfmon_shell_attach(struct perfmon_shell_event *ev,
                     const struct perfmon_shell_target *target)
{
    for (unsigned int i = 0; i < target->nr; i++) {
        int error = perfmon_shell_attach_one(ev, target, i);

        if (error) {
            while (ev->nr_attached > 0) {
                perfmon_event_detach(&ev->events[--ev->nr_attached]);
            }

            ev->error = error;
            return;
        }

        ev->nr_attached++;
    }

    ev->attached = true;
}

/* Whether an event goes into perf stat -g's group: the clocks do not. */
static bool
perfmon_shell_in_group(const struct perfmon_shell_event *ev)
{
    return !ev->ev.clock;
}

/*
 * Attach the events but the clocks as one group per target (every event
 * counts, or none does, with every member's error set). groups: one per
 * target.
 */
static int
perfmon_shell_attach_groups(struct perfmon_shell_stat *stat,
                            struct perfmon_group *groups)
{
    const struct perfmon_shell_target *target = &stat->target;
    unsigned int j;
    int error = 0;

    for (j = 0; error == 0 && j < target->nr; j++) {
        perfmon_group_init(&groups[j]);

        for (unsigned int i = 0; error == 0 && i < stat->nr_events; i++) {
            struct perfmon_shell_event *ev = &stat->events[i];

            if (!perfmon_shell_in_group(ev)) {
                continue;
            }

            error = perfmon_event_init(&ev->events[j], ev->ev.id,
                                       ev->ev.flags);

            if (error == 0) {
                error = perfmon_group_add(&groups[j], &ev->events[j]);
            }
        }

        if (error) {
            break;
        }

        if (target->work != NULL) {
            error = perfmon_group_attach(&groups[j], target->work->threads[j]);
        } else if (target->thread != NULL) {
            error = perfmon_group_attach(&groups[j], target->thread);
        } else {
            error = perfmon_group_attach_cpu(&groups[j], target->cpus[j]);
        }
    }

    if (error) {
        while (j-- > 0) {
            perfmon_group_detach(&groups[j]);
        }
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        if (perfmon_shell_in_group(&stat->events[i])) {
            stat->events[i].error = error;
            stat->events[i].nr_attached = error ? 0 : target->nr;
        }
    }

    return error;
}

/* Why perf stat -g's group cannot count, in one line. */
static void
perfmon_shell_group_error(const struct perfmon_shell_stat *stat, int error)
{
    const struct perfmon_shell_event *events = stat->events;
    const struct perfmon_dev *dev;
    unsigned int nr_distinct = 0;
    bool sw = false;

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        unsigned int j;

        if (!perfmon_shell_in_group(&events[i])) {
            continue;
        }

        sw = (events[i].ev.flags & PERFMON_EF_SW) != 0;

        for (j = 0; j < i; j++) {
            if (perfmon_shell_in_group(&events[j])
                && events[j].ev.id == events[i].ev.id
                && events[j].ev.flags == events[i].ev.flags) {
                break;
            }
        }

        nr_distinct += (j == i);
    }

    dev = perfmon_dev_get(sw);

    if (error == E2BIG && dev != NULL) {
        printf("perf stat: the group cannot count: %u distinct events, %u "
               "counters (E2BIG)\n", nr_distinct, dev->nr_counters);
    } else {
        printf("perf stat: the group cannot count: %s (%s)%s\n",
               errno_name(error), errno_str(error),
               (error == EINVAL) ? "; hardware and software events cannot "
                                   "share a group" : "");
    }
}

/* What one run of perf stat holds while it counts. */
struct perfmon_shell_run {
    struct perf_work work;
    struct perfmon_group *groups;       /* -g: one per target */
    bool groups_attached;
    uint64_t start_tsc;
    uint64_t last_ns;                   /* -I: time of the last print */
    bool interrupted;
};

static uint64_t
perfmon_shell_ns_since(uint64_t start_tsc)
{
    return perf_num_muldiv(cpu_get_tsc() - start_tsc, 1000000,
                                cpu_get_freq()) * 1000;
}

static void perfmon_shell_print(const struct perfmon_shell_stat *stat,
                                const struct perfmon_shell_row *rows,
                                const uint64_t *values, const uint64_t *vars,
                                uint64_t elapsed_ns, uint64_t time_ns);

/* -I: print what was counted since the last print. */
static void
perfmon_shell_print_interval(struct perfmon_shell_stat *stat,
                             struct perfmon_shell_run *run)
{
    struct perfmon_shell_row rows[PERFMON_SHELL_MAX_EVENTS];
    uint64_t values[PERFMON_SHELL_MAX_EVENTS];
    uint64_t now = perfmon_shell_ns_since(run->start_tsc);

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perfmon_shell_event *ev = &stat->events[i];
        struct perfmon_shell_row row;

        perfmon_shell_event_read(ev, &row);
        rows[i] = (struct perfmon_shell_row){
            .count = row.count - ev->last.count,
            .enabled = row.enabled - ev->last.enabled,
            .running = row.running - ev->last.running,
        };
        ev->last = row;
        values[i] = perfmon_shell_row_value(stat, ev, &rows[i]);
    }

    perfmon_shell_print(stat, rows, values, NULL, now - run->last_ns, now);
    run->last_ns = now;
}

/* Wait until the run ends: time, workload, Ctrl-C; print -I's counts. */
static void
perfmon_shell_wait(struct perfmon_shell_stat *stat,
                   struct perfmon_shell_run *run)
{
    uint64_t deadline = clock_get_time() + clock_ticks_from_ms(stat->ms);
    uint64_t next = stat->interval_ms * 1000000;

    for (;;) {
        if (stat->work_kind != NULL
            && perf_work_done(&run->work)) {
            break;
        }

        if (stat->ms != 0 && clock_get_time() >= deadline) {
            break;
        }

        if (perf_util_interrupted()) {
            run->interrupted = true;
            break;
        }

        if (next != 0 && perfmon_shell_ns_since(run->start_tsc) >= next) {
            perfmon_shell_print_interval(stat, run);
            next += stat->interval_ms * 1000000;
        }

        thread_delay(1);
    }

    perf_work_stop(&run->work);
}

static void
perfmon_shell_detach(struct perfmon_shell_stat *stat,
                     struct perfmon_shell_run *run)
{
    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perfmon_shell_event *ev = &stat->events[i];

        /* Detached events keep their final values for the read after. */
        for (unsigned int j = 0; ev->attached && j < ev->nr_attached; j++) {
            perfmon_event_detach(&ev->events[j]);
        }

        ev->attached = false;
    }

    for (unsigned int j = 0; run->groups_attached && j < stat->target.nr;
         j++) {
        perfmon_group_detach(&run->groups[j]);
    }

    run->groups_attached = false;
}

/*
 * One run: start the workload, attach, count, detach; add each event's
 * values to its sum and to values[nr_run]. Return 0, or an error after a
 * message (nothing could be counted).
 */
static int
perfmon_shell_run_once(struct perfmon_shell_stat *stat, unsigned int nr_run,
                       bool *interruptedp)
{
    struct perfmon_shell_target *target = &stat->target;
    struct perfmon_shell_run run = { .work = { .go = false } };
    unsigned int nr_counted = 0;
    int error = 0;

    if (stat->work_kind != NULL) {
        error = perf_work_start(&run.work, stat->work_kind,
                                stat->work_value);

        if (error == EINVAL) {
            printf("perf stat: the workload is spin MS (1 to %llu), "
                   "pingpong N or calltree N (1 to %llu), not '%s %s'\n",
                   PERF_WORK_MAX_MS, PERF_WORK_MAX_ROUNDS, stat->work_kind,
                   stat->work_value);
            goto join;
        } else if (error) {
            perf_util_error("cannot start the workload", error);
            goto join;
        }

        if (target->word == NULL) {
            target->work = &run.work;
            target->nr = run.work.nr_threads;
            snprintf(target->desc, sizeof(target->desc), "%s %s",
                     stat->work_kind, stat->work_value);
        }
    }

    /*
     * The time elapsed spans the attaches and the detaches, as the CPU
     * events' times do: a clock never shows more CPUs than there are.
     */
    run.start_tsc = cpu_get_tsc();

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perfmon_shell_event *ev = &stat->events[i];

        ev->error = 0;
        ev->nr_attached = 0;
        ev->attached = false;
        ev->last = (struct perfmon_shell_row){ 0 };
        ev->events = kmem_zalloc(target->nr * sizeof(ev->events[0]));

        if (ev->events == NULL) {
            error = ENOMEM;
        }
    }

    if (stat->grouped && error == 0) {
        run.groups = kmem_zalloc(target->nr * sizeof(run.groups[0]));
        error = (run.groups == NULL)
                ? ENOMEM : perfmon_shell_attach_groups(stat, run.groups);

        if (error) {
            perfmon_shell_group_error(stat, error);
        }

        run.groups_attached = (error == 0);
    }

    if (error == ENOMEM) {
        perf_util_error("cannot count", error);
        goto free;
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perfmon_shell_event *ev = &stat->events[i];

        if (!stat->grouped || !perfmon_shell_in_group(ev)) {
            perfmon_shell_attach(ev, target);
        }

        nr_counted += (ev->error == 0);
    }

    if (nr_counted == 0) {
        for (unsigned int i = 0; !stat->grouped && i < stat->nr_events; i++) {
            perf_util_error(stat->events[i].name, stat->events[i].error);
        }

        printf("perf: no event can be counted\n");
        error = ENODEV;
        goto free;
    }

    error = 0;
    perf_work_go(&run.work);
    perfmon_shell_wait(stat, &run);
    perfmon_shell_detach(stat, &run);
    stat->elapsed[nr_run] = perfmon_shell_ns_since(run.start_tsc);

    if (stat->interval_ms != 0
        && stat->elapsed[nr_run] > run.last_ns + 1000000) {
        perfmon_shell_print_interval(stat, &run);
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perfmon_shell_event *ev = &stat->events[i];
        struct perfmon_shell_row row;

        perfmon_shell_event_read(ev, &row);
        ev->sum.count += row.count;
        ev->sum.enabled += row.enabled;
        ev->sum.running += row.running;
        ev->values[nr_run] = perfmon_shell_row_value(stat, ev, &row);
    }

    *interruptedp = run.interrupted;

free:
    perfmon_shell_detach(stat, &run);
    kmem_free(run.groups);

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        kmem_free(stat->events[i].events);
        stat->events[i].events = NULL;
    }

join:
    perf_work_stop(&run.work);
    perf_work_join(&run.work);

    if (target->work != NULL) {
        target->work = NULL;
        target->nr = 0;
    }

    return error;
}

/* ---- perf stat: output ----------------------------------------------- */

/* The metric of a row: its value and unit ("" when there is none). */
struct perfmon_shell_metric {
    char value[24];
    const char *unit;
};

/* The value of the first counted event that matches, or 0. */
static uint64_t
perfmon_shell_find(const struct perfmon_shell_stat *stat,
                   const struct perfmon_shell_row *rows,
                   const uint64_t *values, bool clock, uint64_t id)
{
    for (unsigned int i = 0; i < stat->nr_events; i++) {
        const struct perfmon_shell_event *ev = &stat->events[i];
        bool generic = !(ev->ev.flags & (PERFMON_EF_RAW | PERFMON_EF_SW));

        if (!ev->error && rows[i].running != 0
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
perfmon_shell_metric(const struct perfmon_shell_stat *stat,
                     const struct perfmon_shell_row *rows,
                     const uint64_t *values, unsigned int i,
                     uint64_t elapsed_ns, struct perfmon_shell_metric *m)
{
    const struct perfmon_shell_event *ev = &stat->events[i];
    bool generic = !(ev->ev.flags & (PERFMON_EF_RAW | PERFMON_EF_SW));
    uint64_t task_ns, cycles, v = values[i];

    m->unit = "";
    task_ns = perfmon_shell_find(stat, rows, values, true, 0);

    if (task_ns == 0) {
        task_ns = perfmon_shell_row_scale(stat, &rows[i]);
    }

    cycles = perfmon_shell_find(stat, rows, values, false, PERFMON_EV_CYCLE);

    if (ev->ev.clock) {
        if (elapsed_ns != 0) {
            perf_num_format_fixed(m->value, sizeof(m->value),
                                       perf_num_muldiv(v, 1000,
                                                            elapsed_ns), 3);
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
perfmon_shell_format_percent(char *buf, size_t size, uint64_t num,
                             uint64_t den)
{
    perf_num_format_fixed(buf, size,
                               (den == 0) ? 0
                               : perf_num_muldiv(num, 10000, den), 2);
}

/* Drop trailing blanks (the padding of a line's last column). */
static void
perfmon_shell_trim(char *line)
{
    size_t len = strlen(line);

    while (len > 0 && line[len - 1] == ' ') {
        line[--len] = '\0';
    }
}

/* One event's line, Linux's layout or -x's fields. */
static void
perfmon_shell_print_row(const struct perfmon_shell_stat *stat,
                        const struct perfmon_shell_row *rows,
                        const uint64_t *values, const uint64_t *vars,
                        unsigned int i, uint64_t elapsed_ns,
                        const char *prefix)
{
    const struct perfmon_shell_event *ev = &stat->events[i];
    const struct perfmon_shell_row *row = &rows[i];
    struct perfmon_shell_metric m = { .unit = "" };
    char count[32], var[16] = "", pct[16] = "", line[192];
    uint64_t scale = perfmon_shell_row_scale(stat, row);
    const char *unit = ev->ev.clock ? "msec" : "";
    bool csv = (stat->sep != '\0');
    char sep = stat->sep;

    if (ev->error) {
        strlcpy(count, "<not supported>", sizeof(count));
    } else if (row->running == 0) {
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

        perfmon_shell_metric(stat, rows, values, i, elapsed_ns, &m);
        perfmon_shell_format_percent(pct, sizeof(pct), row->running, scale);
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
               (unsigned long long)row->running, sep,
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

    if (vars != NULL && !ev->error && row->running != 0) {
        size_t len = strlen(line);

        snprintf(line + len, sizeof(line) - len, "  ( +- %5s%% )", var);
    }

    /* The share an event ran only when it was multiplexed. */
    if (!ev->error && row->running != 0 && row->running != scale) {
        size_t len = strlen(line);

        snprintf(line + len, sizeof(line) - len, "  (%s%%)", pct);
    }

    if (ev->error && stat->verbose) {
        size_t len = strlen(line);

        snprintf(line + len, sizeof(line) - len, " # %s",
                 errno_str(ev->error));
    }

    perfmon_shell_trim(line);
    printf("%s\n", line);
}

/* Every event's line; time_ns: -I's time stamp, or ~0 for none. */
static void
perfmon_shell_print(const struct perfmon_shell_stat *stat,
                    const struct perfmon_shell_row *rows,
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
        perfmon_shell_print_row(stat, rows, values, vars, i, elapsed_ns,
                                prefix);
    }
}

/* The summary after the runs: the means, and the time elapsed. */
static void
perfmon_shell_print_summary(const struct perfmon_shell_stat *stat,
                            unsigned int nr_runs)
{
    struct perfmon_shell_row rows[PERFMON_SHELL_MAX_EVENTS];
    uint64_t values[PERFMON_SHELL_MAX_EVENTS], vars[PERFMON_SHELL_MAX_EVENTS];
    uint64_t elapsed, elapsed_var;
    bool csv = (stat->sep != '\0');

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        const struct perfmon_shell_event *ev = &stat->events[i];

        rows[i] = ev->sum;
        values[i] = perf_num_mean(ev->values, nr_runs, &vars[i]);
    }

    elapsed = perf_num_mean(stat->elapsed, nr_runs, &elapsed_var);

    for (unsigned int i = 0; stat->verbose && i < stat->nr_events; i++) {
        const struct perfmon_shell_event *ev = &stat->events[i];
        /* A clock's count is its time, not its carrier's count. */
        uint64_t count = ev->ev.clock ? perfmon_shell_row_scale(stat,
                                                                &ev->sum)
                                      : ev->sum.count;

        if (ev->error == 0) {
            printf("%s: %llu %llu %llu\n", ev->name,
                   (unsigned long long)count,
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

    perfmon_shell_print(stat, rows, values, (nr_runs > 1) ? vars : NULL,
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

void
perfmon_shell_stat(int argc, char **argv)
{
    struct perfmon_shell_stat *stat;
    unsigned int nr_runs = 0;
    bool interrupted = false;

    stat = kmem_zalloc(sizeof(*stat));

    if (stat == NULL) {
        perf_util_error("cannot count", ENOMEM);
        return;
    }

    stat->nr_runs = 1;

    if (perfmon_shell_parse(stat, argc, argv) != 0) {
        goto out;
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        stat->events[i].values = kmem_zalloc(stat->nr_runs
                                             * sizeof(uint64_t));

        if (stat->events[i].values == NULL) {
            perf_util_error("cannot count", ENOMEM);
            goto out;
        }
    }

    if (stat->interval_ms != 0 && stat->sep == '\0') {
        printf("#           time             counts unit events\n");
    }

    while (nr_runs < stat->nr_runs && !interrupted) {
        if (perfmon_shell_run_once(stat, nr_runs, &interrupted) != 0) {
            break;
        }

        nr_runs++;
    }

    if (interrupted) {
        printf("^C\n");
    }

    if (nr_runs != 0 && stat->interval_ms == 0) {
        perfmon_shell_print_summary(stat, nr_runs);
    }

out:
    for (unsigned int i = 0; i < stat->nr_events; i++) {
        kmem_free(stat->events[i].values);
    }

    if (stat->target.thread != NULL) {
        thread_unref(stat->target.thread);
    }

    kmem_free(stat);
}
