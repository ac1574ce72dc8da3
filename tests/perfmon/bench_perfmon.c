/*
 * perfmon benchmark (`make bench`): context switch cost with 0 to 8 thread
 * events, read costs, attach+detach, poll cost, session records read and
 * produced. Figures are TSC cycles,
 * which under TCG with -icount shift=0 are instructions executed, hence
 * deterministic; each is a median of many repetitions, with its ratio to
 * the first figure of its group, measured in the same boot. Events on
 * the stack start zeroed: perfmon_event_init refuses memory that looks
 * like an attached event, as a stack slot reused by one call after
 * another can (the magic left by an earlier event, a state written
 * since by a deeper frame).
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>
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
    struct perfmon_event mine[PMU_SOFT_NR_CHANNELS] = { 0 };
    struct perfmon_event peers[PMU_SOFT_NR_CHANNELS] = { 0 };
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
    struct perfmon_event event = { 0 };

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
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_event events[PMU_SOFT_NR_CHANNELS] = { 0 };
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
        perfmon_cpu_poll_local(soft);
        bench_samples[s] = cpu_get_tsc() - t0;
        cpu_intr_restore(flags);
    }

    bench_detach_events(events, nr_slots);
    return bench_median(bench_samples, BENCH_SAMPLES);
}

/* ---- multiplexing ------------------------------------------------ */

/* An empty cross-CPU call to every CPU: what a rotation sends. */
static uint64_t
bench_broadcast(void)
{
    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0 = cpu_get_tsc();

        xcall_broadcast(bench_nop, NULL);
        bench_samples[s] = cpu_get_tsc() - t0;
    }

    return bench_median(bench_samples, BENCH_SAMPLES);
}

/*
 * One rotation of the software PMU with nr_events CPU events on distinct
 * raw events on this CPU: the new schedule, then every CPU following it
 * (this one stops the counters of the events leaving and starts those of
 * the events coming).
 */
static uint64_t
bench_rotate(unsigned int nr_events)
{
    static struct perfmon_event events[2 * PMU_SOFT_NR_COUNTERS];
    struct perfmon_dev *soft = perfmon_dev_get(true);

    TEST_ASSERT(nr_events <= ARRAY_SIZE(events));

    for (unsigned int i = 0; i < nr_events; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&events[i], PMU_SOFT_EV_EMIT + i,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[i], cpu_id()), 0);
    }

    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0 = cpu_get_tsc();

        perfmon_mux_rotate(soft);
        bench_samples[s] = cpu_get_tsc() - t0;
    }

    bench_detach_events(events, nr_events);
    return bench_median(bench_samples, BENCH_SAMPLES);
}

/* ---- groups ------------------------------------------------------ */

#define BENCH_GROUP_EVENTS  4

/*
 * A group of BENCH_GROUP_EVENTS events on cpu (or, with cpu CPU_MAX, the
 * calling thread): one group read, or as many single reads.
 */
static uint64_t
bench_group_read(unsigned int cpu, bool group_read)
{
    struct perfmon_event events[BENCH_GROUP_EVENTS] = { 0 };
    struct perfmon_group_value value;
    struct perfmon_group group;

    /*
     * The stack holds the last call's events, written over by what ran
     * since: garbage that may read as an attached event, which init
     * refuses.
     */
    memset(events, 0, sizeof(events));
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int i = 0; i < BENCH_GROUP_EVENTS; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&events[i], PMU_SOFT_EV_EMIT + i,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_group_add(&group, &events[i]), 0);
    }

    if (cpu == CPU_MAX) {
        TEST_ASSERT_EQ(perfmon_group_attach(&group, thread_self()), 0);
    } else {
        TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, cpu), 0);
    }

    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        uint64_t t0 = cpu_get_tsc();

        if (group_read) {
            perfmon_group_read(&group, &value);
        } else {
            for (unsigned int i = 0; i < BENCH_GROUP_EVENTS; i++) {
                perfmon_event_read(&events[i]);
            }
        }

        bench_samples[s] = cpu_get_tsc() - t0;
    }

    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
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

/* ---- sampling ---------------------------------------------------- */

#define BENCH_EMITS         64      /* emits per sample of the figure */
#define BENCH_LOOP          100000  /* units of the busy loop */
#define BENCH_LOOP_PERIOD   10000

static __attribute__((noinline)) void
bench_emit(void)
{
    pmu_soft_emit(1);
    __asm__ volatile("" : : : "memory");
}

