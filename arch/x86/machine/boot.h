/*
 * Boot-time constants and the information the boot loader passed.
 */
#ifndef X86_BOOT_H
#define X86_BOOT_H

/* The kernel runs at -2 GiB; physical memory is mapped at its own base. */
#define BOOT_KERNEL_OFFSET  0xffffffff80000000
#define BOOT_DIRECT_BASE    0xffff800000000000
#define BOOT_DIRECT_SIZE    0x100000000     /* 4 GiB mapped at boot */
#define BOOT_STACK_SIZE     16384

/* Physical page where application processors start (below 1 MiB). */
#define BOOT_AP_TRAMPOLINE  0x8000

#ifndef __ASSEMBLER__

#include <stddef.h>
#include <stdint.h>

#define BOOT_MMAP_MAX       64
#define BOOT_CMDLINE_MAX    512

#define BOOT_MMAP_AVAILABLE 1

struct boot_mmap_entry {
    uint64_t base;
    uint64_t length;
    uint32_t type;
};

/* The parts of the Multiboot2 information the kernel keeps. */
struct boot_info {
    char cmdline[BOOT_CMDLINE_MAX];
    struct boot_mmap_entry mmap[BOOT_MMAP_MAX];
    unsigned int mmap_count;
    uint8_t rsdp[36];       /* ACPI RSDP copy (v1: 20 bytes, v2: 36) */
    size_t rsdp_size;       /* 0 when the boot loader gave none */
};

extern struct boot_info boot_info;

/* Physical extent of the kernel image, from the linker script. */
extern char boot_kernel_phys_start[];
extern char boot_kernel_phys_end[];

/*
 * Copy what the kernel needs out of the Multiboot2 information structure,
 * which lives in memory the page allocator will reuse. Panics on a bad
 * magic value. Boot only.
 */
void boot_info_parse(uint32_t magic, uint32_t info_phys);

/* Translate between physical addresses and their direct mapping. */
static inline void *
boot_phys_to_virt(uint64_t phys)
{
    return (void *)(phys + BOOT_DIRECT_BASE);
}

static inline uint64_t
boot_virt_to_phys(const void *virt)
{
    uintptr_t va = (uintptr_t)virt;

    if (va >= BOOT_KERNEL_OFFSET) {
        return va - BOOT_KERNEL_OFFSET;
    }

    return va - BOOT_DIRECT_BASE;
}

/* The boot processor's page table root, with the identity map kept for
 * the AP trampoline. */
extern char boot_pml4[];

/*
 * Drop the identity mapping of low memory from the boot processor's
 * address space, so that NULL and small pointers fault. Boot only.
 */
void boot_switch_to_kernel_pml4(void);

/* The page table root the kernel runs on (no identity mapping). */
uint64_t boot_kernel_cr3(void);

#endif /* __ASSEMBLER__ */

#endif /* X86_BOOT_H */
