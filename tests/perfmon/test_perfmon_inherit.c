/*
 * perfmon inheritance (PERFMON_EF_INHERIT), tested exactly with the
 * software PMU: an event attached to a thread counts the threads it and
 * its members create after the attach; suite perfmon_inherit.
 *
 * Every emitter paces itself (test_emit_paced), so that the counts are
 * exact with narrow polled counters, and emits in bursts below 2^8, so
 * that a counter wraps at most once between syncs with the overflow
 * interrupt. Members publish what they emit: before each burst (started)
 * and after it (done), so that a read overlapping bursts is bounded
 * exactly by [done before the read, started after it].
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "perfmon_util.h"
#include "test_util.h"

#define TEST_IH_CHANNEL     9           /* the families' emit channel */
#define TEST_IH_BURST_MAX   40
#define TEST_IH_MAX_NODES   64

/* ------------------------------------------------------------------ */
/* A fan-out: each node emits, creates its children, emits, joins them */
/* ------------------------------------------------------------------ */

struct test_ih_fan;

struct test_ih_node {
    struct test_ih_fan *fan;
    unsigned int index;
    unsigned int depth;
    uint64_t seed;
    uint32_t tid;
    volatile uint64_t emitted;
    struct thread *thread;
};

struct test_ih_fan {
    unsigned int width;         /* children per node */
    unsigned int depth;         /* levels below the root */
    unsigned int nr_nodes;
    uint64_t units;             /* per node, half before its children */
    bool migrate;               /* nodes hop over the CPUs */
    volatile bool go;
    volatile bool release;      /* root: may return */
    volatile bool joined;       /* root: every other node exited */
    unsigned int hold;          /* a node (not 0) that waits for held_go */
    volatile bool held_go;
    volatile uint64_t started;  /* every node's, before each burst */
    volatile uint64_t done;     /* and after it */
    unsigned int nr_create_errors;
    struct test_ih_node nodes[TEST_IH_MAX_NODES];
};

/* Emit n units in bursts, published around each, hopping when asked. */
static void
test_ih_emit(struct test_ih_fan *fan, struct test_ih_node *node, uint64_t n)
{
    unsigned int hop = cpu_id();

    for (unsigned int i = 1; n > 0; i++) {
        uint64_t burst = 1 + test_rand(&node->seed) % TEST_IH_BURST_MAX;

        burst = MIN(burst, n);
        __atomic_add_fetch(&fan->started, burst, __ATOMIC_SEQ_CST);
        burst = test_emit_paced(TEST_IH_CHANNEL, burst);
        WRITE_ONCE(node->emitted, node->emitted + burst);
        __atomic_add_fetch(&fan->done, burst, __ATOMIC_SEQ_CST);
        n -= burst;

        if (i % 4 == 0) {
            thread_yield();
        }

        if (fan->migrate && i % 3 == 0 && cpu_count() > 1) {
            hop = (hop + 1) % cpu_count();
            thread_set_affinity(thread_self(), 1ULL << hop);
        }
    }
}

static void test_ih_node_main(void *arg);

static void
test_ih_node_main(void *arg)
{
    struct test_ih_node *node = arg;
    struct test_ih_fan *fan = node->fan;
    unsigned int nr_children = 0;
    struct test_ih_node *children[TEST_IH_MAX_NODES];

    node->tid = thread_id(thread_self());

    while (!__atomic_load_n(&fan->go, __ATOMIC_ACQUIRE)
           || (fan->hold != 0 && node->index == fan->hold
               && !__atomic_load_n(&fan->held_go, __ATOMIC_ACQUIRE))) {
        thread_delay(1);
    }

    test_ih_emit(fan, node, fan->units / 2);

    if (node->depth < fan->depth) {
        for (unsigned int j = 0; j < fan->width; j++) {
            unsigned int c = node->index * fan->width + j + 1;
            struct test_ih_node *child = &fan->nodes[c];
            struct thread_attr attr = { .name = "ih-node" };

            child->fan = fan;
            child->index = c;
            child->depth = node->depth + 1;
            child->seed = 1000 + c;

            if (thread_create(&child->thread, &attr, test_ih_node_main,
                              child) != 0) {
                __atomic_add_fetch(&fan->nr_create_errors, 1,
                                   __ATOMIC_RELAXED);
                continue;
            }

            children[nr_children++] = child;
        }
    }

    test_ih_emit(fan, node, fan->units - fan->units / 2);

    for (unsigned int j = 0; j < nr_children; j++) {
        thread_join(children[j]->thread);
    }

    /* The root stays until told, so that it can be read alive. */
    if (node->index == 0) {
        __atomic_store_n(&fan->joined, true, __ATOMIC_RELEASE);

        while (!__atomic_load_n(&fan->release, __ATOMIC_ACQUIRE)) {
            thread_delay(1);
        }
    }
}

