/*
 * The x86 PMU layer: what the Intel and AMD drivers (pmu_intel, pmu_amd)
 * share, so that each keeps only what differs (register numbers, event
 * tables, detection and vendor quirks).
 *
 * A driver describes itself in a struct pmu_x86_vendor and registers it
 * with pmu_x86_register, which registers its perfmon device. From then on
 * this layer owns:
 * - the per-CPU shadows of the control registers (struct pmu_x86_cpu),
 *   which the drivers write from and never read back;
 * - batching (pmu_x86_batch_begin, pmu_x86_batch_end), for a PMU whose
 *   start and stop only flip bits of a global control register;
 * - the overflow interrupt loop of a PMU with global control and status
 *   registers (pmu_x86_global_intr), and the per-CPU PMI statistics;
 * - the MSR probe a driver runs before trusting what CPUID promised.
 * What the tests may ask of a driver is apart, in pmu_x86_test.h.
 *
 * Only one x86 driver registers per boot (the first whose probe passes),
 * so the shadows and statistics exist once. Nothing here is called
 * through a pointer on a hot path: the shadows are inline, and the PMI
 * loop reads its register numbers from the registered vendor, which
 * costs loads, no MSR access.
 *
 * Both vendors lay out their event selects alike in the bits this layer
 * names (Intel SDM vol. 3B, figure 21-1; AMD APM vol. 2, figure 13-7).
 *
 * This file and pmu_x86.c are also compiled into the host tests, with the
 * drivers, against the register models (tests/host/).
 */
#ifndef X86_PMU_X86_H
#define X86_PMU_X86_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/perfmon.h>
#include <kern/percpu.h>
#include <kern/perfmon_dev.h>
#include <machine/cpu.h>

/* Event select bits at the same place on both vendors. */
#define PMU_X86_EVTSEL_USR          (1ULL << 16)
#define PMU_X86_EVTSEL_OS           (1ULL << 17)
#define PMU_X86_EVTSEL_EDGE         (1ULL << 18)
#define PMU_X86_EVTSEL_INT          (1ULL << 20)
#define PMU_X86_EVTSEL_EN           (1ULL << 22)
#define PMU_X86_EVTSEL_INV          (1ULL << 23)
#define PMU_X86_EVTSEL_CMASK        (0xffULL << 24)

/* Event selects a shadow holds: AMD's 16 (Intel has at most 8). */
#define PMU_X86_MAX_EVTSEL          16

/*
 * What this CPU's control registers hold or should hold, as the driver
 * wrote them:
 * - global_ctrl: the counters started and not stopped, bit for bit as in
 *   the global control register (Intel from version 2, AMD PerfMonV2);
 *   the enables the counters in use need;
 * - global_hw: what the global control register holds, when a batch
 *   defers its write (Intel);
 * - stopped: counters stopped since the last flush, whose overflow bits
 *   the flush clears once they no longer count (Intel);
 * - fixed_ctrl: IA32_FIXED_CTR_CTRL (Intel);
 * - evtsel: each general counter's event select;
 * - unguarded: counters preset while counting, whose status bit may be
 *   stale: it is believed only from a counter that wrapped since
 *   (pmu_x86_stale_drop);
 * - batch: between batch_begin and batch_end;
 * - pmi: the PMI handler runs.
 * Local: start, stop, preset, overflow_consume, the batch and the PMI run
 * with interrupts disabled.
 */
struct pmu_x86_cpu {
    uint64_t global_ctrl;
    uint64_t global_hw;
    uint64_t stopped;
    uint64_t fixed_ctrl;
    uint64_t evtsel[PMU_X86_MAX_EVTSEL];
    uint64_t unguarded;
    bool batch;
    bool pmi;
};

extern struct pmu_x86_cpu pmu_x86_cpu __percpu;

/*
 * What a driver tells the layer. The driver fills every field before
 * pmu_x86_register and changes none after.
 */
struct pmu_x86_vendor {
    struct perfmon_dev *dev;        /* name, ops and limits filled in */

    /* Global registers, for batching and the PMI loop where they exist. */
    uint32_t msr_global_ctrl;
    uint32_t msr_global_status;
    uint32_t msr_global_clear;      /* write 1 to clear a status bit */
    uint64_t counters;              /* status bits of the counters */
    uint64_t ack_mask;              /* status bits the PMI clears */

