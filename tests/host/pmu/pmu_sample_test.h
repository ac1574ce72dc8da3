/*
 * Sampling end to end, for the host tests of a hardware PMU driver: each
 * check goes through perfmon's sampling API (kern/perfmon.h) and the
 * session's rings (kern/perfmon_session.h) with the driver and perfmon
 * compiled unchanged over a register model, and reads every record back.
 * Counts, sample counts and counter values are exact: a missed or a
 * duplicated sample, a lost or a doubled wrap, fails the check.
 *
 * The driver's test binary describes its model (struct pmu_sample_env)
 * and registers the checks once, as a table (pmu_sample_tests_register):
 * each runs as a test of its own, between the binary's begin and end,
 * which clean up what a failed check leaves attached (events and threads
 * come from the binary's pools). A binary may also call a check from a
 * test of its own. Single CPU (host_env), CPU 0.
 */
#ifndef HOST_PMU_SAMPLE_TEST_H
#define HOST_PMU_SAMPLE_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/thread.h>

struct pmu_sample_env {
    /* Retire n kernel-mode occurrences of generic event id. */
    void (*retire)(unsigned int id, uint64_t n);

    /* Whether a PMI is pending; take it (false when none was). */
    bool (*pmi_pending)(void);
    bool (*pmi_take)(void);

    /* Hardware counter counter: raw register value, width in bits. */
    uint64_t (*counter)(unsigned int counter);
    unsigned int (*counter_width)(unsigned int counter);

    /* The counter a counter-reading MSR address reads, or -1. */
    int (*counter_of_msr)(uint32_t msr);

    /*
     * Reads of a counter register in one update by perfmon: 1, or 2 when
     * overflow_consume reads the counter too (AMD top-bit mode). The
     * last one is perfmon's read.
     */
    unsigned int update_counter_reads;

    /* Call hook after each RDMSR (NULL: none). */
    void (*set_rdmsr_hook)(void (*hook)(uint32_t msr));

    /* An initialized event, a fresh thread, from the binary's pools. */
    struct perfmon_event *(*event)(uint64_t id, unsigned int flags);
    struct thread *(*thread)(void);

    /*
     * MSR accesses since reset: of every address, and reads and writes of
     * one. msrs: the PMU's registers, by which a check names the accesses
     * it did not expect.
     */
    unsigned long (*nr_accesses)(void);
    unsigned long (*nr_msr_reads)(uint32_t msr);
    unsigned long (*nr_msr_writes)(uint32_t msr);
    const uint32_t *msrs;
    unsigned int nr_msrs;

    /* What the registered tests run between: the binary's fixture. */
    void (*begin)(void);
    void (*end)(void);

    /*
     * Whether the device samples (an overflow interrupt): the sampling
     * tests are registered, else the test that attach refuses.
     */
    bool can_sample;

    /*
     * The generic events the tests that cover every kind of counter run
     * with, one per kind (Intel: a general and a fixed counter).
     */
    const unsigned int *ids;
    unsigned int nr_ids;

    /*
     * The binary's names of two tests: that a period below the least is
     * refused (NULL: the binary calls pmu_sample_check_least_period from
     * a test of its own), and that attach refuses to sample.
     */
    const char *least_period_test;
    const char *refused_test;
};

/*
 * Register the shared tests for env, which outlives them, once (from a
 * constructor, see host_test_register).
 */
void pmu_sample_tests_register(const struct pmu_sample_env *env);

/*
 * A device that cannot sample (max_period 0): attaching a sampling event
 * to a CPU or a thread is EINVAL and takes nothing (no slot, no session
 * reference).
 */
void pmu_sample_check_refused(const struct pmu_sample_env *env,
                              unsigned int id);

/*
 * A CPU event sampling generic event id with a period: one sample per
 * period, each from its PMI with the PMI's context, the counter reloaded
 * to 2^width - period plus the skid (events between the overflow and the
 * PMI), exact count.
 */