/*
 * Instructions per emit of one unit on this CPU with event attached to
 * it, interrupts disabled; the session is drained, and a tick passes,
 * between samples so that the ring never fills and the CPU is never
 * throttled.
 */
static uint64_t
bench_emit_cost(struct perfmon_session *session)
{
    uint64_t buf[PERFMON_SESSION_RECORD_MAX / sizeof(uint64_t)];
    size_t size;

    for (unsigned int s = 0; s < BENCH_SAMPLES; s++) {
        unsigned long flags = cpu_intr_save();
        uint64_t t0 = cpu_get_tsc();

        for (unsigned int i = 0; i < BENCH_EMITS; i++) {
            bench_emit();
        }

        bench_samples[s] = (cpu_get_tsc() - t0) / BENCH_EMITS;
        cpu_intr_restore(flags);

        while (session != NULL
               && perfmon_session_read(session, cpu_id(), buf, sizeof(buf),
                                       &size) == 0) {
            continue;
        }

        thread_delay(1);
    }

    return bench_median(bench_samples, BENCH_SAMPLES);
}

/* Instructions of BENCH_LOOP emits of one unit, interrupts disabled. */
static uint64_t
bench_loop_cost(void)
{
    unsigned int n = 11;

    for (unsigned int s = 0; s < n; s++) {
        unsigned long flags = cpu_intr_save();
        uint64_t t0 = cpu_get_tsc();

        for (unsigned int i = 0; i < BENCH_LOOP; i++) {
            bench_emit();
        }

        bench_samples[s] = cpu_get_tsc() - t0;
        cpu_intr_restore(flags);
        thread_delay(1);
    }

    return bench_median(bench_samples, n);
}

/*
 * An emit with a CPU event attached on this CPU: counting only, or
 * sampling with period (1: every emit takes a sample) and a call chain of
 * nr_frames; or the busy loop.
 */
static uint64_t
bench_sampling(uint64_t period, unsigned int nr_frames, bool loop)
{
    struct perfmon_session *session = NULL;
    struct perfmon_event event = { 0 };
    uint64_t cost;

    TEST_ASSERT_EQ(perfmon_event_init(&event, PMU_SOFT_EV_EMIT,
                                      PERFMON_EF_SW), 0);

    if (period != 0) {
        struct perfmon_sample_attr attr = {
            .period = period, .nr_frames = nr_frames,
        };

        TEST_ASSERT_EQ(perfmon_session_create(&session, 1U << 20), 0);
        attr.session = session;
        TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    }

    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu_id()), 0);
    cost = loop ? bench_loop_cost() : bench_emit_cost(session);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);

    if (session != NULL) {
        uint64_t nr;

        /* Every emit of the figure took its sample, none throttled. */
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
        TEST_ASSERT_EQ(nr, loop ? 11 * BENCH_LOOP / period
                                : BENCH_SAMPLES * BENCH_EMITS / period);
        TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    }

    return cost;
}

/* Calls itself depth times, then runs the sampling figures: the call
 * chain of every sample is deeper than 8 frames. */
static __attribute__((noinline)) void
bench_sampling_rows(unsigned int depth)
{
    uint64_t base, sample, chain, loop;

    if (depth > 0) {
        bench_sampling_rows(depth - 1);
        __asm__ volatile("" : : : "memory");
        return;
    }

    base = bench_sampling(0, 0, false);
    sample = bench_sampling(1, 0, false);
    chain = bench_sampling(1, 8, false);
    bench_row("sampling", "emit, counting event", base, true);
    bench_row("sampling", "emit + sample", sample, false);
    bench_row("sampling", "emit + sample, 8 frames", chain, false);
    bench_row("sampling", "sample, no call chain", sample - base, false);
    bench_row("sampling", "sample, per frame", (chain - sample) / 8, false);

    loop = bench_sampling(0, 0, true);
    bench_row("sampling", "100000 emits, counting", loop, true);
    bench_row("sampling", "same, sampling 1/10000",
              bench_sampling(BENCH_LOOP_PERIOD, 8, true), false);
}

/*
 * The sample's cost as the overflow comes (pmu_soft.intr=1; `make bench`
 * boots it with perfmon.pmi=irq, then nmi, then nmi with
 * pmu_soft.nmi=ipi): in both modes a preset counter's wrap is reported
 * at once, in the emit, as an interrupt taken at the counting
 * instruction (NMI mode adds its marked sections); with pmu_soft.nmi=ipi
 * every wrap is an NMI to the CPU's own APIC ID, taken in the emit (the
 * loop runs with interrupts disabled): the delivery's own cost.
 */
