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

#define PMU_SAMPLE_RING         8192
#define PMU_SAMPLE_MAX          64
#define PMU_SAMPLE_TID          7
#define PMU_SAMPLE_TID_B        8
#define PMU_SAMPLE_MAX_MSRS     64

/* The interrupted ip the k-th PMI of a check reports. */
#define PMU_SAMPLE_IP(k)        (0xffffffff80100000ULL + 0x10 * (k))

/* A sample as read back from the ring. */
struct pmu_sample {
    uint32_t cpu;
    uint64_t cookie;
    uint64_t time;
    uint64_t ip;
    uint64_t period;
    uint32_t tid;
};

static struct pmu_sample pmu_samples[PMU_SAMPLE_MAX];
static unsigned int pmu_nr_samples;

static struct perfmon_dev *
pmu_sample_dev(void)
{
    struct perfmon_dev *dev = perfmon_dev_get(false);

    HOST_ASSERT(dev != NULL);
    return dev;
}

/*
 * Start of a check: a new clock tick, so that samples of earlier checks
 * do not count against this tick's throttling budget.
 */
static struct perfmon_session *
pmu_sample_begin(void)
{
    struct perfmon_session *session;

    host_env_advance(1);
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT_EQ(perfmon_session_create(&session, PMU_SAMPLE_RING), 0);
    return session;
}

static void
pmu_sample_end(struct perfmon_session *session)
{
    HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    host_env_set_intr_ctx(0, 0);
}

/* A sampling event of generic id, kernel mode. */
static struct perfmon_event *
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

static uint64_t
pmu_sample_read(struct perfmon_event *event)
{
    uint64_t value = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get(event, &value), 0);
    return value;
}

static uint64_t
pmu_sample_nr(struct perfmon_event *event)
{
    uint64_t n = ~0ULL;

    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &n), 0);
    return n;
}

/* The counter behind an attached event, and perfmon's mask of it. */
static unsigned int
pmu_sample_event_counter(const struct perfmon_event *event, uint64_t *maskp)
{
    unsigned int counter, width;

    HOST_ASSERT(perfmon_slot_counter(pmu_sample_dev(),
                                     perfmon_event_slot_index(event), &counter,
                                     &width));
    *maskp = (width == 64) ? ~0ULL : (1ULL << width) - 1;
    return counter;
}

/* The counter holds 2^width - left in the bits perfmon counts. */
static void
pmu_sample_assert_left(const struct pmu_sample_env *env,
                       const struct perfmon_event *event, uint64_t left)
{
    uint64_t mask;
    unsigned int counter = pmu_sample_event_counter(event, &mask);

    HOST_ASSERT_EQ(env->counter(counter) & mask, -left & mask);
}

/* Take the pending PMI, which came at ip. */
static void
pmu_sample_deliver(const struct pmu_sample_env *env, uintptr_t ip)
{
    HOST_ASSERT(env->pmi_take());
    host_env_set_intr_ctx(ip, 0);
    host_env_raise_trap(TRAP_PMI);
    host_env_set_intr_ctx(0, 0);
}

/*
 * Read every record of CPU 0's ring: samples only (no LOST, no THROTTLE),
 * in TSC order, whole and of the expected size.
 */
static void
pmu_sample_collect(struct perfmon_session *session)
{
    union {
        struct perfmon_record_header header;
        struct perfmon_record_sample sample;
        uint8_t bytes[PERFMON_SESSION_RECORD_MAX];
    } buf;
    size_t size;
    int error;

    pmu_nr_samples = 0;

    while ((error = perfmon_session_read(session, 0, &buf, sizeof(buf),
                                         &size)) == 0) {
        struct pmu_sample *sample;

        HOST_ASSERT_EQ(buf.header.type, PERFMON_RECORD_SAMPLE);
        HOST_ASSERT_EQ(buf.header.size, size);
        HOST_ASSERT_EQ(size, sizeof(buf.sample));
        HOST_ASSERT_EQ(buf.sample.fixed_size, sizeof(buf.sample));
        HOST_ASSERT_EQ(buf.sample.ext_size, 0);
        HOST_ASSERT(pmu_nr_samples < PMU_SAMPLE_MAX);
        sample = &pmu_samples[pmu_nr_samples++];
        sample->cpu = buf.header.cpu;
        sample->cookie = buf.sample.cookie;
        sample->time = buf.sample.time;
        sample->ip = buf.sample.ip;
        sample->period = buf.sample.period;
        sample->tid = buf.sample.tid;

        if (pmu_nr_samples > 1) {
            HOST_ASSERT(sample->time > sample[-1].time);
        }
    }

    HOST_ASSERT_EQ(error, EAGAIN);
}

