/*
 * Bit idioms shared by the kernel: iteration over set bits, population
 * count (no popcnt instruction is assumed: libgcc is not linked) and the
 * mask of a counter width.
 */
#ifndef KERN_BITOPS_H
#define KERN_BITOPS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Run the statement that follows for each set bit of a 32-bit mask, lowest
 * first, with bit (declared here, uint32_t) its index. The mask is read
 * once.
 */
#define FOR_EACH_BIT(bit, mask)                                         \
    for (uint32_t bit##_rest_ = (mask), bit = 0;                        \
         bit##_rest_ != 0 && ((bit = __builtin_ctz(bit##_rest_)), true); \
         bit##_rest_ &= bit##_rest_ - 1)

static inline unsigned int
bitops_popcount(uint64_t x)
{
    unsigned int n = 0;

    for (; x != 0; x &= x - 1) {
        n++;
    }

    return n;
}

/* The values of a width-bit counter: 2^width - 1 (all ones at 64). */
static inline uint64_t
bitops_width_mask(unsigned int width)
{
    return (width >= 64) ? ~0ULL : (1ULL << width) - 1;
}

#endif /* KERN_BITOPS_H */
