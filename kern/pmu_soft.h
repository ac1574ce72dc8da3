/*
 * Software PMU: kernel events counted for perfmon. The counting hook is a
 * no-op until the software PMU lands.
 */
#ifndef KERN_PMU_SOFT_H
#define KERN_PMU_SOFT_H

#include <stdint.h>

#define PMU_SOFT_EV_CSWITCH     0
#define PMU_SOFT_EV_MIGRATION   1
#define PMU_SOFT_EV_TICK        2
#define PMU_SOFT_EV_XCALL       3
#define PMU_SOFT_EV_EMIT        4

static inline void
pmu_soft_count(unsigned int event, uint64_t n)
{
    (void)event;
    (void)n;
}

#endif /* KERN_PMU_SOFT_H */
