/*
 * perfmon with its overflow interrupt as an NMI (suite perfmon_nmi; the
 * software PMU with pmu_soft.intr=1 and perfmon.pmi=nmi, the default):
 * samples land inside code that runs with interrupts disabled; counts stay
 * exact while NMIs land anywhere in the CPU's switches, reads and polls;
 * a ring keeps every record when NMI and maskable producers share it.
 * Another CPU, when there is one, sends NMIs at the CPU under test all
 * along, so that they also land at random points of perfmon's maskable
 * sections (kern/perfmon_nmi.h), where they must be deferred.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "sample_util.h"
#include "session_util.h"
#include "test_util.h"

static void
test_nmi_require(void)
{
    if (!pmu_soft_nmi_mode()) {
        test_skip("needs the software PMU's NMI (pmu_soft.intr=1, "
                  "perfmon.pmi=nmi)");
    }
}

/* ------------------------------------------------------------------ */
/* NMIs from another CPU                                               */
/* ------------------------------------------------------------------ */

struct test_nmi_hammer {
    struct thread *thread;
    unsigned int target;
    volatile bool stop;
    uint64_t nr_sent;
};

static void
test_nmi_hammer_main(void *arg)
{
    struct test_nmi_hammer *h = arg;
    uint64_t rng = 0x5bd1e995;

    while (!h->stop) {
        unsigned long flags = cpu_intr_save();

        cpu_send_nmi(h->target);
        cpu_intr_restore(flags);
        h->nr_sent++;

        /* A random gap, so that they land anywhere. */
        for (uint64_t i = test_rand(&rng) % 64; i != 0; i--) {
            cpu_pause();
        }
    }
}

/* NMIs at target from another CPU until stopped; none on one CPU. */
static void
test_nmi_hammer_start(struct test_nmi_hammer *h, unsigned int target)
{
    *h = (struct test_nmi_hammer){ .target = target };

    if (cpu_count() > 1) {
        unsigned int other = (target + 1) % cpu_count();

        h->thread = test_thread_start("nmi-hammer", 1ULL << other,
                                      test_nmi_hammer_main, h);
    }
}

static void
test_nmi_hammer_stop(struct test_nmi_hammer *h)
{
    h->stop = true;

    if (h->thread != NULL) {
        thread_join(h->thread);
        h->thread = NULL;
    }
}

/* ------------------------------------------------------------------ */
/* Samples inside interrupts-disabled code                             */
/* ------------------------------------------------------------------ */

/* The loop samples must point into; n emits of 1. */
static __attribute__((noinline)) void
test_nmi_spin(unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        pmu_soft_emit(1);
    }

    barrier();
}

/*
 * With interrupts disabled all along, every period's sample is taken
 * before they come back on (the NMI is not held back), and points into
 * the loop that ran with interrupts disabled: a maskable overflow
 * interrupt would take them, late, where interrupts are enabled again.
 */
TEST_DEFINE(perfmon_nmi, samples_land_inside_interrupts_disabled_code)
{
    struct test_nmi_hammer hammer;

    test_nmi_require();
    test_ps_pin(cpu_id());
    test_nmi_hammer_start(&hammer, cpu_id());

    for (uint64_t period = 1; period <= 7; period++) {
        struct perfmon_session *session = test_ps_session(TEST_PS_RING);
        struct test_ps_drain d = { 0 };
        struct perfmon_event event;
        uint64_t before, inside, after;
        unsigned long flags;
        unsigned int n = 60 * 7;

        test_ps_init(&event, PMU_SOFT_EV_EMIT, session, period, 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&event, thread_self()), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &before), 0);

        /* A tick first: a throttle left by an earlier test is over. */
        thread_delay(1);

        flags = cpu_intr_save();
        test_nmi_spin(n);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &inside), 0);
        cpu_intr_restore(flags);

        TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &after), 0);
        TEST_ASSERT_EQ(after, inside);
        test_ps_drain(session, cpu_id(), 0xc0de0000 + PMU_SOFT_EV_EMIT,
                      thread_id(thread_self()), "test_nmi_spin", &d);
        TEST_ASSERT_EQ(d.nr_samples, inside - before);
        TEST_ASSERT_EQ(d.nr_lost, 0);

        /* Every period's end a sample, unless the CPU was throttled. */
        TEST_ASSERT_EQ(inside - before + d.throttled_periods, n / period);
        TEST_ASSERT_GT(inside - before, 0);
        TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    }

    test_nmi_hammer_stop(&hammer);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* ------------------------------------------------------------------ */
