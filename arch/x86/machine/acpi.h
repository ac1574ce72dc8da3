/*
 * ACPI tables: only the MADT, to find the processors.
 */
#ifndef X86_ACPI_H
#define X86_ACPI_H

#include <kern/init.h>

INIT_OP_DECLARE(acpi_setup);

#endif /* X86_ACPI_H */
