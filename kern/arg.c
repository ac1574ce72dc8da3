/*
 * Kernel command line. arg_setup() keeps a copy of the text for display and
 * splits a second copy into NUL-terminated keys and values, so lookups hand
 * out stable pointers.
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/string.h>
#include <machine/fwcfg.h>

#define ARG_CMDLINE_MAX 1024
#define ARG_MAX         64
#define ARG_EXTRA_FILE  "opt/perfmon/cmdline"

struct arg {
    const char *key;
    const char *value;
};

static char arg_text[ARG_CMDLINE_MAX];
static char arg_split[ARG_CMDLINE_MAX];
static struct arg arg_table[ARG_MAX];
static unsigned int arg_count;

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

        if (len + 1 + strlen(extra) < sizeof(arg_text)) {
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
