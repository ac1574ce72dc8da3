/*
 * The serial shell's word splitting (kern/shell_split.h).
 *
 * One walk does both the check and the split: a first pass only counts
 * the words and finds an open quote, so that a line refused is left as
 * typed; the second rewrites it in place. In place works because every
 * character read gives at most one character written (quotes and the
 * backslashes that escape give none), so the write position never
 * passes the read position.
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/errno.h>
#include <kern/shell_split.h>

static bool
shell_split_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Inside "...", what a backslash escapes (POSIX: $ ` " \ and newline). */
static bool
shell_split_dquote_escapes(char c)
{
    return c == '\\' || c == '"' || c == '$' || c == '`';
}

/*
 * One pass over line: count its words into *nrp; with write, rewrite
 * them in place into argv. Return 0, or EINVAL with *badp the quote left
 * open or the backslash that ends the line.
 */
static int
shell_split_pass(char *line, bool write, char **argv, unsigned int *nrp,
                 char *badp)
{
    const char *r = line;
    char *w = line;
    unsigned int nr = 0;

    for (;;) {
        char quote = '\0';

        while (shell_split_blank(*r)) {
            r++;
        }

        if (*r == '\0') {
            break;
        }

        if (write) {
            argv[nr] = w;
        }

        nr++;

        while (*r != '\0' && (quote != '\0' || !shell_split_blank(*r))) {
            char c = *r++;
            bool keep = true;

            if (quote == '\'') {
                keep = (c != '\'');
            } else if (quote == '"') {
                if (c == '"') {
                    keep = false;
                } else if (c == '\\' && shell_split_dquote_escapes(*r)) {
                    c = *r++;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                continue;
            } else if (c == '\\') {
                if (*r == '\0') {
                    *badp = '\\';
                    return EINVAL;
                }

                c = *r++;
            }

            if (!keep) {
                quote = '\0';
            } else if (write) {
                *w++ = c;
            }
        }

        if (quote != '\0') {
            *badp = quote;
            return EINVAL;
        }

        /* The blank that ended the word, if any, is read before it is
           overwritten: w is at most where that blank was. */
        if (*r != '\0') {
            r++;
        }

        if (write) {
            *w++ = '\0';
        }
    }

    *nrp = nr;
    return 0;
}

int
shell_split(char *line, char **argv, unsigned int max, unsigned int *argcp,
            char *badp)
{
    unsigned int nr;
    int error;

    error = shell_split_pass(line, false, NULL, &nr, badp);

    if (error) {
        return error;
    }

    if (nr > max) {
        return E2BIG;
    }

    error = shell_split_pass(line, true, argv, &nr, badp);

    if (error) {
        return error;       /* not reached: the first pass found none */
    }

    argv[nr] = NULL;
    *argcp = nr;
    return 0;
}