/* Sample k read back is from CPU 0, by cookie and tid, at ip, for period. */
static void
pmu_sample_assert(unsigned int k, uint64_t cookie, uint32_t tid,
                  uint64_t ip, uint64_t period)
{
    const struct pmu_sample *sample = &pmu_samples[k];

    HOST_ASSERT(k < pmu_nr_samples);
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
    HOST_ASSERT_EQ(pmu_nr_samples, nr);

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
    HOST_ASSERT_EQ(pmu_nr_samples, 3);
    pmu_sample_assert(0, cookie, PMU_SAMPLE_TID, PMU_SAMPLE_IP(1), period);
    pmu_sample_assert(1, cookie, PMU_SAMPLE_TID, PMU_SAMPLE_IP(2), period);

    /* Taken at the switch: somewhere in the caller, not at a PMI's ip. */
    HOST_ASSERT(pmu_samples[2].ip != 0);
    pmu_sample_assert(2, cookie, PMU_SAMPLE_TID, pmu_samples[2].ip, period);
    HOST_ASSERT(pmu_samples[2].ip != PMU_SAMPLE_IP(3));
    pmu_sample_end(session);
}

/* MSR accesses so far: in all, and of each of the PMU's registers. */
struct pmu_sample_accesses {
    unsigned long all;
    unsigned long reads[PMU_SAMPLE_MAX_MSRS];
    unsigned long writes[PMU_SAMPLE_MAX_MSRS];
};

static void
pmu_sample_accesses_take(const struct pmu_sample_env *env,
                         struct pmu_sample_accesses *accesses)
{
    HOST_ASSERT(env->nr_msrs <= PMU_SAMPLE_MAX_MSRS);
    accesses->all = env->nr_accesses();

    for (unsigned int i = 0; i < env->nr_msrs; i++) {
        accesses->reads[i] = env->nr_msr_reads(env->msrs[i]);
        accesses->writes[i] = env->nr_msr_writes(env->msrs[i]);
    }
}

/* Append " op 0xmsr xn" to list (of size PMU_SAMPLE_LIST) when n != 0. */
#define PMU_SAMPLE_LIST         512

static void
pmu_sample_list_add(char *list, const char *op, uint32_t msr,
                    unsigned long n)
{
    size_t len = strlen(list);

    if (n != 0 && len < PMU_SAMPLE_LIST) {
        snprintf(list + len, PMU_SAMPLE_LIST - len, " %s 0x%x x%lu", op,
                 (unsigned int)msr, n);
    }
}

/*
 * Since before, exactly one read and one write of counter counter and no
 * other access; else fail, naming every access (what: the switch).
 */
static void
pmu_sample_assert_read_write_once(const struct pmu_sample_env *env,
                                  const struct pmu_sample_accesses *before,
                                  unsigned int counter, const char *what)
{
    struct pmu_sample_accesses after;
    unsigned long all, named = 0, reads = 0, writes = 0;
    char list[PMU_SAMPLE_LIST] = "";

    pmu_sample_accesses_take(env, &after);
    all = after.all - before->all;

    for (unsigned int i = 0; i < env->nr_msrs; i++) {
        unsigned long r = after.reads[i] - before->reads[i];
        unsigned long w = after.writes[i] - before->writes[i];

        if (env->counter_of_msr(env->msrs[i]) == (int)counter) {
            reads += r;
            writes += w;
        }

        named += r + w;
        pmu_sample_list_add(list, "rdmsr", env->msrs[i], r);
        pmu_sample_list_add(list, "wrmsr", env->msrs[i], w);
    }

    if (reads != 1 || writes != 1 || all != 2) {
        HOST_FAIL("%s: %lu MSR accesses, %lu read(s) and %lu write(s) of "
                  "counter %u, not one of each alone:%s (%lu elsewhere)",
                  what, all, reads, writes, counter, list, all - named);
    }
}

/* Two fresh threads, a and b, with the ids samples name them by. */
static void
pmu_sample_two_threads(const struct pmu_sample_env *env, struct thread **ap,
                       struct thread **bp)
{
    *ap = env->thread();
    *bp = env->thread();
    (*ap)->id = PMU_SAMPLE_TID;
    (*bp)->id = PMU_SAMPLE_TID_B;
}

/*
 * Switch from the thread running to next, whose sampler of the same slot
 * has left events of its period to go: one read and one write of the
 * counter, which then holds exactly 2^width - left.
 */
