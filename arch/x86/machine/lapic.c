/*
 * Local APIC in xAPIC mode. Register offsets and ICR/LVT layouts: Intel SDM
 * vol. 3A, chapter 11 "Advanced Programmable Interrupt Controller (APIC)",
 * table 11-1 and sections 11.5 (LVT), 11.5.4 (timer), 11.6.1 (ICR).
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <machine/boot.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <machine/trap.h>

#define LAPIC_REG_ID            0x020
#define LAPIC_REG_VERSION       0x030
#define LAPIC_REG_TPR           0x080
#define LAPIC_REG_EOI           0x0b0
#define LAPIC_REG_SVR           0x0f0
#define LAPIC_REG_IRR           0x200   /* 8 registers, 0x10 apart */
#define LAPIC_REG_ESR           0x280
#define LAPIC_REG_ICR_LOW       0x300
#define LAPIC_REG_ICR_HIGH      0x310
#define LAPIC_REG_LVT_TIMER     0x320
#define LAPIC_REG_LVT_PMC       0x340
#define LAPIC_REG_LVT_LINT0     0x350
#define LAPIC_REG_LVT_LINT1     0x360
#define LAPIC_REG_LVT_ERROR     0x370
#define LAPIC_REG_TIMER_ICR     0x380
#define LAPIC_REG_TIMER_CCR     0x390
#define LAPIC_REG_TIMER_DCR     0x3e0

#define LAPIC_SVR_ENABLE        (1U << 8)
#define LAPIC_LVT_MASKED        (1U << 16)
#define LAPIC_LVT_TIMER_PERIODIC (1U << 17)
#define LAPIC_DCR_DIV16         0x3

#define LAPIC_ICR_FIXED         (0U << 8)
#define LAPIC_ICR_NMI           (4U << 8)
#define LAPIC_ICR_INIT          (5U << 8)
#define LAPIC_ICR_STARTUP       (6U << 8)
#define LAPIC_ICR_PENDING       (1U << 12)
#define LAPIC_ICR_ASSERT        (1U << 14)
#define LAPIC_ICR_LEVEL         (1U << 15)
#define LAPIC_ICR_SELF          (1U << 18)
#define LAPIC_ICR_ALL_BUT_SELF  (3U << 18)

#define LAPIC_APIC_BASE_ENABLE  (1ULL << 11)
#define LAPIC_CALIBRATE_MS      20

static volatile uint32_t *lapic_base;
static uint32_t lapic_timer_count;      /* initial count for one tick */

static inline uint32_t
lapic_read(unsigned int reg)
{
    return lapic_base[reg / 4];
}

static inline void
lapic_write(unsigned int reg, uint32_t value)
{
    lapic_base[reg / 4] = value;
}

void
lapic_eoi(void)
{
    lapic_write(LAPIC_REG_EOI, 0);
}

bool
lapic_intr_requested(unsigned int vector)
{
    uint32_t irr = lapic_read(LAPIC_REG_IRR + 0x10 * (vector / 32));

    return (irr >> (vector % 32)) & 1;
}

unsigned int
lapic_get_id(void)
{
    return lapic_read(LAPIC_REG_ID) >> 24;
}

static void
lapic_icr_wait(void)
{
    while (lapic_read(LAPIC_REG_ICR_LOW) & LAPIC_ICR_PENDING) {
        cpu_pause();
    }
}

/* ICR writes must not be interleaved by an interrupt handler's own. */
static void
lapic_icr_send(unsigned int apic_id, uint32_t low)
{
    unsigned long flags = cpu_intr_save();

    lapic_icr_wait();
    lapic_write(LAPIC_REG_ICR_HIGH, apic_id << 24);
    lapic_write(LAPIC_REG_ICR_LOW, low);
    lapic_icr_wait();
    cpu_intr_restore(flags);
}

void
lapic_send_ipi(unsigned int cpu, unsigned int vector)
{
    lapic_icr_send(cpu_apic_id(cpu), LAPIC_ICR_FIXED | LAPIC_ICR_ASSERT
                                     | vector);
}

void
lapic_send_self_ipi(unsigned int vector)
{
    lapic_icr_send(0, LAPIC_ICR_FIXED | LAPIC_ICR_ASSERT | LAPIC_ICR_SELF
                      | vector);
}

void
lapic_send_self_ipi_from_nmi(unsigned int vector)
{
    /* The interrupted sender waits for idle again after its low write. */
    lapic_icr_wait();
    lapic_write(LAPIC_REG_ICR_LOW, LAPIC_ICR_FIXED | LAPIC_ICR_ASSERT
                                   | LAPIC_ICR_SELF | vector);
    lapic_icr_wait();
}

/*
 * Callable from an NMI too: one that landed between another sender's two
 * ICR writes finds that sender's destination in the high half and puts it
 * back, so the interrupted send goes where it was meant to.
 */
void
lapic_send_nmi(unsigned int apic_id)
{
    unsigned long flags = cpu_intr_save();
    uint32_t high = lapic_read(LAPIC_REG_ICR_HIGH);

    lapic_icr_wait();
    lapic_write(LAPIC_REG_ICR_HIGH, apic_id << 24);
    lapic_write(LAPIC_REG_ICR_LOW, LAPIC_ICR_NMI | LAPIC_ICR_ASSERT);
    lapic_icr_wait();
    lapic_write(LAPIC_REG_ICR_HIGH, high);
    cpu_intr_restore(flags);
}

