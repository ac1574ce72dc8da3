/*
 * perfmon sampling with the software PMU: exact sample counts, where each
 * sample lands (the emitting function, the emitting thread and CPU), and
 * the API's errors. Suite perfmon_sample, with
 * test_perfmon_sample_period.c (period changes and refresh, call chains)
 * and test_perfmon_sample_throttle.c (throttling and lost records); what
 * they share is in sample_util.h. Every emit in the suite stays below
 * 2^width, so counts are exact at every width and in both overflow modes;
 * a sampling event's wraps are reported at once.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "sample_util.h"
#include "test_util.h"

/* A random emit size, at most left. */
static uint64_t
test_ps_rand_emit(uint64_t *seed, uint64_t left)
{
    uint64_t n = 1 + test_rand(seed) % test_ps_max_emit();

    return MIN(n, left);
}

/* Samples in a count of n after total, for period. */
static uint64_t
test_ps_ends(uint64_t total, uint64_t n, uint64_t period)
{
    return (total + n) / period - total / period;
}

/* ------------------------------------------------------------------ */
/* API errors                                                          */
/* ------------------------------------------------------------------ */

TEST_DEFINE(perfmon_sample, api_errors_change_nothing)
{
    struct perfmon_session *session = test_ps_session(4096);
    struct perfmon_sample_attr attr = { .session = session, .period = 10 };
    struct perfmon_event event, counting;
    uint64_t n;

    /* Not initialized. */
    memset(&event, 0, sizeof(event));
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(NULL, &attr), EINVAL);

    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    attr.session = NULL;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    attr.session = session;
    attr.period = 0;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    attr.period = PERFMON_PERIOD_MAX + 1;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    attr.period = 10;
    attr.nr_frames = PERFMON_MAX_FRAMES + 1;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);

    /* Still a counting event: the sampling calls refuse it. */
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 5), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_refresh(&event, 1), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), EINVAL);

    attr.nr_frames = PERFMON_MAX_FRAMES;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, 0), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_period(&event, PERFMON_PERIOD_MAX + 1),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_event_refresh(&event, 0), EINVAL);

    /* Attached: no change of sampling, and the session is in use. */
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_id()), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, NULL), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), EBUSY);

    /* A sampling event does not share its slot with a counting one. */
    TEST_ASSERT_EQ(perfmon_event_init(&counting, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&counting, cpu_id()), 0);
    TEST_ASSERT_NE(perfmon_event_slot_index(&counting),
                   perfmon_event_slot_index(&event));
    TEST_ASSERT_EQ(perfmon_event_detach(&counting), 0);

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), 0);
    TEST_ASSERT_EQ(n, 0);

    /* Back to counting, detached. */
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, NULL), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), EINVAL);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* A hardware sampling event without a PMU is ENODEV, as counting. */
TEST_DEFINE(perfmon_sample, hardware_event_without_pmu_is_enodev)
{
    struct perfmon_session *session = test_ps_session(4096);
    struct perfmon_sample_attr attr = { .session = session, .period = 1000 };
    struct perfmon_event event;

    if (perfmon_dev_get(false) != NULL) {
        TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
        test_skip("a hardware PMU is present");
    }

    TEST_ASSERT_EQ(perfmon_event_init(&event, PERFMON_EV_INSTRUCTION,
                                      PERFMON_EF_KERN), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), ENODEV);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* Exact samples                                                       */
/* ------------------------------------------------------------------ */

/*
 * A CPU event with period P samples exactly floor(N / P) times over N
 * units emitted in random sizes, each sample in the emitting function,
 * with the owner's cookie, the CPU, the thread and the period; what is
 * emitted on other CPUs is not its business.
 */
TEST_DEFINE(perfmon_sample, cpu_event_samples_exactly)
{
    unsigned int c = cpu_count() - 1;
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct test_ps_drain d = { 0 };
    struct perfmon_event event;
    uint64_t seed = 77, total = 0, nr, lost;
    const uint64_t period = 97, want = 30011;

    test_ps_pin(c);
    lost = pmu_soft_nr_lost(c);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, period, 0);

    /* A tick first: a throttle left by an earlier test is over. */
    thread_delay(1);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    while (total < want) {
        uint64_t n = test_ps_rand_emit(&seed, want - total);

        test_ps_emit(n);
        total += n;
    }

    TEST_ASSERT_EQ(perfmon_event_read(&event), want);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, want / period);

    test_ps_drain(session, c, 0xc0de0000 + PMU_SOFT_EV_EMIT,
                  thread_id(thread_self()), "test_ps_emit", &d);
    TEST_ASSERT_EQ(d.nr_samples, want / period);
    TEST_ASSERT_EQ(d.period_sum, d.nr_samples * period);
    TEST_ASSERT_EQ(d.nr_lost, 0);
    TEST_ASSERT_EQ(d.nr_throttle_records, 0);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        struct test_ps_drain other = { 0 };

        test_ps_drain(session, i, 0, 0, NULL, &other);
        TEST_ASSERT_EQ(other.nr_samples, 0);
    }

    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * A thread event samples its thread only, wherever it runs: the thread
 * migrates over every CPU between emits while other threads emit on the
 * same channel everywhere. It knows, per CPU, which period ends fell
 * into its emits there (interrupts off around each emit keep it on one
 * CPU): each ring must hold exactly those samples, all its own.
 */
struct test_ps_target {
    struct thread *thread;
    uint64_t total;
    uint64_t period;
    uint64_t want[CPU_MAX];
    volatile bool go;
};

