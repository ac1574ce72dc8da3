/*
 * perf stat's counting (kern/perf/perf_stat_i.h): one run attaches each
 * event to every target (the group's, -g's or -e's {...}, the clocks
 * aside, as one group per target), lets the workload go, waits for the
 * duration, the workload's end or Ctrl-C (printing -I's counts on the
 * way), detaches and sums each event's counts and times over its
 * targets, as Linux does. On a workload (no target named) the events are
 * inherited (PERFMON_EF_INHERIT) unless -i says otherwise, as Linux's
 * are: each counts its thread and every thread created under it, and
 * --per-thread prints each of those threads' counts. The clocks are not
 * inherited (perfmon has no family clock yet): they count the workload's
 * first threads.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/cpu.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/perf/perf_num.h>
#include <kern/perf/perf_stat_i.h>
#include <kern/perf/perf_util.h>
#include <kern/perf/perf_work.h>
#include <kern/perfmon.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>

/*
 * The time an event's count is scaled to: its time enabled, a CPU's
 * while the event was attached, a thread's while the thread ran
 * (perfmon's, as Linux's), for every target.
 */
uint64_t
perf_stat_count_scale(const struct perf_stat *stat,
                      const struct perf_stat_row *row)
{
    (void)stat;
    return row->enabled;
}

/*
 * The estimate, for every event the same: a clock's time running is its
 * time enabled (it never waits for a counter), so its estimate is its
 * count, its time.
 */
uint64_t
perf_stat_count_value(const struct perf_stat *stat,
                      const struct perf_stat_event *ev,
                      const struct perf_stat_row *row)
{
    (void)ev;
    return perfmon_scale(row->count, perf_stat_count_scale(stat, row),
                         row->running);
}

bool
perf_stat_count_counted(const struct perf_stat_event *ev,
                        const struct perf_stat_row *row)
{
    return ev->error == 0 && row->running != 0;
}

/* An event's counts and times summed over its targets, as Linux does. */
static void
perf_stat_count_read(struct perf_stat_event *ev,
                     struct perf_stat_row *row)
{
    struct perfmon_value value;

    *row = (struct perf_stat_row){ 0 };

    for (unsigned int i = 0; i < ev->nr_attached; i++) {
        if (perfmon_event_read_value(&ev->events[i], &value) == 0) {
            row->count += value.count;
            row->enabled += value.time_enabled;
            row->running += value.time_running;
        }
    }
}

/*
 * An event's flags for target: a workload's are inherited but with -i,
 * the clocks never (perfmon refuses an inherited clock).
 */
static unsigned int
perf_stat_count_flags(const struct perf_stat *stat,
                      const struct perf_stat_event *ev)
{
    if (stat->target.work != NULL && !stat->no_inherit && !ev->ev.clock) {
        return ev->ev.flags | PERFMON_EF_INHERIT;
    }

    return ev->ev.flags;
}

