/*
 * Processor control: interrupts, MSRs, CPUID, control registers, the TSC,
 * and the per-CPU descriptor tables (GDT, TSS, IDT).
 *
 * All inline helpers may be called in any context unless said otherwise.
 */
#ifndef X86_CPU_H
#define X86_CPU_H

/* Segment selectors, also used by assembly. */
#define CPU_SEL_NULL    0x00
#define CPU_SEL_CODE    0x08
#define CPU_SEL_DATA    0x10
#define CPU_SEL_TSS     0x18

/* Interrupt stack table slots for exceptions that must get a good stack. */
#define CPU_IST_DF      1
#define CPU_IST_NMI     2
#define CPU_IST_MC      3

#define CPU_MAX         64

#ifndef __ASSEMBLER__

#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/macros.h>

#define CPU_RFLAGS_IF           (1UL << 9)

#define CPU_MSR_EFER            0xc0000080
#define CPU_MSR_FS_BASE         0xc0000100
#define CPU_MSR_GS_BASE         0xc0000101
#define CPU_MSR_APIC_BASE       0x1b

/* CPUID.1:EDX / ECX feature bits used by the kernel. */
#define CPU_CPUID1_EDX_TSC      (1U << 4)
#define CPU_CPUID1_EDX_MSR      (1U << 5)
#define CPU_CPUID1_EDX_APIC     (1U << 9)
#define CPU_CPUID1_ECX_PDCM     (1U << 15)
/* Always 0 on a processor (SDM vol. 2A, table 3-10); hypervisors set it. */
#define CPU_CPUID1_ECX_HYPERVISOR (1U << 31)

static inline void
cpu_intr_enable(void)
{
    __asm__ volatile("sti" : : : "memory");
}

static inline void
cpu_intr_disable(void)
{
    __asm__ volatile("cli" : : : "memory");
}

static inline unsigned long
cpu_get_rflags(void)
{
    unsigned long flags;

    __asm__ volatile("pushfq; popq %0" : "=r"(flags) : : "memory");
    return flags;
}

static inline bool
cpu_intr_enabled(void)
{
    return (cpu_get_rflags() & CPU_RFLAGS_IF) != 0;
}

/* Disable interrupts and return the previous flags for cpu_intr_restore. */
static inline unsigned long
cpu_intr_save(void)
{
    unsigned long flags = cpu_get_rflags();

    cpu_intr_disable();
    return flags;
}

static inline void
cpu_intr_restore(unsigned long flags)
{
    if (flags & CPU_RFLAGS_IF) {
        cpu_intr_enable();
    }
}

static inline void
cpu_pause(void)
{
    __asm__ volatile("pause" : : : "memory");
}

/* Enable interrupts and halt until the next one, atomically. */
static inline void
cpu_idle(void)
{
    __asm__ volatile("sti; hlt" : : : "memory");
}

static __noreturn inline void
cpu_halt_forever(void)
{
    for (;;) {
        __asm__ volatile("cli; hlt" : : : "memory");
    }
}

static inline void
cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax, uint32_t *ebx,
          uint32_t *ecx, uint32_t *edx)
{
    __asm__ volatile("cpuid"
                     : "=a"(*eax), "=b"(*ebx), "=c"(*ecx), "=d"(*edx)
                     : "a"(leaf), "c"(subleaf));
}

static inline uint64_t
cpu_get_msr(uint32_t msr)
{
    uint32_t low, high;

    __asm__ volatile("rdmsr" : "=a"(low), "=d"(high) : "c"(msr));
    return ((uint64_t)high << 32) | low;
}

static inline void
cpu_set_msr(uint32_t msr, uint64_t value)
{
    __asm__ volatile("wrmsr"
                     : : "c"(msr), "a"((uint32_t)value),
                         "d"((uint32_t)(value >> 32))
                     : "memory");
}

/*
 * Exception recovery for single instructions that may fault. An entry of
 * the fixup table (section .cpu_fixups, collected by kernel.lds) pairs
 * the address of such an instruction with the address of its recovery
 * code; the #GP handler (trap.c) resumes there instead of panicking. The
 * recovery code sets the caller's error and jumps back after the
 * instruction. A table, rather than a per-CPU "fault expected" flag,
 * needs no state and no setup, so it works in any context (an NMI that
 * faults inside another recovery included).
 */
struct cpu_fixup {
    uintptr_t insn;             /* the instruction that may fault */
    uintptr_t resume;           /* its recovery code */
};

/* The table entry of the preceding instruction labeled 1, recovery 3. */
#define CPU_FIXUP_ENTRY                                                 \
    "   .pushsection .cpu_fixups, \"a\"\n"                              \
    "   .balign 8\n"                                                    \
    "   .quad 1b, 3f\n"                                                 \
    "   .popsection\n"

