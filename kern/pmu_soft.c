/*
 * Software PMU. Each CPU has PMU_SOFT_NR_PMCS counters; a started counter
 * counts one event. For each event, a per-CPU bit mask names the counters
 * that count it, so an event nobody counts costs one load.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/bitops.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/syscnt.h>
#include <machine/cpu.h>

#define PMU_SOFT_WIDTH_MIN 8

struct pmu_soft_cpu {
    uint64_t unread[PMU_SOFT_NR_PMCS];      /* polling: counted since the
                                               last start or read */
    unsigned int events[PMU_SOFT_NR_PMCS];
    uint32_t counting[PMU_SOFT_NR_EVENTS];  /* counters per event */
    uint32_t overflowed;                    /* waiting for the interrupt */
    struct syscnt sc_intrs;
    struct syscnt sc_lost;
};

static struct pmu_soft_cpu pmu_soft_cpu __percpu;
struct pmu_soft_bank pmu_soft_bank __percpu;
static uint64_t pmu_soft_mask = ~0ULL;
static unsigned int pmu_soft_nr_bits = 64;
static bool pmu_soft_intr;
static struct perfmon_dev pmu_soft_dev;

static const char *const pmu_soft_names[PMU_SOFT_EV_EMIT] = {
    [PMU_SOFT_EV_CSWITCH] = "cswitch",
    [PMU_SOFT_EV_MIGRATION] = "migration",
    [PMU_SOFT_EV_TICK] = "tick",
    [PMU_SOFT_EV_XCALL] = "xcall",
};

static const char *const pmu_soft_emit_names[PMU_SOFT_NR_CHANNELS] = {
    "emit", "emit1", "emit2", "emit3", "emit4", "emit5", "emit6", "emit7",
};

const char *
pmu_soft_event_name(unsigned int event)
{
    if (event < PMU_SOFT_EV_EMIT) {
        return pmu_soft_names[event];
    }

    if (event < PMU_SOFT_NR_EVENTS) {
        return pmu_soft_emit_names[event - PMU_SOFT_EV_EMIT];
    }

    return NULL;
}

unsigned int
pmu_soft_width(void)
{
    return pmu_soft_nr_bits;
}

bool
pmu_soft_intr_mode(void)
{
    return pmu_soft_intr;
}

uint64_t
pmu_soft_max_rate(void)
{
    if (pmu_soft_intr || pmu_soft_nr_bits == 64) {
        return UINT64_MAX;
    }

    return 1ULL << (pmu_soft_nr_bits - 2);
}

uint64_t
pmu_soft_nr_lost(unsigned int cpu)
{
    return syscnt_read(&percpu_ptr(pmu_soft_cpu, cpu)->sc_lost);
}

uint64_t
pmu_soft_nr_intrs(unsigned int cpu)
{
    return syscnt_read(&percpu_ptr(pmu_soft_cpu, cpu)->sc_intrs);
}

/* The times a counter at value wraps when n is added (narrow widths). */
static uint64_t
pmu_soft_wraps(uint64_t value, uint64_t n)
{
    return (n >> pmu_soft_nr_bits)
           + ((value + (n & pmu_soft_mask)) > pmu_soft_mask);
}

/*
 * Count the wraps perfmon cannot see (see pmu_soft.h): polling, every
 * 2^width units unread; with the interrupt, every wrap beyond one pending.
 */
static void
pmu_soft_account_lost(struct pmu_soft_cpu *cpu, unsigned int id,
                      uint64_t wraps, uint64_t n)
{
    uint64_t lost;

    if (pmu_soft_intr) {
        lost = (wraps == 0) ? 0
               : wraps - !(cpu->overflowed & (1U << id));
    } else {
        uint64_t unread = cpu->unread[id];

        cpu->unread[id] = (n > UINT64_MAX / 2 - unread) ? UINT64_MAX / 2
                          : unread + n;
        lost = (cpu->unread[id] >> pmu_soft_nr_bits)
               - (unread >> pmu_soft_nr_bits);
    }

    if (lost != 0) {
        syscnt_add(&cpu->sc_lost, lost);
    }
}

void
pmu_soft_count(unsigned int event, uint64_t n)
{
    struct pmu_soft_bank *bank;
    struct pmu_soft_cpu *cpu;
    uint32_t wrapped = 0;
    unsigned long flags;

    flags = cpu_intr_save();
    cpu = cpu_local_ptr(pmu_soft_cpu);
    bank = cpu_local_ptr(pmu_soft_bank);

    FOR_EACH_BIT(id, cpu->counting[event]) {
        uint64_t old = bank->values[id];
        uint64_t wraps;

        if (pmu_soft_nr_bits == 64) {
            bank->values[id] = old + n;
            continue;   /* perfmon needs no wrap reports at this width */
        }

        wraps = pmu_soft_wraps(old, n);
        pmu_soft_account_lost(cpu, id, wraps, n);
        bank->values[id] = (old + n) & pmu_soft_mask;

        if (wraps != 0) {
            wrapped |= 1U << id;
        }
    }

    if (wrapped != 0 && pmu_soft_intr) {
        cpu->overflowed |= wrapped;
        cpu_send_self_pmu_soft();
    }

    cpu_intr_restore(flags);
}

static int
pmu_soft_translate(uint64_t *configp, unsigned int id, unsigned int flags)
{
    (void)flags;

    if (id >= PMU_SOFT_NR_EVENTS) {
        return EINVAL;
    }

    *configp = id;
    return 0;
}