static int
perf_stat_count_attach_one(const struct perf_stat *stat,
                           struct perf_stat_event *ev,
                           const struct perf_stat_target *target,
                           unsigned int i)
{
    struct perfmon_event *event = &ev->events[i];
    int error;

    error = perfmon_event_init(event, ev->ev.id,
                               perf_stat_count_flags(stat, ev));

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
perf_stat_count_attach(const struct perf_stat *stat,
                       struct perf_stat_event *ev,
                       const struct perf_stat_target *target)
{
    for (unsigned int i = 0; i < target->nr; i++) {
        int error = perf_stat_count_attach_one(stat, ev, target, i);

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

/*
 * Whether an event goes into the group (-g's, or -e's {...}): the
 * clocks never do (perfmon groups take no clock).
 */
static bool
perf_stat_count_in_group(const struct perf_stat_event *ev)
{
    return ev->in_group && !ev->ev.clock;
}

/*
 * Attach the group's events as one group per target (every event
 * counts, or none does, with every member's error set). groups: one per
 * target.
 */
static int
perf_stat_count_attach_groups(struct perf_stat *stat,
                              struct perfmon_group *groups)
{
    const struct perf_stat_target *target = &stat->target;
    unsigned int j;
    int error = 0;

    for (j = 0; error == 0 && j < target->nr; j++) {
        perfmon_group_init(&groups[j]);

        for (unsigned int i = 0; error == 0 && i < stat->nr_events; i++) {
            struct perf_stat_event *ev = &stat->events[i];

            if (!perf_stat_count_in_group(ev)) {
                continue;
            }

            error = perfmon_event_init(&ev->events[j], ev->ev.id,
                                       perf_stat_count_flags(stat, ev));

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
        if (perf_stat_count_in_group(&stat->events[i])) {
            stat->events[i].error = error;
            stat->events[i].nr_attached = error ? 0 : target->nr;
        }
    }

    return error;
}

/* Why the group cannot count, in one line. */
static void
perf_stat_count_group_error(const struct perf_stat *stat, int error)
{
    const struct perf_stat_event *events = stat->events;
    struct perfmon_dev_info dev;
    unsigned int nr_distinct = 0;
    bool sw = false;

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        unsigned int j;

        if (!perf_stat_count_in_group(&events[i])) {
            continue;
        }

        sw = (events[i].ev.flags & PERFMON_EF_SW) != 0;

        for (j = 0; j < i; j++) {
            if (perf_stat_count_in_group(&events[j])
                && events[j].ev.id == events[i].ev.id
                && events[j].ev.flags == events[i].ev.flags) {
                break;
            }
        }

        nr_distinct += (j == i);
    }

    if (error == E2BIG && perfmon_dev_info(sw, &dev) == 0) {
        printf("perf stat: the group cannot count: %u distinct events, %u "
               "counters (E2BIG)\n", nr_distinct, dev.nr_counters);
    } else {
        printf("perf stat: the group cannot count: %s (%s)%s\n",
               errno_name(error), errno_str(error),
               (error == EINVAL) ? "; hardware and software events cannot "
                                   "share a group" : "");
    }
}

/*
 * --per-thread: one line per thread an event counted, its name and id
 * (every thread an inherited event counted is named after the thread it
 * was attached to: a workload's threads create their own kind), as
 * Linux's "comm-tid" lines; with -i, the workload's first threads only.
 */
static void
perf_stat_count_per_thread_line(const struct perf_stat *stat,
                                const struct perf_stat_event *ev,
                                const char *name, uint32_t tid,
                                uint64_t count, uint64_t enabled)
{
    char who[PERF_STAT_NAME_SIZE + 16], value[32], line[160];

    snprintf(who, sizeof(who), "%s-%u", name, (unsigned int)tid);

    if (stat->sep != '\0') {
        printf("%s%c%llu%c%s%c%s\n", who, stat->sep,
               (unsigned long long)(ev->ev.clock ? enabled : count),
               stat->sep, ev->ev.clock ? "ns" : "", stat->sep, ev->name);
        return;
    }

    if (ev->ev.clock) {
        perf_num_format_msec(value, sizeof(value), enabled);
    } else {
        perf_num_format_count(value, sizeof(value), count);
    }

    snprintf(line, sizeof(line), "%16s %18s %-4s %s", who, value,
             ev->ev.clock ? "msec" : "", ev->name);
    printf("%s\n", line);
}

static void
perf_stat_count_per_thread(const struct perf_stat *stat)
{
    const struct perf_stat_target *target = &stat->target;
    struct perfmon_member_value *values = NULL;
    unsigned int max = 0;

    if (stat->sep == '\0') {
        printf("\n Per-thread counts for '%s':\n\n", target->desc);
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        const struct perf_stat_event *ev = &stat->events[i];

        for (unsigned int t = 0; t < ev->nr_attached; t++) {
            struct perfmon_event *event = &ev->events[t];
            const char *name = thread_name(target->work->threads[t]);
            struct perfmon_value value;
            unsigned int nr = 0;
            int error;

            if (ev->error != 0) {
                continue;
            }

            /* -i: the thread alone. */
            if (!(event->flags & PERFMON_EF_INHERIT)) {
                if (perfmon_event_read_value(event, &value) == 0) {
                    perf_stat_count_per_thread_line(
                        stat, ev, name,
                        thread_id(target->work->threads[t]), value.count,
                        value.time_enabled);
                }

                continue;
            }

            /* Threads are still being created: size up until it fits. */
            for (;;) {
                error = perfmon_event_read_members(event, values, max, &nr);

                if (error != E2BIG) {
                    break;
                }

                kmem_free(values);
                max = nr + 16;
                values = kmem_alloc(max * sizeof(values[0]));

                if (values == NULL) {
                    error = ENOMEM;
                    max = 0;
                    break;
                }
            }

            if (error) {
                perf_util_error("cannot read the threads", error);
                continue;
            }

            for (unsigned int k = 0; k < nr; k++) {
                perf_stat_count_per_thread_line(stat, ev, name,
                                                values[k].tid,
                                                values[k].count,
                                                values[k].time_enabled);
            }
        }
    }

    kmem_free(values);
}

/* What one run of perf stat holds while it counts. */
struct perf_stat_count_run {
    struct perf_work work;
    struct perfmon_group *groups;       /* -g: one per target */
    bool groups_attached;
    uint64_t start_tsc;
    uint64_t last_ns;                   /* -I: time of the last print */
    bool interrupted;
};

static uint64_t
perf_stat_count_ns_since(uint64_t start_tsc)
{
    return perf_num_muldiv(cpu_get_tsc() - start_tsc, 1000000,
                           cpu_get_freq()) * 1000;
}

/* -I: print what was counted since the last print. */
static void
perf_stat_count_interval(struct perf_stat *stat,
                         struct perf_stat_count_run *run)
{
    struct perf_stat_row rows[PERF_STAT_MAX_EVENTS];
    uint64_t values[PERF_STAT_MAX_EVENTS];
    uint64_t now = perf_stat_count_ns_since(run->start_tsc);

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perf_stat_event *ev = &stat->events[i];
        struct perf_stat_row row;

        perf_stat_count_read(ev, &row);
        rows[i] = (struct perf_stat_row){
            .count = row.count - ev->last.count,
            .enabled = row.enabled - ev->last.enabled,
            .running = row.running - ev->last.running,
        };
        ev->last = row;
        values[i] = perf_stat_count_value(stat, ev, &rows[i]);
    }

    perf_stat_print_counts(stat, rows, values, NULL, now - run->last_ns, now);
    run->last_ns = now;
}

/* Wait until the run ends: time, workload, Ctrl-C; print -I's counts. */
static void
perf_stat_count_wait(struct perf_stat *stat,
                     struct perf_stat_count_run *run)
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

        if (next != 0 && perf_stat_count_ns_since(run->start_tsc) >= next) {
            perf_stat_count_interval(stat, run);
            next += stat->interval_ms * 1000000;
        }

        thread_delay(1);
    }

    perf_work_stop(&run->work);
}

