/*
 * What the perf shell subcommands share: perf stat and perf list
 * (kern/perfmon_shell.c) and perf record, report and script
 * (kern/perf_record.c, kern/perf_report.c) take the same event names,
 * print errors alike and stop on Ctrl-C. The perf command itself
 * (kern/perf_cmd.c) dispatches to them; this file depends on neither, so
 * the includes go one way: perf_cmd, then the subcommands, then
 * perf_util.
 */
#ifndef KERN_PERF_UTIL_H
#define KERN_PERF_UTIL_H

#include <stdbool.h>
#include <stdint.h>

/* The longest event name the perf commands take, with its NUL. */
#define PERF_UTIL_NAME_SIZE 32

/*
 * Parse an event name as the perf commands take it (generic hardware
 * events with an optional :k or :u, raw:0xCODE, software events and their
 * Linux names) into an event id and flags for perfmon_event_init. Return
 * 0, or EINVAL (unknown name, or one of PERF_UTIL_NAME_SIZE characters or
 * more), leaving *idp and *flagsp unchanged. Any context.
 */
int perf_util_parse_event_name(const char *name, uint64_t *idp,
                               unsigned int *flagsp);

/* Print "perf: WHAT: ERRNO (sentence)". Thread context. */
void perf_util_error(const char *what, int error);

/*
 * Whether Ctrl-C was typed; other input typed meanwhile is dropped. Shell
 * thread only.
 */
bool perf_util_interrupted(void);

#endif /* KERN_PERF_UTIL_H */
