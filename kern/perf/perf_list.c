/*
 * perf list (kern/perf/perf_list.h): the generic hardware events, raw
 * codes, the software events and the clocks, as the perf commands name
 * them (kern/perf/perf_util.c parses the names), described from what
 * perfmon says of its devices.
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/perf/perf_list.h>
#include <kern/perfmon.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>

static const char *const perf_list_generic_help[] = {
    [PERFMON_EV_CYCLE] = "core cycles while not halted (cpu-cycles)",
    [PERFMON_EV_REF_CYCLE] = "reference cycles (TSC rate) while not halted",
    [PERFMON_EV_INSTRUCTION] = "instructions retired",
    [PERFMON_EV_CACHE_REF] = "last level cache references",
    [PERFMON_EV_CACHE_MISS] = "last level cache misses",
    [PERFMON_EV_BRANCH] = "branch instructions retired "
                          "(branch-instructions)",
    [PERFMON_EV_BRANCH_MISS] = "mispredicted branches retired",
};

static const char *const perf_list_soft_help[] = {
    [PMU_SOFT_EV_CSWITCH] = "context switches away from the thread "
                            "(context-switches, cs)",
    [PMU_SOFT_EV_MIGRATION] = "a thread starting on another CPU "
                              "(cpu-migrations, migrations)",
    [PMU_SOFT_EV_TICK] = "clock ticks, 100 per second per CPU (ticks)",
    [PMU_SOFT_EV_XCALL] = "cross-CPU calls received",
};

/* The hardware events, then raw codes where a PMU takes them. */
static void
perf_list_print_hw(void)
{
    struct perfmon_dev_info hw;
    bool have_hw = (perfmon_dev_info(false, &hw) == 0);

    if (!have_hw) {
        printf("hardware events: none counted here (no hardware PMU)\n");
    } else {
        printf("hardware events (%s, %u counters, :k kernel / :u user "
               "only):\n", hw.name, hw.nr_counters);

        /* The driver logged them once at boot; they stay unusable. */
        if (hw.fw_counters != 0) {
            printf("  (firmware holds counters 0x%llx, enabled at boot: "
                   "left alone, not counted above)\n",
                   (unsigned long long)hw.fw_counters);
        }
    }

    for (unsigned int id = 0; id < PERFMON_NR_GENERIC_EVENTS; id++) {
        int error = perfmon_event_check(id, PERFMON_EF_KERN
                                            | PERFMON_EF_USER);

        printf("  %-20s %s%s\n", perfmon_generic_name(id),
               perf_list_generic_help[id],
               (error == 0) ? "" : " [unavailable]");
    }

    if (have_hw) {
        printf("  %-20s %s\n", "raw:0xCODE",
               "raw event code, validated by the driver");
    }
}

/* The software events and the clocks. */
static void
perf_list_print_sw(void)
{
    struct perfmon_dev_info sw;
    bool have_sw = (perfmon_dev_info(true, &sw) == 0);

    if (have_sw) {
        printf("software events (%s, %u counters of %u bits):\n", sw.name,
               sw.nr_counters, sw.min_width);

        for (unsigned int id = 0; id < PMU_SOFT_NR_EVENTS; id++) {
            if (id < PMU_SOFT_EV_EMIT) {
                printf("  %-20s %s\n", pmu_soft_event_name(id),
                       perf_list_soft_help[id]);
            } else {
                printf("  %-20s units code emits on channel %u "
                       "(pmu_soft_emit_channel)\n", pmu_soft_event_name(id),
                       id - PMU_SOFT_EV_EMIT);
            }
        }

        printf("  %-20s %s\n  %-20s %s\n", "task-clock",
               "time the targets ran, in ms (perf stat only)", "cpu-clock",
               "the same, Linux's name for CPU targets");
    }

    printf("software events and clocks take :k (kernel mode is all there "
           "is), not :u\n");
}

void
perf_list_usage(void)
{
    printf("usage: perf list [hw | sw]\n"
           "  every event with a one-line description; hw (hardware) or "
           "sw (software)\n  only those\n");
}

void
perf_list_cmd(int argc, char **argv)
{
    bool hw = true, sw = true;

    if (argc > 3) {
        printf("perf list: one event class at most (got '%s' after '%s')\n",
               argv[3], argv[2]);
        return;
    }

    if (argc == 3) {
        hw = strcmp(argv[2], "hw") == 0 || strcmp(argv[2], "hardware") == 0;
        sw = strcmp(argv[2], "sw") == 0 || strcmp(argv[2], "software") == 0;

        if (!hw && !sw) {
            printf("perf list: no event class '%s' (hw or hardware, sw or "
                   "software)\n", argv[2]);
            return;
        }
    }

    if (hw) {
        perf_list_print_hw();
    }

    if (sw) {
        perf_list_print_sw();
    }
}
