/*
 * perf report: the shell's last recording (made by perf record,
 * kern/perf/perf_record.h) summed per function, thread or CPU:
 *
 *   perf report [-g] [--no-children] [--sort symbol,thread,cpu] [--stdio]
 *
 * perf report prints, as Linux's perf report --stdio does, the share of
 * the samples' periods each entry (a function by default; --sort picks
 * the keys) has itself (Self) and with what it called (Children), most
 * first, then the totals; -g adds each function's callers as a tree;
 * --no-children prints Self alone. perf annotate (kern/perf/perf_annotate.h)
 * and perf script (kern/perf/perf_script.h) read the same recording.
 */
#ifndef KERN_PERF_REPORT_H
#define KERN_PERF_REPORT_H

/*
 * The perf subcommand kern/perf/perf_cmd.c dispatches to, argv as the
 * shell passes it ("perf", "report", ...). Prints the report, what was
 * wrong with an option, "perf: no recording yet" before the first perf
 * record, or "perf: report: ENOMEM" when it cannot allocate its tables.
 * Shell thread only.
 */
void perf_report_cmd(int argc, char **argv);

#endif /* KERN_PERF_REPORT_H */
