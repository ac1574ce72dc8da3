/*
 * Reading the shell's last recording (made by perf record,
 * kern/perf_record.h):
 *
 *   perf report
 *   perf script
 *
 * perf report prints the functions the samples fell in, most sampled
 * first; perf script prints the last recording as a dump that
 * tools/perf-convert turns into Linux perf script text or folded stacks
 * (format in README, "From the console to a flame graph").
 */
#ifndef KERN_PERF_REPORT_H
#define KERN_PERF_REPORT_H

/*
 * The perf subcommands kern/perf_cmd.c dispatches to, argv as the shell
 * passes it ("perf", "report"). Each prints its result, the usage when
 * given arguments, or "perf: no recording yet" before the first perf
 * record; perf report prints "perf: report: ENOMEM" when it cannot
 * allocate its function table. Shell thread only.
 */
void perf_report_cmd_report(int argc, char **argv);
void perf_report_cmd_script(int argc, char **argv);

#endif /* KERN_PERF_REPORT_H */
