/*
 * Host tests of perf stat's arithmetic and number formats
 * (kern/perf/perf_num.c), with values worked out by hand.
 */
#include <stdint.h>

#include <kern/perf/perf_num.h>

#include "host_test.h"

HOST_TEST(muldiv_does_not_overflow)
{
    HOST_ASSERT_EQ(perf_num_muldiv(10, 3, 4), 7);
    HOST_ASSERT_EQ(perf_num_muldiv(UINT64_MAX, 1000, 1000), UINT64_MAX);
    HOST_ASSERT_EQ(perf_num_muldiv(1ULL << 62, 1000000000ULL, 1ULL << 40),
                   (1ULL << 22) * 1000000000ULL);
}

HOST_TEST(isqrt_rounds_down)
{
    HOST_ASSERT_EQ(perf_num_isqrt(0), 0);
    HOST_ASSERT_EQ(perf_num_isqrt(1), 1);
    HOST_ASSERT_EQ(perf_num_isqrt(3), 1);
    HOST_ASSERT_EQ(perf_num_isqrt(4), 2);
    HOST_ASSERT_EQ(perf_num_isqrt(1000000), 1000);
    HOST_ASSERT_EQ(perf_num_isqrt(999999), 999);
    HOST_ASSERT_EQ(perf_num_isqrt(UINT64_MAX), 4294967295ULL);
}

HOST_TEST(mean_of_equal_values_has_no_deviation)
{
    uint64_t values[] = { 200, 200, 200 };
    uint64_t dev = 99;

    HOST_ASSERT_EQ(perf_num_mean(values, 3, &dev), 200);
    HOST_ASSERT_EQ(dev, 0);
}

/*
 * 90 and 110: the mean 100, a sample deviation of sqrt(200) = 14.14, of
 * the mean 14.14 / sqrt(2) = 10: 10.00% (as Linux's rel_stddev_stats).
 */
HOST_TEST(mean_deviation_is_of_the_mean_relative_to_it)
{
    uint64_t values[] = { 90, 110 };
    uint64_t three[] = { 100, 110, 120 };
    uint64_t dev;

    HOST_ASSERT_EQ(perf_num_mean(values, 2, &dev), 100);
    HOST_ASSERT_EQ(dev, 1000);
    /* Deviations 10% 0 10% of 110: sqrt((909^2 * 2) / 2 / 3) = 524. */
    HOST_ASSERT_EQ(perf_num_mean(three, 3, &dev), 110);
    HOST_ASSERT_EQ(dev, 524);
}

HOST_TEST(mean_of_huge_values_does_not_overflow)
{
    uint64_t values[] = { UINT64_MAX, UINT64_MAX, UINT64_MAX - 2 };
    uint64_t dev;

    HOST_ASSERT_EQ(perf_num_mean(values, 3, &dev), UINT64_MAX - 1);
    HOST_ASSERT_EQ(dev, 0);
}

HOST_TEST(one_run_or_a_zero_mean_has_no_deviation)
{
    uint64_t one[] = { 5 };
    uint64_t zeros[] = { 0, 0 };
    uint64_t dev = 1;

    HOST_ASSERT_EQ(perf_num_mean(one, 1, &dev), 5);
    HOST_ASSERT_EQ(dev, 0);
    dev = 1;
    HOST_ASSERT_EQ(perf_num_mean(zeros, 2, &dev), 0);
    HOST_ASSERT_EQ(dev, 0);
}

HOST_TEST(count_has_thousands_separators)
{
    char buf[32];

    perf_num_format_count(buf, sizeof(buf), 0);
    HOST_ASSERT_STREQ(buf, "0");
    perf_num_format_count(buf, sizeof(buf), 999);
    HOST_ASSERT_STREQ(buf, "999");
    perf_num_format_count(buf, sizeof(buf), 1000);
    HOST_ASSERT_STREQ(buf, "1,000");
    perf_num_format_count(buf, sizeof(buf), 1234567);
    HOST_ASSERT_STREQ(buf, "1,234,567");
    perf_num_format_count(buf, sizeof(buf), UINT64_MAX);
    HOST_ASSERT_STREQ(buf, "18,446,744,073,709,551,615");
}

HOST_TEST(fixed_and_msec)
{
    char buf[32];

    perf_num_format_fixed(buf, sizeof(buf), 12345, 3);
    HOST_ASSERT_STREQ(buf, "12.345");
    perf_num_format_fixed(buf, sizeof(buf), 7, 2);
    HOST_ASSERT_STREQ(buf, "0.07");
    perf_num_format_msec(buf, sizeof(buf), 1002390000);
    HOST_ASSERT_STREQ(buf, "1,002.39");
    perf_num_format_msec(buf, sizeof(buf), 9999);
    HOST_ASSERT_STREQ(buf, "0.00");
}

HOST_TEST(rate_picks_linux_units)
{
    static const struct {
        uint64_t count, us;
        const char *value, *unit;
    } cases[] = {
        { 30, 300000, "100.000", "/sec" },
        { 999, 1000000, "999.000", "/sec" },
        { 200, 500, "400.000", "K/sec" },
        { 1, 3, "333.333", "K/sec" },
        { 5000, 1000, "5.000", "M/sec" },
        { 3000000, 1000, "3.000", "G/sec" },
    };
    char buf[32];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *unit = perf_num_format_rate(buf, sizeof(buf),
                                                cases[i].count, cases[i].us);

        HOST_ASSERT_STREQ(buf, cases[i].value);
        HOST_ASSERT_STREQ(unit, cases[i].unit);
    }
}

HOST_TEST_MAIN()
