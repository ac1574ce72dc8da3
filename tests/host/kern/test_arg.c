/*
 * Host tests of the kernel command line parser (kern/arg.c), with the
 * fw_cfg device replaced by a stub. The modules that declare the kernel's
 * keys are not linked: the keys the tests check against are declared
 * below, as those modules declare them.
 */
#include <stdarg.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <machine/fwcfg.h>

#include "host_test.h"

ARG_DEFINE_STRING("test");
ARG_DEFINE_U64("loglevel", 0, 7);
ARG_DEFINE_WORD("panic", "halt");
ARG_DEFINE_U64("pmu_soft.width", 8, 64);
ARG_DEFINE_U64("pmu_soft.intr", 0, 1);
ARG_DEFINE_U64("pmu_intel.full_width", 0, 1);
ARG_DEFINE_U64("torture.ops", 1, UINT64_MAX);
ARG_DEFINE_U64("torture.seed", 0, UINT64_MAX);

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

HOST_TEST(check_accepts_known_keys_and_values)
{
    stub_extra = NULL;
    arg_setup("test=kmem,perfmon.* loglevel=7 panic=halt pmu_soft.width=8 "
              "pmu_soft.intr=1 pmu_intel.full_width=0 torture.ops=1 "
              "torture.seed=0x5eed");
    HOST_ASSERT_EQ(arg_check(), 0);
    HOST_ASSERT_EQ(arg_nr_errors(), 0);
}

HOST_TEST(check_reports_each_bad_word)
{
    stub_extra = "nosuchkey=1 test=";
    arg_setup("loglevel=99 loglevel=abc panic=reboot pmu_soft.width=7 "
              "torture.ops=0 quiet");
    /* Every word counts, overridden ones too: each was typed by someone. */
    HOST_ASSERT_EQ(arg_check(), 8);
    HOST_ASSERT_EQ(arg_nr_errors(), 8);
    arg_setup("");
    HOST_ASSERT_EQ(arg_check(), 2);
}

HOST_TEST(no_leading_blank_after_an_empty_line)
{
    stub_extra = "test=all";
    arg_setup("");
    HOST_ASSERT_STREQ(arg_cmdline(), "test=all");
}

HOST_TEST_MAIN()