    /*
     * Local, interrupts disabled, with a global status: whether counter
     * id wrapped since its last preset, i.e. its top bit reads 0 (a
     * preset leaves it set: 2^width - n with n <= 2^(width - 1)). One
     * read of the counter.
     */
    bool (*wrapped)(unsigned int id);
};

/* The calling CPU's shadows. Local, interrupts disabled. */
static inline struct pmu_x86_cpu *
pmu_x86_cpu_local(void)
{
    assert_intr_disabled();

    return cpu_local_ptr(pmu_x86_cpu);
}

/* The USR and OS bits of an event select for perfmon's ring flags. */
static inline uint64_t
pmu_x86_ring_bits(unsigned int flags)
{
    return ((flags & PERFMON_EF_KERN) ? PMU_X86_EVTSEL_OS : 0)
           | ((flags & PERFMON_EF_USER) ? PMU_X86_EVTSEL_USR : 0);
}

/*
 * Check a raw code against the bits the driver allows, and that invert
 * comes with a counter mask (alone it means nothing). Return 0 or EINVAL.
 * Any context.
 */
int pmu_x86_raw_check(uint64_t code, uint64_t allowed);

/*
 * Write the global control register from the shadow when it differs,
 * then clear the overflow bits of the counters stopped since the last
 * flush: once they no longer count, so that an overflow of their last use
 * is not reported to the next one (the bit of a stopped counter stays
 * clear, so a start needs no acknowledgment). The register numbers are
 * the caller's constants. Local, interrupts disabled.
 */
static inline void
pmu_x86_global_flush(struct pmu_x86_cpu *cpu, uint32_t msr_ctrl,
                     uint32_t msr_clear)
{
    assert_intr_disabled();

    if (cpu->global_hw != cpu->global_ctrl) {
        cpu->global_hw = cpu->global_ctrl;
        cpu_set_msr(msr_ctrl, cpu->global_hw);
    }

    if (cpu->stopped != 0) {
        cpu_set_msr(msr_clear, cpu->stopped);
        cpu->stopped = 0;
    }
}

/*
 * Unguarded counters. A driver presets a counter that is counting (a
 * sampler's period, or on a switch the next thread's remainder of one)
 * with one write, and the counter goes on counting; an overflow may come
 * between perfmon's last read and the write, or be pending from before
 * that read (a switch from one thread's sampler to another's does not
 * consume the slot's overflows: it sees a wrap as a decrease of the
 * counter), and its status bit outlives the write, which does not clear
 * it. Reported, it would add 2^width to the new period. Stopping the
 * counter around the write and clearing the bit would cost three more
 * register writes; instead the driver sets the counter's bit in the
 * shadow's unguarded, and a status bit of an unguarded counter counts
 * only if the counter wrapped since its preset (its top bit clear), which
 * a stale one cannot show: from the preset, 2^width - n with n <=
 * 2^(width - 1), a wrap takes n events and leaves the top bit clear for
 * the next 2^(width - 1).
 *
 * Of the status bits in status (all seen set, and cleared, by the PMI
 * with counting off), drop the stale ones and return the others. The
 * unguarded counters found leave unguarded: their bit no longer predates
 * their preset. Local, interrupts disabled; out of line, called only
 * when status has unguarded bits.
 */
uint64_t pmu_x86_stale_drop(struct pmu_x86_cpu *cpu, uint64_t status);

/*
 * Take back the overflows of the counters in ids (bit n: counter n) that
 * the PMI has not reported yet: one read of the global status for them
 * all, and a clear of those found. Return them. The bits of unguarded
 * counters are left to the PMI, which tells a stale one from a wrap with
 * counting off: here the counter counts, and a wrap between its read and
 * the clear would have its bit cleared with the stale one. Nothing is
 * lost: the preset counter's value is in the top half until it wraps,
 * so perfmon's read that follows sees a wrap as a decrease, and its PMI,
 * still to come, then adds nothing (wrap_seen). The register numbers are
 * the caller's constants. Local, interrupts disabled.
 */