static void
test_ps_target_main(void *arg)
{
    struct test_ps_target *t = arg;
    uint64_t seed = 5, done = 0;

    while (!t->go) {
        thread_delay(1);
    }

    for (unsigned int i = 0; done < t->total; i++) {
        uint64_t n = test_ps_rand_emit(&seed, t->total - done);
        unsigned long flags;

        if (i % 16 == 0) {
            thread_set_affinity(thread_self(), 1ULL << (i / 16 % cpu_count()));
        }

        flags = cpu_intr_save();
        t->want[cpu_id()] += test_ps_ends(done, n, t->period);
        test_ps_emit(n);
        cpu_intr_restore(flags);
        done += n;

        if (i % 7 == 0) {
            thread_yield();
        }
    }
}

struct test_ps_other {
    struct thread *thread;
    uint64_t total;
    volatile bool go;
};

static void
test_ps_other_main(void *arg)
{
    struct test_ps_other *o = arg;
    uint64_t seed = 9;

    while (!o->go) {
        thread_delay(1);
    }

    for (uint64_t done = 0; done < o->total;) {
        uint64_t n = 1 + test_rand(&seed) % test_ps_max_emit();

        test_ps_emit(n);
        done += n;

        if (done % 5 == 0) {
            thread_yield();
        }
    }
}

TEST_DEFINE(perfmon_sample, thread_event_samples_only_its_thread)
{
    static struct test_ps_target target;
    static struct test_ps_other others[CPU_MAX];
    struct perfmon_session *session = test_ps_session(TEST_PS_RING);
    struct perfmon_event event;
    uint64_t nr, total_want = 0, total_got = 0;

    /* A tick first: a throttle left by an earlier test is over. */
    thread_delay(1);
    target = (struct test_ps_target){ .total = 40000, .period = 61 };
    target.thread = test_thread_start("ps-target", 0, test_ps_target_main,
                                      &target);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, target.period, 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, target.thread), 0);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        others[i] = (struct test_ps_other){ .total = 10000 };
        others[i].thread = test_thread_start("ps-other", 1ULL << i,
                                             test_ps_other_main, &others[i]);
    }

    target.go = true;

    for (unsigned int i = 0; i < cpu_count(); i++) {
        others[i].go = true;
    }

    /* Read before join: the event holds its own reference. */
    while (!thread_exited(target.thread)) {
        thread_delay(1);
    }

    TEST_ASSERT_EQ(perfmon_event_read(&event), target.total);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    thread_join(target.thread);
    TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
    TEST_ASSERT_EQ(nr, target.total / target.period);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        struct test_ps_drain d = { 0 };

        test_ps_drain(session, i, 0xc0de0000 + PMU_SOFT_EV_EMIT,
                      thread_id(target.thread), "test_ps_emit", &d);
        TEST_ASSERT_EQ(d.nr_samples, target.want[i]);
        TEST_ASSERT_EQ(d.nr_lost, 0);
        total_want += target.want[i];
        total_got += d.nr_samples;
    }

    TEST_ASSERT_EQ(total_got, target.total / target.period);
    TEST_ASSERT_EQ(total_want, total_got);

    for (unsigned int i = 0; i < cpu_count(); i++) {
        thread_join(others[i].thread);
    }

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}

/* ------------------------------------------------------------------ */
/* An event in no valid state                                          */
/* ------------------------------------------------------------------ */

/*
 * An event with the right magic but a state that is none of perfmon's
 * (its owner's memory overwritten) is refused by every call that takes
 * an event, sampling calls included, which leave its bytes as they were.
 * Only perfmon_event_init accepts it: it makes an event of any memory.
 */
TEST_DEFINE(perfmon_sample, event_in_no_valid_state_is_refused)
{
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_session *session = test_ps_session(4096);
    struct perfmon_sample_attr attr = { .session = session, .period = 10 };
    struct thread *self = thread_self();
    unsigned int refs = self->refs;
    struct perfmon_event event, copy;
    struct perfmon_group group;
    struct perfmon_value value;
    unsigned long flags;
    uint64_t n;

    TEST_ASSERT(soft != NULL);
    test_detach_on_failure(&event);

    /* A sampling event, then a counting one. */
    for (unsigned int pass = 0; pass < 2; pass++) {
        TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_EMIT,
                                          PERFMON_EF_SW), 0);

        if (pass == 0) {
            TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
        }

        event.state = 77;
        memcpy(&copy, &event, sizeof(event));

        TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, NULL), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_event_set_period(&event, 5), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_event_refresh(&event, 3), EINVAL);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        n = 12345;
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &n), EINVAL);
        TEST_ASSERT_EQ(n, 12345);
        TEST_ASSERT_EQ(perfmon_event_attach(&event, self), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_id()), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_detach(&event), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_read(&event), 0);
        TEST_ASSERT_EQ(perfmon_event_get(&event, &n), EINVAL);
        TEST_ASSERT_EQ(n, 12345);
        TEST_ASSERT_EQ(perfmon_event_read_value(&event, &value), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_enable(&event), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_disable(&event), EINVAL);
        TEST_ASSERT_EQ(perfmon_event_reset(&event), EINVAL);
        TEST_ASSERT(!perfmon_event_attached(&event));
        flags = cpu_intr_save();
        TEST_ASSERT(!perfmon_cpu_event_counting(&event));
        cpu_intr_restore(flags);
        TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &event), EINVAL);
        TEST_ASSERT_EQ(group.nr_events, 0);
        TEST_ASSERT_EQ(memcmp(&event, &copy, sizeof(event)), 0);
        TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);
        TEST_ASSERT_EQ(self->refs, refs);
    }

    /* The session was never taken. */
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
}
