/*
 * Serial shell: a line editor on the console and commands that modules
 * register with SHELL_CMD_DEFINE (a linker-section table).
 */
#ifndef KERN_SHELL_H
#define KERN_SHELL_H

#include <kern/macros.h>

struct shell_cmd {
    const char *name;
    const char *usage;      /* arguments, e.g. "[prefix]" */
    const char *help;       /* one line */
    void (*fn)(int argc, char **argv);

    /*
     * Optional: print the full usage for "help NAME [WORD...]", argv
     * starting at NAME; NULL prints usage and help.
     */
    void (*usage_fn)(int argc, char **argv);
};

#define SHELL_CMD_DEFINE_USAGE(fn_, name_, usage_, help_, usage_fn_)    \
    static const struct shell_cmd shell_cmd_##fn_ = {                   \
        name_, usage_, help_, fn_, usage_fn_                            \
    };                                                                  \
    static const struct shell_cmd *const shell_cmd_ptr_##fn_            \
        __section(".shell_cmds") __used = &shell_cmd_##fn_

#define SHELL_CMD_DEFINE(fn_, name_, usage_, help_)                     \
    SHELL_CMD_DEFINE_USAGE(fn_, name_, usage_, help_, NULL)

/*
 * Run one command line as if typed: its words split as a POSIX shell
 * splits them (kern/shell_split.h; line is rewritten in place). Return
 * 0, ENOENT for an unknown command, or, after a message and running
 * nothing, EINVAL (a quote left open, a backslash ending the line) or
 * E2BIG (more words than the shell takes). Thread context.
 */
int shell_exec(char *line);

/* Read and run commands from the console forever. Thread context. */
void shell_run(void) __noreturn;

#endif /* KERN_SHELL_H */
