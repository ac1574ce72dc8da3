/*
 * perfmon's interface to PMU drivers: a driver describes its device
 * (struct perfmon_dev, struct perfmon_dev_ops) and registers it, then
 * reports its counters' overflows. What perfmon keeps of a device is its
 * own (struct perfmon_dev_state, kern/perfmon/perfmon_slot_i.h): no driver reads it.
 * The event definitions a driver translates (generic ids, flags) are the
 * clients' header's, kern/perfmon.h.
 */
#ifndef KERN_PERFMON_DEV_H
#define KERN_PERFMON_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/perfmon.h>
#include <kern/perfmon_types.h>

struct perfmon_dev_state;

/* struct perfmon_intr_ctx: kern/perfmon_types.h. */

/*
 * Operations of a PMU device. "Local" operations run on the CPU whose
 * counter they touch, with interrupts disabled; the others in thread
 * context, under perfmon's global lock for the device.
 */
struct perfmon_dev_ops {
    /*
     * Turn an event into the device's configuration word (what identifies
     * a raw event: two events with equal words share a slot). Return 0,
     * EINVAL for a raw code with reserved or unsupported bits, ENODEV for
     * an event this device cannot count. Must not touch the hardware.
     */
    int (*translate)(uint64_t *configp, uint64_t id, unsigned int flags);

    /*
     * Reserve a hardware counter for config and store its id and width in
     * bits. Return 0 or EAGAIN (none of the counters that can count
     * config is free). Called with perfmon's lock of the device held and
     * interrupts disabled (multiplexing moves counters between raw
     * events from its rotation thread); only bookkeeping, no hardware
     * access: which raw event a counter serves on a CPU is perfmon's.
     * The driver alone knows which counters can count config (events
     * some models count on some counters only): the counter it returns
     * must count config, and perfmon's schedule takes no counter for a
     * raw event but through this call, so a refusal only leaves the raw
     * event waiting for its turn.
     */
    int (*alloc)(unsigned int *counterp, unsigned int *widthp,
                 uint64_t config);

    /* Release a counter reserved by alloc. As alloc. */
    void (*free)(unsigned int counter);

    /*
     * Local: program and enable the counter, with no overflow pending
     * (an overflow from an earlier use must not be reported), and return
     * the raw value it was programmed with. perfmon counts from that
     * value, not from one read afterwards: a running counter may have
     * advanced, even wrapped, by the time it is read.
     */
    uint64_t (*start)(unsigned int counter, uint64_t config);

    /* Local: disable the counter and forget a pending overflow. */
    void (*stop)(unsigned int counter);

    /* Local: the counter's raw value. */
    uint64_t (*read)(unsigned int counter);

    /*
     * Local, needed when the device sets overflow_intr: of the counters
     * whose ids are set in ids (bit counter), clear the overflows that
     * their interrupt has not reported yet (so the interrupt will not
     * report them) and return their bits; a driver may leave to the
     * interrupt the bit of a counter that counts since its last preset
     * (Intel, AMD PerfMonV2: the interrupt believes it only once the
     * counter's top bit is clear), as perfmon's read sees such a wrap as
     * a decrease of the preset value. perfmon calls it before it reads
     * counters to bring them up to date with interrupts disabled, once
     * per batch (a poll, a slot stopping or losing its counter), but not
     * for a sampler's counter handed over by a context switch on a
     * device with preset_ends_overflows, so a wrap whose
     * interrupt is held back by those disabled interrupts is counted
     * there, and not lost when the counter stops or credited to the next
     * thread. Counter ids of such a device are below 64.
     */
    uint64_t (*overflow_consume)(uint64_t ids);

    /*
     * Local, needed when the device sets overflow_intr: handle the
     * overflow interrupt, calling perfmon_sample_report_overflow() with ctx and
     * the counter's id for each counter that overflowed.
     */
    void (*handle_overflow_intr)(const struct perfmon_intr_ctx *ctx);

    /*
     * Local, needed for sampling (with max_period): make the running
     * counter overflow after n more events, 1 <= n <= max_period (raw
     * value 2^width - n), and return the raw value written. Events
     * between perfmon's last read and the write are not counted, and an
     * overflow among them is discarded: neither the interrupt nor
     * overflow_consume may report it afterwards (it would be taken as a
     * wrap of the preset value, 2^width too many). perfmon calls it from
     * the overflow interrupt (the report) and outside it: when a slot is
     * armed (a thread loads, a CPU event attaches, a refresh), after an
     * update that consumed a pending overflow, at the end of throttling;
     * with the counter counting, or inside a batch, where a counter
     * started in it counts only from batch_end.
     */
    uint64_t (*preset)(unsigned int counter, uint64_t n);

