/*
 * Sampling end to end over a PMU register model. See pmu_sample_test.h.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/thread.h>
#include <machine/trap.h>

#include "host_env.h"
#include "host_test.h"
#include "pmu_sample_test.h"
#include "pmu_sample_test_i.h"

struct pmu_sample pmu_sample_buf[PMU_SAMPLE_MAX];
unsigned int pmu_sample_nr_samples;

struct perfmon_dev *
pmu_sample_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);

    HOST_ASSERT(dev != NULL);
    return dev;
}

struct perfmon_session *
pmu_sample_begin(void)
{
    struct perfmon_session *session;

    host_env_advance(1);
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT_EQ(perfmon_session_create(&session, PMU_SAMPLE_RING), 0);
    return session;
}

void
pmu_sample_end(struct perfmon_session *session)
{
    HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    host_env_set_intr_ctx(0, 0);
}

struct perfmon_event *
pmu_sample_event(const struct pmu_sample_env *env,
                 struct perfmon_session *session, unsigned int id,
                 uint64_t period, uint64_t cookie)
{
    struct perfmon_sample_attr attr = {
        .session = session, .period = period, .cookie = cookie,
    };
    struct perfmon_event *event = env->event(id, PERFMON_EF_KERN);

    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    return event;
}

uint64_t
pmu_sample_read(struct perfmon_event *event)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
    return value;
}

uint64_t
pmu_sample_nr(struct perfmon_event *event)
{
    uint64_t n = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &n), 0);
    return n;
}

unsigned int
pmu_sample_event_counter(const struct perfmon_event *event, uint64_t *maskp)
{
    unsigned int counter, width;

    HOST_ASSERT(perfmon_slot_counter(pmu_sample_dev(),
                                perfmon_event_slot_index(event), &counter,
                                &width));
    *maskp = (width == 64) ? ~0ULL : (1ULL << width) - 1;
    return counter;
}

void
pmu_sample_assert_left(const struct pmu_sample_env *env,
                       const struct perfmon_event *event, uint64_t left)
{
    uint64_t mask;
    unsigned int counter = pmu_sample_event_counter(event, &mask);

    HOST_ASSERT_EQ(env->counter(counter) & mask, -left & mask);
}

void
pmu_sample_deliver(const struct pmu_sample_env *env, uintptr_t ip)
{
    HOST_ASSERT(env->pmi_take());
    host_env_set_intr_ctx(ip, 0);
    host_env_raise_trap(TRAP_PMI);
    host_env_set_intr_ctx(0, 0);
}

void
pmu_sample_collect(struct perfmon_session *session)
{
    union {
        struct perfmon_record_header header;
        struct perfmon_record_sample sample;
        uint8_t bytes[PERFMON_SESSION_RECORD_MAX];
    } buf;
    size_t size;
    int error;

    pmu_sample_nr_samples = 0;

    while ((error = perfmon_session_read(session, 0, &buf, sizeof(buf),
                                         &size)) == 0) {
        struct pmu_sample *sample;

        HOST_ASSERT_EQ(buf.header.type, PERFMON_RECORD_SAMPLE);
        HOST_ASSERT_EQ(buf.header.size, size);
        HOST_ASSERT_EQ(size, sizeof(buf.sample));
        HOST_ASSERT_EQ(buf.sample.fixed_size, sizeof(buf.sample));
        HOST_ASSERT_EQ(buf.sample.ext_size, 0);
        HOST_ASSERT(pmu_sample_nr_samples < PMU_SAMPLE_MAX);
        sample = &pmu_sample_buf[pmu_sample_nr_samples++];
        sample->cpu = buf.header.cpu;
        sample->cookie = buf.sample.cookie;
        sample->time = buf.sample.time;
        sample->ip = buf.sample.ip;
        sample->period = buf.sample.period;
        sample->tid = buf.sample.tid;

        if (pmu_sample_nr_samples > 1) {
            HOST_ASSERT(sample->time > sample[-1].time);
        }
    }

    HOST_ASSERT_EQ(error, EAGAIN);
}

void
pmu_sample_assert(unsigned int k, uint64_t cookie, uint32_t tid,
                  uint64_t ip, uint64_t period)
{
    const struct pmu_sample *sample = &pmu_sample_buf[k];

    HOST_ASSERT(k < pmu_sample_nr_samples);
    HOST_ASSERT_EQ(sample->cpu, 0);
    HOST_ASSERT_EQ(sample->cookie, cookie);
    HOST_ASSERT_EQ(sample->tid, tid);
    HOST_ASSERT_EQ(sample->ip, ip);
    HOST_ASSERT_EQ(sample->period, period);
}


void
pmu_sample_check_refused(const struct pmu_sample_env *env, unsigned int id)
{
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *event;
    struct thread *thread = env->thread();

    HOST_ASSERT_EQ(pmu_sample_dev()->max_period, 0);
    event = pmu_sample_event(env, session, id, 1000, 1);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), EINVAL);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), EINVAL);
    HOST_ASSERT(!perfmon_event_attached(event));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_sample_dev()), 0);
    HOST_ASSERT_EQ(perfmon_session_nr_refs(session), 0);
    HOST_ASSERT_EQ(thread->refs, 1);

    /* The same event counting (no sampling) attaches. */
    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, NULL), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    env->retire(id, 5);
    HOST_ASSERT_EQ(pmu_sample_read(event), 5);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_sample_end(session);
}

void
pmu_sample_check_cpu_event(const struct pmu_sample_env *env, unsigned int id)
{
    const uint64_t period = 1000, cookie = 0xc0ffee00 + id;
    const unsigned int nr = 12;
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *event;
    uint64_t pos = 0;

    event = pmu_sample_event(env, session, id, period, cookie);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    HOST_ASSERT_EQ(perfmon_session_nr_refs(session), 1);
    pmu_sample_assert_left(env, event, period);

    /* Sample k comes with the PMI after k periods, skid k % 4 events. */
    for (unsigned int k = 1; k <= nr; k++) {
        uint64_t skid = k % 4;

        env->retire(id, k * period - pos - 1);
        HOST_ASSERT(!env->pmi_pending());
        HOST_ASSERT_EQ(pmu_sample_nr(event), k - 1);
        env->retire(id, 1 + skid);
        HOST_ASSERT(env->pmi_pending());
        pmu_sample_deliver(env, PMU_SAMPLE_IP(k));
        pos = k * period + skid;
        HOST_ASSERT_EQ(pmu_sample_nr(event), k);
        pmu_sample_assert_left(env, event, period - skid);
        HOST_ASSERT_EQ(pmu_sample_read(event), pos);
    }

    /* Short of the next period: no sample, no PMI. */
    env->retire(id, (nr + 1) * period - pos - 1);
    HOST_ASSERT(!env->pmi_pending());
    HOST_ASSERT_EQ(pmu_sample_read(event), (nr + 1) * period - 1);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(perfmon_session_nr_refs(session), 0);
    HOST_ASSERT_EQ(pmu_sample_nr(event), nr);

    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_sample_nr_samples, nr);

    for (unsigned int k = 1; k <= nr; k++) {
        pmu_sample_assert(k - 1, cookie, 0, PMU_SAMPLE_IP(k), period);
    }

    pmu_sample_end(session);
}

void
pmu_sample_check_least_period(const struct pmu_sample_env *env,
                              unsigned int id)
{
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_sample_attr attr = { .session = session, .period = 1 };
    struct perfmon_event *event = env->event(id, PERFMON_EF_KERN);
    unsigned int used = perfmon_dev_nr_used_slots(pmu_sample_dev());

    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), EINVAL);
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_sample_dev()), used);
    attr.period = 2;
    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    HOST_ASSERT_EQ(perfmon_event_set_period(event, 1), EINVAL);
    HOST_ASSERT_EQ(perfmon_event_set_period(event, 3), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_sample_end(session);
}

/*
 * A frequency sampler on a device whose least period is above 1 (2 on
 * Intel and AMD): its attach succeeds, CPU or thread, and its first
 * period is the least (asked 0, perfmon's 1, or 1 itself). Its estimates
 * are held to the same least (perfmon_freq_period); this host's TSC,
 * 1000 cycles a tick, cannot make an estimate that low.
 */
void
pmu_sample_check_freq_least_period(const struct pmu_sample_env *env,
                                   unsigned int id)
{
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_sample_attr attr = {
        .session = session, .freq = PERFMON_FREQ_MAX,
    };
    struct perfmon_event *event = env->event(id, PERFMON_EF_KERN);
    struct thread *thread = env->thread();
    uint64_t period;

    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);
    HOST_ASSERT_EQ(perfmon_event_get_period(event, &period), 0);
    HOST_ASSERT_EQ(period, 2);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);

    attr.period = 1;
    event = env->event(id, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    HOST_ASSERT_EQ(perfmon_event_get_period(event, &period), 0);
    HOST_ASSERT_EQ(period, 2);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_sample_end(session);
}

void
pmu_sample_check_thread_event(const struct pmu_sample_env *env,
                              unsigned int id)
{
    const uint64_t period = 500, cookie = 0x7417ead;
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *event;
    struct thread *thread = env->thread();

    thread->id = PMU_SAMPLE_TID;
    event = pmu_sample_event(env, session, id, period, cookie);
    HOST_ASSERT_EQ(perfmon_event_attach(event, thread), 0);

    /* Nothing counts, or samples, while the thread is off the CPU. */
    env->retire(id, 3 * period);
    HOST_ASSERT(!env->pmi_pending());
    HOST_ASSERT_EQ(pmu_sample_read(event), 0);

    host_env_switch_in(thread);
    pmu_sample_assert_left(env, event, period);
    env->retire(id, period - 2);
    host_env_switch_out(thread);
    env->retire(id, 2 * period);
    HOST_ASSERT(!env->pmi_pending());

    /*
     * Back on the CPU, the period goes on where it was left: 2 events
     * (hardware counters are never preset to fewer).
     */
    host_env_switch_in(thread);
    pmu_sample_assert_left(env, event, 2);
    env->retire(id, 2);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(1));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 1);

    /* The next period, with a skid of 2. */
    env->retire(id, period + 2);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(2));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 2);
    pmu_sample_assert_left(env, event, period - 2);

    /*
     * An overflow whose PMI is still held when the thread leaves: the
     * switch consumes it and samples there; its PMI, taken afterwards,
     * finds nothing to report.
     */
    env->retire(id, period - 2);
    HOST_ASSERT(env->pmi_pending());
    host_env_switch_out(thread);
    HOST_ASSERT_EQ(pmu_sample_nr(event), 3);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(3));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 3);
    HOST_ASSERT_EQ(pmu_sample_read(event), 3 * period);

    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 3);
    pmu_sample_assert(0, cookie, PMU_SAMPLE_TID, PMU_SAMPLE_IP(1), period);
    pmu_sample_assert(1, cookie, PMU_SAMPLE_TID, PMU_SAMPLE_IP(2), period);

    /* Taken at the switch: somewhere in the caller, not at a PMI's ip. */
    HOST_ASSERT(pmu_sample_buf[2].ip != 0);
    pmu_sample_assert(2, cookie, PMU_SAMPLE_TID, pmu_sample_buf[2].ip, period);
    HOST_ASSERT(pmu_sample_buf[2].ip != PMU_SAMPLE_IP(3));
    pmu_sample_end(session);
}

void
pmu_sample_check_several_in_one_pmi(const struct pmu_sample_env *env,
                                    const unsigned int ids[3])
{
    const uint64_t periods[3] = { 100, 200, 300 };
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *events[3];
    bool seen[3] = { false, false, false };

    for (unsigned int k = 0; k < 3; k++) {
        events[k] = pmu_sample_event(env, session, ids[k], periods[k],
                                     0x5e0 + k);
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(events[k], 0), 0);
    }

    /* Each overflows, with a skid of k events, before the PMI. */
    for (unsigned int k = 0; k < 3; k++) {
        env->retire(ids[k], periods[k] + k);
    }

    pmu_sample_deliver(env, PMU_SAMPLE_IP(9));
    HOST_ASSERT(!env->pmi_pending());

    for (unsigned int k = 0; k < 3; k++) {
        HOST_ASSERT_EQ(pmu_sample_nr(events[k]), 1);
        pmu_sample_assert_left(env, events[k], periods[k] - k);
        HOST_ASSERT_EQ(pmu_sample_read(events[k]), periods[k] + k);
        HOST_ASSERT_EQ(perfmon_event_detach(events[k]), 0);
    }

    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 3);

    for (unsigned int r = 0; r < 3; r++) {
        unsigned int k = (unsigned int)(pmu_sample_buf[r].cookie - 0x5e0);

        HOST_ASSERT(k < 3 && !seen[k]);
        seen[k] = true;
        pmu_sample_assert(r, 0x5e0 + k, 0, PMU_SAMPLE_IP(9), periods[k]);
    }

    pmu_sample_end(session);
}

void
pmu_sample_check_long_period(const struct pmu_sample_env *env,
                             unsigned int id)
{
    uint64_t max = pmu_sample_dev()->max_period;
    uint64_t period = 2 * max + 777;
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *event;

    HOST_ASSERT(max != 0 && period <= PERFMON_PERIOD_MAX);
    event = pmu_sample_event(env, session, id, period, 0x10);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    pmu_sample_assert_left(env, event, max);

    /* Two overflows on the way: no sample, the rest preset. */
    env->retire(id, max);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(1));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 0);
    pmu_sample_assert_left(env, event, max);
    env->retire(id, max);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(2));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 0);
    pmu_sample_assert_left(env, event, 777);
    HOST_ASSERT_EQ(pmu_sample_read(event), 2 * max);

    /* The period's end, 3 events of skid: one sample. */
    env->retire(id, 777 + 3);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(3));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 1);
    pmu_sample_assert_left(env, event, max);
    HOST_ASSERT_EQ(pmu_sample_read(event), period + 3);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);

    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 1);
    pmu_sample_assert(0, 0x10, 0, PMU_SAMPLE_IP(3), period);
    pmu_sample_end(session);
}

void
pmu_sample_check_refresh_and_period(const struct pmu_sample_env *env,
                                    unsigned int id)
{
    const uint64_t expected_periods[5] = { 100, 100, 100, 50, 50 };
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *event, *counting;

    /* Errors: no sampling event, 0 samples, period out of range. */
    counting = env->event(id, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_refresh(counting, 1), EINVAL);
    HOST_ASSERT_EQ(perfmon_event_set_period(counting, 10), EINVAL);

    event = pmu_sample_event(env, session, id, 100, 0x20);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    HOST_ASSERT_EQ(perfmon_event_refresh(event, 0), EINVAL);
    HOST_ASSERT_EQ(perfmon_event_set_period(event, 0), EINVAL);
    HOST_ASSERT_EQ(perfmon_event_set_period(event, PERFMON_PERIOD_MAX + 1),
                   EINVAL);

    /* Two samples, then counting only. */
    HOST_ASSERT_EQ(perfmon_event_refresh(event, 2), 0);

    for (unsigned int k = 1; k <= 2; k++) {
        env->retire(id, 100);
        pmu_sample_deliver(env, PMU_SAMPLE_IP(k));
        HOST_ASSERT_EQ(pmu_sample_nr(event), k);
    }

    env->retire(id, 300);
    HOST_ASSERT(!env->pmi_pending());
    HOST_ASSERT_EQ(pmu_sample_nr(event), 2);
    HOST_ASSERT_EQ(pmu_sample_read(event), 500);

    /*
     * Three more: a new period of 100 starts at the refresh; the period
     * set next takes effect at its end.
     */
    HOST_ASSERT_EQ(perfmon_event_refresh(event, 3), 0);
    pmu_sample_assert_left(env, event, 100);
    HOST_ASSERT_EQ(perfmon_event_set_period(event, 50), 0);
    env->retire(id, 100);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(3));
    pmu_sample_assert_left(env, event, 50);

    for (unsigned int k = 4; k <= 5; k++) {
        env->retire(id, 50);
        pmu_sample_deliver(env, PMU_SAMPLE_IP(k));
        HOST_ASSERT_EQ(pmu_sample_nr(event), k);
    }

    env->retire(id, 200);
    HOST_ASSERT(!env->pmi_pending());
    HOST_ASSERT_EQ(pmu_sample_nr(event), 5);
    HOST_ASSERT_EQ(pmu_sample_read(event), 900);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);

    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 5);

    for (unsigned int k = 0; k < 5; k++) {
        pmu_sample_assert(k, 0x20, 0, PMU_SAMPLE_IP(k + 1),
                          expected_periods[k]);
    }

    pmu_sample_end(session);
}

