/*
 * The session ring, kern/perfmon/perfmon_session.c unchanged, under
 * stress: host threads stand for CPUs, each the producer of its ring,
 * with a signal for the NMI that lands anywhere, inside reservations
 * included (its handler produces as perfmon's NMI does, or defers to the
 * section's end); one consumer thread reads every ring and one more
 * thread reads the statistics. Every record's payload, the order of each
 * ring and each producer, and every LOST count are checked exactly, and
 * in the end produced == read + lost on each CPU. Built twice: with
 * AddressSanitizer (the signals land between any two instructions) and,
 * where the compiler has it, ThreadSanitizer (which runs a signal's
 * handler only at its own points, so the races are what that build is
 * for).
 *
 * Then, on x86-64 Linux without ThreadSanitizer, the statistics taken
 * while the first record, a LOST one, is read: one side single-stepped
 * (the trap flag), the other run whole at each step, so that every
 * interleaving of the two at instruction granularity is tried.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include <kern/perfmon_nmi.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <machine/cpu.h>

#include "host_test.h"
#include "ring_env.h"

#define RING_NR_CPUS        3

/*
 * Each producer offers at least RING_NR_ITERS records and takes at least
 * RING_NR_NMIS signals. Every RING_KILL_EVERY records it sends one to the
 * next CPU's thread, which takes it where it runs, or where it was
 * preempted: anywhere.
 */
#define RING_KILL_EVERY     128
#define RING_NR_ITERS_MAX   (20 * RING_NR_ITERS)
#ifdef __SANITIZE_THREAD__
#define RING_NR_ITERS       20000
#define RING_NR_NMIS        500
#else
#define RING_NR_ITERS       100000
#define RING_NR_NMIS        3000
#endif

/* Who wrote a record: the producer's thread, its NMI, the final flush. */
#define RING_SRC_TASK       0
#define RING_SRC_NMI        1
#define RING_SRC_FLUSH      2
#define RING_NR_SRCS        3

#define RING_SEQ_MASK       ((1ULL << 48) - 1)

/* How the task reserves (the NMI always uses the inline pair). */
#define RING_MODE_CALL      0   /* perfmon_session_reserve alone */
#define RING_MODE_NESTED    1   /* the same in a section of its own */
#define RING_MODE_INLINE    2   /* the inline pair in a section */
#define RING_NR_MODES       3

/* A CPU's producer: its thread writes, its NMI writes its own slots. */
struct ring_cpu {
    pthread_t thread;
    unsigned int cpu;
    uint64_t rng[RING_NR_SRCS];
    uint64_t next_seq[RING_NR_SRCS];    /* records offered */
    uint64_t nr_drops[RING_NR_SRCS];    /* of which not taken */
    uint64_t nr_nmis;                   /* NMIs handled */
    unsigned long nr_taken;             /* signals whose handler ran */
    unsigned long nr_deferred;          /* NMIs deferred */
};

/* What the consumer saw of a CPU's ring. */
struct ring_seen {
    uint64_t last_idx;                  /* produced count of the last */
    uint64_t pending_lost;              /* of the LOST record just read */
    uint64_t last_seq[RING_NR_SRCS];
    bool has_seq[RING_NR_SRCS];
    uint64_t nr_read[RING_NR_SRCS];
    uint64_t lost;
    uint64_t nr_lost_records;
};

static struct perfmon_session *ring_session;
static unsigned int ring_nr_cpus;           /* of ring_session */
static struct ring_cpu ring_cpus[RING_NR_CPUS];
static struct ring_seen ring_seen[RING_NR_CPUS];
static unsigned int ring_nr_done;
static pthread_barrier_t ring_start;
static bool ring_consumer_stop;
static bool ring_stats_stop;

/* NMIs delivered to the thread and not handled yet (its device's). */
static __thread unsigned int ring_nmi_pending;

/* The first failure a thread other than the main one found. */
static pthread_mutex_t ring_fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char ring_fail_msg[256];
static bool ring_failed;

static void __attribute__((format(printf, 1, 2)))
ring_fail(const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&ring_fail_lock);

    if (!ring_failed) {
        va_start(ap, fmt);
        vsnprintf(ring_fail_msg, sizeof(ring_fail_msg), fmt, ap);
        va_end(ap);
        __atomic_store_n(&ring_failed, true, __ATOMIC_RELEASE);
    }

    pthread_mutex_unlock(&ring_fail_lock);
}