static void
pmu_sample_switch_samplers(const struct pmu_sample_env *env,
                           struct thread *next, unsigned int counter,
                           uint64_t left, const char *what)
{
    unsigned int width = env->counter_width(counter);
    uint64_t mask = (width == 64) ? ~0ULL : (1ULL << width) - 1;
    struct pmu_sample_accesses before;

    pmu_sample_accesses_take(env, &before);
    host_env_switch_to(next);
    pmu_sample_assert_read_write_once(env, &before, counter, what);
    HOST_ASSERT_EQ(env->counter(counter), -left & mask);
    HOST_ASSERT(!env->pmi_pending());
}

void
pmu_sample_check_switch_samplers(const struct pmu_sample_env *env,
                                 unsigned int id)
{
    const uint64_t period_a = 1000, period_b = 600, ran_a = 300, ran_b = 200;
    const uint64_t skid = 3, cookie_a = 0x5a, cookie_b = 0x5b;
    struct perfmon_session *session = pmu_sample_begin();
    unsigned int used = perfmon_dev_nr_used_slots(pmu_sample_dev());
    struct perfmon_event *ea, *eb;
    struct thread *a, *b;
    unsigned int counter;
    uint64_t mask;

    pmu_sample_two_threads(env, &a, &b);
    ea = pmu_sample_event(env, session, id, period_a, cookie_a);
    eb = pmu_sample_event(env, session, id, period_b, cookie_b);
    HOST_ASSERT_EQ(perfmon_event_attach(ea, a), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(eb, b), 0);

    /* One slot for both samplers, hence one counter. */
    HOST_ASSERT_EQ(perfmon_event_slot_index(eb), perfmon_event_slot_index(ea));
    HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(pmu_sample_dev()), used + 1);

    host_env_switch_in(a);
    counter = pmu_sample_event_counter(ea, &mask);
    HOST_ASSERT_EQ(pmu_sample_event_counter(eb, &mask), counter);
    pmu_sample_assert_left(env, ea, period_a);
    env->retire(id, ran_a);

    /* b has not run: its whole period is left. */
    pmu_sample_switch_samplers(env, b, counter, period_b, "switch a -> b");
    env->retire(id, ran_b);
    HOST_ASSERT_EQ(pmu_sample_read(eb), ran_b);

    /* a goes on where it left its period. */
    pmu_sample_switch_samplers(env, a, counter, period_a - ran_a,
                               "switch b -> a");
    HOST_ASSERT_EQ(pmu_sample_read(ea), ran_a);

    /* a's period ends, skid events before its PMI: one sample, a's. */
    env->retire(id, period_a - ran_a - 1);
    HOST_ASSERT(!env->pmi_pending());
    env->retire(id, 1 + skid);
    HOST_ASSERT(env->pmi_pending());
    pmu_sample_deliver(env, PMU_SAMPLE_IP(1));
    HOST_ASSERT_EQ(pmu_sample_nr(ea), 1);
    HOST_ASSERT_EQ(pmu_sample_nr(eb), 0);
    pmu_sample_assert_left(env, ea, period_a - skid);
    HOST_ASSERT_EQ(pmu_sample_read(ea), period_a + skid);
    HOST_ASSERT_EQ(pmu_sample_read(eb), ran_b);

    host_env_switch_out(a);
    HOST_ASSERT_EQ(perfmon_event_detach(ea), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(eb), 0);
    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_nr_samples, 1);
    pmu_sample_assert(0, cookie_a, PMU_SAMPLE_TID, PMU_SAMPLE_IP(1),
                      period_a);
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
    HOST_ASSERT_EQ(pmu_nr_samples, 3);

    for (unsigned int r = 0; r < 3; r++) {
        unsigned int k = (unsigned int)(pmu_samples[r].cookie - 0x5e0);

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
    HOST_ASSERT_EQ(pmu_nr_samples, 1);
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
    HOST_ASSERT_EQ(pmu_nr_samples, 5);

    for (unsigned int k = 0; k < 5; k++) {
        pmu_sample_assert(k, 0x20, 0, PMU_SAMPLE_IP(k + 1),
                          expected_periods[k]);
    }

    pmu_sample_end(session);
}

/*
 * The overflow injection of pmu_sample_check_overflow_before_preset: at
 * perfmon's next read of a counter (the last of an update's reads, before
 * it presets), retire enough events of the event to wrap it past its full
 * width.
 */
static const struct pmu_sample_env *pmu_inject_env;
static unsigned int pmu_inject_id;
static unsigned int pmu_inject_reads;   /* counter reads still to come */
static uint64_t pmu_inject_done;

