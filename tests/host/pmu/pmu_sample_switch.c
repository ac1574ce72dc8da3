/*
 * Sampling end to end, the checks of a switch between two threads'
 * samplers of one event (pmu_sample_test.h): one read and one write of
 * the counter they share, also when it wraps around the switch.
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
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 1);
    pmu_sample_assert(0, cookie_a, PMU_SAMPLE_TID, PMU_SAMPLE_IP(1),
                      period_a);
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
    uint64_t done = pmu_sample_inject_done;
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
    HOST_ASSERT_EQ(pmu_sample_inject_done, done + !before_read);
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
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 4);

    /* The samples taken at a switch come with the switch's ip. */
    HOST_ASSERT_EQ(pmu_sample_buf[0].cookie, cookie_a);
    HOST_ASSERT_EQ(pmu_sample_buf[0].tid, PMU_SAMPLE_TID);
    HOST_ASSERT_EQ(pmu_sample_buf[0].period, period_a);
    pmu_sample_assert(1, cookie_a, PMU_SAMPLE_TID, PMU_SAMPLE_IP(1),
                      period_a);
    pmu_sample_assert(2, cookie_b, PMU_SAMPLE_TID_B, PMU_SAMPLE_IP(2),
                      period_b);
    HOST_ASSERT_EQ(pmu_sample_buf[3].cookie, cookie_a);
    HOST_ASSERT_EQ(pmu_sample_buf[3].tid, PMU_SAMPLE_TID);
    HOST_ASSERT_EQ(pmu_sample_buf[3].period, period_a);
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
    HOST_ASSERT_EQ(pmu_sample_nr_samples, 0);
    pmu_sample_end(session);
}
