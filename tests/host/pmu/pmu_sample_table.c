/*
 * The shared sampling checks of pmu_sample_test.c as tests, one table for
 * every vendor's binary: each entry's name is the test's (KTAP), its
 * check runs with the generic events the entry names or, for the tests
 * that cover every kind of counter, with the binary's (env->ids).
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/macros.h>
#include <kern/perfmon.h>

#include "host_test.h"
#include "pmu_sample_test.h"

/* Which name a test runs under. */
enum pmu_sample_name {
    PMU_SAMPLE_NAME_OWN,            /* the entry's */
    PMU_SAMPLE_NAME_LEAST_PERIOD,   /* env->least_period_test */
    PMU_SAMPLE_NAME_REFUSED,        /* env->refused_test */
};

struct pmu_sample_test {
    const char *name;
    enum pmu_sample_name naming;
    bool sampling;                  /* registered when the device samples */

    /* The check, run once per event of ids (NULL: env->ids)... */
    void (*check)(const struct pmu_sample_env *env, unsigned int id);
    const unsigned int *ids;
    unsigned int nr_ids;

    /* ... or once with three events on distinct counters. */
    void (*check3)(const struct pmu_sample_env *env,
                   const unsigned int ids[3]);
};

/* A general counter's event on both vendors. */
static const unsigned int pmu_sample_branch[] = { PERFMON_EV_BRANCH };

/* The same, then instructions (Intel: fixed counter 0). */
static const unsigned int pmu_sample_branch_insns[] = {
    PERFMON_EV_BRANCH, PERFMON_EV_INSTRUCTION,
};

/* Three events no two of which share a counter. */
static const unsigned int pmu_sample_three[3] = {
    PERFMON_EV_BRANCH, PERFMON_EV_INSTRUCTION, PERFMON_EV_CYCLE,
};

#define PMU_SAMPLE_IDS(a)   (a), ARRAY_SIZE(a)
#define PMU_SAMPLE_EACH     NULL, 0

static const struct pmu_sample_test pmu_sample_tests[] = {
    { "sampling_cpu_event_one_sample_per_period_with_skid",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_cpu_event,
      PMU_SAMPLE_IDS(pmu_sample_branch_insns), NULL },
    { "sampling_thread_event_only_while_it_runs",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_thread_event,
      PMU_SAMPLE_EACH, NULL },
    { "switch_between_samplers_of_one_event_reads_once_presets_once",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_switch_samplers,
      PMU_SAMPLE_EACH, NULL },
    { "switch_between_samplers_when_the_counter_wraps_around_it",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_switch_samplers_wraps,
      PMU_SAMPLE_IDS(pmu_sample_branch), NULL },
    { "switch_between_samplers_after_a_longest_preset_wrapped",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_switch_longest_preset,
      PMU_SAMPLE_IDS(pmu_sample_branch), NULL },
    { "sampling_several_counters_in_one_pmi_one_sample_each",
      PMU_SAMPLE_NAME_OWN, true, NULL, NULL, 0,
      pmu_sample_check_several_in_one_pmi },
    { "sampling_period_beyond_max_period_samples_once",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_long_period,
      PMU_SAMPLE_EACH, NULL },
    { "sampling_refresh_and_set_period",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_refresh_and_period,
      PMU_SAMPLE_IDS(pmu_sample_branch), NULL },
    { "frequency_sampler_starts_and_stays_at_the_least_period",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_freq_least_period,
      PMU_SAMPLE_IDS(pmu_sample_branch), NULL },
    { "sampling_overflow_before_preset_is_discarded",
      PMU_SAMPLE_NAME_OWN, true, pmu_sample_check_overflow_before_preset,
      PMU_SAMPLE_EACH, NULL },
    { NULL, PMU_SAMPLE_NAME_LEAST_PERIOD, true,
      pmu_sample_check_least_period, PMU_SAMPLE_IDS(pmu_sample_branch),
      NULL },
    { NULL, PMU_SAMPLE_NAME_REFUSED, false, pmu_sample_check_refused,
      PMU_SAMPLE_IDS(pmu_sample_branch), NULL },
};

static const struct pmu_sample_env *pmu_sample_table_env;

static void
pmu_sample_table_run(const void *arg)
{
    const struct pmu_sample_test *test = arg;
    const struct pmu_sample_env *env = pmu_sample_table_env;
    const unsigned int *ids = (test->ids != NULL) ? test->ids : env->ids;
    unsigned int nr_ids = (test->ids != NULL) ? test->nr_ids : env->nr_ids;

    env->begin();

    if (test->check3 != NULL) {
        test->check3(env, pmu_sample_three);
    } else {
        for (unsigned int i = 0; i < nr_ids; i++) {
            test->check(env, ids[i]);
        }
    }

    env->end();
}

void
pmu_sample_tests_register(const struct pmu_sample_env *env)
{
    pmu_sample_table_env = env;

    for (unsigned int i = 0; i < ARRAY_SIZE(pmu_sample_tests); i++) {
        const struct pmu_sample_test *test = &pmu_sample_tests[i];
        const char *name = test->name;

        if (test->sampling != env->can_sample) {
            continue;
        }

        if (test->naming == PMU_SAMPLE_NAME_LEAST_PERIOD) {
            name = env->least_period_test;
        } else if (test->naming == PMU_SAMPLE_NAME_REFUSED) {
            name = env->refused_test;
        }

        if (name != NULL) {
            host_test_register(name, pmu_sample_table_run, test);
        }
    }
}
