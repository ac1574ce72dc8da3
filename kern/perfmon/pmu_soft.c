/*
 * Software PMU, the counter bank: per CPU, PMU_SOFT_NR_COUNTERS counters; a
 * started counter counts one event. For each event, a per-CPU bit mask
 * names the counters that count it, so an event nobody counts costs one
 * load. The kernel's hooks (clock, thread, xcall) count into it; the
 * perfmon device over it lives in pmu_soft_dev.c, so those hooks do not
 * depend on perfmon.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/assert.h>
#include <kern/bitops.h>
#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon_nmi.h>
#include <kern/pmu_soft.h>
#include <kern/printf.h>
#include <kern/syscnt.h>
#include <machine/cpu.h>
#include <machine/cpu_mp.h>

#define PMU_SOFT_WIDTH_MIN 8

/* Boot options: counter width, the emulated overflow interrupt. */
ARG_DEFINE_U64("pmu_soft.width", PMU_SOFT_WIDTH_MIN, 64);
ARG_DEFINE_U64("pmu_soft.intr", 0, 1);
ARG_DEFINE_STRING("pmu_soft.nmi");

struct pmu_soft_cpu {
    uint64_t unread[PMU_SOFT_NR_COUNTERS];      /* polling: counted since the
                                               last start or read */
    unsigned int events[PMU_SOFT_NR_COUNTERS];
    uint32_t counting[PMU_SOFT_NR_EVENTS];  /* counters per event */
    uint32_t sync;                          /* wraps reported at once */
    uint32_t preset;                        /* preset since started */

    /* NMI mode: where each pending overflow happened (the first wrap),
       naming the call chain captured there. */
    struct perfmon_intr_ctx where[PMU_SOFT_NR_COUNTERS];
    struct perfmon_chain chains[PMU_SOFT_NR_COUNTERS];
    struct syscnt sc_intrs;
    struct syscnt sc_lost;
};

static struct pmu_soft_cpu pmu_soft_cpu __percpu;
struct perfmon_bank pmu_soft_bank __percpu;
static uint64_t pmu_soft_mask = ~0ULL;
static unsigned int pmu_soft_nr_bits = 64;
static bool pmu_soft_intr;
static bool pmu_soft_nmi;
static bool pmu_soft_nmi_ipi;
static pmu_soft_report_fn_t pmu_soft_report_fn;

static const char *const pmu_soft_names[PMU_SOFT_EV_EMIT] = {
    [PMU_SOFT_EV_CSWITCH] = "cswitch",
    [PMU_SOFT_EV_MIGRATION] = "migration",
    [PMU_SOFT_EV_TICK] = "tick",
    [PMU_SOFT_EV_XCALL] = "xcall",
};

