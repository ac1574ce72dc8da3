/*
 * Application processor bring-up, one processor at a time: INIT, then
 * STARTUP IPIs pointing at the trampoline (Intel SDM vol. 3A, section
 * 9.4.4.1), then wait for the processor to report itself online.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/init.h>
#include <kern/kmem.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/string.h>
#include <kern/thread.h>
#include <kern/timer.h>
#include <kern/vm_page.h>
#include <machine/acpi.h>
#include <machine/boot.h>
#include <machine/cpu.h>
#include <machine/cpu_mp.h>
#include <machine/lapic.h>

/*
 * How long an AP has to report itself after its second STARTUP IPI. Real
 * processors take microseconds; under TCG a vCPU thread waits for the host
 * scheduler, which took up to 0.3 s with a 64-vCPU guest busy alongside
 * and over 1 s once in a `make soak` run. Linux allows 10 s.
 */
#define CPU_MP_START_TIMEOUT_US 10000000

extern char cpu_mp_trampoline[];
extern char cpu_mp_trampoline_end[];
extern char cpu_mp_trampoline_stack[];
extern char cpu_mp_trampoline_entry[];

static volatile unsigned int cpu_mp_booting;
static volatile bool cpu_mp_started;

void
cpu_mp_delay_us(uint64_t us)
{
    uint64_t start = cpu_get_tsc();
    uint64_t wait = cpu_get_freq() / 1000000 * us;

    while (cpu_get_tsc() - start < wait) {
        cpu_pause();
    }
}

/* First C code of an application processor, on its boot stack. */
static void __noreturn
cpu_mp_ap_main(void)
{
    unsigned int cpu = cpu_mp_booting;

    cpu_set_cr3(boot_kernel_cr3());
    cpu_load_tables(cpu);
    thread_bootstrap();
    timer_setup_local();
    lapic_setup_local();
    clock_start_local();
    cpu_set_online();
    __atomic_store_n(&cpu_mp_started, true, __ATOMIC_RELEASE);
    thread_run_idle();
}

/* Offset of a trampoline symbol in the copy at BOOT_AP_TRAMPOLINE. */
static void *
cpu_mp_trampoline_slot(const char *symbol)
{
    return boot_phys_to_virt(BOOT_AP_TRAMPOLINE
                             + ((uintptr_t)symbol
                                - (uintptr_t)cpu_mp_trampoline));
}

static bool
cpu_mp_wait_started(uint64_t us)
{
    uint64_t start = cpu_get_tsc();
    uint64_t wait = cpu_get_freq() / 1000000 * us;

    while (!__atomic_load_n(&cpu_mp_started, __ATOMIC_ACQUIRE)) {
        if (cpu_get_tsc() - start >= wait) {
            return false;
        }

        cpu_pause();
    }

    return true;
}

static void
cpu_mp_start(unsigned int cpu)
{
    unsigned int apic_id = cpu_apic_id(cpu);
    void *stack;

    if (percpu_area_create(cpu) != 0) {
        panic("cpu_mp: no memory for the per-CPU area of cpu%u", cpu);
    }

    stack = vm_page_alloc(THREAD_STACK_ORDER);

    if (stack == NULL) {
        panic("cpu_mp: no memory for the stack of cpu%u", cpu);
    }

    *(uint64_t *)cpu_mp_trampoline_slot(cpu_mp_trampoline_stack)
        = (uintptr_t)stack + THREAD_STACK_SIZE;
    *(uint64_t *)cpu_mp_trampoline_slot(cpu_mp_trampoline_entry)
        = (uintptr_t)cpu_mp_ap_main;
    cpu_mp_booting = cpu;
    cpu_mp_started = false;

    lapic_send_init(apic_id);
    cpu_mp_delay_us(10000);
    lapic_send_startup(apic_id, BOOT_AP_TRAMPOLINE >> 12);

    if (!cpu_mp_wait_started(200)) {
        lapic_send_startup(apic_id, BOOT_AP_TRAMPOLINE >> 12);

        if (!cpu_mp_wait_started(CPU_MP_START_TIMEOUT_US)) {
            panic("cpu_mp: cpu%u (apic id %u) did not start", cpu, apic_id);
        }
    }
}

static int
cpu_mp_setup(void)
{
    size_t size = (uintptr_t)cpu_mp_trampoline_end
                  - (uintptr_t)cpu_mp_trampoline;

    cpu_set_online();
    memcpy(boot_phys_to_virt(BOOT_AP_TRAMPOLINE), cpu_mp_trampoline, size);

    for (unsigned int cpu = 1; cpu < cpu_count(); cpu++) {
        cpu_mp_start(cpu);
    }

    log_info("cpu_mp: %u processor%s online", cpu_count(),
             (cpu_count() == 1) ? "" : "s");
    return 0;
}

INIT_OP_DEFINE(cpu_mp_setup,
               INIT_OP_DEP(acpi_setup, false),
               INIT_OP_DEP(lapic_setup, true),
               INIT_OP_DEP(thread_setup, true),
               INIT_OP_DEP(timer_setup, true),
               INIT_OP_DEP(vm_page_setup, true),
               INIT_OP_DEP(kmem_setup, true));
