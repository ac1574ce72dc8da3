/*
 * Serial shell. The console is polled once a tick: typing speed does not
 * need an interrupt, and polling keeps the UART driver free of locking
 * against an interrupt handler.
 *
 * Line editing: backspace, Ctrl-C (drop the line), Ctrl-U (erase the
 * line), Ctrl-W (erase the word before the cursor), and up/down arrows
 * (ESC [ A / ESC [ B) through the last SHELL_HISTORY_SIZE lines. A line
 * is split into words as a POSIX shell splits it, quotes and backslashes
 * included (kern/shell_split.h).
 *
 * The line being edited and the history are static, not on the shell
 * thread's stack: a line is SHELL_LINE_MAX characters (perf's command
 * lines with a dozen events and a workload), and the stack is 16 KiB
 * (THREAD_STACK_SIZE) for everything the commands then run on it. One
 * shell thread edits them; shell_exec keeps only its word pointers on
 * the stack.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <kern/printf.h>
#include <kern/shell.h>
#include <kern/shell_split.h>
#include <kern/string.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <machine/qemu.h>
#include <machine/uart.h>

/* Characters in a line; words in it (their pointers: 520 bytes of stack). */
#define SHELL_LINE_MAX  1024U
#define SHELL_ARGS_MAX  64U
#define SHELL_PROMPT    "perfmon> "
#define SHELL_HISTORY_SIZE 8

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
    unsigned int argc;
    char bad;
    int error;

    error = shell_split(line, argv, SHELL_ARGS_MAX, &argc, &bad);

    if (error == E2BIG) {
        printf("too many words: %u at most, not run\n", SHELL_ARGS_MAX);
        return error;
    } else if (error && bad == '\\') {
        printf("a backslash ends the line and escapes nothing, not run\n");
        return error;
    } else if (error) {
        printf("unterminated %s quote (%c), not run\n",
               (bad == '\'') ? "single" : "double", bad);
        return error;
    }

    if (argc == 0) {
        return 0;
    }

    for (size_t i = 0; i < shell_nr_cmds(); i++) {
        if (strcmp(shell_cmds_start[i]->name, argv[0]) == 0) {
            shell_cmds_start[i]->fn((int)argc, argv);
            return 0;
        }
    }

    printf("%s: unknown command (try help)\n", argv[0]);
    return ENOENT;
}

/*
 * For commands that take no arguments: print an error and return false
 * when some were given.
 */
static bool
shell_no_args(int argc, char **argv)
{
    if (argc > 1) {
        printf("%s: takes no arguments (got '%s')\n", argv[0], argv[1]);
        return false;
    }

    return true;
}

/* The history: a ring of the last lines run, oldest overwritten. */
static char shell_history[SHELL_HISTORY_SIZE][SHELL_LINE_MAX + 1];
static unsigned int shell_history_count;    /* lines ever added */

static void
shell_history_add(const char *line)
{
    const char *last = shell_history[(shell_history_count - 1)
                                     % SHELL_HISTORY_SIZE];

    if (line[0] == '\0'
        || (shell_history_count > 0 && strcmp(last, line) == 0)) {
        return;
    }

    strlcpy(shell_history[shell_history_count % SHELL_HISTORY_SIZE], line,
            sizeof(shell_history[0]));
    shell_history_count++;
}

/* Erase len characters shown before the cursor. */
static void
shell_erase(size_t len)
{
    for (size_t i = 0; i < len; i++) {
        printf("\b \b");
    }
}

/*
 * Replace the line being edited with history entry back (1 = the last
 * line run), or an empty line for 0. Return the new length.
 */
