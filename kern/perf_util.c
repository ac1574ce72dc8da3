/*
 * What the perf shell subcommands share (kern/perf_util.h): event names,
 * error messages, Ctrl-C.
 *
 * Event names: the generic hardware events (cycles, instructions, ...),
 * the software events (cswitch, migration, tick, xcall, emit, emit1..7,
 * with Linux's context-switches/cs and cpu-migrations/migrations, and
 * ticks), and raw hardware codes as raw:0xCODE. A hardware event counts
 * kernel and user mode; a ":k" or ":u" suffix restricts it to one.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perf_util.h>
#include <kern/perfmon.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <machine/uart.h>

/* Linux perf's names for the software events, and ours. */
struct perf_util_alias {
    const char *name;
    unsigned int id;
};

static const struct perf_util_alias perf_util_aliases[] = {
    { "context-switches", PMU_SOFT_EV_CSWITCH },
    { "cs", PMU_SOFT_EV_CSWITCH },
    { "cpu-migrations", PMU_SOFT_EV_MIGRATION },
    { "migrations", PMU_SOFT_EV_MIGRATION },
    { "ticks", PMU_SOFT_EV_TICK },
};

/* A software event's id by its name or alias. Return 0 or EINVAL. */
static int
perf_util_parse_soft_name(const char *name, uint64_t *idp)
{
    for (unsigned int id = 0; id < PMU_SOFT_NR_EVENTS; id++) {
        if (strcmp(name, pmu_soft_event_name(id)) == 0) {
            *idp = id;
            return 0;
        }
    }

    for (size_t i = 0; i < ARRAY_SIZE(perf_util_aliases); i++) {
        if (strcmp(name, perf_util_aliases[i].name) == 0) {
            *idp = perf_util_aliases[i].id;
            return 0;
        }
    }

    return EINVAL;
}

int
perf_util_parse_event_name(const char *name, uint64_t *idp,
                           unsigned int *flagsp)
{
    unsigned int ring = PERFMON_EF_KERN | PERFMON_EF_USER;
    char copy[PERF_UTIL_NAME_SIZE];
    char *colon;
    int error;

    if (strlen(name) >= sizeof(copy)) {
        return EINVAL;
    }

    strlcpy(copy, name, sizeof(copy));
    colon = strchr(copy, ':');

    if (colon != NULL && strcmp(colon, ":k") == 0) {
        ring = PERFMON_EF_KERN;
        *colon = '\0';
    } else if (colon != NULL && strcmp(colon, ":u") == 0) {
        ring = PERFMON_EF_USER;
        *colon = '\0';
    }

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        if (strcmp(copy, perfmon_generic_name(id)) == 0) {
            *idp = id;
            *flagsp = ring;
            return 0;
        }
    }

    if (strncmp(copy, "raw:", 4) == 0) {
        unsigned long long code;

        /* 64 bits: AMD's event select continues in bits 35:32. */
        if (string_parse_u64(copy + 4, &code) != 0) {
            return EINVAL;
        }

        *idp = code;
        *flagsp = ring | PERFMON_EF_RAW;
        return 0;
    }

    if (colon != NULL) {
        return EINVAL;  /* ring suffixes are for hardware events */
    }

    error = perf_util_parse_soft_name(copy, idp);

    if (error) {
        return error;
    }

    *flagsp = PERFMON_EF_SW;
    return 0;
}

void
perf_util_error(const char *what, int error)
{
    printf("perf: %s: %s (%s)\n", what, errno_name(error), errno_str(error));
}

bool
perf_util_interrupted(void)
{
    char c;

    while (uart_getc(&c)) {
        if (c == 0x03) {
            return true;
        }
    }

    return false;
}
