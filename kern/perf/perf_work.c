/*
 * The perf commands' built-in workloads (kern/perf/perf_work.h).
 *
 * Each workload thread waits for go, works, and counts itself out of
 * nr_running as its last step; the caller joins it afterwards. The
 * calltree functions are kept out of line and each does its own units
 * (perf_work_tree_unit is inlined into it), so that a sample's
 * instruction pointer and its call chain name them: the tree's shape is
 * what a profile of it must show.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/cpu.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/macros.h>
#include <kern/perf/perf_work.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <kern/thread.h>

/* A unit's busy loop: a few microseconds under KVM or TCG. */
#define PERF_WORK_UNIT_LOOPS    4000U

static void
perf_work_wait_go(struct perf_work *work)
{
    while (!__atomic_load_n(&work->go, __ATOMIC_ACQUIRE)) {
        thread_delay(1);
    }
}

static void
perf_work_finish(struct perf_work *work)
{
    __atomic_sub_fetch(&work->nr_running, 1, __ATOMIC_RELEASE);
}

/* A busy loop that emits one unit on channel 0 per iteration. */
static void
perf_work_spin(void *arg)
{
    struct perf_work *work = arg;

    perf_work_wait_go(work);

    while (!work->stop && cpu_get_tsc() < work->end_tsc) {
        for (unsigned int i = 0; i < 1000; i++) {
            cpu_pause();
        }

        pmu_soft_emit(1);
    }

    perf_work_finish(work);
}

/*
 * One of a pair on the same CPU passing a turn back and forth: each pass
 * is a yield to the other thread, so a context switch each way.
 */
static void
perf_work_pingpong(void *arg)
{
    struct perf_work *work = arg;
    unsigned int self;

    /*
     * After go: a thread may run before thread_create has stored it in
     * threads[]; go's release follows every create.
     */
    perf_work_wait_go(work);
    self = (thread_self() == work->threads[0]) ? 0 : 1;

    for (uint64_t i = 0; i < work->rounds && !work->stop; i++) {
        while (work->turn != self && !work->stop) {
            thread_yield();
        }

        pmu_soft_emit(1);
        __atomic_store_n(&work->turn, 1 - self, __ATOMIC_RELEASE);
    }

    perf_work_finish(work);
}

/* ---- calltree -------------------------------------------------------- */

/*
 * n units of work in the calling function: a busy loop, then one emit
 * unit each. Inlined, so that both a timer sample (in the loop) and an
 * emit sample (at the call of pmu_soft_count) land in the caller.
 */
static inline __attribute__((always_inline)) void
perf_work_tree_unit(unsigned int n)
{
    for (unsigned int u = 0; u < n; u++) {
        unsigned int x = u;

        for (unsigned int i = 0; i < PERF_WORK_UNIT_LOOPS; i++) {
            x = x * 31 + i;
            __asm__ volatile("" : "+r"(x));
        }

        pmu_soft_emit(1);
    }

    /* No tail call: this frame stays on the stack for the walk. */
    barrier();
}

__attribute__((noinline)) static void
perf_work_tree_shared(void)
{
    perf_work_tree_unit(4);
}

__attribute__((noinline)) static void
perf_work_tree_gamma(void)
{
    perf_work_tree_unit(4);
}

__attribute__((noinline)) static void
perf_work_tree_alpha(void)
{
    perf_work_tree_unit(2);
    perf_work_tree_shared();
    barrier();
}

__attribute__((noinline)) static void
perf_work_tree_beta(void)
{
    perf_work_tree_unit(4);
    perf_work_tree_gamma();
    perf_work_tree_shared();
    barrier();
}

/* One round: PERF_WORK_TREE_UNITS units, split as kern/perf/perf_work.h says */
__attribute__((noinline)) static void
perf_work_tree_root(void)
{
    perf_work_tree_unit(2);
    perf_work_tree_alpha();
    perf_work_tree_beta();
    barrier();
}

static void
perf_work_calltree(void *arg)
{
    struct perf_work *work = arg;

    perf_work_wait_go(work);

    for (uint64_t i = 0; i < work->rounds && !work->stop; i++) {
        perf_work_tree_root();
    }

    perf_work_finish(work);
}

/* ---- fanout ---------------------------------------------------------- */

/* One thread of a fanout: node i's children are i * width + 1 on. */
struct perf_work_node {
    struct perf_work *work;
    unsigned int index;
    unsigned int depth;
    struct thread *thread;
};

static void perf_work_fanout(void *arg);
static int perf_work_create(struct perf_work *work, const char *name,
                            void (*fn)(void *arg), uint64_t affinity);

/* Units of work: a short busy loop, then one emit unit each. */
static void
perf_work_fanout_units(const struct perf_work *work, unsigned int n)
{
    for (unsigned int u = 0; u < n && !work->stop; u++) {
        for (unsigned int i = 0; i < 100; i++) {
            cpu_pause();
        }

        pmu_soft_emit(1);
    }
}

static void
perf_work_fanout_node(struct perf_work_node *node)
{
    struct perf_work *work = node->work;
    struct thread_attr attr = { .name = "fanout" };
    unsigned int nr_children = 0;

    perf_work_fanout_units(work, PERF_WORK_FANOUT_UNITS);

    for (unsigned int j = 0; node->depth < work->depth && j < work->width
                             && !work->stop; j++) {
        struct perf_work_node *child = &work->nodes[node->index * work->width
                                                    + j + 1];

        if (thread_create(&child->thread, &attr, perf_work_fanout,
                          child) != 0) {
            /* Counted: the totals the workload promises are off. */
            __atomic_add_fetch(&work->nr_failed, 1, __ATOMIC_RELAXED);
            break;
        }

        nr_children++;
    }

    for (unsigned int j = 0; j < nr_children; j++) {
        thread_join(work->nodes[node->index * work->width + j + 1].thread);
    }
}