TEST_DEFINE_MANUAL(bench, perfmon_pmi)
{
    const char *group = pmu_soft_nmi_ipi_mode() ? "sampling, pmi=nmi ipi"
                        : pmu_soft_nmi_mode() ? "sampling, pmi=nmi"
                        : "sampling, pmi=irq";
    uint64_t base, sample;

    if (!pmu_soft_intr_mode()) {
        test_skip("needs pmu_soft.intr=1");
    }

    thread_set_affinity(thread_self(), 1ULL << 0);
    base = bench_sampling(0, 0, false);
    sample = bench_sampling(1, 0, false);
    bench_row(group, "emit, counting event", base, true);
    bench_row(group, "emit + sample", sample, false);
    bench_row(group, "sample, no call chain", sample - base, false);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

TEST_DEFINE_MANUAL(bench, perfmon)
{
    static const unsigned int switch_events[] = { 0, 1, 4, 8 };
    unsigned int bench_cpu = cpu_count() - 1;
    struct perfmon_event local_cpu = { 0 }, local_thread = { 0 };
    struct perfmon_event remote_cpu = { 0 };
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

    bench_row("group of 4", "4 reads, remote CPU",
              bench_group_read(bench_cpu, false), true);
    bench_row("group of 4", "group read, remote CPU",
              bench_group_read(bench_cpu, true), false);
    bench_row("group of 4", "4 reads, own thread",
              bench_group_read(CPU_MAX, false), false);
    bench_row("group of 4", "group read, own thread",
              bench_group_read(CPU_MAX, true), false);

    bench_row("rotation", "empty xcall to every CPU", bench_broadcast(),
              true);
    bench_row("rotation", "8 events on 8 counters", bench_rotate(8), false);
    bench_row("rotation", "16 events on 8 counters", bench_rotate(16),
              false);

    bench_row("poll firing", "0 slots in use", bench_poll(0), true);
    bench_row("poll firing", "1 slot in use", bench_poll(1), false);
    bench_row("poll firing", "8 slots in use", bench_poll(8), false);

    bench_row("session record", "read (56 bytes)", bench_session(false),
              true);
    bench_row("session record", "reserve+commit (56 bytes)",
              bench_session(true), false);

    bench_sampling_rows(8);

    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/*
 * perf record all, as the shell attaches it: a tick sampler on every CPU.
 * Return the counters the device holds for them, and check that each CPU
 * uses one slot.
 */
static uint64_t
bench_record_all_counters(void)
{
    static struct perfmon_event events[CPU_MAX];
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_session *session;
    struct perfmon_sample_attr attr = { .period = 1000 };
    uint64_t nr_counters;

    TEST_ASSERT_EQ(perfmon_session_create(&session, 1U << 14), 0);
    attr.session = session;

    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_event_init(&events[c], PMU_SOFT_EV_TICK,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_set_sampling(&events[c], &attr), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&events[c], c), 0);
    }

    nr_counters = perfmon_dev_nr_used_slots(soft);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_cpu_nr_used_slots(c), 1);
        TEST_ASSERT_EQ(perfmon_event_detach(&events[c]), 0);
    }

    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    return nr_counters;
}

/*
 * The costs that must not grow with the number of CPUs (`make bench` boots
 * this at several CPU counts and compares): a rotation of events that all
 * live on one CPU, an attach+detach of a local CPU event, the counters a
 * sampler per CPU holds; with a broadcast's cost beside them, which does
 * grow.
 */
TEST_DEFINE_MANUAL(bench, perfmon_scale)
{
    test_require_cpus(2);
    thread_set_affinity(thread_self(), 1ULL << 0);
    printf("# bench-scale: cpus %u\n", cpu_count());
    printf("# bench-scale: rotation, 16 events on 8 counters: %llu\n",
           (unsigned long long)bench_rotate(16));
    printf("# bench-scale: attach+detach, local CPU event: %llu\n",
           (unsigned long long)bench_attach_detach(true));
    printf("# bench-scale: empty xcall to every CPU: %llu\n",
           (unsigned long long)bench_broadcast());
    printf("# bench-scale: perf record all, counters held: %llu\n",
           (unsigned long long)bench_record_all_counters());
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
