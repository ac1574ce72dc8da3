/*
 * The shell's sampling profiler (kern/perf/perf_record.h): the command.
 *
 * perf record attaches one sampling event per target (a CPU, each online
 * CPU, a thread, or each thread of a workload) to a session of its own,
 * lets the workload go, then, until the duration or the workload ends,
 * waits on the session and copies every record out of the rings
 * into the buffer of the last recording. The rings are drained while
 * recording, not only at the end, so their size bounds only what arrives
 * between two drains.
 *
 * The last recording (kern/perf/perf_record_i.h, kept by
 * kern/perf/perf_record_last.c) belongs to the shell thread: perf record
 * writes it, perf report, perf annotate and perf script read it through
 * perf_record_last_get, and the shell runs one command at a time.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/clock.h>
#include <kern/cpu.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/macros.h>
#include <kern/perf/perf_record.h>
#include <kern/perf/perf_record_i.h>
#include <kern/perf/perf_util.h>
#include <kern/perf/perf_work.h>
#include <kern/perfmon.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>

#define PERF_RECORD_RING_SIZE       (128U << 10)    /* bytes per CPU */
#define PERF_RECORD_MAX_MS          60000ULL
#define PERF_RECORD_DRAIN_TICKS     5U

/*
 * With neither -c nor -F, nor an event's own /PERIOD: a frequency, as
 * Linux's default -F 4000. A fixed default period suits no event here:
 * emit's rate is anything from a few units (pingpong 200) to millions a
 * second, so any one period left some recordings empty.
 */
#define PERF_RECORD_DEFAULT_FREQ    4000ULL

/* An event perf record was asked to sample. */
struct perf_record_event {
    char name[PERF_RECORD_NAME_SIZE];
    uint64_t id;
    unsigned int flags;
    uint64_t period;                    /* EVENT/PERIOD, or 0 */
};

/* What perf record was asked to do. */
struct perf_record_req {
    char target[PERF_RECORD_TARGET_SIZE];
    unsigned int nr_events;
    struct perf_record_event events[PERF_RECORD_MAX_EVENTS];
    uint64_t period;                    /* -c PERIOD, or 0 */
    uint64_t freq;                      /* -F HZ, or 0 */
    bool freq_default;                  /* freq is the default's */
    uint64_t ms;
    unsigned int nr_targets;
    unsigned int cpus[CPU_MAX];         /* CPU targets */
    struct thread *thread;              /* a thread target, referenced */
    unsigned int nr_threads;            /* thread targets (in threads) */
    struct thread *threads[PERF_WORK_MAX_THREADS];
    struct perf_work work;              /* after "--", or none started */
};

/* In several prints: each fits the console's line buffer. */
void
perf_record_usage(void)
{
    printf("usage: perf record [-g] [-e EVENT[,EVENT]...] [-c PERIOD | "
           "-F HZ]\n"
           "                   [-a | -C CPU | -t TID | cpu N | thread NAME "
           "| all]\n"
           "                   [EVENT[/PERIOD][,...]] [MS] "
           "[" PERF_WORK_USAGE "]\n");
    printf("       perf report [-g] [--no-children] "
           "[--sort symbol,thread,cpu]\n"
           "       perf annotate SYMBOL\n"
           "       perf script [--capture]\n");
    printf("  EVENT default tick; MS 1 to %llu, or until the workload "
           "ends;\n  no target: the workload's threads;\n",
           PERF_RECORD_MAX_MS);
    printf("  PERIOD 1 to 2^62 events a sample; HZ 1 to %u samples a "
           "second (periods\n  set from the event's rate), default %llu "
           "Hz when no PERIOD is given;\n",
           PERFMON_FREQ_MAX, PERF_RECORD_DEFAULT_FREQ);
    printf("  up to %u events, each sample of its own event\n",
           PERF_RECORD_MAX_EVENTS);
    printf("  call chains of %u frames (always: -g and --call-graph fp are "
           "accepted);\n  Ctrl-C stops early\n", PERF_RECORD_NR_FRAMES);
    perf_work_usage(false);
}

