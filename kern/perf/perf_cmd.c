/*
 * The shell's perf command: it only picks the subcommand, so that the
 * subcommands' files (kern/perf/perf_stat.c: list, stat; kern/perf/perf_record.c:
 * record; kern/perf/perf_report.c: report, annotate, script) depend on what they
 * share (kern/perf/perf_util.h) and never on the command. perf_report.c reads what
 * perf_record.c recorded, through a private header (kern/perf/perf_record_i.h);
 * perfmon_shell.c and the sampling files know nothing of each other. No
 * header: the shell finds the command through its table.
 */
#include <stddef.h>

#include <kern/macros.h>
#include <kern/perf/perf_record.h>
#include <kern/perf/perf_report.h>
#include <kern/perf/perf_stat.h>
#include <kern/printf.h>
#include <kern/shell.h>
#include <kern/string.h>

#define PERF_CMD_SUBCOMMANDS "list, stat, record, report, annotate, script"

static void
perf_cmd_list_usage(void)
{
    printf("usage: perf list\n"
           "  every event with a one-line description\n");
}

/* Each subcommand, and what help perf SUBCOMMAND prints for it. */
static const struct perf_cmd_sub {
    const char *name;
    void (*usage)(void);
} perf_cmd_subs[] = {
    { "list", perf_cmd_list_usage },
    { "stat", perfmon_shell_stat_usage },
    { "record", perf_record_usage },
    { "report", perf_record_usage },
    { "annotate", perf_record_usage },
    { "script", perf_record_usage },
};

static const struct perf_cmd_sub *
perf_cmd_sub_lookup(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(perf_cmd_subs); i++) {
        if (strcmp(perf_cmd_subs[i].name, name) == 0) {
            return &perf_cmd_subs[i];
        }
    }

    return NULL;
}

static void
perf_cmd_usage(void)
{
    perf_cmd_list_usage();
    perfmon_shell_stat_usage();
    perf_record_usage();
}

/* help perf [SUBCOMMAND]: argv starts at "perf". */
static void
perf_cmd_help(int argc, char **argv)
{
    const struct perf_cmd_sub *sub;

    if (argc == 1) {
        perf_cmd_usage();
        return;
    }

    sub = perf_cmd_sub_lookup(argv[1]);

    if (argc > 2 || sub == NULL) {
        printf("help: perf has no subcommand '%s' (%s)\n",
               argv[argc - 1], PERF_CMD_SUBCOMMANDS);
        return;
    }

    sub->usage();
}

static void
perf_cmd_run(int argc, char **argv)
{
    if (argc == 1) {
        printf("perf: which subcommand? (%s; help perf shows their "
               "usage)\n", PERF_CMD_SUBCOMMANDS);
    } else if (strcmp(argv[1], "list") == 0) {
        if (argc > 2) {
            printf("perf list: takes no arguments (got '%s')\n", argv[2]);
        } else {
            perfmon_shell_list();
        }
    } else if (strcmp(argv[1], "stat") == 0) {
        perfmon_shell_stat(argc, argv);
    } else if (strcmp(argv[1], "record") == 0) {
        perf_record_cmd_record(argc, argv);
    } else if (strcmp(argv[1], "report") == 0) {
        perf_report_cmd_report(argc, argv);
    } else if (strcmp(argv[1], "annotate") == 0) {
        perf_report_cmd_annotate(argc, argv);
    } else if (strcmp(argv[1], "script") == 0) {
        perf_report_cmd_script(argc, argv);
    } else {
        printf("perf: no subcommand '%s' (%s; help perf shows their "
               "usage)\n", argv[1], PERF_CMD_SUBCOMMANDS);
    }
}

SHELL_CMD_DEFINE_USAGE(perf_cmd_run, "perf",
                       "list | stat | record | report | annotate | script",
                       "list, count or sample events (help perf SUB: usage)",
                       perf_cmd_help);
