/*
 * Exception and interrupt dispatch.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/percpu.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <machine/io.h>
#include <machine/trap.h>

#define TRAP_PIC1_CMD   0x20
#define TRAP_PIC1_DATA  0x21
#define TRAP_PIC2_CMD   0xa0
#define TRAP_PIC2_DATA  0xa1

static trap_handler_fn_t trap_handlers[TRAP_NR_VECTORS];

static const char *const trap_names[TRAP_NR_EXCEPTIONS] = {
    [TRAP_DE] = "divide error",
    [TRAP_DB] = "debug",
    [TRAP_NMI] = "non-maskable interrupt",
    [TRAP_BP] = "breakpoint",
    [TRAP_OF] = "overflow",
    [TRAP_BR] = "bound range exceeded",
    [TRAP_UD] = "invalid opcode",
    [TRAP_NM] = "device not available",
    [TRAP_DF] = "double fault",
    [9] = "coprocessor segment overrun",
    [TRAP_TS] = "invalid TSS",
    [TRAP_NP] = "segment not present",
    [TRAP_SS] = "stack-segment fault",
    [TRAP_GP] = "general protection fault",
    [TRAP_PF] = "page fault",
    [TRAP_MF] = "x87 floating-point error",
    [TRAP_AC] = "alignment check",
    [TRAP_MC] = "machine check",
    [TRAP_XM] = "SIMD floating-point exception",
    [TRAP_VE] = "virtualization exception",
    [TRAP_CP] = "control protection exception",
};

const char *
trap_name(unsigned int vector)
{
    if (vector < TRAP_NR_EXCEPTIONS && trap_names[vector] != NULL) {
        return trap_names[vector];
    }

    return (vector < TRAP_NR_EXCEPTIONS) ? "reserved exception"
                                         : "interrupt";
}

void
trap_register(unsigned int vector, trap_handler_fn_t handler)
{
    if (vector < TRAP_NR_VECTORS) {
        __atomic_store_n(&trap_handlers[vector], handler, __ATOMIC_RELEASE);
    }
}

static void
trap_pic_spurious(struct trap_frame *frame)
{
    /* Masked PIC lines still raise spurious IRQ 7/15: nothing to ack. */
    (void)frame;
}

void
trap_setup(void)
{
    /* Remap the PICs away from the exception vectors, then mask them. */
    io_write_byte(TRAP_PIC1_CMD, 0x11);
    io_write_byte(TRAP_PIC2_CMD, 0x11);
    io_write_byte(TRAP_PIC1_DATA, TRAP_PIC_BASE);
    io_write_byte(TRAP_PIC2_DATA, TRAP_PIC_BASE + 8);
    io_write_byte(TRAP_PIC1_DATA, 4);
    io_write_byte(TRAP_PIC2_DATA, 2);
    io_write_byte(TRAP_PIC1_DATA, 1);
    io_write_byte(TRAP_PIC2_DATA, 1);
    io_write_byte(TRAP_PIC1_DATA, 0xff);
    io_write_byte(TRAP_PIC2_DATA, 0xff);

    for (unsigned int i = 0; i < 16; i++) {
        trap_register(TRAP_PIC_BASE + i, trap_pic_spurious);
    }
}

static void
trap_exception(struct trap_frame *frame, trap_handler_fn_t handler)
{
    uintptr_t resume;

    /* A #GP the faulting instruction expects: resume at its recovery. */
    if (frame->vector == TRAP_GP) {
        resume = cpu_fixup_find(frame->rip);

        if (resume != 0) {
            frame->rip = resume;
            return;
        }
    }

    if (handler != NULL) {
        handler(frame);
        return;
    }

    if (frame->vector == TRAP_NMI && panic_in_progress) {
        /* Another CPU panicked and asked us to stop. */
        cpu_halt_forever();
    }

    if (frame->vector == TRAP_PF) {
        panic_frame(frame, "page fault at rip=0x%lx cr2=0x%lx error=0x%lx "
                    "(%s, %s)", frame->rip, cpu_get_cr2(), frame->error,
                    (frame->error & 1) ? "protection" : "not present",
                    (frame->error & 2) ? "write" : "read");
    }

    panic_frame(frame, "%s (vector %lu) at rip=0x%lx error=0x%lx",
                trap_name(frame->vector), frame->vector, frame->rip,
                frame->error);
}

bool
cpu_intr_ctx(uintptr_t *ipp, uintptr_t *fpp)
{
    const struct cpu_head *head = (const struct cpu_head *)percpu_local_base();
    const struct trap_frame *frame = head->intr_frame;

    if (frame == NULL) {
        return false;
    }

    *ipp = frame->rip;
    *fpp = frame->rbp;
    return true;
}

void
trap_handle(struct trap_frame *frame)
{
    trap_handler_fn_t handler;
    const void *prev_frame;
    struct cpu_head *head;

    handler = __atomic_load_n(&trap_handlers[frame->vector],
                              __ATOMIC_ACQUIRE);

    if (frame->vector < TRAP_NR_EXCEPTIONS) {
        trap_exception(frame, handler);
        return;
    }

    head = (struct cpu_head *)percpu_local_base();
    prev_frame = head->intr_frame;
    head->intr_frame = frame;
    head->intr_depth++;

    if (handler == NULL) {
        panic_frame(frame, "unexpected interrupt on vector %lu",
                    frame->vector);
    }

    handler(frame);
    head->intr_depth--;
    head->intr_frame = prev_frame;

    /* Preempt only code that ran with interrupts enabled. */
    if (head->intr_depth == 0 && (frame->rflags & CPU_RFLAGS_IF)) {
        thread_preempt_check();
    }
}
