/*
 * Exception and interrupt entry. Every vector has a stub that pushes a
 * dummy error code where the CPU pushes none (Intel SDM vol. 3A, table 6-1
 * lists which do), then the vector number.
 */
#include <machine/trap.h>

    .text

.macro TRAP_STUB vector
    .balign 16
trap_stub_\vector:
    .if (\vector == 8 || (\vector >= 10 && \vector <= 14) || \vector == 17 \
         || \vector == 21 || \vector == 29 || \vector == 30)
    .else
    pushq $0
    .endif
    pushq $\vector
    jmp trap_common
.endm

.macro TRAP_ENTRY vector
    .quad trap_stub_\vector
.endm

    .altmacro
.set vector, 0
.rept TRAP_NR_VECTORS
    TRAP_STUB %vector
    .set vector, vector + 1
.endr

trap_common:
    pushq %rax
    pushq %rbx
    pushq %rcx
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rbp
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    cld
    movq %rsp, %rdi

    /*
     * Link a frame record for the interrupted code so that backtraces go
     * through it: return address = interrupted RIP, saved RBP.
     */
    pushq TRAP_FRAME_RIP(%rdi)
    pushq %rbp
    movq %rsp, %rbp
    call trap_handle
    addq $16, %rsp

    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rbp
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rbx
    popq %rax
    addq $16, %rsp
    iretq

    .section .rodata
    .balign 8
    .globl trap_stubs
trap_stubs:
.set vector, 0
.rept TRAP_NR_VECTORS
    TRAP_ENTRY %vector
    .set vector, vector + 1
.endr
