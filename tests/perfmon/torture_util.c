/*
 * What the perfmon_torture suite's files share (torture_util.h).
 */
#include <stdint.h>

#include <kern/arg.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "torture_util.h"

/* Boot options: operations per CPU, the random sequence's seed. */
ARG_DEFINE_U64("torture.ops", 1, UINT64_MAX);
ARG_DEFINE_U64("torture.seed", 0, UINT64_MAX);

/* Move the calling target to a random non-empty set of CPUs. */
void
torture_migrate(uint64_t r)
{
    uint64_t mask = r >> 16;

    /* No shift by 64: with 64 CPUs every bit names one. */
    if (cpu_count() < 64) {
        mask &= (1ULL << cpu_count()) - 1;
    }

    if (mask != 0) {
        TEST_ASSERT_EQ(thread_set_affinity(thread_self(), mask), 0);
    }
}