static const char *const pmu_soft_emit_names[PMU_SOFT_NR_CHANNELS] = {
    "emit", "emit1", "emit2", "emit3", "emit4", "emit5", "emit6", "emit7",
    "emit8", "emit9", "emit10", "emit11", "emit12", "emit13", "emit14",
    "emit15", "emit16", "emit17", "emit18", "emit19", "emit20", "emit21",
    "emit22", "emit23", "emit24", "emit25", "emit26", "emit27", "emit28",
    "emit29",
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

bool
pmu_soft_nmi_mode(void)
{
    return pmu_soft_nmi;
}

bool
pmu_soft_nmi_ipi_mode(void)
{
    return pmu_soft_nmi_ipi;
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
 * NMI mode: whether a preset counter's wrap in the count under way waits,
 * as an NMI landing there would, for the end of a marked section open
 * around the count (the count's own is the innermost). Local, interrupts
 * disabled, in pmu_soft_count.
 */
static inline bool
pmu_soft_defers(void)
{
    return pmu_soft_nmi && perfmon_nmi_nest() != 1;
}

/*
 * Count the wraps perfmon cannot see (see pmu_soft.h): polling, every
 * 2^width units unread; with the interrupt, every wrap beyond one pending;
 * a preset counter's, every wrap beyond the first of one count.
 */
static void
pmu_soft_account_lost(struct pmu_soft_cpu *cpu, unsigned int id,
                      uint64_t wraps, uint64_t n)
{
    uint64_t lost;

    if ((cpu->sync & (1U << id)) && !pmu_soft_defers()) {
        /* Reported at once: only a second wrap in one count is lost. */
        lost = (wraps == 0) ? 0 : wraps - 1;
    } else if (pmu_soft_intr) {
        lost = (wraps == 0) ? 0
               : wraps - !(cpu_local_ptr(pmu_soft_bank)->pending
                           & (1U << id));
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
pmu_soft_set_report_fn(pmu_soft_report_fn_t fn)
{
    pmu_soft_report_fn = fn;
}

/*
 * Where the counted events happened, for samples: a tick in its interrupt
 * happened where the interrupt came; any other event at the call of
 * pmu_soft_count (in its caller, whose frame is below this one's).
 */
static inline void
pmu_soft_where(unsigned int event, uintptr_t caller_ip, uintptr_t caller_fp,
               struct perfmon_intr_ctx *ctx)
{
    if (event == PMU_SOFT_EV_TICK && cpu_intr_ctx(&ctx->ip, &ctx->fp)) {
        return;
    }

    ctx->ip = caller_ip;
    ctx->fp = caller_fp;
}

/*
 * Not inlined: a sample's instruction pointer is this call's return.
 *
 * A marked section (kern/perfmon_nmi.h): the bank's values and the
 * pending mask are read, modified and written here, and the overflow NMI
 * presets the first and takes from the second. An NMI that lands here
 * leaves them to the section's end; this count's own NMI is sent after
 * it, so that it normally finds no section open and does its work at
 * once, as a hardware PMI would.
 */
__attribute__((noinline)) void
pmu_soft_count(unsigned int event, uint64_t n)
{
    struct perfmon_bank *bank;
    struct pmu_soft_cpu *cpu;
    uint32_t wrapped = 0, sync, raised = 0;
    bool defer = false;
    unsigned long flags;

    flags = cpu_intr_save();
    perfmon_nmi_enter();
    cpu = cpu_local_ptr(pmu_soft_cpu);
    bank = cpu_local_ptr(pmu_soft_bank);

    FOR_EACH_BIT(id, cpu->counting[event]) {
        uint64_t old = bank->values[id];
        uint64_t wraps;

        if (pmu_soft_nr_bits == 64) {
            bank->values[id] = old + n;

            /* Only a preset counter wraps at this width. */
            if (bank->values[id] < old) {
                wrapped |= 1U << id;
            }

            continue;
        }

        wraps = pmu_soft_wraps(old, n);
        pmu_soft_account_lost(cpu, id, wraps, n);
        bank->values[id] = (old + n) & pmu_soft_mask;

        if (wraps != 0) {
            wrapped |= 1U << id;
        }
    }

    sync = wrapped & cpu->sync;
    wrapped &= ~sync;

    /*
     * NMI mode: a preset counter's wrap is reported at once below, as an
     * NMI taken at the counting instruction would be, unless a marked
     * section is open around this count (a tick counter's read inside
     * perfmon's update): there the NMI would wait for that section's end,
     * and so does the wrap, pending, with the CPU's deferred flag set.
     */
    if (sync != 0 && pmu_soft_defers()) {
        wrapped |= sync;
        sync = 0;
        defer = true;
    }

    if (wrapped != 0 && pmu_soft_nmi) {
        raised = wrapped & ~bank->pending;

        if (raised != 0) {
            struct perfmon_intr_ctx ctx;

            pmu_soft_where(event, (uintptr_t)__builtin_return_address(0),
                           *(const uintptr_t *)__builtin_frame_address(0),
                           &ctx);

            /*
             * Reported later, when the frames may be gone: a sampling
             * counter's chain is captured now (a counting counter takes
             * no sample).
             */
            FOR_EACH_BIT(id, raised) {
                if (cpu->preset & (1U << id)) {
                    perfmon_sample_chain_capture(&cpu->chains[id], &ctx,
                                                 &cpu->where[id]);
                } else {
                    cpu->where[id] = ctx;
                }
            }

            if (defer) {
                perfmon_nmi_defer(&ctx);
                raised = 0;
            }
        }

        bank->pending |= wrapped;
    } else if (wrapped != 0 && pmu_soft_intr) {
        bank->pending |= wrapped;
        cpu_send_self_pmu_soft();
    }

    if (sync != 0) {
        struct perfmon_intr_ctx ctx;

        pmu_soft_where(event, (uintptr_t)__builtin_return_address(0),
                       *(const uintptr_t *)__builtin_frame_address(0), &ctx);

        FOR_EACH_BIT(id, sync) {
            pmu_soft_report_fn(id, &ctx);
        }
    }

    perfmon_nmi_leave();

    /* One NMI per newly pending overflow set: a later wrap of a pending
       counter is that NMI's to find. */
    if (raised != 0) {
        cpu_send_nmi(cpu_id());
    }

    cpu_intr_restore(flags);
}

/*
 * A tick counter counts the clock's ticks as this CPU accounts them: bring
 * the accounting up to date before it starts or is read, so that ticks
 * that passed while the tick interrupt was late land on the right side.
 * Not from an NMI, which may have landed inside the accounting (the
 * interrupted code would count the same ticks again): the NMI reads the
 * counter as it stands, and the ticks are counted when accounted.
 */
static void
pmu_soft_sync_ticks(unsigned int event)
{
    if (event == PMU_SOFT_EV_TICK && !perfmon_nmi_active()) {
        clock_account_local();
    }
}

uint64_t
pmu_soft_counter_start(unsigned int id, unsigned int event)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);
    struct perfmon_bank *bank = cpu_local_ptr(pmu_soft_bank);
    uint32_t bit = 1U << id;
    bool hooked;

    pmu_soft_sync_ticks(event);

    /* Polled narrow counters count unread units (lost wraps). */
    hooked = event == PMU_SOFT_EV_TICK
             || (!pmu_soft_intr && pmu_soft_nr_bits < 64);
    bank->hooked = (bank->hooked & ~bit) | (hooked ? bit : 0);
    cpu->events[id] = event;
    cpu->counting[event] |= bit;
    bank->pending &= ~bit;
    cpu->sync &= ~bit;
    cpu->preset &= ~bit;
    cpu->unread[id] = 0;
    return bank->values[id];
}

uint64_t
pmu_soft_counter_preset(unsigned int id, uint64_t n)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);
    struct perfmon_bank *bank = cpu_local_ptr(pmu_soft_bank);

    assert_intr_disabled();

    /* perfmon has just read the counter: its ticks are accounted. */
    bank->values[id] = (0 - n) & pmu_soft_mask;

    /* With pmu_soft.nmi=ipi every wrap is an NMI's to report. */
    if (!pmu_soft_nmi_ipi) {
        cpu->sync |= 1U << id;
    }

    cpu->preset |= 1U << id;

    bank->pending &= ~(1U << id);
    cpu->unread[id] = 0;
    return bank->values[id];
}

void
pmu_soft_counter_stop(unsigned int id)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);

    cpu->counting[cpu->events[id]] &= ~(1U << id);
    cpu_local_ptr(pmu_soft_bank)->pending &= ~(1U << id);
    cpu->sync &= ~(1U << id);
}