static void
perf_work_fanout(void *arg)
{
    perf_work_fanout_node(arg);
}

/* The first thread: waits for go, and is the workload's to join. */
static void
perf_work_fanout_root(void *arg)
{
    struct perf_work *work = arg;

    perf_work_wait_go(work);
    perf_work_fanout_node(&work->nodes[0]);
    perf_work_finish(work);
}

static int
perf_work_fanout_start(struct perf_work *work, uint64_t width,
                       const char *value2)
{
    unsigned long long depth;
    unsigned int nr = 1, level = 1;

    if (value2 == NULL || string_parse_u64(value2, &depth) != 0
        || width > PERF_WORK_FANOUT_MAX_N
        || depth > PERF_WORK_FANOUT_MAX_DEPTH) {
        return EINVAL;
    }

    for (unsigned int d = 0; d < depth; d++) {
        level *= (unsigned int)width;
        nr += level;
    }

    work->nodes = kmem_zalloc(nr * sizeof(work->nodes[0]));

    if (work->nodes == NULL) {
        return ENOMEM;
    }

    for (unsigned int i = 0; i < nr; i++) {
        work->nodes[i].work = work;
        work->nodes[i].index = i;
    }

    /* Depths by level: node i's children are at its depth plus one. */
    for (unsigned int i = 1; i < nr; i++) {
        work->nodes[i].depth = work->nodes[(i - 1) / width].depth + 1;
    }

    work->width = (unsigned int)width;
    work->depth = (unsigned int)depth;
    work->nr_nodes = nr;
    return perf_work_create(work, "fanout", perf_work_fanout_root, 0);
}

/* ---- starting and ending --------------------------------------------- */

static int
perf_work_create(struct perf_work *work, const char *name,
                 void (*fn)(void *arg), uint64_t affinity)
{
    struct thread_attr attr = { .name = name, .affinity = affinity };
    int error;

    error = thread_create(&work->threads[work->nr_threads], &attr, fn, work);

    if (error == 0) {
        work->nr_threads++;
        work->nr_running++;
    }

    return error;
}

int
perf_work_start(struct perf_work *work, const char *kind, const char *value,
                const char *value2)
{
    unsigned long long v;
    int error;

    if (string_parse_u64(value, &v) != 0 || v == 0) {
        return EINVAL;
    }

    if (strcmp(kind, "fanout") == 0) {
        return perf_work_fanout_start(work, v, value2);
    }

    if (value2 != NULL) {
        return EINVAL;
    }

    if (strcmp(kind, "spin") == 0 && v <= PERF_WORK_MAX_MS) {
        work->end_tsc = ~0ULL;
        work->rounds = v;               /* ms until go sets end_tsc */
        work->timed = true;
        return perf_work_create(work, "spin", perf_work_spin, 0);
    }

    if (strcmp(kind, "pingpong") == 0 && v <= PERF_WORK_MAX_ROUNDS) {
        uint64_t last_cpu = 1ULL << (cpu_count() - 1);

        work->rounds = v;
        error = perf_work_create(work, "ping", perf_work_pingpong, last_cpu);

        if (error == 0) {
            error = perf_work_create(work, "pong", perf_work_pingpong,
                                     last_cpu);
        }

        return error;
    }

    if (strcmp(kind, "calltree") == 0 && v <= PERF_WORK_MAX_ROUNDS) {
        work->rounds = v;
        return perf_work_create(work, "calltree", perf_work_calltree, 0);
    }

    return EINVAL;
}

void
perf_work_go(struct perf_work *work)
{
    if (work->timed) {
        uint64_t hz = cpu_get_freq();

        /* ms * hz / 1000 without overflow for any ms up to the max. */
        work->end_tsc = cpu_get_tsc() + work->rounds * (hz / 1000)
                        + work->rounds * (hz % 1000) / 1000;
    }

    __atomic_store_n(&work->go, true, __ATOMIC_RELEASE);
}

bool
perf_work_done(const struct perf_work *work)
{
    return __atomic_load_n(&work->nr_running, __ATOMIC_ACQUIRE) == 0;
}

void
perf_work_stop(struct perf_work *work)
{
    work->stop = true;
    __atomic_store_n(&work->go, true, __ATOMIC_RELEASE);
}

void
perf_work_join(struct perf_work *work)
{
    for (unsigned int i = 0; i < work->nr_threads; i++) {
        thread_join(work->threads[i]);
    }

    /* A fanout's first thread joined its children, they theirs. */
    work->nr_threads = 0;
    kmem_free(work->nodes);
    work->nodes = NULL;
}

void
perf_work_usage(bool fanout)
{
    printf("  workloads: spin MS (1 to %llu), pingpong N and calltree N "
           "(1 to %llu)\n", PERF_WORK_MAX_MS, PERF_WORK_MAX_ROUNDS);

    if (fanout) {
        printf("  fanout N DEPTH: N threads under each down to DEPTH "
               "levels (N 1 to %u, DEPTH 0 to %u),\n  %u emit units each\n",
               PERF_WORK_FANOUT_MAX_N, PERF_WORK_FANOUT_MAX_DEPTH,
               PERF_WORK_FANOUT_UNITS);
    }
}