/* A reload discards the overflow its update already counted          */
/* ------------------------------------------------------------------ */

#define TEST_NMI_RELOAD_ROUNDS  20

/*
 * A tick counter's read accounts the ticks that passed while interrupts
 * were off, inside perfmon's update (a marked section): with period 1
 * the counter wraps there, its NMI is deferred to the section's end, and
 * the update counts the wrap, takes the samples and reloads the counter
 * with a store. The deferred NMI must then find no overflow pending:
 * reported against the reloaded value, it would add a whole 2^width
 * (4096 ticks at width 12, found by the sampling torture). The count is
 * the ticks the CPU accounted while the event counted; a tick accounted
 * during the attach or the detach makes the window unknown by one, and
 * the round is tried again.
 */
TEST_DEFINE(perfmon_nmi, reload_discards_the_overflow_its_update_counted)
{
    unsigned int cpu = cpu_id();
    uint64_t wait = 2 * clock_tsc_per_tick();
    bool exact = false;

    test_nmi_require();
    test_ps_pin(cpu);

    for (unsigned int attempt = 0; attempt < 10 && !exact; attempt++) {
        struct perfmon_session *session = test_ps_session(TEST_PS_RING);
        struct test_ps_drain d = { 0 };
        struct perfmon_event event;
        uint64_t t0, t1, t2, t3, count, nr;

        /* A tick first: a throttle left by an earlier test is over. */
        thread_delay(1);
        test_ps_init(&event, PMU_SOFT_EV_TICK, session, 1, 0);
        t0 = clock_nr_ticks(cpu);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, cpu), 0);
        t1 = clock_nr_ticks(cpu);

        for (unsigned int i = 0; i < TEST_NMI_RELOAD_ROUNDS; i++) {
            unsigned long flags = cpu_intr_save();
            uint64_t start = cpu_get_tsc();

            /* The tick interrupt waits: the read accounts its ticks. */
            while (cpu_get_tsc() - start < wait) {
                cpu_pause();
            }

            perfmon_event_read(&event);
            cpu_intr_restore(flags);
        }

        t2 = clock_nr_ticks(cpu);
        TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
        t3 = clock_nr_ticks(cpu);
        TEST_ASSERT_EQ(perfmon_event_get(&event, &count), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&event, &nr), 0);
        test_ps_drain(session, cpu, 0xc0de0000 + PMU_SOFT_EV_TICK, ~0U, NULL,
                      &d);

        /* At least 2 ticks a round, each a period: no phantom wrap. */
        TEST_ASSERT_GE(count, t2 - t1);
        TEST_ASSERT_LE(count, t3 - t0);
        TEST_ASSERT_GE(count, 2 * TEST_NMI_RELOAD_ROUNDS);
        TEST_ASSERT_EQ(nr + d.throttled_periods, count);
        TEST_ASSERT_EQ(d.nr_samples, nr);
        TEST_ASSERT_EQ(d.nr_lost, 0);
        exact = (t0 == t1) && (t2 == t3);

        if (exact) {
            TEST_ASSERT_EQ(count, t3 - t0);
        }

        TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    }

    TEST_ASSERT(exact);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* ------------------------------------------------------------------ */
/* A deferred sample's call chain                                      */
/* ------------------------------------------------------------------ */

static __attribute__((noinline)) void
test_nmi_chain3(void)
{
    test_ps_emit(1);
    __asm__ volatile("" : : : "memory");
}

static __attribute__((noinline)) void
test_nmi_chain2(void)
{
    test_nmi_chain3();
    __asm__ volatile("" : : : "memory");
}

static __attribute__((noinline)) void
test_nmi_chain1(void)
{
    test_nmi_chain2();
    __asm__ volatile("" : : : "memory");
}

/* Overwrite the stack below the caller's frame, where the chain was. */
static __attribute__((noinline)) void
test_nmi_scribble(void)
{
    volatile uint64_t junk[64];

    for (unsigned int i = 0; i < ARRAY_SIZE(junk); i++) {
        junk[i] = 0xdead0000 + i;
    }
}