static unsigned int
test_ih_fan_size(unsigned int width, unsigned int depth)
{
    unsigned int nr = 1, level = 1;

    for (unsigned int d = 0; d < depth; d++) {
        level *= width;
        nr += level;
    }

    return nr;
}

/* Start a fan's root, waiting for go. */
static void
test_ih_fan_start(struct test_ih_fan *fan, unsigned int width,
                  unsigned int depth, uint64_t units)
{
    fan->width = width;
    fan->depth = depth;
    fan->nr_nodes = test_ih_fan_size(width, depth);
    TEST_ASSERT_LE(fan->nr_nodes, TEST_IH_MAX_NODES);
    fan->units = units;
    fan->nodes[0].fan = fan;
    fan->nodes[0].seed = 999;
    fan->nodes[0].thread = test_thread_start("ih-root", 0, test_ih_node_main,
                                             &fan->nodes[0]);
}

static uint64_t
test_ih_fan_emitted(const struct test_ih_fan *fan)
{
    uint64_t total = 0;

    for (unsigned int i = 0; i < fan->nr_nodes; i++) {
        total += fan->nodes[i].emitted;
    }

    return total;
}

/* Wait until every node but the root has exited (the root waits). */
static void
test_ih_fan_wait(struct test_ih_fan *fan)
{
    while (!__atomic_load_n(&fan->joined, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    TEST_ASSERT_EQ(fan->done, fan->units * fan->nr_nodes);
}

static void
test_ih_fan_end(struct test_ih_fan *fan)
{
    __atomic_store_n(&fan->release, true, __ATOMIC_RELEASE);
    thread_join(fan->nodes[0].thread);
}

static void
test_ih_init(struct perfmon_event *event, unsigned int channel)
{
    TEST_ASSERT_EQ(perfmon_event_init(event, PMU_SOFT_EV_EMIT + channel,
                                      PERFMON_EF_SW | PERFMON_EF_INHERIT), 0);
}

/* A member's tid in the fan, or the fan's size. */
static unsigned int
test_ih_fan_find(const struct test_ih_fan *fan, uint32_t tid)
{
    for (unsigned int i = 0; i < fan->nr_nodes; i++) {
        if (fan->nodes[i].tid == tid) {
            return i;
        }
    }

    return fan->nr_nodes;
}

/*
 * Check the breakdown: one entry per node, each its node's units, the
 * root first; they add up to total.
 */
static void
test_ih_check_members(struct perfmon_event *event,
                      const struct test_ih_fan *fan, uint64_t total)
{
    static struct perfmon_member_value values[TEST_IH_MAX_NODES];
    bool seen[TEST_IH_MAX_NODES] = { false };
    unsigned int nr = 0;
    uint64_t sum = 0;

    TEST_ASSERT_EQ(perfmon_event_read_members(event, values,
                                              TEST_IH_MAX_NODES, &nr), 0);
    TEST_ASSERT_EQ(nr, fan->nr_nodes);
    TEST_ASSERT_EQ(values[0].tid, fan->nodes[0].tid);
    TEST_ASSERT(!values[0].exited);

    for (unsigned int k = 0; k < nr; k++) {
        unsigned int i = test_ih_fan_find(fan, values[k].tid);

        TEST_ASSERT_LT(i, fan->nr_nodes);
        TEST_ASSERT(!seen[i]);
        seen[i] = true;
        TEST_ASSERT_EQ(values[k].count, fan->nodes[i].emitted);
        TEST_ASSERT_EQ(values[k].exited, i != 0);
        TEST_ASSERT_LE(values[k].time_running, values[k].time_enabled);
        sum += values[k].count;
    }

    TEST_ASSERT_EQ(sum, total);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

/*
 * A fan-out of depth 3 created after the attach: the total is every
 * node's units, each member's own count its node's; what the root emits
 * before the attach and the threads created before it are not counted;
 * detach gives every record and reference back.
 */
TEST_DEFINE(perfmon_inherit, fanout_depth3_counts_every_member_exactly)
{
    static struct test_ih_fan fan;
    struct perfmon_event event;
    struct perfmon_value value;
    unsigned int records = perfmon_family_nr_records_alive();
    unsigned int threads = thread_nr_alive();
    unsigned int slots = perfmon_dev_nr_used_slots(test_pm_soft_dev());
    uint64_t total;

    fan = (struct test_ih_fan){ .go = false };
    test_ih_init(&event, TEST_IH_CHANNEL);
    test_ih_fan_start(&fan, 2, 3, 300);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, fan.nodes[0].thread), 0);
    test_detach_on_failure(&event);
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records + 1);

    __atomic_store_n(&fan.go, true, __ATOMIC_RELEASE);
    test_ih_fan_wait(&fan);
    total = test_ih_fan_emitted(&fan);
    TEST_ASSERT_EQ(fan.nr_create_errors, 0);
    TEST_ASSERT_EQ(total, 15 * 300);
    TEST_ASSERT_EQ(perfmon_event_read(&event), total);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &value), 0);
    TEST_ASSERT_EQ(value.count, total);
    TEST_ASSERT_LE(value.time_running, value.time_enabled);
    TEST_ASSERT_NE(value.time_enabled, 0);
    test_ih_check_members(&event, &fan, total);
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records + 15);

    /* Not a member's: outside the family. */
    pmu_soft_emit_channel(TEST_IH_CHANNEL, 7);
    TEST_ASSERT_EQ(perfmon_event_read(&event), total);

    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), total);
    TEST_ASSERT_EQ(perfmon_event_read_value(&event, &value), 0);
    TEST_ASSERT_EQ(value.count, total);
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records);
    TEST_ASSERT(perfmon_td_unused(thread_perfmon_td(fan.nodes[0].thread)));
    test_ih_fan_end(&fan);
    TEST_ASSERT_EQ(thread_nr_alive(), threads);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_soft_dev()), slots);
}

