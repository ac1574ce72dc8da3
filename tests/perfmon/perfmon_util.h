/*
 * What the files of the perfmon and perfmon_group suites
 * (test_perfmon*.c, test_perfmon_group*.c) share: the software PMU's
 * device and the set-up of a software event. Thread context, the running
 * test's thread.
 */
#ifndef TESTS_PERFMON_PERFMON_UTIL_H
#define TESTS_PERFMON_PERFMON_UTIL_H

struct perfmon_dev;
struct perfmon_event;

/* The software PMU's device; fails the test when there is none. */
struct perfmon_dev *test_pm_soft_dev(void);

/* Initialize a software event on raw event id; fails the test on error. */
void test_pm_init(struct perfmon_event *event, unsigned int id);

#endif /* TESTS_PERFMON_PERFMON_UTIL_H */
