/*
 * fw_cfg: selector port 0x510 (16-bit), data port 0x511 (8-bit). Key 0 is
 * the "QEMU" signature, key 0x19 the file directory: a big-endian count,
 * then entries of {be32 size, be16 select, be16 reserved, char name[56]}.
 */
#include <stdint.h>

#include <kern/errno.h>
#include <kern/string.h>
#include <machine/fwcfg.h>
#include <machine/io.h>

#define FWCFG_PORT_SEL      0x510
#define FWCFG_PORT_DATA     0x511
#define FWCFG_KEY_SIGNATURE 0x0000
#define FWCFG_KEY_FILE_DIR  0x0019
#define FWCFG_NAME_SIZE     56

static void
fwcfg_select(uint16_t key)
{
    io_write_word(FWCFG_PORT_SEL, key);
}

static void
fwcfg_read(void *buf, size_t size)
{
    uint8_t *p = buf;

    for (size_t i = 0; i < size; i++) {
        p[i] = io_read_byte(FWCFG_PORT_DATA);
    }
}

static uint32_t
fwcfg_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16)
           | ((uint32_t)p[2] << 8) | p[3];
}

int
fwcfg_read_file(const char *name, char *buf, size_t size)
{
    uint8_t sig[4], count[4], entry[64];
    uint32_t n;

    fwcfg_select(FWCFG_KEY_SIGNATURE);
    fwcfg_read(sig, sizeof(sig));

    if (memcmp(sig, "QEMU", 4) != 0) {
        return ENOENT;
    }

    fwcfg_select(FWCFG_KEY_FILE_DIR);
    fwcfg_read(count, sizeof(count));
    n = fwcfg_be32(count);

    for (uint32_t i = 0; i < n; i++) {
        uint32_t file_size;
        uint16_t key;

        fwcfg_read(entry, sizeof(entry));
        entry[8 + FWCFG_NAME_SIZE - 1] = '\0';

        if (strcmp((const char *)&entry[8], name) != 0) {
            continue;
        }

        file_size = fwcfg_be32(entry);
        key = ((uint16_t)entry[4] << 8) | entry[5];

        if (size == 0) {
            return E2BIG;
        }

        fwcfg_select(key);
        fwcfg_read(buf, ((file_size < size - 1) ? file_size : size - 1));
        buf[((file_size < size - 1) ? file_size : size - 1)] = '\0';
        return (file_size > size - 1) ? E2BIG : 0;
    }

    return ENOENT;
}
