/*
 * Host tests of the AMD PMU driver: sampling support (preset,
 * max_period) and sampling end to end (pmu_sample_test.c), NMIs. The
 * fixture and the PMU configurations are pmu_test_amd.h's;
 * test_pmu_amd.c says which binary has which PMU.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_record.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/syscnt.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <pmu/pmu_amd.h>
#include <pmu/pmu_x86_test.h>
#include <machine/trap.h>

#include "host_env.h"
#include "host_test.h"
#include <pmu/model/pmu_model_amd.h>
#include "pmu_sample_test.h"
#include "pmu_test_amd.h"

/* ------------------------------------------------------------------ */
/* Sampling support: preset and max_period                             */
/* ------------------------------------------------------------------ */

/* 2^46 with an overflow interrupt (both modes), 0 when polled. */
#define PMU_TEST_MAX_PERIOD     (PMU_TEST_HAS_PMI ? (1ULL << 46) : 0)
#define PMU_TEST_CTR_MASK       ((1ULL << 48) - 1)

HOST_TEST(max_period_is_two_to_the_46_with_a_pmi)
{
    pmu_test_begin();
    HOST_ASSERT_EQ(pmu_test_dev()->max_period, PMU_TEST_MAX_PERIOD);
    HOST_ASSERT(pmu_test_dev()->ops->preset != NULL);
    pmu_test_end();
}

static uint64_t
pmu_test_preset(const struct perfmon_event *event, uint64_t n)
{
    unsigned long flags = cpu_intr_save();
    uint64_t value = pmu_test_dev()->ops->preset(pmu_test_counter(event), n);

    cpu_intr_restore(flags);
    return value;
}

/*
 * A preset of n writes 2^48 - n, bit 47 (the top-bit mode's flag) and
 * bit 46 set, up to 2^46; beyond, n is limited to 2^46, and below 2 to 2
 * (never an overflow on the next event).
 */
HOST_TEST(preset_writes_two_to_the_48_minus_n_and_limits_n)
{
    const uint64_t ns[] = { 1, 2, 1000, 1ULL << 31, 1ULL << 40,
                            PMU_TEST_MAX_PERIOD };
    const uint64_t beyond[] = { PMU_TEST_MAX_PERIOD + 1, PMU_TEST_TOP_BIT,
                                1ULL << 48, UINT64_MAX };
    const uint64_t longest = -PMU_TEST_MAX_PERIOD & PMU_TEST_CTR_MASK;
    struct perfmon_event *event;
    unsigned int n;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    n = pmu_test_counter(event);

    for (unsigned int k = 0; k < ARRAY_SIZE(ns); k++) {
        uint64_t value = -MAX(ns[k], 2) & PMU_TEST_CTR_MASK;

        HOST_ASSERT(value & PMU_TEST_TOP_BIT);
        HOST_ASSERT(value & (PMU_TEST_TOP_BIT >> 1));
        HOST_ASSERT_EQ(pmu_test_preset(event, ns[k]), value);
        HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)), value);
    }

    for (unsigned int k = 0; k < ARRAY_SIZE(beyond); k++) {
        HOST_ASSERT_EQ(pmu_test_preset(event, beyond[k]), longest);
        HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)), longest);
    }

    HOST_ASSERT_EQ(pmu_test_preset(event, 0), PMU_TEST_CTR_MASK - 1);
    pmu_test_assert_no_fault();
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/*
 * Counters preset to n overflow after exactly n events (in top-bit mode
 * their flag clears then); several overflowing before the PMI is taken
 * are each reported once by it, and the handler leaves no overflow
 * behind (flag set again, status clear).
 */