/* Parse a period into *periodp. Return 0, or -1 after a message. */
static int
perf_record_parse_period(uint64_t *periodp, const char *word)
{
    unsigned long long period;

    if (string_parse_u64(word, &period) != 0 || period == 0
        || period > PERFMON_PERIOD_MAX) {
        printf("perf: bad period '%s': 1 to 2^62 events per sample\n",
               word);
        return -1;
    }

    *periodp = period;
    return 0;
}

/* Parse -F's frequency into req. Return 0, or -1 after a message. */
static int
perf_record_parse_freq(struct perf_record_req *req, const char *word)
{
    unsigned long long freq;

    if (string_parse_u64(word, &freq) != 0 || freq == 0
        || freq > PERFMON_FREQ_MAX) {
        printf("perf: bad frequency '%s': 1 to %u samples a second\n",
               word, PERFMON_FREQ_MAX);
        return -1;
    }

    req->freq = freq;
    return 0;
}

/*
 * Parse one "event[/period]" of len characters at word into the next
 * event of req. Return 0, or -1 after a message.
 */
static int
perf_record_parse_one(struct perf_record_req *req, const char *word,
                      size_t len)
{
    struct perf_record_event *ev = &req->events[req->nr_events];
    struct perf_util_event uev;
    size_t name_len = 0;
    char period[24];

    while (name_len < len && word[name_len] != '/') {
        name_len++;
    }

    if (req->nr_events == PERF_RECORD_MAX_EVENTS) {
        printf("perf: more than %u events\n", PERF_RECORD_MAX_EVENTS);
        return -1;
    }

    if (name_len == 0 || name_len >= sizeof(ev->name)) {
        printf("perf: bad event '%.*s' (see perf list)\n", (int)len, word);
        return -1;
    }

    memcpy(ev->name, word, name_len);
    ev->name[name_len] = '\0';

    if (perf_util_parse_event(ev->name, &uev) != 0) {
        return -1;
    }

    if (uev.clock) {
        printf("perf record: '%s' is a clock, which perf stat counts: "
               "sample time with tick\n", ev->name);
        return -1;
    }

    ev->id = uev.id;
    ev->flags = uev.flags;

    ev->period = 0;

    if (name_len < len) {
        snprintf(period, sizeof(period), "%.*s", (int)(len - name_len - 1),
                 word + name_len + 1);

        if (perf_record_parse_period(&ev->period, period) != 0) {
            return -1;
        }
    }

    req->nr_events++;
    return 0;
}

/*
 * Parse "event[/period][,event[/period]]..." into req's events. Return
 * 0, or -1 after a message.
 */
static int
perf_record_parse_event(struct perf_record_req *req, const char *word)
{
    if (strchr(word, '{') != NULL || strchr(word, '}') != NULL) {
        printf("perf record: '%s': event groups are perf stat's; sample "
               "the events side by side, as -e a,b\n", word);
        return -1;
    }

    for (;;) {
        const char *comma = strchr(word, ',');
        size_t len = (comma == NULL) ? strlen(word) : (size_t)(comma - word);

        if (perf_record_parse_one(req, word, len) != 0) {
            return -1;
        }

        if (comma == NULL) {
            return 0;
        }

        word = comma + 1;
    }
}

/*
 * Give each event its period: its own, else -c's; else it is sampled at
 * -F's frequency, or at PERF_RECORD_DEFAULT_FREQ without -F (period 0
 * leaves it to the frequency). Return 0, or -1 after a message.
 */
