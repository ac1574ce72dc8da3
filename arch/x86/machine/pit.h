/*
 * 8254 programmable interval timer, channel 2, as a reference clock for
 * measurements (TSC calibration and its tests). Nothing else uses it: the
 * tick comes from the local APIC timer.
 */
#ifndef X86_PIT_H
#define X86_PIT_H

#include <stdbool.h>
#include <stdint.h>

/* 14.31818 MHz / 12: the rate every PC's 8254 counts at. */
#define PIT_FREQ 1193182

/*
 * Start channel 2 counting down from its full count with the speaker
 * off. One user at a time; any context.
 */
void pit_counter_start(void);

/*
 * Ticks counted since pit_counter_start, modulo 2^16 (the counter wraps
 * after about 55 ms). Any context.
 */
uint16_t pit_counter_read(void);

/*
 * Return true when the counter has reached zero since pit_counter_start:
 * reads since then may have lost a multiple of 2^16 ticks. Any context.
 */
bool pit_counter_wrapped(void);

/* Stop channel 2 and restore the speaker port. Any context. */
void pit_counter_stop(void);

#endif /* X86_PIT_H */
