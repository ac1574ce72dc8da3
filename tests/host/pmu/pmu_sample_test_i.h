/*
 * What the shared sampling checks' files (pmu_sample_test.c,
 * pmu_sample_switch.c) share: the session's samples read back, the
 * events' and counters' helpers, the overflow injection. Not for the
 * vendors' binaries, which see pmu_sample_test.h.
 */
#ifndef HOST_PMU_SAMPLE_TEST_I_H
#define HOST_PMU_SAMPLE_TEST_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>

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

extern struct pmu_sample pmu_sample_buf[PMU_SAMPLE_MAX];
extern unsigned int pmu_sample_nr_samples;

struct perfmon_dev *pmu_sample_dev(void);

/*
 * Start of a check: a new clock tick, so that samples of earlier checks
 * do not count against this tick's throttling budget.
 */
struct perfmon_session *pmu_sample_begin(void);

void pmu_sample_end(struct perfmon_session *session);

/* A sampling event of generic id, kernel mode. */
struct perfmon_event *pmu_sample_event(const struct pmu_sample_env *env,
                                       struct perfmon_session *session,
                                       unsigned int id, uint64_t period,
                                       uint64_t cookie);

uint64_t pmu_sample_read(struct perfmon_event *event);

uint64_t pmu_sample_nr(struct perfmon_event *event);

/* The counter behind an attached event, and perfmon's mask of it. */
unsigned int pmu_sample_event_counter(const struct perfmon_event *event,
                                      uint64_t *maskp);

/* The counter holds 2^width - left in the bits perfmon counts. */
void pmu_sample_assert_left(const struct pmu_sample_env *env,
                            const struct perfmon_event *event, uint64_t left);

/* Take the pending PMI, which came at ip. */
void pmu_sample_deliver(const struct pmu_sample_env *env, uintptr_t ip);

/*
 * Read every record of CPU 0's ring: samples only (no LOST, no THROTTLE),
 * in TSC order, whole and of the expected size.
 */
void pmu_sample_collect(struct perfmon_session *session);

/* Sample k read back is from CPU 0, by cookie and tid, at ip, for period. */
void pmu_sample_assert(unsigned int k, uint64_t cookie, uint32_t tid,
                       uint64_t ip, uint64_t period);

/*
 * The overflow injection of pmu_sample_check_overflow_before_preset: at
 * perfmon's next read of a counter (the last of an update's reads, before
 * it presets), retire enough events of the event to wrap it past its full
 * width.
 */
extern uint64_t pmu_sample_inject_done;

/* Inject at the reads-th counter read from now. */
void pmu_sample_inject_begin(const struct pmu_sample_env *env, unsigned int id,
                             unsigned int reads);

#endif /* HOST_PMU_SAMPLE_TEST_I_H */