static int
perf_record_set_periods(struct perf_record_req *req)
{
    if (req->period != 0 && req->freq != 0) {
        printf("perf: -c and -F exclude each other\n");
        return -1;
    }

    for (unsigned int i = 0; i < req->nr_events; i++) {
        struct perf_record_event *ev = &req->events[i];

        if (ev->period == 0 && req->period != 0) {
            ev->period = req->period;
        }

        if (ev->period == 0 && req->freq == 0) {
            req->freq = PERF_RECORD_DEFAULT_FREQ;
            req->freq_default = true;
        }
    }

    return 0;
}

static void
perf_record_target_all(struct perf_record_req *req)
{
    for (unsigned int i = 0; i < cpu_count(); i++) {
        if (cpu_online(i)) {
            req->cpus[req->nr_targets++] = i;
        }
    }

    snprintf(req->target, sizeof(req->target), "all");
}

/* A CPU target. Return 0, or -1 after a message. */
static int
perf_record_target_cpu(struct perf_record_req *req, const char *word)
{
    unsigned long long cpu;

    if (string_parse_u64(word, &cpu) != 0 || cpu >= cpu_count()
        || !cpu_online((unsigned int)cpu)) {
        printf("perf: bad CPU '%s': EINVAL (0 to %u, online)\n", word,
               cpu_count() - 1);
        return -1;
    }

    req->cpus[req->nr_targets++] = (unsigned int)cpu;
    snprintf(req->target, sizeof(req->target), "cpu %llu", cpu);
    return 0;
}

/* A thread target. Return 0, or -1 after a message. */
static int
perf_record_target_thread(struct perf_record_req *req, const char *name)
{
    req->thread = thread_lookup(name);

    if (req->thread == NULL) {
        printf("perf: no thread named '%s' (see threads)\n", name);
        return -1;
    }

    req->threads[0] = req->thread;
    req->nr_threads = req->nr_targets = 1;
    snprintf(req->target, sizeof(req->target), "thread %s",
             thread_name(req->thread));
    return 0;
}

/* Refuse a second target. Return 0, or -1 after a message. */
static int
perf_record_target_once(const struct perf_record_req *req, const char *opt)
{
    if (req->nr_targets != 0) {
        printf("perf record: two targets ('%s' and '%s'): name one\n",
               req->target, opt);
        return -1;
    }

    return 0;
}

/*
 * Parse the target words; return how many argv entries they took, or -1
 * after a message.
 */
static int
perf_record_parse_target(struct perf_record_req *req, int argc, char **argv)
{
    bool target = argc >= 1 && (strcmp(argv[0], "all") == 0
                                || (argc >= 2 && strcmp(argv[0], "cpu") == 0)
                                || (argc >= 2
                                    && strcmp(argv[0], "thread") == 0));

    if (target && perf_record_target_once(req, argv[0]) != 0) {
        return -1;
    }

    if (argc >= 1 && strcmp(argv[0], "all") == 0) {
        perf_record_target_all(req);
        return 1;
    }

    if (argc >= 2 && strcmp(argv[0], "cpu") == 0) {
        return (perf_record_target_cpu(req, argv[1]) == 0) ? 2 : -1;
    }

    if (argc >= 2 && strcmp(argv[0], "thread") == 0) {
        return (perf_record_target_thread(req, argv[1]) == 0) ? 2 : -1;
    }

    return 0;
}

#define PERF_RECORD_OPTIONS "-e EVENTS, -c PERIOD, -F HZ, -a, -C CPU, " \
                            "-t TID, -g, --call-graph fp, or their long " \
                            "names"

/* A thread target by id (-t). Return 0, or -1 after a message. */
static int
perf_record_target_tid(struct perf_record_req *req, const char *word)
{
    if (perf_util_parse_tid(word, &req->thread) != 0) {
        return -1;
    }

    req->threads[0] = req->thread;
    req->nr_threads = req->nr_targets = 1;
    snprintf(req->target, sizeof(req->target), "thread %s",
             thread_name(req->thread));
    return 0;
}

/*
 * The Linux options that cannot apply here: print why, return true. A
 * value they take is not looked at.
 */
