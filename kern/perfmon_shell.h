/*
 * What perfmon's shell commands (kern/perfmon_shell.c) share with the
 * profiler's (kern/perf_record.c): event names, error messages, Ctrl-C.
 */
#ifndef KERN_PERFMON_SHELL_H
#define KERN_PERFMON_SHELL_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Parse an event name as perf stat takes it (generic hardware events with
 * an optional :k or :u, raw:0xCODE, software events and their Linux
 * names) into an event id and flags for perfmon_event_init. Return 0 or
 * EINVAL (unknown name). Any context.
 */
int perfmon_shell_parse_event_name(const char *name, uint64_t *idp,
                                   unsigned int *flagsp);

/* Print "perf: WHAT: ERRNO (sentence)". Thread context. */
void perfmon_shell_error(const char *what, int error);

/*
 * Whether Ctrl-C was typed; other input typed meanwhile is dropped. Shell
 * thread only.
 */
bool perfmon_shell_interrupted(void);

#endif /* KERN_PERFMON_SHELL_H */
