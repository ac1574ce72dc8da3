/*
 * Choice of a frequency from calibration windows: pure code, called by
 * the architecture's calibration with the windows it measured against a
 * reference clock, and compiled unchanged into the host tests.
 *
 * A window is one measurement of the counter under calibration (the TSC)
 * against a reference clock of known frequency: how far each advanced
 * between two endpoints, and how far off the counter's figure may be
 * because each endpoint could only be read within a bracket of counter
 * ticks. clock_calib_select() rejects the windows that cannot be trusted
 * on their own (a wrap of the reference, an endpoint whose read was
 * stretched by a stall), then requires most of the rest to agree with
 * their median and returns the median of those that agree.
 */
#ifndef KERN_CLOCK_CALIB_H
#define KERN_CLOCK_CALIB_H

#include <stdbool.h>
#include <stdint.h>

#define CLOCK_CALIB_MAX_WINDOWS 16

/*
 * A window is trusted on its own when its endpoints and the reference's
 * resolution leave at most this error (parts per million).
 */
#define CLOCK_CALIB_MAX_ERROR_PPM 1000

/*
 * Two trusted windows are both within CLOCK_CALIB_MAX_ERROR_PPM of the
 * true frequency, so they differ by at most twice that: a trusted window
 * further than this from the median is an outlier that its own bounds
 * failed to catch.
 */
#define CLOCK_CALIB_AGREE_PPM (2 * CLOCK_CALIB_MAX_ERROR_PPM)

/* Fewest agreeing windows that make an estimate. */
#define CLOCK_CALIB_MIN_AGREE 3

struct clock_calib_window {
    uint64_t tsc_ticks;     /* counter ticks between the endpoint midpoints */
    uint64_t tsc_error;     /* how far tsc_ticks may be off (half-brackets) */
    uint64_t ref_ticks;     /* reference ticks; 0: the window is known bad */
};

struct clock_calib_result {
    uint64_t freq;          /* estimate in Hz (0 on failure) */
    uint32_t spread_ppm;    /* (max - min) / freq over agreeing windows */
    unsigned int nr_trusted; /* windows that passed their own checks */
    unsigned int nr_agree;  /* trusted windows within the median's range */
};

/*
 * Estimate the counter's frequency in Hz from windows[0..nr_windows)
 * measured against a reference of ref_hz. Return 0 with the estimate in
 * *result; EAGAIN when fewer than CLOCK_CALIB_MIN_AGREE trusted windows,
 * or not more than half of them, agree with the median (measure again),
 * with the counts filled in; EINVAL when nr_windows exceeds
 * CLOCK_CALIB_MAX_WINDOWS or ref_hz is 0. Any context.
 */
int clock_calib_select(const struct clock_calib_window *windows,
                       unsigned int nr_windows, uint64_t ref_hz,
                       struct clock_calib_result *result);

/*
 * The frequency one window gives, or 0 when it cannot be trusted on its
 * own (see CLOCK_CALIB_MAX_ERROR_PPM). Any context.
 */
uint64_t clock_calib_window_freq(const struct clock_calib_window *window,
                                 uint64_t ref_hz);

/*
 * Return true when freq is within CLOCK_CALIB_AGREE_PPM of reference
 * (which is not 0). Any context.
 */
bool clock_calib_agree(uint64_t freq, uint64_t reference);

#endif /* KERN_CLOCK_CALIB_H */
