/*
 * perf list and perf stat (kern/perfmon_shell.h):
 *
 *   perf list
 *   perf stat [-g] [-v] [cpu N | thread NAME | all] <event>[,<event>...]
 *             [MS] [-- spin MS | -- pingpong N]
 *
 * perf stat counts the events on one CPU, every CPU, a thread, or (with a
 * built-in workload and no target) the workload's own threads, for MS
 * milliseconds or until the workload ends, then prints Linux perf's
 * layout: each count right-aligned with thousands separators, the event,
 * a rate, the share of its enabled time it ran, and the measured time.
 * Counts are scaled as Linux scales multiplexed events (count * enabled /
 * running, perfmon_scale): perfmon does not multiplex yet, so the share
 * is 100.00% and the scaled count is the count. -v first prints each
 * event's count, time enabled and time running in nanoseconds (Linux's
 * "name: count enabled running"); -g counts the events as one group per
 * target (attached all or none, read at one instant). An event that
 * cannot be counted prints <not supported> and the others still count
 * (with -g, none counts). Ctrl-C ends the count early and prints what
 * was counted. Event names are perf_util's (kern/perf_util.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/perf_util.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_shell.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#define PERFMON_SHELL_MAX_EVENTS 16U
#define PERFMON_SHELL_MAX_MS     60000ULL
#define PERFMON_SHELL_MAX_ROUNDS 1000000ULL
#define PERFMON_SHELL_NAME_SIZE  PERF_UTIL_NAME_SIZE
#define PERFMON_SHELL_MAX_TARGETS 64U   /* CPUs with "all" */

struct perfmon_shell_event {
    char name[PERFMON_SHELL_NAME_SIZE];
    uint64_t id;
    unsigned int flags;
    int error;                          /* why it is not counted, or 0 */
    unsigned int nr_attached;
    struct perfmon_event *events;       /* one per target */
    struct perfmon_value total;         /* summed over the targets */
    uint64_t scale_enabled;             /* the enabled time to scale by */
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
    struct perfmon_dev *hw = perfmon_get_dev(false);
    struct perfmon_dev *sw = perfmon_get_dev(true);

    if (hw == NULL) {
        printf("hardware events: none counted here (no hardware PMU)\n");
    } else {
        printf("hardware events (%s, %u counters, :k kernel / :u user "
               "only):\n", hw->name, hw->nr_pmcs);

        /* The driver logged them once at boot; they stay unusable. */
        if (hw->fw_pmcs != 0) {
            printf("  (firmware holds counters 0x%llx, enabled at boot: "
                   "left alone, not counted above)\n",
                   (unsigned long long)hw->fw_pmcs);
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
               sw->nr_pmcs, sw->min_width);

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
    }
}

/* Split "a,b,c" into events. Return the count, or -1 after a message. */
static int
perfmon_shell_parse_events(char *list, struct perfmon_shell_event *events)
{
    int n = 0;

    for (char *p = list; *p != '\0';) {
        char *comma = strchr(p, ',');
        size_t len = (comma == NULL) ? strlen(p) : (size_t)(comma - p);

        if (n == PERFMON_SHELL_MAX_EVENTS) {
            printf("perf: at most %u events\n", PERFMON_SHELL_MAX_EVENTS);
            return -1;
        }

        if (len == 0 || len >= PERFMON_SHELL_NAME_SIZE) {
            printf("perf: bad event list '%s'\n", list);
            return -1;
        }

        memset(&events[n], 0, sizeof(events[n]));
        memcpy(events[n].name, p, len);
        events[n].name[len] = '\0';

        if (perf_util_parse_event_name(events[n].name, &events[n].id,
                                       &events[n].flags) != 0) {
            printf("perf: unknown event '%s' (see perf list)\n",
                   events[n].name);
            return -1;
        }

        n++;
        p += len + (comma != NULL);
    }

    return n;
}

/* ---- built-in workloads ------------------------------------------- */

struct perfmon_shell_work {
    volatile bool go;
    volatile bool stop;
    volatile unsigned int turn;         /* pingpong: whose turn, 0 or 1 */
    unsigned int nr_running;            /* workers not yet returned */
    uint64_t end_tsc;                   /* spin */
    uint64_t rounds;                    /* pingpong */
    unsigned int nr_threads;
    struct thread *threads[2];
};

