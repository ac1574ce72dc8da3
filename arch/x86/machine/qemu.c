/*
 * QEMU exit device.
 */
#include <machine/cpu.h>
#include <machine/io.h>
#include <machine/qemu.h>

#define QEMU_DEBUG_EXIT_PORT 0xf4

void
qemu_exit(unsigned int status)
{
    io_write_long(QEMU_DEBUG_EXIT_PORT, status);
    cpu_halt_forever();
}
