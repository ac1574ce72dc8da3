/*
 * TSC calibration: the boot figure against a second reference clock, and
 * windows stalled on purpose, the way a descheduled vCPU stalls them.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock_calib.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/test.h>
#include <machine/cpu.h>
#include <machine/tsc.h>

#define TEST_CLOCK_WINDOW_US    5000
#define TEST_CLOCK_NR_WINDOWS   5
#define TEST_CLOCK_ATTEMPTS     5

/*
 * Longer than one turn of the PIT's 16-bit counter (65536 / 1193182 Hz,
 * 55 ms), and much shorter than one of the 24-bit PM timer (4.7 s).
 */
#define TEST_CLOCK_LONG_STALL_MS    80

/* Well within one turn of the PIT's counter. */
#define TEST_CLOCK_SHORT_STALL_MS   20

/* Spin, interrupts and preemption left as they are: a stall. */
static void
test_clock_stall_ms(unsigned int ms)
{
    uint64_t start = cpu_get_tsc();
    uint64_t ticks = cpu_get_freq() / 1000 * ms;

    while (cpu_get_tsc() - start < ticks) {
        cpu_pause();
    }
}

/* |freq - cpu_get_freq()| must be at most ppm parts per million. */
static void
test_clock_assert_near(const char *what, uint64_t freq, uint64_t ppm)
{
    uint64_t boot = cpu_get_freq();
    uint64_t diff = (freq > boot) ? freq - boot : boot - freq;

    test_diag("%s: %llu Hz, boot calibration %llu Hz (%s)", what,
              (unsigned long long)freq, (unsigned long long)boot,
              tsc_get_calibration()->method);
    TEST_ASSERT_LE(diff, boot / 1000000 * ppm);
}

/*
 * The reference the boot calibration did not end with, so that the
 * check does not share its clock.
 */
static const struct tsc_ref *
test_clock_other_ref(void)
{
    const struct tsc_ref *used = tsc_get_calibration()->ref;

    if (used == tsc_ref_pit()) {
        return tsc_ref_pm_timer();
    }

    return tsc_ref_pit();
}

/*
 * The frequency of the trusted window with the smallest error among
 * several, or 0 when none is trusted.
 */
static uint64_t
test_clock_best_window(const struct tsc_ref *ref)
{
    struct clock_calib_window windows[TEST_CLOCK_NR_WINDOWS];
    uint64_t best_freq = 0, best_error = UINT64_MAX;

    tsc_measure(ref, TEST_CLOCK_WINDOW_US, windows, ARRAY_SIZE(windows));

    for (size_t i = 0; i < ARRAY_SIZE(windows); i++) {
        uint64_t freq = clock_calib_window_freq(&windows[i],
                                                tsc_ref_hz(ref));

        if (freq != 0 && windows[i].tsc_error < best_error) {
            best_freq = freq;
            best_error = windows[i].tsc_error;
        }
    }

    return best_freq;
}

/* The calibrated frequency against an independent measurement, 2%. */
TEST_DEFINE(clock, tsc_freq_agrees_with_second_reference)
{
    const struct tsc_ref *ref = test_clock_other_ref();
    uint64_t freq = 0;

    if (ref == NULL) {
        test_skip("no second reference clock (no ACPI PM timer)");
    }

    for (unsigned int i = 0; i < TEST_CLOCK_ATTEMPTS && freq == 0; i++) {
        freq = test_clock_best_window(ref);
    }

    TEST_ASSERT_NE(freq, 0);
    test_clock_assert_near(tsc_ref_name(ref), freq, 20000);
}

/*
 * The failure the PIT used to hide: a stall longer than its counter's
 * turn. The window is flagged (its output latched the wrap), rejected on
 * its own, and the selection over it and good windows ignores it.
 */
TEST_DEFINE(clock, pit_window_stalled_past_wrap_is_rejected)
{
    struct clock_calib_window windows[TEST_CLOCK_NR_WINDOWS];
    struct clock_calib_result result;
    const struct tsc_ref *pit = tsc_ref_pit();
    struct tsc_window window;
    size_t last = ARRAY_SIZE(windows) - 1;

    tsc_measure(pit, TEST_CLOCK_WINDOW_US, windows, last);
    tsc_window_begin(&window, pit);
    test_clock_stall_ms(TEST_CLOCK_LONG_STALL_MS);
    tsc_window_end(&window, &windows[last]);

    TEST_ASSERT_EQ(windows[last].ref_ticks, 0);
    TEST_ASSERT_EQ(clock_calib_window_freq(&windows[last],
                                           tsc_ref_hz(pit)), 0);

    TEST_ASSERT_EQ(clock_calib_select(&windows[last], 1, tsc_ref_hz(pit),
                                      &result), EAGAIN);
    TEST_ASSERT_EQ(result.nr_trusted, 0);

    /* The good windows may lose one to a real stall: retry those. */
    for (unsigned int i = 0; i < TEST_CLOCK_ATTEMPTS; i++) {
        if (clock_calib_select(windows, ARRAY_SIZE(windows),
                               tsc_ref_hz(pit), &result) == 0) {
            break;
        }

        tsc_measure(pit, TEST_CLOCK_WINDOW_US, windows, last);
    }

    TEST_ASSERT_EQ(clock_calib_select(windows, ARRAY_SIZE(windows),
                                      tsc_ref_hz(pit), &result), 0);
    TEST_ASSERT_LE(result.nr_trusted, last);
    test_clock_assert_near("pit windows around a stalled one", result.freq,
                           20000);
}

/*
 * A stall between the endpoints is counted by the reference and the TSC
 * alike: the window stays trusted and right. A trusted window is within
 * CLOCK_CALIB_MAX_ERROR_PPM of the truth, so 0.5% leaves room for the
 * boot calibration's own error and nothing for a stall miscounted.
 */
static uint64_t
test_clock_stalled_window(const struct tsc_ref *ref, unsigned int stall_ms)
{
    struct clock_calib_window result;
    struct tsc_window window;
    uint64_t freq = 0;

    for (unsigned int i = 0; i < TEST_CLOCK_ATTEMPTS && freq == 0; i++) {
        tsc_window_begin(&window, ref);
        test_clock_stall_ms(stall_ms);
        tsc_window_end(&window, &result);
        freq = clock_calib_window_freq(&result, tsc_ref_hz(ref));
    }

    return freq;
}

TEST_DEFINE(clock, pit_window_survives_short_stall)
{
    uint64_t freq;

    freq = test_clock_stalled_window(tsc_ref_pit(),
                                     TEST_CLOCK_SHORT_STALL_MS);
    TEST_ASSERT_NE(freq, 0);
    test_clock_assert_near("pit window, 20 ms stall", freq, 5000);
}

TEST_DEFINE(clock, pm_timer_window_survives_long_stall)
{
    const struct tsc_ref *pm_timer = tsc_ref_pm_timer();
    uint64_t freq;

    if (pm_timer == NULL) {
        test_skip("no ACPI PM timer");
    }

    freq = test_clock_stalled_window(pm_timer, TEST_CLOCK_LONG_STALL_MS);
    TEST_ASSERT_NE(freq, 0);
    test_clock_assert_near("acpi_pm_timer window, 80 ms stall", freq, 5000);
}
