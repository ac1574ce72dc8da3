/*
 * Symbol lookup in the table that tools/build/gen-ksyms generates from a first
 * link of the kernel (see the Makefile).
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/ksym.h>
#include <kern/string.h>

struct ksym_entry {
    uint64_t addr;
    uint32_t name;      /* offset into ksym_names */
    uint32_t reserved;
};

extern const uint64_t ksym_count;
extern const struct ksym_entry ksym_table[];
extern const char ksym_names[];
extern char text_start[], text_end[];

const char *
ksym_lookup(uintptr_t addr, uintptr_t *offsetp)
{
    size_t low = 0, high = ksym_count;

    if (addr < (uintptr_t)text_start || addr >= (uintptr_t)text_end
        || ksym_count == 0 || addr < ksym_table[0].addr) {
        return NULL;
    }

    /* Find the last entry whose address is <= addr. */
    while (high - low > 1) {
        size_t mid = low + (high - low) / 2;

        if (ksym_table[mid].addr <= addr) {
            low = mid;
        } else {
            high = mid;
        }
    }

    *offsetp = addr - ksym_table[low].addr;
    return &ksym_names[ksym_table[low].name];
}

/*
 * A linear search: perf annotate looks up one name per command, and the
 * table is sorted by address, not name.
 */
int
ksym_find(const char *name, uintptr_t *addrp, uintptr_t *sizep)
{
    for (size_t i = 0; i < ksym_count; i++) {
        if (strcmp(&ksym_names[ksym_table[i].name], name) != 0) {
            continue;
        }

        *addrp = ksym_table[i].addr;
        *sizep = ((i + 1 < ksym_count) ? ksym_table[i + 1].addr
                                       : (uintptr_t)text_end) - *addrp;
        return 0;
    }

    return ENOENT;
}
