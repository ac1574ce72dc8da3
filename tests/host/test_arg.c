/*
 * Host tests of the kernel command line parser (kern/arg.c), with the
 * fw_cfg device replaced by a stub.
 */
#include <stdarg.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <machine/fwcfg.h>

#include "host_test.h"

static const char *stub_extra;

int
fwcfg_read_file(const char *name, char *buf, size_t size)
{
    if (stub_extra == NULL || strcmp(name, "opt/perfmon/cmdline") != 0) {
        return ENOENT;
    }

    snprintf(buf, size, "%s", stub_extra);
    return 0;
}

void
log_msg(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

HOST_TEST(key_value_and_bare_words)
{
    uint64_t v = 0;

    stub_extra = NULL;
    arg_setup("  loglevel=7 quiet  test=a,b.c empty= ");
    HOST_ASSERT_STREQ(arg_get("loglevel"), "7");
    HOST_ASSERT_STREQ(arg_get("quiet"), "");
    HOST_ASSERT_STREQ(arg_get("test"), "a,b.c");
    HOST_ASSERT_STREQ(arg_get("empty"), "");
    HOST_ASSERT(arg_get("missing") == NULL);
    HOST_ASSERT(arg_get("loglevel=7") == NULL);
    HOST_ASSERT(arg_get("log") == NULL);
    HOST_ASSERT(arg_is_set("test", "a,b.c"));
    HOST_ASSERT(!arg_is_set("test", "a"));
    HOST_ASSERT_EQ(arg_get_u64("loglevel", &v), 0);
    HOST_ASSERT_EQ(v, 7);
}

HOST_TEST(later_words_override)
{
    stub_extra = NULL;
    arg_setup("pmu_soft.width=64 pmu_soft.width=16");
    HOST_ASSERT_STREQ(arg_get("pmu_soft.width"), "16");
}

HOST_TEST(fw_cfg_text_is_appended_and_wins)
{
    stub_extra = "test=all pmu_soft.intr=1";
    arg_setup("test=none keep=1");
    HOST_ASSERT_STREQ(arg_get("test"), "all");
    HOST_ASSERT_STREQ(arg_get("keep"), "1");
    HOST_ASSERT_STREQ(arg_get("pmu_soft.intr"), "1");
    HOST_ASSERT_STREQ(arg_cmdline(), "test=none keep=1 test=all pmu_soft.intr=1");
}

HOST_TEST(integer_errors_leave_value)
{
    uint64_t v = 42;

    stub_extra = NULL;
    arg_setup("a=x12 b= c=0x10");
    HOST_ASSERT_EQ(arg_get_u64("a", &v), EINVAL);
    HOST_ASSERT_EQ(arg_get_u64("b", &v), EINVAL);
    HOST_ASSERT_EQ(arg_get_u64("nope", &v), ENOENT);
    HOST_ASSERT_EQ(v, 42);
    HOST_ASSERT_EQ(arg_get_u64("c", &v), 0);
    HOST_ASSERT_EQ(v, 16);
}

HOST_TEST(empty_command_line)
{
    stub_extra = NULL;
    arg_setup("");
    HOST_ASSERT(arg_get("test") == NULL);
    HOST_ASSERT_STREQ(arg_cmdline(), "");
}

HOST_TEST_MAIN()
