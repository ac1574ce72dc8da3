/*
 * Frame-pointer stack walks, see stack.h.
 */
#include <stdbool.h>
#include <stdint.h>

#include <machine/boot.h>
#include <machine/stack.h>

bool
stack_walk_kernel_step(uintptr_t *fpp, uintptr_t *retp)
{
    const struct stack_frame *frame;
    uintptr_t fp = *fpp;

    if (fp == 0 || (fp & 7) != 0 || fp < BOOT_DIRECT_BASE) {
        return false;
    }

    frame = (const struct stack_frame *)fp;

    if (frame->ret == 0) {
        return false;
    }

    *retp = frame->ret;
    *fpp = frame->next;
    return true;
}
