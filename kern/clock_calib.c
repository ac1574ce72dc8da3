/*
 * Choice of a frequency from calibration windows. Pure code: no kernel
 * services, so the host tests compile it unchanged.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock_calib.h>
#include <kern/errno.h>
#include <kern/macros.h>

#define CLOCK_CALIB_PPM 1000000

uint64_t
clock_calib_window_freq(const struct clock_calib_window *window,
                        uint64_t ref_hz)
{
    uint64_t error_ppm;

    /*
     * An endpoint bracket as long as the window is a stall, and the
     * bound on tsc_ticks keeps every product below 2^64.
     */
    if (window->ref_ticks == 0 || window->tsc_ticks == 0
        || window->tsc_error >= window->tsc_ticks
        || window->tsc_ticks > UINT64_MAX / MAX(ref_hz, CLOCK_CALIB_PPM)) {
        return 0;
    }

    /*
     * The counter's figure is off by at most tsc_error; each endpoint
     * reads the reference within one of its ticks.
     */
    error_ppm = window->tsc_error * CLOCK_CALIB_PPM / window->tsc_ticks
                + CLOCK_CALIB_PPM / window->ref_ticks;

    if (error_ppm > CLOCK_CALIB_MAX_ERROR_PPM) {
        return 0;
    }

    return window->tsc_ticks * ref_hz / window->ref_ticks;
}

static void
clock_calib_insert_sorted(uint64_t *array, unsigned int n, uint64_t value)
{
    unsigned int i = n;

    while (i > 0 && array[i - 1] > value) {
        array[i] = array[i - 1];
        i--;
    }

    array[i] = value;
}

bool
clock_calib_agree(uint64_t freq, uint64_t reference)
{
    uint64_t diff = (freq > reference) ? freq - reference : reference - freq;

    /* Products of two 64-bit values: 128 bits, multiplications only. */
    return (unsigned __int128)diff * CLOCK_CALIB_PPM
           <= (unsigned __int128)reference * CLOCK_CALIB_AGREE_PPM;
}

static uint32_t
clock_calib_spread_ppm(uint64_t min, uint64_t max, uint64_t freq)
{
    uint64_t diff = max - min;

    /*
     * The product overflows only for absurd frequencies (diff is at most
     * 2 * CLOCK_CALIB_AGREE_PPM of freq); there, dividing first loses
     * nothing that matters.
     */
    if (diff <= UINT64_MAX / CLOCK_CALIB_PPM) {
        return (uint32_t)(diff * CLOCK_CALIB_PPM / freq);
    }

    return (uint32_t)(diff / (freq / CLOCK_CALIB_PPM));
}

int
clock_calib_select(const struct clock_calib_window *windows,
                   unsigned int nr_windows, uint64_t ref_hz,
                   struct clock_calib_result *result)
{
    uint64_t trusted[CLOCK_CALIB_MAX_WINDOWS];
    uint64_t agree[CLOCK_CALIB_MAX_WINDOWS];
    unsigned int nr_trusted = 0, nr_agree = 0;
    uint64_t median;

    result->freq = 0;
    result->spread_ppm = 0;
    result->nr_trusted = 0;
    result->nr_agree = 0;

    if (nr_windows > CLOCK_CALIB_MAX_WINDOWS || ref_hz == 0) {
        return EINVAL;
    }

    for (unsigned int i = 0; i < nr_windows; i++) {
        uint64_t freq = clock_calib_window_freq(&windows[i], ref_hz);

        if (freq != 0) {
            clock_calib_insert_sorted(trusted, nr_trusted, freq);
            nr_trusted++;
        }
    }

    result->nr_trusted = nr_trusted;

    if (nr_trusted == 0) {
        return EAGAIN;
    }

    /*
     * A window that its own bounds trust can still be wrong when its
     * reference missed a wrap it could not detect. While most windows
     * are right, the median is right and the wrong ones fall outside its
     * range, whatever their number and direction.
     */
    median = trusted[(nr_trusted - 1) / 2];

    for (unsigned int i = 0; i < nr_trusted; i++) {
        if (clock_calib_agree(trusted[i], median)) {
            agree[nr_agree++] = trusted[i];
        }
    }

    result->nr_agree = nr_agree;

    if (nr_agree < CLOCK_CALIB_MIN_AGREE || 2 * nr_agree <= nr_trusted) {
        return EAGAIN;
    }

    result->freq = agree[(nr_agree - 1) / 2];
    result->spread_ppm = clock_calib_spread_ppm(agree[0],
                                                agree[nr_agree - 1],
                                                result->freq);
    return 0;
}