static bool
ring_has_failed(void)
{
    return __atomic_load_n(&ring_failed, __ATOMIC_ACQUIRE);
}

static uint64_t
ring_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

/* Mostly small records, some near the ring's size, some above it. */
static size_t
ring_pick_size(uint64_t *rng, size_t ring_size)
{
    uint64_t r = ring_rand(rng);
    unsigned int pick = r % 100;

    r >>= 8;

    if (pick < 60) {
        return 24 + 8 * (r % 8);
    } else if (pick < 90) {
        return 24 + 8 * (r % ((MIN(ring_size, PERFMON_SESSION_RECORD_MAX)
                               - 24) / 8 + 1));
    } else if (pick < 98) {
        return MIN(ring_size, PERFMON_SESSION_RECORD_MAX) - 8 * (r % 4);
    }

    return PERFMON_SESSION_RECORD_MAX;
}

static uint64_t
ring_word(unsigned int cpu, uint64_t idx, unsigned int i)
{
    return (idx * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)i << 56) ^ cpu;
}

/*
 * Offer one record from src on this CPU, interrupts disabled. Its words:
 * the header, the ring's produced count once reserved (its place among
 * the ring's reservations), the source and its sequence number, then a
 * pattern of the CPU, the place and the word's index.
 */
static bool
ring_produce(struct ring_cpu *rc, unsigned int src, size_t size,
             unsigned int mode)
{
    struct perfmon_session_ring *ring;
    struct perfmon_record_header *header;
    uint64_t *words, seq, idx;
    bool section = (mode != RING_MODE_CALL);

    ring = perfmon_session_ring_local(ring_session);
    seq = rc->next_seq[src]++;

    if (section) {
        perfmon_nmi_enter();
    }

    if ((src == RING_SRC_NMI) || (mode == RING_MODE_INLINE)) {
        words = perfmon_session_ring_reserve(ring, size);
    } else {
        words = perfmon_session_reserve(ring_session, size);
    }

    if (words == NULL) {
        rc->nr_drops[src]++;

        if (section) {
            perfmon_nmi_leave();
        }

        return false;
    }

    /* In a section or the NMI: no other reservation since this one. */
    idx = ring->produced;
    header = (struct perfmon_record_header *)words;
    header->type = PERFMON_RECORD_TEST;
    header->size = (uint16_t)size;
    header->cpu = cpu_id();
    words[1] = idx;
    words[2] = ((uint64_t)src << 48) | seq;

    for (unsigned int i = 3; i < size / 8; i++) {
        words[i] = ring_word(cpu_id(), idx, i);
    }

    if ((src == RING_SRC_NMI) || (mode == RING_MODE_INLINE)) {
        perfmon_session_ring_commit(ring, words);
    } else {
        perfmon_session_commit(ring_session, words);
    }

    if (section) {
        perfmon_nmi_leave();
    }

    return true;
}

/* The NMI's overflow handling: a record per NMI delivered so far. */
static void
ring_nmi_handle(void)
{
    struct ring_cpu *rc = &ring_cpus[cpu_id()];
    unsigned int n;

    n = __atomic_exchange_n(&ring_nmi_pending, 0, __ATOMIC_RELAXED);
    rc->nr_nmis += n;

    while (n-- > 0) {
        ring_produce(rc, RING_SRC_NMI,
                     ring_pick_size(&rc->rng[RING_SRC_NMI],
                                    ring_session->ring_size),
                     RING_MODE_INLINE);
    }
}

static void
ring_sigusr1(int sig)
{
    (void)sig;
    __atomic_fetch_add(&ring_nmi_pending, 1, __ATOMIC_RELAXED);
    ring_env_nmi();
    __atomic_fetch_add(&ring_cpus[cpu_id()].nr_taken, 1, __ATOMIC_RELEASE);
}