/*
 * Wider and migrating, with a thread outside the family emitting on the
 * same channel on every CPU meanwhile (preempting members, sharing their
 * counters' slot): the family counts exactly its own units.
 */
static volatile bool test_ih_outsider_go;
static volatile bool test_ih_outsider_stop;

static void
test_ih_outsider_main(void *arg)
{
    uint64_t seed = (uintptr_t)arg, *emitted = arg;
    unsigned int hop = 0;

    while (!__atomic_load_n(&test_ih_outsider_go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    while (!READ_ONCE(test_ih_outsider_stop)) {
        *emitted += test_emit_paced(TEST_IH_CHANNEL,
                                    1 + test_rand(&seed) % 30);
        thread_yield();
        hop = (hop + 1) % cpu_count();
        thread_set_affinity(thread_self(), 1ULL << hop);
    }
}

TEST_DEFINE(perfmon_inherit, migrating_members_among_outsiders_exact)
{
    static struct test_ih_fan fan;
    struct perfmon_event event, all;
    uint64_t outside = 0, total;
    struct thread *outsider;

    fan = (struct test_ih_fan){ .migrate = true };
    test_ih_outsider_stop = false;
    test_ih_outsider_go = false;
    test_ih_init(&event, TEST_IH_CHANNEL);
    test_pm_init(&all, PMU_SOFT_EV_EMIT + TEST_IH_CHANNEL);
    test_ih_fan_start(&fan, 3, 2, 200);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, fan.nodes[0].thread), 0);
    test_detach_on_failure(&event);
    outsider = test_thread_start("ih-outsider", 0, test_ih_outsider_main,
                                 &outside);
    TEST_ASSERT_EQ(perfmon_event_attach(&all, outsider), 0);
    test_detach_on_failure(&all);

    __atomic_store_n(&test_ih_outsider_go, true, __ATOMIC_RELEASE);
    __atomic_store_n(&fan.go, true, __ATOMIC_RELEASE);
    test_ih_fan_wait(&fan);
    total = test_ih_fan_emitted(&fan);
    TEST_ASSERT_EQ(total, 13 * 200);
    TEST_ASSERT_EQ(perfmon_event_read(&event), total);
    test_ih_check_members(&event, &fan, total);

    WRITE_ONCE(test_ih_outsider_stop, true);
    thread_join(outsider);
    TEST_ASSERT_NE(outside, 0);
    TEST_ASSERT_EQ(perfmon_event_read(&all), outside);
    TEST_ASSERT_EQ(perfmon_event_read(&event), total);
    TEST_ASSERT_EQ(perfmon_event_detach(&all), 0);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), total);
    test_ih_fan_end(&fan);
}

