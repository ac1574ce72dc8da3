/*
 * Context switch: push the callee-saved registers of the System V AMD64
 * ABI, swap stack pointers, pop them back.
 */
    .text
    .globl tcb_switch
tcb_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq (%rsi), %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret

/*
 * First code of a new thread: tcb_init leaves the entry function in r12
 * and a zero frame pointer, so backtraces stop here.
 */
    .globl tcb_start
tcb_start:
    xorl %ebp, %ebp
    pushq $0
    pushq $0
    movq %rsp, %rbp
    callq *%r12
    ud2
