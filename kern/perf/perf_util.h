/*
 * What the perf shell subcommands share: perf list (kern/perf/perf_list.c),
 * perf stat (kern/perf/perf_stat*.c) and perf record, report, annotate
 * and script (kern/perf/perf_record*.c, perf_report.c, perf_annotate.c,
 * perf_script.c) take the same event names, print errors and shares
 * alike and stop on Ctrl-C. The perf command itself
 * (kern/perf/perf_cmd.c) dispatches to them; this file depends on neither, so
 * the includes go one way: perf_cmd, then the subcommands, then
 * perf_util.
 */
#ifndef KERN_PERF_UTIL_H
#define KERN_PERF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/thread.h>

/* The longest event name the perf commands take, with its NUL. */
#define PERF_UTIL_NAME_SIZE 32

/*
 * An event as the perf commands name it. A clock (task-clock, cpu-clock)
 * is perfmon's clock (PERFMON_EF_CLOCK): no device's event, it holds no
 * counter and counts nanoseconds.
 */
struct perf_util_event {
    uint64_t id;            /* for perfmon_event_init */
    unsigned int flags;     /* for perfmon_event_init */
    bool clock;             /* task-clock or cpu-clock */
};

/*
 * Parse an event name as the perf commands take it (generic hardware
 * events and Linux's other names for them, raw:0xCODE, software events
 * and their Linux names, the clocks task-clock and cpu-clock) into *ev,
 * for perfmon_event_init. Modifiers: :k (kernel), :u (user) or both;
 * software events and clocks happen in kernel mode only, so they take :k
 * and refuse :u. Return 0, or EINVAL after a message that names what was
 * wrong (unknown name, unknown modifier, a colon with no modifier after
 * it, :u on a software event, PERF_UTIL_NAME_SIZE characters or more)
 * and what is allowed, *ev then unchanged. Thread context.
 */
int perf_util_parse_event(const char *name, struct perf_util_event *ev);

/*
 * Whether word, where a subcommand (cmd: "perf stat", "perf record")
 * takes an event list, is rather a command: a workload without its --
 * (spin), or a name that is no event, as Linux's perf stat sleep 1.
 * Then print that, with the workloads, and return true. A list, a name
 * with modifiers, or an event is left to the event parser and its
 * messages (false). Thread context.
 */
bool perf_util_refuse_command(const char *cmd, const char *word);

/*
 * Parse a CPU list, "0,2-3", into cpus (room for CPU_MAX), each once, in
 * the order given. Return 0, or EINVAL after a message naming the bad
 * part and the valid range (an offline CPU, too, says so). Thread
 * context.
 */
int perf_util_parse_cpus(const char *list, unsigned int *cpus,
                         unsigned int *nr_cpusp);

/* Every online CPU, in order, into cpus; return how many. Any context. */
unsigned int perf_util_online_cpus(unsigned int *cpus);

/*
 * Parse a thread id (as the perf dumps print it) and find the thread:
 * return 0 with a referenced thread, or EINVAL after a message (not a
 * number, the idle threads' 0, no such thread). Thread context.
 */
int perf_util_parse_tid(const char *word, struct thread **threadp);

/*
 * The share part / total as "NN.NN%" (no padding) into buf; return what
 * snprintf returns. 0.00% when total is 0. Any context.
 */
int perf_util_format_pct(char *buf, size_t size, uint64_t part,
                         uint64_t total);

/* Print the same share, its whole part padded to 6 columns. Thread context. */
void perf_util_print_pct(uint64_t part, uint64_t total);

/* Print "perf: WHAT: ERRNO (sentence)". Thread context. */
void perf_util_error(const char *what, int error);

/*
 * Whether Ctrl-C was typed (consumed); other input typed meanwhile stays
 * for the shell, in order. Shell thread only.
 */
bool perf_util_interrupted(void);

#endif /* KERN_PERF_UTIL_H */
