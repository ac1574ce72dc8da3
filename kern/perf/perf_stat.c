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
 * event's count, time enabled and time running in nanoseconds). An event
 * list may hold one group in Linux's syntax, {a,b} with maybe modifiers
 * for every member after it ({a,b}:k): those events are the group, the
 * others count alone.
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
 * task-clock and cpu-clock are perfmon's clock (PERFMON_EF_CLOCK),
 * attached as the other events are (but never in -g's group, where
 * perfmon takes no clock): its count is a thread's run time, or a CPU's
 * time attached, in nanoseconds. It holds no counter, so it is never
 * multiplexed (its time running is its time enabled: never scaled nor
 * marked with a share) and takes no counter from the other events.
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

/* The options, Linux's long names, and what value they take. */
static const struct perf_stat_option {
    char letter;
    const char *name;                   /* --name, --name=VALUE */
    const char *value;                  /* NULL: a flag */
} perf_stat_options[] = {
    { 'e', "event", "EVENTS, as tick,cs (see perf list)" },
    { 'a', "all-cpus", NULL },
    { 'C', "cpu", "CPUS, as 0,2-3" },
    { 't', "tid", "TID, a thread id as perf script prints it" },
    { 'I', "interval-print", "MS between prints, 10 to 60000" },
    { 'r', "repeat", "N runs, 1 to 100" },
    { 'x', "field-separator", "one separator character, as -x," },
    { 'g', "group", NULL },
    { 'v', "verbose", NULL },
    { 'i', "no-inherit", NULL },
};

#define PERF_STAT_OPTIONS "-e EVENTS, -a, -C CPUS, -t TID, -I MS, " \
                              "-r N, -x SEP, -g, -v, -i, --per-thread, " \
                              "or their long names"

void
perf_stat_usage(void)
{
    printf("usage: perf stat [options] [cpu N | thread NAME | all] "
           "[EVENTS] [MS]\n"
           "                 [" PERF_WORK_USAGE_FANOUT "]\n"
           "  -e EVENTS  events, as tick,cs (instead of the EVENTS word; "
           "repeatable);\n"
           "             a group in braces, as {tick,cs} or {tick,cs}:k\n"
           "  -a         every online CPU (all)\n"
           "  -C CPUS    these CPUs, as 0,2-3 (cpu N)\n"
           "  -t TID     the thread of that id, as perf script prints it\n"
           "  -I MS      print the counts every MS ms (10 to %llu)\n"
           "  -r N       run N times (1 to %u): the mean, +- its relative "
           "deviation\n"
           "  -x SEP     one line per event, fields split by SEP, as -x,\n"
           "  -g         the events as one group per target\n"
           "  -v         counts with times enabled and running, in ns\n"
           "  Linux's long names too, --NAME VALUE or --NAME=VALUE: --event, "
           "--all-cpus,\n  --cpu, --tid, --interval-print, --repeat, "
           "--field-separator, --group, --verbose\n"
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

/* Whether c is among the len characters at p. */
static bool
perf_stat_has(const char *p, char c, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] == c) {
            return true;
        }
    }

    return false;
}

/*
 * Add one event, len characters at name, then mods (a group's modifiers,
 * or NULL) after a colon. Return 0, or EINVAL after a message.
 */
static int
perf_stat_add_event(struct perf_stat *stat, const char *list,
                    const char *name, size_t len, const char *mods,
                    size_t mods_len, bool in_group)
{
    struct perf_stat_event *ev = &stat->events[stat->nr_events];
    size_t full = len + ((mods != NULL) ? mods_len + 1 : 0);
    size_t raw;

    if (stat->nr_events == PERF_STAT_MAX_EVENTS) {
        printf("perf stat: at most %u events\n", PERF_STAT_MAX_EVENTS);
        return EINVAL;
    }

    if (len == 0) {
        printf("perf stat: empty name in event list '%s'\n", list);
        return EINVAL;
    }

    /* raw:0xCODE: the first colon belongs to the name. */
    raw = (len >= 4 && strncmp(name, "raw:", 4) == 0) ? 4 : 0;

    if (mods != NULL && perf_stat_has(name + raw, ':', len - raw)) {
        printf("perf stat: '%.*s' has modifiers of its own in a group "
               "with modifiers, in '%s': give them to the group or to each "
               "member\n", (int)len, name, list);
        return EINVAL;
    }

    if (full >= sizeof(ev->name)) {
        printf("perf: event name '%.*s%s%.*s' is too long (at most %u "
               "characters)\n", (int)len, name, (mods != NULL) ? ":" : "",
               (int)mods_len, (mods != NULL) ? mods : "",
               (unsigned int)sizeof(ev->name) - 1);
        return EINVAL;
    }

    snprintf(ev->name, sizeof(ev->name), "%.*s%s%.*s", (int)len, name,
             (mods != NULL) ? ":" : "", (int)mods_len,
             (mods != NULL) ? mods : "");

    if (perf_util_parse_event(ev->name, &ev->ev) != 0) {
        return EINVAL;
    }

    ev->in_group = in_group;
    stat->nr_events++;
    return 0;
}