/*
 * Return the recovery address of the instruction at rip, or 0 when it is
 * not in the fixup table. Any context.
 */
uintptr_t cpu_fixup_find(uintptr_t rip);

/*
 * RDMSR and WRMSR that survive a #GP (an MSR the processor or hypervisor
 * does not implement, a reserved bit, a value it refuses; SDM vol. 2B,
 * RDMSR and WRMSR, protected-mode exceptions): return 0, or EIO when the
 * instruction faulted, in which case a read stores 0. Any context.
 */
static inline int
cpu_get_msr_safe(uint32_t msr, uint64_t *valuep)
{
    uint32_t low, high;
    int error;

    __asm__ volatile("1: rdmsr\n"
                     "   xorl %2, %2\n"
                     "2:\n"
                     CPU_FIXUP_ENTRY
                     "   .pushsection .text.cpu_fixup, \"ax\"\n"
                     "3: movl %3, %2\n"
                     "   xorl %0, %0\n"
                     "   xorl %1, %1\n"
                     "   jmp 2b\n"
                     "   .popsection\n"
                     : "=a"(low), "=d"(high), "=&r"(error)
                     : "i"(EIO), "c"(msr)
                     : "cc", "memory");
    *valuep = ((uint64_t)high << 32) | low;
    return error;
}

static inline int
cpu_set_msr_safe(uint32_t msr, uint64_t value)
{
    int error;

    __asm__ volatile("1: wrmsr\n"
                     "   xorl %0, %0\n"
                     "2:\n"
                     CPU_FIXUP_ENTRY
                     "   .pushsection .text.cpu_fixup, \"ax\"\n"
                     "3: movl %1, %0\n"
                     "   jmp 2b\n"
                     "   .popsection\n"
                     : "=&r"(error)
                     : "i"(EIO), "c"(msr), "a"((uint32_t)value),
                       "d"((uint32_t)(value >> 32))
                     : "cc", "memory");
    return error;
}

static inline uint64_t
cpu_get_tsc(void)
{
    uint32_t low, high;

    __asm__ volatile("rdtsc" : "=a"(low), "=d"(high));
    return ((uint64_t)high << 32) | low;
}

static inline uint64_t
cpu_get_cr2(void)
{
    uint64_t value;

    __asm__ volatile("mov %%cr2, %0" : "=r"(value));
    return value;
}

static inline uint64_t
cpu_get_cr3(void)
{
    uint64_t value;

    __asm__ volatile("mov %%cr3, %0" : "=r"(value));
    return value;
}

static inline void
cpu_set_cr3(uint64_t value)
{
    __asm__ volatile("mov %0, %%cr3" : : "r"(value) : "memory");
}

/*
 * Interrupts the core raises (arch/x86/machine/ipi.c owns their vectors
 * and calls the handlers registered below). Any context.
 */
void cpu_send_xcall(unsigned int cpu);          /* xcall_intr there */
void cpu_send_resched(unsigned int cpu);        /* reschedule there */
void cpu_send_self_pmu_soft(void);              /* the pmu_soft handler */

/*
 * The same request from an NMI: the NMI may have landed between another
 * sender's two ICR writes, so it writes only the low half (the self
 * shorthand), which leaves the interrupted sender's destination intact.
 * NMI context, local.
 */
void cpu_send_self_pmu_soft_from_nmi(void);

/*
 * An NMI to a CPU (the NMI handler there), this one included (the self
 * shorthand is not valid with NMI delivery, SDM Vol. 3A 11.6.1, so the
 * CPU's own APIC ID is the destination). Any context, an NMI included.
 */
void cpu_send_nmi(unsigned int cpu);

/*
 * Where an interrupt landed: the interrupted code's instruction pointer
 * and frame pointer (the base of that function's frame, for call chains).
 */
struct cpu_intr_site {
    uintptr_t ip;
    uintptr_t fp;
};

typedef void (*cpu_intr_fn_t)(const struct cpu_intr_site *site);

/*
 * Install the handler of the PMU's overflow interrupt (TRAP_PMI), of the
 * software PMU's self-interrupt (cpu_send_self_pmu_soft), or of the NMI;
 * NULL removes it. The first two run with interrupts disabled and the
 * EOI sent after they return (a new PMI must not nest in the handler);
 * without one the interrupt is only acknowledged. The NMI handler runs
 * on every NMI (the machine cannot tell one source from another), with
 * no EOI, in NMI context; without one an NMI panics, and once a panic is
 * under way an NMI stops the CPU without calling it. Any context.
 */
void cpu_pmi_register(cpu_intr_fn_t fn);
void cpu_pmu_soft_register(cpu_intr_fn_t fn);
void cpu_nmi_register(cpu_intr_fn_t fn);

/*
 * Stop every other CPU (for panic); nothing before the interrupt
 * controller is set up. Any context.
 */
void cpu_stop_others(void);

