/*
 * 16550 UART driver, polled. Register layout: National Semiconductor
 * PC16550D datasheet, "Register Summary".
 *
 * Input typed before the kernel runs must not be lost. Changing the FIFO
 * enable bit or clearing the receive FIFO (FCR) drops what the receiver
 * holds, and under QEMU a byte can arrive between any check that it is
 * empty and the write. So setup never writes FCR: the FIFOs stay as the
 * firmware left them, and what waits in the receiver (and, under QEMU, in
 * its character backend, which hands the next byte when the guest reads
 * one) is read by the console in order.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/string.h>
#include <machine/io.h>
#include <machine/uart.h>

#define UART_COM1           0x3f8
#define UART_REG_DATA       0
#define UART_REG_IER        1
#define UART_REG_DLL        0   /* with DLAB set */
#define UART_REG_DLM        1   /* with DLAB set */
#define UART_REG_LCR        3
#define UART_REG_MCR        4
#define UART_REG_LSR        5

#define UART_LCR_8N1        0x03
#define UART_LCR_DLAB       0x80
#define UART_MCR_DTR_RTS    0x03
#define UART_LSR_DR         0x01    /* data ready */
#define UART_LSR_THRE       0x20    /* transmit holding register empty */

#define UART_DIVISOR_115200 1

#define UART_PENDING_SIZE   4096

/*
 * Input read by uart_take and not yet by uart_getc: bytes head to end-1.
 * Only the console's one reader touches it.
 */
static char uart_pending[UART_PENDING_SIZE];
static unsigned int uart_pending_head;
static unsigned int uart_pending_end;

static bool
uart_rx_ready(void)
{
    return (io_read_byte(UART_COM1 + UART_REG_LSR) & UART_LSR_DR) != 0;
}

void
uart_setup(void)
{
    io_write_byte(UART_COM1 + UART_REG_IER, 0);
    io_write_byte(UART_COM1 + UART_REG_LCR, UART_LCR_DLAB);
    io_write_byte(UART_COM1 + UART_REG_DLL, UART_DIVISOR_115200);
    io_write_byte(UART_COM1 + UART_REG_DLM, 0);
    io_write_byte(UART_COM1 + UART_REG_LCR, UART_LCR_8N1);
    io_write_byte(UART_COM1 + UART_REG_MCR, UART_MCR_DTR_RTS);
}

void
uart_putc(char c)
{
    while (!(io_read_byte(UART_COM1 + UART_REG_LSR) & UART_LSR_THRE)) {
        __asm__ volatile("pause");
    }

    io_write_byte(UART_COM1 + UART_REG_DATA, (uint8_t)c);
}

bool
uart_getc(char *cp)
{
    if (uart_pending_head != uart_pending_end) {
        *cp = uart_pending[uart_pending_head++];
        return true;
    }

    if (!uart_rx_ready()) {
        return false;
    }

    *cp = (char)io_read_byte(UART_COM1 + UART_REG_DATA);
    return true;
}

bool
uart_take(char c)
{
    unsigned int len = uart_pending_end - uart_pending_head;

    memmove(uart_pending, uart_pending + uart_pending_head, len);
    uart_pending_head = 0;

    while (len < UART_PENDING_SIZE && uart_rx_ready()) {
        uart_pending[len++] = (char)io_read_byte(UART_COM1 + UART_REG_DATA);
    }

    uart_pending_end = len;

    for (unsigned int i = 0; i < len; i++) {
        if (uart_pending[i] == c) {
            memmove(uart_pending + i, uart_pending + i + 1, len - i - 1);
            uart_pending_end--;
            return true;
        }
    }

    return false;
}
