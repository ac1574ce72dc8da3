/*
 * The shell's perf command: it only picks the subcommand, so that the
 * subcommands' files (kern/perf/perf_list.c: list; kern/perf/perf_stat*.c:
 * stat; kern/perf/perf_record*.c: record; kern/perf/perf_report.c,
 * perf_annotate.c, perf_script.c: report, annotate, script) depend on what
 * they share (kern/perf/perf_util.h) and never on the command. report,
 * annotate and script read what perf record recorded, through a private
 * header (kern/perf/perf_record_i.h); list and stat and the sampling
 * files know nothing of each other. No header: the shell finds the
 * command through its table.
 */
#include <stddef.h>

#include <kern/macros.h>
#include <kern/perf/perf_annotate.h>
#include <kern/perf/perf_list.h>
#include <kern/perf/perf_record.h>
#include <kern/perf/perf_report.h>
#include <kern/perf/perf_script.h>
#include <kern/perf/perf_stat.h>
#include <kern/printf.h>
#include <kern/shell.h>
#include <kern/string.h>

#define PERF_CMD_SUBCOMMANDS "list, stat, record, report, annotate, script"

/* Each subcommand, and what help perf SUBCOMMAND prints for it. */
static const struct perf_cmd_sub {
    const char *name;
    void (*usage)(void);
} perf_cmd_subs[] = {
    { "list", perf_list_usage },
    { "stat", perf_stat_usage },
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
    perf_list_usage();
    perf_stat_usage();
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

/*
 * perf --version and perf version, as Linux's: there is no release
 * number to give, so the line says what this perf is.
 */
static void
perf_cmd_version(void)
{
    printf("perf version perfmon: the kernel's shell perf, with Linux perf "
           "6.x's spellings\n");
}

static void
perf_cmd_run(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--version") == 0
                      || strcmp(argv[1], "version") == 0)) {
        perf_cmd_version();
    } else if (argc == 1) {
        printf("perf: which subcommand? (%s; help perf shows their "
               "usage)\n", PERF_CMD_SUBCOMMANDS);
    } else if (strcmp(argv[1], "list") == 0) {
        perf_list_cmd(argc, argv);
    } else if (strcmp(argv[1], "stat") == 0) {
        perf_stat_cmd(argc, argv);
    } else if (strcmp(argv[1], "record") == 0) {
        perf_record_cmd(argc, argv);
    } else if (strcmp(argv[1], "report") == 0) {
        perf_report_cmd(argc, argv);
    } else if (strcmp(argv[1], "annotate") == 0) {
        perf_annotate_cmd(argc, argv);
    } else if (strcmp(argv[1], "script") == 0) {
        perf_script_cmd(argc, argv);
    } else {
        printf("perf: no subcommand '%s' (%s; help perf shows their "
               "usage)\n", argv[1], PERF_CMD_SUBCOMMANDS);
    }
}

SHELL_CMD_DEFINE_USAGE(perf_cmd_run, "perf",
                       "list | stat | record | report | annotate | script",
                       "list, count or sample events (help perf SUB: usage)",
                       perf_cmd_help);
