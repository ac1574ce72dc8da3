/*
 * Clock: ticks from the TSC, calibrated at boot (machine/tsc.h).
 */
#include <stdint.h>

#include <kern/clock.h>
#include <kern/assert.h>
#include <kern/clock_calib.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <machine/acpi.h>
#include <machine/cpu.h>
#include <machine/tsc.h>

struct clock_cpu {
    uint64_t last_tick;     /* time of the previous tick interrupt */
    uint64_t nr_ticks;      /* ticks accounted since clock_start_local */
    uint64_t nr_intrs;      /* tick interrupts taken */
};

static uint64_t clock_tsc_boot;
static uint64_t clock_tsc_tick;
static struct clock_cpu clock_cpu __percpu;

uint64_t
clock_get_time(void)
{
    return (cpu_get_tsc() - clock_tsc_boot) / clock_tsc_tick;
}

uint64_t
clock_tsc_per_tick(void)
{
    return clock_tsc_tick;
}

void
clock_start_local(void)
{
    cpu_local_ptr(clock_cpu)->last_tick = clock_get_time();
}

uint64_t
clock_nr_ticks(unsigned int cpu)
{
    assert_msg(cpu < cpu_count(), "clock: no CPU %u", cpu);
    return __atomic_load_n(&percpu_ptr(clock_cpu, cpu)->nr_ticks,
                           __ATOMIC_RELAXED);
}

uint64_t
clock_nr_intrs(unsigned int cpu)
{
    assert_msg(cpu < cpu_count(), "clock: no CPU %u", cpu);
    return __atomic_load_n(&percpu_ptr(clock_cpu, cpu)->nr_intrs,
                           __ATOMIC_RELAXED);
}

void
clock_account_local(void)
{
    struct clock_cpu *clock = cpu_local_ptr(clock_cpu);
    uint64_t now = clock_get_time();
    uint64_t elapsed = now - clock->last_tick;

    if (elapsed != 0) {
        clock->last_tick = now;
        /*
         * Its CPU alone writes it (interrupts disabled); other CPUs read a
         * count, which orders nothing else: relaxed.
         */
        __atomic_store_n(&clock->nr_ticks, clock->nr_ticks + elapsed,
                         __ATOMIC_RELAXED);
        pmu_soft_count(PMU_SOFT_EV_TICK, elapsed);
    }
}

void
clock_tick_intr(void)
{
    struct clock_cpu *clock = cpu_local_ptr(clock_cpu);

    /* As nr_ticks: one writer, a count read elsewhere, relaxed. */
    __atomic_store_n(&clock->nr_intrs, clock->nr_intrs + 1, __ATOMIC_RELAXED);
    clock_account_local();
    timer_tick_intr(clock_get_time());
    thread_tick_intr();
}

/*
 * One line: the frequency, where it comes from, and how the windows of
 * the measurement behind it agreed.
 */
static void
clock_log_calibration(const struct tsc_calibration *cal)
{
    const struct clock_calib_result *result = &cal->result;
    const char *ref = tsc_ref_name(cal->ref);
    unsigned long long mhz = cal->freq / 1000000;
    unsigned long long khz = (cal->freq / 1000) % 1000;

    if (cal->error != 0) {
        log_info("clock: TSC at %llu.%03llu MHz by %s (%s %u-bit failed: "
                 "%u of %u windows agree), %u Hz tick", mhz, khz,
                 cal->method, ref, tsc_ref_bits(cal->ref), result->nr_agree,
                 cal->nr_windows, CLOCK_HZ);
    } else if (strcmp(cal->method, ref) != 0) {
        log_info("clock: TSC at %llu.%03llu MHz by %s (%s %u-bit agrees: "
                 "%llu.%03llu MHz, %u of %u windows, spread %u ppm), "
                 "%u Hz tick", mhz, khz, cal->method, ref,
                 tsc_ref_bits(cal->ref),
                 (unsigned long long)result->freq / 1000000,
                 (unsigned long long)(result->freq / 1000) % 1000,
                 result->nr_agree, cal->nr_windows, result->spread_ppm,
                 CLOCK_HZ);
    } else {
        log_info("clock: TSC at %llu.%03llu MHz by %s (%u-bit, %u of %u "
                 "windows agree, spread %u ppm), %u Hz tick", mhz, khz, ref,
                 tsc_ref_bits(cal->ref), result->nr_agree, cal->nr_windows,
                 result->spread_ppm, CLOCK_HZ);
    }
}

static int
clock_setup(void)
{
    const struct tsc_calibration *cal;
    uint32_t eax, ebx, ecx, edx;
    uint64_t freq;

    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);

    if (!(edx & CPU_CPUID1_EDX_TSC)) {
        panic("clock: this CPU has no time stamp counter");
    }

    tsc_calibrate();
    cal = tsc_get_calibration();
    freq = cal->freq;

    if (freq < CLOCK_HZ) {
        panic("clock: TSC calibration failed (%llu Hz)",
              (unsigned long long)freq);
    }

    cpu_set_freq(freq);
    clock_tsc_tick = freq / CLOCK_HZ;
    clock_tsc_boot = cpu_get_tsc();
    clock_start_local();
    clock_log_calibration(cal);
    return 0;
}

/* The FADT tells where the ACPI PM timer is; without it, the PIT. */
INIT_OP_DEFINE(clock_setup, INIT_OP_DEP(acpi_setup, false));