HOST_TEST(preset_counters_overflow_after_n_and_report_once_each)
{
    const uint64_t ns[3] = { 10, 20, 30 };
    struct perfmon_event *events[3];
    uint64_t overflows, pmis;

    if (!PMU_TEST_HAS_PMI) {
        return;
    }

    pmu_test_begin();
    events[0] = pmu_test_attach_cpu(PERFMON_EV_INSTRUCTION,
                                    PERFMON_EF_KERN);
    events[1] = pmu_test_attach_cpu(PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    events[2] = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    overflows = perfmon_cpu_nr_overflows(0);
    pmis = pmu_amd_nr_pmis(0);

    for (unsigned int k = 0; k < 3; k++) {
        pmu_test_preset(events[k], ns[k]);
    }

    model_amd_retire(PMU_TEST_INSTRUCTIONS, 9, MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    model_amd_retire(PMU_TEST_INSTRUCTIONS, 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    model_amd_retire(PMU_TEST_CYCLES, 20, MODEL_AMD_RING_KERN);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 30, MODEL_AMD_RING_KERN);

    for (unsigned int k = 0; k < 3; k++) {
        unsigned int n = pmu_test_counter(events[k]);

        if (PMU_TEST_V2) {
            HOST_ASSERT(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS)
                        & (1ULL << n));
        } else {
            HOST_ASSERT(!(model_amd_msr(pmu_test_msr_ctr(n))
                          & PMU_TEST_TOP_BIT));
        }
    }

    pmu_test_deliver_pmi();

    /* The model may have a second PMI pending: it reports nothing. */
    pmu_test_catch_up();
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 3);

    for (unsigned int k = 0; k < 3; k++) {
        unsigned int n = pmu_test_counter(events[k]);

        if (PMU_TEST_V2) {
            HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
        } else {
            HOST_ASSERT(model_amd_msr(pmu_test_msr_ctr(n))
                        & PMU_TEST_TOP_BIT);
        }
    }

    HOST_ASSERT(pmu_amd_nr_pmis(0) - pmis >= 1);

    for (unsigned int k = 0; k < 3; k++) {
        HOST_ASSERT_EQ(perfmon_event_detach(events[k]), 0);
    }

    pmu_test_end();
}

/* ------------------------------------------------------------------ */
/* Sampling end to end (pmu_sample_test.c)                             */
/* ------------------------------------------------------------------ */

static void
pmu_test_sample_retire(unsigned int id, uint64_t n)
{
    model_amd_retire(pmu_test_generic[PMU_TEST_GEN][id], n,
                     MODEL_AMD_RING_KERN);
}

static uint64_t
pmu_test_sample_counter(unsigned int counter)
{
    return model_amd_msr(pmu_test_msr_ctr(counter));
}

/* Every counter is 48 bits, whatever perfmon counts of it. */
static unsigned int
pmu_test_sample_counter_width(unsigned int counter)
{
    (void)counter;
    return 48;
}

static int
pmu_test_sample_counter_of_msr(uint32_t msr)
{
    for (unsigned int n = 0; n < PMU_TEST_NR; n++) {
        if (msr == pmu_test_msr_ctr(n)) {
            return (int)n;
        }
    }

    return -1;
}

static struct perfmon_event *
pmu_test_sample_event(uint64_t id, unsigned int flags)
{
    return pmu_test_event(id, flags);
}

static unsigned long
pmu_test_sample_nr_accesses(void)
{
    return model_amd_nr_all_reads() + model_amd_nr_all_writes();
}

#define PMU_TEST_MSRS_EXT(msr) \
    msr(0), msr(1), msr(2), msr(3), msr(4), msr(5)

/* Every PMU register of the model. */
static const uint32_t pmu_test_msrs[] = {
    MODEL_AMD_MSR_LEGACY_CTL(0), MODEL_AMD_MSR_LEGACY_CTL(1),
    MODEL_AMD_MSR_LEGACY_CTL(2), MODEL_AMD_MSR_LEGACY_CTL(3),
    MODEL_AMD_MSR_LEGACY_CTR(0), MODEL_AMD_MSR_LEGACY_CTR(1),
    MODEL_AMD_MSR_LEGACY_CTR(2), MODEL_AMD_MSR_LEGACY_CTR(3),
    PMU_TEST_MSRS_EXT(MODEL_AMD_MSR_CTL), PMU_TEST_MSRS_EXT(MODEL_AMD_MSR_CTR),
    MODEL_AMD_MSR_GLOBAL_STATUS, MODEL_AMD_MSR_GLOBAL_CTL,
    MODEL_AMD_MSR_GLOBAL_CLR, MODEL_AMD_MSR_GLOBAL_SET,
};

