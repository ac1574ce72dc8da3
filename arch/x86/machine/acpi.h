/*
 * ACPI tables: the MADT, to find the processors, and the FADT, to find
 * the power-management timer.
 */
#ifndef X86_ACPI_H
#define X86_ACPI_H

#include <stdint.h>

#include <kern/init.h>

/*
 * The ACPI power-management timer from the FADT: its I/O port and its
 * width, 24 or 32 bits (ACPI 6.5 section 4.8.3.3, PM_TMR: counts up at
 * 3.579545 MHz). Return 0, or ENOENT when the FADT describes none or
 * acpi_setup found no FADT. Any context.
 */
int acpi_get_pm_timer(uint16_t *port, unsigned int *bits);

INIT_OP_DECLARE(acpi_setup);

#endif /* X86_ACPI_H */
