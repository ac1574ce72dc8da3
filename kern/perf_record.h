/*
 * The shell's sampling profiler: perf record, perf report, perf script.
 *
 *   perf record <cpu N | thread NAME | all> <event>[/PERIOD] <MS>
 *   perf report
 *   perf script
 *
 * perf record samples one event for MS milliseconds into a perfmon
 * session (one ring per CPU) with call chains of PERF_RECORD_NR_FRAMES
 * frames, drains the rings into the kernel's buffer of the last recording
 * (PERF_RECORD_BUF_SIZE bytes; what does not fit is counted) and prints
 * the samples received, lost and throttled. perf report prints the
 * functions the samples fell in, most sampled first; perf script prints
 * the last recording as a dump that tools/perf-convert turns into Linux
 * perf script text or folded stacks (format in README, "From the console
 * to a flame graph").
 */
#ifndef KERN_PERF_RECORD_H
#define KERN_PERF_RECORD_H

#define PERF_RECORD_BUF_SIZE    (256U << 10)
#define PERF_RECORD_NR_FRAMES   8U

/*
 * The perf subcommands kern/perf_cmd.c dispatches to, argv as the shell
 * passes it ("perf", "record", ...). Each prints its result or a message
 * saying what was wrong with its arguments. Shell thread only.
 */
void perf_record_cmd_record(int argc, char **argv);
void perf_record_cmd_report(int argc, char **argv);
void perf_record_cmd_script(int argc, char **argv);

/* Print the usage of the three subcommands. Any thread context. */
void perf_record_usage(void);

#endif /* KERN_PERF_RECORD_H */
