/*
 * QEMU firmware configuration device (fw_cfg), read through I/O ports.
 * QEMU documentation: docs/specs/fw_cfg.rst.
 */
#ifndef X86_FWCFG_H
#define X86_FWCFG_H

#include <stddef.h>

/*
 * Copy the named fw_cfg file into buf as a NUL-terminated string. Return
 * 0, ENOENT when QEMU has no such file or no fw_cfg device, E2BIG when
 * truncated. Boot only.
 */
int fwcfg_read_file(const char *name, char *buf, size_t size);

#endif /* X86_FWCFG_H */
