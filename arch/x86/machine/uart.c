/*
 * 16550 UART driver, polled. Register layout: National Semiconductor
 * PC16550D datasheet, "Register Summary". Input that arrives before the
 * kernel sets the UART up is kept (see uart_setup); later input waits in
 * the 16-byte receive FIFO, and under QEMU in its character backend,
 * until the console reader polls.
 */
#include <stdbool.h>
#include <stdint.h>

#include <machine/io.h>
#include <machine/uart.h>

#define UART_COM1           0x3f8
#define UART_REG_DATA       0
#define UART_REG_IER        1
#define UART_REG_DLL        0   /* with DLAB set */
#define UART_REG_DLM        1   /* with DLAB set */
#define UART_REG_FCR        2
#define UART_REG_LCR        3
#define UART_REG_MCR        4
#define UART_REG_LSR        5

#define UART_LCR_8N1        0x03
#define UART_LCR_DLAB       0x80
#define UART_FCR_ENABLE     0x07    /* enable and clear both FIFOs */
#define UART_MCR_DTR_RTS    0x03
#define UART_LSR_DR         0x01    /* data ready */
#define UART_LSR_THRE       0x20    /* transmit holding register empty */

#define UART_DIVISOR_115200 1

/*
 * What was received before the FIFOs were enabled (typed ahead while the
 * firmware and GRUB ran), returned by uart_getc before anything else.
 * Enabling the FIFOs clears the receiver, so setup moves it here first.
 * Only setup fills it and only the one reader drains it: no lock.
 */
#define UART_EARLY_SIZE     256

static char uart_early[UART_EARLY_SIZE];
static unsigned int uart_early_len;
static unsigned int uart_early_pos;

static bool
uart_rx_ready(void)
{
    return (io_read_byte(UART_COM1 + UART_REG_LSR) & UART_LSR_DR) != 0;
}

static void
uart_early_add(char c)
{
    if (uart_early_len < sizeof(uart_early)) {
        uart_early[uart_early_len++] = c;
    }
}

void
uart_setup(void)
{
    char c;

    io_write_byte(UART_COM1 + UART_REG_IER, 0);
    io_write_byte(UART_COM1 + UART_REG_LCR, UART_LCR_DLAB);
    io_write_byte(UART_COM1 + UART_REG_DLL, UART_DIVISOR_115200);
    io_write_byte(UART_COM1 + UART_REG_DLM, 0);
    io_write_byte(UART_COM1 + UART_REG_LCR, UART_LCR_8N1);
    io_write_byte(UART_COM1 + UART_REG_MCR, UART_MCR_DTR_RTS);

    /*
     * Keep what arrived before the kernel ran: without FIFOs the receiver
     * holds one byte, and QEMU hands it the next byte it holds as soon as
     * that one is read, so this takes all of it (up to UART_EARLY_SIZE).
     * The FIFOs are enabled right after the receiver is seen empty: a
     * byte arriving between the two would be cleared.
     */
    while (uart_early_len < sizeof(uart_early) && uart_rx_ready()) {
        uart_early_add((char)io_read_byte(UART_COM1 + UART_REG_DATA));
    }

    io_write_byte(UART_COM1 + UART_REG_FCR, UART_FCR_ENABLE);

    /*
     * QEMU gives the UART more input only when the guest reads the data
     * register: had it held input back while the receiver was full (more
     * than UART_EARLY_SIZE typed ahead, or a byte in the window above),
     * the cleared receiver would never be read and the console would take
     * no input again. Reading it once restarts the flow. With the FIFO
     * empty the read returns 0, a byte the shell ignores anyway; a byte
     * that has just arrived is kept.
     */
    c = (char)io_read_byte(UART_COM1 + UART_REG_DATA);

    if (c != 0) {
        uart_early_add(c);
    }
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
    if (uart_early_pos < uart_early_len) {
        *cp = uart_early[uart_early_pos++];
        return true;
    }

    if (!uart_rx_ready()) {
        return false;
    }

    *cp = (char)io_read_byte(UART_COM1 + UART_REG_DATA);
    return true;
}
