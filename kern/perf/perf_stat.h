/*
 * perf list and perf stat, the counting half of the shell's perf command
 * (kern/perf/perf_cmd.c dispatches to them; usage in kern/perf/perf_stat.c).
 */
#ifndef KERN_PERFMON_SHELL_H
#define KERN_PERFMON_SHELL_H

/*
 * perf list: every event with a one-line description, the hardware ones
 * marked when this machine cannot count them. Shell thread only.
 */
void perfmon_shell_list(void);

/*
 * perf stat, argv as the shell passes it ("perf", "stat", ...). Prints the
 * counts, or a message saying what was wrong with its arguments. Shell
 * thread only.
 */
void perfmon_shell_stat(int argc, char **argv);

/* Print perf stat's usage. Any thread context. */
void perfmon_shell_stat_usage(void);

#endif /* KERN_PERFMON_SHELL_H */