/*
 * Members exit at random points while another thread reads the family:
 * every read is within [units done before it, units started after it];
 * the final total is exact.
 */
TEST_DEFINE(perfmon_inherit, reads_during_exits_are_bracketed)
{
    static struct test_ih_fan fan;
    struct perfmon_event event;
    unsigned int nr_reads = 0;

    fan = (struct test_ih_fan){ .migrate = true };
    test_ih_init(&event, TEST_IH_CHANNEL);
    test_ih_fan_start(&fan, 2, 4, 120);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, fan.nodes[0].thread), 0);
    test_detach_on_failure(&event);
    __atomic_store_n(&fan.go, true, __ATOMIC_RELEASE);

    while (READ_ONCE(fan.done) < fan.units * fan.nr_nodes) {
        uint64_t before = __atomic_load_n(&fan.done, __ATOMIC_SEQ_CST);
        uint64_t value = perfmon_event_read(&event);
        uint64_t after = __atomic_load_n(&fan.started, __ATOMIC_SEQ_CST);

        TEST_ASSERT_GE(value, before);
        TEST_ASSERT_LE(value, after);
        nr_reads++;

        if (nr_reads % 8 == 0) {
            thread_yield();
        }
    }

    TEST_ASSERT_EQ(fan.nr_create_errors, 0);
    test_ih_fan_wait(&fan);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 31 * 120);
    test_ih_check_members(&event, &fan, 31 * 120);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 31 * 120);
    test_ih_fan_end(&fan);
    test_diag("%u reads during the exits", nr_reads);
}

/*
 * An inherited group: every member counts both events; a member emits
 * the two channels at one instant, so each read of the group finds them
 * equal, and both totals exact.
 */
struct test_ih_pair {
    volatile bool go;
    volatile bool stop;
    unsigned int depth;
    volatile uint64_t emitted;
};

