/*
 * The kernel command line: space-separated words, each "key=value" or a
 * bare "key". Later words override earlier ones with the same key, so text
 * appended by the QEMU runner (see arg_setup) wins over the boot loader's.
 */
#ifndef KERN_ARG_H
#define KERN_ARG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/macros.h>

/*
 * A key the kernel reads and the values it accepts: a non-empty string
 * when choice is NULL and max is 0, the one word choice when set, else an
 * integer in [min, max]. Declare one with the ARG_DEFINE_* macros below.
 */
struct arg_key {
    const char *key;
    const char *choice;
    uint64_t min;
    uint64_t max;
};

/*
 * Declare a key in the module that reads it, at file scope. The linker
 * collects the declarations in a table (no central list), against which
 * arg_check rejects a misspelt key or a bad value at boot; a key read only
 * by one test (torture.ops) would otherwise be ignored without a word on
 * every other run.
 *
 *   ARG_DEFINE_STRING(key)         any non-empty value (test=)
 *   ARG_DEFINE_WORD(key, word)     exactly this value (panic=halt)
 *   ARG_DEFINE_U64(key, min, max)  an integer from min to max, max not 0
 *
 * The section's name is a C identifier so that a host linker bounds it
 * with __start_ and __stop_ symbols (the host tests link kern/arg.c);
 * kernel.lds bounds it with arg_keys_start and arg_keys_end.
 */
#define ARG_DEFINE_NAME_(prefix_, line_)    prefix_##line_
#define ARG_DEFINE_NAME(prefix_, line_)     ARG_DEFINE_NAME_(prefix_, line_)

#define ARG_DEFINE_(key_, choice_, min_, max_)                          \
    static const struct arg_key ARG_DEFINE_NAME(arg_key_, __LINE__) = { \
        key_, choice_, min_, max_                                       \
    };                                                                  \
    static const struct arg_key *const                                  \
        ARG_DEFINE_NAME(arg_key_ptr_, __LINE__)                         \
        __section("arg_keys") __used = &ARG_DEFINE_NAME(arg_key_, __LINE__)

#define ARG_DEFINE_STRING(key_)             ARG_DEFINE_(key_, NULL, 0, 0)
#define ARG_DEFINE_WORD(key_, word_)        ARG_DEFINE_(key_, word_, 0, 0)
#define ARG_DEFINE_U64(key_, min_, max_)                                \
    _Static_assert((max_) != 0, "an integer key's maximum is not 0");   \
    ARG_DEFINE_(key_, NULL, min_, max_)

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
 * Check every word against the keys declared with ARG_DEFINE_* and the
 * values each accepts, logging one "command line: ..." error per bad word
 * (unknown key, value out of range or malformed). Return the number of
 * bad words. Boot only, after arg_setup.
 */
unsigned int arg_check(void);

/* The number of bad words arg_check found. Any context. */
unsigned int arg_nr_errors(void);

#endif /* KERN_ARG_H */
