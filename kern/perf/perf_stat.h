/*
 * perf stat, the counting half of the shell's perf command
 * (kern/perf/perf_cmd.c dispatches to it; usage in kern/perf/perf_stat.c).
 */
#ifndef KERN_PERF_STAT_H
#define KERN_PERF_STAT_H

/*
 * perf stat, argv as the shell passes it ("perf", "stat", ...). Prints the
 * counts, or a message saying what was wrong with its arguments. Shell
 * thread only.
 */
void perf_stat_cmd(int argc, char **argv);

/* Print perf stat's usage. Any thread context. */
void perf_stat_usage(void);

#endif /* KERN_PERF_STAT_H */
