/*
 * Register-level model of an Intel architectural PMU: counting, overflows
 * and the PMI they request, and the local APIC's performance counter
 * entry. The registers and their accesses are pmu_model.c's; see
 * pmu_model.h for the semantics and their SDM sections.
 */
#include <stdbool.h>
#include <stdint.h>

#include "pmu_model.h"
#include "pmu_model_env.h"
#include "pmu_model_i.h"

/*
 * A counter with INT (or its PMI bit) overflowed: request a PMI. The
 * freeze bits of IA32_DEBUGCTL act on the request itself, masked LVT
 * entry or not.
 */
static void
model_request_pmi(void)
{
    uint64_t debugctl = model.regs.debugctl;
    bool streamlined = model.version >= 4;

    model.pmi_requests++;

    if (debugctl & MODEL_DEBUGCTL_FREEZE_PERFMON) {
        if (streamlined) {
            model.regs.global_status |= MODEL_STATUS_CTR_FRZ;
        } else {
            model.regs.global_ctrl = 0;
        }
    }

    if (debugctl & MODEL_DEBUGCTL_FREEZE_LBRS) {
        if (streamlined) {
            model.regs.global_status |= MODEL_STATUS_LBR_FRZ;
        } else {
            model.regs.debugctl &= ~MODEL_DEBUGCTL_LBR;
        }
    }

    /* A masked entry generates nothing; generating one masks it. */
    if (!(model.regs.lvt_pmc & MODEL_LVT_MASKED)) {
        model.regs.lvt_pmc |= MODEL_LVT_MASKED;
        model.pmi_pending = true;
    }
}

static uint64_t *
model_counter_reg(unsigned int id)
{
    if (id >= MODEL_FIXED_BASE) {
        return &model.regs.fixed_ctr[id - MODEL_FIXED_BASE];
    }

    return &model.regs.pmc[id];
}

/* Add n to counter id; on a wrap set its status bit and maybe a PMI. */
static void
model_count(unsigned int id, uint64_t n, bool intr)
{
    uint64_t *reg = model_counter_reg(id);
    uint64_t mask = model_mask(model_counter_width(id));
    uint64_t room = mask - *reg;
    uint64_t wraps;

    model.counted[id] += n;

    if (n <= room) {
        *reg += n;
        return;
    }

    /* The first wrap takes room + 1 events, each later one 2^width. */
    wraps = 1;

    if (mask != ~0ULL) {
        wraps += (n - room - 1) / (mask + 1);
    }

    *reg = (*reg + n) & mask;
    model.wraps[id] += wraps;

    if (model.version >= 2) {
        model.regs.global_status |= 1ULL << id;
    }

    if (intr) {
        model_request_pmi();
    }
}

/* Global enable, and no freeze (SDM vol. 3B, 21.2.2 and 21.2.4.1). */
static bool
model_global_enabled(unsigned int id)
{
    if (model.version < 2) {
        return true;
    }

    if (model.version >= 4
        && (model.regs.global_status & MODEL_STATUS_CTR_FRZ)) {
        return false;
    }

    return (model.regs.global_ctrl & (1ULL << id)) != 0;
}

/*
 * Whether counter id counts an event (any event when event is NULL) at a
 * ring now, and whether its overflow requests a PMI.
 */
static bool
model_counter_counts(unsigned int id, const struct model_event *event,
                     enum model_ring ring, bool *intrp)
{
    bool kern = (ring == MODEL_RING_KERN);
    uint64_t code;

    if (!model_counter_exists(id) || !model_global_enabled(id)) {
        return false;
    }

