/*
 * What the perf shell subcommands share (kern/perf/perf_util.h): event names,
 * error messages, percentages, Ctrl-C.
 *
 * Event names: the generic hardware events (cycles, instructions, ...,
 * with Linux's cpu-cycles and branch-instructions),
 * the software events (cswitch, migration, tick, xcall, emit, emit1..7,
 * with Linux's context-switches/cs and cpu-migrations/migrations, and
 * ticks), Linux's clocks task-clock and cpu-clock, and raw hardware codes
 * as raw:0xCODE. A hardware event counts kernel and user mode; a ":k" or
 * ":u" suffix restricts it to one. Software events and clocks happen in
 * kernel mode only: ":k" changes nothing and ":u" is refused.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/console.h>
#include <kern/cpu.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perf/perf_util.h>
#include <kern/perfmon.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>

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

/* Linux perf's other names for the generic hardware events. */
static const struct perf_util_alias perf_util_hw_aliases[] = {
    { "cpu-cycles", PERFMON_EV_CYCLE },
    { "branch-instructions", PERFMON_EV_BRANCH },
};

/* Why a name is not an event, for the message perf_util_parse_event prints. */
enum perf_util_why {
    PERF_UTIL_OK,
    PERF_UTIL_UNKNOWN,          /* no such event */
    PERF_UTIL_TOO_LONG,
    PERF_UTIL_BAD_MODIFIER,     /* a letter other than k and u */
    PERF_UTIL_NO_MODIFIER,      /* nothing after the colon */
    PERF_UTIL_USER_SOFT,        /* :u on a software event or a clock */
};

/* Linux's clocks, both perfmon's clock (PERFMON_EF_CLOCK). */
static const char *const perf_util_clocks[] = { "task-clock", "cpu-clock" };

/* Parse a modifier string ("k", "u", "ku") into ring flags. */
static enum perf_util_why
perf_util_parse_modifiers(const char *mods, unsigned int *ringp, char *badp)
{
    unsigned int ring = 0;

    if (*mods == '\0') {
        return PERF_UTIL_NO_MODIFIER;
    }

    for (const char *m = mods; *m != '\0'; m++) {
        if (*m == 'k') {
            ring |= PERFMON_EF_KERN;
        } else if (*m == 'u') {
            ring |= PERFMON_EF_USER;
        } else {
            *badp = *m;
            return PERF_UTIL_BAD_MODIFIER;
        }
    }

    *ringp = (ring == 0) ? (PERFMON_EF_KERN | PERFMON_EF_USER) : ring;
    return PERF_UTIL_OK;
}

