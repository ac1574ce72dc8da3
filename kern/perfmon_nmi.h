/*
 * perfmon's overflow interrupt as an NMI (perfmon.pmi=nmi): the sections
 * of code that update perfmon's per-CPU state with interrupts disabled,
 * and what the NMI does when it lands inside one.
 *
 * An NMI is not held back by disabled interrupts, so it may land between
 * any two instructions of a maskable update of the per-CPU tier (the
 * 64-bit sum and last raw value of a slot, the sampling state, a ring
 * reservation). Rather than making every such update safe against a
 * second writer on its own CPU, each of those sections is marked: a
 * per-CPU nesting count, raised at its start and lowered at its end
 * (perfmon_nmi_enter, perfmon_nmi_leave). An NMI that finds the count
 * raised touches no perfmon state: it leaves the overflow pending in the
 * device (hardware: the status bits unacknowledged; software PMU: its
 * pending mask), notes where it landed and sets the CPU's deferred flag.
 * The outermost section's end, still with interrupts disabled, sees the
 * flag and runs the overflow handling itself, with the count raised
 * again, and the samples carry where the NMI landed. With the count at 0
 * no maskable section is under way on the CPU, so the NMI does the whole
 * handling itself; one that lands after a section's end lowered the count
 * but before it tested the flag finds the count at 0 and the flag set: the
 * section's updates are over, so it runs the deferred handling too, and
 * the section's end then finds the flag clear. The cost on the hot paths:
 * a byte increment, a byte decrement and a test.
 *
 * The NMI itself only reads the count and writes the deferred flag and
 * the place it landed, which no maskable code writes while the count is
 * raised, except perfmon_nmi_run_deferred, which reads the place before
 * it clears the flag (an NMI that then lands writes both anew and is
 * seen by the next test of the flag).
 */
#ifndef KERN_PERFMON_NMI_H
#define KERN_PERFMON_NMI_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon_types.h>

/*
 * The count and the flag are bytes reached in one instruction each
 * (machine/cpu.h: cpu_local_inc8, ...), through the accessors below.
 */
struct perfmon_nmi_cpu {
    uint8_t nest;           /* marked sections open */
    uint8_t deferred;       /* an NMI found one open */
    uint8_t in_nmi;         /* perfmon's NMI handling runs */
    uint8_t in_deferred;    /* perfmon_nmi_run_deferred runs: a section
                               closed inside it leaves the deferred work
                               to its loop (no recursion on the stack) */
    uint8_t throttle_arm;   /* the throttle timer is to be armed by the
                               maskable vector (an NMI cannot: the timer
                               module takes a lock) */
    struct perfmon_intr_ctx ctx;    /* where the first deferred NMI landed,
                                       its fp naming chain */
    struct perfmon_chain chain;     /* the call chain there */
};

extern struct perfmon_nmi_cpu perfmon_nmi_cpu;

/*
 * The calling CPU's count and flag. Compiler barriers, each one
 * instruction. Local.
 */
static inline unsigned int
perfmon_nmi_nest(void)
{
    return cpu_local_read8(perfmon_nmi_cpu.nest);
}

static inline void
perfmon_nmi_set_nest(uint8_t nest)
{
    cpu_local_write8(perfmon_nmi_cpu.nest, nest);
}

static inline bool
perfmon_nmi_deferred(void)
{
    return cpu_local_read8(perfmon_nmi_cpu.deferred) != 0;
}

static inline void
perfmon_nmi_set_deferred(bool deferred)
{
    cpu_local_write8(perfmon_nmi_cpu.deferred, deferred);
}

/*
 * Run the overflow handling that NMIs deferred while the section that
 * just ended was open. Local, interrupts disabled.
 */
void perfmon_nmi_run_deferred(void);

/*
 * Open a marked section: until the matching perfmon_nmi_leave, an NMI on
 * this CPU leaves perfmon's state alone. Sections nest. Local, interrupts
 * disabled: asserted not here, on every hot path, but at the entries of
 * the paths that open a section (or lexically true: the opener disabled
 * them just before).
 */
