/*
 * TSC calibration against the ACPI PM timer or PIT channel 2, with CPUID
 * leaves 15H and 16H where they enumerate a frequency.
 *
 * Why windows with brackets. A vCPU can be descheduled at any instant for
 * tens of milliseconds on a loaded host. The reference clocks here count
 * real time (a hypervisor derives them from the host's clock) and keep
 * counting meanwhile, as does the TSC, so a stall between a window's
 * endpoints costs nothing. A stall
 * between reading the reference and reading the TSC at an endpoint would
 * skew the window: each endpoint reads the reference between two TSC
 * reads, keeps the narrowest of a few such brackets, and reports half
 * its width as the error; kern/clock_calib.c rejects windows whose error
 * is too large. What remains is a wrap of the reference during a stall:
 * the PIT (16 bits at 1.19 MHz, 55 ms) reports it through its output;
 * the PM timer (24 bits at 3.58 MHz, 4.7 s) cannot, and the consistency
 * check across windows catches the window such a stall spoils.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock_calib.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/panic.h>
#include <machine/acpi.h>
#include <machine/cpu.h>
#include <machine/io.h>
#include <machine/pit.h>
#include <machine/tsc.h>

/* ACPI 6.5 section 4.8.3.3: the PM timer counts at 3.579545 MHz. */
#define TSC_PM_TIMER_HZ         3579545

/* Brackets per endpoint; the narrowest one is kept. */
#define TSC_SAMPLE_TRIES        4

/*
 * Five windows of 4 ms: 20 ms at boot, and windows long enough that a
 * bracket of a few microseconds per endpoint stays within the error
 * budget (CLOCK_CALIB_MAX_ERROR_PPM). Up to three rounds when windows
 * disagree.
 */
#define TSC_WINDOW_US           4000
#define TSC_WINDOWS_PER_ROUND   5

/*
 * A window whose wait lasts this many TSC ticks (0.4 s at 10 GHz, 4 s at
 * 1 GHz) is abandoned: the reference does not count.
 */
#define TSC_WINDOW_TIMEOUT      (1ULL << 32)

#define TSC_CPUID_LEAF_TSC      0x15
#define TSC_CPUID_LEAF_FREQ     0x16

struct tsc_ref {
    const char *name;
    uint64_t hz;
    unsigned int bits;
    void (*start)(void);        /* may be NULL */
    uint32_t (*read)(void);     /* counts up, modulo 2^bits */
    bool (*wrapped)(void);      /* a wrap since start; NULL: cannot tell */
    void (*stop)(void);         /* may be NULL */
};

static uint16_t tsc_pm_timer_port;

static uint32_t
tsc_pm_timer_read(void)
{
    return io_read_long(tsc_pm_timer_port);
}

static uint32_t
tsc_pit_read(void)
{
    return pit_counter_read();
}

static struct tsc_ref tsc_pm_timer = {
    .name = "acpi_pm_timer",
    .hz = TSC_PM_TIMER_HZ,
    .bits = 24,
    .read = tsc_pm_timer_read,
};

static const struct tsc_ref tsc_pit = {
    .name = "pit",
    .hz = PIT_FREQ,
    .bits = 16,
    .start = pit_counter_start,
    .read = tsc_pit_read,
    .wrapped = pit_counter_wrapped,
    .stop = pit_counter_stop,
};

static struct tsc_calibration tsc_calibration;

const struct tsc_ref *
tsc_ref_pm_timer(void)
{
    return (tsc_pm_timer_port != 0) ? &tsc_pm_timer : NULL;
}

const struct tsc_ref *
tsc_ref_pit(void)
{
    return &tsc_pit;
}

const char *
tsc_ref_name(const struct tsc_ref *ref)
{
    return ref->name;
}

uint64_t
tsc_ref_hz(const struct tsc_ref *ref)
{
    return ref->hz;
}

unsigned int
tsc_ref_bits(const struct tsc_ref *ref)
{
    return ref->bits;
}

static uint32_t
tsc_ref_elapsed(const struct tsc_ref *ref, uint32_t from, uint32_t to)
{
    return (uint32_t)((to - from) & ((1ULL << ref->bits) - 1));
}

/*
 * Read the reference between two TSC reads; keep the narrowest bracket,
 * its midpoint and its width.
 */
static void
tsc_sample(const struct tsc_ref *ref, uint64_t *tsc, uint64_t *width,
           uint32_t *value)
{
    *width = UINT64_MAX;

    for (unsigned int i = 0; i < TSC_SAMPLE_TRIES; i++) {
        uint64_t before = cpu_get_tsc();
        uint32_t read = ref->read();
        uint64_t after = cpu_get_tsc();

        if (after - before < *width) {
            *width = after - before;
            *tsc = before + *width / 2;
            *value = read;
        }
    }
}

void
tsc_window_begin(struct tsc_window *window, const struct tsc_ref *ref)
{
    window->ref = ref;
    window->timed_out = false;

    if (ref->start != NULL) {
        ref->start();
    }

    tsc_sample(ref, &window->tsc, &window->tsc_width, &window->ref_start);
}

void
tsc_window_wait(struct tsc_window *window, unsigned int us)
{
    const struct tsc_ref *ref = window->ref;
    uint32_t target = (uint32_t)(ref->hz * us / 1000000);
    uint64_t start = cpu_get_tsc();

    while (tsc_ref_elapsed(ref, window->ref_start, ref->read()) < target) {
        if (cpu_get_tsc() - start > TSC_WINDOW_TIMEOUT) {
            window->timed_out = true;
            return;
        }

        cpu_pause();
    }
}

