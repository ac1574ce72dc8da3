/*
 * perf script: the shell's last recording (made by perf record,
 * kern/perf/perf_record.h) as a dump:
 *
 *   perf script [--capture]
 *
 * perf script prints the last recording as a dump that
 * tools/perf/perf-convert turns into Linux perf script text, folded
 * stacks or a perf.data file (format in README, "From the console to a
 * flame graph"); --capture writes it to the console's capture channel
 * (kern/console.h: QEMU's debugcon) instead of the console.
 */
#ifndef KERN_PERF_SCRIPT_H
#define KERN_PERF_SCRIPT_H

/*
 * perf script, argv as the shell passes it ("perf", "script", ...).
 * Prints the dump (or, with --capture, writes it to the capture channel
 * and prints how many lines it wrote), the usage for other arguments, a
 * message when --capture finds no capture channel, or "perf: no
 * recording yet" before the first perf record. Shell thread only.
 */
void perf_script_cmd(int argc, char **argv);

#endif /* KERN_PERF_SCRIPT_H */
