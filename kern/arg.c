/*
 * Kernel command line. arg_setup() keeps a copy of the text for display and
 * splits a second copy into NUL-terminated keys and values, so lookups hand
 * out stable pointers.
 *
 * Every key the kernel reads is declared, with the values it accepts, by
 * the module that reads it (ARG_DEFINE_* in kern/arg.h); the linker
 * gathers the declarations between arg_keys_start and arg_keys_end, and
 * arg_check() looks each word up there.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <machine/fwcfg.h>

#define ARG_CMDLINE_MAX 1024
#define ARG_MAX         64
#define ARG_EXTRA_FILE  "opt/perfmon/cmdline"

struct arg {
    const char *key;
    const char *value;
};

/* The keys modules declare with ARG_DEFINE_* (kernel.lds). */
extern const struct arg_key *const arg_keys_start[];
extern const struct arg_key *const arg_keys_end[];

static char arg_text[ARG_CMDLINE_MAX];
static char arg_split[ARG_CMDLINE_MAX];
static struct arg arg_table[ARG_MAX];
static unsigned int arg_count;
static unsigned int arg_nr_errs;

static void
arg_parse(void)
{
    char *p = arg_split;

    strlcpy(arg_split, arg_text, sizeof(arg_split));
    arg_count = 0;

    while (*p != '\0') {
        struct arg *arg;
        char *eq;

        while (*p == ' ') {
            *p++ = '\0';
        }

        if (*p == '\0') {
            break;
        }

        if (arg_count == ARG_MAX) {
            log_warning("arg: more than %u words, rest ignored", ARG_MAX);
            break;
        }

        arg = &arg_table[arg_count++];
        arg->key = p;
        arg->value = "";

        while (*p != '\0' && *p != ' ') {
            p++;
        }

        eq = strchr(arg->key, '=');

        if (eq != NULL && eq < p) {
            *eq = '\0';
            arg->value = eq + 1;
        }
    }
}

void
arg_setup(const char *cmdline)
{
    char extra[ARG_CMDLINE_MAX / 2];
    size_t len;

    strlcpy(arg_text, cmdline, sizeof(arg_text));

    if (fwcfg_read_file(ARG_EXTRA_FILE, extra, sizeof(extra)) == 0) {
        len = strlen(arg_text);

        /* No separator after an empty boot loader line: no leading blank. */
        if (len == 0) {
            strlcpy(arg_text, extra, sizeof(arg_text));
        } else if (len + 1 + strlen(extra) < sizeof(arg_text)) {
            arg_text[len] = ' ';
            strlcpy(arg_text + len + 1, extra, sizeof(arg_text) - len - 1);
        } else {
            log_warning("arg: extra command line too long, ignored");
        }
    }

    arg_parse();
}

const char *
arg_cmdline(void)
{
    return arg_text;
}

const char *
arg_get(const char *key)
{
    for (unsigned int i = arg_count; i-- > 0;) {
        if (strcmp(arg_table[i].key, key) == 0) {
            return arg_table[i].value;
        }
    }

    return NULL;
}

bool
arg_is_set(const char *key, const char *value)
{
    const char *found = arg_get(key);

    return found != NULL && strcmp(found, value) == 0;
}

int
arg_get_u64(const char *key, uint64_t *valuep)
{
    const char *value = arg_get(key);
    unsigned long long v;

    if (value == NULL) {
        return ENOENT;
    }

    if (string_parse_u64(value, &v) != 0) {
        return EINVAL;
    }

    *valuep = v;
    return 0;
}

/* Distinct symbols to C: the table's size comes from their addresses. */
static size_t
arg_nr_keys(void)
{
    return ((uintptr_t)arg_keys_end - (uintptr_t)arg_keys_start)
           / sizeof(arg_keys_start[0]);
}

static const struct arg_key *
arg_key_lookup(const char *key)
{
    for (size_t i = 0; i < arg_nr_keys(); i++) {
        if (strcmp(arg_keys_start[i]->key, key) == 0) {
            return arg_keys_start[i];
        }
    }

    return NULL;
}

/* Report one problem with word arg; its text names the word as typed. */
static void
arg_report(const struct arg *arg, const char *problem)
{
    arg_nr_errs++;
    log_err("command line: %s%s%s: %s", arg->key,
            (arg->value[0] == '\0') ? "" : "=", arg->value, problem);
}

static void
arg_check_one(const struct arg *arg)
{
    const struct arg_key *known = arg_key_lookup(arg->key);
    unsigned long long v;
    char problem[96];

    if (known == NULL) {
        arg_report(arg, "unknown key (see README, Kernel command line)");
        return;
    }

    if (known->choice != NULL) {
        if (strcmp(arg->value, known->choice) != 0) {
            snprintf(problem, sizeof(problem), "the only value is %s",
                     known->choice);
            arg_report(arg, problem);
        }

        return;
    }

    if (known->max == 0) {
        if (arg->value[0] == '\0') {
            arg_report(arg, "needs a value");
        }

        return;
    }

    if (string_parse_u64(arg->value, &v) != 0 || v < known->min
        || v > known->max) {
        if (known->max == UINT64_MAX) {
            snprintf(problem, sizeof(problem),
                     "needs an integer from %llu (0x for hex)",
                     (unsigned long long)known->min);
        } else {
            snprintf(problem, sizeof(problem),
                     "needs an integer from %llu to %llu",
                     (unsigned long long)known->min,
                     (unsigned long long)known->max);
        }

        arg_report(arg, problem);
    }
}

unsigned int
arg_check(void)
{
    arg_nr_errs = 0;

    for (unsigned int i = 0; i < arg_count; i++) {
        arg_check_one(&arg_table[i]);
    }

    return arg_nr_errs;
}

unsigned int
arg_nr_errors(void)
{
    return arg_nr_errs;
}
