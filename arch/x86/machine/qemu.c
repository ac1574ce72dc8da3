/*
 * QEMU's exit device and debug console.
 */
#include <machine/cpu.h>
#include <machine/io.h>
#include <machine/qemu.h>

#define QEMU_DEBUG_EXIT_PORT 0xf4
#define QEMU_DEBUGCON_PORT  0xe9

void
qemu_exit(unsigned int status)
{
    io_write_long(QEMU_DEBUG_EXIT_PORT, status);
    cpu_halt_forever();
}

bool
qemu_debugcon_present(void)
{
    return io_read_byte(QEMU_DEBUGCON_PORT) == QEMU_DEBUGCON_PORT;
}

/* One string instruction: under KVM a few exits for a whole line. */
void
qemu_debugcon_write(const char *s, size_t len)
{
    io_write_bytes(QEMU_DEBUGCON_PORT, s, len);
}
