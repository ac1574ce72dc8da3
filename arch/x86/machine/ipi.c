/*
 * The kernel's own interrupt vectors (see ipi.h). Each handler sends the
 * local APIC's EOI where the core's entry expects it: a cross-CPU call
 * acknowledges first (its function may run long, and a new request must
 * be able to arrive), the PMU interrupts after handling (a new PMI must
 * not nest in the handler).
 */
#include <stddef.h>

#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/percpu.h>
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

/* The handlers registered by cpu_pmi_register and the others, or NULL. */
static cpu_intr_fn_t ipi_pmi_fn;
static cpu_intr_fn_t ipi_pmu_soft_fn;
static cpu_intr_fn_t ipi_nmi_fn;

void
cpu_pmi_register(cpu_intr_fn_t fn)
{
    __atomic_store_n(&ipi_pmi_fn, fn, __ATOMIC_RELEASE);
}

void
cpu_pmu_soft_register(cpu_intr_fn_t fn)
{
    __atomic_store_n(&ipi_pmu_soft_fn, fn, __ATOMIC_RELEASE);
}

void
cpu_nmi_register(cpu_intr_fn_t fn)
{
    __atomic_store_n(&ipi_nmi_fn, fn, __ATOMIC_RELEASE);
}

static void
ipi_call(cpu_intr_fn_t fn, const struct trap_frame *frame)
{
    struct cpu_intr_site site = { .ip = frame->rip, .fp = frame->rbp };

    fn(&site);
}

/* Without a handler the interrupt is only acknowledged. */
static void
ipi_pmu_intr(cpu_intr_fn_t *fnp, const struct trap_frame *frame)
{
    cpu_intr_fn_t fn = __atomic_load_n(fnp, __ATOMIC_ACQUIRE);

    if (fn != NULL) {
        ipi_call(fn, frame);
    }

    lapic_eoi();
}

static void
ipi_pmi_intr(struct trap_frame *frame)
{
    ipi_pmu_intr(&ipi_pmi_fn, frame);
}

static void
ipi_pmu_soft_intr(struct trap_frame *frame)
{
    ipi_pmu_intr(&ipi_pmu_soft_fn, frame);
}

/*
 * Every NMI comes here: its handler cannot tell its own from another's,
 * so it is called each time; one after a panic stops the CPU, as without
 * a handler (trap.c).
 */
static void
ipi_nmi_intr(struct trap_frame *frame)
{
    struct cpu_head *head;
    cpu_intr_fn_t fn;

    if (panic_in_progress) {
        cpu_halt_forever();
    }

    fn = __atomic_load_n(&ipi_nmi_fn, __ATOMIC_ACQUIRE);

    if (fn == NULL) {
        panic("non-maskable interrupt at rip=0x%lx", frame->rip);
    }

    /* Local only: the CPU's own code reads it (cpu_in_nmi), in order. */
    head = (struct cpu_head *)percpu_local_base();
    head->nmi_depth++;
    barrier();
    ipi_call(fn, frame);
    barrier();
    head->nmi_depth--;
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