static void
perfmon_shell_work_wait_go(struct perfmon_shell_work *work)
{
    while (!__atomic_load_n(&work->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }
}

/* A busy loop that emits one unit on channel 0 per iteration. */
static void
perfmon_shell_spin(void *arg)
{
    struct perfmon_shell_work *work = arg;

    perfmon_shell_work_wait_go(work);

    while (!work->stop && cpu_get_tsc() < work->end_tsc) {
        for (unsigned int i = 0; i < 1000; i++) {
            cpu_pause();
        }

        pmu_soft_emit(1);
    }

    __atomic_sub_fetch(&work->nr_running, 1, __ATOMIC_RELEASE);
}

/*
 * One of a pair on the same CPU passing a turn back and forth: each pass
 * is a yield to the other thread, so a context switch each way.
 */
static void
perfmon_shell_pingpong(void *arg)
{
    struct perfmon_shell_work *work = arg;
    unsigned int self = (thread_self() == work->threads[0]) ? 0 : 1;

    perfmon_shell_work_wait_go(work);

    for (uint64_t i = 0; i < work->rounds && !work->stop; i++) {
        while (work->turn != self && !work->stop) {
            thread_yield();
        }

        pmu_soft_emit(1);
        __atomic_store_n(&work->turn, 1 - self, __ATOMIC_RELEASE);
    }

    __atomic_sub_fetch(&work->nr_running, 1, __ATOMIC_RELEASE);
}

/* Start the workload's threads, waiting for go. Return 0 or an error. */
static int
perfmon_shell_work_start(struct perfmon_shell_work *work, const char *kind,
                         const char *value)
{
    struct thread_attr attr = { 0 };
    unsigned long long v;
    int error;

    if (string_parse_u64(value, &v) != 0 || v == 0) {
        return EINVAL;
    }

    if (strcmp(kind, "spin") == 0 && v <= PERFMON_SHELL_MAX_MS) {
        work->end_tsc = ~0ULL;
        work->rounds = v;               /* ms until go sets end_tsc */
        attr.name = "spin";
        error = thread_create(&work->threads[0], &attr, perfmon_shell_spin,
                              work);

        if (error == 0) {
            work->nr_threads = work->nr_running = 1;
        }

        return error;
    }

    if (strcmp(kind, "pingpong") == 0 && v <= PERFMON_SHELL_MAX_ROUNDS) {
        work->rounds = v;
        attr.affinity = 1ULL << (cpu_count() - 1);

        for (unsigned int i = 0; i < 2; i++) {
            attr.name = (i == 0) ? "ping" : "pong";
            error = thread_create(&work->threads[i], &attr,
                                  perfmon_shell_pingpong, work);

            if (error) {
                return error;
            }

            work->nr_threads++;
            work->nr_running++;
        }

        return 0;
    }

    return EINVAL;
}

/* ---- perf stat ------------------------------------------------------- */

/* a * b / c without overflow, for c * b below 2^64. */
static uint64_t
perfmon_shell_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    return (a / c) * b + (a % c) * b / c;
}

/* n with a comma every three digits, into buf. */
static void
perfmon_shell_format_count(char *buf, size_t size, uint64_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%llu",
                       (unsigned long long)n);
    size_t j = 0;

    for (int i = 0; i < len && j + 1 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0 && j + 2 < size) {
            buf[j++] = ',';
        }

        buf[j++] = digits[i];
    }

    buf[j] = '\0';
}

void
perfmon_shell_stat_usage(void)
{
    printf("usage: perf stat [-g] [-v] [cpu N | thread NAME | all] "
           "<event>[,<event>...] [MS]\n"
           "                 [-- spin MS | -- pingpong N]\n"
           "  -g: the events as one group per target; -v: counts with "
           "times enabled and running\n"
           "  at most %u events; MS 1 to %llu; spin MS up to %llu; "
           "pingpong N up to %llu;\n"
           "  no target: count the workload's threads; Ctrl-C stops early\n",
           PERFMON_SHELL_MAX_EVENTS, PERFMON_SHELL_MAX_MS,
           PERFMON_SHELL_MAX_MS, PERFMON_SHELL_MAX_ROUNDS);
}

/*
 * Sum an event's counts and times over its targets (detached: their final
 * values), as Linux perf sums its CPUs before scaling, into ev->total;
 * ev->scale_enabled is the enabled time perf stat scales by. perfmon's
 * time enabled of a thread event includes the time its thread was off
 * its CPU, which Linux's does not: scaling by it would estimate what the
 * thread would have counted running all along. So thread targets scale by
 * the time the thread ran (running, until multiplexing can hold an event
 * off a counter while its thread runs), CPU targets by time enabled.
 */
