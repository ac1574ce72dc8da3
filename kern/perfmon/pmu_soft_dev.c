/*
 * Software PMU, the perfmon device: drives the counter bank of pmu_soft.c
 * and reports its emulated overflow interrupt.
 */
#include <stdint.h>

#include <kern/bitops.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/pmu_soft.h>

static struct perfmon_dev pmu_soft_dev;

/* Counters reserved by alloc (perfmon's device lock serializes them). */
static uint32_t pmu_soft_dev_used;

static int
pmu_soft_dev_translate(uint64_t *configp, uint64_t id, unsigned int flags)
{
    (void)flags;

    if (id >= PMU_SOFT_NR_EVENTS) {
        return EINVAL;
    }

    *configp = id;
    return 0;
}

static int
pmu_soft_dev_alloc(unsigned int *counterp, unsigned int *widthp,
                   uint64_t config)
{
    uint32_t avail = ~pmu_soft_dev_used & ((1U << PMU_SOFT_NR_COUNTERS) - 1);

    (void)config;

    /* Any counter counts any event. */
    if (avail == 0) {
        return EAGAIN;
    }

    *counterp = (unsigned int)__builtin_ctz(avail);
    *widthp = pmu_soft_width();
    pmu_soft_dev_used |= 1U << *counterp;
    return 0;
}

static void
pmu_soft_dev_free(unsigned int counter)
{
    pmu_soft_dev_used &= ~(1U << counter);
}

static uint64_t
pmu_soft_dev_start(unsigned int counter, uint64_t config)
{
    return pmu_soft_counter_start(counter, (unsigned int)config);
}

static void
pmu_soft_dev_stop(unsigned int counter)
{
    pmu_soft_counter_stop(counter);
}

static uint64_t
pmu_soft_dev_read(unsigned int counter)
{
    return pmu_soft_read_local(counter);
}

static uint64_t
pmu_soft_dev_overflow_consume(uint64_t ids)
{
    return pmu_soft_take_overflows((uint32_t)ids);
}

/*
 * The emulated overflow interrupt. In NMI mode the bank knows where each
 * overflow happened (the software PMU is precise), with its call chain,
 * which is also right when the NMI was deferred to the end of a marked
 * section. They are copied first: a count that the report makes (a hook,
 * a tick counter's read) may record a new place for the same counter.
 */
static void
pmu_soft_dev_handle_overflow_intr(const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_intr_ctx where;
    struct perfmon_chain chain;

    FOR_EACH_BIT(id, pmu_soft_intr_take()) {
        if (pmu_soft_dev.nmi) {
            perfmon_sample_chain_copy(&chain, pmu_soft_intr_where(id), &where);
            perfmon_sample_report_overflow(&pmu_soft_dev, id, &where);
        } else {
            perfmon_sample_report_overflow(&pmu_soft_dev, id, ctx);
        }
    }
}

static uint64_t
pmu_soft_dev_preset(unsigned int counter, uint64_t n)
{
    return pmu_soft_counter_preset(counter, n);
}

/*
 * A preset counter wrapped (pmu_soft_count, interrupts disabled, which
 * perfmon_sample_report_overflow asserts): ctx is passed on as it is, so
 * this is a jump.
 */
static void
pmu_soft_dev_report(unsigned int id, const struct perfmon_intr_ctx *ctx)
{
    perfmon_sample_report_overflow(&pmu_soft_dev, id, ctx);
}

static const struct perfmon_dev_ops pmu_soft_dev_ops = {
    .translate = pmu_soft_dev_translate,
    .alloc = pmu_soft_dev_alloc,
    .free = pmu_soft_dev_free,
    .start = pmu_soft_dev_start,
    .stop = pmu_soft_dev_stop,
    .read = pmu_soft_dev_read,
    .overflow_consume = pmu_soft_dev_overflow_consume,
    .handle_overflow_intr = pmu_soft_dev_handle_overflow_intr,
    .preset = pmu_soft_dev_preset,
};

static int
pmu_soft_dev_setup(void)
{
    pmu_soft_dev.name = "pmu_soft";
    pmu_soft_dev.ops = &pmu_soft_dev_ops;
    pmu_soft_dev.overflow_intr = pmu_soft_intr_mode();
    pmu_soft_dev.nmi = pmu_soft_nmi_mode();
    pmu_soft_dev.nr_counters = PMU_SOFT_NR_COUNTERS;
    pmu_soft_dev.min_width = pmu_soft_width();
    pmu_soft_dev.max_rate = pmu_soft_max_rate();
    pmu_soft_dev.sw = true;
    pmu_soft_dev.bank = &pmu_soft_bank;

    /* Presets up to a full wrap; at 64 bits, as far as presets go. */
    pmu_soft_dev.max_period = (pmu_soft_width() < 64)
                              ? 1ULL << pmu_soft_width() : 1ULL << 63;
    pmu_soft_set_report_fn(pmu_soft_dev_report);
    return perfmon_dev_register(&pmu_soft_dev);
}

INIT_OP_DEFINE(pmu_soft_dev_setup,
               INIT_OP_DEP(perfmon_setup, true),
               INIT_OP_DEP(pmu_soft_setup, true));
