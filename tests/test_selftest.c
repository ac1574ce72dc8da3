/*
 * Tests that fail or hang on purpose, so that `make check` can verify the
 * runner reports a failure, a panic and a hang (they are manual tests,
 * never part of test=all).
 */
#include <kern/test.h>
#include <machine/cpu.h>

TEST_DEFINE_MANUAL(selftest, deliberate_failure)
{
    TEST_ASSERT_EQ(1 + 1, 3);
}

TEST_DEFINE_MANUAL(selftest, hang)
{
    test_diag("hanging on purpose");
    cpu_halt_forever();
}