/* A size perfmon_session_reserve refuses counts nothing. */
static void
ring_check_bad_size(struct ring_cpu *rc, size_t size)
{
    struct perfmon_session_ring *ring;
    uint64_t produced;
    void *record;

    ring = perfmon_session_ring_local(ring_session);
    perfmon_nmi_enter();
    produced = ring->produced;
    record = perfmon_session_reserve(ring_session, size);

    if ((record != NULL) || (ring->produced != produced)) {
        ring_fail("cpu %u: size %zu taken or counted", rc->cpu, size);
    }

    perfmon_nmi_leave();
}

static void *
ring_producer(void *arg)
{
    struct ring_cpu *rc = arg;
    static const size_t bad[] = { 0, 12, PERFMON_SESSION_RECORD_MAX + 8 };
    unsigned long flags;
    uint64_t r;

    ring_env_set_cpu(rc->cpu);

    /* All threads made before one sends to another. */
    pthread_barrier_wait(&ring_start);

    for (unsigned long i = 0;
         (i < RING_NR_ITERS)
         || ((__atomic_load_n(&rc->nr_taken, __ATOMIC_ACQUIRE) < RING_NR_NMIS)
             && (i < RING_NR_ITERS_MAX));
         i++) {
        r = ring_rand(&rc->rng[RING_SRC_TASK]);
        flags = cpu_intr_save();

        if ((r % 1000) == 0) {
            ring_check_bad_size(rc, bad[(r >> 10) % 3]);
        }

        ring_produce(rc, RING_SRC_TASK,
                     ring_pick_size(&rc->rng[RING_SRC_TASK],
                                    ring_session->ring_size),
                     (r >> 20) % RING_NR_MODES);
        cpu_intr_restore(flags);

        /* (ThreadSanitizer runs pending handlers at such calls only.) */
        if ((i % RING_KILL_EVERY) == 0) {
            pthread_kill(ring_cpus[(rc->cpu + 1) % RING_NR_CPUS].thread,
                         SIGUSR1);
            sched_yield();      /* the consumer runs too, on a busy host */
        }
    }

    __atomic_fetch_add(&ring_nr_done, 1, __ATOMIC_RELEASE);

    /* Signals may still come: the thread stays until all are done. */
    while (__atomic_load_n(&ring_nr_done, __ATOMIC_ACQUIRE) < RING_NR_CPUS) {
        sched_yield();
    }

    rc->nr_deferred = ring_env_nr_nmis_deferred();
    return NULL;
}

/* A snapshot of counts that move: nothing wrapped, nothing overcounted. */
static bool
ring_stats_sane(const struct perfmon_session_stats *st)
{
    return (st->read <= st->produced) && (st->lost <= st->produced)
           && (st->dropped <= st->produced)
           && (st->read + st->lost + st->dropped <= st->produced)
           && (st->nr_lost_records <= st->lost) && (st->throttled == 0);
}

static void
ring_stats_check(unsigned int cpu)
{
    struct perfmon_session_stats st;

    if (perfmon_session_stats(ring_session, cpu, &st) != 0) {
        ring_fail("stats of cpu %u refused", cpu);
    } else if (!ring_stats_sane(&st)) {
        ring_fail("cpu %d stats: produced %llu read %llu lost %llu "
                  "dropped %llu lost records %llu", (int)cpu,
                  (unsigned long long)st.produced,
                  (unsigned long long)st.read, (unsigned long long)st.lost,
                  (unsigned long long)st.dropped,
                  (unsigned long long)st.nr_lost_records);
    }
}

static void *
ring_stats_reader(void *arg)
{
    (void)arg;

    while (!__atomic_load_n(&ring_stats_stop, __ATOMIC_ACQUIRE)
           && !ring_has_failed()) {
        for (unsigned int cpu = 0; cpu < ring_nr_cpus; cpu++) {
            ring_stats_check(cpu);
        }

        ring_stats_check(PERFMON_SESSION_ALL_CPUS);
        sched_yield();
    }

    return NULL;
}

