/*
 * 8254 programmable interval timer, used once to calibrate the TSC.
 */
#ifndef X86_PIT_H
#define X86_PIT_H

#include <stdint.h>

/*
 * Measure the TSC frequency in Hz against PIT channel 2 over ms
 * milliseconds (at most 50). Boot only, interrupts disabled.
 */
uint64_t pit_measure_tsc_freq(unsigned int ms);

#endif /* X86_PIT_H */
