/*
 * Multiboot2 entry: 32-bit protected mode to 64-bit long mode, then a jump
 * to the kernel in the higher half. Multiboot2 specification, sections 3.1
 * (header) and 3.3 (machine state); long mode entry: Intel SDM vol. 3A,
 * section 10.8.5 "Initializing IA-32e Mode".
 */
#include <machine/boot.h>
#include <machine/cpu.h>

#define MB2_HEADER_MAGIC    0xe85250d6
#define MB2_ARCH_I386       0

#define CR0_PE              (1 << 0)
#define CR0_WP              (1 << 16)
#define CR0_PG              (1 << 31)
#define CR4_PAE             (1 << 5)
#define CR4_PGE             (1 << 7)
#define EFER_LME            (1 << 8)

#define PTE_PRESENT         0x1
#define PTE_WRITE           0x2
#define PTE_LARGE           0x80

#define COM1                0x3f8

    .section .boot.hdr, "a"
    .balign 8
boot_mb2_header:
    .long MB2_HEADER_MAGIC
    .long MB2_ARCH_I386
    .long boot_mb2_header_end - boot_mb2_header
    .long 0x100000000 - (MB2_HEADER_MAGIC + MB2_ARCH_I386 \
                         + (boot_mb2_header_end - boot_mb2_header))
    .balign 8
    .short 0            /* end tag */
    .short 0
    .long 8
boot_mb2_header_end:

    .section .boot.text, "ax"
    .code32
    .globl boot_start
boot_start:
    cli
    cld
    movl %eax, boot_mb_magic
    movl %ebx, boot_mb_info
    movl $boot_stack32_top, %esp

    /* Long mode is CPUID.80000001H:EDX bit 29. */
    movl $0x80000000, %eax
    cpuid
    cmpl $0x80000001, %eax
    jb boot_no_long_mode
    movl $0x80000001, %eax
    cpuid
    testl $(1 << 29), %edx
    jz boot_no_long_mode

    /* Zero the page tables: PML4, two PDPTs and four page directories. */
    movl $boot_pml4, %edi
    movl $(7 * 4096 / 4), %ecx
    xorl %eax, %eax
    rep stosl

    /*
     * PML4[0] (identity) and PML4[256] (direct map) share one PDPT that
     * maps 4 GiB with 2 MiB pages; PML4[511] maps the kernel at -2 GiB.
     */
    movl $(boot_pdpt_low + PTE_PRESENT + PTE_WRITE), boot_pml4
    movl $(boot_pdpt_low + PTE_PRESENT + PTE_WRITE), boot_pml4 + 256 * 8
    movl $(boot_pdpt_high + PTE_PRESENT + PTE_WRITE), boot_pml4 + 511 * 8
    movl $(boot_pd + PTE_PRESENT + PTE_WRITE), boot_pdpt_low
    movl $(boot_pd + 0x1000 + PTE_PRESENT + PTE_WRITE), boot_pdpt_low + 8
    movl $(boot_pd + 0x2000 + PTE_PRESENT + PTE_WRITE), boot_pdpt_low + 16
    movl $(boot_pd + 0x3000 + PTE_PRESENT + PTE_WRITE), boot_pdpt_low + 24
    movl $(boot_pd + PTE_PRESENT + PTE_WRITE), boot_pdpt_high + 510 * 8

    movl $boot_pd, %edi
    movl $(PTE_PRESENT + PTE_WRITE + PTE_LARGE), %eax
    movl $2048, %ecx
1:
    movl %eax, (%edi)
    addl $0x200000, %eax
    addl $8, %edi
    loop 1b

    movl %cr4, %eax
    orl $(CR4_PAE | CR4_PGE), %eax
    movl %eax, %cr4
    movl $boot_pml4, %eax
    movl %eax, %cr3
    movl $0xc0000080, %ecx
    rdmsr
    orl $EFER_LME, %eax
    wrmsr
    movl %cr0, %eax
    orl $(CR0_PE | CR0_WP | CR0_PG), %eax
    movl %eax, %cr0

    lgdt boot_gdt_desc
    ljmp $CPU_SEL_CODE, $boot_start64

boot_no_long_mode:
    movl $boot_msg_no_lm, %esi
1:
    movb (%esi), %bl
    testb %bl, %bl
    jz 3f
2:
    movw $(COM1 + 5), %dx
    inb %dx, %al
    testb $0x20, %al
    jz 2b
    movw $COM1, %dx
    movb %bl, %al
    outb %al, %dx
    incl %esi
    jmp 1b
3:
    cli
    hlt
    jmp 3b

    .code64
boot_start64:
    movw $CPU_SEL_DATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    xorw %ax, %ax
    movw %ax, %fs
    movw %ax, %gs
    movabsq $boot_main64, %rax
    jmp *%rax

    .section .boot.data, "aw"
    .balign 8
boot_gdt:
    .quad 0
    .quad 0x00af9a000000ffff    /* 64-bit code, DPL 0 */
    .quad 0x00cf92000000ffff    /* data, DPL 0 */
boot_gdt_end:
boot_gdt_desc:
    .short boot_gdt_end - boot_gdt - 1
    .long boot_gdt

    .globl boot_mb_magic, boot_mb_info
boot_mb_magic:
    .long 0
boot_mb_info:
    .long 0

boot_msg_no_lm:
    .asciz "\r\npanic: this CPU does not support long mode (x86_64 required)\r\n"

    .section .boot.bss, "aw", @nobits
    .balign 4096
    .globl boot_pml4
boot_pml4:
    .skip 4096
boot_pdpt_low:
    .skip 4096
boot_pdpt_high:
    .skip 4096
boot_pd:
    .skip 4 * 4096
    .skip 256
boot_stack32_top:

    .text
boot_main64:
    movabsq $boot_stack + BOOT_STACK_SIZE, %rsp
    xorl %ebp, %ebp

    /* Zero .bss (GRUB does too, but the kernel does not depend on it). */
    movabsq $boot_bss_start, %rdi
    movabsq $boot_bss_end, %rcx
    subq %rdi, %rcx
    shrq $3, %rcx
    xorl %eax, %eax
    rep stosq

    movl $boot_mb_magic, %eax
    movl (%rax), %edi
    movl $boot_mb_info, %eax
    movl (%rax), %esi
    call kernel_main
1:
    cli
    hlt
    jmp 1b

    .bss
    .balign 4096
    .globl boot_stack
boot_stack:
    .skip BOOT_STACK_SIZE
