/*
 * Host tests of the serial shell's word splitting (kern/shell_split.c):
 * each line split as a POSIX shell splits it (checked by hand against
 * sh's rules), and every refused line left as typed.
 */
#include <string.h>

#include <kern/errno.h>
#include <kern/shell_split.h>

#include "host_test.h"

#define MAX_WORDS 8

/* Split text (copied) and check the words, joined by '|' into want. */
static void
check_split(const char *text, unsigned int nr, const char *want)
{
    char line[256], joined[256] = "";
    char *argv[MAX_WORDS + 1];
    unsigned int argc = 99;
    char bad = 'x';

    snprintf(line, sizeof(line), "%s", text);
    HOST_ASSERT_EQ(shell_split(line, argv, MAX_WORDS, &argc, &bad), 0);
    HOST_ASSERT_EQ(argc, nr);
    HOST_ASSERT(argv[argc] == NULL);
    HOST_ASSERT_EQ(bad, 'x');

    for (unsigned int i = 0; i < argc; i++) {
        if (i != 0) {
            strcat(joined, "|");
        }

        strcat(joined, argv[i]);
    }

    HOST_ASSERT_STREQ(joined, want);
}

/* A refused line: the error, *badp, and the line and argv unchanged. */
static void
check_refused(const char *text, int error, char bad_want)
{
    char line[256];
    char *argv[MAX_WORDS + 1] = { NULL };
    unsigned int argc = 99;
    char bad = 'x';

    snprintf(line, sizeof(line), "%s", text);
    HOST_ASSERT_EQ(shell_split(line, argv, MAX_WORDS, &argc, &bad), error);
    HOST_ASSERT_STREQ(line, text);
    HOST_ASSERT_EQ(argc, 99);
    HOST_ASSERT_EQ(bad, bad_want);

    for (unsigned int i = 0; i <= MAX_WORDS; i++) {
        HOST_ASSERT(argv[i] == NULL);
    }
}

HOST_TEST(blanks_separate_words)
{
    check_split("", 0, "");
    check_split("  \t ", 0, "");
    check_split("perf", 1, "perf");
    check_split("  perf\tstat  -a 10  ", 4, "perf|stat|-a|10");
}

HOST_TEST(single_quotes_keep_everything)
{
    check_split("perf stat -e '{emit,emit}' -- spin 10", 7,
                "perf|stat|-e|{emit,emit}|--|spin|10");
    check_split("'a b\t\"c\\'", 1, "a b\t\"c\\");
    check_split("''", 1, "");
    check_split("x '' y", 3, "x||y");
}

HOST_TEST(double_quotes_escape_four_characters)
{
    check_split("\"a b\"", 1, "a b");
    check_split("\"\\\" \\\\ \\$ \\`\"", 1, "\" \\ $ `");
    /* Before any other character the backslash stays. */
    check_split("\"\\n\\'\"", 1, "\\n\\'");
    check_split("\"it's\"", 1, "it's");
    check_split("\"\"", 1, "");
}

HOST_TEST(backslash_keeps_the_next_character)
{
    check_split("a\\ b c", 2, "a b|c");
    check_split("\\'x\\\"", 1, "'x\"");
    check_split("\\\\", 1, "\\");
}

HOST_TEST(parts_join_into_one_word)
{
    check_split("a'b c'\"d\"e", 1, "ab cde");
    check_split("-e'{emit,tick}':k", 1, "-e{emit,tick}:k");
    check_split("'a'  'b'", 2, "a|b");
}

HOST_TEST(no_expansion)
{
    check_split("$HOME *.c ~ `x`", 4, "$HOME|*.c|~|`x`");
}

HOST_TEST(the_most_words_fit)
{
    check_split("1 2 3 4 5 6 7 8", MAX_WORDS, "1|2|3|4|5|6|7|8");
}

HOST_TEST(open_quote_is_refused)
{
    check_refused("perf stat -e '{emit,emit} -- spin 10", EINVAL, '\'');
    check_refused("echo \"abc", EINVAL, '"');
    check_refused("\"a\\\"", EINVAL, '"');
    check_refused("'", EINVAL, '\'');
}

HOST_TEST(backslash_ending_the_line_is_refused)
{
    check_refused("perf \\", EINVAL, '\\');
    check_refused("\\", EINVAL, '\\');
}

HOST_TEST(too_many_words_are_refused)
{
    check_refused("1 2 3 4 5 6 7 8 9", E2BIG, 'x');
    check_refused("1 2 3 4 5 6 7 8 '9", EINVAL, '\'');
}

HOST_TEST_MAIN()
