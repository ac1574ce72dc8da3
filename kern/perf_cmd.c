/*
 * The shell's perf command: it only picks the subcommand, so that the
 * subcommands' files (kern/perfmon_shell.c: list, stat; kern/perf_record.c:
 * record; kern/perf_report.c: report, annotate, script) depend on what they share
 * (kern/perf_util.h) and never on the command. perf_report.c reads what
 * perf_record.c recorded, through a private header (kern/perf_record_i.h);
 * perfmon_shell.c and the sampling files know nothing of each other. No
 * header: the shell finds the command through its table.
 */
#include <kern/perf_record.h>
#include <kern/perf_report.h>
#include <kern/perfmon_shell.h>
#include <kern/printf.h>
#include <kern/shell.h>
#include <kern/string.h>

static void
perf_cmd_run(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        perfmon_shell_list();
    } else if (argc >= 2 && strcmp(argv[1], "stat") == 0) {
        perfmon_shell_stat(argc, argv);
    } else if (argc >= 2 && strcmp(argv[1], "record") == 0) {
        perf_record_cmd_record(argc, argv);
    } else if (argc >= 2 && strcmp(argv[1], "report") == 0) {
        perf_report_cmd_report(argc, argv);
    } else if (argc >= 2 && strcmp(argv[1], "annotate") == 0) {
        perf_report_cmd_annotate(argc, argv);
    } else if (argc >= 2 && strcmp(argv[1], "script") == 0) {
        perf_report_cmd_script(argc, argv);
    } else {
        printf("usage: perf list\n");
        perfmon_shell_stat_usage();
        perf_record_usage();
    }
}

SHELL_CMD_DEFINE(perf_cmd_run, "perf",
                 "list | stat [cpu N|thread NAME|all] EVENTS [MS] [-- WORK] "
                 "| record [TARGET] EVENT[/PERIOD] [MS] [-- WORK] "
                 "| report | annotate SYM | script",
                 "list, count or sample events (help perf for more)");
