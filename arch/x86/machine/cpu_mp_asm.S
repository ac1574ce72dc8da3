/*
 * Application processor trampoline, copied to BOOT_AP_TRAMPOLINE (a page
 * below 1 MiB) and started by a STARTUP IPI in real mode (Intel SDM vol.
 * 3A, section 9.4.4 "MP Initialization Example"). It switches to protected
 * mode, then to long mode on the boot page tables (which keep the identity
 * mapping of low memory), loads the stack and entry point the boot
 * processor left in its data slots, and jumps to the kernel.
 */
#include <machine/boot.h>

#define TRAMP(label) (BOOT_AP_TRAMPOLINE + ((label) - cpu_mp_trampoline))

    .section .rodata
    .balign 16
    .globl cpu_mp_trampoline, cpu_mp_trampoline_end
    .globl cpu_mp_trampoline_stack, cpu_mp_trampoline_entry
    .code16
cpu_mp_trampoline:
    cli
    cld
    movw %cs, %ax
    movw %ax, %ds
    lgdtl (cpu_mp_gdt_desc - cpu_mp_trampoline)
    movl %cr0, %eax
    orl $1, %eax
    movl %eax, %cr0
    ljmpl $0x08, $TRAMP(cpu_mp_pm32)

    .code32
cpu_mp_pm32:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl %cr4, %eax
    orl $0xa0, %eax             /* PAE, PGE */
    movl %eax, %cr4
    movl $boot_pml4, %eax
    movl %eax, %cr3
    movl $0xc0000080, %ecx      /* EFER */
    rdmsr
    orl $0x100, %eax            /* LME */
    wrmsr
    movl %cr0, %eax
    orl $0x80010001, %eax       /* PG, WP, PE */
    movl %eax, %cr0
    ljmpl $0x18, $TRAMP(cpu_mp_lm64)

    .code64
cpu_mp_lm64:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movq TRAMP(cpu_mp_trampoline_stack), %rsp
    movq TRAMP(cpu_mp_trampoline_entry), %rax
    xorl %ebp, %ebp
    jmpq *%rax

    .balign 8
cpu_mp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff    /* 0x08: 32-bit code */
    .quad 0x00cf92000000ffff    /* 0x10: data */
    .quad 0x00af9a000000ffff    /* 0x18: 64-bit code */
cpu_mp_gdt_end:
cpu_mp_gdt_desc:
    .short cpu_mp_gdt_end - cpu_mp_gdt - 1
    .long TRAMP(cpu_mp_gdt)

    .balign 8
cpu_mp_trampoline_stack:
    .quad 0
cpu_mp_trampoline_entry:
    .quad 0
cpu_mp_trampoline_end:
