/*
 * Physical page allocator: one bit per page below the highest usable
 * address (capped at the 4 GiB the boot page tables map), set when the page
 * is in use or not RAM. Allocation is a next-fit scan for a free aligned
 * run, which is ample for the memory sizes this kernel runs with.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/panic.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/vm_page.h>
#include <machine/boot.h>

#define VM_PAGE_LOW_RESERVED    0x100000    /* BIOS, trampoline, VGA */

static struct spinlock vm_page_lock = SPINLOCK_INITIALIZER;
static uint64_t *vm_page_bitmap;
static struct vm_page *vm_page_descs;
static size_t vm_page_nr_pages;
static size_t vm_page_free_count;
static size_t vm_page_next;

static bool
vm_page_used(size_t pfn)
{
    return vm_page_bitmap[pfn / 64] & (1ULL << (pfn % 64));
}

static void
vm_page_mark(size_t pfn, size_t count, bool used)
{
    for (size_t i = pfn; i < pfn + count; i++) {
        if (used) {
            vm_page_bitmap[i / 64] |= 1ULL << (i % 64);
        } else {
            vm_page_bitmap[i / 64] &= ~(1ULL << (i % 64));
        }
    }
}

static bool
vm_page_run_free(size_t pfn, size_t count)
{
    for (size_t i = pfn; i < pfn + count; i++) {
        if (vm_page_used(i)) {
            return false;
        }
    }

    return true;
}

void *
vm_page_alloc(unsigned int order)
{
    size_t count, nr_slots, first;
    unsigned long flags;
    void *addr = NULL;

    if (order > VM_PAGE_ORDER_MAX) {
        return NULL;
    }

    /* Candidate blocks are the aligned slots of 2^order pages. */
    count = (size_t)1 << order;
    nr_slots = vm_page_nr_pages / count;
    spinlock_lock_intr_save(&vm_page_lock, &flags);
    first = (vm_page_next / count) % MAX(nr_slots, 1);

    for (size_t i = 0; i < nr_slots; i++) {
        size_t pfn = ((first + i) % nr_slots) * count;

        if (vm_page_run_free(pfn, count)) {
            vm_page_mark(pfn, count, true);
            /* Under vm_page_lock; vm_page_nr_free reads it without. */
            __atomic_store_n(&vm_page_free_count, vm_page_free_count - count,
                             __ATOMIC_RELAXED);
            vm_page_descs[pfn].order = order;
            vm_page_descs[pfn].kmem_class = 0;
            vm_page_next = pfn + count;
            addr = boot_phys_to_virt((uint64_t)pfn << VM_PAGE_SHIFT);
            break;
        }
    }

    spinlock_unlock_intr_restore(&vm_page_lock, flags);
    return addr;
}

void
vm_page_free(void *addr, unsigned int order)
{
    size_t pfn = boot_virt_to_phys(addr) >> VM_PAGE_SHIFT;
    size_t count = (size_t)1 << order;
    unsigned long flags;

    assert(pfn + count <= vm_page_nr_pages);

    spinlock_lock_intr_save(&vm_page_lock, &flags);

    for (size_t i = pfn; i < pfn + count; i++) {
        assert(vm_page_used(i));
    }

    vm_page_mark(pfn, count, false);
    __atomic_store_n(&vm_page_free_count, vm_page_free_count + count,
                     __ATOMIC_RELAXED);
    spinlock_unlock_intr_restore(&vm_page_lock, flags);
}

struct vm_page *
vm_page_lookup(const void *addr)
{
    size_t pfn = boot_virt_to_phys(addr) >> VM_PAGE_SHIFT;

    assert(pfn < vm_page_nr_pages);
    return &vm_page_descs[pfn];
}

size_t
vm_page_nr_free(void)
{
    /*
     * A count for statistics and leak checks, which order nothing by it
     * (a leak check reads it after its own frees): relaxed.
     */
    return __atomic_load_n(&vm_page_free_count, __ATOMIC_RELAXED);
}

static int
vm_page_setup(void)
{
    uint64_t top = 0, kernel_end, meta_phys = 0;
    size_t bitmap_size, descs_size, meta_size, nr_usable = 0;

    kernel_end = P2ROUND((uint64_t)(uintptr_t)boot_kernel_phys_end,
                         VM_PAGE_SIZE);

    for (unsigned int i = 0; i < boot_info.mmap_count; i++) {
        const struct boot_mmap_entry *e = &boot_info.mmap[i];

        if (e->type == BOOT_MMAP_AVAILABLE) {
            top = MAX(top, MIN(e->base + e->length, BOOT_DIRECT_SIZE));
        }
    }

    vm_page_nr_pages = top >> VM_PAGE_SHIFT;
    bitmap_size = P2ROUND(DIV_CEIL(vm_page_nr_pages, 64) * 8, 8);
    descs_size = vm_page_nr_pages * sizeof(struct vm_page);
    meta_size = P2ROUND(bitmap_size + descs_size, VM_PAGE_SIZE);

    /* Put the metadata at the start of the first region that holds it. */
    for (unsigned int i = 0; i < boot_info.mmap_count; i++) {
        const struct boot_mmap_entry *e = &boot_info.mmap[i];
        uint64_t start = P2ROUND(MAX(e->base, kernel_end), VM_PAGE_SIZE);
        uint64_t end = MIN(e->base + e->length, top);

        if (e->type == BOOT_MMAP_AVAILABLE && start + meta_size <= end) {
            meta_phys = start;
            break;
        }
    }

    if (meta_phys == 0) {
        panic("vm_page: no room for the page allocator's metadata");
    }

    vm_page_bitmap = boot_phys_to_virt(meta_phys);
    vm_page_descs = (struct vm_page *)((char *)vm_page_bitmap + bitmap_size);
    memset(vm_page_bitmap, 0xff, bitmap_size);
    memset(vm_page_descs, 0, descs_size);

    for (unsigned int i = 0; i < boot_info.mmap_count; i++) {
        const struct boot_mmap_entry *e = &boot_info.mmap[i];
        uint64_t start = P2ROUND(MAX(e->base, VM_PAGE_LOW_RESERVED),
                                 VM_PAGE_SIZE);
        uint64_t end = P2ALIGN(MIN(e->base + e->length, top), VM_PAGE_SIZE);

        if (e->type != BOOT_MMAP_AVAILABLE || start >= end) {
            continue;
        }

        vm_page_mark(start >> VM_PAGE_SHIFT, (end - start) >> VM_PAGE_SHIFT,
                     false);
    }

    /* The kernel image and the metadata itself are in use. */
    vm_page_mark((uintptr_t)boot_kernel_phys_start >> VM_PAGE_SHIFT,
                 (kernel_end - (uintptr_t)boot_kernel_phys_start)
                 >> VM_PAGE_SHIFT, true);
    vm_page_mark(meta_phys >> VM_PAGE_SHIFT, meta_size >> VM_PAGE_SHIFT,
                 true);

    for (size_t i = 0; i < vm_page_nr_pages; i++) {
        nr_usable += !vm_page_used(i);
    }

    vm_page_free_count = nr_usable;
    log_info("vm_page: %zu MiB free of %zu MiB below 4 GiB",
             nr_usable >> (20 - VM_PAGE_SHIFT),
             vm_page_nr_pages >> (20 - VM_PAGE_SHIFT));
    return 0;
}

INIT_OP_DEFINE(vm_page_setup);
