/*
 * What the perfmon_torture suite's files (test_perfmon_torture.c,
 * test_perfmon_torture_sampling.c) share: how many operations and target
 * threads a run has, and a target's random migration. The boot options
 * torture.ops (operations per CPU) and torture.seed (the random sequence's
 * seed) are declared in torture_util.c and read by both tests.
 */
#ifndef TESTS_PERFMON_TORTURE_UTIL_H
#define TESTS_PERFMON_TORTURE_UTIL_H

#include <stdint.h>

#include <machine/cpu.h>

#define TORTURE_OPS_TOTAL       6000    /* default, spread over the CPUs */
#define TORTURE_OPS_MIN         200     /* default floor per CPU */
#define TORTURE_TARGETS_PER_CPU 2
#define TORTURE_MAX_TARGETS     (CPU_MAX * TORTURE_TARGETS_PER_CPU)
#define TORTURE_BURST_MAX       50

/*
 * Move the calling target to a random non-empty set of CPUs. Thread
 * context.
 */
void torture_migrate(uint64_t r);

#endif /* TESTS_PERFMON_TORTURE_UTIL_H */
