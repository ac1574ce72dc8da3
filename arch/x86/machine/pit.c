/*
 * PIT channel 2 as a free-running reference: Intel 8254 datasheet, mode 0
 * ("interrupt on terminal count"), counter latch command, gate and output
 * through port 0x61.
 *
 * Polling the output for the end of a one-shot count is not enough under
 * a loaded host: a vCPU descheduled around the poll sees the output late
 * and stretches the window. Reading the count through a latch instead
 * lets the caller bracket each read with the TSC. In mode 0 the counter
 * keeps counting past zero, from 0xffff down again, but its output goes
 * high at zero and stays high until the channel is reprogrammed: it
 * records that a wrap happened, even one that no read saw.
 */
#include <stdbool.h>
#include <stdint.h>

#include <machine/cpu.h>
#include <machine/io.h>
#include <machine/pit.h>

#define PIT_PORT_CH2        0x42
#define PIT_PORT_CMD        0x43
#define PIT_PORT_CTRL       0x61
#define PIT_CTRL_GATE2      0x01
#define PIT_CTRL_SPEAKER    0x02
#define PIT_CTRL_OUT2       0x20
#define PIT_CMD_CH2_MODE0   0xb0    /* channel 2, lobyte/hibyte, mode 0 */
#define PIT_CMD_CH2_LATCH   0x80    /* channel 2, counter latch */
#define PIT_FULL_COUNT      0xffff

/*
 * A count written in mode 0 is loaded on the next clock pulse: wait for
 * the first tick, so that a window's first read sees a running counter.
 * The bound (far more reads than one 0.84 us pulse takes) only guards
 * against a machine without a PIT, whose windows then fail on their own.
 */
#define PIT_START_SPINS     100000

static uint8_t pit_ctrl_saved;

uint16_t
pit_counter_read(void)
{
    uint8_t low, high;

    io_write_byte(PIT_PORT_CMD, PIT_CMD_CH2_LATCH);
    low = io_read_byte(PIT_PORT_CH2);
    high = io_read_byte(PIT_PORT_CH2);
    return (uint16_t)(PIT_FULL_COUNT - (((unsigned int)high << 8) | low));
}

void
pit_counter_start(void)
{
    pit_ctrl_saved = io_read_byte(PIT_PORT_CTRL);
    io_write_byte(PIT_PORT_CTRL,
                  (pit_ctrl_saved & ~PIT_CTRL_SPEAKER) | PIT_CTRL_GATE2);
    io_write_byte(PIT_PORT_CMD, PIT_CMD_CH2_MODE0);
    io_write_byte(PIT_PORT_CH2, PIT_FULL_COUNT & 0xff);
    io_write_byte(PIT_PORT_CH2, PIT_FULL_COUNT >> 8);

    for (unsigned int i = 0; i < PIT_START_SPINS; i++) {
        if (pit_counter_read() != 0) {
            break;
        }

        cpu_pause();
    }
}

bool
pit_counter_wrapped(void)
{
    return (io_read_byte(PIT_PORT_CTRL) & PIT_CTRL_OUT2) != 0;
}

void
pit_counter_stop(void)
{
    io_write_byte(PIT_PORT_CTRL, pit_ctrl_saved);
}
