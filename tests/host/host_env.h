/*
 * A minimal single-CPU kernel environment for compiling perfmon and the
 * Intel PMU driver on the host: CPU 0 only, an interrupt flag, spin locks
 * that check their use, timers on a model clock, direct cross-CPU calls,
 * system counters, trap handler registration, logging and panic. Tests
 * drive it: they advance time, deliver traps and switch threads in and
 * out as the scheduler would.
 */
#ifndef HOST_ENV_H
#define HOST_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/thread.h>
#include <kern/timer.h>

#define HOST_ENV_CPU_FREQ       1000000000ULL   /* cpu_get_freq(): 1 GHz */
#define HOST_ENV_START_TIME     1000            /* clock_get_time() at start */

/*
 * Advance the clock by ticks, running each timer that falls due in
 * expiry order, with interrupts disabled, as the tick interrupt does.
 */
void host_env_advance(uint64_t ticks);

/*
 * Hold the TSC: from now on cpu_get_tsc() returns the same value until
 * the test moves it, with host_env_tsc_advance() or, a tick per 1000
 * cycles, host_env_advance(), so that times computed from it are exact.
 * Before, it runs on its own (the clock's ticks times 1000, plus one per
 * read, so that no two reads are equal). Held for the rest of the run.
 */
void host_env_tsc_hold(void);
void host_env_tsc_advance(uint64_t cycles);

/* Pending timers and the earliest expiry (UINT64_MAX when none). */
unsigned int host_env_nr_timers_pending(void);
uint64_t host_env_next_expiry(void);

/*
 * Take an interrupt or exception: call the handler registered for vector
 * with interrupts disabled. Panic when there is none.
 */
void host_env_raise_trap(unsigned int vector);

/*
 * Whether the PMI is an NMI (the PMU model's LVT entry in NMI delivery
 * mode): TRAP_PMI then goes to the NMI handler (cpu_nmi_register), with
 * no EOI. A weak default says no; the PMU models define their own.
 */
bool host_env_pmi_nmi(void);

/* The interrupted context the next raised PMI reports (default 0, 0). */
void host_env_set_intr_ctx(uintptr_t ip, uintptr_t fp);

/* A thread off every CPU, with one reference (its creator's). */
void host_env_thread_init(struct thread *thread);

/*
 * Context switches between a test thread and the CPU's idle thread: the
 * unload of the one leaving and the load of the next, with interrupts
 * disabled, as the scheduler does. Panics on a switch the CPU could not
 * make (switching in while a test thread runs, out one that does not).
 */
void host_env_switch_in(struct thread *thread);
void host_env_switch_out(struct thread *thread);

/*
 * A context switch from the test thread running to another (next, off
 * the CPU), as between two threads of the scheduler. Panics when no test
 * thread runs, or next is the one running.
 */
void host_env_switch_to(struct thread *next);

/* Lines logged (log_msg) since the start. */
unsigned int host_env_nr_log_lines(void);

/* Of the last 64 lines logged, those that contain text. */
unsigned int host_env_nr_log_lines_with(const char *text);

/* Spin locks held now; nonzero outside kernel code is a leak. */
unsigned int host_env_nr_locks_held(void);

/* After a failed test: interrupts enabled again. */
void host_env_recover(void);

#endif /* HOST_ENV_H */
