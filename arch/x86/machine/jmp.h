/*
 * Non-local jumps for the test harness: jmp_save() returns 0, and a later
 * jmp_restore() from a deeper call on the same stack returns to it again
 * with a non-zero value.
 */
#ifndef X86_JMP_H
#define X86_JMP_H

struct jmp_buf {
    unsigned long rbx, rbp, r12, r13, r14, r15, rsp, rip;
};

int jmp_save(struct jmp_buf *buf) __attribute__((returns_twice));
void jmp_restore(struct jmp_buf *buf, int value) __attribute__((noreturn));

#endif /* X86_JMP_H */
