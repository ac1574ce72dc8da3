/*
 * Thread control block: the machine context of a thread that is not
 * running, and the context switch.
 */
#ifndef X86_TCB_H
#define X86_TCB_H

#include <stdint.h>

struct tcb {
    uintptr_t rsp;      /* callee-saved registers are on the stack */
};

/*
 * Prepare a context that, when switched to, calls entry() with a clean
 * frame chain on the stack ending at stack_top. entry must not return.
 */
void tcb_init(struct tcb *tcb, void *stack_top, void (*entry)(void));

/*
 * Save the calling context in prev and resume next. Returns when another
 * CPU or this one switches back to prev. Interrupts disabled.
 */
void tcb_switch(struct tcb *prev, struct tcb *next);

#endif /* X86_TCB_H */