static inline void *
cpu_get_frame_pointer(void)
{
    return __builtin_frame_address(0);
}

/*
 * Per-CPU hot fields at the start of every per-CPU area, reached through
 * the GS base with one instruction. See kern/percpu.h.
 */
struct cpu_head {
    void *self;                 /* the area's own address */
    unsigned int id;
    unsigned int intr_depth;    /* nesting of interrupt handlers */
    struct thread *thread;      /* current thread */
    const void *intr_frame;     /* innermost interrupt's saved registers */
    unsigned int nmi_depth;     /* nesting of NMI handlers (cpu_in_nmi) */
};

#define CPU_HEAD_OFFSET_ID      8
#define CPU_HEAD_OFFSET_INTR    12
#define CPU_HEAD_OFFSET_THREAD  16
#define CPU_HEAD_OFFSET_NMI     32

/*
 * A byte of the calling CPU's copy of a per-CPU variable (kern/percpu.h),
 * lval naming it in the template (a per-CPU variable or a byte member of
 * one), reached in one instruction: the FS base holds the distance of
 * the CPU's area from the template (cpu_load_tables), so the template's
 * address relative to FS is the copy's. The increment and decrement, as
 * the others, are compiler barriers, so that a section they bracket keeps
 * its accesses between them (an NMI on the same CPU sees the instruction
 * stream in order). Local.
 */
#define cpu_local_inc8(lval)                                            \
    __asm__ volatile("incb %%fs:%0" : "+m"(lval) : : "memory", "cc")

#define cpu_local_dec8(lval)                                            \
    __asm__ volatile("decb %%fs:%0" : "+m"(lval) : : "memory", "cc")

#define cpu_local_read8(lval)                                           \
    ({                                                                  \
        uint8_t cpu_local_value_;                                       \
                                                                        \
        __asm__ volatile("movb %%fs:%1, %0"                             \
                         : "=q"(cpu_local_value_) : "m"(lval)           \
                         : "memory");                                   \
        cpu_local_value_;                                               \
    })

#define cpu_local_write8(lval, value)                                   \
    __asm__ volatile("movb %1, %%fs:%0"                                 \
                     : "=m"(lval) : "q"((uint8_t)(value)) : "memory")

/* Return the calling CPU's index, 0 to cpu_count() - 1. Any context. */
static inline unsigned int
cpu_id(void)
{
    unsigned int id;

    __asm__ volatile("movl %%gs:" STRINGIFY(CPU_HEAD_OFFSET_ID) ", %0"
                     : "=r"(id));
    return id;
}

/* Return true when running in an interrupt or exception handler. */
static inline bool
cpu_in_intr(void)
{
    unsigned int depth;

    __asm__ volatile("movl %%gs:" STRINGIFY(CPU_HEAD_OFFSET_INTR) ", %0"
                     : "=r"(depth));
    return depth != 0;
}

/*
 * Return true when running in an NMI handler (below it, an interrupted
 * context of any kind). One load. Any context.
 */
static inline bool
cpu_in_nmi(void)
{
    unsigned int depth;

    __asm__ volatile("movl %%gs:" STRINGIFY(CPU_HEAD_OFFSET_NMI) ", %0"
                     : "=r"(depth));
    return depth != 0;
}

/*
 * Where the innermost interrupt being handled on this CPU interrupted the
 * code below it: its instruction pointer and frame pointer (the base of
 * that function's frame, for call chains). Return false outside interrupt
 * handlers. Local, interrupts disabled.
 */
bool cpu_intr_ctx(uintptr_t *ipp, uintptr_t *fpp);

/* Return the number of processors online or being started. Any context. */
unsigned int cpu_count(void);

/* Return the local APIC id of a CPU. Any context. */
unsigned int cpu_apic_id(unsigned int cpu);

/* Return the TSC frequency in Hz, known once the clock is calibrated. */
uint64_t cpu_get_freq(void);

/* Record the calibrated TSC frequency. Called once by the clock module. */
void cpu_set_freq(uint64_t freq);

/*
 * Load the GDT, TSS and IDT on the calling processor and point its GS
 * base at its per-CPU area. Boot and AP bring-up only.
 */
void cpu_load_tables(unsigned int cpu);

/*
 * Early setup of the boot processor: descriptor tables, per-CPU area of
 * CPU 0. Called once before anything else that needs cpu_id().
 */
void cpu_setup_bsp(void);

/*
 * Register a processor found by the firmware tables. Return its index,
 * or -1 when CPU_MAX processors are already known. Boot only.
 */
int cpu_register(unsigned int apic_id);

/* Mark the calling processor online. */
void cpu_set_online(void);

/* Return true once the given CPU runs its scheduler. Any context. */
bool cpu_online(unsigned int cpu);

#endif /* __ASSEMBLER__ */

#endif /* X86_CPU_H */