static inline uint64_t
pmu_x86_global_consume(uint64_t ids, uint32_t msr_status, uint32_t msr_clear)
{
    struct pmu_x86_cpu *cpu;
    uint64_t status;

    assert_intr_disabled();
    cpu = pmu_x86_cpu_local();
    status = cpu_get_msr(msr_status) & ids & ~cpu->unguarded;

    if (status != 0) {
        cpu_set_msr(msr_clear, status);
    }

    return status;
}

/*
 * perfmon's batch_begin and batch_end for a PMU with a global control
 * register: starts and stops in between change the shadow only, and
 * batch_end writes the register once (pmu_x86_global_flush). Local,
 * interrupts disabled.
 */
void pmu_x86_batch_begin(void);
void pmu_x86_batch_end(void);

/*
 * Report each counter of mask (bit n: counter id n) to perfmon as wrapped
 * once. Which slot a counter serves on this CPU is perfmon's to know
 * (with multiplexing this CPU may still follow an older schedule than the
 * driver's allocation describes), and it ignores counters serving none.
 * Local, interrupts disabled (the PMI).
 */
void pmu_x86_report(uint64_t mask, const struct perfmon_intr_ctx *ctx);

/*
 * Enter the PMI on this CPU: count it and set the shadow's pmi. The
 * handler clears pmi before it returns. Local, interrupts disabled.
 */
void pmu_x86_pmi_enter(struct pmu_x86_cpu *cpu);

/* Count a PMI that found no overflowed counter. Local, the PMI. */
void pmu_x86_pmi_spurious(void);

/*
 * The PMI of a PMU with global control and status registers, as perfmon's
 * handle_overflow_intr: stop counting, clear exactly the status bits seen
 * (of the vendor's ack_mask), report each overflowed counter once, and
 * loop while new bits appear; then unmask the LVT entry and count again
 * from the shadow. Local, interrupts disabled.
 */
void pmu_x86_global_intr(const struct perfmon_intr_ctx *ctx);

/*
 * Point this CPU's LVT performance counter entry at the PMI as perfmon
 * takes it: an NMI (perfmon_nmi_enabled, the default) or the PMI vector.
 * Processor-local, interrupts disabled.
 */
void pmu_x86_lvt_setup(void);

/*
 * On a CPU: PMIs taken, PMIs that found no overflowed counter, and PMIs
 * whose handler gave up on a status that would not clear (syscnts
 * <name>_pmis/<cpu>, <name>_spurious/<cpu>, <name>_pmi_giveup/<cpu>, with
 * the registered vendor's device name). Any context.
 */
uint64_t pmu_x86_nr_pmis(unsigned int cpu);
uint64_t pmu_x86_nr_spurious(unsigned int cpu);
uint64_t pmu_x86_nr_pmi_giveups(unsigned int cpu);

/* A write the probe makes and checks by reading it back. */
struct pmu_x86_probe_write {
    uint32_t msr;
    uint64_t value;
};

/*
 * Prove the registers before trusting them: a hypervisor may advertise a
 * PMU yet fault on its MSRs, or drop the writes. Through the exception-
 * safe accessors, make each write and read it back, in order; then, when
 * msr_status is not 0, read the global status and write 0 (clear
 * nothing) to msr_clear. Return 0, or EIO (an access faulted) or ENODEV
 * (a value did not stick) with the MSR in *msrp. Boot CPU, counting off.
 */
int pmu_x86_probe(const struct pmu_x86_probe_write *writes,
                  unsigned int nr_writes, uint32_t msr_status,
                  uint32_t msr_clear, uint32_t *msrp);

/*
 * Register the vendor's PMU: its PMI statistics (named after its device),
 * setup_local run on every CPU (it puts the PMU in a known, idle state,
 * starting from pmu_x86_cpu_reset), then its perfmon device, whose
 * max_rate this sets (see pmu_x86.c) and whose other fields the driver
 * has filled in. Return 0 or perfmon_dev_register's error, which is logged.
 * Boot only, thread context.
 */
int pmu_x86_register(const struct pmu_x86_vendor *vendor,
                     void (*setup_local)(void *arg));

/* Zero the calling CPU's shadows. Local (setup_local). */
void pmu_x86_cpu_reset(void);

#endif /* X86_PMU_X86_H */
