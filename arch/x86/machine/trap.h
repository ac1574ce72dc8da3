/*
 * Exceptions and interrupts: vector assignment, the saved register frame,
 * and handler registration.
 */
#ifndef X86_TRAP_H
#define X86_TRAP_H

#define TRAP_DE         0   /* divide error */
#define TRAP_DB         1
#define TRAP_NMI        2
#define TRAP_BP         3   /* breakpoint */
#define TRAP_OF         4
#define TRAP_BR         5
#define TRAP_UD         6   /* invalid opcode */
#define TRAP_NM         7
#define TRAP_DF         8   /* double fault */
#define TRAP_TS         10
#define TRAP_NP         11
#define TRAP_SS         12
#define TRAP_GP         13  /* general protection */
#define TRAP_PF         14  /* page fault */
#define TRAP_MF         16
#define TRAP_AC         17
#define TRAP_MC         18
#define TRAP_XM         19
#define TRAP_VE         20
#define TRAP_CP         21
#define TRAP_NR_EXCEPTIONS 32

/* The legacy PICs are remapped here and masked; only spurious IRQs land. */
#define TRAP_PIC_BASE   0x20
#define TRAP_TIMER      0x30    /* local APIC timer */

/*
 * The software PMU's emulated overflow interrupt: its own vector, so it
 * never runs the hardware PMI handler, and in a lower priority class than
 * the IPIs, so a cross-CPU call can run while it is pending, as a real PMI
 * may be held back behind other interrupts.
 */
#define TRAP_PMU_SOFT   0xe0
#define TRAP_XCALL      0xf0    /* cross-CPU call IPI */
#define TRAP_RESCHED    0xf1    /* reschedule IPI */
#define TRAP_PMI        0xf2    /* performance monitoring interrupt */
#define TRAP_SPURIOUS   0xff    /* local APIC spurious vector */

#define TRAP_NR_VECTORS 256

/* Offsets in struct trap_frame, for assembly. */
#define TRAP_FRAME_VECTOR   (15 * 8)
#define TRAP_FRAME_RIP      (17 * 8)
#define TRAP_FRAME_SIZE     (22 * 8)

#ifndef __ASSEMBLER__

#include <stdint.h>

/* Registers as saved on exception or interrupt entry. */
struct trap_frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector;
    uint64_t error;
    uint64_t rip, cs, rflags, rsp, ss;
};

typedef void (*trap_handler_fn_t)(struct trap_frame *frame);

/* Entry stubs, one per vector, for the IDT. */
extern void *const trap_stubs[TRAP_NR_VECTORS];

/*
 * Install a handler for a vector, or remove it with NULL. Interrupt
 * handlers (vectors 32 and up) run with interrupts disabled and must send
 * their own EOI. An exception without a handler panics, except a #GP of
 * an instruction in the fixup table (machine/cpu.h), which resumes at its
 * recovery code before any handler is asked. Any context.
 */
void trap_register(unsigned int vector, trap_handler_fn_t handler);

/* Return the name of an exception vector ("page fault"). */
const char *trap_name(unsigned int vector);

/* Mask the legacy PICs and install the default handlers. Boot only. */
void trap_setup(void);

/* Called by the entry stubs. */
void trap_handle(struct trap_frame *frame);

#endif /* __ASSEMBLER__ */

#endif /* X86_TRAP_H */
