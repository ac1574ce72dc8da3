/*
 * perf stat (kern/perf/perf_stat.h), its command and its arguments:
 *
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
 * (count * enabled / running, perfmon_scale), thread targets as CPU
 * targets: a thread event's time enabled is its thread's run time. An
 * event that cannot be counted prints <not supported> and the others
 * still count (with -g, none counts); one that never ran prints <not
 * counted>. Ctrl-C ends the
 * count early and prints what was counted. Event names are perf_util's
 * (kern/perf/perf_util.c).
 *
 * task-clock and cpu-clock are no device's events: each is counted by a
 * software event (its carrier) attached as the others are (but never in
 * -g's group), whose time enabled is the clock's count: a thread's run
 * time, a CPU's time attached. Multiplexing does not cut a time enabled,
 * so a clock is never scaled nor marked with a share; its carrier still
 * takes a turn on the software PMU's counters as the other software
 * events do.
 *
 * This file parses the arguments and runs the runs; counting one run is
 * kern/perf/perf_stat_count.c's, printing kern/perf/perf_stat_print.c's.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/macros.h>
#include <kern/perf/perf_stat.h>
#include <kern/perf/perf_stat_i.h>
#include <kern/perf/perf_util.h>
#include <kern/perf/perf_work.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>

/* Linux perf stat's default events, when none is named. */
static const char *const perf_stat_default_events[] = {
    "task-clock", "context-switches", "cpu-migrations", "cycles",
    "instructions", "branches", "branch-misses",
};

/* The options that take a value, and what it is. */
static const struct perf_stat_option {
    char letter;
    const char *value;                  /* NULL: a flag */
} perf_stat_options[] = {
    { 'e', "EVENTS, as tick,cs (see perf list)" },
    { 'a', NULL },
    { 'C', "CPUS, as 0,2-3" },
    { 't', "TID, a thread id as perf script prints it" },
    { 'I', "MS between prints, 10 to 60000" },
    { 'r', "N runs, 1 to 100" },
    { 'x', "one separator character, as -x," },
    { 'g', NULL },
    { 'v', NULL },
    { 'i', NULL },
};

#define PERF_STAT_OPTIONS "-e EVENTS, -a, -C CPUS, -t TID, -I MS, " \
                              "-r N, -x SEP, -g, -v, -i, --per-thread"

void
perf_stat_usage(void)
{
    printf("usage: perf stat [options] [cpu N | thread NAME | all] "
           "[EVENTS] [MS]\n"
           "                 [" PERF_WORK_USAGE_FANOUT "]\n"
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
           "  -i, --no-inherit  a workload's first threads only, not the "
           "threads they create\n"
           "  --per-thread  a workload's counts thread by thread too\n"
           "  EVENTS: at most %u, names as perf list prints them, default "
           "task-clock,\n"
           "  context-switches, cpu-migrations, cycles, instructions, "
           "branches, branch-misses;\n"
           "  MS 1 to %llu; with a workload and no target, count the "
           "workload's threads;\n"
           "  Ctrl-C stops early\n",
           PERF_STAT_MAX_MS, PERF_STAT_MAX_RUNS,
           PERF_STAT_MAX_EVENTS, PERF_STAT_MAX_MS);
    perf_work_usage(true);
}

/* Whether word is a number (a duration, where an event list may be). */
static bool
perf_stat_is_number(const char *word)
{
    unsigned long long v;

    return string_parse_u64(word, &v) == 0;
}