/*
 * A period ends inside a session reservation (a marked section), so its
 * overflow is handled at the commit, after the emitting functions have
 * returned and their frames were overwritten: the sample still carries
 * the call chain of where the period ended, captured then (walked at the
 * commit, it was garbage: a stack address and nothing more).
 */
TEST_DEFINE(perfmon_nmi, deferred_sample_keeps_its_call_chain)
{
    static const char *const want[] = {
        "test_nmi_chain3", "test_nmi_chain2", "test_nmi_chain1",
        "test_fn_perfmon_nmi_deferred_sample_keeps_its_call_chain",
    };
    unsigned int c = cpu_id();
    struct perfmon_session *session;
    const struct perfmon_record_callchain *chain;
    struct perfmon_event event;
    struct perfmon_record_test *record;
    unsigned long flags;
    size_t size;

    test_nmi_require();
    test_ps_pin(c);
    c = cpu_id();
    session = test_ps_session(TEST_PS_RING);
    test_ps_init(&event, PMU_SOFT_EV_EMIT, session, 1, 8);

    /* A tick first: a throttle left by an earlier test is over. */
    thread_delay(1);
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, c), 0);

    flags = cpu_intr_save();
    record = perfmon_session_reserve(session, sizeof(*record));
    TEST_ASSERT(record != NULL);
    test_nmi_chain1();
    test_nmi_scribble();
    record->header.type = PERFMON_RECORD_TEST;
    record->header.size = sizeof(*record);
    record->header.cpu = c;
    record->seq = 1;
    perfmon_session_commit(session, record);
    cpu_intr_restore(flags);

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);

    /* The reservation first, then the sample its commit took. */
    TEST_ASSERT_EQ(perfmon_session_read(session, c, &test_ps_buf,
                                        sizeof(test_ps_buf), &size), 0);
    TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_TEST);
    TEST_ASSERT_EQ(perfmon_session_read(session, c, &test_ps_buf,
                                        sizeof(test_ps_buf), &size), 0);
    TEST_ASSERT_EQ(test_ps_buf.header.type, PERFMON_RECORD_SAMPLE);
    TEST_ASSERT(test_ps_in(test_ps_buf.sample.ip, "test_ps_emit"));
    chain = perfmon_record_sample_callchain(&test_ps_buf.sample, size);
    TEST_ASSERT(chain != NULL);
    TEST_ASSERT_EQ(chain->chunk.nr, 8);

    for (unsigned int i = 0; i < ARRAY_SIZE(want); i++) {
        if (!test_ps_in(chain->frames[i], want[i])) {
            test_fail_at(__FILE__, __LINE__, "frame %u at %lx, not in %s",
                         i, (unsigned long)chain->frames[i], want[i]);
        }
    }

    TEST_ASSERT_EQ(perfmon_session_read(session, c, &test_ps_buf,
                                        sizeof(test_ps_buf), &size), EAGAIN);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* ------------------------------------------------------------------ */
/* Exact counts while the CPU switches, reads and polls                */
/* ------------------------------------------------------------------ */

#define TEST_NMI_CHANNEL        2       /* the emitter's thread events */
#define TEST_NMI_CPU_CHANNEL    3       /* the CPU events: NMIs emit too */
#define TEST_NMI_ROUNDS         600
#define TEST_NMI_RING           (1U << 18)  /* every sample fits */

struct test_nmi_emitter {
    struct thread *thread;
    uint64_t seed;
    uint64_t emitted;       /* on TEST_NMI_CHANNEL */
    uint64_t emitted_cpu;   /* on TEST_NMI_CPU_CHANNEL */
    volatile bool go;       /* its events are attached */
    volatile bool done;
};