static enum perf_util_why
perf_util_parse(const char *name, struct perf_util_event *ev, char *badp)
{
    unsigned int ring = PERFMON_EF_KERN | PERFMON_EF_USER;
    char copy[PERF_UTIL_NAME_SIZE];
    enum perf_util_why why;
    uint64_t id;
    char *colon;

    if (strlen(name) >= sizeof(copy)) {
        return PERF_UTIL_TOO_LONG;
    }

    strlcpy(copy, name, sizeof(copy));
    colon = strchr(copy, ':');

    /* raw:0xCODE[:mods]: the first colon belongs to the name. */
    if (colon != NULL && strncmp(copy, "raw:", 4) == 0) {
        colon = strchr(copy + 4, ':');
    }

    if (colon != NULL) {
        *colon = '\0';
        why = perf_util_parse_modifiers(colon + 1, &ring, badp);

        if (why != PERF_UTIL_OK) {
            return why;
        }
    }

    for (unsigned int i = 0; i < PERFMON_NR_GENERIC_EVENTS; i++) {
        if (strcmp(copy, perfmon_generic_name(i)) == 0) {
            *ev = (struct perf_util_event){ .id = i, .flags = ring };
            return PERF_UTIL_OK;
        }
    }

    for (size_t i = 0; i < ARRAY_SIZE(perf_util_hw_aliases); i++) {
        if (strcmp(copy, perf_util_hw_aliases[i].name) == 0) {
            *ev = (struct perf_util_event){
                .id = perf_util_hw_aliases[i].id, .flags = ring,
            };
            return PERF_UTIL_OK;
        }
    }

    if (strncmp(copy, "raw:", 4) == 0) {
        unsigned long long code;

        /* 64 bits: AMD's event select continues in bits 35:32. */
        if (string_parse_u64(copy + 4, &code) != 0) {
            return PERF_UTIL_UNKNOWN;
        }

        *ev = (struct perf_util_event){
            .id = code, .flags = ring | PERFMON_EF_RAW,
        };
        return PERF_UTIL_OK;
    }

    /* What follows happens in kernel mode only: :k is all of it. */
    if (!(ring & PERFMON_EF_KERN)) {
        why = PERF_UTIL_USER_SOFT;
    } else {
        why = PERF_UTIL_OK;
    }

    for (size_t i = 0; i < ARRAY_SIZE(perf_util_clocks); i++) {
        if (strcmp(copy, perf_util_clocks[i]) == 0) {
            *ev = (struct perf_util_event){
                .id = PERFMON_CLOCK, .flags = PERFMON_EF_CLOCK, .clock = true,
            };
            return why;
        }
    }

    if (perf_util_parse_soft_name(copy, &id) != 0) {
        return PERF_UTIL_UNKNOWN;
    }

    *ev = (struct perf_util_event){ .id = id, .flags = PERFMON_EF_SW };
    return why;
}

int
perf_util_parse_event(const char *name, struct perf_util_event *ev)
{
    struct perf_util_event parsed;
    char bad = 0;

    /* Into a copy: a refused name (:u on tick) is parsed all the same. */
    switch (perf_util_parse(name, &parsed, &bad)) {
    case PERF_UTIL_OK:
        *ev = parsed;
        return 0;
    case PERF_UTIL_TOO_LONG:
        printf("perf: event name '%s' is too long (at most %u characters)\n",
               name, (unsigned int)PERF_UTIL_NAME_SIZE - 1);
        break;
    case PERF_UTIL_BAD_MODIFIER:
        printf("perf: '%s': no modifier '%c' (:k kernel, :u user, :ku "
               "both)\n", name, bad);
        break;
    case PERF_UTIL_NO_MODIFIER:
        printf("perf: '%s': no modifier after ':' (:k kernel, :u user, :ku "
               "both; or no colon)\n", name);
        break;
    case PERF_UTIL_USER_SOFT:
        printf("perf: '%s': software events and clocks happen in kernel "
               "mode only, so :u counts nothing (drop it, or use :k)\n",
               name);
        break;
    default:
        printf("perf: unknown event '%s' (see perf list)\n", name);
        break;
    }

    return EINVAL;
}

bool
perf_util_refuse_command(const char *cmd, const char *word)
{
    /* kern/perf/perf_work.c's, which this file does not include. */
    static const char *const kinds[] = { "spin", "pingpong", "calltree" };
    struct perf_util_event ev;
    char bad;

    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
        if (strcmp(word, kinds[i]) == 0) {
            printf("%s: '%s' is a workload: it goes after --, as -- %s "
                   "100\n", cmd, word, word);
            return true;
        }
    }

    if (strchr(word, ',') != NULL || strchr(word, ':') != NULL
        || strchr(word, '{') != NULL || strchr(word, '/') != NULL
        || perf_util_parse(word, &ev, &bad) == PERF_UTIL_OK) {
        return false;
    }

    printf("%s: '%s' is neither an event (see perf list) nor a workload: "
           "the workloads are spin MS, pingpong N and calltree N, after "
           "--, as -- spin 100\n", cmd, word);
    return true;
}

unsigned int
perf_util_online_cpus(unsigned int *cpus)
{
    unsigned int n = 0;

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        if (cpu_online(cpu)) {
            cpus[n++] = cpu;
        }
    }

    return n;
}