/* Parse a number from min to max; return 0 or EINVAL after a message. */
static int
perf_stat_parse_range(const char *what, const char *word, uint64_t min,
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
perf_stat_add_events(struct perf_stat *stat, const char *list)
{
    for (const char *p = list; *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t len = (comma == NULL) ? strlen(p) : (size_t)(comma - p);
        struct perf_stat_event *ev = &stat->events[stat->nr_events];

        if (stat->nr_events == PERF_STAT_MAX_EVENTS) {
            printf("perf stat: at most %u events\n",
                   PERF_STAT_MAX_EVENTS);
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
perf_stat_target_once(struct perf_stat_target *target,
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
perf_stat_target_all(struct perf_stat_target *target,
                     const char *word)
{
    if (perf_stat_target_once(target, word) != 0) {
        return EINVAL;
    }

    target->nr = perf_util_online_cpus(target->cpus);
    snprintf(target->desc, sizeof(target->desc), "all %u CPU%s",
             target->nr, (target->nr == 1) ? "" : "s");
    return 0;
}

static int
perf_stat_target_cpus(struct perf_stat_target *target,
                      const char *word, const char *list)
{
    if (perf_stat_target_once(target, word) != 0
        || perf_util_parse_cpus(list, target->cpus, &target->nr) != 0) {
        return EINVAL;
    }

    snprintf(target->desc, sizeof(target->desc), "%s %s",
             (target->nr == 1) ? "cpu" : "CPUs", list);
    return 0;
}

static int
perf_stat_target_thread(struct perf_stat_target *target,
                        const char *word, struct thread *thread)
{
    if (perf_stat_target_once(target, word) != 0) {
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
perf_stat_parse_option(struct perf_stat *stat, int *ip,
                       int end, char **argv)
{
    const struct perf_stat_option *opt = NULL;
    char *word = argv[*ip];
    struct thread *thread;
    char *value = NULL;
    uint64_t v;

    for (size_t i = 0; i < ARRAY_SIZE(perf_stat_options); i++) {
        if (word[1] == perf_stat_options[i].letter) {
            opt = &perf_stat_options[i];
        }
    }

    if (opt == NULL || (opt->value == NULL && word[2] != '\0')) {
        printf("perf stat: unknown option '%s' (%s)\n", word,
               PERF_STAT_OPTIONS);
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
        return perf_stat_add_events(stat, value);
    case 'a':
        return perf_stat_target_all(&stat->target, word);
    case 'C':
        return perf_stat_target_cpus(&stat->target, word, value);
    case 't':
        if (perf_util_parse_tid(value, &thread) != 0) {
            return EINVAL;
        }

        return perf_stat_target_thread(&stat->target, word, thread);
    case 'I':
        return perf_stat_parse_range("interval (-I)", value, 10,
                                     PERF_STAT_MAX_MS,
                                     &stat->interval_ms);
    case 'r':
        if (perf_stat_parse_range("run count (-r)", value, 1,
                                  PERF_STAT_MAX_RUNS, &v) != 0) {
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
    case 'i':
        stat->no_inherit = true;
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
perf_stat_parse_words(struct perf_stat *stat, int nr_words,
                      char **words, bool have_events)
{
    struct thread *thread;
    int i = 0;

    if (i < nr_words && strcmp(words[i], "all") == 0) {
        if (perf_stat_target_all(&stat->target, words[i]) != 0) {
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
            if (perf_stat_target_cpus(&stat->target, "cpu",
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

            if (perf_stat_target_thread(&stat->target, "thread",
                                        thread) != 0) {
                return EINVAL;
            }
        }

        i += 2;
    }

    if (i < nr_words && !have_events && !perf_stat_is_number(words[i])) {
        if (perf_stat_add_events(stat, words[i]) != 0) {
            return EINVAL;
        }

        i++;
    }

    if (i < nr_words) {
        if (!perf_stat_is_number(words[i])) {
            printf("perf stat: '%s' is not a duration: MS, 1 to %llu%s\n",
                   words[i], PERF_STAT_MAX_MS,
                   have_events ? " (the events are -e's)" : "");
            return EINVAL;
        }

        if (perf_stat_parse_range("duration", words[i], 1,
                                  PERF_STAT_MAX_MS, &stat->ms) != 0) {
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
perf_stat_parse(struct perf_stat *stat, int argc, char **argv)
{
    char *words[PERF_STAT_MAX_EVENTS + 8];
    int nr_words = 0, dashes = argc;
    bool have_events;

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            dashes = i;
            break;
        }
    }

    for (int i = 2; i < dashes; i++) {
        /* Linux's long options, the two of them. */
        if (strcmp(argv[i], "--no-inherit") == 0) {
            stat->no_inherit = true;
        } else if (strcmp(argv[i], "--per-thread") == 0) {
            stat->per_thread = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            if (perf_stat_parse_option(stat, &i, dashes, argv) != 0) {
                return EINVAL;
            }
        } else if (nr_words < (int)ARRAY_SIZE(words)) {
            words[nr_words++] = argv[i];
        }
    }

    have_events = (stat->nr_events != 0);

    if (perf_stat_parse_words(stat, nr_words, words, have_events) != 0) {
        return EINVAL;
    }

    have_events = (stat->nr_events != 0);

    if (dashes != argc) {
        if (argc - dashes != 3 && argc - dashes != 4) {
            printf("perf stat: after -- comes one workload: spin MS (1 to "
                   "%llu), pingpong N or calltree N (1 to %llu), fanout N "
                   "DEPTH\n", PERF_WORK_MAX_MS, PERF_WORK_MAX_ROUNDS);
            return EINVAL;
        }

        stat->work_kind = argv[dashes + 1];
        stat->work_value = argv[dashes + 2];
        stat->work_value2 = (argc - dashes == 4) ? argv[dashes + 3] : NULL;
    }

    if (stat->per_thread && stat->work_kind == NULL) {
        printf("perf stat: --per-thread counts a workload's threads: give "
               "one after --\n");
        return EINVAL;
    }

    if (stat->target.nr == 0 && stat->work_kind == NULL) {
        printf("perf stat: nothing to count on: name a target (cpu N, all, "
               "thread NAME; -C CPUS, -a, -t TID) or a workload (-- spin "
               "MS, -- pingpong N, -- calltree N)\n");
        return EINVAL;
    }

    if (stat->ms == 0 && stat->work_kind == NULL) {
        printf("perf stat: for how long? MS (1 to %llu) after the events, "
               "or a workload after --\n", PERF_STAT_MAX_MS);
        return EINVAL;
    }

    if (stat->interval_ms != 0 && stat->nr_runs > 1) {
        printf("perf stat: -I and -r do not go together\n");
        return EINVAL;
    }

    for (size_t i = 0; !have_events
                       && i < ARRAY_SIZE(perf_stat_default_events); i++) {
        if (perf_stat_add_events(stat, perf_stat_default_events[i])
            != 0) {
            return EINVAL;
        }
    }

    return 0;
}

void
perf_stat_cmd(int argc, char **argv)
{
    struct perf_stat *stat;
    unsigned int nr_runs = 0;
    bool interrupted = false;

    stat = kmem_zalloc(sizeof(*stat));

    if (stat == NULL) {
        perf_util_error("cannot count", ENOMEM);
        return;
    }

    stat->nr_runs = 1;

    if (perf_stat_parse(stat, argc, argv) != 0) {
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
        if (perf_stat_count_run(stat, nr_runs, &interrupted) != 0) {
            break;
        }

        nr_runs++;
    }

    if (interrupted) {
        printf("^C\n");
    }

    if (nr_runs != 0 && stat->interval_ms == 0) {
        perf_stat_print_summary(stat, nr_runs);
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