static void
test_ih_pair_main(void *arg)
{
    struct test_ih_pair *pair = arg;
    struct thread *child = NULL;
    struct thread_attr attr = { .name = "ih-pair" };
    unsigned int depth;

    while (!__atomic_load_n(&pair->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    depth = __atomic_add_fetch(&pair->depth, 1, __ATOMIC_RELAXED);

    if (depth < 6 && thread_create(&child, &attr, test_ih_pair_main,
                                   pair) != 0) {
        child = NULL;
    }

    for (unsigned int i = 0; i < 40; i++) {
        uint64_t n = test_emit_paced_pair(TEST_IH_CHANNEL, 1 + i % 9);

        __atomic_add_fetch(&pair->emitted, n, __ATOMIC_SEQ_CST);
        thread_yield();
    }

    if (child != NULL) {
        thread_join(child);
    }
}

TEST_DEFINE(perfmon_inherit, group_members_read_equal_at_one_instant)
{
    struct perfmon_event a, b;
    struct perfmon_group group;
    struct perfmon_group_value value;
    struct test_ih_pair pair = { .go = false };
    struct thread *root;

    test_ih_init(&a, TEST_IH_CHANNEL);
    test_ih_init(&b, TEST_IH_CHANNEL + 1);
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &a), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &b), 0);
    root = test_thread_start("ih-pair", 0, test_ih_pair_main, &pair);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, root), 0);
    test_group_detach_on_failure(&group);
    __atomic_store_n(&pair.go, true, __ATOMIC_RELEASE);

    while (READ_ONCE(pair.emitted) < 6 * 40) {
        TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
        TEST_ASSERT_EQ(value.nr_events, 2);
        TEST_ASSERT_EQ(value.counts[0], value.counts[1]);
        thread_yield();
    }

    thread_join(root);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], value.counts[1]);
    TEST_ASSERT_EQ(value.counts[0], pair.emitted);
    TEST_ASSERT_EQ(perfmon_event_read(&a), value.counts[0]);
    TEST_ASSERT_EQ(perfmon_event_read(&b), value.counts[1]);

    /* Each event's breakdown is its own: the chain's six threads. */
    {
        struct perfmon_member_value va[8], vb[8];
        unsigned int nr_a = 0, nr_b = 0;
        uint64_t sum = 0;

        TEST_ASSERT_EQ(perfmon_event_read_members(&a, va, 8, &nr_a), 0);
        TEST_ASSERT_EQ(perfmon_event_read_members(&b, vb, 8, &nr_b), 0);
        TEST_ASSERT_EQ(nr_a, 6);
        TEST_ASSERT_EQ(nr_b, 6);

        for (unsigned int k = 0; k < nr_b; k++) {
            TEST_ASSERT_EQ(va[k].tid, vb[k].tid);
            TEST_ASSERT_EQ(va[k].count, vb[k].count);
            sum += vb[k].count;
        }

        TEST_ASSERT_EQ(sum, value.counts[1]);
    }

    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.counts[0], value.counts[1]);
    TEST_ASSERT_EQ(perfmon_event_read(&a), value.counts[0]);
}

/*
 * A thread in two families: its own inherited event's and its creator's.
 * The creator's counts the whole fan, the member's its own subtree, each
 * exactly.
 */
TEST_DEFINE(perfmon_inherit, thread_in_two_families_counts_in_each)
{
    static struct test_ih_fan fan;
    struct perfmon_event outer, inner;
    uint64_t subtree = 0;

    fan = (struct test_ih_fan){ .hold = 1 };
    test_ih_init(&outer, TEST_IH_CHANNEL);
    test_ih_init(&inner, TEST_IH_CHANNEL);
    test_ih_fan_start(&fan, 2, 3, 100);
    TEST_ASSERT_EQ(perfmon_event_attach(&outer, fan.nodes[0].thread), 0);
    test_detach_on_failure(&outer);

    /* The root's first child, once created (it holds before emitting). */
    __atomic_store_n(&fan.go, true, __ATOMIC_RELEASE);

    while (__atomic_load_n(&fan.nodes[1].thread, __ATOMIC_ACQUIRE) == NULL) {
        thread_delay(1);
    }

    /* Node 1 roots a family of its own: it and its subtree, 3 4 7-10. */
    TEST_ASSERT_EQ(perfmon_event_attach(&inner, fan.nodes[1].thread), 0);
    test_detach_on_failure(&inner);
    __atomic_store_n(&fan.held_go, true, __ATOMIC_RELEASE);
    test_ih_fan_wait(&fan);

    TEST_ASSERT_EQ(perfmon_event_read(&outer), 15 * 100);
    test_ih_check_members(&outer, &fan, 15 * 100);

    {
        static struct perfmon_member_value values[TEST_IH_MAX_NODES];
        unsigned int nr = 0;

        TEST_ASSERT_EQ(perfmon_event_read_members(&inner, values,
                                                  TEST_IH_MAX_NODES, &nr), 0);
        TEST_ASSERT_EQ(nr, 7);
        TEST_ASSERT_EQ(values[0].tid, fan.nodes[1].tid);
        TEST_ASSERT_EQ(values[0].count, fan.nodes[1].emitted);

        for (unsigned int k = 1; k < nr; k++) {
            unsigned int i = test_ih_fan_find(&fan, values[k].tid);

            /* Node 1's descendants: 3, 4, then 7 to 10. */
            TEST_ASSERT(i == 3 || i == 4 || (i >= 7 && i <= 10));
            TEST_ASSERT_EQ(values[k].count, fan.nodes[i].emitted);
        }

        for (unsigned int k = 0; k < nr; k++) {
            subtree += values[k].count;
        }
    }

    TEST_ASSERT_EQ(subtree, 7 * 100);
    TEST_ASSERT_EQ(perfmon_event_read(&inner), subtree);
    TEST_ASSERT_EQ(perfmon_event_detach(&inner), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&inner), subtree);
    TEST_ASSERT_EQ(perfmon_event_read(&outer), 15 * 100);
    TEST_ASSERT_EQ(perfmon_event_detach(&outer), 0);
    TEST_ASSERT_EQ(perfmon_event_read(&outer), 15 * 100);
    test_ih_fan_end(&fan);
}