    /*
     * Optional, for a device that samples: the least period the device
     * samples config every period events at (a shorter preset would not
     * interrupt reliably, or an erratum of the model). perfmon refuses a
     * fixed period below it (attach, or a new period of an attached
     * event) and keeps a frequency sampler's periods at or above it: the
     * first one and every estimate are raised to it, and each sample
     * record carries the period that was used. Without it the least
     * period is 1. Any context, no hardware access.
     */
    uint64_t (*min_period)(uint64_t config);

    /*
     * Local, optional (both or neither): bracket the starts and stops of
     * one context switch on this CPU, so that the driver can write what
     * they share (a global enable register) once, at batch_end, instead
     * of once per counter. Inside a batch a started counter may only
     * count from batch_end on and a stopped one until then; neither is
     * read again before batch_end (perfmon counts from start's value and
     * has read a counter for the last time before stopping it).
     */
    void (*batch_begin)(void);
    void (*batch_end)(void);
};

/*
 * A PMU device: what the driver sets, and a pointer to perfmon's state of
 * the device, which perfmon sets at registration and nobody else reads
 * (its structure is perfmon's own, in kern/perfmon/perfmon_slot_i.h).
 */
struct perfmon_dev {
    const char *name;
    const struct perfmon_dev_ops *ops;
    unsigned int nr_counters;       /* counters, at most PERFMON_MAX_COUNTERS */
    unsigned int min_width;     /* narrowest counter, for the poll period */
    bool sw;                    /* serves PERFMON_EF_SW events */
    bool overflow_intr;         /* overflows interrupt; else perfmon polls */
    bool nmi;                   /* with overflow_intr: the interrupt is an
                                   NMI (perfmon_nmi_intr runs the handler),
                                   not a vector of its own */
    uint64_t max_rate;          /* polled: most events a counter counts
                                   per clock tick */
    uint64_t max_period;        /* longest preset (ops->preset); 0: the
                                   device cannot sample */
    bool preset_ends_overflows; /* ops->preset also discards an overflow
                                   from before perfmon's last read whose
                                   interrupt is still to come: a switch
                                   passing a counter from one thread's
                                   sampler to another's then reads and
                                   presets it without consuming first */
    uint64_t fw_counters;           /* counter ids (bit n: id n) that
                                   firmware held at boot: the driver
                                   never allocates them (perf list shows
                                   them); not counted in nr_counters */
    struct perfmon_bank *bank;  /* optional: counters in per-CPU memory:
                                   a __percpu variable (perfmon reaches
                                   each CPU's copy), whose counter ids
                                   are below nr_counters; see
                                   kern/perfmon_types.h */

    struct perfmon_dev_state *state;    /* perfmon's */
};

/*
 * Register a device. Boot only, after perfmon_setup, thread context.
 *
 * A device without an overflow interrupt is polled: every counter is read
 * at least twice per wrap time at its max_rate, i.e. every
 * floor(2^min_width / max_rate / 2) ticks (no poll for 64-bit counters).
 * Its counts are exact as long as no counter counts faster than max_rate.
 *
 * Return 0, EINVAL for a device with no or too many slots, a bad width, a
 * polled device whose max_rate is 0 or so high that a counter could wrap
 * within two ticks (no poll period is safe), a
 * missing operation (handle_overflow_intr and overflow_consume are needed
 * with overflow_intr; batch_begin comes with batch_end), a device with
 * preset_ends_overflows whose max_period exceeds 2^(min_width - 1)
 * (a switch that does not consume tells a wrap by a decrease of a preset
 * counter, which needs the preset above half the range); EBUSY for a
 * device registered already, a second
 * software device, or no room left (PERFMON_MAX_DEVS). Several hardware
 * devices may be registered: a hardware event goes to the first of them
 * whose translate accepts it.
 */
int perfmon_dev_register(struct perfmon_dev *dev);

/*
 * Report that counter counter of dev wrapped once on the calling CPU since
 * its previous report: perfmon brings the 64-bit value of the slot that
 * holds the counter on this CPU up to date, counting the wrap even when
 * the raw value is back above where it last read it, and takes the samples due, at ctx (never NULL; ip and fp 0
 * when unknown), presetting the counter for the next. A driver calls it
 * from its overflow interrupt handler, once per wrap. Local, interrupts
 * disabled.
 */
void perfmon_sample_report_overflow(struct perfmon_dev *dev,
                                    unsigned int counter,
                                    const struct perfmon_intr_ctx *ctx);

/*
 * The first registered hardware (sw false) or software device, or NULL.
 * Any context.
 */
struct perfmon_dev *perfmon_dev_get(bool sw);

/*
 * The device that counts an event (id and flags as perfmon_event_init
 * takes them): the first registered device of its kind (software or
 * hardware) whose translate accepts it, and the configuration word it
 * gives. Return 0, ENODEV (no device of its kind) or the first device's
 * translate error when none accepts it. Any context.
 */
int perfmon_dev_find(uint64_t id, unsigned int flags,
                     struct perfmon_dev **devp, uint64_t *configp);

#endif /* KERN_PERFMON_DEV_H */