/* One record read from cpu's ring, checked whole and in its place. */
static void
ring_check(unsigned int cpu, const uint64_t *words, size_t size)
{
    struct ring_seen *seen = &ring_seen[cpu];
    unsigned int type = (uint16_t)words[0];
    size_t hsize = (uint16_t)(words[0] >> 16);
    unsigned int hcpu = (uint32_t)(words[0] >> 32);
    uint64_t idx, seq;
    unsigned int src;

    if ((hsize != size) || (hcpu != cpu) || (size < 16)) {
        ring_fail("cpu %u: header size %zu cpu %u, read %zu", cpu, hsize,
                  hcpu, size);
        return;
    }

    if (type == PERFMON_RECORD_LOST) {
        if ((size != sizeof(struct perfmon_record_lost)) || (words[1] == 0)
            || (seen->pending_lost != 0)) {
            ring_fail("cpu %u: LOST of %llu, size %zu, after LOST of %llu",
                      cpu, (unsigned long long)words[1], size,
                      (unsigned long long)seen->pending_lost);
            return;
        }

        seen->pending_lost = words[1];
        seen->lost += words[1];
        seen->nr_lost_records++;
        return;
    }

    idx = words[1];
    src = (unsigned int)(words[2] >> 48);
    seq = words[2] & RING_SEQ_MASK;

    if ((type != PERFMON_RECORD_TEST) || (size < 24) || (src >= RING_NR_SRCS)
        || (idx != seen->last_idx + 1 + seen->pending_lost)) {
        ring_fail("cpu %u: type %u size %zu src %u: record %llu after "
                  "%llu and a LOST of %llu", cpu, type, size, src,
                  (unsigned long long)idx,
                  (unsigned long long)seen->last_idx,
                  (unsigned long long)seen->pending_lost);
        return;
    }

    if (seen->has_seq[src] && (seq <= seen->last_seq[src])) {
        ring_fail("cpu %u src %u: seq %llu after %llu", cpu, src,
                  (unsigned long long)seq,
                  (unsigned long long)seen->last_seq[src]);
        return;
    }

    for (unsigned int i = 3; i < size / 8; i++) {
        if (words[i] != ring_word(cpu, idx, i)) {
            ring_fail("cpu %u record %llu: word %u is %#llx", cpu,
                      (unsigned long long)idx, i,
                      (unsigned long long)words[i]);
            return;
        }
    }

    seen->last_idx = idx;
    seen->pending_lost = 0;
    seen->last_seq[src] = seq;
    seen->has_seq[src] = true;
    seen->nr_read[src]++;
}

/* Read every record the rings hold; return how many. */
static unsigned long
ring_drain_once(void)
{
    uint64_t buf[PERFMON_SESSION_RECORD_MAX / 8];
    unsigned long nr = 0;
    size_t size;
    int error;

    for (unsigned int cpu = 0; cpu < ring_nr_cpus; cpu++) {
        for (;;) {
            error = perfmon_session_read(ring_session, cpu, buf,
                                         sizeof(buf), &size);

            if (error == EAGAIN) {
                break;
            } else if (error != 0) {
                ring_fail("cpu %u: read returned %d", cpu, error);
                return nr;
            }

            ring_check(cpu, buf, size);
            nr++;

            if ((nr % 64) == 0) {
                ring_stats_check(cpu);
            }
        }
    }

    return nr;
}

static void *
ring_consumer(void *arg)
{
    (void)arg;

    for (;;) {
        bool stop = __atomic_load_n(&ring_consumer_stop, __ATOMIC_ACQUIRE);

        if (ring_drain_once() == 0) {
            if (stop) {
                break;
            }

            sched_yield();
        }

        if (ring_has_failed()) {
            break;
        }
    }

    return NULL;
}

/*
 * Once the producers stopped: drain the rings, flush the drops not
 * reported yet (a drained ring takes a record, and its LOST record), and
 * check that every record offered was read or counted lost, exactly.
 */