/* The events the tests that cover every kind of counter run with. */
static const unsigned int pmu_test_sample_ids[] = { PERFMON_EV_BRANCH };

/* In top-bit mode overflow_consume reads the counter before perfmon. */
static const struct pmu_sample_env pmu_test_sample_env = {
    .retire = pmu_test_sample_retire,
    .pmi_pending = model_amd_pmi_pending,
    .pmi_take = model_amd_pmi_take,
    .counter = pmu_test_sample_counter,
    .counter_width = pmu_test_sample_counter_width,
    .counter_of_msr = pmu_test_sample_counter_of_msr,
    .update_counter_reads = PMU_TEST_V2 ? 1 : 2,
    .set_rdmsr_hook = model_amd_set_rdmsr_hook,
    .event = pmu_test_sample_event,
    .thread = pmu_test_thread,
    .nr_accesses = pmu_test_sample_nr_accesses,
    .nr_msr_reads = model_amd_nr_reads,
    .nr_msr_writes = model_amd_nr_writes,
    .msrs = pmu_test_msrs,
    .nr_msrs = ARRAY_SIZE(pmu_test_msrs),
    .begin = pmu_test_begin,
    .end = pmu_test_end,
    .can_sample = PMU_TEST_HAS_PMI,
    .ids = pmu_test_sample_ids,
    .nr_ids = ARRAY_SIZE(pmu_test_sample_ids),
    .least_period_test = "sampling_period_below_two_is_einval",
    .refused_test = "sampling_event_attach_is_einval_when_polled",
};

/*
 * The shared sampling tests (pmu_sample_table.c); every counter is a
 * general one, so those that cover every kind of counter run with
 * branches. Polled: no PMI, no sampling; the test is that attach refuses
 * a sampling event.
 */
__attribute__((constructor)) static void
pmu_test_sample_register(void)
{
    pmu_sample_tests_register(&pmu_test_sample_env);
}

/* PMU_TEST_HAS_PMI for the preprocessor, which sees no enum. */
#if PMU_TEST_CONFIG != 5

/*
 * The driver's half of the preset contract: an overflow pending on the
 * counter is never reported after a preset outside the PMI, which is the
 * counter write alone (PerfMonV2: the status bit stays, stale, and the
 * PMI already requested clears it and reports nothing, the counter's top
 * bit being set, while a status read outside the PMI returns nothing and
 * leaves the bit to the PMI; top-bit mode: the
 * flag set again by the write), and a period of 2 preset that way still
 * overflows and interrupts.
 */
HOST_TEST(preset_discards_an_overflow_pending_on_its_counter)
{
    struct perfmon_event *event;
    uint64_t bit, ctl, spurious, overflows;
    unsigned long ctl_writes, clr_writes, flags;
    unsigned int n;

    pmu_test_begin();
    event = pmu_test_attach_cpu(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    n = pmu_test_counter(event);
    bit = 1ULL << n;
    ctl = model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL);
    pmu_test_preset(event, 10);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 12, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());

    ctl_writes = model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CTL);
    clr_writes = model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CLR);
    HOST_ASSERT_EQ(pmu_test_preset(event, 2), PMU_TEST_CTR_MASK - 1);
    HOST_ASSERT_EQ(model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CTL), ctl_writes);
    HOST_ASSERT_EQ(model_amd_nr_writes(MODEL_AMD_MSR_GLOBAL_CLR),
                   clr_writes);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & bit, bit);
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_CTL), ctl);
        HOST_ASSERT(ctl & bit);
    } else {
        HOST_ASSERT(model_amd_msr(pmu_test_msr_ctr(n)) & PMU_TEST_TOP_BIT);
    }

    spurious = pmu_amd_nr_spurious(0);
    overflows = perfmon_cpu_nr_overflows(0);
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0) - spurious, 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);

    /* The same pending overflow met by a status read outside the PMI. */
    pmu_test_preset(event, 10);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 12, MODEL_AMD_RING_KERN);
    pmu_test_preset(event, 2);
    flags = cpu_intr_save();
    HOST_ASSERT_EQ(pmu_test_dev()->ops->overflow_consume(bit), 0);
    cpu_intr_restore(flags);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & bit, bit);
    }

    pmu_test_deliver_pmi();

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS) & bit, 0);
    }

    HOST_ASSERT_EQ(pmu_amd_nr_spurious(0) - spurious, 2);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);

    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    pmu_test_deliver_pmi();
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    pmu_test_end();
}

