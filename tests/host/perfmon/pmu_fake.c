/*
 * A fake PMU device for host tests of perfmon's core. See pmu_fake.h.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <machine/cpu.h>
#include <machine/lapic.h>
#include <machine/trap.h>

#include "host_env.h"
#include "pmu_fake.h"

#define PMU_FAKE_MAX_CONSTRAINTS    8

struct pmu_fake_constraint {
    uint64_t config;
    uint32_t ids;
};

static struct pmu_fake {
    struct perfmon_dev dev;
    uint64_t mask;
    uint32_t reserved;
    uint32_t started;
    uint32_t pending;               /* wrapped, interrupt not taken */
    uint64_t values[PERFMON_MAX_COUNTERS];
    uint64_t configs[PERFMON_MAX_COUNTERS];
    struct pmu_fake_constraint constraints[PMU_FAKE_MAX_CONSTRAINTS];
    unsigned int nr_allocs;
    unsigned int nr_frees;
    unsigned int nr_bad_frees;
} pmu_fake;

static int
pmu_fake_translate(uint64_t *configp, uint64_t id, unsigned int flags)
{
    if (flags & PERFMON_EF_RAW) {
        if (id == 0 || id > 0xffffffffULL) {
            return EINVAL;
        }
    } else if (id < PERFMON_NR_GENERIC_EVENTS) {
        id += PMU_FAKE_GENERIC;
    } else {
        return ENODEV;
    }

    *configp = PMU_FAKE_CONFIG(id, flags);
    return 0;
}

/* The counters config may go on. */
static uint32_t
pmu_fake_allowed(uint64_t config)
{
    uint32_t all = (uint32_t)((1ULL << pmu_fake.dev.nr_counters) - 1);

    for (unsigned int i = 0; i < PMU_FAKE_MAX_CONSTRAINTS; i++) {
        if (pmu_fake.constraints[i].ids != 0
            && pmu_fake.constraints[i].config == config) {
            return pmu_fake.constraints[i].ids & all;
        }
    }

    return all;
}

/* The lowest free counter config may go on: deterministic ids. */
static int
pmu_fake_alloc(unsigned int *counterp, unsigned int *widthp, uint64_t config)
{
    uint32_t free = pmu_fake_allowed(config) & ~pmu_fake.reserved;
    unsigned int id;

    if (cpu_intr_enabled()) {
        panic("pmu_fake: alloc with interrupts enabled");
    }

    if (free == 0) {
        return EAGAIN;
    }

    id = __builtin_ctz(free);
    pmu_fake.reserved |= 1U << id;
    pmu_fake.configs[id] = config;
    pmu_fake.nr_allocs++;
    *counterp = id;
    *widthp = pmu_fake.dev.min_width;
    return 0;
}

static void
pmu_fake_free(unsigned int counter)
{
    pmu_fake.nr_frees++;

    if (counter >= pmu_fake.dev.nr_counters
        || !(pmu_fake.reserved & (1U << counter))) {
        pmu_fake.nr_bad_frees++;
        return;
    }

    pmu_fake.reserved &= ~(1U << counter);
}

static void
pmu_fake_check_local(unsigned int counter)
{
    if (cpu_intr_enabled() || counter >= pmu_fake.dev.nr_counters) {
        panic("pmu_fake: counter %u touched with interrupts enabled or "
              "out of range", counter);
    }
}

static uint64_t
pmu_fake_start(unsigned int counter, uint64_t config)
{
    pmu_fake_check_local(counter);
    pmu_fake.configs[counter] = config;
    pmu_fake.started |= 1U << counter;
    pmu_fake.pending &= ~(1U << counter);
    return pmu_fake.values[counter];
}

static void
pmu_fake_stop(unsigned int counter)
{
    pmu_fake_check_local(counter);
    pmu_fake.started &= ~(1U << counter);
    pmu_fake.pending &= ~(1U << counter);
}

static uint64_t
pmu_fake_read(unsigned int counter)
{
    pmu_fake_check_local(counter);
    return pmu_fake.values[counter];
}

static uint64_t
pmu_fake_overflow_consume(uint64_t ids)
{
    uint32_t taken = pmu_fake.pending & (uint32_t)ids;

    if (cpu_intr_enabled()) {
        panic("pmu_fake: overflow_consume with interrupts enabled");
    }

    pmu_fake.pending &= ~taken;
    return taken;
}

static void
pmu_fake_handle_overflow_intr(const struct perfmon_intr_ctx *ctx)
{
    /* Reported one by one, as a driver does from its status register. */
    while (pmu_fake.pending != 0) {
        unsigned int id = __builtin_ctz(pmu_fake.pending);

        pmu_fake.pending &= ~(1U << id);
        perfmon_sample_report_overflow(&pmu_fake.dev, id, ctx);
    }
}