static void
ring_account(void)
{
    unsigned long flags;

    ring_drain_once();

    /*
     * The rings are drained: a record each now fits, and carries the
     * LOST record of any drops not reported yet.
     */
    for (unsigned int cpu = 0; cpu < ring_nr_cpus; cpu++) {
        ring_env_set_cpu(cpu);
        flags = cpu_intr_save();
        HOST_ASSERT(ring_produce(&ring_cpus[cpu], RING_SRC_FLUSH, 24,
                                 RING_MODE_CALL));
        cpu_intr_restore(flags);
    }

    ring_drain_once();

    if (ring_failed) {
        HOST_FAIL("%s", ring_fail_msg);
    }

    for (unsigned int cpu = 0; cpu < ring_nr_cpus; cpu++) {
        struct ring_cpu *rc = &ring_cpus[cpu];
        struct ring_seen *seen = &ring_seen[cpu];
        struct perfmon_session_stats st;
        uint64_t produced = 0, drops = 0, read = 0;

        for (unsigned int src = 0; src < RING_NR_SRCS; src++) {
            HOST_ASSERT_EQ(seen->nr_read[src] + rc->nr_drops[src],
                           rc->next_seq[src]);
            produced += rc->next_seq[src];
            drops += rc->nr_drops[src];
            read += seen->nr_read[src];
        }

        HOST_ASSERT_EQ(rc->next_seq[RING_SRC_NMI], rc->nr_nmis);
        HOST_ASSERT_EQ(seen->pending_lost, 0);
        HOST_ASSERT_EQ(seen->lost, drops);
        HOST_ASSERT_EQ(perfmon_session_stats(ring_session, cpu, &st), 0);
        HOST_ASSERT_EQ(st.produced, produced);
        HOST_ASSERT_EQ(st.read, read);
        HOST_ASSERT_EQ(st.lost, drops);
        HOST_ASSERT_EQ(st.dropped, 0);
        HOST_ASSERT_EQ(st.nr_lost_records, seen->nr_lost_records);
        HOST_ASSERT_EQ(st.produced, st.read + st.lost);
    }
}

static void
ring_stress(size_t ring_size)
{
    struct sigaction sa;
    pthread_t consumer, stats;

    memset(ring_cpus, 0, sizeof(ring_cpus));
    memset(ring_seen, 0, sizeof(ring_seen));
    ring_nr_done = 0;
    ring_failed = false;
    ring_consumer_stop = false;
    ring_stats_stop = false;

    ring_nr_cpus = RING_NR_CPUS;
    ring_env_set_nr_cpus(RING_NR_CPUS);
    ring_env_set_nmi_handler(ring_nmi_handle);
    HOST_ASSERT_EQ(perfmon_session_create(&ring_session, ring_size), 0);
    HOST_ASSERT_EQ(pthread_barrier_init(&ring_start, NULL, RING_NR_CPUS + 1),
                   0);

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = ring_sigusr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    HOST_ASSERT_EQ(sigaction(SIGUSR1, &sa, NULL), 0);

    for (unsigned int cpu = 0; cpu < RING_NR_CPUS; cpu++) {
        ring_cpus[cpu].cpu = cpu;

        for (unsigned int src = 0; src < RING_NR_SRCS; src++) {
            ring_cpus[cpu].rng[src] = 0x9e3779b97f4a7c15ULL * (cpu + 1)
                                      + 0x632be59bd9b4e019ULL * (src + 1)
                                      + ring_size;
        }
    }

    HOST_ASSERT_EQ(pthread_create(&consumer, NULL, ring_consumer, NULL), 0);
    HOST_ASSERT_EQ(pthread_create(&stats, NULL, ring_stats_reader, NULL), 0);

    for (unsigned int cpu = 0; cpu < RING_NR_CPUS; cpu++) {
        HOST_ASSERT_EQ(pthread_create(&ring_cpus[cpu].thread, NULL,
                                      ring_producer, &ring_cpus[cpu]), 0);
    }

    pthread_barrier_wait(&ring_start);

    for (unsigned int cpu = 0; cpu < RING_NR_CPUS; cpu++) {
        pthread_join(ring_cpus[cpu].thread, NULL);
    }

    __atomic_store_n(&ring_consumer_stop, true, __ATOMIC_RELEASE);
    pthread_join(consumer, NULL);
    __atomic_store_n(&ring_stats_stop, true, __ATOMIC_RELEASE);
    pthread_join(stats, NULL);

    if (ring_failed) {
        HOST_FAIL("%s", ring_fail_msg);
    }

    pthread_barrier_destroy(&ring_start);
    ring_account();

    for (unsigned int cpu = 0; cpu < RING_NR_CPUS; cpu++) {
        struct ring_cpu *rc = &ring_cpus[cpu];

        HOST_ASSERT(rc->nr_drops[RING_SRC_TASK] > 0);
        HOST_ASSERT(ring_seen[cpu].nr_read[RING_SRC_TASK] > 0);
        HOST_ASSERT(rc->nr_nmis > 0);
        printf("# cpu %u: %llu records, %llu lost in %llu LOST records; "
               "%llu NMIs, %lu deferred\n", cpu,
               (unsigned long long)rc->next_seq[RING_SRC_TASK],
               (unsigned long long)ring_seen[cpu].lost,
               (unsigned long long)ring_seen[cpu].nr_lost_records,
               (unsigned long long)rc->nr_nmis, rc->nr_deferred);
    }

    sa.sa_handler = SIG_DFL;
    sigaction(SIGUSR1, &sa, NULL);
    HOST_ASSERT_EQ(perfmon_session_destroy(ring_session), 0);
    ring_session = NULL;
}

