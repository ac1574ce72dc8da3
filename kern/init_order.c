/*
 * Topological ordering of init operations. Pure code: no allocation, no
 * kernel services, so the host tests compile it unchanged.
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/errno.h>
#include <kern/init.h>

#define INIT_ORDER_MAX 256

static size_t
init_order_index(const struct init_op *const *ops, size_t n,
                 const struct init_op *op)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i] == op) {
            return i;
        }
    }

    return n;
}

/* Follow unplaced dependencies from start until one repeats. */
static size_t
init_order_find_cycle(const struct init_op *const *ops, size_t n,
                      const bool *placed, size_t start,
                      const struct init_op **cycle)
{
    size_t path[INIT_ORDER_MAX];
    size_t len = 0, cur = start;

    for (;;) {
        const struct init_op *op = ops[cur];
        size_t next = n;

        for (size_t i = 0; i < len; i++) {
            if (path[i] == cur) {
                for (size_t j = i; j < len; j++) {
                    cycle[j - i] = ops[path[j]];
                }

                return len - i;
            }
        }

        path[len++] = cur;

        for (size_t d = 0; d < op->nr_deps && next == n; d++) {
            size_t idx = init_order_index(ops, n, op->deps[d].op);

            if (idx < n && !placed[idx]) {
                next = idx;
            }
        }

        /* Every unplaced operation has an unplaced dependency. */
        cur = next;
    }
}

int
init_order(const struct init_op *const *ops, size_t n,
           const struct init_op **out, const struct init_op **cycle,
           size_t *cycle_lenp)
{
    bool placed[INIT_ORDER_MAX] = { false };
    size_t nr_placed = 0;

    if (n > INIT_ORDER_MAX) {
        return E2BIG;
    }

    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < ops[i]->nr_deps; d++) {
            const struct init_op_dep *dep = &ops[i]->deps[d];

            if (dep->required && init_order_index(ops, n, dep->op) == n) {
                cycle[0] = ops[i];
                *cycle_lenp = 1;
                return ENOENT;
            }
        }
    }

    while (nr_placed < n) {
        size_t pick = n;

        for (size_t i = 0; i < n && pick == n; i++) {
            bool ready = !placed[i];

            for (size_t d = 0; ready && d < ops[i]->nr_deps; d++) {
                size_t idx = init_order_index(ops, n, ops[i]->deps[d].op);

                if (idx < n && !placed[idx]) {
                    ready = false;
                }
            }

            if (ready) {
                pick = i;
            }
        }

        if (pick == n) {
            for (size_t i = 0; i < n; i++) {
                if (!placed[i]) {
                    *cycle_lenp = init_order_find_cycle(ops, n, placed, i,
                                                        cycle);
                    return EINVAL;
                }
            }
        }

        placed[pick] = true;
        out[nr_placed++] = ops[pick];
    }

    return 0;
}
