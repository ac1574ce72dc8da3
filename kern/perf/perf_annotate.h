/*
 * perf annotate: one function's share of the shell's last recording (made
 * by perf record, kern/perf/perf_record.h), per instruction address:
 *
 *   perf annotate SYMBOL
 */
#ifndef KERN_PERF_ANNOTATE_H
#define KERN_PERF_ANNOTATE_H

/*
 * perf annotate SYMBOL, argv as the shell passes it ("perf", "annotate",
 * ...): the samples of the last recording whose instruction is in the
 * kernel function SYMBOL, per address, with the offset into the
 * function. Prints the usage without exactly one word, "no function
 * named" for a name the symbol table lacks, "perf: no recording yet"
 * before the first perf record, and "perf: annotate: ENOMEM" without
 * memory for its table. Shell thread only.
 */
void perf_annotate_cmd(int argc, char **argv);

#endif /* KERN_PERF_ANNOTATE_H */
