/*
 * The perf commands' built-in workloads (perf stat and perf record take
 * them after "--"):
 *
 *   spin MS        one thread busy for MS ms, one emit unit per loop
 *   pingpong N     two threads on the last CPU passing a turn N times
 *   calltree N     one thread running N rounds of a fixed call tree
 *   fanout N DEPTH a thread that emits PERF_WORK_FANOUT_UNITS units,
 *                  then creates N threads doing the same down to DEPTH
 *                  levels below it, each waiting for its children:
 *                  (N^(DEPTH+1) - 1) / (N - 1) threads (DEPTH + 1 for N
 *                  1), all but the first created as the workload runs,
 *                  so that only inherited events count them all
 *
 * calltree gives a profile a known shape: each round does
 * PERF_WORK_TREE_UNITS units of work, each unit a fixed busy loop followed
 * by one emit unit (pmu_soft_emit) in the function that did it, split as
 *
 *   perf_work_tree_root        self  2 units  (10%), children 100%
 *     perf_work_tree_alpha     self  2        (10%), children  30%
 *       perf_work_tree_shared  self  4        (20%)
 *     perf_work_tree_beta      self  4        (20%), children  60%
 *       perf_work_tree_gamma   self  4        (20%)
 *       perf_work_tree_shared  self  4        (20%)
 *
 * so perf_work_tree_shared has 40% self from two callers. Sampled on emit
 * the shares are exact (every unit counts once); sampled on a timer they
 * are the shares of the time spent, close to the same.
 *
 * A caller starts the threads (they wait), attaches its events to them,
 * lets them go, waits until they are done (or stops them), then joins
 * them. Shell thread only.
 */
#ifndef KERN_PERF_WORK_H
#define KERN_PERF_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/thread.h>

#define PERF_WORK_MAX_MS        60000ULL
#define PERF_WORK_MAX_ROUNDS    1000000ULL
#define PERF_WORK_MAX_THREADS   2U
#define PERF_WORK_TREE_UNITS    20U
#define PERF_WORK_FANOUT_UNITS  1000U
#define PERF_WORK_FANOUT_MAX_N  4U
#define PERF_WORK_FANOUT_MAX_DEPTH 4U

/* The words perf's usage texts show for the workloads. */
#define PERF_WORK_USAGE "-- spin MS | -- pingpong N | -- calltree N"

/* perf stat's, with the workload only inherited events count whole. */
#define PERF_WORK_USAGE_FANOUT PERF_WORK_USAGE " | -- fanout N DEPTH"

struct perf_work_node;

struct perf_work {
    volatile bool go;
    volatile bool stop;
    volatile unsigned int turn;         /* pingpong: whose turn, 0 or 1 */
    unsigned int nr_running;            /* workers not yet returned */
    uint64_t end_tsc;                   /* spin */
    uint64_t rounds;                    /* pingpong, calltree; spin: ms */
    bool timed;                         /* spin: end_tsc set at go */
    unsigned int nr_threads;
    struct thread *threads[PERF_WORK_MAX_THREADS];
    unsigned int width;                 /* fanout: children per thread */
    unsigned int depth;                 /* fanout: levels below the first */
    unsigned int nr_nodes;              /* fanout: threads in all */
    unsigned int nr_failed;             /* fanout: creations that failed */
    struct perf_work_node *nodes;       /* fanout: one per thread */
};

/*
 * Start the workload "kind value [value2]" (argv words after "--";
 * value2 NULL when there is none, as every kind but fanout has), its
 * threads waiting for perf_work_go. work must be zeroed. Return 0, or
 * EINVAL for an unknown kind, a value out of range or a value2 the kind
 * does not take (nothing started), or thread_create's error (the threads
 * started are in work: stop and join them). Shell thread.
 */
int perf_work_start(struct perf_work *work, const char *kind,
                    const char *value, const char *value2);

/* Let the threads run (a spin's time starts now). Shell thread. */
void perf_work_go(struct perf_work *work);

/* Whether every thread has finished its work. Any thread context. */
bool perf_work_done(const struct perf_work *work);

/* Ask the threads to end early (and let them go if they wait). */
void perf_work_stop(struct perf_work *work);

/* Wait for the threads to exit (fanout: every one). Shell thread. */
void perf_work_join(struct perf_work *work);

/*
 * Print the workloads' ranges, one line, and with fanout a second one for
 * fanout (perf stat's; perf record does not take it: its samplers count
 * the first threads only). Any thread context.
 */
void perf_work_usage(bool fanout);

#endif /* KERN_PERF_WORK_H */
