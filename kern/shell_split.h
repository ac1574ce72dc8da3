/*
 * The serial shell's word splitting (kern/shell_split.c): a command line
 * into words, quoted as a POSIX shell quotes them. Apart from the shell
 * (kern/shell.c) so that the host tests run it as it is.
 */
#ifndef KERN_SHELL_SPLIT_H
#define KERN_SHELL_SPLIT_H

/*
 * Split line, in place, into words as a POSIX shell splits a simple
 * command: blanks (space, tab) separate words; '...' keeps everything
 * between the quotes as it is; "..." too, but for a backslash before
 * \, ", $ or `, which keeps that character only; a backslash outside
 * quotes keeps the next character, whatever it is. Quoted and unquoted
 * parts join into one word (a'b'"c" is abc) and quotes alone make an
 * empty word (''). There is no expansion: $, `, *, ~ and the like are
 * ordinary characters.
 *
 * argv gets the words and a NULL after them (room for max + 1
 * pointers), *argcp their number. Return 0, or EINVAL (a quote left
 * open: *badp is that quote, ' or "; a backslash that ends the line:
 * *badp is \) or E2BIG (more than max words), line then unchanged and
 * argv, *argcp and, for E2BIG, *badp untouched. Any context.
 */
int shell_split(char *line, char **argv, unsigned int max,
                unsigned int *argcp, char *badp);

#endif /* KERN_SHELL_SPLIT_H */