static uint64_t
pmu_fake_preset(unsigned int counter, uint64_t n)
{
    pmu_fake_check_local(counter);

    if (n == 0 || n > pmu_fake.dev.max_period) {
        panic("pmu_fake: preset of %llu", (unsigned long long)n);
    }

    pmu_fake.values[counter] = (pmu_fake.mask - n + 1) & pmu_fake.mask;
    pmu_fake.pending &= ~(1U << counter);
    return pmu_fake.values[counter];
}

static const struct perfmon_dev_ops pmu_fake_ops = {
    .translate = pmu_fake_translate,
    .alloc = pmu_fake_alloc,
    .free = pmu_fake_free,
    .start = pmu_fake_start,
    .stop = pmu_fake_stop,
    .read = pmu_fake_read,
    .overflow_consume = pmu_fake_overflow_consume,
    .handle_overflow_intr = pmu_fake_handle_overflow_intr,
    .preset = pmu_fake_preset,
};

int
pmu_fake_register(const struct pmu_fake_config *config)
{
    unsigned int width = config->width;

    pmu_fake.mask = (width >= 64) ? UINT64_MAX : (1ULL << width) - 1;
    pmu_fake.dev.name = "pmu_fake";
    pmu_fake.dev.ops = &pmu_fake_ops;
    pmu_fake.dev.nr_counters = config->nr_counters;
    pmu_fake.dev.min_width = width;
    pmu_fake.dev.sw = false;
    pmu_fake.dev.overflow_intr = config->overflow_intr;
    pmu_fake.dev.max_rate = config->max_rate;

    /* Sampling needs the interrupt; a period of half the counter. */
    if (config->overflow_intr && width >= 2) {
        pmu_fake.dev.max_period = (width >= 63) ? (1ULL << 62)
                                                : (1ULL << (width - 1));
    }

    return perfmon_dev_register(&pmu_fake.dev);
}

struct perfmon_dev *
pmu_fake_dev(void)
{
    return &pmu_fake.dev;
}

void
pmu_fake_constrain(uint64_t config, uint32_t ids)
{
    struct pmu_fake_constraint *free = NULL;

    for (unsigned int i = 0; i < PMU_FAKE_MAX_CONSTRAINTS; i++) {
        struct pmu_fake_constraint *c = &pmu_fake.constraints[i];

        if (c->ids != 0 && c->config == config) {
            c->ids = ids;
            return;
        }

        if (c->ids == 0 && free == NULL) {
            free = c;
        }
    }

    if (ids == 0) {
        return;
    }

    if (free == NULL) {
        panic("pmu_fake: too many constraints");
    }

    free->config = config;
    free->ids = ids;
}

/*
 * The interrupt of counters that wrapped, taken now when interrupts are
 * enabled, as the CPU would; else when the test delivers it.
 */
bool
pmu_fake_deliver(void)
{
    if (!pmu_fake.dev.overflow_intr || pmu_fake.pending == 0) {
        return false;
    }

    host_env_raise_trap(TRAP_PMI);
    return true;
}

void
pmu_fake_count(uint64_t config, uint64_t n)
{
    for (unsigned int id = 0; id < pmu_fake.dev.nr_counters; id++) {
        uint64_t old = pmu_fake.values[id];

        if (!(pmu_fake.started & (1U << id)) || pmu_fake.configs[id] != config
            || n == 0) {
            continue;
        }

        pmu_fake.values[id] = (old + n) & pmu_fake.mask;

        /* A wrap: at most one per call, what one interrupt reports. */
        if (pmu_fake.dev.overflow_intr && n > pmu_fake.mask - old) {
            if (n - (pmu_fake.mask - old) - 1 > pmu_fake.mask) {
                panic("pmu_fake: %llu events wrap counter %u twice",
                      (unsigned long long)n, id);
            }

            pmu_fake.pending |= 1U << id;
        }
    }

    if (cpu_intr_enabled()) {
        pmu_fake_deliver();
    }
}

void
pmu_fake_set(unsigned int counter, uint64_t raw)
{
    pmu_fake.values[counter] = raw & pmu_fake.mask;
}

uint64_t
pmu_fake_get(unsigned int counter)
{
    return pmu_fake.values[counter];
}

uint32_t
pmu_fake_reserved(void)
{
    return pmu_fake.reserved;
}

uint32_t
pmu_fake_started(void)
{
    return pmu_fake.started;
}

uint64_t
pmu_fake_counter_config(unsigned int counter)
{
    return pmu_fake.configs[counter];
}

unsigned int
pmu_fake_nr_allocs(void)
{
    return pmu_fake.nr_allocs;
}

unsigned int
pmu_fake_nr_frees(void)
{
    return pmu_fake.nr_frees;
}

unsigned int
pmu_fake_nr_bad_frees(void)
{
    return pmu_fake.nr_bad_frees;
}

uint32_t
pmu_fake_pending(void)
{
    return pmu_fake.pending;
}

/* The arch's end of interrupt, after the PMI host_env raises. */
void
lapic_eoi(void)
{
}