/* The length of the list item at p: up to a comma or the end. */
static size_t
perf_stat_item_len(const char *p)
{
    const char *comma = strchr(p, ',');

    return (comma == NULL) ? strlen(p) : (size_t)(comma - p);
}

/*
 * Add the group at *pp, "{a,b}" with maybe ":MODS" after it, advancing
 * *pp past it. Return 0, or EINVAL after a message.
 */
static int
perf_stat_add_group(struct perf_stat *stat, const char *list,
                    const char **pp)
{
    const char *open = *pp, *close = strchr(open, '}');
    const char *mods = NULL;
    size_t mods_len = 0;

    if (stat->braces) {
        printf("perf stat: one event group at most ('%s' has a second)\n",
               list);
        return EINVAL;
    }

    if (close == NULL) {
        printf("perf stat: '{' without '}' in event list '%s'\n", list);
        return EINVAL;
    }

    if (perf_stat_has(open + 1, '{', (size_t)(close - open - 1))) {
        printf("perf stat: groups do not nest, in '%s'\n", list);
        return EINVAL;
    }

    if (close == open + 1) {
        printf("perf stat: empty group '{}' in event list '%s'\n", list);
        return EINVAL;
    }

    if (close[1] == ':') {
        mods = close + 2;
        mods_len = perf_stat_item_len(mods);

        if (mods_len == 0) {
            printf("perf: '%.*s:': no modifier after ':' (:k kernel, :u "
                   "user, :ku both; or no colon)\n",
                   (int)(close + 1 - open), open);
            return EINVAL;
        }
    } else if (close[1] != ',' && close[1] != '\0') {
        printf("perf stat: unexpected '%c' after the group in '%s' (a "
               "comma, or modifiers after a colon)\n", close[1], list);
        return EINVAL;
    }

    for (const char *p = open + 1; p <= close;) {
        size_t len = 0;

        while (p + len < close && p[len] != ',') {
            len++;
        }

        if (perf_stat_add_event(stat, list, p, len, mods, mods_len,
                                true) != 0) {
            return EINVAL;
        }

        p += len + 1;
    }

    stat->braces = true;
    *pp = (mods != NULL) ? mods + mods_len : close + 1;
    return 0;
}

/*
 * Add the events of "a,b,c", where one group may be "{a,b}" with its
 * modifiers after it, "{a,b}:k", as Linux spells groups. Return 0, or
 * EINVAL after a message.
 */
static int
perf_stat_add_events(struct perf_stat *stat, const char *list)
{
    for (const char *p = list;;) {
        if (*p == '{') {
            if (perf_stat_add_group(stat, list, &p) != 0) {
                return EINVAL;
            }
        } else {
            size_t len = perf_stat_item_len(p);

            if (perf_stat_has(p, '}', len)) {
                printf("perf stat: '}' without '{' in event list '%s'\n",
                       list);
                return EINVAL;
            }

            if (perf_stat_add_event(stat, list, p, len, NULL, 0,
                                    false) != 0) {
                return EINVAL;
            }

            p += len;
        }

        if (*p == '\0') {
            return 0;
        }

        p++;            /* the comma */
    }
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

    const char *name = word + 2, *eq = strchr(word, '=');
    size_t len = (eq == NULL) ? strlen(name) : (size_t)(eq - name);
    bool is_long = (word[1] == '-');
    char *inline_value;

    for (size_t i = 0; i < ARRAY_SIZE(perf_stat_options); i++) {
        const struct perf_stat_option *o = &perf_stat_options[i];

        if (is_long ? (strlen(o->name) == len
                       && strncmp(name, o->name, len) == 0)
                    : word[1] == o->letter) {
            opt = o;
        }
    }

    /* -x, -C0 take their value in the word, --event=tick after '='. */
    inline_value = is_long ? ((eq == NULL) ? NULL : word + (eq - word) + 1)
                           : ((word[2] == '\0') ? NULL : word + 2);

    if (opt == NULL || (!is_long && opt->value == NULL
                        && inline_value != NULL)) {
        printf("perf stat: unknown option '%s' (%s)\n", word,
               PERF_STAT_OPTIONS);
        return EINVAL;
    }

    if (opt->value == NULL && inline_value != NULL) {
        printf("perf stat: --%s takes no value (got '%s')\n", opt->name,
               inline_value);
        return EINVAL;
    }

    if (opt->value != NULL) {
        if (inline_value != NULL && inline_value[0] != '\0') {
            value = inline_value;
        } else if (inline_value == NULL && *ip + 1 < end) {
            value = argv[++*ip];
        } else {
            printf("perf stat: %.*s needs a value: %s\n",
                   (int)(is_long ? len + 2 : 2), word, opt->value);
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
        if (perf_util_refuse_command("perf stat", words[i])) {
            return EINVAL;
        }

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
        /* --per-thread has no short name, so no line in the table. */
        if (strcmp(argv[i], "--per-thread") == 0) {
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

    /* -g: every event in the group, wherever -e named it. */
    for (unsigned int i = 0; stat->grouped && i < stat->nr_events; i++) {
        stat->events[i].in_group = true;
    }

    stat->grouped = stat->grouped || stat->braces;
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