/* The smallest ring: pads, drops and LOST records all the time. */
HOST_TEST(stress_ring_256)
{
    ring_stress(PERFMON_SESSION_RING_MIN);
}

/* A ring that takes every size, a few at a time. */
HOST_TEST(stress_ring_1024)
{
    ring_stress(1024);
}

#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__)

#define RING_STEP_TF        0x100   /* RFLAGS' trap flag */

static unsigned long ring_step_nr;
static void (*ring_step_action)(void);
static bool ring_step_done;     /* the action ran: stepping ends */

/* Traps from the instruction after this one's popfq on. */
static __attribute__((noinline)) void
ring_step_start(void)
{
    __asm__ volatile("pushfq\n\torq %0, (%%rsp)\n\tpopfq"
                     : : "i" (RING_STEP_TF) : "memory", "cc");
}

/* The trap at its first instruction ends the stepping. */
static __attribute__((noinline)) void
ring_step_stop(void)
{
    __asm__ volatile("" : : : "memory");
}

static void
ring_step_trap(int sig, siginfo_t *info, void *ucv)
{
    ucontext_t *uc = ucv;

    (void)sig;
    (void)info;

    if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP]
        == (uintptr_t)ring_step_stop) {
        uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)RING_STEP_TF;
        return;
    }

    ring_step_nr++;
    ring_step_action();

    /* An action done once needs no more steps. */
    if (ring_step_done) {
        uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)RING_STEP_TF;
    }
}

static void
ring_step_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = ring_step_trap;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    HOST_ASSERT_EQ(sigaction(SIGTRAP, &sa, NULL), 0);
}

/*
 * A session of one CPU whose first record is a LOST one (a record above
 * the ring's size was dropped), then a record.
 */
static void
ring_step_setup(void)
{
    struct perfmon_record_test *record;
    unsigned long flags;

    ring_nr_cpus = 1;
    ring_env_set_nr_cpus(1);
    ring_env_set_cpu(0);
    HOST_ASSERT_EQ(perfmon_session_create(&ring_session,
                                          PERFMON_SESSION_RING_MIN), 0);
    flags = cpu_intr_save();
    HOST_ASSERT(perfmon_session_reserve(ring_session,
                                        PERFMON_SESSION_RECORD_MAX) == NULL);
    record = perfmon_session_reserve(ring_session, sizeof(*record));
    HOST_ASSERT(record != NULL);
    record->header.type = PERFMON_RECORD_TEST;
    record->seq = 1;
    perfmon_session_commit(ring_session, record);
    cpu_intr_restore(flags);
}

static unsigned long ring_step_at;
static int ring_step_error;
static uint64_t ring_step_buf[PERFMON_SESSION_RECORD_MAX / 8];
static struct perfmon_session_stats ring_step_stats;
static bool ring_step_bad;

static void
ring_step_read(void)
{
    size_t size;

    if (ring_step_nr == ring_step_at) {
        ring_step_error = perfmon_session_read(ring_session, 0,
                                               ring_step_buf,
                                               sizeof(ring_step_buf), &size);
        ring_step_done = true;
    }
}

static void
ring_step_snapshot(void)
{
    struct perfmon_session_stats st;

    perfmon_session_stats(ring_session, 0, &st);

    if (!ring_step_bad && !ring_stats_sane(&st)) {
        ring_step_stats = st;
        ring_step_bad = true;
    }
}