/* Emits of 1 to 3, some with interrupts disabled, yielding now and then. */
static void
test_nmi_emitter_main(void *arg)
{
    struct test_nmi_emitter *e = arg;

    while (!e->go) {
        thread_yield();
    }

    for (unsigned int i = 0; i < TEST_NMI_ROUNDS; i++) {
        uint64_t r = test_rand(&e->seed);
        uint64_t n = 1 + r % 3;

        if (r & 4) {
            unsigned long flags = cpu_intr_save();

            pmu_soft_emit_channel(TEST_NMI_CHANNEL, n);
            pmu_soft_emit_channel(TEST_NMI_CHANNEL, 1);
            cpu_intr_restore(flags);
            n++;
        } else {
            pmu_soft_emit_channel(TEST_NMI_CHANNEL, n);
        }

        e->emitted += n;

        if ((r & 0x60) == 0) {
            pmu_soft_emit_channel(TEST_NMI_CPU_CHANNEL, 1);
            e->emitted_cpu++;
        }

        if ((r & 0x18) == 0) {
            thread_yield();
        }
    }

    e->done = true;
}

/* NMIs that emit: the CPU under test while active, and what they emitted. */
static unsigned int test_nmi_emit_cpu;
static volatile bool test_nmi_emit_active;
static uint64_t test_nmi_emitted;

/*
 * An emit from the NMI: the counter may wrap there, and its own NMI,
 * held back until this one returns, then lands wherever the CPU was,
 * inside perfmon's maskable sections too, with an overflow pending.
 */
static void
test_nmi_emit_hook(const struct perfmon_intr_ctx *ctx)
{
    (void)ctx;

    if (test_nmi_emit_active && cpu_id() == test_nmi_emit_cpu) {
        pmu_soft_emit_channel(TEST_NMI_CPU_CHANNEL, 1);
        test_nmi_emitted++;
    }
}

/*
 * An emitter with a thread sampler (period 1 to 7) and a thread counter,
 * a CPU counter and a CPU sampler on another channel that NMIs emit on
 * too, and, on the same CPU, a thread that reads them, polls and yields:
 * the counts are exact, and every period that ended is a sample or a
 * throttled period, while NMIs land in the middle of it all.
 */
TEST_DEFINE(perfmon_nmi, counts_exact_while_the_cpu_switches_reads_polls)
{
    struct perfmon_dev *soft = perfmon_dev_get(true);
    unsigned int c = cpu_id();
    struct test_nmi_hammer hammer;
    uint64_t lost;

    test_nmi_require();
    test_ps_pin(c);
    lost = pmu_soft_nr_lost(c);
    test_nmi_emit_cpu = c;
    __atomic_store_n(&perfmon_nmi_test_hook, test_nmi_emit_hook,
                     __ATOMIC_RELEASE);

    for (uint64_t period = 1; period <= 7; period++) {
        struct perfmon_session *session = test_ps_session(TEST_NMI_RING);
        struct perfmon_session *cpu_session = test_ps_session(TEST_NMI_RING);
        struct perfmon_event sampler, counter, cpu_counter, cpu_sampler;
        struct test_nmi_emitter e = { .seed = 0x1234 + period };
        struct test_ps_drain ds = { 0 }, dc = { 0 };
        uint64_t samples, cpu_samples, value, cpu_total;
        unsigned int id = PMU_SOFT_EV_EMIT + TEST_NMI_CHANNEL;
        unsigned int cpu_id_ = PMU_SOFT_EV_EMIT + TEST_NMI_CPU_CHANNEL;
        unsigned long flags;

        e.thread = test_thread_start("nmi-emitter", 1ULL << c,
                                     test_nmi_emitter_main, &e);
        test_ps_init(&sampler, id, session, period, 2);
        test_ps_init(&cpu_sampler, cpu_id_, cpu_session, period + 1, 0);
        TEST_ASSERT_EQ(perfmon_event_init(&counter, id, PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_init(&cpu_counter, cpu_id_,
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&cpu_counter, c), 0);
        TEST_ASSERT_EQ(perfmon_event_attach_cpu(&cpu_sampler, c), 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&sampler, e.thread), 0);
        TEST_ASSERT_EQ(perfmon_event_attach(&counter, e.thread), 0);
        test_nmi_emitted = 0;
        test_nmi_emit_active = true;
        test_nmi_hammer_start(&hammer, c);
        e.go = true;

        while (!e.done) {
            (void)perfmon_event_read(&counter);
            (void)perfmon_event_read(&cpu_counter);
            flags = cpu_intr_save();
            perfmon_cpu_poll_local(soft);
            cpu_intr_restore(flags);
            thread_yield();
        }

        test_nmi_hammer_stop(&hammer);
        test_nmi_emit_active = false;
        thread_join(e.thread);
        cpu_total = e.emitted_cpu + test_nmi_emitted;

        TEST_ASSERT_EQ(perfmon_event_read(&counter), e.emitted);
        TEST_ASSERT_EQ(perfmon_event_read(&cpu_counter), cpu_total);
        TEST_ASSERT_EQ(perfmon_event_detach(&sampler), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&cpu_sampler), 0);
        TEST_ASSERT_EQ(perfmon_event_get(&counter, &value), 0);
        TEST_ASSERT_EQ(value, e.emitted);
        TEST_ASSERT_EQ(perfmon_event_detach(&counter), 0);
        TEST_ASSERT_EQ(perfmon_event_detach(&cpu_counter), 0);

        /* Every period that ended: a sample (read or lost) or throttled. */
        TEST_ASSERT_EQ(perfmon_event_get_samples(&sampler, &samples), 0);
        TEST_ASSERT_EQ(perfmon_event_get_samples(&cpu_sampler, &cpu_samples),
                       0);
        test_ps_drain(session, c, 0xc0de0000 + id, ~0U,
                      "test_nmi_emitter_main", &ds);
        test_ps_drain(cpu_session, c, 0xc0de0000 + cpu_id_, ~0U, NULL, &dc);
        TEST_ASSERT_EQ(ds.nr_samples + ds.nr_lost, samples);
        TEST_ASSERT_EQ(dc.nr_samples + dc.nr_lost, cpu_samples);
        TEST_ASSERT_EQ(samples + ds.throttled_periods, e.emitted / period);
        TEST_ASSERT_EQ(cpu_samples + dc.throttled_periods,
                       cpu_total / (period + 1));
        TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
        TEST_ASSERT_EQ(perfmon_session_destroy(cpu_session), 0);
    }

    __atomic_store_n(&perfmon_nmi_test_hook, NULL, __ATOMIC_RELEASE);
    TEST_ASSERT_EQ(pmu_soft_nr_lost(c), lost);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}

