/*
 * Reading the shell's last recording (made by perf record,
 * kern/perf/perf_record.h):
 *
 *   perf report [-g] [--no-children] [--sort symbol,thread,cpu] [--stdio]
 *   perf annotate SYMBOL
 *   perf script [--capture]
 *
 * perf report prints, as Linux's perf report --stdio does, the share of
 * the samples' periods each entry (a function by default; --sort picks
 * the keys) has itself (Self) and with what it called (Children), most
 * first, then the totals; -g adds each function's callers as a tree;
 * --no-children prints Self alone. perf annotate prints one function's
 * samples per instruction address. perf script prints the last recording
 * as a dump that tools/perf/perf-convert turns into Linux perf script text,
 * folded stacks or a perf.data file (format in README, "From the console
 * to a flame graph"); --capture writes it to QEMU's debugcon, the
 * capture channel, instead of the console.
 */
#ifndef KERN_PERF_REPORT_H
#define KERN_PERF_REPORT_H

/*
 * The perf subcommands kern/perf/perf_cmd.c dispatches to, argv as the shell
 * passes it ("perf", "report", ...). Each prints its result, what was
 * wrong with an option, or "perf: no recording yet" before the first
 * perf record; perf report prints "perf: report: ENOMEM" when it cannot
 * allocate its tables. Shell thread only.
 */
void perf_report_cmd_report(int argc, char **argv);
void perf_report_cmd_script(int argc, char **argv);

/*
 * perf annotate SYMBOL: the samples of the last recording whose
 * instruction is in the kernel function SYMBOL, per address, with the
 * offset into the function. Prints the usage without exactly one word,
 * "no function named" for a name the symbol table lacks, and
 * "perf: annotate: ENOMEM" without memory for its table. Shell thread
 * only.
 */
void perf_report_cmd_annotate(int argc, char **argv);

#endif /* KERN_PERF_REPORT_H */