static void
pmu_sample_inject_hook(uint32_t msr)
{
    const struct pmu_sample_env *env = pmu_inject_env;
    int counter = env->counter_of_msr(msr);
    unsigned int width;
    uint64_t n;

    if (pmu_inject_reads == 0 || counter < 0 || --pmu_inject_reads != 0) {
        return;
    }

    width = env->counter_width((unsigned int)counter);
    n = ((width == 64) ? 0 : (1ULL << width)) - env->counter(counter) + 3;
    env->retire(pmu_inject_id, n);
    pmu_inject_done++;
}

/* Inject at the reads-th counter read from now. */
static void
pmu_sample_inject_begin(const struct pmu_sample_env *env, unsigned int id,
                        unsigned int reads)
{
    pmu_inject_env = env;
    pmu_inject_id = id;
    pmu_inject_reads = reads;
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
    HOST_ASSERT_EQ(pmu_inject_done, done);
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
    pmu_inject_done = 0;
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
    HOST_ASSERT_EQ(pmu_nr_samples, 3);

    for (unsigned int k = 0; k < 3; k++) {
        pmu_sample_assert(k, 0x30, 0, PMU_SAMPLE_IP(k + 1), period);
    }

    pmu_sample_end(session);
}

/*
 * Switch to next (running) with the counter wrapped before the switch's
 * read when before_read, else wrapping between its read and its write:
 * one read and one write; the PMI the wrap requested reports nothing (no
 * sample, no count, no overflow).
 */
static void
pmu_sample_switch_wrapped(const struct pmu_sample_env *env,
                          struct thread *next, unsigned int id,
                          unsigned int counter, uint64_t left,
                          bool before_read, const char *what)
{
    unsigned int width = env->counter_width(counter);
    uint64_t mask = (width == 64) ? ~0ULL : (1ULL << width) - 1;
    uint64_t reports = perfmon_cpu_nr_overflows(0);
    uint64_t done = pmu_inject_done;
    struct pmu_sample_accesses before;

    if (before_read) {
        env->retire(id, (-env->counter(counter) & mask) + 2);
        HOST_ASSERT(env->pmi_pending());
    } else {
        pmu_sample_inject_begin(env, id, 1);
    }

    pmu_sample_accesses_take(env, &before);
    host_env_switch_to(next);
    pmu_sample_assert_read_write_once(env, &before, counter, what);
    env->set_rdmsr_hook(NULL);
    HOST_ASSERT_EQ(pmu_inject_done, done + !before_read);
    HOST_ASSERT_EQ(env->counter(counter), -left & mask);

    /* The switch saw the wrap before its read (a decrease), no other. */
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - reports, before_read);
    reports = perfmon_cpu_nr_overflows(0);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(9));
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), reports);
    HOST_ASSERT_EQ(env->counter(counter), -left & mask);
}

