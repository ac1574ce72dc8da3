/*
 * Physical pages and the kernel heap.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/kmem.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/vm_page.h>
#include <kern/xcall.h>
#include <machine/cpu.h>

#define TEST_KMEM_NR_OBJS 64

TEST_DEFINE(kmem, sizes_alignment_and_no_overlap)
{
    static const size_t sizes[] = { 1, 8, 16, 17, 100, 512, 2048, 2049,
                                    4096, 10000 };
    char *objs[ARRAY_SIZE(sizes)];

    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        objs[i] = kmem_alloc(sizes[i]);
        TEST_ASSERT(objs[i] != NULL);
        TEST_ASSERT_EQ((uintptr_t)objs[i] % 16, 0);
        memset(objs[i], (int)i + 1, sizes[i]);
    }

    /* Every object still holds its own pattern: nothing overlapped. */
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        for (size_t j = 0; j < sizes[i]; j++) {
            TEST_ASSERT_EQ((unsigned char)objs[i][j], i + 1);
        }

        kmem_free(objs[i]);
    }
}

TEST_DEFINE(kmem, free_then_reuse)
{
    void *objs[TEST_KMEM_NR_OBJS];
    void *again;

    for (size_t i = 0; i < TEST_KMEM_NR_OBJS; i++) {
        objs[i] = kmem_alloc(48);
        TEST_ASSERT(objs[i] != NULL);
    }

    kmem_free(objs[7]);
    again = kmem_alloc(64);
    /* The 48-byte class is the 64-byte class: the freed object returns. */
    TEST_ASSERT(again == objs[7]);
    objs[7] = again;

    for (size_t i = 0; i < TEST_KMEM_NR_OBJS; i++) {
        kmem_free(objs[i]);
    }

    kmem_free(NULL);
}

/*
 * Each size class, 16 to 2048 bytes, serves every size above the class
 * below it: an object of 2^k bytes freed comes back (the class's free list
 * is last in, first out) for 2^(k-1) + 1 bytes and for 2^k, and one byte
 * more is the next class.
 */
TEST_DEFINE(kmem, size_class_boundaries)
{
    for (unsigned int shift = 4; shift <= 11; shift++) {
        size_t size = (size_t)1 << shift;
        size_t low = (shift == 4) ? 1 : (size / 2 + 1);
        void *obj = kmem_alloc(size);
        void *again, *next;

        TEST_ASSERT(obj != NULL);
        kmem_free(obj);
        again = kmem_alloc(low);
        TEST_ASSERT(again == obj);
        kmem_free(again);
        again = kmem_alloc(size);
        TEST_ASSERT(again == obj);
        kmem_free(again);
        next = kmem_alloc(size + 1);
        TEST_ASSERT(next != NULL && next != obj);
        TEST_ASSERT_EQ((uintptr_t)next % ((size + 1 > 2048) ? 4096 : 16), 0);
        kmem_free(next);
    }
}

TEST_DEFINE(kmem, bad_sizes_return_null)
{
    size_t before = vm_page_nr_free();

    TEST_ASSERT(kmem_alloc(0) == NULL);
    TEST_ASSERT(kmem_alloc((size_t)VM_PAGE_SIZE << (VM_PAGE_ORDER_MAX + 1))
                == NULL);
    TEST_ASSERT(kmem_alloc(((size_t)VM_PAGE_SIZE << VM_PAGE_ORDER_MAX) + 1)
                == NULL);
    TEST_ASSERT(kmem_alloc(SIZE_MAX) == NULL);
    TEST_ASSERT(vm_page_alloc(VM_PAGE_ORDER_MAX + 1) == NULL);
    TEST_ASSERT_EQ(vm_page_nr_free(), before);
}

TEST_DEFINE(kmem, zalloc_zeroes)
{
    unsigned char *p = kmem_alloc(256);

    TEST_ASSERT(p != NULL);
    memset(p, 0xa5, 256);
    kmem_free(p);
    p = kmem_zalloc(256);
    TEST_ASSERT(p != NULL);

    for (size_t i = 0; i < 256; i++) {
        TEST_ASSERT_EQ(p[i], 0);
    }

    kmem_free(p);
}

TEST_DEFINE(kmem, page_blocks_are_aligned)
{
    for (unsigned int order = 0; order <= 4; order++) {
        void *block = vm_page_alloc(order);

        TEST_ASSERT(block != NULL);
        TEST_ASSERT_EQ((uintptr_t)block % ((uintptr_t)VM_PAGE_SIZE << order),
                       0);
        vm_page_free(block, order);
    }
}

/*
 * Exhaust memory with 1 MiB blocks: allocation fails cleanly with NULL,
 * the free page count falls by exactly what was taken, and freeing it all
 * restores the count and lets allocation succeed again.
 */
TEST_DEFINE(kmem, out_of_memory_returns_null)
{
    const size_t block_size = 1 << 20;
    const size_t block_pages = block_size / VM_PAGE_SIZE;
    size_t before = vm_page_nr_free();
    void **blocks = kmem_alloc(8192 * sizeof(void *));
    size_t n = 0;
    void *p;

    TEST_ASSERT(blocks != NULL);
    before = vm_page_nr_free();

    while (n < 8192) {
        p = kmem_alloc(block_size);

        if (p == NULL) {
            break;
        }

        /* Touch the first and last byte: the memory is really there. */
        ((char *)p)[0] = 1;
        ((char *)p)[block_size - 1] = 1;
        blocks[n++] = p;
    }

    TEST_ASSERT(n > 0);
    TEST_ASSERT(n < 8192);
    TEST_ASSERT_EQ(vm_page_nr_free(), before - n * block_pages);
    /* Exhausted means no free aligned block of that size is left. */
    TEST_ASSERT(vm_page_alloc(8) == NULL);

    for (size_t i = 0; i < n; i++) {
        kmem_free(blocks[i]);
    }

    TEST_ASSERT_EQ(vm_page_nr_free(), before);
    p = kmem_alloc(block_size);
    TEST_ASSERT(p != NULL);
    kmem_free(p);
    kmem_free(blocks);
}

static void
test_kmem_in_nmi_probe(void *arg)
{
    bool *in_nmi = arg;

    *in_nmi = cpu_in_nmi();
}

/*
 * kmem asserts it is not called in an NMI (cpu_in_nmi): the predicate is
 * false where kmem is allowed, in a thread and in an interrupt (the
 * cross-CPU call's handler on another CPU).
 */
TEST_DEFINE(kmem, nmi_predicate_is_false_in_threads_and_interrupts)
{
    bool in_nmi = true;
    void *obj;

    TEST_ASSERT(!cpu_in_nmi());
    obj = kmem_alloc(64);
    TEST_ASSERT(obj != NULL);
    kmem_free(obj);

    if (cpu_count() > 1) {
        unsigned int other = (cpu_id() + 1) % cpu_count();

        TEST_ASSERT_EQ(xcall_call(other, test_kmem_in_nmi_probe, &in_nmi), 0);
        TEST_ASSERT(!in_nmi);
    }
}