static int
pmu_soft_alloc(unsigned int *pmc_idp, unsigned int *widthp,
               unsigned int pmc_index, uint64_t config)
{
    (void)config;

    /* One counter per slot: the slot index is the counter. */
    *pmc_idp = pmc_index;
    *widthp = pmu_soft_nr_bits;
    return 0;
}

static void
pmu_soft_free(unsigned int pmc_id)
{
    (void)pmc_id;
}

/*
 * A tick counter counts the clock's ticks as this CPU accounts them: bring
 * the accounting up to date before it starts or is read, so that ticks
 * that passed while the tick interrupt was late land on the right side.
 */
static void
pmu_soft_sync_ticks(unsigned int event)
{
    if (event == PMU_SOFT_EV_TICK) {
        clock_account_local();
    }
}

static uint64_t
pmu_soft_start(unsigned int pmc_id, uint64_t config)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);
    struct pmu_soft_bank *bank = cpu_local_ptr(pmu_soft_bank);
    uint32_t bit = 1U << pmc_id;
    bool hooked;

    pmu_soft_sync_ticks((unsigned int)config);

    /* Polled narrow counters count unread units (lost wraps). */
    hooked = config == PMU_SOFT_EV_TICK
             || (!pmu_soft_intr && pmu_soft_nr_bits < 64);
    bank->hooked = (bank->hooked & ~bit) | (hooked ? bit : 0);
    cpu->events[pmc_id] = (unsigned int)config;
    cpu->counting[config] |= bit;
    cpu->overflowed &= ~bit;
    cpu->unread[pmc_id] = 0;
    return bank->values[pmc_id];
}

static void
pmu_soft_stop(unsigned int pmc_id)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);

    cpu->counting[cpu->events[pmc_id]] &= ~(1U << pmc_id);
    cpu->overflowed &= ~(1U << pmc_id);
}

uint64_t
pmu_soft_read_hooked(unsigned int id)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);

    pmu_soft_sync_ticks(cpu->events[id]);
    cpu->unread[id] = 0;
    return cpu_local_ptr(pmu_soft_bank)->values[id];
}

static uint64_t
pmu_soft_read(unsigned int pmc_id)
{
    return pmu_soft_read_local(pmc_id);
}

/* Take back the wraps the emulated interrupt has not reported yet. */
static uint64_t
pmu_soft_overflow_consume(uint64_t ids)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);
    uint32_t pending = cpu->overflowed & (uint32_t)ids;

    cpu->overflowed &= ~pending;
    return pending;
}

/* The emulated PMI: report the counters that wrapped on this CPU. */
static void
pmu_soft_handle_overflow_intr(void)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);
    uint32_t overflowed = cpu->overflowed;

    cpu->overflowed = 0;

    if (overflowed != 0) {
        syscnt_inc(&cpu->sc_intrs);
    }

    FOR_EACH_BIT(id, overflowed) {
        perfmon_report_overflow(&pmu_soft_dev, id);
    }
}

static const struct perfmon_dev_ops pmu_soft_ops = {
    .translate = pmu_soft_translate,
    .alloc = pmu_soft_alloc,
    .free = pmu_soft_free,
    .start = pmu_soft_start,
    .stop = pmu_soft_stop,
    .read = pmu_soft_read,
    .overflow_consume = pmu_soft_overflow_consume,
    .handle_overflow_intr = pmu_soft_handle_overflow_intr,
};

static int
pmu_soft_setup(void)
{
    uint64_t width = 64, intr = 0;
    char name[SYSCNT_NAME_SIZE];
    int error;

    error = arg_get_u64("pmu_soft.width", &width);

    if (error == EINVAL || width < PMU_SOFT_WIDTH_MIN || width > 64) {
        log_err("pmu_soft: pmu_soft.width must be %u to 64, using 64",
                PMU_SOFT_WIDTH_MIN);
        width = 64;
    }

    error = arg_get_u64("pmu_soft.intr", &intr);

    if (error == EINVAL || intr > 1) {
        log_err("pmu_soft: pmu_soft.intr must be 0 or 1, using 0");
        intr = 0;
    }

    pmu_soft_nr_bits = (unsigned int)width;
    pmu_soft_mask = bitops_width_mask((unsigned int)width);
    pmu_soft_intr = (intr == 1);

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        snprintf(name, sizeof(name), "pmu_soft_intrs/%u", cpu);
        syscnt_register(&percpu_ptr(pmu_soft_cpu, cpu)->sc_intrs, name);
        snprintf(name, sizeof(name), "pmu_soft_lost/%u", cpu);
        syscnt_register(&percpu_ptr(pmu_soft_cpu, cpu)->sc_lost, name);
    }

    pmu_soft_dev.name = "pmu_soft";
    pmu_soft_dev.ops = &pmu_soft_ops;
    pmu_soft_dev.overflow_intr = pmu_soft_intr;
    pmu_soft_dev.nr_pmcs = PMU_SOFT_NR_PMCS;
    pmu_soft_dev.min_width = pmu_soft_nr_bits;
    pmu_soft_dev.max_rate = pmu_soft_max_rate();
    pmu_soft_dev.sw = true;
    return perfmon_register(&pmu_soft_dev);
}

INIT_OP_DEFINE(pmu_soft_setup, INIT_OP_DEP(perfmon_setup, true));