void
pmu_sample_check_switch_samplers_wraps(const struct pmu_sample_env *env,
                                       unsigned int id)
{
    const uint64_t period_a = 1000, period_b = 600;
    const uint64_t cookie_a = 0x6a, cookie_b = 0x6b;
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *ea, *eb;
    struct thread *a, *b;
    unsigned int counter;
    uint64_t mask;

    pmu_sample_two_threads(env, &a, &b);
    ea = pmu_sample_event(env, session, id, period_a, cookie_a);
    eb = pmu_sample_event(env, session, id, period_b, cookie_b);
    HOST_ASSERT_EQ(perfmon_event_refresh(eb, 1), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(ea, a), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(eb, b), 0);
    host_env_switch_in(a);
    counter = pmu_sample_event_counter(ea, &mask);

    /* a's period ends 2 events before the switch: sampled there. */
    pmu_sample_switch_wrapped(env, b, id, counter, period_b, true,
                              "a -> b, wrapped before the read");
    HOST_ASSERT_EQ(pmu_sample_nr(ea), 1);
    HOST_ASSERT_EQ(pmu_sample_read(ea), period_a + 2);

    /* b's counter wraps inside the switch: those events count nowhere. */
    env->retire(id, 300);
    pmu_sample_switch_wrapped(env, a, id, counter, period_a - 2, false,
                              "b -> a, wrapped between read and write");
    HOST_ASSERT_EQ(pmu_sample_nr(eb), 0);
    HOST_ASSERT_EQ(pmu_sample_read(eb), 300);

    /* Each goes on with its period. */
    env->retire(id, period_a - 2);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(1));
    HOST_ASSERT_EQ(pmu_sample_nr(ea), 2);
    HOST_ASSERT_EQ(pmu_sample_read(ea), 2 * period_a);
    pmu_sample_switch_samplers(env, b, counter, period_b - 300,
                               "switch a -> b");
    env->retire(id, period_b - 300);
    pmu_sample_deliver(env, PMU_SAMPLE_IP(2));
    HOST_ASSERT_EQ(pmu_sample_nr(eb), 1);

    /* b took its last sample: counting on, its counter runs unpreset. */
    env->retire(id, 10);
    HOST_ASSERT(!env->pmi_pending());
    pmu_sample_switch_samplers(env, a, counter, period_a, "switch b -> a");

    /* a's period ends before a switch to b, whose counter is preset. */
    pmu_sample_switch_wrapped(env, b, id, counter, period_b, true,
                              "a -> b (no samples left), wrapped before");
    HOST_ASSERT_EQ(pmu_sample_nr(ea), 3);
    HOST_ASSERT_EQ(pmu_sample_read(ea), 3 * period_a + 2);

    /* b's counter wraps after period_b: counted, not sampled. */
    env->retire(id, period_b + 100);
    HOST_ASSERT(env->pmi_pending());
    pmu_sample_deliver(env, PMU_SAMPLE_IP(3));
    HOST_ASSERT_EQ(pmu_sample_nr(eb), 1);
    HOST_ASSERT_EQ(pmu_sample_read(eb), period_b + 10 + period_b + 100);
    HOST_ASSERT_EQ(pmu_sample_read(ea), 3 * period_a + 2);

    host_env_switch_out(b);
    HOST_ASSERT_EQ(perfmon_event_detach(ea), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(eb), 0);
    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_nr_samples, 4);

    /* The samples taken at a switch come with the switch's ip. */
    HOST_ASSERT_EQ(pmu_samples[0].cookie, cookie_a);
    HOST_ASSERT_EQ(pmu_samples[0].tid, PMU_SAMPLE_TID);
    HOST_ASSERT_EQ(pmu_samples[0].period, period_a);
    pmu_sample_assert(1, cookie_a, PMU_SAMPLE_TID, PMU_SAMPLE_IP(1),
                      period_a);
    pmu_sample_assert(2, cookie_b, PMU_SAMPLE_TID_B, PMU_SAMPLE_IP(2),
                      period_b);
    HOST_ASSERT_EQ(pmu_samples[3].cookie, cookie_a);
    HOST_ASSERT_EQ(pmu_samples[3].tid, PMU_SAMPLE_TID);
    HOST_ASSERT_EQ(pmu_samples[3].period, period_a);
    pmu_sample_end(session);
}

void
pmu_sample_check_switch_longest_preset(const struct pmu_sample_env *env,
                                       unsigned int id)
{
    const uint64_t max = pmu_sample_dev()->max_period;
    const uint64_t period_a = 2 * max + 777, period_b = 600;
    struct perfmon_session *session = pmu_sample_begin();
    struct perfmon_event *ea, *eb;
    struct thread *a, *b;
    unsigned int counter;
    uint64_t mask;

    pmu_sample_two_threads(env, &a, &b);
    ea = pmu_sample_event(env, session, id, period_a, 0x7a);
    eb = pmu_sample_event(env, session, id, period_b, 0x7b);
    HOST_ASSERT_EQ(perfmon_event_attach(ea, a), 0);
    HOST_ASSERT_EQ(perfmon_event_attach(eb, b), 0);
    host_env_switch_in(a);
    counter = pmu_sample_event_counter(ea, &mask);
    pmu_sample_assert_left(env, ea, max);

    /* The longest preset wraps 2 events before the switch: no sample. */
    pmu_sample_switch_wrapped(env, b, id, counter, period_b, true,
                              "a -> b, a's longest preset wrapped");
    HOST_ASSERT_EQ(pmu_sample_read(ea), max + 2);
    HOST_ASSERT_EQ(pmu_sample_nr(ea), 0);

    /* Back to a: what is left, max + 775, takes the longest preset. */
    env->retire(id, 100);
    pmu_sample_switch_samplers(env, a, counter, max, "switch b -> a");
    HOST_ASSERT_EQ(pmu_sample_read(eb), 100);
    HOST_ASSERT_EQ(pmu_sample_read(ea), max + 2);

    host_env_switch_out(a);
    HOST_ASSERT_EQ(perfmon_event_detach(ea), 0);
    HOST_ASSERT_EQ(perfmon_event_detach(eb), 0);
    pmu_sample_collect(session);
    HOST_ASSERT_EQ(pmu_nr_samples, 0);
    pmu_sample_end(session);
}
