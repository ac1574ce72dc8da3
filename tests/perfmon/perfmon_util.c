/*
 * What the perfmon suites' files share (perfmon_util.h).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <pmu/model/pmu_model_kern.h>
#include <pmu/pmu_x86_test.h>

#include "perfmon_util.h"

/*
 * Defined in the model kernel only (arch/x86/pmu/model/): elsewhere the
 * reference is weak and null, and the software PMU is under test.
 */
extern int pmu_model_emit_code(unsigned int channel, uint64_t *codep)
    __attribute__((weak));

struct perfmon_dev *
test_pm_soft_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(true);

    TEST_ASSERT(dev != NULL);
    return dev;
}

bool
test_pm_on_model(void)
{
    uint64_t code;

    return pmu_model_emit_code != NULL && pmu_model_emit_code(0, &code) == 0;
}

/*
 * In a model boot, a driver that did not register fails every test of the
 * device, rather than leaving them to the software PMU unseen.
 */
struct perfmon_dev *
test_pm_dev(void)
{
    struct perfmon_dev *dev;

    if (!test_pm_on_model()) {
        return test_pm_soft_dev();
    }

    dev = perfmon_dev_get(false);

    if (dev == NULL) {
        test_fail_at(__FILE__, __LINE__, "pmu_model= given but no PMU "
                     "driver registered (see the boot log)");
    }

    return dev;
}

void
test_pm_init(struct perfmon_event *event, unsigned int id)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, id, PERFMON_EF_SW), 0);
}

int
test_pm_emit_event_init(struct perfmon_event *event, unsigned int channel,
                        unsigned int flags)
{
    uint64_t code;

    if (!test_pm_on_model()) {
        return perfmon_event_init(event, PMU_SOFT_EV_EMIT + channel,
                                  PERFMON_EF_SW | flags);
    }

    if (pmu_model_emit_code(channel, &code) != 0) {
        return EINVAL;
    }

    return perfmon_event_init(event, code,
                              PERFMON_EF_RAW | PERFMON_EF_KERN | flags);
}

void
test_pm_init_emit(struct perfmon_event *event, unsigned int channel)
{
    TEST_ASSERT_EQ(test_pm_emit_event_init(event, channel, 0), 0);
}

unsigned int
test_pm_width(void)
{
    return test_pm_on_model() ? test_pm_dev()->min_width : pmu_soft_width();
}

unsigned int
test_pm_nr_counters(void)
{
    const struct pmu_x86_test *test;

    if (!test_pm_on_model()) {
        return test_pm_soft_dev()->nr_counters;
    }

    test = pmu_x86_test_get();
    TEST_ASSERT(test != NULL);
    return test->nr_general;
}

bool
test_pm_intr_mode(void)
{
    return test_pm_on_model() ? test_pm_dev()->overflow_intr
                              : pmu_soft_intr_mode();
}

uint64_t
test_pm_max_rate(void)
{
    const struct perfmon_dev *dev;

    if (!test_pm_on_model()) {
        return pmu_soft_max_rate();
    }

    dev = test_pm_dev();
    return dev->overflow_intr ? UINT64_MAX : dev->max_rate;
}

void
test_pm_require_soft(const char *why)
{
    if (test_pm_on_model()) {
        test_skip(why);
    }
}
