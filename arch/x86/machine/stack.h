/*
 * Frame-pointer stack walks (x86_64), for perfmon's call chains and the
 * panic backtrace.
 *
 * The kernel is built with -fno-omit-frame-pointer: every function's
 * prologue pushes the caller's RBP and points RBP at that word, so a frame
 * is two words, the caller's frame pointer then the return address into
 * the caller, and the frames chain from the innermost outwards (up the
 * stack, to higher addresses). A walk trusts nothing it reads: it stops at
 * the first frame outside what it was told is plausible, so that a corrupt
 * or foreign frame pointer ends the chain instead of faulting.
 */
#ifndef X86_STACK_H
#define X86_STACK_H

#include <stdbool.h>
#include <stdint.h>

/* A frame as the prologue lays it out, at the frame pointer. */
struct stack_frame {
    uintptr_t next;         /* the caller's frame pointer */
    uintptr_t ret;          /* the return address into the caller */
};

/*
 * Store in frames the return addresses of the callers of the function
 * whose frame is at fp, innermost first, at most max; return how many.
 * Only frames that lie wholly within the stack [base, base + size) are
 * followed, each above the last (0 ends the chain). base 0 (a stack whose
 * bounds are unknown, such as a boot stack): none. Any context; inline
 * for the sampling path, where it runs in the overflow interrupt.
 */
static inline unsigned int
stack_walk(uintptr_t fp, uintptr_t base, uintptr_t size, uint64_t *frames,
           unsigned int max)
{
    unsigned int n = 0;

    if (base == 0) {
        return 0;
    }

    /* One compare keeps both words of the frame inside the stack. */
    while (n < max && fp - base <= size - sizeof(struct stack_frame)) {
        const struct stack_frame *frame = (const struct stack_frame *)fp;
        uintptr_t next = frame->next;

        frames[n++] = frame->ret;

        if (next <= fp) {
            break;
        }

        fp = next;
    }

    return n;
}

/*
 * One step of a walk that knows no stack bounds (the panic backtrace,
 * which may run on any stack, or after a stack went bad): follow the
 * frame at *fpp when it is aligned and in the kernel half of the address
 * space (the kernel image or the direct map, where every kernel stack
 * lives) and its return address is not 0; then store that address in
 * *retp, the caller's frame in *fpp, and return true. Return false where
 * the chain ends. Any context.
 */
bool stack_walk_kernel_step(uintptr_t *fpp, uintptr_t *retp);

#endif /* X86_STACK_H */