static void
perfmon_shell_event_total(struct perfmon_shell_event *ev, bool threads)
{
    struct perfmon_value value;

    ev->total = (struct perfmon_value){ 0 };

    for (unsigned int i = 0; i < ev->nr_attached; i++) {
        if (perfmon_event_read_value(&ev->events[i], &value) == 0) {
            ev->total.count += value.count;
            ev->total.time_enabled += value.time_enabled;
            ev->total.time_running += value.time_running;
        }
    }

    ev->scale_enabled = threads ? ev->total.time_running
                                : ev->total.time_enabled;
}

/* The estimate perf stat prints: the count scaled to the enabled time. */
static uint64_t
perfmon_shell_event_sum(const struct perfmon_shell_event *ev)
{
    return perfmon_scale(ev->total.count, ev->scale_enabled,
                         ev->total.time_running);
}

/* " (NN.NN%)": the share of its enabled time the event ran. */
static void
perfmon_shell_format_share(char *buf, size_t size,
                           const struct perfmon_shell_event *ev)
{
    uint64_t share = 0;

    if (ev->scale_enabled != 0) {
        share = perfmon_shell_muldiv(ev->total.time_running, 10000,
                                     ev->scale_enabled);
    }

    snprintf(buf, size, "  (%llu.%02llu%%)", (unsigned long long)(share / 100),
             (unsigned long long)(share % 100));
}

static void
perfmon_shell_print_row(const struct perfmon_shell_event *ev,
                        const struct perfmon_shell_event *events, int n,
                        uint64_t us)
{
    char count[32], share[16];
    uint64_t value, cycles = 0;
    bool have_cycles = false;

    if (ev->error) {
        printf("%18s      %-25s # %s\n", "<not supported>", ev->name,
               errno_str(ev->error));
        return;
    }

    if (ev->total.time_running == 0 && ev->total.count == 0
        && ev->scale_enabled != 0) {
        printf("%18s      %s\n", "<not counted>", ev->name);
        return;
    }

    value = perfmon_shell_event_sum(ev);
    perfmon_shell_format_count(count, sizeof(count), value);
    perfmon_shell_format_share(share, sizeof(share), ev);

    for (int i = 0; i < n; i++) {
        if (!events[i].error && events[i].id == PERFMON_EV_CYCLE
            && !(events[i].flags & (PERFMON_EF_RAW | PERFMON_EF_SW))) {
            cycles = perfmon_shell_event_sum(&events[i]);
            have_cycles = true;
        }
    }

    if (ev->id == PERFMON_EV_INSTRUCTION
        && !(ev->flags & (PERFMON_EF_RAW | PERFMON_EF_SW)) && have_cycles
        && cycles != 0) {
        uint64_t ipc = perfmon_shell_muldiv(value, 100, cycles);

        printf("%18s      %-25s # %4llu.%02llu  insn per cycle%s\n", count,
               ev->name, (unsigned long long)(ipc / 100),
               (unsigned long long)(ipc % 100), share);
    } else if (us != 0) {
        /* Per second, with three decimals: count * 10^9 / us. */
        uint64_t rate = perfmon_shell_muldiv(value, 1000000000ULL, us);

        printf("%18s      %-25s # %8llu.%03llu /sec%s\n", count, ev->name,
               (unsigned long long)(rate / 1000),
               (unsigned long long)(rate % 1000), share);
    } else {
        printf("%18s      %-25s%s\n", count, ev->name, share);
    }
}

/* The CPUs or threads perf stat attaches each event to. */
struct perfmon_shell_target {
    char desc[48];
    unsigned int nr;
    unsigned int cpu;                   /* the first CPU of a CPU target */
    struct thread *thread;              /* a thread target, referenced */
    struct perfmon_shell_work *work;    /* a workload, or NULL */
};

static int
perfmon_shell_attach_one(struct perfmon_shell_event *ev,
                         const struct perfmon_shell_target *target,
                         unsigned int i)
{
    struct perfmon_event *event = &ev->events[i];
    int error;

    error = perfmon_event_init(event, ev->id, ev->flags);

    if (error) {
        return error;
    }

    if (target->work != NULL) {
        return perfmon_event_attach(event, target->work->threads[i]);
    }

    if (target->thread != NULL) {
        return perfmon_event_attach(event, target->thread);
    }

    return perfmon_event_attach_cpu(event, target->cpu + i);
}

