/*
 * Kernel heap. A page handed to a size class stays with it; the class is
 * recorded in the page descriptor so kmem_free() needs no size.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/init.h>
#include <kern/kmem.h>
#include <kern/macros.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/vm_page.h>
#include <machine/cpu.h>

#define KMEM_MIN_SHIFT      4       /* 16 bytes */
#define KMEM_MAX_SHIFT      11      /* 2 KiB */
#define KMEM_NR_CLASSES     (KMEM_MAX_SHIFT - KMEM_MIN_SHIFT + 1)
#define KMEM_CLASS_LARGE    0xff

struct kmem_free_obj {
    struct kmem_free_obj *next;
};

struct kmem_cache {
    struct spinlock lock;
    struct kmem_free_obj *free;
    size_t size;
};

static struct kmem_cache kmem_caches[KMEM_NR_CLASSES];

static unsigned int
kmem_order(size_t size)
{
    unsigned int order = 0;

    while (((size_t)VM_PAGE_SIZE << order) < size) {
        order++;
    }

    return order;
}

static unsigned int
kmem_class(size_t size)
{
    unsigned int class = 0;

    while (((size_t)1 << (class + KMEM_MIN_SHIFT)) < size) {
        class++;
    }

    return class;
}

/* Carve a fresh page into objects. Called with the cache lock held. */
static int
kmem_cache_grow(struct kmem_cache *cache, unsigned int class)
{
    char *page = vm_page_alloc(0);

    if (page == NULL) {
        return -1;
    }

    vm_page_lookup(page)->kmem_class = class + 1;

    for (size_t off = 0; off + cache->size <= VM_PAGE_SIZE;
         off += cache->size) {
        struct kmem_free_obj *obj = (void *)(page + off);

        obj->next = cache->free;
        cache->free = obj;
    }

    return 0;
}

void *
kmem_alloc(size_t size)
{
    struct kmem_cache *cache;
    struct kmem_free_obj *obj;
    unsigned long flags;
    unsigned int class;
    void *block;

    assert_msg(!cpu_in_nmi(), "kmem: allocation in an NMI");

    if (size == 0) {
        return NULL;
    }

    if (size > ((size_t)1 << KMEM_MAX_SHIFT)) {
        if (size > ((size_t)VM_PAGE_SIZE << VM_PAGE_ORDER_MAX)) {
            return NULL;
        }

        block = vm_page_alloc(kmem_order(size));

        if (block != NULL) {
            vm_page_lookup(block)->kmem_class = KMEM_CLASS_LARGE;
        }

        return block;
    }

    class = kmem_class(size);
    cache = &kmem_caches[class];
    spinlock_lock_intr_save(&cache->lock, &flags);

    if (cache->free == NULL && kmem_cache_grow(cache, class) != 0) {
        spinlock_unlock_intr_restore(&cache->lock, flags);
        return NULL;
    }

    obj = cache->free;
    cache->free = obj->next;
    spinlock_unlock_intr_restore(&cache->lock, flags);
    return obj;
}

void *
kmem_zalloc(size_t size)
{
    void *ptr = kmem_alloc(size);

    if (ptr != NULL) {
        memset(ptr, 0, size);
    }

    return ptr;
}

void
kmem_free(void *ptr)
{
    struct kmem_cache *cache;
    struct kmem_free_obj *obj;
    struct vm_page *page;
    unsigned long flags;

    assert_msg(!cpu_in_nmi(), "kmem: free in an NMI");

    if (ptr == NULL) {
        return;
    }

    page = vm_page_lookup((void *)P2ALIGN((uintptr_t)ptr, VM_PAGE_SIZE));

    if (page->kmem_class == KMEM_CLASS_LARGE) {
        assert(((uintptr_t)ptr & (VM_PAGE_SIZE - 1)) == 0);
        page->kmem_class = 0;
        vm_page_free(ptr, page->order);
        return;
    }

    assert(page->kmem_class >= 1 && page->kmem_class <= KMEM_NR_CLASSES);
    cache = &kmem_caches[page->kmem_class - 1];
    assert(((uintptr_t)ptr & (cache->size - 1)) == 0);

    obj = ptr;
    spinlock_lock_intr_save(&cache->lock, &flags);
    obj->next = cache->free;
    cache->free = obj;
    spinlock_unlock_intr_restore(&cache->lock, flags);
}

static int
kmem_setup(void)
{
    for (unsigned int i = 0; i < KMEM_NR_CLASSES; i++) {
        spinlock_init(&kmem_caches[i].lock);
        kmem_caches[i].free = NULL;
        kmem_caches[i].size = (size_t)1 << (i + KMEM_MIN_SHIFT);
    }

    return 0;
}

INIT_OP_DEFINE(kmem_setup, INIT_OP_DEP(vm_page_setup, true));