uint64_t
pmu_soft_read_hooked(unsigned int id)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);

    pmu_soft_sync_ticks(cpu->events[id]);
    cpu->unread[id] = 0;
    return cpu_local_ptr(pmu_soft_bank)->values[id];
}

uint32_t
pmu_soft_take_overflows(uint32_t mask)
{
    struct perfmon_bank *bank = cpu_local_ptr(pmu_soft_bank);
    uint32_t pending = bank->pending & mask;

    bank->pending &= ~pending;
    return pending;
}

const struct perfmon_intr_ctx *
pmu_soft_intr_where(unsigned int id)
{
    assert_intr_disabled();
    return &cpu_local_ptr(pmu_soft_cpu)->where[id];
}

uint32_t
pmu_soft_intr_take(void)
{
    struct pmu_soft_cpu *cpu = cpu_local_ptr(pmu_soft_cpu);
    uint32_t overflowed;

    assert_intr_disabled();
    overflowed = pmu_soft_take_overflows(~0U);

    if (overflowed != 0) {
        syscnt_inc(&cpu->sc_intrs);
    }

    return overflowed;
}

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
    pmu_soft_nmi = pmu_soft_intr && perfmon_nmi_enabled();

    if (arg_is_set("pmu_soft.nmi", "ipi")) {
        pmu_soft_nmi_ipi = pmu_soft_nmi;
    } else if (arg_get("pmu_soft.nmi") != NULL
               && !arg_is_set("pmu_soft.nmi", "precise")) {
        log_err("pmu_soft: pmu_soft.nmi must be precise or ipi, "
                "using precise");
    }

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        snprintf(name, sizeof(name), "pmu_soft_intrs/%u", cpu);
        syscnt_register(&percpu_ptr(pmu_soft_cpu, cpu)->sc_intrs, name);
        snprintf(name, sizeof(name), "pmu_soft_lost/%u", cpu);
        syscnt_register(&percpu_ptr(pmu_soft_cpu, cpu)->sc_lost, name);
    }

    return 0;
}

INIT_OP_DEFINE(pmu_soft_setup,
               INIT_OP_DEP(cpu_mp_setup, true),
               INIT_OP_DEP(syscnt_setup, true));
