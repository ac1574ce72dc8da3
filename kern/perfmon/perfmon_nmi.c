/*
 * The overflow interrupt as an NMI (kern/perfmon_nmi.h): the boot option
 * that chooses it, the NMI's entry, and the deferred handling that the
 * end of a marked section runs when an NMI landed inside it. The NMI
 * reaches the devices' overflow handlers through their ops only, so the
 * one call back into the tiers above is that of a section's end
 * (perfmon_nmi_leave): the handling of an interrupt delivered late, not
 * a call of the tier that closed the section.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/assert.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/perfmon/perfmon_cpu_i.h>
#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <machine/cpu.h>

struct perfmon_nmi_cpu perfmon_nmi_cpu __percpu;

void (*perfmon_nmi_test_hook)(const struct perfmon_intr_ctx *ctx);

/* Boot option: how overflow interrupts come (perfmon_nmi_enabled). */
ARG_DEFINE_STRING("perfmon.pmi");

/*
 * Where the device can deliver its overflow interrupt as an NMI, it does
 * unless told otherwise: only an NMI samples code that runs with
 * interrupts disabled.
 */
#define PERFMON_NMI_DEFAULT true

bool
perfmon_nmi_enabled(void)
{
    static int mode = -1;
    uint64_t value;

    if (mode < 0) {
        if (arg_is_set("perfmon.pmi", "nmi")) {
            mode = 1;
        } else if (arg_is_set("perfmon.pmi", "irq")) {
            mode = 0;
        } else if (arg_get_u64("perfmon.pmi", &value) == ENOENT) {
            mode = PERFMON_NMI_DEFAULT;
        } else {
            log_err("perfmon: perfmon.pmi must be nmi or irq, using %s",
                    PERFMON_NMI_DEFAULT ? "nmi" : "irq");
            mode = PERFMON_NMI_DEFAULT;
        }
    }

    return mode == 1;
}

/*
 * The overflow handling of the devices in NMI mode, and the test's hook,
 * with no marked section open on this CPU: an NMI, or the end of the
 * section an NMI landed in. Local, interrupts disabled.
 */
static void
perfmon_nmi_handle(const struct perfmon_intr_ctx *ctx)
{
    unsigned int nr_devs = __atomic_load_n(&perfmon_nr_devs,
                                           __ATOMIC_ACQUIRE);
    void (*hook)(const struct perfmon_intr_ctx *ctx);

    assert_intr_disabled();

    for (unsigned int d = 0; d < nr_devs; d++) {
        struct perfmon_dev *dev = perfmon_devs[d];

        if (dev->nmi && dev->overflow_intr) {
            dev->ops->handle_overflow_intr(ctx);
        }
    }

    /* Pairs with the test's release store: its data is set up first. */
    hook = __atomic_load_n(&perfmon_nmi_test_hook, __ATOMIC_ACQUIRE);

    if (hook != NULL) {
        hook(ctx);
    }
}

void
perfmon_nmi_intr(const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_nmi_cpu *nmi = cpu_local_ptr(perfmon_nmi_cpu);
    struct perfmon_intr_ctx deferred;
    struct perfmon_chain chain;

    /* A maskable section is under way here: its end handles it. */
    if (perfmon_nmi_nest() != 0) {
        perfmon_nmi_defer(ctx);
        return;
    }

    /*
     * Landed after a section's end lowered the count, before it tested
     * the flag: the deferred work is this NMI's now, at the place the
     * first deferral noted; the flag cleared, the section's end finds
     * nothing to do (else it would run the handling again, spuriously).
     */
    if (unlikely(perfmon_nmi_deferred())) {
        perfmon_sample_chain_copy(&chain, &nmi->ctx, &deferred);
        perfmon_nmi_set_deferred(false);
        ctx = &deferred;
    }

    nmi->in_nmi = 1;
    barrier();
    perfmon_nmi_handle(ctx);
    barrier();
    nmi->in_nmi = 0;
}

/*
 * With the count raised again, so that an NMI meanwhile defers anew; it
 * is lowered only when no deferral is left, and the flag tested once
 * more after that, as perfmon_nmi_leave does.
 */
void
perfmon_nmi_run_deferred(void)
{
    struct perfmon_nmi_cpu *nmi = cpu_local_ptr(perfmon_nmi_cpu);
    struct perfmon_intr_ctx ctx;
    struct perfmon_chain chain;

    assert_intr_disabled();

    /*
     * The handling may close sections of its own (an emit from a test's
     * hook, from an NMI that landed with none open) and find work
     * deferred again: the outer loop does it, the stack does not grow.
     */
    if (nmi->in_deferred) {
        return;
    }

    /*
     * An NMI that lands with the count at 0 but in_deferred still set may
     * defer work of its own whose section's end returns at once (above):
     * once in_deferred is clear, the flag is tested again.
     */
    do {
        nmi->in_deferred = 1;
        barrier();

        do {
            perfmon_nmi_set_nest(1);

            /* The place is copied, then the flag cleared: an NMI after
               the clear captures anew, the samples use the copy. */
            while (perfmon_nmi_deferred()) {
                perfmon_sample_chain_copy(&chain, &nmi->ctx, &ctx);
                perfmon_nmi_set_deferred(false);
                perfmon_nmi_handle(&ctx);
            }

            perfmon_nmi_set_nest(0);
        } while (perfmon_nmi_deferred());

        barrier();
        nmi->in_deferred = 0;
        barrier();
    } while (unlikely(perfmon_nmi_deferred()) && perfmon_nmi_nest() == 0);
}

/* The NMI as the machine calls it (cpu_nmi_register). NMI context. */
static void
perfmon_nmi_entry(const struct cpu_intr_site *site)
{
    struct perfmon_intr_ctx ctx = { .ip = site->ip, .fp = site->fp };

    perfmon_nmi_intr(&ctx);
}

void
perfmon_nmi_setup(void)
{
    cpu_nmi_register(perfmon_nmi_enabled() ? perfmon_nmi_entry : NULL);
}
