/*
 * Starting the application processors.
 */
#ifndef X86_CPU_MP_H
#define X86_CPU_MP_H

#include <stdint.h>

#include <kern/init.h>

/* Busy-wait for at least us microseconds (TSC based). Any context. */
void cpu_mp_delay_us(uint64_t us);

INIT_OP_DECLARE(cpu_mp_setup);

#endif /* X86_CPU_MP_H */