void
lapic_stop_others(void)
{
    if (lapic_base == NULL) {
        return;
    }

    lapic_write(LAPIC_REG_ICR_HIGH, 0);
    lapic_write(LAPIC_REG_ICR_LOW, LAPIC_ICR_NMI | LAPIC_ICR_ASSERT
                                   | LAPIC_ICR_ALL_BUT_SELF);
}

void
lapic_send_init(unsigned int apic_id)
{
    lapic_icr_send(apic_id, LAPIC_ICR_INIT | LAPIC_ICR_ASSERT
                            | LAPIC_ICR_LEVEL);
    lapic_icr_send(apic_id, LAPIC_ICR_INIT | LAPIC_ICR_LEVEL);
}

void
lapic_send_startup(unsigned int apic_id, uint32_t phys_page)
{
    lapic_icr_send(apic_id, LAPIC_ICR_STARTUP | (phys_page & 0xff));
}

void
lapic_pmc_setup(unsigned int vector)
{
    lapic_write(LAPIC_REG_LVT_PMC, vector);
}

void
lapic_pmc_setup_nmi(void)
{
    lapic_write(LAPIC_REG_LVT_PMC, LAPIC_LVT_DELIVERY_NMI);
}

void
lapic_pmc_unmask(void)
{
    lapic_write(LAPIC_REG_LVT_PMC,
                lapic_read(LAPIC_REG_LVT_PMC) & ~LAPIC_LVT_MASKED);
}

bool
lapic_pmc_masked(void)
{
    return (lapic_read(LAPIC_REG_LVT_PMC) & LAPIC_LVT_MASKED) != 0;
}

static void
lapic_spurious_intr(struct trap_frame *frame)
{
    /* Spurious interrupts need no EOI (SDM 11.9). */
    (void)frame;
}

static void
lapic_error_intr(struct trap_frame *frame)
{
    (void)frame;
    lapic_write(LAPIC_REG_ESR, 0);
    lapic_eoi();
}

#define LAPIC_VECTOR_ERROR 0xfe

static void
lapic_timer_intr(struct trap_frame *frame)
{
    (void)frame;
    lapic_eoi();
    clock_tick_intr();
}

void
lapic_setup_local(void)
{
    cpu_set_msr(CPU_MSR_APIC_BASE,
                cpu_get_msr(CPU_MSR_APIC_BASE) | LAPIC_APIC_BASE_ENABLE);
    lapic_write(LAPIC_REG_SVR, LAPIC_SVR_ENABLE | TRAP_SPURIOUS);
    lapic_write(LAPIC_REG_TPR, 0);
    lapic_write(LAPIC_REG_LVT_LINT0, LAPIC_LVT_MASKED);
    lapic_write(LAPIC_REG_LVT_LINT1, LAPIC_LVT_MASKED);
    lapic_write(LAPIC_REG_LVT_PMC, LAPIC_LVT_MASKED | TRAP_PMI);
    lapic_write(LAPIC_REG_LVT_ERROR, LAPIC_VECTOR_ERROR);
    lapic_write(LAPIC_REG_ESR, 0);
    lapic_write(LAPIC_REG_ESR, 0);
    lapic_eoi();

    lapic_write(LAPIC_REG_TIMER_DCR, LAPIC_DCR_DIV16);
    lapic_write(LAPIC_REG_LVT_TIMER, LAPIC_LVT_TIMER_PERIODIC | TRAP_TIMER);
    lapic_write(LAPIC_REG_TIMER_ICR, lapic_timer_count);
}

/* Count the timer's rate against the calibrated TSC. */
static uint32_t
lapic_calibrate_timer(unsigned int hz)
{
    uint64_t start, wait, rate;
    uint32_t remaining;

    wait = cpu_get_freq() * LAPIC_CALIBRATE_MS / 1000;
    lapic_write(LAPIC_REG_TIMER_DCR, LAPIC_DCR_DIV16);
    lapic_write(LAPIC_REG_LVT_TIMER, LAPIC_LVT_MASKED | TRAP_TIMER);
    lapic_write(LAPIC_REG_TIMER_ICR, 0xffffffff);
    start = cpu_get_tsc();

    while (cpu_get_tsc() - start < wait) {
        cpu_pause();
    }

    remaining = lapic_read(LAPIC_REG_TIMER_CCR);
    lapic_write(LAPIC_REG_TIMER_ICR, 0);
    rate = (uint64_t)(0xffffffffU - remaining) * 1000 / LAPIC_CALIBRATE_MS;
    log_info("lapic: timer at %llu kHz, %u Hz tick",
             (unsigned long long)rate / 1000, hz);
    return (uint32_t)(rate / hz);
}

static int
lapic_setup(void)
{
    uint64_t base = cpu_get_msr(CPU_MSR_APIC_BASE) & ~0xfffULL;

    lapic_base = boot_phys_to_virt(base);
    trap_register(TRAP_SPURIOUS, lapic_spurious_intr);
    trap_register(LAPIC_VECTOR_ERROR, lapic_error_intr);
    trap_register(TRAP_TIMER, lapic_timer_intr);
    lapic_timer_count = lapic_calibrate_timer(CLOCK_HZ);

    if (lapic_timer_count == 0) {
        panic("lapic: timer calibration failed");
    }

    lapic_setup_local();
    return 0;
}

INIT_OP_DEFINE(lapic_setup,
               INIT_OP_DEP(clock_setup, true),
               INIT_OP_DEP(timer_setup, true),
               INIT_OP_DEP(thread_setup, true));
