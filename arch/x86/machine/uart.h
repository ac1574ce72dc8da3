/*
 * 16550 UART on COM1, the console.
 */
#ifndef X86_UART_H
#define X86_UART_H

#include <stdbool.h>

/*
 * Program 115200 8N1 with FIFOs, keeping input received before (typed
 * ahead during boot) for uart_getc. Called once, first thing at boot.
 */
void uart_setup(void);

/* Write one byte, waiting for room. Any context; callers serialize. */
void uart_putc(char c);

/*
 * Return true and store a received byte in *cp when one is waiting, false
 * otherwise: input kept at setup first, in order. Never waits. Any
 * context; one reader at a time (the console's, the shell).
 */
bool uart_getc(char *cp);

#endif /* X86_UART_H */
