/*
 * The console (kern/console.h) over the machine: the UART for the serial
 * line, QEMU's debug console for the capture channel.
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/console.h>
#include <machine/qemu.h>
#include <machine/uart.h>

bool
console_take(char c)
{
    return uart_take(c);
}

bool
console_capture_present(void)
{
    return qemu_debugcon_present();
}

void
console_capture_write(const char *s, size_t len)
{
    qemu_debugcon_write(s, len);
}