/* The LVT entry once the PMI was requested: KVM's bug masks it. */
#define PMU_TEST_LVT_REQUESTED  (MODEL_AMD_LVT_NMI                      \
                                 | (pmu_test_config.lvt_masks           \
                                    ? MODEL_AMD_LVT_MASKED : 0))

/* CPU 0's sample records: each is the event's (cookie, period, idle). */
static unsigned int
pmu_test_collect_ips(struct perfmon_session *session, uint64_t cookie,
                     uint64_t period, uint64_t *ips, unsigned int max)
{
    union {
        struct perfmon_record_header header;
        struct perfmon_record_sample sample;
        uint8_t bytes[PERFMON_SESSION_RECORD_MAX];
    } buf;
    unsigned int nr = 0;
    size_t size;
    int error;

    while ((error = perfmon_session_read(session, 0, &buf, sizeof(buf),
                                         &size)) == 0) {
        HOST_ASSERT_EQ(buf.header.type, PERFMON_RECORD_SAMPLE);
        HOST_ASSERT_EQ(size, sizeof(buf.sample));
        HOST_ASSERT_EQ(buf.header.cpu, 0);
        HOST_ASSERT_EQ(buf.sample.cookie, cookie);
        HOST_ASSERT_EQ(buf.sample.period, period);
        HOST_ASSERT_EQ(buf.sample.tid, 0);
        HOST_ASSERT(nr < max);
        ips[nr++] = buf.sample.ip;
    }

    HOST_ASSERT_EQ(error, EAGAIN);
    return nr;
}

/*
 * The PMI as an NMI (the LVT entry in NMI delivery mode, perfmon.pmi=nmi,
 * the default) of a sampling counter, landing while a marked section is
 * open on the CPU (perfmon_nmi_enter, as a read or the context switch):
 * it touches no MSR and no perfmon state. The overflow stays pending
 * (PerfMonV2: the status bit; top-bit mode: bit 47 clear), the counter
 * as it wrapped, the LVT entry as delivery left it, no PMI counted, no
 * sample. The section's end runs the handler: one sample, carrying where
 * the NMI landed, the overflow acknowledged, the counter reloaded to the
 * period's rest (2^48 - (period - skid)), the entry unmasked, no EOI, the
 * count exact. The next overflow, no section open, is its NMI's.
 */
