/*
 * perfmon's shell commands:
 *
 *   perf list
 *   perf stat <cpu N | thread NAME> <event>[,<event>...] <ms>
 *
 * Event names: the generic hardware events (cycles, instructions, ...),
 * the software events (cswitch, migration, tick, xcall, emit, emit1..7),
 * and raw hardware codes as raw:0xCODE. A hardware event counts kernel and
 * user mode; a ":k" or ":u" suffix restricts it to one.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/shell.h>
#include <kern/string.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#define PERFMON_SHELL_MAX_EVENTS 8U
#define PERFMON_SHELL_NAME_SIZE  32

struct perfmon_shell_event {
    char name[PERFMON_SHELL_NAME_SIZE];
    unsigned int id;
    unsigned int flags;
    struct perfmon_event event;
};

static void
perfmon_shell_error(const char *what, int error)
{
    printf("perf: %s: %s (%s)\n", what, errno_name(error), errno_str(error));
}

static void
perfmon_shell_list(void)
{
    struct perfmon_dev *hw = perfmon_get_dev(false);
    struct perfmon_dev *sw = perfmon_get_dev(true);

    if (hw == NULL) {
        printf("hardware events: none (no hardware PMU on this machine)\n");
    } else {
        printf("hardware events (%s, %u counters, :k kernel / :u user "
               "only):\n", hw->name, hw->nr_pmcs);
    }

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        int error = perfmon_event_check(id, PERFMON_EF_KERN
                                            | PERFMON_EF_USER);

        printf("  %-20s %s\n", perfmon_generic_name(id),
               (error == 0) ? "available" : "unavailable");
    }

    if (hw != NULL) {
        printf("  %-20s %s\n", "raw:0xCODE",
               "raw event code, validated by the driver");
    }

    if (sw != NULL) {
        printf("software events (%s, %u counters of %u bits):\n", sw->name,
               sw->nr_pmcs, sw->min_width);

        for (unsigned int id = 0; id < PMU_SOFT_NR_EVENTS; id++) {
            printf("  %-20s available\n", pmu_soft_event_name(id));
        }
    }
}

/* Parse one event name into id and flags. Return 0 or EINVAL. */
static int
perfmon_shell_parse_event(struct perfmon_shell_event *ev)
{
    unsigned int ring = PERFMON_EF_KERN | PERFMON_EF_USER;
    char name[PERFMON_SHELL_NAME_SIZE];
    char *colon;

    strlcpy(name, ev->name, sizeof(name));
    colon = strchr(name, ':');

    if (colon != NULL && strcmp(colon, ":k") == 0) {
        ring = PERFMON_EF_KERN;
        *colon = '\0';
    } else if (colon != NULL && strcmp(colon, ":u") == 0) {
        ring = PERFMON_EF_USER;
        *colon = '\0';
    }

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        if (strcmp(name, perfmon_generic_name(id)) == 0) {
            ev->id = id;
            ev->flags = ring;
            return 0;
        }
    }

    if (strncmp(name, "raw:", 4) == 0) {
        unsigned long long code;

        if (string_parse_u64(name + 4, &code) != 0 || code > 0xffffffffULL) {
            return EINVAL;
        }

        ev->id = (unsigned int)code;
        ev->flags = ring | PERFMON_EF_RAW;
        return 0;
    }

    if (colon != NULL) {
        return EINVAL;  /* ring suffixes are for hardware events */
    }

    for (unsigned int id = 0; id < PMU_SOFT_NR_EVENTS; id++) {
        if (strcmp(name, pmu_soft_event_name(id)) == 0) {
            ev->id = id;
            ev->flags = PERFMON_EF_SW;
            return 0;
        }
    }

    return EINVAL;
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

        memcpy(events[n].name, p, len);
        events[n].name[len] = '\0';

        if (perfmon_shell_parse_event(&events[n]) != 0) {
            printf("perf: unknown event '%s' (see perf list)\n",
                   events[n].name);
            return -1;
        }

        n++;
        p += len + (comma != NULL);
    }

    return n;
}

static void
perfmon_shell_stat(int argc, char **argv)
{
    struct perfmon_shell_event events[PERFMON_SHELL_MAX_EVENTS];
    struct thread *thread = NULL;
    unsigned long long cpu = 0, ms;
    int n, attached = 0, error;

    if (argc != 6) {
        printf("usage: perf stat <cpu N | thread NAME> <event>[,<event>...] "
               "<ms>\n");
        return;
    }

    if (strcmp(argv[2], "cpu") == 0) {
        if (string_parse_u64(argv[3], &cpu) != 0 || cpu >= cpu_count()) {
            perfmon_shell_error("bad CPU", EINVAL);
            return;
        }
    } else if (strcmp(argv[2], "thread") == 0) {
        thread = thread_lookup(argv[3]);

        if (thread == NULL) {
            printf("perf: no thread named '%s' (see threads)\n", argv[3]);
            return;
        }
    } else {
        printf("perf: target must be 'cpu N' or 'thread NAME'\n");
        return;
    }

    if (string_parse_u64(argv[5], &ms) != 0 || ms == 0 || ms > 60000) {
        perfmon_shell_error("duration must be 1 to 60000 ms", EINVAL);
        goto out;
    }

    n = perfmon_shell_parse_events(argv[4], events);

    if (n < 0) {
        goto out;
    }

    for (attached = 0; attached < n; attached++) {
        struct perfmon_shell_event *ev = &events[attached];

        error = perfmon_event_init(&ev->event, ev->id, ev->flags);

        if (error == 0) {
            error = (thread != NULL)
                    ? perfmon_event_attach(&ev->event, thread)
                    : perfmon_event_attach_cpu(&ev->event,
                                               (unsigned int)cpu);
        }

        if (error) {
            perfmon_shell_error(ev->name, error);
            goto detach;
        }
    }

    thread_delay(clock_ticks_from_ms(ms));

    if (thread != NULL) {
        printf("perf stat thread %s, %llu ms:\n", thread_name(thread), ms);
    } else {
        printf("perf stat cpu %llu, %llu ms:\n", cpu, ms);
    }

detach:
    for (int i = 0; i < attached; i++) {
        perfmon_event_detach(&events[i].event);

        if (attached == n) {
            printf("%20llu  %s\n",
                   (unsigned long long)perfmon_event_read(&events[i].event),
                   events[i].name);
        }
    }

out:
    if (thread != NULL) {
        thread_unref(thread);
    }
}

static void
perfmon_shell_perf(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "list") == 0) {
        perfmon_shell_list();
    } else if (argc >= 2 && strcmp(argv[1], "stat") == 0) {
        perfmon_shell_stat(argc, argv);
    } else {
        printf("usage: perf list | perf stat <cpu N | thread NAME> "
               "<event>[,<event>...] <ms>\n");
    }
}

SHELL_CMD_DEFINE(perfmon_shell_perf, "perf", "list|stat ...",
                 "list events; count events on a CPU or thread");
