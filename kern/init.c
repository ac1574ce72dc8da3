/*
 * Running the init operations at boot.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/panic.h>
#include <kern/printf.h>

#define INIT_MAX 256

extern const struct init_op *const init_ops_start[];
extern const struct init_op *const init_ops_end[];

static const struct init_op *init_sorted[INIT_MAX];
static int init_results[INIT_MAX];
static size_t init_nr_run;

int
init_op_result(const struct init_op *op)
{
    for (size_t i = 0; i < init_nr_run; i++) {
        if (init_sorted[i] == op) {
            return init_results[i];
        }
    }

    return ENOENT;
}

static void
init_panic_order(int error, const struct init_op **cycle, size_t len)
{
    char buf[200];
    int n = 0;

    if (error == ENOENT) {
        panic("init: %s has a required dependency that is not linked in",
              cycle[0]->name);
    }

    if (error != EINVAL) {
        panic("init: cannot order init operations (error %d)", error);
    }

    for (size_t i = 0; i < len && n < (int)sizeof(buf); i++) {
        n += snprintf(buf + n, sizeof(buf) - n, "%s -> ", cycle[i]->name);
    }

    if (n < (int)sizeof(buf)) {
        snprintf(buf + n, sizeof(buf) - n, "%s", cycle[0]->name);
    }

    panic("init: dependency cycle: %s", buf);
}

void
init_run_all(void)
{
    const struct init_op *cycle[INIT_MAX];
    /* Linker symbols: subtract addresses, not pointers to distinct objects. */
    size_t n = ((uintptr_t)init_ops_end - (uintptr_t)init_ops_start)
               / sizeof(init_ops_start[0]);
    size_t cycle_len;
    int error;

    if (n > INIT_MAX) {
        panic("init: too many init operations (%zu)", n);
    }

    error = init_order(init_ops_start, n, init_sorted, cycle, &cycle_len);

    if (error) {
        init_panic_order(error, cycle, cycle_len);
    }

    for (size_t i = 0; i < n; i++) {
        const struct init_op *op = init_sorted[i];
        int result = 0;

        log_debug("init: %zu/%zu %s", i + 1, n, op->name);

        for (size_t d = 0; d < op->nr_deps; d++) {
            if (op->deps[d].required) {
                int dep_result = init_op_result(op->deps[d].op);

                if (dep_result != 0) {
                    result = dep_result;
                    break;
                }
            }
        }

        if (result == 0) {
            result = op->fn();
        }

        init_results[i] = result;
        init_nr_run = i + 1;

        if (result != 0) {
            log_warning("init: %s failed with error %d", op->name, result);
        }
    }
}