static void
ring_step_assert_sane(const struct perfmon_session_stats *st,
                      unsigned long at)
{
    if (!ring_stats_sane(st)) {
        HOST_FAIL("at step %lu: produced %llu read %llu lost %llu dropped "
                  "%llu lost records %llu", at,
                  (unsigned long long)st->produced,
                  (unsigned long long)st->read,
                  (unsigned long long)st->lost,
                  (unsigned long long)st->dropped,
                  (unsigned long long)st->nr_lost_records);
    }
}

/*
 * The statistics single-stepped; at step n, for each n in turn, the
 * consumer reads the LOST record whole. Whatever n, the snapshot holds
 * together (before the fix, read was 2^64 - 1 where the LOST record was
 * read between the loads of nr_read and nr_lost_records).
 */
HOST_TEST(stats_stepped_while_lost_read)
{
    struct perfmon_session_stats st;
    unsigned long at, nr_bad = 0;

    ring_step_install();
    ring_step_action = ring_step_read;

    for (at = 1;; at++) {
        HOST_ASSERT(at < 100000);
        ring_step_setup();
        ring_step_nr = 0;
        ring_step_at = at;
        ring_step_done = false;
        ring_step_start();
        perfmon_session_stats(ring_session, 0, &st);
        ring_step_stop();

        if (!ring_step_done) {
            HOST_ASSERT_EQ(perfmon_session_destroy(ring_session), 0);
            break;
        }

        HOST_ASSERT_EQ(ring_step_error, 0);
        HOST_ASSERT_EQ((uint16_t)ring_step_buf[0], PERFMON_RECORD_LOST);
        HOST_ASSERT_EQ(perfmon_session_destroy(ring_session), 0);
        HOST_ASSERT_EQ(st.produced, 2);

        if (!ring_stats_sane(&st)) {
            printf("# at step %lu: read %llu lost %llu dropped %llu "
                   "lost records %llu\n", at, (unsigned long long)st.read,
                   (unsigned long long)st.lost,
                   (unsigned long long)st.dropped,
                   (unsigned long long)st.nr_lost_records);
            nr_bad++;
        }
    }

    HOST_ASSERT_EQ(nr_bad, 0);

    /* The stats took more steps than a few (the stepping worked). */
    HOST_ASSERT(at > 10);
    printf("# %lu steps\n", at - 1);
}

/*
 * The consumer single-stepped through its read of the LOST record, then
 * of the record: at every step a whole snapshot holds together.
 */
HOST_TEST(read_stepped_under_stats)
{
    struct perfmon_session_stats st;
    size_t size;

    ring_step_install();
    ring_step_action = ring_step_snapshot;
    ring_step_setup();
    ring_step_nr = 0;
    ring_step_bad = false;
    ring_step_done = false;

    for (unsigned int i = 0; i < 2; i++) {
        ring_step_start();
        ring_step_error = perfmon_session_read(ring_session, 0,
                                               ring_step_buf,
                                               sizeof(ring_step_buf), &size);
        ring_step_stop();
        HOST_ASSERT_EQ(ring_step_error, 0);
    }

    if (ring_step_bad) {
        ring_step_assert_sane(&ring_step_stats, 0);
    }

    HOST_ASSERT(ring_step_nr > 20);
    HOST_ASSERT_EQ(perfmon_session_stats(ring_session, 0, &st), 0);
    HOST_ASSERT_EQ(st.produced, 2);
    HOST_ASSERT_EQ(st.read, 1);
    HOST_ASSERT_EQ(st.lost, 1);
    HOST_ASSERT_EQ(st.dropped, 0);
    HOST_ASSERT_EQ(st.nr_lost_records, 1);
    HOST_ASSERT_EQ(perfmon_session_destroy(ring_session), 0);
    printf("# %lu steps\n", ring_step_nr);
}

/*
 * A ring's state before the stepped reservation, made by the task's
 * records (some read), and that reservation's size: the fast path, a
 * drained ring that starts over at the buffer's start, a LOST record in
 * a ring that holds some, a drop, a LOST record that starts over.
 */
struct ring_step_case {
    const char *name;
    size_t before[3];       /* records offered first (0: none) */
    unsigned int nr_read;   /* of which the consumer reads */
    size_t size;
};

