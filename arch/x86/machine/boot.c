/*
 * Multiboot2 information parsing and the kernel's own page table root.
 * Tag layouts: Multiboot2 specification, section 3.6 "Boot information".
 */
#include <stdint.h>

#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/string.h>
#include <machine/boot.h>
#include <machine/cpu.h>

#define BOOT_MB2_INFO_MAGIC     0x36d76289

#define BOOT_MB2_TAG_END        0
#define BOOT_MB2_TAG_CMDLINE    1
#define BOOT_MB2_TAG_MMAP       6
#define BOOT_MB2_TAG_ACPI_OLD   14
#define BOOT_MB2_TAG_ACPI_NEW   15

struct boot_mb2_tag {
    uint32_t type;
    uint32_t size;
};

struct boot_mb2_mmap {
    uint32_t type;
    uint32_t size;
    uint32_t entry_size;
    uint32_t entry_version;
};

struct boot_mb2_mmap_entry {
    uint64_t base;
    uint64_t length;
    uint32_t type;
    uint32_t reserved;
};

struct boot_info boot_info;

/* The kernel's root: the boot root without the identity mapping. */
static char boot_kernel_pml4[4096] __aligned(4096);

static void
boot_parse_mmap(const struct boot_mb2_tag *tag)
{
    const struct boot_mb2_mmap *mmap = (const void *)tag;
    const char *p = (const char *)(mmap + 1);
    const char *end = (const char *)tag + tag->size;

    if (mmap->entry_size < sizeof(struct boot_mb2_mmap_entry)) {
        return;
    }

    for (; p + mmap->entry_size <= end; p += mmap->entry_size) {
        const struct boot_mb2_mmap_entry *e = (const void *)p;
        struct boot_mmap_entry *dest;

        if (boot_info.mmap_count == BOOT_MMAP_MAX) {
            break;
        }

        dest = &boot_info.mmap[boot_info.mmap_count++];
        dest->base = e->base;
        dest->length = e->length;
        dest->type = e->type;
    }
}

static void
boot_parse_rsdp(const struct boot_mb2_tag *tag)
{
    size_t size = tag->size - sizeof(*tag);

    /* Prefer the ACPI 2.0 copy when the loader gives both. */
    if (boot_info.rsdp_size > 20 && tag->type == BOOT_MB2_TAG_ACPI_OLD) {
        return;
    }

    size = MIN(size, sizeof(boot_info.rsdp));
    memcpy(boot_info.rsdp, tag + 1, size);
    boot_info.rsdp_size = size;
}

void
boot_info_parse(uint32_t magic, uint32_t info_phys)
{
    const char *info, *p, *end;

    if (magic != BOOT_MB2_INFO_MAGIC) {
        panic("boot: not started by a Multiboot2 loader (magic 0x%x)",
              magic);
    }

    info = boot_phys_to_virt(info_phys);
    end = info + *(const uint32_t *)info;

    for (p = info + 8; p + sizeof(struct boot_mb2_tag) <= end;) {
        const struct boot_mb2_tag *tag = (const void *)p;

        if (tag->type == BOOT_MB2_TAG_END || tag->size < sizeof(*tag)) {
            break;
        }

        switch (tag->type) {
        case BOOT_MB2_TAG_CMDLINE:
            strlcpy(boot_info.cmdline, (const char *)(tag + 1),
                    MIN(sizeof(boot_info.cmdline),
                        tag->size - sizeof(*tag) + 1));
            break;
        case BOOT_MB2_TAG_MMAP:
            boot_parse_mmap(tag);
            break;
        case BOOT_MB2_TAG_ACPI_OLD:
        case BOOT_MB2_TAG_ACPI_NEW:
            boot_parse_rsdp(tag);
            break;
        }

        p += (tag->size + 7) & ~7U;    /* tags are 8-byte aligned */
    }
}

void
boot_switch_to_kernel_pml4(void)
{
    uint64_t *dest = (uint64_t *)boot_kernel_pml4;
    const uint64_t *src = boot_phys_to_virt((uintptr_t)boot_pml4);

    /* Entries 256 and up are the kernel half; 0 is the identity map. */
    for (unsigned int i = 256; i < 512; i++) {
        dest[i] = src[i];
    }

    cpu_set_cr3(boot_kernel_cr3());
}

uint64_t
boot_kernel_cr3(void)
{
    return boot_virt_to_phys(boot_kernel_pml4);
}
