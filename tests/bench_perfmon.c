/*
 * perfmon benchmark (`make bench`): context switch cost with 0 to 8 thread
 * events, read costs, attach+detach, poll cost, session records read and
 * produced. Figures are TSC cycles,
 * which under TCG with -icount shift=0 are instructions executed, hence
 * deterministic; each is a median of many repetitions, with its ratio to
 * the first figure of its group, measured in the same boot.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_session.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <kern/xcall.h>
#include <machine/cpu.h>

#include "test_util.h"

#define BENCH_SAMPLES   101
#define BENCH_SWITCHES  64      /* ping-pongs per context switch sample */

static uint64_t bench_samples[BENCH_SAMPLES];

static uint64_t
bench_median(uint64_t *samples, unsigned int n)
{
    for (unsigned int i = 1; i < n; i++) {
        uint64_t v = samples[i];
        unsigned int j = i;

        while (j > 0 && samples[j - 1] > v) {
            samples[j] = samples[j - 1];
            j--;
        }

        samples[j] = v;
    }

    return samples[n / 2];
}

static uint64_t bench_baseline;

static void
bench_row(const char *group, const char *name, uint64_t cycles, bool base)
{
    if (base) {
        bench_baseline = cycles;
    }

    printf("# bench: %-22s %-26s %10llu %5llu.%02llu\n", group, name,
           (unsigned long long)cycles,
           (unsigned long long)(cycles / bench_baseline),
           (unsigned long long)(cycles * 100 / bench_baseline % 100));
}

/* ---- context switch ---------------------------------------------- */

struct bench_pingpong {
    volatile bool stop;
    volatile bool ready;
};

static void
bench_peer_main(void *arg)
{
    struct bench_pingpong *pp = arg;

    pp->ready = true;

    while (!pp->stop) {
        thread_yield();
    }
}

static void
bench_attach_events(struct perfmon_event *events, unsigned int n,
                    struct thread *thread)
{
    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&events[i], PMU_SOFT_EV_EMIT + i,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&events[i], thread), 0);
    }
}

static void
bench_detach_events(struct perfmon_event *events, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT_EQ(perfmon_event_detach(&events[i]), 0);
    }
}

struct bench_switch {
    unsigned int nr_events;
    uint64_t result;
};

/* Runs pinned on the benchmark CPU with a yielding peer. */
static void
bench_switch_main(void *arg)
{
    struct bench_switch *bs = arg;
    struct perfmon_event mine[PMU_SOFT_NR_CHANNELS];
    struct perfmon_event peers[PMU_SOFT_NR_CHANNELS];
    struct bench_pingpong pp = { 0 };
    struct thread *peer;

    peer = test_thread_start("bench-peer", 1ULL << cpu_id(),
                             bench_peer_main, &pp);

    while (!pp.ready) {
        thread_yield();
    }

    bench_attach_events(mine, bs->nr_events, thread_self());
    bench_attach_events(peers, bs->nr_events, peer);

    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0 = cpu_get_tsc();

        for (unsigned int i = 0; i < BENCH_SWITCHES; i++) {
            thread_yield();
        }

        /* Each yield is two switches: to the peer and back. */
        bench_samples[s] = (cpu_get_tsc() - t0) / (2 * BENCH_SWITCHES);
    }

    bs->result = bench_median(bench_samples, BENCH_SAMPLES);
    bench_detach_events(mine, bs->nr_events);
    bench_detach_events(peers, bs->nr_events);
    pp.stop = true;
    thread_join(peer);
}

static uint64_t
bench_switch(unsigned int cpu, unsigned int nr_events)
{
    struct bench_switch bs = { .nr_events = nr_events };

    thread_join(test_thread_start("bench-switch", 1ULL << cpu,
                                  bench_switch_main, &bs));
    return bs.result;
}

/* ---- reads, attach/detach, poll ---------------------------------- */

static uint64_t
bench_read(struct perfmon_event *event)
{
    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0 = cpu_get_tsc();

        perfmon_event_read(event);
        bench_samples[s] = cpu_get_tsc() - t0;
    }

    return bench_median(bench_samples, BENCH_SAMPLES);
}

static void
bench_nop(void *arg)
{
    (void)arg;
}

/* A bare cross-CPU call round trip: what a remote read adds to. */
static uint64_t
bench_xcall(unsigned int cpu)
{
    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0 = cpu_get_tsc();

        xcall_call(cpu, bench_nop, NULL);
        bench_samples[s] = cpu_get_tsc() - t0;
    }

    return bench_median(bench_samples, BENCH_SAMPLES);
}

static uint64_t
bench_attach_detach(bool cpu_event)
{
    struct perfmon_event event;

    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);

    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0 = cpu_get_tsc();

        if (cpu_event) {
            perfmon_event_attach_cpu(&event, cpu_id());
        } else {
            perfmon_event_attach(&event, thread_self());
        }

        perfmon_event_detach(&event);
        bench_samples[s] = cpu_get_tsc() - t0;
    }

    return bench_median(bench_samples, BENCH_SAMPLES);
}

