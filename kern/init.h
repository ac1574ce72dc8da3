/*
 * Init operations: each module declares its setup function and the init
 * operations it depends on; init_run_all() orders them topologically and
 * runs them once at boot.
 *
 *   INIT_OP_DEFINE(vm_page_setup);                      no dependencies
 *   INIT_OP_DEFINE(kmem_setup,
 *                  INIT_OP_DEP(vm_page_setup, true));   required
 *   INIT_OP_DEFINE(shell_setup,
 *                  INIT_OP_DEP(pmu_intel_setup, false)); ordering only
 *
 * A required dependency that failed makes the dependent operation fail
 * with the same error without running it; an optional one only orders.
 * A dependency cycle is a kernel bug and panics with the cycle's members.
 */
#ifndef KERN_INIT_H
#define KERN_INIT_H

#include <stdbool.h>
#include <stddef.h>

#include <kern/macros.h>

struct init_op;

struct init_op_dep {
    const struct init_op *op;
    bool required;
};

struct init_op {
    const char *name;
    int (*fn)(void);
    const struct init_op_dep *deps;
    size_t nr_deps;
};

#define INIT_OP_DECLARE(fn)     extern const struct init_op init_op_##fn

#define INIT_OP_DEP(fn, required)   { &init_op_##fn, required }

#define INIT_OP_DEFINE(fn_, ...)                                        \
    static const struct init_op_dep init_op_deps_##fn_[] = {           \
        __VA_ARGS__                                                     \
    };                                                                  \
    const struct init_op init_op_##fn_ = {                              \
        .name = #fn_,                                                   \
        .fn = fn_,                                                      \
        .deps = init_op_deps_##fn_,                                     \
        .nr_deps = ARRAY_SIZE(init_op_deps_##fn_),                      \
    };                                                                  \
    static const struct init_op *const init_op_ptr_##fn_                \
        __section(".init_ops") __used = &init_op_##fn_

/*
 * Order ops[0..n) so that every operation comes after the operations it
 * depends on; among operations free to go, table order is kept. A
 * dependency that is not in the table is ignored when optional. Pure
 * function, also compiled into the host tests.
 *
 * Return 0 with the order in out[0..n); EINVAL on a cycle, with its
 * members in cycle[0..*cycle_lenp) (each depends on the next, the last on
 * the first); ENOENT when a required dependency is missing from the table,
 * with the dependent operation in cycle[0] and *cycle_lenp = 1.
 */
int init_order(const struct init_op *const *ops, size_t n,
               const struct init_op **out, const struct init_op **cycle,
               size_t *cycle_lenp);

/*
 * Order and run every init operation of the kernel, logging the order at
 * the debug level. Boot only, called once by the boot processor with
 * interrupts enabled and preemption disabled.
 */
void init_run_all(void);

/*
 * Return the result of an operation that init_run_all() ran: 0, its
 * error, or ENOENT when it has not run. Any context.
 */
int init_op_result(const struct init_op *op);

#endif /* KERN_INIT_H */