static bool
perf_record_refuse_linux(const char *opt)
{
    if (strcmp(opt, "-p") == 0 || strncmp(opt, "--pid", 5) == 0) {
        printf("perf record: %s: no processes here, only the kernel's "
               "threads: -t TID or thread NAME (see threads)\n", opt);
    } else if (strcmp(opt, "-o") == 0 || strncmp(opt, "--output", 8) == 0) {
        printf("perf record: %s: no files here: the recording stays in "
               "memory for perf report and perf script (make profile "
               "writes a perf.data)\n", opt);
    } else {
        return false;
    }

    return true;
}

/* --call-graph MODE: fp, what is recorded. Return 0, or -1 after a message. */
static int
perf_record_parse_call_graph(const char *mode)
{
    if (strcmp(mode, "fp") != 0) {
        printf("perf record: --call-graph '%s': call chains here are "
               "frame-pointer walks, 'fp' (%u frames, always recorded)\n",
               mode, PERF_RECORD_NR_FRAMES);
        return -1;
    }

    return 0;
}

/* perf record's options: the short name, Linux's long one, a value. */
static const struct perf_record_option {
    char letter;                        /* 'G': --call-graph alone */
    const char *name;                   /* --name, --name=VALUE */
    bool value;
} perf_record_options[] = {
    { 'e', "event", true },
    { 'c', "count", true },
    { 'F', "freq", true },
    { 'a', "all-cpus", false },
    { 'C', "cpu", true },
    { 't', "tid", true },
    { 'g', NULL, false },
    { 'G', "call-graph", true },
};

/* The option word opt names, or NULL; len: its name's length. */
static const struct perf_record_option *
perf_record_option_lookup(const char *opt, size_t len)
{
    for (size_t k = 0; k < ARRAY_SIZE(perf_record_options); k++) {
        const struct perf_record_option *o = &perf_record_options[k];

        if (opt[1] == '-' ? (o->name != NULL && strlen(o->name) == len - 2
                             && strncmp(opt + 2, o->name, len - 2) == 0)
                          : (len == 2 && opt[1] == o->letter
                             && o->letter != 'G')) {
            return o;
        }
    }

    return NULL;
}

/* Apply option o with its value (NULL for a flag). Return 0 or -1. */
static int
perf_record_apply_option(struct perf_record_req *req,
                         const struct perf_record_option *o,
                         const char *opt, const char *value)
{
    switch (o->letter) {
    case 'e':
        return perf_record_parse_event(req, value);
    case 'c':
        return perf_record_parse_period(&req->period, value);
    case 'F':
        return perf_record_parse_freq(req, value);
    case 'G':
        return perf_record_parse_call_graph(value);
    case 'g':
        return 0;
    default:
        break;
    }

    if (perf_record_target_once(req, opt) != 0) {
        return -1;
    }

    if (o->letter == 'a') {
        perf_record_target_all(req);
        return 0;
    }

    return (o->letter == 'C') ? perf_record_target_cpu(req, value)
                              : perf_record_target_tid(req, value);
}

/*
 * Parse the options (Linux perf record's spellings, short and long: -e,
 * -c, -F, -a, -C, -t; -g and --call-graph fp are accepted, call chains
 * are always recorded); return how many argv entries they took, or -1
 * after a message naming the option at fault.
 */
