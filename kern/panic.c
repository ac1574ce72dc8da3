/*
 * Panic: report and stop.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/ksym.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/printf.h>
#include <machine/cpu.h>
#include <machine/qemu.h>
#include <machine/stack.h>
#include <machine/trap.h>

#define PANIC_BACKTRACE_MAX 32

/* Boot option: panic=halt keeps a panicked machine up for the debugger. */
ARG_DEFINE_WORD("panic", "halt");

volatile int panic_in_progress;

/*
 * Print one backtrace entry. A return address follows a call that may be
 * the last instruction of its function (calls to noreturn functions), so
 * it is looked up one byte earlier; a faulting RIP is looked up as is.
 */
static void
panic_print_addr(unsigned int i, uintptr_t addr, bool is_return)
{
    uintptr_t offset;
    const char *name = ksym_lookup(addr - is_return, &offset);

    offset += is_return;

    if (name == NULL) {
        printf("  #%-2u 0x%016lx\n", i, addr);
    } else {
        printf("  #%-2u 0x%016lx %s+0x%lx\n", i, addr, name, offset);
    }
}

/* Print each frame's return address as the walk reaches it. */
static void
panic_walk(uintptr_t fp, unsigned int first)
{
    uintptr_t ret;

    for (unsigned int i = first; i < PANIC_BACKTRACE_MAX; i++) {
        if (!stack_walk_kernel_step(&fp, &ret)) {
            break;
        }

        panic_print_addr(i, ret, true);
    }
}

void
panic_backtrace(const void *frame_pointer)
{
    printf("backtrace:\n");
    panic_walk((uintptr_t)frame_pointer, 0);
}

static void
panic_print_frame(const struct trap_frame *f)
{
    printf("rip=0x%016lx rsp=0x%016lx rflags=0x%lx cs=0x%lx\n",
           f->rip, f->rsp, f->rflags, f->cs);
    printf("rax=0x%016lx rbx=0x%016lx rcx=0x%016lx rdx=0x%016lx\n",
           f->rax, f->rbx, f->rcx, f->rdx);
    printf("rsi=0x%016lx rdi=0x%016lx rbp=0x%016lx r8 =0x%016lx\n",
           f->rsi, f->rdi, f->rbp, f->r8);
    printf("r9 =0x%016lx r10=0x%016lx r11=0x%016lx r12=0x%016lx\n",
           f->r9, f->r10, f->r11, f->r12);
    printf("r13=0x%016lx r14=0x%016lx r15=0x%016lx cr2=0x%016lx\n",
           f->r13, f->r14, f->r15, cpu_get_cr2());
    printf("cr3=0x%016lx\n", cpu_get_cr3());
}

/*
 * Snapshot the registers at the panic call, so a panic outside a trap also
 * reports them (the caller-saved ones hold whatever panic's caller left).
 */
static void __attribute__((noinline))
panic_capture(struct trap_frame *f)
{
    __asm__ volatile("movq %%rax, %c[rax](%0)\n"
                     "movq %%rbx, %c[rbx](%0)\n"
                     "movq %%rcx, %c[rcx](%0)\n"
                     "movq %%rdx, %c[rdx](%0)\n"
                     "movq %%rsi, %c[rsi](%0)\n"
                     "movq %%r8, %c[r8](%0)\n"
                     "movq %%r9, %c[r9](%0)\n"
                     "movq %%r10, %c[r10](%0)\n"
                     "movq %%r11, %c[r11](%0)\n"
                     "movq %%r12, %c[r12](%0)\n"
                     "movq %%r13, %c[r13](%0)\n"
                     "movq %%r14, %c[r14](%0)\n"
                     "movq %%r15, %c[r15](%0)\n"
                     : : "r"(f),
                         [rax] "i"(__builtin_offsetof(struct trap_frame, rax)),
                         [rbx] "i"(__builtin_offsetof(struct trap_frame, rbx)),
                         [rcx] "i"(__builtin_offsetof(struct trap_frame, rcx)),
                         [rdx] "i"(__builtin_offsetof(struct trap_frame, rdx)),
                         [rsi] "i"(__builtin_offsetof(struct trap_frame, rsi)),
                         [r8] "i"(__builtin_offsetof(struct trap_frame, r8)),
                         [r9] "i"(__builtin_offsetof(struct trap_frame, r9)),
                         [r10] "i"(__builtin_offsetof(struct trap_frame, r10)),
                         [r11] "i"(__builtin_offsetof(struct trap_frame, r11)),
                         [r12] "i"(__builtin_offsetof(struct trap_frame, r12)),
                         [r13] "i"(__builtin_offsetof(struct trap_frame, r13)),
                         [r14] "i"(__builtin_offsetof(struct trap_frame, r14)),
                         [r15] "i"(__builtin_offsetof(struct trap_frame, r15))
                     : "memory");
    f->rdi = (uintptr_t)f;
    f->rbp = *(const uintptr_t *)__builtin_frame_address(0);
    f->rip = (uintptr_t)__builtin_return_address(0);
    f->rsp = (uintptr_t)__builtin_frame_address(0) + 16;
    f->rflags = cpu_get_rflags();
    __asm__ volatile("movq %%cs, %0" : "=r"(f->cs));
    f->vector = 0;
    f->error = 0;
    f->ss = 0;
}

static __noreturn void
panic_common(const struct trap_frame *frame, const void *fp, const char *msg)
{
    cpu_intr_disable();

    if (__atomic_exchange_n(&panic_in_progress, 1, __ATOMIC_SEQ_CST)) {
        /* Another CPU is already reporting. */
        cpu_halt_forever();
    }

    cpu_stop_others();
    log_panic_takeover();
    printf("\npanic: cpu%u: %s\n", cpu_id(), msg);

    if (frame != NULL) {
        /* Start at the faulting instruction, then its callers. */
        panic_print_frame(frame);
        printf("backtrace:\n");
        panic_print_addr(0, frame->rip, false);
        panic_walk(frame->rbp, 1);
    } else {
        struct trap_frame regs;

        panic_capture(&regs);
        panic_print_frame(&regs);
        panic_backtrace(fp);
    }

    if (arg_is_set("panic", "halt")) {
        printf("panic=halt: halting for the debugger\n");
        cpu_halt_forever();
    }

    qemu_exit(QEMU_EXIT_PANIC);
}

void
panic(const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    panic_common(NULL, __builtin_frame_address(0), msg);
}

void
panic_frame(const struct trap_frame *frame, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    panic_common(frame, NULL, msg);
}
