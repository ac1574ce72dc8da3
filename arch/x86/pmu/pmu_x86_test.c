/*
 * The x86 PMU drivers' test interface, see pmu_x86_test.h.
 */
#include <stddef.h>

#include <pmu/pmu_x86_test.h>

static const struct pmu_x86_test *pmu_x86_test_registered;

void
pmu_x86_test_register(const struct pmu_x86_test *test)
{
    pmu_x86_test_registered = test;
}

const struct pmu_x86_test *
pmu_x86_test_get(void)
{
    return pmu_x86_test_registered;
}
