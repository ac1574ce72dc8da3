/*
 * Host tests of the init operation ordering (kern/init_order.c).
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/errno.h>
#include <kern/init.h>

#include "host_test.h"

static int
nop(void)
{
    return 0;
}

#define OP(name, ...)                                                   \
    static struct init_op name;                                         \
    static struct init_op_dep name##_deps[] = { __VA_ARGS__ };          \
    static struct init_op name = {                                      \
        #name, nop, name##_deps, sizeof(name##_deps) / sizeof(name##_deps[0]) \
    }

#define REQ(op)     { &op, true }
#define OPT(op)     { &op, false }

static size_t
position(const struct init_op **order, size_t n, const struct init_op *op)
{
    for (size_t i = 0; i < n; i++) {
        if (order[i] == op) {
            return i;
        }
    }

    return n;
}

/* Order ops and check every dependency present comes first. */
static void
check_order(const struct init_op *const *ops, size_t n,
            const struct init_op **out)
{
    const struct init_op *cycle[16];
    size_t cycle_len = 0;

    HOST_ASSERT_EQ(init_order(ops, n, out, cycle, &cycle_len), 0);

    for (size_t i = 0; i < n; i++) {
        HOST_ASSERT(position(out, n, ops[i]) < n);

        for (size_t d = 0; d < ops[i]->nr_deps; d++) {
            size_t dep_pos = position(out, n, ops[i]->deps[d].op);

            if (dep_pos < n) {
                HOST_ASSERT(dep_pos < position(out, n, ops[i]));
            }
        }
    }
}

OP(a);
OP(b, REQ(a));
OP(c, REQ(a));
OP(d, REQ(b), REQ(c));

HOST_TEST(diamond)
{
    /* Table order deliberately reversed. */
    const struct init_op *ops[] = { &d, &c, &b, &a };
    const struct init_op *out[4];

    check_order(ops, 4, out);
    HOST_ASSERT(out[0] == &a);
    HOST_ASSERT(out[3] == &d);
    /* Among free operations table order is kept: c before b. */
    HOST_ASSERT(out[1] == &c);
    HOST_ASSERT(out[2] == &b);
}

OP(x);
OP(y);
OP(z);

HOST_TEST(independent_keep_table_order)
{
    const struct init_op *ops[] = { &y, &z, &x };
    const struct init_op *out[3];

    check_order(ops, 3, out);
    HOST_ASSERT(out[0] == &y && out[1] == &z && out[2] == &x);
}

static struct init_op q_op, r;

OP(p, REQ(q_op));
OP(q_op, REQ(r));
OP(r, REQ(p));
OP(s);

HOST_TEST(cycle_is_reported)
{
    const struct init_op *ops[] = { &s, &p, &q_op, &r };
    const struct init_op *out[4], *cycle[8];
    size_t cycle_len = 0;

    HOST_ASSERT_EQ(init_order(ops, 4, out, cycle, &cycle_len), EINVAL);
    HOST_ASSERT_EQ(cycle_len, 3);

    /* Each member depends on the next, the last on the first. */
    for (size_t i = 0; i < cycle_len; i++) {
        const struct init_op *next = cycle[(i + 1) % cycle_len];

        HOST_ASSERT(cycle[i]->deps[0].op == next);
    }
}

OP(self_loop, REQ(self_loop));

HOST_TEST(self_cycle)
{
    const struct init_op *ops[] = { &self_loop };
    const struct init_op *out[1], *cycle[2];
    size_t cycle_len = 0;

    HOST_ASSERT_EQ(init_order(ops, 1, out, cycle, &cycle_len), EINVAL);
    HOST_ASSERT_EQ(cycle_len, 1);
    HOST_ASSERT(cycle[0] == &self_loop);
}

OP(absent);
OP(uses_optional, OPT(absent));
OP(uses_required, REQ(absent));

HOST_TEST(optional_dependency_absent)
{
    const struct init_op *ops[] = { &uses_optional, &a };
    const struct init_op *out[2];

    check_order(ops, 2, out);
    HOST_ASSERT(out[0] == &uses_optional);
}

OP(late);
OP(wants_late, OPT(late));

HOST_TEST(optional_dependency_present_orders)
{
    const struct init_op *ops[] = { &wants_late, &late };
    const struct init_op *out[2];

    check_order(ops, 2, out);
    HOST_ASSERT(out[0] == &late);
    HOST_ASSERT(out[1] == &wants_late);
}

HOST_TEST(required_dependency_absent)
{
    const struct init_op *ops[] = { &a, &uses_required };
    const struct init_op *out[2], *cycle[2];
    size_t cycle_len = 0;

    HOST_ASSERT_EQ(init_order(ops, 2, out, cycle, &cycle_len), ENOENT);
    HOST_ASSERT(cycle[0] == &uses_required);
}

HOST_TEST(empty)
{
    const struct init_op *out[1], *cycle[1];
    size_t cycle_len = 0;

    HOST_ASSERT_EQ(init_order(NULL, 0, out, cycle, &cycle_len), 0);
}

HOST_TEST_MAIN()