/* Attach ev to every target, or to none with ev->error set. */
static void
perfmon_shell_attach(struct perfmon_shell_event *ev,
                     const struct perfmon_shell_target *target)
{
    ev->events = kmem_zalloc(target->nr * sizeof(ev->events[0]));

    if (ev->events == NULL) {
        ev->error = ENOMEM;
        return;
    }

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
}

/*
 * Attach the events as one group per target (every event counts, or none
 * does, with every event's error set). groups: one per target.
 */
static void
perfmon_shell_attach_groups(struct perfmon_shell_event *events, int n,
                            struct perfmon_group *groups,
                            const struct perfmon_shell_target *target)
{
    unsigned int j;
    int error = 0;

    for (int i = 0; i < n; i++) {
        events[i].events = kmem_zalloc(target->nr
                                       * sizeof(events[i].events[0]));

        if (events[i].events == NULL) {
            error = ENOMEM;
        }
    }

    for (j = 0; error == 0 && j < target->nr; j++) {
        perfmon_group_init(&groups[j]);

        for (int i = 0; error == 0 && i < n; i++) {
            struct perfmon_event *event = &events[i].events[j];

            error = perfmon_event_init(event, events[i].id, events[i].flags);

            if (error == 0) {
                error = perfmon_group_add(&groups[j], event);
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
            error = perfmon_group_attach_cpu(&groups[j], target->cpu + j);
        }
    }

    if (error) {
        while (j-- > 0) {
            perfmon_group_detach(&groups[j]);
        }
    }

    for (int i = 0; i < n; i++) {
        events[i].error = error;
        events[i].nr_attached = error ? 0 : target->nr;
    }
}

/* Parse the target words; return how many argv entries they took, or -1. */
static int
perfmon_shell_parse_target(struct perfmon_shell_target *target, int argc,
                           char **argv)
{
    unsigned long long cpu;

    if (argc >= 1 && strcmp(argv[0], "all") == 0) {
        target->cpu = 0;
        target->nr = cpu_count();
        snprintf(target->desc, sizeof(target->desc), "all %u CPU%s",
                 cpu_count(), (cpu_count() == 1) ? "" : "s");
        return 1;
    }

    if (argc >= 2 && strcmp(argv[0], "cpu") == 0) {
        if (string_parse_u64(argv[1], &cpu) != 0 || cpu >= cpu_count()) {
            perf_util_error("bad CPU", EINVAL);
            return -1;
        }

        target->cpu = (unsigned int)cpu;
        target->nr = 1;
        snprintf(target->desc, sizeof(target->desc), "cpu %llu", cpu);
        return 2;
    }

    if (argc >= 2 && strcmp(argv[0], "thread") == 0) {
        target->thread = thread_lookup(argv[1]);

        if (target->thread == NULL) {
            printf("perf: no thread named '%s' (see threads)\n", argv[1]);
            return -1;
        }

        target->nr = 1;
        snprintf(target->desc, sizeof(target->desc), "thread %s",
                 thread_name(target->thread));
        return 2;
    }

    return 0;
}

void
perfmon_shell_stat(int argc, char **argv)
{
    struct perfmon_shell_event events[PERFMON_SHELL_MAX_EVENTS];
    struct perfmon_shell_target target = { .nr = 0 };
    struct perfmon_shell_work work = { .go = false };
    struct perfmon_group *groups = NULL;
    unsigned long long ms = 0;
    uint64_t start, end, us, deadline;
    int nargs, dashes, n = 0, nr_counted = 0, used;
    bool interrupted = false, grouped = false, verbose = false;
    char *list;

    /* Options first: shift them out, so argv[2] starts the target. */
    while (argc > 2 && argv[2][0] == '-' && strcmp(argv[2], "--") != 0) {
        if (strcmp(argv[2], "-g") == 0) {
            grouped = true;
        } else if (strcmp(argv[2], "-v") == 0) {
            verbose = true;
        } else {
            perfmon_shell_stat_usage();
            return;
        }

        argv[2] = argv[1];
        argv++;
        argc--;
    }

    dashes = argc;

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            dashes = i;
            break;
        }
    }

    /* perf stat [target] events [ms] [-- kind value] */
    used = perfmon_shell_parse_target(&target, dashes - 2, argv + 2);

    if (used < 0) {
        return;
    }

    nargs = dashes - 2 - used;

    if (nargs < 1 || nargs > 2
        || (dashes != argc && dashes + 3 != argc)
        || (dashes == argc && nargs != 2)
        || (target.nr == 0 && dashes == argc)) {
        perfmon_shell_stat_usage();
        goto out;
    }

    list = argv[2 + used];

    if (nargs == 2
        && (string_parse_u64(argv[3 + used], &ms) != 0 || ms == 0
            || ms > PERFMON_SHELL_MAX_MS)) {
        printf("perf: duration must be 1 to %llu ms\n", PERFMON_SHELL_MAX_MS);
        goto out;
    }

    n = perfmon_shell_parse_events(list, events);

    if (n < 0) {
        n = 0;
        goto out;
    }

    if (dashes != argc) {
        int error = perfmon_shell_work_start(&work, argv[dashes + 1],
                                             argv[dashes + 2]);

        if (error) {
            printf("perf: workload must be spin MS (1 to %llu) or pingpong "
                   "N (1 to %llu): %s\n", PERFMON_SHELL_MAX_MS,
                   PERFMON_SHELL_MAX_ROUNDS, errno_name(error));
            work.stop = true;
            work.go = true;
            goto join;
        }

        if (target.nr == 0) {
            target.work = &work;
            target.nr = work.nr_threads;
            snprintf(target.desc, sizeof(target.desc), "%s %s",
                     argv[dashes + 1], argv[dashes + 2]);
        }
    }

    if (grouped) {
        groups = kmem_zalloc(target.nr * sizeof(groups[0]));

        if (groups == NULL) {
            for (int i = 0; i < n; i++) {
                events[i].error = ENOMEM;
            }
        } else {
            perfmon_shell_attach_groups(events, n, groups, &target);
        }
    } else {
        for (int i = 0; i < n; i++) {
            perfmon_shell_attach(&events[i], &target);
        }
    }

    for (int i = 0; i < n; i++) {
        nr_counted += (events[i].error == 0);
    }

    if (nr_counted == 0) {
        for (int i = 0; i < n; i++) {
            perf_util_error(events[i].name, events[i].error);
        }

        printf("perf: no event can be counted\n");
        work.stop = true;
        work.go = true;
        goto join;
    }

    start = cpu_get_tsc();

    if (work.nr_threads != 0 && strcmp(argv[dashes + 1], "spin") == 0) {
        work.end_tsc = start + perfmon_shell_muldiv(cpu_get_freq(),
                                                    work.rounds, 1000);
    }

    __atomic_store_n(&work.go, true, __ATOMIC_RELEASE);
    deadline = clock_get_time() + clock_ticks_from_ms(ms);

    for (;;) {
        if (work.nr_threads != 0) {
            if (__atomic_load_n(&work.nr_running, __ATOMIC_ACQUIRE) == 0) {
                break;
            }
        } else if (clock_get_time() >= deadline) {
            break;
        }

        if (perf_util_interrupted()) {
            interrupted = true;
            work.stop = true;
            break;
        }

        thread_delay(1);
    }

    end = cpu_get_tsc();
    us = perfmon_shell_muldiv(end - start, 1000000, cpu_get_freq());

    if (grouped) {
        for (unsigned int j = 0; j < target.nr; j++) {
            perfmon_group_detach(&groups[j]);
        }
    } else {
        for (int i = 0; i < n; i++) {
            for (unsigned int j = 0; j < events[i].nr_attached; j++) {
                perfmon_event_detach(&events[i].events[j]);
            }
        }
    }

    for (int i = 0; i < n; i++) {
        perfmon_shell_event_total(&events[i], target.thread != NULL
                                              || target.work != NULL);
    }

    if (interrupted) {
        printf("^C\n");
    }

    for (int i = 0; verbose && i < n; i++) {
        if (events[i].error == 0) {
            printf("%s: %llu %llu %llu\n", events[i].name,
                   (unsigned long long)events[i].total.count,
                   (unsigned long long)events[i].total.time_enabled,
                   (unsigned long long)events[i].total.time_running);
        }
    }

    printf("\n Performance counter stats for '%s':\n\n", target.desc);

    for (int i = 0; i < n; i++) {
        perfmon_shell_print_row(&events[i], events, n, us);
    }

    printf("\n%8llu.%03llu seconds time elapsed\n\n",
           (unsigned long long)(us / 1000000),
           (unsigned long long)(us / 1000 % 1000));

join:
    for (unsigned int i = 0; i < work.nr_threads; i++) {
        thread_join(work.threads[i]);
    }

out:
    for (int i = 0; i < n; i++) {
        kmem_free(events[i].events);
    }

    kmem_free(groups);

    if (target.thread != NULL) {
        thread_unref(target.thread);
    }
}