static int
perf_record_parse_options(struct perf_record_req *req, int argc, char **argv)
{
    int i;

    for (i = 0; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0;
         i++) {
        const char *opt = argv[i], *value = NULL;
        const char *eq = (opt[1] == '-') ? strchr(opt, '=') : NULL;
        size_t len = (eq == NULL) ? strlen(opt) : (size_t)(eq - opt);
        const struct perf_record_option *o;

        if (perf_record_refuse_linux(opt)) {
            return -1;
        }

        o = perf_record_option_lookup(opt, len);

        if (o == NULL) {
            printf("perf record: unknown option '%s' (%s)\n", opt,
                   PERF_RECORD_OPTIONS);
            return -1;
        }

        if (!o->value && eq != NULL) {
            printf("perf record: %.*s takes no value (got '%s')\n",
                   (int)len, opt, eq + 1);
            return -1;
        }

        if (o->value) {
            value = (eq != NULL) ? eq + 1 : (i + 1 < argc) ? argv[++i] : NULL;

            if (value == NULL || value[0] == '\0') {
                printf("perf record: %.*s needs a value (%s)\n", (int)len,
                       opt, PERF_RECORD_OPTIONS);
                return -1;
            }
        }

        if (perf_record_apply_option(req, o, opt, value) != 0) {
            return -1;
        }
    }

    return i;
}

static void
perf_record_detach_all(struct perfmon_event *events, unsigned int nr)
{
    for (unsigned int i = 0; i < nr; i++) {
        perfmon_event_detach(&events[i]);
    }
}

/*
 * Attach one sampling event per target and event (events: nr_targets
 * times nr_events), each sample's cookie the index of its event. Return
 * 0 or an error, with *failedp the event that failed.
 */
static int
perf_record_attach(const struct perf_record_req *req,
                   struct perfmon_session *session,
                   struct perfmon_event *events, unsigned int *nr_attachedp,
                   const struct perf_record_event **failedp)
{
    struct perfmon_sample_attr attr = {
        .session = session,
        .nr_frames = PERF_RECORD_NR_FRAMES,
    };
    int error;

    for (unsigned int i = 0; i < req->nr_targets * req->nr_events; i++) {
        unsigned int t = i / req->nr_events, e = i % req->nr_events;
        const struct perf_record_event *ev = &req->events[e];

        error = perfmon_event_init(&events[i], ev->id, ev->flags);

        if (error == 0) {
            /*
             * At a frequency, the first period is 1, as in Linux: a
             * longer guess could keep a slow event from its first sample
             * for long (a new period starts where the current one ends);
             * a fast event is throttled for its first tick at most.
             */
            attr.cookie = e;
            attr.period = ev->period;
            attr.freq = (ev->period == 0) ? req->freq : 0;
            error = perfmon_event_set_sampling(&events[i], &attr);
        }

        if (error == 0) {
            error = (req->nr_threads != 0)
                    ? perfmon_event_attach(&events[i], req->threads[t])
                    : perfmon_event_attach_cpu(&events[i], req->cpus[t]);
        }

        if (error) {
            perf_record_detach_all(events, *nr_attachedp);
            *nr_attachedp = 0;
            *failedp = ev;
            return error;
        }

        (*nr_attachedp)++;
    }

    return 0;
}

/* Describe req's recording in the last recording, just reset. */
static void
perf_record_describe(struct perf_record_last *last,
                     const struct perf_record_req *req)
{
    last->nr_events = req->nr_events;

    for (unsigned int i = 0; i < req->nr_events; i++) {
        size_t len = strlen(last->event);

        strlcpy(last->names[i], req->events[i].name, sizeof(last->names[i]));
        last->periods[i] = req->events[i].period;
        snprintf(last->event + len, sizeof(last->event) - len, "%s%s",
                 (i != 0) ? "," : "", req->events[i].name);
    }

    strlcpy(last->target, req->target, sizeof(last->target));
    last->freq = req->freq;
    last->ms = req->ms;
}

/*
 * Record until the deadline, the workload's end (when one runs) or
 * Ctrl-C. Return whether Ctrl-C ended it.
 */
static bool
perf_record_wait(struct perf_record_last *last,
                 struct perfmon_session *session, struct perf_work *work,
                 uint64_t deadline)
{
    for (;;) {
        uint64_t now = clock_get_time();

        if (now >= deadline || (work->nr_threads != 0
                                && perf_work_done(work))) {
            return false;
        }

        perfmon_session_wait(session, MIN(deadline - now,
                                          PERF_RECORD_DRAIN_TICKS));

        if (perf_record_last_drain(last, session)) {
            perf_record_last_scan_threads(last);
        }

        if (perf_util_interrupted()) {
            return true;
        }
    }
}

