/*
 * Host tests of the choice of a frequency from calibration windows
 * (kern/clock_calib.c), with synthetic windows: good ones, ones stalled
 * the ways a descheduled vCPU stalls them, and sets that must be refused.
 *
 * Most use a 1 MHz reference and 4000-tick (4 ms) windows, where a
 * window's frequency is exactly 250 times its TSC ticks.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/clock_calib.h>
#include <kern/errno.h>

#include "host_test.h"

#define REF_HZ      1000000
#define REF_TICKS   4000
#define ERROR       100         /* TSC ticks: 10 ppm of a window */

/* 2445 MHz, the host of the incident, in TSC ticks per 4 ms window. */
#define GOOD        9780000

static struct clock_calib_window
window(uint64_t tsc_ticks, uint64_t tsc_error, uint64_t ref_ticks)
{
    struct clock_calib_window w = { tsc_ticks, tsc_error, ref_ticks };

    return w;
}

static struct clock_calib_window
good(uint64_t tsc_ticks)
{
    return window(tsc_ticks, ERROR, REF_TICKS);
}

static int
select_windows(const struct clock_calib_window *windows, unsigned int n,
               struct clock_calib_result *result)
{
    return clock_calib_select(windows, n, REF_HZ, result);
}

HOST_TEST(agreeing_windows_give_their_median_and_spread)
{
    struct clock_calib_window w[] = {
        good(GOOD + 200), good(GOOD - 400), good(GOOD),
        good(GOOD + 400), good(GOOD - 200),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(select_windows(w, 5, &r), 0);
    HOST_ASSERT_EQ(r.freq, 2445000000);
    HOST_ASSERT_EQ(r.nr_trusted, 5);
    HOST_ASSERT_EQ(r.nr_agree, 5);
    /* 800 ticks * 250 Hz per tick / 2445 MHz = 81.8 ppm. */
    HOST_ASSERT_EQ(r.spread_ppm, 81);
}

HOST_TEST(order_of_windows_does_not_matter)
{
    static const uint64_t ticks[5] = { GOOD + 300, GOOD - 100, GOOD + 50,
                                       GOOD - 350, 2 * GOOD };
    struct clock_calib_result first, r;

    for (unsigned int rot = 0; rot < 5; rot++) {
        struct clock_calib_window w[5];

        for (unsigned int i = 0; i < 5; i++) {
            w[i] = good(ticks[(i + rot) % 5]);
        }

        HOST_ASSERT_EQ(select_windows(w, 5, &r), 0);

        if (rot == 0) {
            first = r;
        }

        HOST_ASSERT_EQ(r.freq, first.freq);
        HOST_ASSERT_EQ(r.spread_ppm, first.spread_ppm);
        HOST_ASSERT_EQ(r.nr_agree, 4);
    }

    HOST_ASSERT_EQ(first.freq, (uint64_t)(GOOD - 100) * 250);
}

/*
 * The incident: the old calibration polled the PIT's output and read the
 * TSC after a stall, so its window held 5225.956 MHz worth of ticks on a
 * 2445 MHz host. Among good windows such a window is outvoted, whatever
 * its bracket says.
 */
HOST_TEST(window_read_late_after_stall_is_outvoted)
{
    struct clock_calib_window w[] = {
        good(GOOD + 100), good(20903824), good(GOOD - 100),
        good(GOOD), good(GOOD + 200),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(select_windows(w, 5, &r), 0);
    HOST_ASSERT_EQ(r.freq, (uint64_t)GOOD * 250);
    HOST_ASSERT_EQ(r.nr_trusted, 5);
    HOST_ASSERT_EQ(r.nr_agree, 4);
    /* The outlier is not in the spread: 300 ticks, 30 ppm. */
    HOST_ASSERT_EQ(r.spread_ppm, 30);
}

/*
 * A stall between reading the reference and reading the TSC at an
 * endpoint widens that endpoint's bracket: 50 ms of stall is an error of
 * half of it, far over budget, so the window is not trusted at all.
 */
HOST_TEST(stall_inside_endpoint_bracket_rejects_window)
{
    struct clock_calib_window w[] = {
        good(GOOD), window(GOOD + 61125000, 61125000, REF_TICKS),
        good(GOOD + 100), good(GOOD - 100),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(clock_calib_window_freq(&w[1], REF_HZ), 0);
    HOST_ASSERT_EQ(select_windows(w, 4, &r), 0);
    HOST_ASSERT_EQ(r.nr_trusted, 3);
    HOST_ASSERT_EQ(r.nr_agree, 3);
    HOST_ASSERT_EQ(r.freq, (uint64_t)GOOD * 250);
}

/*
 * The error budget is exact: bracket error plus one reference tick per
 * window (4000 ticks: 250 ppm) may reach CLOCK_CALIB_MAX_ERROR_PPM.
 */
HOST_TEST(error_budget_boundary)
{
    struct clock_calib_window at = window(10000000, 7500, REF_TICKS);
    struct clock_calib_window over = window(10000000, 7510, REF_TICKS);
    struct clock_calib_window coarse = window(10000000, 0, 999);

    HOST_ASSERT_EQ(CLOCK_CALIB_MAX_ERROR_PPM, 1000);
    HOST_ASSERT_EQ(clock_calib_window_freq(&at, REF_HZ), 2500000000);
    HOST_ASSERT_EQ(clock_calib_window_freq(&over, REF_HZ), 0);
    /* Too few reference ticks: their resolution alone is over budget. */
    HOST_ASSERT_EQ(clock_calib_window_freq(&coarse, REF_HZ), 0);
}

/* A reference that reported a wrap (ref_ticks 0) makes no window. */
HOST_TEST(wrapped_window_rejected)
{
    struct clock_calib_window w[] = {
        window(GOOD, ERROR, 0), good(GOOD), good(GOOD + 10),
        good(GOOD + 20),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(clock_calib_window_freq(&w[0], REF_HZ), 0);
    HOST_ASSERT_EQ(select_windows(w, 4, &r), 0);
    HOST_ASSERT_EQ(r.nr_trusted, 3);
    HOST_ASSERT_EQ(r.freq, (uint64_t)(GOOD + 10) * 250);
}

/* Every window trusted on its own, no two alike: measure again. */
HOST_TEST(all_inconsistent_windows_rejected)
{
    struct clock_calib_window w[] = {
        good(9600000), good(12400000), good(14800000),
        good(17600000), good(20800000),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(select_windows(w, 5, &r), EAGAIN);
    HOST_ASSERT_EQ(r.freq, 0);
    HOST_ASSERT_EQ(r.nr_trusted, 5);
    HOST_ASSERT_EQ(r.nr_agree, 1);
}

/* Just outside the agreement range of the median is an outlier. */
HOST_TEST(agreement_range_boundary)
{
    /* 2000 ppm of 10000000 ticks is 20000. */
    struct clock_calib_window in[] = {
        good(10000000), good(10000000), good(10020000),
    };
    struct clock_calib_window out[] = {
        good(10000000), good(10000000), good(10020001),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(CLOCK_CALIB_AGREE_PPM, 2000);
    HOST_ASSERT_EQ(select_windows(in, 3, &r), 0);
    HOST_ASSERT_EQ(r.nr_agree, 3);
    HOST_ASSERT_EQ(select_windows(out, 3, &r), EAGAIN);
    HOST_ASSERT_EQ(r.nr_agree, 2);
}

/* The range is CLOCK_CALIB_AGREE_PPM of the reference, either side. */
HOST_TEST(agree_range_either_side_without_overflow)
{
    HOST_ASSERT(clock_calib_agree(1002000, 1000000));
    HOST_ASSERT(!clock_calib_agree(1002001, 1000000));
    HOST_ASSERT(clock_calib_agree(998000, 1000000));
    HOST_ASSERT(!clock_calib_agree(997999, 1000000));
    HOST_ASSERT(clock_calib_agree(UINT64_MAX,
                                  UINT64_MAX - UINT64_MAX / 1000));
    HOST_ASSERT(!clock_calib_agree(UINT64_MAX, UINT64_MAX / 2));
}

/* Stalled windows in the majority leave no majority around the median. */
HOST_TEST(stalled_majority_rejected)
{
    struct clock_calib_window w[] = {
        good(GOOD), good(GOOD + 50), good(12000000), good(16000000),
        good(20000000),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(select_windows(w, 5, &r), EAGAIN);
    HOST_ASSERT_EQ(r.nr_trusted, 5);
    HOST_ASSERT_EQ(r.nr_agree, 1);
}

/* Two groups of three that agree among themselves: no majority. */
HOST_TEST(split_vote_rejected)
{
    struct clock_calib_window w[] = {
        good(GOOD), good(20903824), good(GOOD + 10),
        good(20903834), good(GOOD - 10), good(20903814),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(select_windows(w, 6, &r), EAGAIN);
    HOST_ASSERT_EQ(r.nr_trusted, 6);
    HOST_ASSERT_EQ(r.nr_agree, 3);
}

/* Fewer than CLOCK_CALIB_MIN_AGREE windows never make an estimate. */
HOST_TEST(too_few_windows_rejected)
{
    struct clock_calib_window w[] = {
        good(GOOD), good(GOOD), window(GOOD, ERROR, 0), good(GOOD),
    };
    struct clock_calib_result r;

    HOST_ASSERT_EQ(CLOCK_CALIB_MIN_AGREE, 3);
    HOST_ASSERT_EQ(select_windows(w, 0, &r), EAGAIN);
    HOST_ASSERT_EQ(select_windows(w, 2, &r), EAGAIN);
    HOST_ASSERT_EQ(r.nr_agree, 2);
    HOST_ASSERT_EQ(select_windows(w, 3, &r), EAGAIN);
    HOST_ASSERT_EQ(r.nr_trusted, 2);
    HOST_ASSERT_EQ(select_windows(w, 4, &r), 0);
    HOST_ASSERT_EQ(r.nr_agree, 3);
}

HOST_TEST(invalid_arguments)
{
    struct clock_calib_window w[CLOCK_CALIB_MAX_WINDOWS + 1];
    struct clock_calib_result r;

    for (unsigned int i = 0; i < CLOCK_CALIB_MAX_WINDOWS + 1; i++) {
        w[i] = good(GOOD);
    }

    HOST_ASSERT_EQ(select_windows(w, CLOCK_CALIB_MAX_WINDOWS + 1, &r),
                   EINVAL);
    HOST_ASSERT_EQ(clock_calib_select(w, 5, 0, &r), EINVAL);
    HOST_ASSERT_EQ(select_windows(w, CLOCK_CALIB_MAX_WINDOWS, &r), 0);
    HOST_ASSERT_EQ(r.nr_agree, CLOCK_CALIB_MAX_WINDOWS);
}

/*
 * Degenerate windows are refused, not computed with a wrapped product:
 * an empty window, one so long that ticks * ref_hz exceeds 2^64, and an
 * error whose ppm figure would wrap to 0 (2^58 * 10^6 = 15625 * 2^64).
 */
HOST_TEST(degenerate_windows_refused)
{
    struct clock_calib_window empty = window(0, 0, REF_TICKS);
    struct clock_calib_window huge = window(UINT64_MAX / 2, 0, UINT32_MAX);
    struct clock_calib_window wild = window(GOOD, 1ULL << 58, REF_TICKS);

    HOST_ASSERT_EQ(clock_calib_window_freq(&empty, REF_HZ), 0);
    HOST_ASSERT_EQ(clock_calib_window_freq(&huge, 3579545), 0);
    HOST_ASSERT_EQ(clock_calib_window_freq(&wild, REF_HZ), 0);
}

/*
 * The kernel's case: the ACPI PM timer (3.579545 MHz), 4 ms windows of
 * 14318 ticks with a few hundred TSC ticks of bracket and jitter.
 */
HOST_TEST(pm_timer_windows_at_2445_mhz)
{
    static const int64_t jitter[5] = { 300, -250, 120, -40, 200 };
    struct clock_calib_window w[5];
    struct clock_calib_result r;
    uint64_t tsc = 2445000000ULL * 14318 / 3579545;

    for (unsigned int i = 0; i < 5; i++) {
        w[i] = window(tsc + jitter[i], 250, 14318);
    }

    HOST_ASSERT_EQ(clock_calib_select(w, 5, 3579545, &r), 0);
    HOST_ASSERT_EQ(r.nr_agree, 5);
    /* The median window is tsc + 120 ticks: 12 ppm above 2445 MHz. */
    HOST_ASSERT(r.freq > 2445000000ULL);
    HOST_ASSERT(r.freq - 2445000000ULL < 2445 * 15);
}

HOST_TEST_MAIN()
