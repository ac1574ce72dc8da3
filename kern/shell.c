/*
 * Serial shell. The console is polled once a tick: typing speed does not
 * need an interrupt, and polling keeps the UART driver free of locking
 * against an interrupt handler.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <kern/printf.h>
#include <kern/shell.h>
#include <kern/string.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <machine/qemu.h>
#include <machine/uart.h>

#define SHELL_LINE_MAX  128
#define SHELL_ARGS_MAX  16
#define SHELL_PROMPT    "perfmon> "

extern const struct shell_cmd *const shell_cmds_start[];
extern const struct shell_cmd *const shell_cmds_end[];

static size_t
shell_nr_cmds(void)
{
    return ((uintptr_t)shell_cmds_end - (uintptr_t)shell_cmds_start)
           / sizeof(shell_cmds_start[0]);
}

int
shell_exec(char *line)
{
    char *argv[SHELL_ARGS_MAX + 1];
    int argc = 0;
    char *p = line;

    while (*p != '\0' && argc < SHELL_ARGS_MAX) {
        while (*p == ' ' || *p == '\t') {
            *p++ = '\0';
        }

        if (*p == '\0') {
            break;
        }

        argv[argc++] = p;

        while (*p != '\0' && *p != ' ' && *p != '\t') {
            p++;
        }
    }

    argv[argc] = NULL;

    if (argc == 0) {
        return 0;
    }

    for (size_t i = 0; i < shell_nr_cmds(); i++) {
        if (strcmp(shell_cmds_start[i]->name, argv[0]) == 0) {
            shell_cmds_start[i]->fn(argc, argv);
            return 0;
        }
    }

    printf("%s: unknown command (try help)\n", argv[0]);
    return ENOENT;
}

static char
shell_getc(void)
{
    char c;

    while (!uart_getc(&c)) {
        thread_delay(1);
    }

    return c;
}

void
shell_run(void)
{
    char line[SHELL_LINE_MAX];
    size_t len = 0;
    char prev = 0;

    printf("shell ready, type help\n%s", SHELL_PROMPT);

    for (;;) {
        char c = shell_getc();

        if (c == '\n' && prev == '\r') {
            prev = c;
            continue;   /* a CR LF pair is one end of line */
        }

        prev = c;

        if (c == '\r' || c == '\n') {
            printf("\n");
            line[len] = '\0';
            shell_exec(line);
            len = 0;
            printf("%s", SHELL_PROMPT);
        } else if (c == 0x7f || c == '\b') {
            if (len > 0) {
                len--;
                printf("\b \b");
            }
        } else if (c == 0x03) {
            len = 0;    /* Ctrl-C drops the line */
            printf("^C\n%s", SHELL_PROMPT);
        } else if (c >= ' ' && c < 0x7f && len < sizeof(line) - 1) {
            line[len++] = c;
            printf("%c", c);
        }
    }
}

static void
shell_cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;

    for (size_t i = 0; i < shell_nr_cmds(); i++) {
        const struct shell_cmd *cmd = shell_cmds_start[i];
        char usage[48];

        snprintf(usage, sizeof(usage), "%s %s", cmd->name, cmd->usage);
        printf("  %-34s %s\n", usage, cmd->help);
    }
}

SHELL_CMD_DEFINE(shell_cmd_help, "help", "", "list the commands");

static void
shell_cmd_cpus(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("%u CPUs, TSC %llu Hz, %u Hz tick\n", cpu_count(),
           (unsigned long long)cpu_get_freq(), CLOCK_HZ);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        printf("cpu%u apic %u %s ticks %llu\n", i, cpu_apic_id(i),
               cpu_online(i) ? "online" : "offline",
               (unsigned long long)clock_nr_ticks(i));
    }
}

SHELL_CMD_DEFINE(shell_cmd_cpus, "cpus", "", "list the processors");

static void
shell_print_thread(struct thread *thread, void *arg)
{
    (void)arg;
    printf("%-20s %3u %-8s %4u %10llu\n", thread->name, thread_cpu(thread),
           thread_state_name(thread), thread->priority,
           (unsigned long long)thread->nr_switches);
}

static void
shell_cmd_threads(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("%-20s %3s %-8s %4s %10s\n", "NAME", "CPU", "STATE", "PRIO",
           "SWITCHES");

    for (unsigned int i = 0; i < cpu_count(); i++) {
        /* Idle threads are per-CPU and not in the thread list. */
        printf("%-20s %3u %-8s %4u %10s\n", "(idle)", i, "-", 0U, "-");
    }

    thread_for_each(shell_print_thread, NULL);
}

SHELL_CMD_DEFINE(shell_cmd_threads, "threads", "",
                 "list threads: name, CPU, state, priority, switches");

static void
shell_print_syscnt(const struct syscnt *syscnt, void *arg)
{
    (void)arg;
    printf("%-40s %20llu\n", syscnt->name,
           (unsigned long long)syscnt_read(syscnt));
}

static void
shell_cmd_syscnt(int argc, char **argv)
{
    syscnt_for_each((argc > 1) ? argv[1] : "", shell_print_syscnt, NULL);
}

SHELL_CMD_DEFINE(shell_cmd_syscnt, "syscnt", "[prefix]",
                 "list system counters");

static void
shell_cmd_poweroff(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("powering off\n");
    qemu_exit(QEMU_EXIT_PASS);
}

SHELL_CMD_DEFINE(shell_cmd_poweroff, "poweroff", "", "stop the machine");
