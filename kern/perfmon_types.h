/*
 * perfmon state embedded in other structures (struct thread), split from
 * kern/perfmon.h because kern/thread.h needs it and perfmon.h needs
 * struct thread; and the plain types that code below perfmon hands it.
 */
#ifndef KERN_PERFMON_TYPES_H
#define KERN_PERFMON_TYPES_H

#include <stdint.h>

#include <kern/list.h>
#include <kern/spinlock.h>

/*
 * Registered devices at most: the software PMU and one hardware PMU. The
 * registry takes several hardware devices; raise this for a second one
 * (each device costs every thread and every CPU an array of slots).
 */
#define PERFMON_MAX_DEVS    2
#define PERFMON_MAX_COUNTERS    16      /* hardware counters per device */

/*
 * Slots per device: one per distinct raw event attached. More slots than
 * counters is multiplexing: the slots take turns on the counters.
 */
#define PERFMON_MAX_SLOTS   32

struct perfmon_event;

/* Per-thread tier: one entry per (device, slot). */
struct perfmon_td_slot {
    unsigned int nr_refs;   /* events of this thread using the slot */
    uint64_t cpu_start;     /* per-CPU value when the slot was loaded */
    uint64_t value;         /* the thread's total, up to the last unload */
    uint64_t sample_left;   /* sampling: events to the next sample, kept
                               while the thread is off-CPU */
};

/*
 * Per-thread state. The lock serializes the scheduler's load/unload on the
 * thread's CPU against event operations from any CPU. While loaded_cpu
 * names a CPU, every slot in use is loaded there.
 */
struct perfmon_td {
    struct spinlock lock;
    unsigned int loaded_cpu;            /* PERFMON_CPU_NONE when off-CPU */
    uint32_t used[PERFMON_MAX_DEVS];    /* bit i: slot i has references */
    struct perfmon_td_slot slots[PERFMON_MAX_DEVS][PERFMON_MAX_SLOTS];

    /*
     * Per slot, the TSC time the thread ran with the slot holding no
     * counter (multiplexed out), up to the last switch or rotation: apart
     * from slots, which the switch's per-slot loop indexes by a shift.
     */
    uint64_t off[PERFMON_MAX_DEVS][PERFMON_MAX_SLOTS];

    /*
     * Sampling: the period a kept sample_left ends (the event's period may
     * have changed since it began), apart from slots for the same reason.
     */
    uint64_t sample_periods[PERFMON_MAX_DEVS][PERFMON_MAX_SLOTS];

    /*
     * Sampling: the thread's sampling event on each slot it samples, which
     * the slot's counter serves while the thread is loaded (threads share
     * a sampling slot; each loads its own sampler), under the td lock like
     * slots; and the same slots as a mask per device, under the device's
     * lock, where allocation tells whether the thread may join a slot.
     */
    struct perfmon_event *samplers[PERFMON_MAX_DEVS][PERFMON_MAX_SLOTS];
    uint32_t sampler_slots[PERFMON_MAX_DEVS];

    /*
     * Inheritance: the thread's records in the families of inherited
     * events (kern/perfmon/perfmon_family.c), its own (as a family's
     * root) and its ancestors', under the td lock. A thread it creates
     * joins each of them.
     */
    struct list members;
};

#define PERFMON_CPU_NONE (~0U)

/*
 * Counters in memory, a capability a PMU device may declare (its bank, a
 * __percpu variable of this type): counters that are words of per-CPU
 * memory, which perfmon reads inline on its hot paths rather than through
 * the driver's read, and reloads for sampling with a store rather than
 * its preset. values[id] is counter id's raw value on the CPU, except for
 * the counters whose bit is set in hooked: their read needs the driver
 * (more than a load). values[nr_counters] always reads 0: perfmon points a
 * slot that holds no counter at it, so that it reads as a counter that
 * never moves. pending holds the counters whose overflow the device's
 * interrupt has yet to report; a reload by store clears the counter's
 * bit, as a driver's preset discards a pending overflow: perfmon reloads
 * only a counter it has just brought up to date, so that overflow is
 * already counted, and reported against the reloaded value it would add
 * a whole 2^width. The software PMU (kern/pmu_soft.h) is such a device.
 */
struct perfmon_bank {
    uint64_t values[PERFMON_MAX_COUNTERS + 1];
    uint32_t hooked;
    uint32_t pending;
};

/*
 * Where an overflow interrupt (or a software event's count) interrupted
 * the kernel: instruction pointer and frame pointer (the base of the
 * frame of the function holding ip, for call chains; 0 if unknown). Here
 * so that the software PMU's counter bank hands it over as it is.
 */
struct perfmon_intr_ctx {
    uintptr_t ip;
    uintptr_t fp;
};

/*
 * A call chain captured where an overflow happened, for a sample taken
 * later, once the frames it was walked from may be gone (an NMI deferred
 * to a marked section's end, a software PMU wrap reported by its NMI).
 * A context's fp with bit 0 set (PERFMON_CTX_CHAIN; frame pointers are
 * 8-aligned) is the address of one: the sample copies it rather than
 * walk the stack.
 */
#define PERFMON_CHAIN_MAX       26      /* PERFMON_MAX_FRAMES */
#define PERFMON_CTX_CHAIN       1UL

struct perfmon_chain {
    unsigned int nr;
    uint64_t frames[PERFMON_CHAIN_MAX];
};

#endif /* KERN_PERFMON_TYPES_H */
