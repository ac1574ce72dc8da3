/*
 * 16550 UART on COM1, the console.
 */
#ifndef X86_UART_H
#define X86_UART_H

#include <stdbool.h>

/*
 * Program 115200 8N1, leaving the FIFOs as the firmware set them, so that
 * input received before (typed ahead during boot) stays for uart_getc.
 * Called once, first thing at boot.
 */
void uart_setup(void);

/* Write one byte, waiting for room. Any context; callers serialize. */
void uart_putc(char c);

/*
 * Return true and store a received byte in *cp when one is waiting, false
 * otherwise, in the order received. Never waits. Any context; one reader
 * at a time (the console's, the shell).
 */
bool uart_getc(char *cp);

/*
 * Read the input that has arrived, keeping it for uart_getc, and remove
 * the first byte equal to c from it: return true when there was one (the
 * rest stays, in order). Never waits. Same context and reader as
 * uart_getc.
 */
bool uart_take(char c);

#endif /* X86_UART_H */
