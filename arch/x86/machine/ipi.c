/*
 * The kernel's own interrupt vectors (see ipi.h). Each handler sends the
 * local APIC's EOI where the core's entry expects it: a cross-CPU call
 * acknowledges first (its function may run long, and a new request must
 * be able to arrive), the PMU interrupts after handling (a new PMI must
 * not nest in the handler).
 */
#include <kern/panic.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/ipi.h>
#include <machine/lapic.h>
#include <machine/trap.h>

void
cpu_send_xcall(unsigned int cpu)
{
    lapic_send_ipi(cpu, TRAP_XCALL);
}

void
cpu_send_resched(unsigned int cpu)
{
    lapic_send_ipi(cpu, TRAP_RESCHED);
}

void
cpu_send_self_pmu_soft(void)
{
    lapic_send_self_ipi(TRAP_PMU_SOFT);
}

void
cpu_send_self_pmu_soft_from_nmi(void)
{
    lapic_send_self_ipi_from_nmi(TRAP_PMU_SOFT);
}

void
cpu_send_nmi(unsigned int cpu)
{
    lapic_send_nmi(cpu_apic_id(cpu));
}

void
cpu_stop_others(void)
{
    lapic_stop_others();
}

static void
ipi_xcall_intr(struct trap_frame *frame)
{
    (void)frame;
    lapic_eoi();
    xcall_intr();
}

/* need_resched is set: the interrupt exit path switches threads. */
static void
ipi_resched_intr(struct trap_frame *frame)
{
    (void)frame;
    lapic_eoi();
}

static void
ipi_pmi_intr(struct trap_frame *frame)
{
    struct perfmon_intr_ctx ctx = { .ip = frame->rip, .fp = frame->rbp };

    perfmon_pmi_intr(&ctx);
    lapic_eoi();
}

static void
ipi_pmu_soft_intr(struct trap_frame *frame)
{
    struct perfmon_intr_ctx ctx = { .ip = frame->rip, .fp = frame->rbp };

    perfmon_pmu_soft_intr(&ctx);
    lapic_eoi();
}

/*
 * In NMI mode every NMI comes here: perfmon cannot tell its own from
 * another's, so it looks for overflows each time; one after a panic stops
 * the CPU, as without a handler (trap.c).
 */
static void
ipi_nmi_intr(struct trap_frame *frame)
{
    struct perfmon_intr_ctx ctx = { .ip = frame->rip, .fp = frame->rbp };

    if (panic_in_progress) {
        cpu_halt_forever();
    }

    if (!perfmon_pmi_nmi()) {
        panic("non-maskable interrupt at rip=0x%lx", frame->rip);
    }

    perfmon_nmi_intr(&ctx);
}

void
ipi_setup(void)
{
    trap_register(TRAP_NMI, ipi_nmi_intr);
    trap_register(TRAP_XCALL, ipi_xcall_intr);
    trap_register(TRAP_RESCHED, ipi_resched_intr);
    trap_register(TRAP_PMI, ipi_pmi_intr);
    trap_register(TRAP_PMU_SOFT, ipi_pmu_soft_intr);
}