/*
 * Creation racing detach on another CPU: a creator keeps creating
 * members while the test detaches. When detach returns no member is
 * left counting (every created thread's per-thread state is unused, no
 * record is left), the threads created after it never join, and no
 * reference leaks.
 */
#define TEST_IH_RACE_MAX    96

struct test_ih_race {
    volatile bool go;
    volatile bool stop;
    unsigned int nr_created;
    struct thread *threads[TEST_IH_RACE_MAX];
    volatile uint64_t emitted;
};

static void
test_ih_race_child(void *arg)
{
    struct test_ih_race *race = arg;

    __atomic_add_fetch(&race->emitted, test_emit_paced(TEST_IH_CHANNEL, 3),
                       __ATOMIC_SEQ_CST);
}

static void
test_ih_race_creator(void *arg)
{
    struct test_ih_race *race = arg;
    struct thread_attr attr = { .name = "ih-race" };

    while (!__atomic_load_n(&race->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    while (!READ_ONCE(race->stop) && race->nr_created < TEST_IH_RACE_MAX) {
        struct thread *thread;

        if (thread_create(&thread, &attr, test_ih_race_child, race) == 0) {
            /* Published with release: the test reads the array after. */
            race->threads[race->nr_created] = thread;
            __atomic_store_n(&race->nr_created, race->nr_created + 1,
                             __ATOMIC_RELEASE);
        }
    }
}

TEST_DEFINE(perfmon_inherit, creation_racing_detach_leaves_nothing)
{
    static struct test_ih_race race;
    unsigned int records = perfmon_family_nr_records_alive();
    unsigned int threads = thread_nr_alive();
    unsigned int slots = perfmon_dev_nr_used_slots(test_pm_soft_dev());
    uint64_t seed = 77;

    test_require_cpus(2);

    for (unsigned int round = 0; round < 6; round++) {
        struct perfmon_event event;
        struct thread *creator;
        uint64_t final;
        unsigned int nr;

        race = (struct test_ih_race){ .go = false };
        test_ih_init(&event, TEST_IH_CHANNEL);
        creator = test_thread_start("ih-creator", 1ULL << 1,
                                    test_ih_race_creator, &race);
        TEST_ASSERT_EQ(perfmon_event_attach(&event, creator), 0);
        test_detach_on_failure(&event);
        thread_set_affinity(thread_self(), 1ULL << 0);
        __atomic_store_n(&race.go, true, __ATOMIC_RELEASE);

        /* A while into the creations, different each round. */
        while (__atomic_load_n(&race.nr_created, __ATOMIC_ACQUIRE)
               < 1 + test_rand(&seed) % 24) {
            cpu_pause();
        }

        TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
        nr = __atomic_load_n(&race.nr_created, __ATOMIC_ACQUIRE);

        /* Those created before the detach returned count no more. */
        for (unsigned int i = 0; i < nr; i++) {
            TEST_ASSERT(perfmon_td_unused(thread_perfmon_td(
                            race.threads[i])));
        }

        /*
         * At most the spare of a creation in flight: allocated before the
         * detach, freed once it finds the family detached (checked exact
         * below, once the creator has stopped).
         */
        TEST_ASSERT_LE(perfmon_family_nr_records_alive(), records + 1);
        final = perfmon_event_read(&event);
        TEST_ASSERT_LE(final, __atomic_load_n(&race.emitted,
                                              __ATOMIC_SEQ_CST));
        TEST_ASSERT_EQ(final % 3, 0);

        /* Those created after it never joined. */
        thread_delay(2);
        WRITE_ONCE(race.stop, true);
        thread_join(creator);
        TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records);
        TEST_ASSERT_EQ(perfmon_event_read(&event), final);

        for (unsigned int i = 0; i < race.nr_created; i++) {
            TEST_ASSERT(perfmon_td_unused(thread_perfmon_td(
                            race.threads[i])));
            thread_join(race.threads[i]);
        }

        thread_set_affinity(thread_self(), THREAD_AFFINITY_ALL);
    }

    TEST_ASSERT_EQ(thread_nr_alive(), threads);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_soft_dev()), slots);
}

