/*
 * perf list: every event the perf commands take, with a one-line
 * description (kern/perf/perf_cmd.c dispatches to it).
 */
#ifndef KERN_PERF_LIST_H
#define KERN_PERF_LIST_H

/*
 * perf list, argv as the shell passes it ("perf", "list"): every event
 * with a one-line description, the hardware ones marked when this
 * machine cannot count them, or a message when given arguments. Shell
 * thread only.
 */
void perf_list_cmd(int argc, char **argv);

/* Print perf list's usage. Any thread context. */
void perf_list_usage(void);

#endif /* KERN_PERF_LIST_H */
