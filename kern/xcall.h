/*
 * Cross-CPU calls: run a function on another processor through an IPI and
 * wait for it to return.
 */
#ifndef KERN_XCALL_H
#define KERN_XCALL_H

#include <kern/init.h>

typedef void (*xcall_fn_t)(void *arg);

/*
 * Run fn(arg) on cpu with interrupts disabled there, and return once it
 * has returned. On the calling CPU itself it runs directly (interrupts
 * disabled around it). Return 0, or EINVAL when cpu is not an online CPU.
 * Thread context with interrupts enabled (the caller services other CPUs'
 * calls while it waits); fn must not call xcall itself.
 */
int xcall_call(unsigned int cpu, xcall_fn_t fn, void *arg);

/*
 * Run fn(arg) once on every online CPU, one after the other, the calling
 * CPU included. Same context rules as xcall_call.
 */
void xcall_broadcast(xcall_fn_t fn, void *arg);

/*
 * The cross-CPU call interrupt: run the call pending for this CPU, if
 * any. Called by the arch's handler after its EOI. Interrupt context.
 */
void xcall_intr(void);

INIT_OP_DECLARE(xcall_setup);

#endif /* KERN_XCALL_H */
