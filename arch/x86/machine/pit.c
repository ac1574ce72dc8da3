/*
 * PIT channel 2 as a one-shot reference: Intel 8254 datasheet, mode 0
 * ("interrupt on terminal count"), gate and output through port 0x61.
 */
#include <stdint.h>

#include <machine/cpu.h>
#include <machine/io.h>
#include <machine/pit.h>

#define PIT_FREQ            1193182
#define PIT_PORT_CH2        0x42
#define PIT_PORT_CMD        0x43
#define PIT_PORT_CTRL       0x61
#define PIT_CTRL_GATE2      0x01
#define PIT_CTRL_SPEAKER    0x02
#define PIT_CTRL_OUT2       0x20
#define PIT_CMD_CH2_MODE0   0xb0    /* channel 2, lobyte/hibyte, mode 0 */

uint64_t
pit_measure_tsc_freq(unsigned int ms)
{
    uint32_t count = PIT_FREQ * ms / 1000;
    uint64_t start, end;
    uint8_t ctrl;

    ctrl = io_read_byte(PIT_PORT_CTRL);
    io_write_byte(PIT_PORT_CTRL,
                  (ctrl & ~PIT_CTRL_SPEAKER) | PIT_CTRL_GATE2);
    io_write_byte(PIT_PORT_CMD, PIT_CMD_CH2_MODE0);
    io_write_byte(PIT_PORT_CH2, count & 0xff);
    io_write_byte(PIT_PORT_CH2, count >> 8);
    start = cpu_get_tsc();

    while (!(io_read_byte(PIT_PORT_CTRL) & PIT_CTRL_OUT2)) {
        cpu_pause();
    }

    end = cpu_get_tsc();
    io_write_byte(PIT_PORT_CTRL, ctrl);
    return (end - start) * PIT_FREQ / count;
}
