/*
 * The shell's sampling profiler: perf record.
 *
 *   perf record [-g] [-e EVENT] [-c PERIOD]
 *               [-a | -C CPU | cpu N | thread NAME | all]
 *               [EVENT[/PERIOD]] [MS] [-- spin MS | -- pingpong N |
 *                                      -- calltree N]
 *
 * perf record samples one event (tick when none is named) for MS
 * milliseconds, or while a built-in workload (kern/perf/perf_work.h) runs,
 * into a perfmon session (one ring per CPU) with call chains of
 * PERF_RECORD_NR_FRAMES frames. Without a target it samples the
 * workload's own threads; -a is every online CPU, -C one CPU, -c the
 * period (Linux perf record's spellings). It drains the rings into the
 * kernel's buffer of the last recording (PERF_RECORD_BUF_PER_CPU bytes
 * per online CPU, PERF_RECORD_BUF_MIN at least, PERF_RECORD_BUF_MAX at
 * most; what does not fit is counted) and prints the samples received, lost
 * and throttled. perf report, perf annotate and perf script read the
 * last recording (kern/perf/perf_report.h, perf_annotate.h,
 * perf_script.h).
 */
#ifndef KERN_PERF_RECORD_H
#define KERN_PERF_RECORD_H

/*
 * A recording's buffer grows with the CPUs that may all sample: 32 KiB
 * is about 250 samples with full call chains, a tick sampler's 2.5
 * seconds on each CPU. The maximum is the largest block kmem gives.
 */
#define PERF_RECORD_BUF_PER_CPU (32U << 10)
#define PERF_RECORD_BUF_MIN     (256U << 10)
#define PERF_RECORD_BUF_MAX     (4U << 20)
#define PERF_RECORD_NR_FRAMES   8U

/*
 * The perf subcommand kern/perf/perf_cmd.c dispatches to, argv as the shell
 * passes it ("perf", "record", ...). Prints the totals of the recording,
 * which replaces the last one, or a message saying what was wrong with
 * its arguments or why it could not record (perf: WHAT: ERRNO), leaving
 * the last recording as it was. Shell thread only.
 */
void perf_record_cmd(int argc, char **argv);

/*
 * Print the usage of perf record, perf report and perf script. Any thread
 * context.
 */
void perf_record_usage(void);

#endif /* KERN_PERF_RECORD_H */