static void
perf_stat_count_detach(struct perf_stat *stat,
                       struct perf_stat_count_run *run)
{
    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perf_stat_event *ev = &stat->events[i];

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

int
perf_stat_count_run(struct perf_stat *stat, unsigned int nr_run,
                    bool *interruptedp)
{
    struct perf_stat_target *target = &stat->target;
    struct perf_stat_count_run run = { .work = { .go = false } };
    unsigned int nr_counted = 0;
    int error = 0;

    if (stat->work_kind != NULL) {
        error = perf_work_start(&run.work, stat->work_kind,
                                stat->work_value, stat->work_value2);

        if (error == EINVAL) {
            printf("perf stat: the workload is spin MS (1 to %llu), "
                   "pingpong N or calltree N (1 to %llu), fanout N DEPTH "
                   "(N 1 to %u, DEPTH 0 to %u), not '%s %s%s%s'\n",
                   PERF_WORK_MAX_MS, PERF_WORK_MAX_ROUNDS,
                   PERF_WORK_FANOUT_MAX_N, PERF_WORK_FANOUT_MAX_DEPTH,
                   stat->work_kind, stat->work_value,
                   (stat->work_value2 != NULL) ? " " : "",
                   (stat->work_value2 != NULL) ? stat->work_value2 : "");
            goto join;
        } else if (error) {
            perf_util_error("cannot start the workload", error);
            goto join;
        }

        if (target->word == NULL) {
            target->work = &run.work;
            target->nr = run.work.nr_threads;
            snprintf(target->desc, sizeof(target->desc), "%s %s%s%s",
                     stat->work_kind, stat->work_value,
                     (stat->work_value2 != NULL) ? " " : "",
                     (stat->work_value2 != NULL) ? stat->work_value2 : "");
        }
    }

    /*
     * The time elapsed spans the attaches and the detaches, as the CPU
     * events' times do: a clock never shows more CPUs than there are.
     */
    run.start_tsc = cpu_get_tsc();

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perf_stat_event *ev = &stat->events[i];

        ev->error = 0;
        ev->nr_attached = 0;
        ev->attached = false;
        ev->last = (struct perf_stat_row){ 0 };
        ev->events = kmem_zalloc(target->nr * sizeof(ev->events[0]));

        if (ev->events == NULL) {
            error = ENOMEM;
        }
    }

    if (stat->grouped && error == 0) {
        run.groups = kmem_zalloc(target->nr * sizeof(run.groups[0]));
        error = (run.groups == NULL)
                ? ENOMEM : perf_stat_count_attach_groups(stat, run.groups);

        if (error) {
            perf_stat_count_group_error(stat, error);
        }

        run.groups_attached = (error == 0);
    }

    if (error == ENOMEM) {
        perf_util_error("cannot count", error);
        goto free;
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perf_stat_event *ev = &stat->events[i];

        if (!perf_stat_count_in_group(ev)) {
            perf_stat_count_attach(stat, ev, target);
        }

        nr_counted += (ev->error == 0);
    }

    if (nr_counted == 0) {
        /* The group's members have had their line. */
        for (unsigned int i = 0; i < stat->nr_events; i++) {
            if (!perf_stat_count_in_group(&stat->events[i])) {
                perf_util_error(stat->events[i].name,
                                stat->events[i].error);
            }
        }

        printf("perf: no event can be counted\n");
        error = ENODEV;
        goto free;
    }

    error = 0;
    perf_work_go(&run.work);
    perf_stat_count_wait(stat, &run);

    if (stat->per_thread) {
        perf_stat_count_per_thread(stat);
    }

    perf_stat_count_detach(stat, &run);
    stat->elapsed[nr_run] = perf_stat_count_ns_since(run.start_tsc);

    if (stat->interval_ms != 0
        && stat->elapsed[nr_run] > run.last_ns + 1000000) {
        perf_stat_count_interval(stat, &run);
    }

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        struct perf_stat_event *ev = &stat->events[i];
        struct perf_stat_row row;

        perf_stat_count_read(ev, &row);
        ev->sum.count += row.count;
        ev->sum.enabled += row.enabled;
        ev->sum.running += row.running;
        ev->values[nr_run] = perf_stat_count_value(stat, ev, &row);
    }

    *interruptedp = run.interrupted;

free:
    perf_stat_count_detach(stat, &run);
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