    if (id >= MODEL_FIXED_BASE) {
        unsigned int j = id - MODEL_FIXED_BASE;
        unsigned int field = (model.regs.fixed_ctrl >> (4 * j)) & 0xf;

        code = model_event_code(model_fixed_events[j]);
        *intrp = (field & MODEL_FIXED_PMI) != 0;

        if (!(field & (kern ? MODEL_FIXED_OS : MODEL_FIXED_USR))) {
            return false;
        }
    } else {
        uint64_t evtsel = model.regs.evtsel[id];

        code = evtsel & 0xffff;
        *intrp = (evtsel & MODEL_EVTSEL_INT) != 0;

        if (!(evtsel & MODEL_EVTSEL_EN)
            || !(evtsel & (kern ? MODEL_EVTSEL_OS : MODEL_EVTSEL_USR))) {
            return false;
        }

        /* Haswell, Broadwell: L1D_PEND_MISS.PENDING, counter 2 only. */
        if (model_is_hsw_bdw() && id != 2
            && code == model_event_code(MODEL_EV_L1D_PEND_MISS)) {
            return false;
        }
    }

    return event == NULL || code == model_event_code(*event);
}

/*
 * n occurrences of event (NULL: of every event) at a ring. With the
 * perfmon freeze armed, the events are counted in steps that end at the
 * next overflow requesting a PMI, since the freeze stops every counter
 * there and the rest of the events go uncounted.
 */
static void
model_advance(const struct model_event *event, uint64_t n,
              enum model_ring ring)
{
    bool freeze = model.version >= 2
                  && (model.regs.debugctl & MODEL_DEBUGCTL_FREEZE_PERFMON);

    while (n != 0) {
        uint64_t step = n, counting = 0, intrs = 0;
        bool intr;

        /* Who counts is decided before any of them can freeze the rest. */
        for (unsigned int id = 0; id < MODEL_NR_COUNTERS; id++) {
            if (!model_counter_counts(id, event, ring, &intr)) {
                continue;
            }

            counting |= 1ULL << id;
            intrs |= intr ? 1ULL << id : 0;

            if (freeze && intr) {
                uint64_t room = model_mask(model_counter_width(id))
                                - *model_counter_reg(id);

                if (room != ~0ULL) {
                    step = MIN(step, room + 1);
                }
            }
        }

        if (counting == 0) {
            return;
        }

        for (unsigned int id = 0; id < MODEL_NR_COUNTERS; id++) {
            if (counting & (1ULL << id)) {
                model_count(id, step, (intrs & (1ULL << id)) != 0);
            }
        }

        n -= step;
    }
}

void
model_retire(struct model_event event, uint64_t n, enum model_ring ring)
{
    model_advance(&event, n, ring);
}

/* The driver's own instructions, counted before each of its accesses. */
void
model_drift(void)
{
    if (model.drift != 0) {
        model_advance(NULL, model.drift, MODEL_RING_KERN);
    }
}

unsigned long
model_nr_pmi_requests(void)
{
    return model.pmi_requests;
}

bool
model_pmi_pending(void)
{
    return model.pmi_pending;
}

bool
model_pmi_take(void)
{
    bool pending = model.pmi_pending;

    model.pmi_pending = false;
    return pending;
}

/* ------------------------------------------------------------------ */
/* Local APIC                                                          */
/* ------------------------------------------------------------------ */

void
model_lapic_pmc_setup(unsigned int vector)
{
    /* Fixed delivery mode (000), unmasked. */
    model.regs.lvt_pmc = vector & 0xff;
}

void
model_lapic_pmc_setup_nmi(void)
{
    /* NMI delivery mode (100b), unmasked, vector ignored. */
    model.regs.lvt_pmc = MODEL_LVT_NMI;
}

bool
model_lvt_nmi(void)
{
    return (model.regs.lvt_pmc & MODEL_LVT_MODE) == MODEL_LVT_NMI;
}

void
model_lapic_pmc_unmask(void)
{
    model.regs.lvt_pmc &= ~(uint64_t)MODEL_LVT_MASKED;
}

void
model_lapic_eoi(void)
{
    model.eois++;
}

unsigned long
model_nr_eois(void)
{
    return model.eois;
}

uint32_t
model_lvt_pmc(void)
{
    return (uint32_t)model.regs.lvt_pmc;
}

void
model_set_wrmsr_hook(void (*hook)(uint32_t msr, uint64_t value))
{
    model.wrmsr_hook = hook;
}

void
model_set_rdmsr_hook(void (*hook)(uint32_t msr))
{
    model.rdmsr_hook = hook;
}
