/*
 * What the perfmon suites' files share (perfmon_util.h).
 */
#include <stddef.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/test.h>

#include "perfmon_util.h"

struct perfmon_dev *
test_pm_soft_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(true);

    TEST_ASSERT(dev != NULL);
    return dev;
}

void
test_pm_init(struct perfmon_event *event, unsigned int id)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, id, PERFMON_EF_SW), 0);
}