void
tsc_window_end(struct tsc_window *window,
               struct clock_calib_window *result)
{
    const struct tsc_ref *ref = window->ref;
    uint64_t tsc, width;
    uint32_t value;
    bool wrapped;

    tsc_sample(ref, &tsc, &width, &value);
    wrapped = (ref->wrapped != NULL) && ref->wrapped();

    if (ref->stop != NULL) {
        ref->stop();
    }

    result->tsc_ticks = tsc - window->tsc;
    result->tsc_error = DIV_CEIL(window->tsc_width, 2) + DIV_CEIL(width, 2);

    if (wrapped || window->timed_out) {
        result->ref_ticks = 0;
    } else {
        result->ref_ticks = tsc_ref_elapsed(ref, window->ref_start, value);
    }
}

void
tsc_measure(const struct tsc_ref *ref, unsigned int us,
            struct clock_calib_window *windows, unsigned int nr_windows)
{
    for (unsigned int i = 0; i < nr_windows; i++) {
        struct tsc_window window;

        tsc_window_begin(&window, ref);
        tsc_window_wait(&window, us);
        tsc_window_end(&window, &windows[i]);
    }
}

uint64_t
tsc_cpuid_freq(void)
{
    uint32_t max, eax, ebx, ecx, edx;

    cpu_cpuid(0, 0, &max, &ebx, &ecx, &edx);

    if (max < TSC_CPUID_LEAF_TSC) {
        return 0;
    }

    /* Intel SDM vol. 2A, CPUID leaf 15H: zeros mean "not enumerated". */
    cpu_cpuid(TSC_CPUID_LEAF_TSC, 0, &eax, &ebx, &ecx, &edx);

    if (eax == 0 || ebx == 0 || ecx == 0) {
        return 0;
    }

    return (uint64_t)ecx * ebx / eax;
}

/* CPUID leaf 16H EAX[15:0]: the processor base frequency in MHz. */
static uint64_t
tsc_cpuid_base_freq(void)
{
    uint32_t max, eax, ebx, ecx, edx;

    cpu_cpuid(0, 0, &max, &ebx, &ecx, &edx);

    if (max < TSC_CPUID_LEAF_FREQ) {
        return 0;
    }

    cpu_cpuid(TSC_CPUID_LEAF_FREQ, 0, &eax, &ebx, &ecx, &edx);
    return (uint64_t)(eax & 0xffff) * 1000000;
}

static int
tsc_calibrate_against(const struct tsc_ref *ref,
                      struct tsc_calibration *cal)
{
    struct clock_calib_window windows[CLOCK_CALIB_MAX_WINDOWS];
    unsigned int nr_windows = 0;
    int error = EAGAIN;

    while (error == EAGAIN
           && nr_windows + TSC_WINDOWS_PER_ROUND <= ARRAY_SIZE(windows)) {
        tsc_measure(ref, TSC_WINDOW_US, &windows[nr_windows],
                    TSC_WINDOWS_PER_ROUND);
        nr_windows += TSC_WINDOWS_PER_ROUND;
        error = clock_calib_select(windows, nr_windows, ref->hz,
                                   &cal->result);
    }

    cal->ref = ref;
    cal->nr_windows = nr_windows;
    cal->error = error;
    return error;
}

void
tsc_calibrate(void)
{
    struct tsc_calibration *cal = &tsc_calibration;
    const struct tsc_ref *refs[2];
    uint64_t cpuid_freq, base_freq;
    unsigned int bits;
    uint16_t port;
    int error = ENOENT;

    if (acpi_get_pm_timer(&port, &bits) == 0) {
        tsc_pm_timer_port = port;
        tsc_pm_timer.bits = bits;
    }

    refs[0] = tsc_ref_pm_timer();
    refs[1] = tsc_ref_pit();

    for (size_t i = 0; i < ARRAY_SIZE(refs) && error != 0; i++) {
        if (refs[i] != NULL) {
            error = tsc_calibrate_against(refs[i], cal);
        }
    }

    /*
     * Leaf 15H is exact when right, but a hypervisor may pass the host's
     * leaf through over a TSC that it scales: it wins only when the
     * measurement confirms it, and stands in when none succeeded.
     */
    cpuid_freq = tsc_cpuid_freq();
    base_freq = tsc_cpuid_base_freq();

    if (error == 0) {
        cal->freq = cal->result.freq;
        cal->method = cal->ref->name;

        if (cpuid_freq != 0 && clock_calib_agree(cpuid_freq, cal->freq)) {
            cal->freq = cpuid_freq;
            cal->method = "cpuid 15h";
        }
    } else if (cpuid_freq != 0) {
        cal->freq = cpuid_freq;
        cal->method = "cpuid 15h";
    } else if (base_freq != 0) {
        /* The base frequency, not the TSC's: near it on most parts. */
        cal->freq = base_freq;
        cal->method = "cpuid 16h";
    } else {
        panic("tsc: calibration failed: %s: %u of %u windows agree",
              cal->ref->name, cal->result.nr_agree, cal->nr_windows);
    }
}

const struct tsc_calibration *
tsc_get_calibration(void)
{
    return &tsc_calibration;
}