/*
 * A creation that cannot allocate its records fails with ENOMEM and
 * joins nothing; an attach that cannot allocate its family fails with
 * ENOMEM and takes no slot.
 */
static void
test_ih_noop(void *arg)
{
    (void)arg;
}

struct test_ih_alloc {
    volatile bool go;
    volatile bool done;
    int error_fail;
    int error_ok;
};

static void
test_ih_alloc_main(void *arg)
{
    struct test_ih_alloc *t = arg;
    struct thread_attr attr = { .name = "ih-alloc" };
    struct thread *child;

    while (!__atomic_load_n(&t->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }

    perfmon_family_fail_allocs(1);
    t->error_fail = thread_create(&child, &attr, test_ih_noop, NULL);

    if (t->error_fail == 0) {
        thread_join(child);
    }

    t->error_ok = thread_create(&child, &attr, test_ih_noop, NULL);

    if (t->error_ok == 0) {
        thread_join(child);
    }

    __atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
}

TEST_DEFINE(perfmon_inherit, allocation_failures_fail_cleanly)
{
    unsigned int records = perfmon_family_nr_records_alive();
    unsigned int slots = perfmon_dev_nr_used_slots(test_pm_soft_dev());
    unsigned int threads = thread_nr_alive();
    struct test_ih_alloc t = { .go = false };
    struct perfmon_member_value values[4];
    struct perfmon_event event;
    struct thread *root;
    unsigned int nr;

    test_ih_init(&event, TEST_IH_CHANNEL);
    root = test_thread_start("ih-alloc", 0, test_ih_alloc_main, &t);

    perfmon_family_fail_allocs(1);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, root), ENOMEM);
    perfmon_family_fail_allocs(0);
    TEST_ASSERT(!perfmon_event_attached(&event));
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_soft_dev()), slots);

    TEST_ASSERT_EQ(perfmon_event_attach(&event, root), 0);
    test_detach_on_failure(&event);
    __atomic_store_n(&t.go, true, __ATOMIC_RELEASE);
    thread_join(root);
    TEST_ASSERT_EQ(t.error_fail, ENOMEM);
    TEST_ASSERT_EQ(t.error_ok, 0);

    /* The root and the one child created. */
    TEST_ASSERT_EQ(perfmon_event_read_members(&event, values, 4, &nr), 0);
    TEST_ASSERT_EQ(nr, 2);
    TEST_ASSERT(values[1].exited);
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records);
    TEST_ASSERT_EQ(thread_nr_alive(), threads);
}

/*
 * Bad input: the documented error, and nothing changed (no slot, no
 * record, the event still detached or still counting).
 */
static void
test_ih_wait_stop(void *arg)
{
    volatile bool *stop = arg;

    while (!*stop) {
        thread_delay(1);
    }
}

