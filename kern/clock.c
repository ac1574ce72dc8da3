/*
 * Clock: TSC calibrated against the PIT.
 */
#include <stdint.h>

#include <kern/clock.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/pmu_soft.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <machine/cpu.h>
#include <machine/pit.h>

#define CLOCK_CALIBRATE_MS 50

struct clock_cpu {
    uint64_t last_tick;     /* time of the previous tick interrupt */
    uint64_t nr_ticks;      /* ticks accounted since clock_start_local */
};

static uint64_t clock_tsc_boot;
static uint64_t clock_tsc_tick;
static struct clock_cpu clock_cpu __percpu;

uint64_t
clock_get_time(void)
{
    return (cpu_get_tsc() - clock_tsc_boot) / clock_tsc_tick;
}

void
clock_start_local(void)
{
    cpu_local_ptr(clock_cpu)->last_tick = clock_get_time();
}

uint64_t
clock_nr_ticks(unsigned int cpu)
{
    return READ_ONCE(percpu_ptr(clock_cpu, cpu)->nr_ticks);
}

void
clock_account_local(void)
{
    struct clock_cpu *clock = cpu_local_ptr(clock_cpu);
    uint64_t now = clock_get_time();
    uint64_t elapsed = now - clock->last_tick;

    if (elapsed != 0) {
        clock->last_tick = now;
        clock->nr_ticks += elapsed;
        pmu_soft_count(PMU_SOFT_EV_TICK, elapsed);
    }
}

void
clock_tick_intr(void)
{
    clock_account_local();
    timer_tick_intr(clock_get_time());
    thread_tick_intr();
}

static int
clock_setup(void)
{
    uint32_t eax, ebx, ecx, edx;
    uint64_t freq;

    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);

    if (!(edx & CPU_CPUID1_EDX_TSC)) {
        panic("clock: this CPU has no time stamp counter");
    }

    freq = pit_measure_tsc_freq(CLOCK_CALIBRATE_MS);

    if (freq < CLOCK_HZ) {
        panic("clock: TSC calibration failed (%llu Hz)",
              (unsigned long long)freq);
    }

    cpu_set_freq(freq);
    clock_tsc_tick = freq / CLOCK_HZ;
    clock_tsc_boot = cpu_get_tsc();
    clock_start_local();
    log_info("clock: TSC at %llu.%03llu MHz, %u Hz tick",
             (unsigned long long)freq / 1000000,
             (unsigned long long)(freq / 1000) % 1000, CLOCK_HZ);
    return 0;
}

INIT_OP_DEFINE(clock_setup);
