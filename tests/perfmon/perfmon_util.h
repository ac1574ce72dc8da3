/*
 * What the perfmon suites' files share: the device under test and the
 * set-up of its events. The device under test counts the units the
 * tests emit (pmu_soft_emit_channel): the software PMU, or in the model
 * kernel booted with pmu_model= (arch/x86/pmu/model/pmu_model_kern.h) the
 * registered hardware driver over the modelled PMU, whose event for an
 * emit channel counts the same units. A test takes the device's event
 * ids and properties from here, so that it runs unchanged on either; one
 * that holds only on the software PMU says so with test_pm_require_soft.
 * Thread context, the running test's thread.
 */
#ifndef TESTS_PERFMON_PERFMON_UTIL_H
#define TESTS_PERFMON_PERFMON_UTIL_H

#include <stdbool.h>
#include <stdint.h>

struct perfmon_dev;
struct perfmon_event;

/* The software PMU's device; fails the test when there is none. */
struct perfmon_dev *test_pm_soft_dev(void);

/*
 * The device under test: the modelled PMU's driver in a model boot, else
 * the software PMU's; fails the test when there is none.
 */
struct perfmon_dev *test_pm_dev(void);

/* True in a model boot (the device under test is a hardware driver's). */
bool test_pm_on_model(void);

/* Initialize a software event on raw event id; fails the test on error. */
void test_pm_init(struct perfmon_event *event, unsigned int id);

/*
 * Initialize an event of the device under test that counts the units of
 * emit channel channel: the software PMU's PMU_SOFT_EV_EMIT + channel, or
 * in a model boot the model's raw code for it, counted in the kernel.
 * Fails the test on error.
 */
void test_pm_init_emit(struct perfmon_event *event, unsigned int channel);

/*
 * The same with flags added (PERFMON_EF_PINNED), returning
 * perfmon_event_init's result (EINVAL for a channel the model lacks).
 */
int test_pm_emit_event_init(struct perfmon_event *event,
                            unsigned int channel, unsigned int flags);

/*
 * The device under test's counter width (its narrowest), whether its
 * overflows interrupt (else perfmon polls it) and the units per counter
 * per tick it counts exactly (UINT64_MAX: no limit; pmu_soft.h).
 */
unsigned int test_pm_width(void);

/*
 * The device under test's counters that its emit events can take: all
 * of the software PMU's; of a modelled PMU, those that take any event
 * (Intel's general counters: a fixed counter counts its own event only).
 */
unsigned int test_pm_nr_counters(void);

bool test_pm_intr_mode(void);
uint64_t test_pm_max_rate(void);

/*
 * Skip the running test with the reason why ("software PMU only: ...")
 * unless the device under test is the software PMU.
 */
void test_pm_require_soft(const char *why);

#endif /* TESTS_PERFMON_PERFMON_UTIL_H */
