/*
 * The kernel command line: space-separated words, each "key=value" or a
 * bare "key". Later words override earlier ones with the same key, so text
 * appended by the QEMU runner (see arg_setup) wins over the boot loader's.
 */
#ifndef KERN_ARG_H
#define KERN_ARG_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Parse the boot loader's command line, then append the string QEMU passes
 * as fw_cfg file "opt/perfmon/cmdline" when present. Boot only.
 */
void arg_setup(const char *cmdline);

/* Return the full command line as parsed. Any context. */
const char *arg_cmdline(void);

/*
 * Return the value of key ("" for a bare key), or NULL when absent.
 * Any context.
 */
const char *arg_get(const char *key);

/* True when key is present with exactly this value. Any context. */
bool arg_is_set(const char *key, const char *value);

/*
 * Store key's value as an unsigned integer. Return 0, ENOENT when absent,
 * EINVAL when malformed (then *valuep is unchanged). Any context.
 */
int arg_get_u64(const char *key, uint64_t *valuep);

/*
 * Check every word against the keys the kernel knows and the values each
 * accepts, logging one "command line: ..." error per bad word (unknown
 * key, value out of range or malformed). Return the number of bad words.
 * Boot only, after arg_setup.
 */
unsigned int arg_check(void);

/* The number of bad words arg_check found. Any context. */
unsigned int arg_nr_errors(void);

#endif /* KERN_ARG_H */
