/*
 * perfmon's core, its private overview (kern/perfmon/ only; drivers,
 * clients and tests include the audience headers in kern/): the files and
 * their order, the locks and the contexts, and what every tier shares.
 * Each tier's structures are in its own header: perfmon_slot_i.h (a
 * device's slots and schedule), perfmon_cpu_i.h (the per-CPU tier and its
 * sampling), perfmon_td_i.h (the per-thread tier and snapshots).
 *
 * Files, from the top floor down; a file calls only files below it:
 *
 *   perfmon_group.c   groups (the API of kern/perfmon.h)
 *   perfmon.c         events, their sampling settings, setup
 *   perfmon_family.c  inherited events' families: members join at thread
 *                     creation, fold their shares at exit
 *   perfmon_snap.c    a target's events at one instant
 *   perfmon_dev.c     the device registry
 *   perfmon_slot.c    slot allocation (the global tier)
 *   perfmon_mux.c     the schedule: which slot holds which counter
 *   perfmon_td.c      the per-thread tier, the context switch
 *   perfmon_cpu.c     the per-CPU tier, its timers and interrupt entries
 *   perfmon_nmi.c     the NMI, and its handling deferred to a section end
 *   perfmon_sample.c  overflow reports and samples of a CPU's slot, call
 *                     chains
 *   perfmon_freq.c    frequency mode's estimate
 *   perfmon_session.c the sample rings
 *
 * The one call against that order is the end of a marked section
 * (perfmon_nmi_leave, any tier) running an NMI's deferred work: an
 * interrupt delivered late, which reaches the drivers' handlers through
 * their ops and samples through perfmon_sample_report_overflow.
 *
 * Locks, outermost first (an arrow: taken while holding the one above):
 *
 *   run queue lock (scheduler)
 *     -> interrupts off
 *        -> next thread's td lock      perfmon_td_switch
 *   thread's td lock                   td ops (perfmon_td_run)
 *     -> family lock                   inheritance (perfmon_family.c);
 *                                      a creation takes the new thread's
 *                                      td lock, then its creator's
 *   device lock (perfmon_dev_state)    slot allocation and the schedule,
 *                                      interrupts off, thread context
 *   perfmon_mux_lock -> run queue      waking the rotation thread, after
 *                                      the device lock is released
 *   perfmon_devs_lock                  registration only; a leaf
 *
 * A td lock and a device lock are never held together: a slot is
 * allocated before and released after the per-thread operation. Nothing
 * inside a schedule write takes a run queue lock, since a CPU may wait
 * for the write to end while it holds its own (a context switch).
 *
 * Contexts (each asserted at the entry of the functions it binds, with
 * assert_intr_disabled() and spinlock_assert_held()):
 * - The per-CPU tier of a CPU is touched only on that CPU with interrupts
 *   disabled: the switch, the overflow interrupt, the timers, and
 *   cross-CPU calls for CPU events and running threads. Each such
 *   maskable path is a marked section (kern/perfmon_nmi.h): an NMI that
 *   lands in one leaves the tier alone and the section's end does its
 *   work, so the tier has one writer at a time even in NMI mode.
 * - A frequency sampler's estimate (its event's freq_* fields and its
 *   period) is written only where the sampler is live, interrupts
 *   disabled, in a marked section, never by the overflow path, which
 *   reads the period once per period.
 * - A loaded thread's per-thread state is written only on its CPU with
 *   interrupts disabled (the switch, or a cross-CPU call that checks
 *   loaded_cpu again under the td lock); the switch updates prev without
 *   its lock and publishes prev->loaded_cpu = NONE last, with release
 *   order, which the ops' acquire load of loaded_cpu pairs with. An
 *   unloaded thread's state changes under its td lock, which the switch
 *   takes for next.
 * - A slot's width and config do not change while it has references, so
 *   the tiers read them without the device lock. Which counter a slot
 *   holds is written under the device lock inside a sequence count
 *   (sched_seq); each CPU keeps a copy and follows the schedule as a
 *   whole where no other update of its tier is under way
 *   (perfmon_cpu_sched_check). A change reaches by a cross-CPU call only
 *   the CPUs that use one of its slots (users); the others follow when
 *   they next take one of them into use (perfmon_cpu_slot_get).
 */
#ifndef KERN_PERFMON_PERFMON_I_H
#define KERN_PERFMON_PERFMON_I_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_nmi.h>
#include <kern/perfmon_test.h>
#include <kern/perfmon_types.h>

#define PERFMON_EVENT_MAGIC     0x70666d6eU

#define PERFMON_EVENT_INIT      1
#define PERFMON_EVENT_THREAD    2   /* attached to a thread */
#define PERFMON_EVENT_CPU       3   /* attached to a CPU */
#define PERFMON_EVENT_DETACHED  4
#define PERFMON_EVENT_DISABLED  5   /* attached (thread or CPU), disabled:
                                       a state of its own, so that reads
                                       of enabled events test nothing */
#define PERFMON_EVENT_CLOCK     6   /* a clock attached (thread or CPU),
                                       enabled: its own too, off the
                                       counting events' read paths */
#define PERFMON_EVENT_FAMILY    7   /* attached to a thread, inherited
                                       (event->family): reads sum the
                                       family, off the thread's fast path */

/* No slot: in a CPU's counter-to-slot map. */
#define PERFMON_SLOT_NONE               0xff

/*
 * Where the caller of the function using it is: for samples taken outside
 * an overflow interrupt (a context switch, a read), at the perfmon call.
 */
#define PERFMON_CTX_CALLER()                                            \
    ((struct perfmon_intr_ctx){                                         \
        .ip = (uintptr_t)__builtin_return_address(0),                   \
        .fp = *(const uintptr_t *)__builtin_frame_address(0),           \
    })

/* An attached event's count, given its tier value at a snapshot. */
static inline uint64_t
perfmon_event_count_at(const struct perfmon_event *event, uint64_t value)
{
    return event->disabled ? event->frozen : value - event->start;
}

/*
 * Whether an event was initialized and is in one of its states: the
 * magic alone does not say so (memory that holds it by chance, or an
 * event written over by its owner).
 */
static inline bool
perfmon_event_valid(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && event->state >= PERFMON_EVENT_INIT
           && event->state <= PERFMON_EVENT_FAMILY;
}

/* Whether an event is attached (perfmon_event_attached, for the core). */
static inline bool
perfmon_event_is_attached(const struct perfmon_event *event)
{
    return event != NULL && event->magic == PERFMON_EVENT_MAGIC
           && (event->state == PERFMON_EVENT_THREAD
               || event->state == PERFMON_EVENT_CPU
               || event->state == PERFMON_EVENT_DISABLED
               || event->state == PERFMON_EVENT_CLOCK
               || event->state == PERFMON_EVENT_FAMILY);
}

/*
 * Whether an event is a clock (PERFMON_EF_CLOCK): no device, no slot, its
 * count and times from the TSC and its thread's run time alone.
 */
static inline bool
perfmon_event_is_clock(const struct perfmon_event *event)
{
    return (event->flags & PERFMON_EF_CLOCK) != 0;
}

/*
 * floor(a * b / c) for c > 0, UINT64_MAX when it does not fit. A long
 * division when the product needs more than 64 bits (the kernel has no
 * 128-bit division routine); not on a hot path.
 */
static inline uint64_t
perfmon_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    unsigned __int128 product = (unsigned __int128)a * b;
    uint64_t rem = (uint64_t)(product >> 64);
    uint64_t low = (uint64_t)product;
    uint64_t quotient = 0;

    if (rem == 0) {
        return low / c;
    }

    if (rem >= c) {
        return UINT64_MAX;      /* the quotient needs more than 64 bits */
    }

    /* rem < c throughout; carry is its 65th bit after the shift. */
    for (int i = 63; i >= 0; i--) {
        bool carry = (rem >> 63) != 0;

        rem = (rem << 1) | ((low >> i) & 1);
        quotient <<= 1;

        if (carry || rem >= c) {
            rem -= c;
            quotient |= 1;
        }
    }

    return quotient;
}

/* Each file's part of setup (perfmon_setup, perfmon.c, calls them). */
int perfmon_cpu_setup(void);
void perfmon_nmi_setup(void);       /* the NMI entry, in NMI mode only */
int perfmon_sample_setup(void);
int perfmon_mux_setup(void);

#endif /* KERN_PERFMON_PERFMON_I_H */
