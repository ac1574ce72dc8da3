/*
 * Host tests of the timers' expiry arithmetic (kern/timer.h) at the ends
 * of the 64-bit range, where a deadline of now + ticks would wrap.
 */
#include <stdint.h>

#include <kern/timer.h>

#include "host_test.h"

HOST_TEST(expiry_after_adds_in_range)
{
    HOST_ASSERT_EQ(timer_expiry_after(0, 0), 0);
    HOST_ASSERT_EQ(timer_expiry_after(0, 1), 1);
    HOST_ASSERT_EQ(timer_expiry_after(505, 5), 510);
    HOST_ASSERT_EQ(timer_expiry_after(0, UINT64_MAX), UINT64_MAX);
    HOST_ASSERT_EQ(timer_expiry_after(UINT64_MAX, 0), UINT64_MAX);
}

HOST_TEST(expiry_after_reaches_the_end_exactly)
{
    HOST_ASSERT_EQ(timer_expiry_after(UINT64_MAX - 1, 1), UINT64_MAX);
    HOST_ASSERT_EQ(timer_expiry_after(1, UINT64_MAX - 1), UINT64_MAX);
    HOST_ASSERT_EQ(timer_expiry_after(UINT64_MAX / 2, UINT64_MAX / 2 + 1),
                   UINT64_MAX);
}

/* Past the end: UINT64_MAX (never), not the wrapped, earlier value. */
HOST_TEST(expiry_after_saturates_past_the_end)
{
    HOST_ASSERT_EQ(timer_expiry_after(UINT64_MAX, 1), UINT64_MAX);
    HOST_ASSERT_EQ(timer_expiry_after(505, UINT64_MAX), UINT64_MAX);
    HOST_ASSERT_EQ(timer_expiry_after(UINT64_MAX - 1, 2), UINT64_MAX);
    HOST_ASSERT_EQ(timer_expiry_after(UINT64_MAX, UINT64_MAX), UINT64_MAX);
    HOST_ASSERT_EQ(timer_expiry_after(UINT64_MAX / 2 + 1, UINT64_MAX / 2 + 1),
                   UINT64_MAX);
}

HOST_TEST_MAIN()