TEST_DEFINE(perfmon_inherit, bad_input_changes_nothing)
{
    unsigned int records = perfmon_family_nr_records_alive();
    unsigned int slots = perfmon_dev_nr_used_slots(test_pm_soft_dev());
    struct perfmon_event event, plain;
    struct perfmon_member_value values[2];
    struct perfmon_sample_attr attr = { .period = 100 };
    struct perfmon_session *session;
    struct perfmon_group group;
    volatile bool stop = false;
    struct thread *exited, *live;
    unsigned int nr = 0;

    test_ih_init(&event, TEST_IH_CHANNEL);
    test_pm_init(&plain, PMU_SOFT_EV_EMIT + TEST_IH_CHANNEL);

    /* A CPU event cannot inherit; nor can a group on a CPU. */
    TEST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), EINVAL);
    TEST_ASSERT(!perfmon_event_attached(&event));
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &event), 0);
    TEST_ASSERT_EQ(perfmon_group_attach_cpu(&group, 0), EINVAL);

    /* Inherited and not in one group. */
    TEST_ASSERT_EQ(perfmon_group_add(&group, &plain), EINVAL);
    TEST_ASSERT(!perfmon_event_attached(&event));
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_soft_dev()), slots);
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records);

    /* An exited thread. */
    test_ih_init(&event, TEST_IH_CHANNEL);
    exited = test_thread_start("ih-exited", 0, test_ih_noop, NULL);

    while (!thread_exited(exited)) {
        thread_delay(1);
    }

    TEST_ASSERT_EQ(perfmon_event_attach(&event, exited), EINVAL);
    thread_join(exited);

    /* Sampling cannot combine with inheritance. */
    TEST_ASSERT_EQ(perfmon_session_create(&session, 4096), 0);
    attr.session = session;
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, &attr), 0);
    live = test_thread_start("ih-live", 0, test_ih_wait_stop, (void *)&stop);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, live), EINVAL);
    TEST_ASSERT(!perfmon_event_attached(&event));
    TEST_ASSERT_EQ(perfmon_event_set_sampling(&event, NULL), 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_soft_dev()), slots);
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records);

    /* The breakdown of what is no attached inherited event. */
    TEST_ASSERT_EQ(perfmon_event_read_members(&event, values, 2, &nr),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach(&plain, live), 0);
    test_detach_on_failure(&plain);
    TEST_ASSERT_EQ(perfmon_event_read_members(&plain, values, 2, &nr),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_event_detach(&plain), 0);

    /* Attached: no toggling, no reset, no second attach. */
    TEST_ASSERT_EQ(perfmon_event_attach(&event, live), 0);
    test_detach_on_failure(&event);
    pmu_soft_emit_channel(TEST_IH_CHANNEL, 1);
    TEST_ASSERT_EQ(perfmon_event_disable(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_enable(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_reset(&event), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_attach(&event, live), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read_members(&event, NULL, 0, &nr), E2BIG);
    TEST_ASSERT_EQ(nr, 1);
    TEST_ASSERT_EQ(perfmon_event_read_members(&event, NULL, 1, &nr), EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read_members(&event, values, 2, NULL),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_event_read(&event), 0);
    TEST_ASSERT(perfmon_event_attached(&event));
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records + 1);

    /* An inherited group cannot be toggled or reset either. */
    TEST_ASSERT_EQ(perfmon_event_detach(&event), 0);
    TEST_ASSERT_EQ(perfmon_event_read_members(&event, values, 2, &nr),
                   EINVAL);
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);
    TEST_ASSERT_EQ(perfmon_group_add(&group, &event), 0);
    TEST_ASSERT_EQ(perfmon_group_attach(&group, live), 0);
    test_group_detach_on_failure(&group);
    TEST_ASSERT_EQ(perfmon_group_disable(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_enable(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_reset(&group), EINVAL);
    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);

    stop = true;
    thread_join(live);
    TEST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(test_pm_soft_dev()), slots);
    TEST_ASSERT_EQ(perfmon_family_nr_records_alive(), records);
}
