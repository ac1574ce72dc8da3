/*
 * Initial thread contexts, laid out for tcb_switch.
 */
#include <stdint.h>

#include <machine/tcb.h>

void tcb_start(void);

void
tcb_init(struct tcb *tcb, void *stack_top, void (*entry)(void))
{
    uintptr_t *sp = (uintptr_t *)((uintptr_t)stack_top & ~(uintptr_t)15);

    /*
     * tcb_switch pops six registers then returns: r15, r14, r13, r12 (the
     * entry), rbx, rbp, then the return address tcb_start, which finds
     * the stack 16-byte aligned and pushes a terminal frame record.
     */
    *--sp = (uintptr_t)tcb_start;
    *--sp = 0;                      /* rbp */
    *--sp = 0;                      /* rbx */
    *--sp = (uintptr_t)entry;       /* r12 */
    *--sp = 0;                      /* r13 */
    *--sp = 0;                      /* r14 */
    *--sp = 0;                      /* r15 */
    tcb->rsp = (uintptr_t)sp;
}