static void
perf_record_print_totals(const struct perf_record_last *last)
{
    uint64_t lost = 0;

    for (unsigned int cpu = 0; cpu < last->nr_cpus; cpu++) {
        lost += last->lost[cpu];
    }

    printf("perf record: %llu samples received, %llu lost, %llu periods "
           "throttled (%llu events, %llu records); %llu records produced\n",
           (unsigned long long)last->received, (unsigned long long)lost,
           (unsigned long long)last->throttled_periods,
           (unsigned long long)last->throttled_events,
           (unsigned long long)last->throttled,
           (unsigned long long)last->produced);

    if (last->dropped != 0) {
        printf("perf record: %llu samples did not fit the %u KiB buffer "
               "(kept the first %llu)\n", (unsigned long long)last->dropped,
               (unsigned int)(last->buf_size >> 10),
               (unsigned long long)(last->received - last->dropped));
    }
}

/* The frequency, when some event was sampled at one. */
static void
perf_record_print_freq(const struct perf_record_req *req)
{
    if (req->freq == 0) {
        return;
    }

    printf("perf record: sampled at %llu Hz%s\n",
           (unsigned long long)req->freq,
           req->freq_default ? " (the default -F; -c PERIOD or EVENT/PERIOD "
                               "for a fixed period)" : "");
}

/*
 * Parse the words after "perf record" into req: options, a target, an
 * event and a duration, then the workload after "--", started (waiting).
 * Return 0, or -1 after a message.
 */
static int
perf_record_parse(struct perf_record_req *req, int argc, char **argv)
{
    unsigned long long ms = 0;
    int dashes, used, n, nargs;

    for (dashes = 0; dashes < argc && strcmp(argv[dashes], "--") != 0;
         dashes++) {
        continue;
    }

    used = perf_record_parse_options(req, dashes, argv);

    if (used < 0) {
        return -1;
    }

    n = perf_record_parse_target(req, dashes - used, argv + used);

    if (n < 0) {
        return -1;
    }

    used += n;

    /* [EVENT[/PERIOD]] [MS]: a number is the duration. */
    nargs = dashes - used;

    if (nargs >= 1 && string_parse_u64(argv[used], &ms) != 0) {
        if (req->nr_events != 0) {
            printf("perf record: '%s' is not a duration: MS, 1 to %llu "
                   "(the events are -e's)\n", argv[used],
                   PERF_RECORD_MAX_MS);
            return -1;
        }

        if (perf_util_refuse_command("perf record", argv[used])
            || perf_record_parse_event(req, argv[used]) != 0) {
            return -1;
        }

        used++;
        nargs--;
    }

    if (nargs > 1) {
        printf("perf record: unexpected '%s' after the duration (a "
               "workload goes after --, as -- spin 100)\n", argv[used + 1]);
        return -1;
    }

    if (dashes != argc && dashes + 3 != argc) {
        printf("perf record: after -- comes one workload: spin MS (1 to "
               "%llu), pingpong N or calltree N (1 to %llu)\n",
               PERF_WORK_MAX_MS, PERF_WORK_MAX_ROUNDS);
        return -1;
    }

    if (nargs == 0 && dashes == argc) {
        printf("perf record: for how long? MS (1 to %llu) after the event, "
               "or a workload after --\n", PERF_RECORD_MAX_MS);
        return -1;
    }

    if (nargs == 1
        && (string_parse_u64(argv[used], &ms) != 0 || ms == 0
            || ms > PERF_RECORD_MAX_MS)) {
        printf("perf: duration must be 1 to %llu ms\n", PERF_RECORD_MAX_MS);
        return -1;
    }

    req->ms = ms;

    if (req->nr_events == 0 && perf_record_parse_event(req, "tick") != 0) {
        return -1;
    }

    if (perf_record_set_periods(req) != 0) {
        return -1;
    }

    if (dashes != argc) {
        int error = perf_work_start(&req->work, argv[dashes + 1],
                                    argv[dashes + 2], NULL);

        if (error) {
            printf("perf: workload must be spin MS (1 to %llu), pingpong "
                   "N or calltree N (1 to %llu): %s\n", PERF_WORK_MAX_MS,
                   PERF_WORK_MAX_ROUNDS, errno_name(error));
            return -1;
        }

        if (req->nr_targets == 0) {
            for (unsigned int i = 0; i < req->work.nr_threads; i++) {
                req->threads[i] = req->work.threads[i];
            }

            req->nr_threads = req->nr_targets = req->work.nr_threads;
            snprintf(req->target, sizeof(req->target), "%s %s",
                     argv[dashes + 1], argv[dashes + 2]);
        }
    }

    return 0;
}

