/*
 * What the perfmon_mux suite's files (test_perfmon_mux.c,
 * test_perfmon_mux_changes.c) share: a set of events on the software PMU
 * that take turns, the steps that emit on their channels noting which
 * count, and the checks of their counts, shares and times (the tolerances
 * are stated in test_perfmon_mux.c). Thread context, the running test's
 * thread.
 */
#ifndef TESTS_PERFMON_MUX_UTIL_H
#define TESTS_PERFMON_MUX_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/pmu_soft.h>

#define TEST_PX_ROTATIONS       30
#define TEST_PX_STEPS_PER_TICK  4
#define TEST_PX_MAX_EVENTS      (2 * PMU_SOFT_NR_COUNTERS + 2)
#define TEST_PX_PATIENCE        100

/*
 * Events on channels first_channel + i, what each should count, and what
 * the steps saw of the host (TSC cycles).
 */
struct test_px_set {
    unsigned int nr_events;
    unsigned int first_channel;
    struct perfmon_event events[TEST_PX_MAX_EVENTS];
    struct perfmon_group groups[2];
    unsigned int nr_groups;                 /* test_px_finish detaches */
    struct perfmon_event extra;
    uint64_t expected[TEST_PX_MAX_EVENTS];  /* units while counting */
    uint64_t emitted;                       /* units per channel */
    struct perfmon_value values[TEST_PX_MAX_EVENTS];
    bool counting[TEST_PX_MAX_EVENTS];      /* at the last step */
    bool disabled[TEST_PX_MAX_EVENTS];      /* counts nothing */
    uint64_t turn_start[TEST_PX_MAX_EVENTS]; /* the step before its turn */
    uint64_t init_tsc;                      /* before the attaches */
    uint64_t first_step;
    uint64_t last_step;
    uint64_t longest_turn;                  /* from step to step, at most */
    uint64_t stalled;                       /* steps late, in all */
    unsigned int tick_cpu;                  /* where the steps last ran */
    uint64_t tick_seen;                     /* its tick interrupts then */
    uint64_t tick_units;                    /* units per channel since */
    uint64_t tick_waits;                    /* steps that waited a tick */
    uint64_t read_span;                     /* test_px_finish's reads */
    unsigned int share_min;                 /* permille of enabled */
    unsigned int share_max;
    bool unsteady;                          /* estimates left unchecked */
    bool loose_shares;                      /* said so (test_loosen) */
};

/*
 * The set every test uses: what a test attaches lives here, so that the
 * next test's test_px_init detaches what a failed one left behind.
 */
extern struct test_px_set test_px_set;

/* The device under test (perfmon_util.h: test_pm_dev). */
struct perfmon_dev *test_px_dev(void);

/*
 * Detach what a failed test left in set, then clear it for nr_events
 * events on channels first_channel + i.
 */
void test_px_init(struct test_px_set *set, unsigned int nr_events,
                  unsigned int first_channel);

/* The calling thread's run time now, in TSC cycles. */
uint64_t test_px_run_time(void);

/*
 * Emit for the given number of rotation intervals (by the TSC), one step
 * per quarter tick. With migrate, the thread hops to the next CPU every
 * interval.
 */
void test_px_run(struct test_px_set *set, unsigned int nr_intervals,
                 bool migrate);

/*
 * Emit until the software PMU has rotated TEST_PX_ROTATIONS times: the
 * rotation thread counts ticks, which a loaded host delays against the
 * TSC that paces the steps.
 */
void test_px_run_rotations(struct test_px_set *set, bool migrate);

/* Close the turns still going on at TSC now. */
void test_px_end_turns(struct test_px_set *set, uint64_t now);

/* Read every event's value, then detach them (the groups, then the rest). */
void test_px_finish(struct test_px_set *set);

/* Every event counted exactly the units of the steps it counted in. */
void test_px_assert_exact(const struct test_px_set *set);

/* What the shares were, and what the host did to the turns: in the log. */
void test_px_report(const struct test_px_set *set);

/*
 * A half share of total (ns): within 0.1 of it plus the longest turn (or
 * just some of it, beyond 4 CPUs).
 */
void test_px_assert_share(struct test_px_set *set, uint64_t running,
                         uint64_t total);

/* Each event's share of its enabled time, and its estimate. */
void test_px_assert_half_share(struct test_px_set *set, unsigned int i);

/*
 * Running times add up to slots times elapsed (ns), within 2% plus slots
 * times the time the attaches and the reads took.
 */
void test_px_assert_sum(const struct test_px_set *set, unsigned int nr_slots,
                       uint64_t elapsed);

/* Run the calling thread on cpu only. */
void test_px_pin_self(unsigned int cpu);

#endif /* TESTS_PERFMON_MUX_UTIL_H */
