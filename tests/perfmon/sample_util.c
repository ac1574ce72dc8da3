/*
 * What the perfmon_sample suite's files share (sample_util.h).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/ksym.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_session.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>

#include "sample_util.h"
#include "test_util.h"

union test_ps_record test_ps_buf;

struct perfmon_session *
test_ps_session(size_t size)
{
    struct perfmon_session *session;

    TEST_ASSERT_EQ(perfmon_session_create(&session, size), 0);
    return session;
}

void
test_ps_init(struct perfmon_event *event, unsigned int id,
             struct perfmon_session *session, uint64_t period,
             unsigned int nr_frames)
{
    struct perfmon_sample_attr attr = {
        .session = session,
        .period = period,
        .cookie = 0xc0de0000 + id,
        .nr_frames = nr_frames,
    };

    TEST_ASSERT_EQ(perfmon_event_init(event, id, PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
}

uint64_t
test_ps_max_emit(void)
{
    return MIN(200, (1ULL << MIN(pmu_soft_width(), 32)) - 1);
}

/* The barrier keeps the call from becoming a tail jump. */
__attribute__((noinline)) void
test_ps_emit(uint64_t n)
{
    pmu_soft_emit(n);
    __asm__ volatile("" : : : "memory");
}

bool
test_ps_in(uintptr_t ip, const char *fn)
{
    uintptr_t offset;
    const char *name = ksym_lookup(ip, &offset);

    return name != NULL && strcmp(name, fn) == 0;
}

void
test_ps_drain(struct perfmon_session *session, unsigned int cpu,
              uint64_t want_cookie, uint32_t want_tid, const char *fn,
              struct test_ps_drain *d)
{
    size_t size;

    while (perfmon_session_read(session, cpu, &test_ps_buf,
                                sizeof(test_ps_buf), &size) == 0) {
        TEST_ASSERT_EQ(size, test_ps_buf.header.size);
        TEST_ASSERT_EQ(test_ps_buf.header.cpu, cpu);

        switch (test_ps_buf.header.type) {
        case PERFMON_RECORD_SAMPLE:
            TEST_ASSERT_EQ(test_ps_buf.sample.fixed_size,
                           sizeof(test_ps_buf.sample));
            TEST_ASSERT_EQ(size, sizeof(test_ps_buf.sample)
                                 + test_ps_buf.sample.ext_size);
            TEST_ASSERT_EQ(test_ps_buf.sample.cookie, want_cookie);

            if (want_tid != ~0U) {
                TEST_ASSERT_EQ(test_ps_buf.sample.tid, want_tid);
            }

            if (fn != NULL && !test_ps_in(test_ps_buf.sample.ip, fn)) {
                test_fail_at(__FILE__, __LINE__, "sample at %lx, not in %s",
                             (unsigned long)test_ps_buf.sample.ip, fn);
            }

            if (d->nr_samples == 0 || size < d->sample_size_min) {
                d->sample_size_min = size;
            }

            d->sample_size_max = MAX(d->sample_size_max, size);
            d->nr_samples++;
            d->period_sum += test_ps_buf.sample.period;
            break;
        case PERFMON_RECORD_LOST:
            d->nr_lost += test_ps_buf.lost.nr_lost;
            break;
        case PERFMON_RECORD_THROTTLE:
            TEST_ASSERT_LE(test_ps_buf.throttle.time_start,
                           test_ps_buf.throttle.time_end);
            TEST_ASSERT_EQ(size, sizeof(test_ps_buf.throttle));
            TEST_ASSERT_EQ(test_ps_buf.throttle.cookie, want_cookie);
            TEST_ASSERT_NE(test_ps_buf.throttle.nr_periods, 0);
            TEST_ASSERT_GE(test_ps_buf.throttle.nr_events,
                           test_ps_buf.throttle.nr_periods);
            d->nr_throttle_records++;
            d->throttled_periods += test_ps_buf.throttle.nr_periods;
            d->throttled_events += test_ps_buf.throttle.nr_events;
            break;
        default:
            test_fail_at(__FILE__, __LINE__, "record type %u",
                         test_ps_buf.header.type);
        }
    }
}

void
test_ps_pin(unsigned int cpu)
{
    TEST_ASSERT_EQ(thread_set_affinity(thread_self(), 1ULL << cpu), 0);
}
