/*
 * In-kernel test harness.
 *
 * A test is defined with TEST_DEFINE(suite, name) { ... } in any file under
 * tests/; the linker collects them in a table sorted by suite name. The
 * command line selects them: test=all, or a comma list of suites and
 * suite.name entries. TEST_DEFINE_MANUAL tests (deliberate failures and
 * crashes used to check the harness itself, long runs) are left out of
 * test=all and run when they or their suite are named. A selection that
 * matches no test counts as a failure.
 *
 * Output is KTAP version 1. A failed assertion prints the file, line and
 * compared values as a diagnostic and ends the test; helper threads that
 * a test starts may assert too: their failure fails the running test and
 * ends the helper thread. No failure is lost: one reported by any thread
 * while a test runs fails that test, and one reported while none runs
 * (before the run, between tests) fails the run, with a line saying so.
 */
#ifndef KERN_TEST_H
#define KERN_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include <kern/macros.h>

struct thread;
struct thread_attr;

struct test {
    const char *suite;
    const char *name;
    void (*fn)(void);
    bool manual;
};

#define TEST_DEFINE_(suite_, name_, manual_)                            \
    static void test_fn_##suite_##_##name_(void);                       \
    static const struct test test_##suite_##_##name_ = {                \
        #suite_, #name_, test_fn_##suite_##_##name_, manual_            \
    };                                                                  \
    static const struct test *const test_ptr_##suite_##_##name_         \
        __section(".tests." #suite_) __used = &test_##suite_##_##name_; \
    static void test_fn_##suite_##_##name_(void)

#define TEST_DEFINE(suite, name)        TEST_DEFINE_(suite, name, false)
#define TEST_DEFINE_MANUAL(suite, name) TEST_DEFINE_(suite, name, true)

/* Fail the running test. Does not return. Thread context. */
void test_fail_at(const char *file, int line, const char *fmt, ...)
    __noreturn __format_printf(3, 4);

/* End the running test as skipped, with a reason. Thread context. */
void test_skip(const char *reason) __noreturn;

/*
 * Create a helper thread for the running test (thread_create's arguments
 * and errors, EAGAIN when too many helpers run). The harness tracks it:
 * when the test fails while the helper's function still runs, the run
 * ends there with a report, rather than letting the helper use the failed
 * test's stack under the next tests. Thread context.
 */
int test_helper_start(struct thread **threadp, const struct thread_attr *attr,
                      void (*fn)(void *arg), void *arg);

/*
 * Have fn(arg) called if the running test fails or skips, before its
 * stack unwinds: to undo what it set up that would outlive it (an event
 * left attached would fail the tests after it, and point into a dead
 * stack). arg must live as long as the test function runs. The actions
 * run last registered first, on the test's thread, with interrupts and
 * preemption as the test started (not at all when it ended holding a
 * lock: the run stops there). A test that ends normally drops them, and
 * has undone everything itself. Return EINVAL for a NULL fn or a call
 * from another thread than the test's, ENOMEM beyond TEST_MAX_UNDO
 * actions. Thread context, the running test's thread.
 */
#define TEST_MAX_UNDO 32
int test_undo_on_failure(void (*fn)(void *arg), void *arg);

/* Print a KTAP diagnostic line ("# ..."). Any context. */
void test_diag(const char *fmt, ...) __format_printf(1, 2);

/*
 * Say that a check of the running test is looser than it is written, or
 * left out (why, and what is still checked): a line "# loosened: ...",
 * which the runner counts and lists after the run, so that no check
 * shrinks unseen. A check that cannot run at all is test_skip's. Any
 * context.
 */
void test_loosen(const char *fmt, ...) __format_printf(1, 2);

void test_fail_cmp(const char *file, int line, const char *a_str,
                   const char *op, const char *b_str, uint64_t a, uint64_t b)
    __noreturn;

#define TEST_ASSERT(cond)                                               \
    do {                                                                \
        if (unlikely(!(cond))) {                                        \
            test_fail_at(__FILE__, __LINE__, "assertion failed: %s",    \
                         #cond);                                        \
        }                                                               \
    } while (0)

#define TEST_ASSERT_CMP_(a, op, b)                                      \
    do {                                                                \
        uint64_t test_a_ = (uint64_t)(a);                               \
        uint64_t test_b_ = (uint64_t)(b);                               \
                                                                        \
        if (unlikely(!(test_a_ op test_b_))) {                          \
            test_fail_cmp(__FILE__, __LINE__, #a, #op, #b, test_a_,     \
                          test_b_);                                     \
        }                                                               \
    } while (0)

/* Comparisons of unsigned 64-bit values (error codes, counts). */
#define TEST_ASSERT_EQ(a, b)    TEST_ASSERT_CMP_(a, ==, b)
#define TEST_ASSERT_NE(a, b)    TEST_ASSERT_CMP_(a, !=, b)
#define TEST_ASSERT_LT(a, b)    TEST_ASSERT_CMP_(a, <, b)
#define TEST_ASSERT_LE(a, b)    TEST_ASSERT_CMP_(a, <=, b)
#define TEST_ASSERT_GT(a, b)    TEST_ASSERT_CMP_(a, >, b)
#define TEST_ASSERT_GE(a, b)    TEST_ASSERT_CMP_(a, >=, b)

/*
 * Run the tests the command line selects, print KTAP and return the
 * number of failures. Thread context, called once.
 */
unsigned int test_run_all(const char *selection);

#endif /* KERN_TEST_H */