static size_t
shell_history_recall(char *line, size_t len, unsigned int back)
{
    shell_erase(len);

    if (back == 0) {
        line[0] = '\0';
        return 0;
    }

    strlcpy(line, shell_history[(shell_history_count - back)
                                % SHELL_HISTORY_SIZE],
            sizeof(shell_history[0]));
    printf("%s", line);
    return strlen(line);
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

/* The line being edited (see the top of the file: not on the stack). */
static char shell_line[SHELL_LINE_MAX + 1];

void
shell_run(void)
{
    char *line = shell_line;
    size_t len = 0;
    unsigned int back = 0;      /* history position being shown */
    unsigned int esc = 0;       /* bytes of an ESC [ sequence seen */
    bool cut = false;           /* the line hit SHELL_LINE_MAX */
    char prev = 0;

    printf("shell ready, type help\n%s", SHELL_PROMPT);

    for (;;) {
        char c = shell_getc();

        if (c == '\n' && prev == '\r') {
            prev = c;
            continue;   /* a CR LF pair is one end of line */
        }

        prev = c;

        if (esc == 1) {
            esc = (c == '[') ? 2 : 0;
            continue;
        }

        if (esc == 2) {
            esc = 0;

            if (c == 'A' && back < shell_history_count
                && back < SHELL_HISTORY_SIZE) {
                len = shell_history_recall(line, len, ++back);
            } else if (c == 'B' && back > 0) {
                len = shell_history_recall(line, len, --back);
            }

            continue;
        }

        if (c == 0x1b) {
            esc = 1;
        } else if (c == '\r' || c == '\n') {
            printf("\n");
            line[len] = '\0';

            if (cut) {
                printf("line too long: %u characters at most, not run\n",
                       SHELL_LINE_MAX);
            } else {
                shell_history_add(line);
                shell_exec(line);
            }

            len = 0;
            back = 0;
            cut = false;
            printf("%s", SHELL_PROMPT);
        } else if (c == 0x7f || c == '\b') {
            if (len > 0) {
                len--;
                printf("\b \b");
            }
        } else if (c == 0x03) {
            len = 0;    /* Ctrl-C drops the line */
            back = 0;
            cut = false;
            printf("^C\n%s", SHELL_PROMPT);
        } else if (c == 0x15) {
            shell_erase(len);   /* Ctrl-U */
            len = 0;
        } else if (c == 0x17) {
            size_t end = len;   /* Ctrl-W: blanks, then the word */

            while (len > 0 && line[len - 1] == ' ') {
                len--;
            }

            while (len > 0 && line[len - 1] != ' ') {
                len--;
            }

            shell_erase(end - len);
        } else if (c >= ' ' && c < 0x7f) {
            if (len < SHELL_LINE_MAX) {
                line[len++] = c;
                printf("%c", c);
            } else {
                cut = true;
            }
        }
    }
}

static void
shell_cmd_help(int argc, char **argv)
{
    for (size_t i = 0; i < shell_nr_cmds(); i++) {
        const struct shell_cmd *cmd = shell_cmds_start[i];
        char usage[48];

        if (argc >= 2) {
            if (strcmp(argv[1], cmd->name) != 0) {
                continue;
            }

            if (cmd->usage_fn != NULL) {
                cmd->usage_fn(argc - 1, argv + 1);
            } else if (argc > 2) {
                printf("help: %s has no subcommands (got '%s'); try help "
                       "%s\n", cmd->name, argv[2], cmd->name);
            } else {
                printf("usage: %s %s\n  %s\n", cmd->name, cmd->usage,
                       cmd->help);
            }

            return;
        }

        snprintf(usage, sizeof(usage), "%s %s", cmd->name, cmd->usage);
        printf("  %-34s %s\n", (strlen(usage) > 34) ? cmd->name : usage,
               cmd->help);
    }

    if (argc >= 2) {
        printf("help: no command '%s' (try help)\n", argv[1]);
    } else {
        printf("help CMD shows one command's usage; keys: up/down history, "
               "Ctrl-U, Ctrl-W, Ctrl-C\n");
    }
}

SHELL_CMD_DEFINE(shell_cmd_help, "help", "[command [subcommand]]",
                 "list the commands, or show one's usage");

static void
shell_cmd_cpus(int argc, char **argv)
{
    if (!shell_no_args(argc, argv)) {
        return;
    }

    printf("%u CPU%s, TSC %llu Hz, %u Hz tick\n", cpu_count(),
           (cpu_count() == 1) ? "" : "s",
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
    printf("%-20s %5u %3u %-8s %4u %10llu\n", thread->name,
           (unsigned int)thread_id(thread), thread_cpu(thread),
           thread_state_name(thread), thread->priority,
           (unsigned long long)thread->nr_switches);
}

static void
shell_cmd_threads(int argc, char **argv)
{
    if (!shell_no_args(argc, argv)) {
        return;
    }

    printf("%-20s %5s %3s %-8s %4s %10s\n", "NAME", "TID", "CPU", "STATE",
           "PRIO", "SWITCHES");
    thread_for_each(shell_print_thread, NULL);
    /*
     * The per-CPU idle threads are not in the thread list, so perf stat
     * cannot name them: they are left out here too.
     */
    printf("(one idle thread per CPU, id 0, not listed: perf stat cpu N "
           "counts a CPU's idle time)\n");
}

SHELL_CMD_DEFINE(shell_cmd_threads, "threads", "",
                 "list threads: name, id, CPU, state, priority, switches");

static void
shell_print_syscnt(const struct syscnt *syscnt, void *arg)
{
    unsigned int *nr_printed = arg;

    (*nr_printed)++;
    printf("%-40s %20llu\n", syscnt->name,
           (unsigned long long)syscnt_read(syscnt));
}

static void
shell_cmd_syscnt(int argc, char **argv)
{
    unsigned int nr_printed = 0;

    if (argc > 2) {
        printf("usage: syscnt [prefix]\n");
        return;
    }

    syscnt_for_each((argc > 1) ? argv[1] : "", shell_print_syscnt,
                    &nr_printed);

    if (nr_printed == 0) {
        printf("syscnt: no counter name starts with '%s'\n", argv[1]);
    }
}

SHELL_CMD_DEFINE(shell_cmd_syscnt, "syscnt", "[prefix]",
                 "list system counters");

static void
shell_cmd_poweroff(int argc, char **argv)
{
    if (!shell_no_args(argc, argv)) {
        return;
    }

    printf("powering off\n");
    qemu_exit(QEMU_EXIT_PASS);
}

SHELL_CMD_DEFINE(shell_cmd_poweroff, "poweroff", "", "stop the machine");