/* ------------------------------------------------------------------ */
/* A ring shared by maskable and NMI producers                         */
/* ------------------------------------------------------------------ */

#define TEST_NMI_RING_SMALL     2048    /* fills: records are dropped */
#define TEST_NMI_RECORDS        3000
#define TEST_NMI_SEQ_NMI        (1ULL << 63)

/* The NMI side: a record per NMI on the CPU under test while active. */
struct test_nmi_ring {
    struct perfmon_session *session;
    unsigned int cpu;
    volatile bool active;
    uint64_t nr_offered;
};

static struct test_nmi_ring test_nmi_ring;

/* What the consumer saw, per producer (0: maskable, 1: NMI). */
struct test_nmi_stream {
    uint64_t next[2];
    uint64_t received[2];
    uint64_t lost;
};

static size_t
test_nmi_record_size(uint64_t seq)
{
    return TEST_SS_REC + 8 * (seq % 5);
}

/*
 * Offer record seq to this CPU's ring; with self_nmi, an NMI is sent to
 * this CPU between the reservation and the commit (it lands there).
 * Interrupts disabled.
 */
static bool
test_nmi_produce(struct perfmon_session *session, uint64_t seq, bool self_nmi)
{
    size_t size = test_nmi_record_size(seq);
    struct perfmon_record_test *record;
    uint64_t *words;

    record = perfmon_session_reserve(session, size);

    if (record == NULL) {
        return false;
    }

    record->header.type = PERFMON_RECORD_TEST;
    record->header.size = (uint16_t)size;
    record->header.cpu = cpu_id();
    record->seq = seq;

    if (self_nmi) {
        cpu_send_nmi(cpu_id());
    }

    words = (uint64_t *)record;

    for (unsigned int i = 2; i < size / 8; i++) {
        words[i] = test_ss_word(cpu_id(), seq, i);
    }

    perfmon_session_commit(session, record);
    return true;
}

