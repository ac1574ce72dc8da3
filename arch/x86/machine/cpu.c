/*
 * Descriptor tables and the processor registry. Layouts: Intel SDM vol. 3A,
 * sections 3.4.5 (segment descriptors), 7.2.3 (64-bit TSS), 7.7 (TSS
 * descriptor in 64-bit mode) and 6.14.1 (64-bit IDT gates).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/percpu.h>
#include <kern/string.h>
#include <machine/cpu.h>
#include <machine/trap.h>

#define CPU_IST_STACK_SIZE  8192    /* the NMI handler copies a call
                                       chain or two */

struct cpu_tss {
    uint32_t reserved0;
    uint64_t rsp[3];
    uint64_t ist[8];        /* ist[0] is reserved */
    uint64_t reserved1;
    uint16_t reserved2;
    uint16_t iomap_base;
} __packed;

struct cpu_idt_gate {
    uint16_t offset_low;
    uint16_t selector;
    uint8_t ist;
    uint8_t type_attr;
    uint16_t offset_mid;
    uint32_t offset_high;
    uint32_t reserved;
} __packed;

struct cpu_desc_ptr {
    uint16_t limit;
    uint64_t base;
} __packed;

#define CPU_GDT_SIZE 5      /* null, code, data, TSS (two slots) */

/* First in the per-CPU section (see kernel.lds), so at offset 0. */
struct cpu_head cpu_head __section(".bss.percpu.head");

_Static_assert(__builtin_offsetof(struct cpu_head, nmi_depth)
               == CPU_HEAD_OFFSET_NMI, "cpu_in_nmi reads nmi_depth");

static uint64_t cpu_gdt[CPU_GDT_SIZE] __percpu __aligned(16);
static struct cpu_tss cpu_tss __percpu __aligned(16);
static char cpu_ist_stacks[3][CPU_IST_STACK_SIZE] __percpu __aligned(16);

static struct cpu_idt_gate cpu_idt[TRAP_NR_VECTORS] __aligned(16);

static unsigned int cpu_apic_ids[CPU_MAX];
static unsigned int cpu_nr_cpus = 1;
static volatile bool cpu_is_online[CPU_MAX];
static uint64_t cpu_freq;

/* The fixup table, from kernel.lds. */
extern const struct cpu_fixup cpu_fixups_start[];
extern const struct cpu_fixup cpu_fixups_end[];

uintptr_t
cpu_fixup_find(uintptr_t rip)
{
    size_t n = ((uintptr_t)cpu_fixups_end - (uintptr_t)cpu_fixups_start)
               / sizeof(cpu_fixups_start[0]);

    for (size_t i = 0; i < n; i++) {
        if (cpu_fixups_start[i].insn == rip) {
            return cpu_fixups_start[i].resume;
        }
    }

    return 0;
}

unsigned int
cpu_count(void)
{
    return READ_ONCE(cpu_nr_cpus);
}

unsigned int
cpu_apic_id(unsigned int cpu)
{
    return cpu_apic_ids[cpu];
}

uint64_t
cpu_get_freq(void)
{
    return cpu_freq;
}

void
cpu_set_freq(uint64_t freq)
{
    cpu_freq = freq;
}

int
cpu_register(unsigned int apic_id)
{
    for (unsigned int i = 0; i < cpu_nr_cpus; i++) {
        if (cpu_apic_ids[i] == apic_id) {
            return (int)i;
        }
    }

    if (cpu_nr_cpus == CPU_MAX) {
        return -1;
    }

    cpu_apic_ids[cpu_nr_cpus] = apic_id;
    WRITE_ONCE(cpu_nr_cpus, cpu_nr_cpus + 1);
    return (int)cpu_nr_cpus - 1;
}

void
cpu_set_online(void)
{
    cpu_is_online[cpu_id()] = true;
}

bool
cpu_online(unsigned int cpu)
{
    return cpu < CPU_MAX && cpu_is_online[cpu];
}

static void
cpu_idt_set_gate(unsigned int vector, uintptr_t handler, unsigned int ist)
{
    struct cpu_idt_gate *gate = &cpu_idt[vector];

    gate->offset_low = handler & 0xffff;
    gate->selector = CPU_SEL_CODE;
    gate->ist = ist;
    gate->type_attr = 0x8e;     /* present, DPL 0, 64-bit interrupt gate */
    gate->offset_mid = (handler >> 16) & 0xffff;
    gate->offset_high = handler >> 32;
    gate->reserved = 0;
}