/* Check one CPU of a list; return 0 or EINVAL after a message. */
static int
perf_util_check_cpu(unsigned long long cpu)
{
    if (cpu >= cpu_count()) {
        printf("perf: no CPU %llu: CPUs are 0 to %u\n", cpu,
               cpu_count() - 1);
        return EINVAL;
    }

    if (!cpu_online((unsigned int)cpu)) {
        printf("perf: CPU %llu is offline (see cpus)\n", cpu);
        return EINVAL;
    }

    return 0;
}

int
perf_util_parse_cpus(const char *list, unsigned int *cpus,
                     unsigned int *nr_cpusp)
{
    uint64_t seen = 0;
    unsigned int n = 0;
    const char *p = list;

    while (*p != '\0') {
        char word[24];
        const char *comma = strchr(p, ',');
        size_t len = (comma == NULL) ? strlen(p) : (size_t)(comma - p);
        unsigned long long first, last;
        char *dash;

        if (len == 0 || len >= sizeof(word)) {
            goto bad;
        }

        memcpy(word, p, len);
        word[len] = '\0';
        dash = strchr(word, '-');

        if (dash != NULL) {
            *dash = '\0';
        }

        if (string_parse_u64(word, &first) != 0
            || (dash != NULL && string_parse_u64(dash + 1, &last) != 0)) {
            goto bad;
        }

        if (dash == NULL) {
            last = first;
        }

        if (first > last) {
            goto bad;
        }

        /* The last first: the loop below then stays under CPU_MAX. */
        if (perf_util_check_cpu(last) != 0) {
            return EINVAL;
        }

        for (unsigned long long cpu = first; cpu <= last; cpu++) {
            if (perf_util_check_cpu(cpu) != 0) {
                return EINVAL;
            }

            if (!(seen & (1ULL << cpu))) {
                seen |= 1ULL << cpu;
                cpus[n++] = (unsigned int)cpu;
            }
        }

        p += len + (p[len] == ',');
    }

    if (n == 0) {
        goto bad;
    }

    *nr_cpusp = n;
    return 0;

bad:
    printf("perf: bad CPU list '%s': CPU numbers 0 to %u, as 0,2-3\n", list,
           cpu_count() - 1);
    return EINVAL;
}

int
perf_util_parse_tid(const char *word, struct thread **threadp)
{
    unsigned long long tid;

    if (string_parse_u64(word, &tid) != 0 || tid > UINT32_MAX) {
        printf("perf: bad thread id '%s': a number, as perf script prints "
               "it (see threads for names)\n", word);
        return EINVAL;
    }

    if (tid == 0) {
        printf("perf: thread id 0 is the idle threads, one per CPU: count "
               "a CPU's idle time with -C N\n");
        return EINVAL;
    }

    *threadp = thread_lookup_id((uint32_t)tid);

    if (*threadp == NULL) {
        printf("perf: no thread with id %llu (it ended, or never was)\n",
               tid);
        return EINVAL;
    }

    return 0;
}

int
perf_util_format_pct(char *buf, size_t size, uint64_t part, uint64_t total)
{
    uint64_t bp = (total == 0) ? 0 : part * 10000 / total;

    return snprintf(buf, size, "%llu.%02llu%%", (unsigned long long)(bp / 100),
                    (unsigned long long)(bp % 100));
}

void
perf_util_print_pct(uint64_t part, uint64_t total)
{
    uint64_t bp = (total == 0) ? 0 : part * 10000 / total;

    printf("%6llu.%02llu%%", (unsigned long long)(bp / 100),
           (unsigned long long)(bp % 100));
}

void
perf_util_error(const char *what, int error)
{
    printf("perf: %s: %s (%s)\n", what, errno_name(error), errno_str(error));
}

bool
perf_util_interrupted(void)
{
    return console_take(0x03);
}