void
perf_record_cmd(int argc, char **argv)
{
    struct perf_record_last *last;
    struct perf_record_req *req;
    struct perfmon_session *session = NULL;
    struct perfmon_event *events = NULL;
    const struct perf_record_event *failed = NULL;
    unsigned int nr_attached = 0;
    uint64_t start, deadline;
    bool interrupted;
    int error;

    /* CPU_MAX CPU numbers and the workload: too big for the stack. */
    req = kmem_zalloc(sizeof(*req));

    if (req == NULL) {
        perf_util_error("cannot record", ENOMEM);
        return;
    }

    if (perf_record_parse(req, argc - 2, argv + 2) != 0) {
        goto out;
    }

    for (unsigned int i = 0; i < req->nr_events; i++) {
        error = perfmon_event_check(req->events[i].id, req->events[i].flags);

        if (error) {
            perf_util_error(req->events[i].name, error);
            goto out;
        }
    }

    events = kmem_zalloc(req->nr_targets * req->nr_events
                         * sizeof(events[0]));
    error = (events == NULL) ? ENOMEM
            : perfmon_session_create(&session, PERF_RECORD_RING_SIZE);

    if (error) {
        perf_util_error("cannot record", error);
        goto out;
    }

    perfmon_session_set_watermark(session, 0, PERF_RECORD_RING_SIZE / 2);
    error = perf_record_attach(req, session, events, &nr_attached,
                               &failed);

    if (error) {
        perf_util_error(failed->name, error);
        goto out;
    }

    /* Only now is the previous recording replaced. */
    error = perf_record_last_reset(&last);

    if (error) {
        perf_util_error("cannot record", error);
        goto out;
    }

    perf_record_describe(last, req);

    perf_record_last_scan_threads(last);
    start = clock_get_time();
    deadline = start + clock_ticks_from_ms((req->ms != 0)
                                           ? req->ms : PERF_RECORD_MAX_MS);
    perf_work_go(&req->work);
    interrupted = perf_record_wait(last, session, &req->work, deadline);
    perf_record_detach_all(events, nr_attached);
    nr_attached = 0;

    if (perf_record_last_drain(last, session)) {
        perf_record_last_scan_threads(last);
    }

    perf_record_last_account(last, session);

    /* A workload's recording lasts as long as the workload ran. */
    if (req->ms == 0) {
        last->ms = clock_ms_from_ticks(clock_get_time() - start);
    }

    last->valid = true;

    if (interrupted) {
        printf("^C\n");
    }

    perf_record_print_totals(last);
    perf_record_print_freq(req);

out:
    perf_record_detach_all(events, nr_attached);
    perf_work_stop(&req->work);
    perf_work_join(&req->work);

    if (session != NULL) {
        error = perfmon_session_destroy(session);
        assert(error == 0);
    }

    kmem_free(events);

    if (req->thread != NULL) {
        thread_unref(req->thread);
    }

    kmem_free(req);
}