static uint64_t
bench_poll(unsigned int nr_slots)
{
    struct perfmon_dev *soft = perfmon_get_dev(true);
    struct perfmon_event events[PMU_SOFT_NR_CHANNELS];
    unsigned long flags;

    for (unsigned int i = 0; i < nr_slots; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&events[i], PMU_SOFT_EV_EMIT + i,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[i], cpu_id()), 0);
    }

    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0;

        flags = cpu_intr_save();
        t0 = cpu_get_tsc();
        perfmon_poll_local(soft);
        bench_samples[s] = cpu_get_tsc() - t0;
        cpu_intr_restore(flags);
    }

    bench_detach_events(events, nr_slots);
    return bench_median(bench_samples, BENCH_SAMPLES);
}

/* ---- session records ------------------------------------------- */

#define BENCH_RECORD_SIZE   56      /* a sample with one call chain frame */
#define BENCH_RECORDS       64      /* records per sample, all fit */
#define BENCH_RING_SIZE     4096

static void
bench_session_fill(struct perfmon_session *session)
{
    for (unsigned int i = 0; i < BENCH_RECORDS; i++) {
        struct perfmon_record_header *header;

        header = perfmon_session_reserve(session, BENCH_RECORD_SIZE);
        TEST_ASSERT(header != NULL);
        header->type = PERFMON_RECORD_SAMPLE;
        header->cpu = cpu_id();
        perfmon_session_commit(session, header);
    }
}

/*
 * Instructions per record: a burst of BENCH_RECORDS records produced
 * (reserve, header, commit) or read on this CPU, interrupts disabled, the
 * ring never full. The reader's loop and call are included, as a consumer
 * pays them.
 */
static uint64_t
bench_session(bool produce)
{
    struct perfmon_session *session;
    uint64_t buf[BENCH_RECORD_SIZE / sizeof(uint64_t)];
    unsigned long flags;
    size_t size;

    TEST_ASSERT_EQ(perfmon_session_create(&session, BENCH_RING_SIZE), 0);

    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0, t1;

        flags = cpu_intr_save();

        if (produce) {
            t0 = cpu_get_tsc();
            bench_session_fill(session);
            t1 = cpu_get_tsc();
        } else {
            bench_session_fill(session);
            t0 = cpu_get_tsc();

            for (unsigned int i = 0; i < BENCH_RECORDS; i++) {
                perfmon_session_read(session, cpu_id(), buf, sizeof(buf),
                                     &size);
            }

            t1 = cpu_get_tsc();
        }

        while (perfmon_session_read(session, cpu_id(), buf, sizeof(buf),
                                    &size) == 0) {
            continue;
        }

        cpu_intr_restore(flags);
        bench_samples[s] = (t1 - t0) / BENCH_RECORDS;
    }

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    return bench_median(bench_samples, BENCH_SAMPLES);
}

TEST_DEFINE_MANUAL(bench, perfmon)
{
    static const unsigned int switch_events[] = { 0, 1, 4, 8 };
    unsigned int bench_cpu = cpu_count() - 1;
    struct perfmon_event local_cpu, local_thread, remote_cpu;
    char name[32];

    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);
    printf("# bench: %-22s %-26s %10s %8s\n", "group", "case", "cycles",
           "ratio");

    for (unsigned int i = 0; i < ARRAY_SIZE(switch_events); i++) {
        snprintf(name, sizeof(name), "%u events on both threads",
                 switch_events[i]);
        bench_row("context switch", name,
                  bench_switch(bench_cpu, switch_events[i]), i == 0);
    }

    TEST_ASSERT_EQ(perfmon_event_init(&local_cpu, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&local_cpu, 0), 0);
    bench_row("perfmon_event_read", "local CPU event",
              bench_read(&local_cpu), true);
    TEST_ASSERT_EQ(perfmon_event_detach(&local_cpu), 0);

    TEST_ASSERT_EQ(perfmon_event_init(&local_thread, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&local_thread, thread_self()), 0);
    bench_row("perfmon_event_read", "local thread event",
              bench_read(&local_thread), false);
    TEST_ASSERT_EQ(perfmon_event_detach(&local_thread), 0);

    TEST_ASSERT_EQ(perfmon_event_init(&remote_cpu, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&remote_cpu, bench_cpu), 0);
    bench_row("remote read", "empty xcall to the CPU", bench_xcall(bench_cpu),
              true);
    bench_row("remote read", "remote CPU event", bench_read(&remote_cpu),
              false);
    bench_row("remote read", "empty xcall to this CPU", bench_xcall(0),
              false);
    TEST_ASSERT_EQ(perfmon_event_detach(&remote_cpu), 0);

    bench_row("attach+detach", "local CPU event", bench_attach_detach(true),
              true);
    bench_row("attach+detach", "own thread event",
              bench_attach_detach(false), false);

    bench_row("poll firing", "0 slots in use", bench_poll(0), true);
    bench_row("poll firing", "1 slot in use", bench_poll(1), false);
    bench_row("poll firing", "8 slots in use", bench_poll(8), false);

    bench_row("session record", "read (56 bytes)", bench_session(false),
              true);
    bench_row("session record", "reserve+commit (56 bytes)",
              bench_session(true), false);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