static const struct ring_step_case ring_step_cases[] = {
    { "fast", { 24 }, 0, 24 },
    { "restart", { 232 }, 1, 32 },
    { "lost", { 24, PERFMON_SESSION_RECORD_MAX }, 0, 24 },
    { "drop", { 232 }, 0, 32 },
    { "lost restart", { 248, PERFMON_SESSION_RECORD_MAX }, 1, 24 },
};

static void
ring_step_nmi(void)
{
    if (ring_step_nr == ring_step_at) {
        __atomic_fetch_add(&ring_nmi_pending, 1, __ATOMIC_RELAXED);
        ring_env_nmi();
        ring_step_done = true;
    }
}

static unsigned long
ring_step_case_run(const struct ring_step_case *c, unsigned int mode,
                   unsigned long at)
{
    struct ring_cpu *rc = &ring_cpus[0];
    unsigned long flags, deferred;
    uint64_t buf[PERFMON_SESSION_RECORD_MAX / 8];
    size_t size;

    memset(ring_cpus, 0, sizeof(ring_cpus));
    memset(ring_seen, 0, sizeof(ring_seen));
    ring_failed = false;
    ring_nr_cpus = 1;
    ring_env_set_nr_cpus(1);
    ring_env_set_cpu(0);
    ring_env_set_nmi_handler(ring_nmi_handle);
    rc->rng[RING_SRC_NMI] = 0x9e3779b97f4a7c15ULL;
    HOST_ASSERT_EQ(perfmon_session_create(&ring_session,
                                          PERFMON_SESSION_RING_MIN), 0);
    flags = cpu_intr_save();

    for (unsigned int i = 0; (i < 3) && (c->before[i] != 0); i++) {
        ring_produce(rc, RING_SRC_TASK, c->before[i], RING_MODE_CALL);
    }

    for (unsigned int i = 0; i < c->nr_read; i++) {
        HOST_ASSERT_EQ(perfmon_session_read(ring_session, 0, buf,
                                            sizeof(buf), &size), 0);
        ring_check(0, buf, size);
    }

    ring_step_nr = 0;
    ring_step_at = at;
    ring_step_done = false;
    deferred = ring_env_nr_nmis_deferred();
    ring_step_start();
    ring_produce(rc, RING_SRC_TASK, c->size, mode);
    ring_step_stop();
    cpu_intr_restore(flags);

    /* The NMI's record is written, at once or by the section's end. */
    HOST_ASSERT_EQ(ring_nmi_pending, 0);
    HOST_ASSERT_EQ(rc->nr_nmis, ring_step_done);
    rc->nr_deferred += ring_env_nr_nmis_deferred() - deferred;
    ring_account();
    HOST_ASSERT_EQ(perfmon_session_destroy(ring_session), 0);
    ring_session = NULL;
    return rc->nr_deferred;
}

/*
 * An NMI at each instruction of a reservation in turn, from the task's
 * call to its commit, in both ways the task reserves, in each case
 * above: every record is whole and in its place, every drop reported.
 */
HOST_TEST(nmi_at_each_step_of_a_reservation)
{
    unsigned long nr_steps = 0, nr_deferred = 0;

    ring_step_install();
    ring_step_action = ring_step_nmi;

    for (unsigned int i = 0; i < ARRAY_SIZE(ring_step_cases); i++) {
        /* (RING_MODE_NESTED only adds a section around RING_MODE_CALL.) */
        for (unsigned int mode = 0; mode < RING_NR_MODES; mode++) {
            unsigned long at;

            if (mode == RING_MODE_NESTED) {
                continue;
            }

            for (at = 1;; at++) {
                HOST_ASSERT(at < 100000);
                nr_deferred += ring_step_case_run(&ring_step_cases[i], mode,
                                                  at);

                if (!ring_step_done) {
                    break;
                }
            }

            nr_steps += at - 1;
        }
    }

    /* Most steps are inside sections: those NMIs were deferred. */
    HOST_ASSERT(nr_deferred > nr_steps / 2);
    printf("# %lu steps, %lu NMIs deferred\n", nr_steps, nr_deferred);
}

#endif /* x86-64 Linux, no ThreadSanitizer */

HOST_TEST_MAIN()