static const struct pmu_sample_env *pmu_sample_inject_env;
static unsigned int pmu_sample_inject_id;
static unsigned int pmu_sample_inject_reads;   /* counter reads still to come */
uint64_t pmu_sample_inject_done;

static void
pmu_sample_inject_hook(uint32_t msr)
{
    const struct pmu_sample_env *env = pmu_sample_inject_env;
    int counter = env->counter_of_msr(msr);
    unsigned int width;
    uint64_t n;

    if (pmu_sample_inject_reads == 0 || counter < 0
        || --pmu_sample_inject_reads != 0) {
        return;
    }

    width = env->counter_width((unsigned int)counter);
    n = ((width == 64) ? 0 : (1ULL << width)) - env->counter(counter) + 3;
    env->retire(pmu_sample_inject_id, n);
    pmu_sample_inject_done++;
}

void
pmu_sample_inject_begin(const struct pmu_sample_env *env, unsigned int id,
                        unsigned int reads)
{
    pmu_sample_inject_env = env;
    pmu_sample_inject_id = id;
    pmu_sample_inject_reads = reads;
    env->set_rdmsr_hook(pmu_sample_inject_hook);
}

static void
pmu_sample_inject_arm(const struct pmu_sample_env *env, unsigned int id)
{
    pmu_sample_inject_begin(env, id, env->update_counter_reads);
}

/* The overflow was injected, its PMI requested; taking it samples not. */
static void
pmu_sample_inject_check(const struct pmu_sample_env *env,
                        struct perfmon_event *event, uint64_t done,
                        uint64_t nr_samples, uint64_t count)
{
    env->set_rdmsr_hook(NULL);
    HOST_ASSERT_EQ(pmu_sample_inject_done, done);
    HOST_ASSERT(env->pmi_pending());
    pmu_sample_deliver(env, PMU_SAMPLE_IP(7));
    HOST_ASSERT_EQ(pmu_sample_nr(event), nr_samples);
    HOST_ASSERT_EQ(pmu_sample_read(event), count);
}

void
pmu_sample_check_overflow_before_preset(const struct pmu_sample_env *env,
                                        unsigned int id)
{
    const uint64_t period = 100;
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *event;

    /*
     * At attach: the counter wraps after perfmon's first read. The
     * events between that read and the preset are not counted.
     */
    pmu_sample_inject_done = 0;
    event = pmu_sample_event(env, session, id, period, 0x30);
    pmu_sample_inject_arm(env, id);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    pmu_sample_inject_check(env, event, 1, 0, 0);
    pmu_sample_assert_left(env, event, period);

    /* The first period is whole: a sample after exactly period events. */
    env->retire(id, period - 1);
    HOST_ASSERT(!env->pmi_pending());
    env->retire(id, 1);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(1));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 1);
    HOST_ASSERT_EQ(pmu_sample_read(event), period);

    /* At a refresh of the stopped event, same thing. */
    HOST_ASSERT_EQ(perfmon_event_refresh(event, 1), 0);
    env->retire(id, period);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(2));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 2);
    env->retire(id, 10);
    HOST_ASSERT(!env->pmi_pending());
    pmu_sample_inject_arm(env, id);
    HOST_ASSERT_EQ(perfmon_event_refresh(event, 1), 0);
    pmu_sample_inject_check(env, event, 2, 2, 2 * period + 10);
    pmu_sample_assert_left(env, event, period);
    env->retire(id, period);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(3));
    HOST_ASSERT_EQ(pmu_sample_nr(event), 3);
    HOST_ASSERT_EQ(pmu_sample_read(event), 3 * period + 10);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);

    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 3);

    for (unsigned int k = 0; k < 3; k++) {
        pmu_sample_assert(k, 0x30, 0, PMU_SAMPLE_IP(k + 1), period);
    }

    pmu_sample_end(session);
}

void
pmu_sample_release(struct thread *threads, unsigned int nr_threads,
                   struct perfmon_event *events, unsigned int nr_events)
{
    for (unsigned int i = 0; i < nr_threads; i++) {
        if (threads[i].perfmon_td.loaded_cpu != PERFMON_CPU_NONE) {
            host_env_switch_out(&threads[i]);
        }
    }

    for (unsigned int i = 0; i < nr_events; i++) {
        if (perfmon_event_attached(&events[i])) {
            perfmon_event_detach(&events[i]);
        }
    }
}
