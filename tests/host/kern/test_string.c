/*
 * Host tests of kern/string.c.
 */
#include <stdint.h>

#include <kern/errno.h>
#include <kern/string.h>

#include "host_test.h"

HOST_TEST(parse_u64)
{
    unsigned long long v = 7;

    HOST_ASSERT_EQ(string_parse_u64("0", &v), 0);
    HOST_ASSERT_EQ(v, 0);
    HOST_ASSERT_EQ(string_parse_u64("12345", &v), 0);
    HOST_ASSERT_EQ(v, 12345);
    HOST_ASSERT_EQ(string_parse_u64("0x1F", &v), 0);
    HOST_ASSERT_EQ(v, 31);
    HOST_ASSERT_EQ(string_parse_u64("18446744073709551615", &v), 0);
    HOST_ASSERT_EQ(v, UINT64_MAX);

    v = 7;
    HOST_ASSERT_EQ(string_parse_u64("18446744073709551616", &v), ERANGE);
    HOST_ASSERT_EQ(string_parse_u64("", &v), EINVAL);
    HOST_ASSERT_EQ(string_parse_u64("0x", &v), EINVAL);
    HOST_ASSERT_EQ(string_parse_u64("12a", &v), EINVAL);
    HOST_ASSERT_EQ(string_parse_u64("-1", &v), EINVAL);
    HOST_ASSERT_EQ(v, 7);
}

HOST_TEST(strlcpy_truncates)
{
    char buf[4] = "zzz";

    HOST_ASSERT_EQ(strlcpy(buf, "abcdef", sizeof(buf)), 6);
    HOST_ASSERT_STREQ(buf, "abc");
    HOST_ASSERT_EQ(strlcpy(buf, "ab", sizeof(buf)), 2);
    HOST_ASSERT_STREQ(buf, "ab");
    HOST_ASSERT_EQ(strlcpy(buf, "xy", 0), 2);
    HOST_ASSERT_STREQ(buf, "ab");
}

HOST_TEST(memmove_overlap)
{
    char buf[16] = "0123456789";

    memmove(buf + 2, buf, 5);
    HOST_ASSERT_STREQ(buf, "0101234789");
    memmove(buf, buf + 2, 5);
    HOST_ASSERT_STREQ(buf, "0123434789");
}

HOST_TEST(compare)
{
    HOST_ASSERT(strcmp("abc", "abc") == 0);
    HOST_ASSERT(strcmp("abc", "abd") < 0);
    HOST_ASSERT(strcmp("b", "abc") > 0);
    HOST_ASSERT(strcmp("", "a") < 0);
    HOST_ASSERT(strncmp("abcx", "abcy", 3) == 0);
    HOST_ASSERT(strncmp("ab", "abc", 3) < 0);
    HOST_ASSERT(memcmp("\x01\xff", "\x01\x00", 2) > 0);
    HOST_ASSERT(strchr("hello", 'l') != NULL);
    HOST_ASSERT(strchr("hello", 'z') == NULL);
    HOST_ASSERT_EQ(strlen(""), 0);
    HOST_ASSERT_EQ(strlen("four"), 4);
}

HOST_TEST_MAIN()