HOST_TEST(nmi_inside_a_section_is_handled_at_its_end)
{
    const uint64_t period = 1000, skid = 3, skid2 = 2, cookie = 0x4e4d49;
    const uintptr_t ip = 0xffffffff80123450, ip2 = 0xffffffff80123460;
    struct perfmon_session_stats stats;
    struct perfmon_session *session;
    struct perfmon_sample_attr attr;
    struct perfmon_event *event;
    uint64_t bit, nr, pmis, overflows, ips[4];
    unsigned long flags, eois, reads, writes;
    unsigned int n;

    HOST_ASSERT(perfmon_nmi_enabled());
    pmu_test_begin();
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), MODEL_AMD_LVT_NMI);

    /* A new tick: earlier tests' samples take none of its budget. */
    host_env_advance(1);
    HOST_ASSERT_EQ(perfmon_session_create(&session, 4096), 0);
    attr = (struct perfmon_sample_attr){
        .session = session, .period = period, .cookie = cookie,
    };
    event = pmu_test_event(PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(perfmon_event_set_sampling(event, &attr), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(event, 0), 0);
    n = pmu_test_counter(event);
    bit = 1ULL << n;
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)),
                   -period & PMU_TEST_CTR_MASK);
    model_amd_retire(MODEL_AMD_EV_BRANCHES, period - 1, MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    pmis = pmu_amd_nr_pmis(0);
    overflows = perfmon_cpu_nr_overflows(0);
    eois = model_amd_nr_eois();

    /* The period ends, and its NMI lands, inside the section. */
    flags = cpu_intr_save();
    perfmon_nmi_enter();
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1 + skid, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), PMU_TEST_LVT_REQUESTED);
    reads = model_amd_nr_all_reads();
    writes = model_amd_nr_all_writes();
    host_env_set_intr_ctx(ip, 0);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);

    HOST_ASSERT_EQ(model_amd_nr_all_reads(), reads);
    HOST_ASSERT_EQ(model_amd_nr_all_writes(), writes);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)), skid);

    if (PMU_TEST_V2) {
        HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), bit);
    }

    HOST_ASSERT_EQ(model_amd_lvt_pmc(), PMU_TEST_LVT_REQUESTED);
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0), pmis);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0), overflows);
    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);
    HOST_ASSERT_EQ(nr, 0);
    HOST_ASSERT_EQ(perfmon_session_stats(session, 0, &stats), 0);
    HOST_ASSERT_EQ(stats.produced, 0);

    /* Its end handles the overflow, once. */
    perfmon_nmi_leave();
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0) - pmis, 1);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 1);
    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);
    HOST_ASSERT_EQ(nr, 1);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)),
                   -(period - skid) & PMU_TEST_CTR_MASK);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
    pmu_test_assert_programmed(n, MODEL_AMD_EV_BRANCHES, PERFMON_EF_KERN);
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), MODEL_AMD_LVT_NMI);
    HOST_ASSERT(!model_amd_pmi_pending());
    cpu_intr_restore(flags);
    HOST_ASSERT_EQ(pmu_test_read(event), period + skid);

    /* The next period's overflow, no section open: its NMI handles it. */
    model_amd_retire(MODEL_AMD_EV_BRANCHES, period - skid - 1,
                     MODEL_AMD_RING_KERN);
    HOST_ASSERT(!model_amd_pmi_pending());
    model_amd_retire(MODEL_AMD_EV_BRANCHES, 1 + skid2, MODEL_AMD_RING_KERN);
    HOST_ASSERT(model_amd_pmi_pending());
    host_env_set_intr_ctx(ip2, 0);
    pmu_test_deliver_pmi();
    host_env_set_intr_ctx(0, 0);
    HOST_ASSERT_EQ(pmu_amd_nr_pmis(0) - pmis, 2);
    HOST_ASSERT_EQ(perfmon_cpu_nr_overflows(0) - overflows, 2);
    HOST_ASSERT_EQ(perfmon_event_get_samples(event, &nr), 0);
    HOST_ASSERT_EQ(nr, 2);
    HOST_ASSERT_EQ(model_amd_msr(pmu_test_msr_ctr(n)),
                   -(period - skid2) & PMU_TEST_CTR_MASK);
    HOST_ASSERT_EQ(model_amd_msr(MODEL_AMD_MSR_GLOBAL_STATUS), 0);
    HOST_ASSERT_EQ(model_amd_lvt_pmc(), MODEL_AMD_LVT_NMI);
    HOST_ASSERT_EQ(model_amd_nr_eois(), eois);
    HOST_ASSERT_EQ(pmu_test_read(event), 2 * period + skid2);

    HOST_ASSERT_EQ(perfmon_event_detach(event), 0);
    HOST_ASSERT_EQ(pmu_test_collect_ips(session, cookie, period, ips,
                                        ARRAY_SIZE(ips)), 2);
    HOST_ASSERT_EQ(ips[0], ip);
    HOST_ASSERT_EQ(ips[1], ip2);
    HOST_ASSERT_EQ(perfmon_session_destroy(session), 0);
    pmu_test_end();
}

#endif /* PMU_TEST_CONFIG */
