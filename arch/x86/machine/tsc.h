/*
 * TSC calibration. The clock module calls tsc_calibrate() once at boot;
 * the tests measure the TSC again against a reference of their choice.
 *
 * The TSC is measured in windows against a reference clock that keeps
 * counting while the vCPU is descheduled: the ACPI PM timer when the FADT
 * has one, else PIT channel 2. Each endpoint of a window reads the
 * reference between two TSC reads, so a stall there shows as a wide
 * bracket, and a stall between the endpoints is counted by both clocks
 * alike. kern/clock_calib.c chooses from the windows; CPUID leaf 15H,
 * when it enumerates the frequency and the measurement confirms it,
 * gives the exact figure.
 */
#ifndef X86_TSC_H
#define X86_TSC_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/clock_calib.h>

struct tsc_ref;

/*
 * What the boot calibration did. method names where freq comes from: a
 * reference's name, or "cpuid 15h" (the measurement confirmed it, or no
 * reference gave an estimate), or "cpuid 16h" (no reference gave one).
 */
struct tsc_calibration {
    uint64_t freq;                      /* Hz */
    const char *method;
    const struct tsc_ref *ref;          /* the last reference measured */
    int error;                          /* its selection's result */
    unsigned int nr_windows;            /* windows measured against it */
    struct clock_calib_result result;   /* their selection */
};

/* A window in progress; see tsc_window_begin. */
struct tsc_window {
    const struct tsc_ref *ref;
    uint64_t tsc;           /* midpoint of the start bracket */
    uint64_t tsc_width;     /* width of the start bracket */
    uint32_t ref_start;
    bool timed_out;
};

/*
 * The ACPI PM timer (NULL when the FADT describes none) and PIT channel
 * 2. Any context, once tsc_calibrate has run.
 */
const struct tsc_ref *tsc_ref_pm_timer(void);
const struct tsc_ref *tsc_ref_pit(void);

/* A reference's name ("acpi_pm_timer", "pit") and frequency in Hz. */
const char *tsc_ref_name(const struct tsc_ref *ref);
uint64_t tsc_ref_hz(const struct tsc_ref *ref);

/* A reference's counter width in bits (the PM timer has 24 or 32). */
unsigned int tsc_ref_bits(const struct tsc_ref *ref);

/*
 * Measure one window: start the reference and take the start sample;
 * tsc_window_wait spins until the reference has advanced us
 * microseconds; tsc_window_end takes the end sample and describes the
 * window (ref_ticks 0 when the reference reports a wrap, or the wait
 * timed out). Whatever runs between begin and end is part of the
 * window: the tests stall there on purpose. One window at a time on a
 * reference; thread context or boot.
 */
void tsc_window_begin(struct tsc_window *window, const struct tsc_ref *ref);
void tsc_window_wait(struct tsc_window *window, unsigned int us);
void tsc_window_end(struct tsc_window *window,
                    struct clock_calib_window *result);

/*
 * Measure nr_windows windows of us microseconds each, one after the
 * other, against ref. Thread context or boot.
 */
void tsc_measure(const struct tsc_ref *ref, unsigned int us,
                 struct clock_calib_window *windows, unsigned int nr_windows);

/*
 * Calibrate the TSC and record the result; panic when no method works.
 * Boot only, once, after acpi_setup.
 */
void tsc_calibrate(void);

/* The boot calibration. Any context after tsc_calibrate. */
const struct tsc_calibration *tsc_get_calibration(void);

/*
 * The TSC frequency CPUID leaf 15H enumerates (Intel SDM vol. 2A,
 * CPUID, leaf 15H: crystal Hz * EBX / EAX), or 0 when it does not.
 */
uint64_t tsc_cpuid_freq(void);

#endif /* X86_TSC_H */