static inline void
perfmon_nmi_enter(void)
{
    /* A compiler barrier too: the section's accesses stay after it (on
       the same CPU only the compiler could move them). */
    cpu_local_inc8(perfmon_nmi_cpu.nest);
}

/*
 * Close a marked section; the outermost one runs the handling NMIs
 * deferred. The count is lowered before the flag is tested: an NMI
 * before the decrement has set the flag, one after it does its own work.
 * Local, interrupts disabled (asserted as for perfmon_nmi_enter, and by
 * perfmon_nmi_run_deferred).
 */
static inline void
perfmon_nmi_leave(void)
{
    cpu_local_dec8(perfmon_nmi_cpu.nest);

    if (unlikely(perfmon_nmi_deferred()) && perfmon_nmi_nest() == 0) {
        perfmon_nmi_run_deferred();
    }
}

/*
 * Capture the call chain at ctx into chain, and make *capturedp a
 * context that names it (PERFMON_CTX_CHAIN): a sample taken later, when
 * the frames may be gone, copies the chain. ctx may name a captured
 * chain itself. Local, interrupts disabled; NMI-safe (reads the stack).
 */
void perfmon_sample_chain_capture(struct perfmon_chain *chain,
                                  const struct perfmon_intr_ctx *ctx,
                                  struct perfmon_intr_ctx *capturedp);

/*
 * Copy ctx into *copyp and, when it names a captured chain, that chain
 * into chain, *copyp naming the copy: the original may be captured anew
 * (the next deferral) while samples use the copy. Local, interrupts
 * disabled.
 */
void perfmon_sample_chain_copy(struct perfmon_chain *chain,
                               const struct perfmon_intr_ctx *ctx,
                               struct perfmon_intr_ctx *copyp);

/*
 * Leave an overflow's handling to the end of the outermost marked section
 * under way, as an NMI that lands in it does: the device keeps the
 * overflow pending, ctx is where it came. Only the first deferral's place
 * is kept (the section's end reads it before it clears the flag), with
 * its call chain captured now: by the section's end the frames may be
 * gone. Local, interrupts disabled (asserted by
 * perfmon_sample_chain_capture), in a marked section.
 */
static inline void
perfmon_nmi_defer(const struct perfmon_intr_ctx *ctx)
{
    struct perfmon_nmi_cpu *nmi = cpu_local_ptr(perfmon_nmi_cpu);

    if (perfmon_nmi_deferred()) {
        return;
    }

    /*
     * The flag first: an NMI that lands in the capture (from a maskable
     * deferral) then finds it set and leaves the place alone; nothing
     * reads the place before this section's end.
     */
    perfmon_nmi_set_deferred(true);
    barrier();
    perfmon_sample_chain_capture(&nmi->chain, ctx, &nmi->ctx);
}

/*
 * Whether perfmon's NMI handling runs on this CPU: code it calls that
 * must not run in an NMI (it takes a lock, or updates state that the
 * interrupted code may be updating) leaves its work to later. Local.
 */
static inline bool
perfmon_nmi_active(void)
{
    return READ_ONCE(cpu_local_ptr(perfmon_nmi_cpu)->in_nmi) != 0;
}

/*
 * Whether overflow interrupts are delivered as NMIs (perfmon.pmi, read
 * once). Devices that can deliver them either way ask at setup. Any
 * context.
 */
bool perfmon_nmi_enabled(void);

/*
 * The NMI: registered with the arch at setup (cpu_nmi_register) in NMI
 * mode only, and called on every NMI with where it landed. NMI context:
 * takes no lock, waits for no other CPU.
 */
void perfmon_nmi_intr(const struct perfmon_intr_ctx *ctx);

/*
 * A test's hook run by perfmon_nmi_intr on every NMI, under the same rule
 * as the overflow handling (deferred while a section is open), or NULL.
 * Set by in-kernel tests only, with a release store (the hook's own data
 * set up before it), which the NMI's acquire load pairs with.
 */
extern void (*perfmon_nmi_test_hook)(const struct perfmon_intr_ctx *ctx);

#endif /* KERN_PERFMON_NMI_H */