static void
cpu_idt_build(void)
{
    for (unsigned int i = 0; i < TRAP_NR_VECTORS; i++) {
        unsigned int ist = 0;

        if (i == TRAP_DF) {
            ist = CPU_IST_DF;
        } else if (i == TRAP_NMI) {
            ist = CPU_IST_NMI;
        } else if (i == TRAP_MC) {
            ist = CPU_IST_MC;
        }

        cpu_idt_set_gate(i, (uintptr_t)trap_stubs[i], ist);
    }
}

void
cpu_load_tables(unsigned int cpu)
{
    uint64_t *gdt = *percpu_ptr(cpu_gdt, cpu);
    struct cpu_tss *tss = percpu_ptr(cpu_tss, cpu);
    struct cpu_head *head = percpu_areas[cpu];
    uintptr_t tss_addr = (uintptr_t)tss;
    struct cpu_desc_ptr desc;

    gdt[0] = 0;
    gdt[1] = 0x00af9a000000ffff;    /* 64-bit code, DPL 0 */
    gdt[2] = 0x00cf92000000ffff;    /* data, DPL 0 */
    gdt[3] = (sizeof(*tss) - 1) | ((tss_addr & 0xffffff) << 16)
             | (0x89ULL << 40)      /* present, available 64-bit TSS */
             | (((tss_addr >> 24) & 0xff) << 56);
    gdt[4] = tss_addr >> 32;

    memset(tss, 0, sizeof(*tss));
    tss->iomap_base = sizeof(*tss);

    /*
     * percpu_ptr gives a pointer to the whole array: index what it points
     * to (indexing the pointer itself strode 3 stacks at a time, and put
     * the NMI and machine-check stacks in whatever followed the per-CPU
     * area, which NMI-delivered overflows then overwrote).
     */
    for (unsigned int i = 0; i < 3; i++) {
        tss->ist[i + 1] = (uintptr_t)(*percpu_ptr(cpu_ist_stacks, cpu))[i]
                          + CPU_IST_STACK_SIZE;
    }

    desc.limit = sizeof(cpu_gdt) - 1;
    desc.base = (uintptr_t)gdt;
    __asm__ volatile("lgdt %0" : : "m"(desc) : "memory");
    __asm__ volatile("pushq %0\n"
                     "leaq 1f(%%rip), %%rax\n"
                     "pushq %%rax\n"
                     "lretq\n"
                     "1:\n"
                     "movl %1, %%eax\n"
                     "movl %%eax, %%ds\n"
                     "movl %%eax, %%es\n"
                     "movl %%eax, %%ss\n"
                     "xorl %%eax, %%eax\n"
                     "movl %%eax, %%fs\n"
                     "movl %%eax, %%gs\n"
                     : : "i"(CPU_SEL_CODE), "i"(CPU_SEL_DATA)
                     : "rax", "memory");
    __asm__ volatile("ltr %w0" : : "r"(CPU_SEL_TSS));

    /*
     * The bases, written after the selector loads (which may clear them,
     * or on AMD leave the old base: either way the MSR write decides) and
     * before the IDT, so that an NMI taken from here on finds this CPU's
     * data. GS points at the area (its head), FS is the area's distance
     * from the template, for the one-instruction accesses to per-CPU
     * bytes (cpu_local_inc8). Before this call an AP's FS base is 0,
     * CPU 0's copy: no marked section may run on an AP before it.
     */
    cpu_set_msr(CPU_MSR_GS_BASE, (uintptr_t)head);
    cpu_set_msr(CPU_MSR_FS_BASE, (uintptr_t)head - (uintptr_t)percpu_start);

    desc.limit = sizeof(cpu_idt) - 1;
    desc.base = (uintptr_t)cpu_idt;
    __asm__ volatile("lidt %0" : : "m"(desc) : "memory");
}

void
cpu_setup_bsp(void)
{
    struct cpu_head *head = (struct cpu_head *)percpu_start;
    uint32_t eax, ebx, ecx, edx;

    head->self = head;
    head->id = 0;
    cpu_set_msr(CPU_MSR_GS_BASE, (uintptr_t)head);
    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);
    cpu_apic_ids[0] = ebx >> 24;
    cpu_idt_build();
    cpu_load_tables(0);
}