static void
test_nmi_ring_hook(const struct perfmon_intr_ctx *ctx)
{
    struct test_nmi_ring *r = &test_nmi_ring;
    uint64_t seq;

    (void)ctx;

    if (!r->active || cpu_id() != r->cpu) {
        return;
    }

    /*
     * Numbered first: an NMI that lands at the end of a section (its
     * count already 0, its deferred flag set) runs the deferred handling
     * itself, this hook again included, as the produce below ends.
     */
    seq = r->nr_offered++;
    test_nmi_produce(r->session, TEST_NMI_SEQ_NMI | seq, false);
}

/* Read cpu's ring until empty, checking each record whole and in order. */
static void
test_nmi_ring_drain(struct perfmon_session *session, unsigned int cpu,
                    struct test_nmi_stream *st)
{
    static union {
        struct perfmon_record_header header;
        struct perfmon_record_test test;
        struct perfmon_record_lost lost;
        uint64_t words[TEST_SS_WORDS_MAX];
    } buf;
    size_t size;

    while (perfmon_session_read(session, cpu, &buf, sizeof(buf), &size)
           == 0) {
        uint64_t seq;
        unsigned int src;

        TEST_ASSERT_EQ(buf.header.size, size);
        TEST_ASSERT_EQ(buf.header.cpu, cpu);

        if (buf.header.type == PERFMON_RECORD_LOST) {
            st->lost += buf.lost.nr_lost;
            continue;
        }

        TEST_ASSERT_EQ(buf.header.type, PERFMON_RECORD_TEST);
        seq = buf.test.seq;
        src = (unsigned int)(seq >> 63);
        TEST_ASSERT_EQ(size, test_nmi_record_size(seq));
        TEST_ASSERT_GE(seq & ~TEST_NMI_SEQ_NMI, st->next[src]);

        for (unsigned int i = 2; i < size / 8; i++) {
            TEST_ASSERT_EQ(buf.words[i], test_ss_word(cpu, seq, i));
        }

        st->next[src] = (seq & ~TEST_NMI_SEQ_NMI) + 1;
        st->received[src]++;
    }
}

/*
 * A thread produces records with interrupts disabled, sending itself an
 * NMI inside every third reservation, while NMIs (those, and another
 * CPU's) produce into the same ring: every record read is whole, each
 * producer's come in order, and received + lost == produced, exactly.
 */
TEST_DEFINE(perfmon_nmi, ring_keeps_nmi_and_maskable_records)
{
    struct test_nmi_ring *r = &test_nmi_ring;
    struct test_nmi_stream st = { 0 };
    struct perfmon_session_stats stats;
    struct test_nmi_hammer hammer;
    uint64_t produced = 0;

    test_nmi_require();
    test_ps_pin(cpu_id());
    *r = (struct test_nmi_ring){
        .session = test_ss_create(TEST_NMI_RING_SMALL),
        .cpu = cpu_id(),
    };
    __atomic_store_n(&perfmon_nmi_test_hook, test_nmi_ring_hook,
                     __ATOMIC_RELEASE);
    r->active = true;
    test_nmi_hammer_start(&hammer, r->cpu);

    for (uint64_t seq = 0; seq < TEST_NMI_RECORDS; seq++) {
        unsigned long flags = cpu_intr_save();

        test_nmi_produce(r->session, seq, seq % 3 == 0);
        cpu_intr_restore(flags);
        produced++;

        if (seq % 16 == 15) {
            test_nmi_ring_drain(r->session, r->cpu, &st);
        }
    }

    test_nmi_hammer_stop(&hammer);
    r->active = false;
    __atomic_store_n(&perfmon_nmi_test_hook, NULL, __ATOMIC_RELEASE);
    test_nmi_ring_drain(r->session, r->cpu, &st);

    /* Every third reservation took at least its own NMI's record. */
    TEST_ASSERT_GE(r->nr_offered, TEST_NMI_RECORDS / 3);
    TEST_ASSERT_EQ(st.received[0] + st.received[1] > 0, true);
    TEST_ASSERT_EQ(perfmon_session_stats(r->session, r->cpu, &stats), 0);
    TEST_ASSERT_EQ(stats.produced, produced + r->nr_offered);
    TEST_ASSERT_EQ(stats.lost, st.lost);
    TEST_ASSERT_EQ(st.received[0] + st.received[1] + st.lost + stats.dropped,
                   produced + r->nr_offered);
    TEST_ASSERT_EQ(perfmon_session_destroy(r->session), 0);
    thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
}
