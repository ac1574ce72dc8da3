/*
 * Local APIC (xAPIC, memory mapped): timer, IPIs, EOI, and the performance
 * counter LVT entry.
 */
#ifndef X86_LAPIC_H
#define X86_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/init.h>

/* Acknowledge the interrupt being handled. Interrupts disabled. */
void lapic_eoi(void);

/* Send a fixed-vector IPI to one CPU. Any context. */
void lapic_send_ipi(unsigned int cpu, unsigned int vector);

/* Send a fixed-vector IPI to the calling CPU. Any context. */
void lapic_send_self_ipi(unsigned int vector);

/* The same, from an NMI: the ICR's low half only (see cpu.h). */
void lapic_send_self_ipi_from_nmi(unsigned int vector);

/*
 * Send an NMI to the CPU of APIC ID apic_id (this one included). Any
 * context, an NMI included.
 */
void lapic_send_nmi(unsigned int apic_id);

/*
 * Stop every other CPU with an NMI, for panic. Does nothing before the
 * local APIC is set up. Any context.
 */
void lapic_stop_others(void);

/* INIT and STARTUP IPIs for AP bring-up. Boot only. */
void lapic_send_init(unsigned int apic_id);
void lapic_send_startup(unsigned int apic_id, uint32_t phys_page);

/*
 * Program the performance counter LVT entry to deliver vector as a fixed
 * interrupt, unmasked. Processor-local, interrupts disabled.
 */
void lapic_pmc_setup(unsigned int vector);

/*
 * The delivery mode field (bits 10:8) of an LVT entry set to NMI (100b):
 * the entry's vector is then ignored (SDM vol. 3A, 11.5.1, "Delivery
 * Mode"). An NMI takes no EOI (SDM vol. 3A, 11.8.5).
 */
#define LAPIC_LVT_DELIVERY_NMI  (4U << 8)

/*
 * Program the performance counter LVT entry to deliver an NMI, unmasked:
 * the PMI reaches the registered NMI handler (cpu_nmi_register).
 * Intel sets the entry's mask bit on each PMI whatever its delivery mode
 * (SDM vol. 3A, 11.5.1), so the handler unmasks it as before; AMD does
 * not, and the unmask is harmless there. Processor-local, interrupts
 * disabled.
 */
void lapic_pmc_setup_nmi(void);

/* Clear the mask bit of the performance counter LVT entry, which the CPU
 * sets on every PMI. Processor-local, interrupts disabled. */
void lapic_pmc_unmask(void);

/*
 * Tell whether vector is requested on the calling CPU and not yet
 * delivered (its IRR bit; SDM vol. 3A, 11.8.4). For tests that hold an
 * interrupt back to order it against another. Processor-local.
 */
bool lapic_intr_requested(unsigned int vector);

/*
 * True when the performance counter LVT entry is masked (tests check that
 * the PMI handler unmasked it). Processor-local.
 */
bool lapic_pmc_masked(void);

/* Return the local APIC id of the calling CPU. */
unsigned int lapic_get_id(void);

/*
 * Start the local APIC of the calling CPU and its periodic timer at
 * CLOCK_HZ ticks per second, using the rate the boot processor calibrated
 * against the TSC. AP bring-up (lapic_setup does the boot processor).
 */
void lapic_setup_local(void);

INIT_OP_DECLARE(lapic_setup);

#endif /* X86_LAPIC_H */