void pmu_sample_check_cpu_event(const struct pmu_sample_env *env,
                                unsigned int id);

/*
 * A thread event: samples only while its thread runs, the period's rest
 * kept across a switch, an overflow pending at a switch sampled there
 * (at the switch, not again by its PMI), every sample naming the thread.
 */
void pmu_sample_check_thread_event(const struct pmu_sample_env *env,
                                   unsigned int id);

/*
 * Two threads sampling generic event id, with different periods, share
 * one slot, hence one counter. A switch from one to the other passes the
 * counter on running: exactly one read of it (the samples due, the rest
 * of the period kept) and one write (the preset to 2^width minus what is
 * left of the next thread's period), and no other MSR access. The
 * thread back resumes its period where it left it, whose end takes one
 * sample, the thread's, with exact counts.
 */
void pmu_sample_check_switch_samplers(const struct pmu_sample_env *env,
                                      unsigned int id);

/*
 * The same handoff when the counter wraps around it: before the switch's
 * read with its PMI still to come (the wrap is the previous thread's
 * period ending: its sample is taken at the switch), and between the
 * read and the preset (the events in that window count for no one). The
 * switch still makes one read and one write; the PMI the wrap requested
 * reports nothing, counts stay exact, each period then ends where it
 * should. Also when the next thread's sampler took its last sample (no
 * more samples, refresh): its counter is preset all the same, and a wrap
 * of it is counted, not sampled.
 */
void pmu_sample_check_switch_samplers_wraps(const struct pmu_sample_env *env,
                                            unsigned int id);

/*
 * The same handoff from a thread whose period is longer than the device
 * presets (max_period), its counter's longest preset wrapping just before
 * the switch's read: the read still sees the wrap (max_period + 2 events
 * counted, no sample), the PMI it requested reports nothing.
 */
void pmu_sample_check_switch_longest_preset(const struct pmu_sample_env *env,
                                            unsigned int id);

/*
 * Three sampling events (ids[0..2], distinct counters) overflowing before
 * one PMI: one sample each, with that PMI's context and its own period.
 */
void pmu_sample_check_several_in_one_pmi(const struct pmu_sample_env *env,
                                         const unsigned int ids[3]);

/*
 * A period beyond the device's max_period: the overflows on the way take
 * no sample, the period's end takes exactly one.
 */
void pmu_sample_check_long_period(const struct pmu_sample_env *env,
                                  unsigned int id);

/*
 * Refresh and set_period: n samples then none, a refresh of a stopped
 * event starting a new period, a new period from the end of the current.
 */
void pmu_sample_check_refresh_and_period(const struct pmu_sample_env *env,
                                         unsigned int id);

/*
 * The preset contract: the counter overflows between perfmon's read and
 * the preset (at attach, and at a refresh of a stopped event); that
 * overflow is discarded, not reported later as a wrap of the preset
 * value (2^width too many, and a sample at once).
 */
void pmu_sample_check_overflow_before_preset(const struct pmu_sample_env *env,
                                             unsigned int id);

/*
 * A hardware counter is never preset to fewer than 2 events: a sampling
 * event of generic event id with a period of 1 is EINVAL at attach
 * (taking nothing), 2 attaches, and an attached event's period cannot
 * become 1 (refused, never silently raised).
 */
void pmu_sample_check_least_period(const struct pmu_sample_env *env,
                                   unsigned int id);
void pmu_sample_check_freq_least_period(const struct pmu_sample_env *env,
                                        unsigned int id);

/*
 * A fixture's end, shared by the vendors' binaries: the loaded threads of
 * threads switched out, then the attached events of events detached, so
 * that a failed test leaves nothing to the next.
 */
void pmu_sample_release(struct thread *threads, unsigned int nr_threads,
                        struct perfmon_event *events, unsigned int nr_events);

#endif /* HOST_PMU_SAMPLE_TEST_H */
