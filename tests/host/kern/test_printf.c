/*
 * Host tests of the kernel's formatting core (kern/printf.c).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>

#include <kern/printf.h>

#include "host_test.h"

/* The corner cases below are deliberate: keep gcc's format checks quiet. */
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-overflow"
#pragma GCC diagnostic ignored "-Wformat-extra-args"

/* Format with the kernel's vsnprintf and compare with the expectation. */
#define CHECK(expect, ...)                                              \
    do {                                                                \
        char buf_[128];                                                 \
        int n_ = snprintf(buf_, sizeof(buf_), __VA_ARGS__);             \
        HOST_ASSERT_STREQ(buf_, expect);                                \
        HOST_ASSERT_EQ(n_, strlen(expect));                             \
    } while (0)

HOST_TEST(decimal)
{
    CHECK("0", "%d", 0);
    CHECK("-42", "%d", -42);
    CHECK("2147483647", "%d", INT_MAX);
    CHECK("-2147483648", "%d", INT_MIN);
    CHECK("4294967295", "%u", UINT_MAX);
    CHECK("-9223372036854775808", "%lld", (long long)INT64_MIN);
    CHECK("9223372036854775807", "%ld", (long)INT64_MAX);
    CHECK("18446744073709551615", "%llu", (unsigned long long)UINT64_MAX);
    CHECK("-1", "%i", -1);
}

HOST_TEST(hex_and_octal)
{
    CHECK("ff", "%x", 255);
    CHECK("FF", "%X", 255);
    CHECK("ffffffffffffffff", "%lx", (unsigned long)-1);
    CHECK("deadbeef", "%llx", 0xdeadbeefULL);
    CHECK("17", "%o", 15);
    CHECK("0", "%x", 0);
}

HOST_TEST(length_modifiers)
{
    CHECK("-1", "%hhd", 255);
    CHECK("255", "%hhu", 255);
    CHECK("-1", "%hd", 65535);
    CHECK("65535", "%hu", 65535);
    CHECK("123", "%zu", (size_t)123);
    CHECK("-5", "%jd", (intmax_t)-5);
}

HOST_TEST(width_and_padding)
{
    CHECK("   42", "%5d", 42);
    CHECK("42   |", "%-5d|", 42);
    CHECK("00042", "%05d", 42);
    CHECK("-0042", "%05d", -42);
    CHECK("  -42", "%5d", -42);
    CHECK("-42  |", "%-05d|", -42);
    CHECK("0000000a", "%08x", 10);
    CHECK("42", "%0d", 42);
    CHECK("42", "%1d", 42);
    CHECK("   ab", "%*s", 5, "ab");
    CHECK("ab   |", "%*s|", -5, "ab");
    CHECK("x", "%0c", 'x');
}

HOST_TEST(strings_and_chars)
{
    CHECK("hello", "%s", "hello");
    CHECK("(null)", "%s", (char *)NULL);
    CHECK("  (null)", "%8s", (char *)NULL);
    CHECK("he", "%.2s", "hello");
    CHECK("hel", "%.*s", 3, "hello");
    CHECK("", "%s", "");
    CHECK("a", "%c", 'a');
    CHECK("  a", "%3c", 'a');
    CHECK("100%", "100%%");
}

HOST_TEST(pointers)
{
    CHECK("0x0000000000000000", "%p", (void *)0);
    CHECK("0xffffffff80100000", "%p", (void *)0xffffffff80100000ULL);
}

HOST_TEST(unknown_conversion_is_copied)
{
    CHECK("%q", "%q");
    CHECK("a%", "a%");
}

HOST_TEST(truncation)
{
    char buf[8];
    int n;

    memset(buf, 'x', sizeof(buf));
    n = snprintf(buf, sizeof(buf), "%s", "0123456789");
    HOST_ASSERT_EQ(n, 10);
    HOST_ASSERT_STREQ(buf, "0123456");

    memset(buf, 'x', sizeof(buf));
    n = snprintf(buf, 1, "%d", 12345);
    HOST_ASSERT_EQ(n, 5);
    HOST_ASSERT_EQ(buf[0], '\0');
    HOST_ASSERT_EQ(buf[1], 'x');

    /* Size 0 writes nothing at all. */
    n = snprintf(buf, 0, "%d", 12345);
    HOST_ASSERT_EQ(n, 5);
    HOST_ASSERT_EQ(buf[0], '\0');
    HOST_ASSERT_EQ(buf[1], 'x');
}

HOST_TEST(many_arguments)
{
    CHECK("1 2 3 4 5 6 7 8 9", "%d %d %d %d %d %d %d %d %d",
          1, 2, 3, 4, 5, 6, 7, 8, 9);
    CHECK("a=1 b=0x2 c=three", "a=%u b=0x%x c=%s", 1u, 2u, "three");
}

/* vprintf_flush's sink: the pieces appended, and how many there were. */
struct flush_sink {
    char text[512];
    size_t len;
    unsigned int nr_flushes;
    size_t longest;
};

static void
flush_sink_append(void *arg, const char *s, size_t len)
{
    struct flush_sink *sink = arg;

    memcpy(sink->text + sink->len, s, len);
    sink->len += len;
    sink->text[sink->len] = '\0';
    sink->nr_flushes++;
    sink->longest = (len > sink->longest) ? len : sink->longest;
}

static int
flush_format(struct flush_sink *sink, size_t size, const char *fmt, ...)
{
    char buf[16];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vprintf_flush(buf, size, flush_sink_append, sink, fmt, ap);
    va_end(ap);
    return n;
}

HOST_TEST(flush_passes_output_longer_than_its_buffer_whole)
{
    struct flush_sink sink = { .len = 0 };
    char expect[320];
    int n;

    memset(expect, 'x', 290);
    expect[290] = '\0';
    n = flush_format(&sink, 7, "%s|%5d|%-3s|", expect, 42, "ab");
    snprintf(expect + 290, sizeof(expect) - 290, "|   42|ab |");
    HOST_ASSERT_STREQ(sink.text, expect);
    HOST_ASSERT_EQ(n, 301);
    HOST_ASSERT_EQ(sink.nr_flushes, 43);    /* 301 = 43 * 7: no short piece */
    HOST_ASSERT_EQ(sink.longest, 7);
}

HOST_TEST(flush_of_empty_output_calls_nothing)
{
    struct flush_sink sink = { .len = 0 };

    HOST_ASSERT_EQ(flush_format(&sink, 16, "%s", ""), 0);
    HOST_ASSERT_EQ(sink.nr_flushes, 0);
}

HOST_TEST_MAIN()
