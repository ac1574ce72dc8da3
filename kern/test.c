/*
 * In-kernel test harness. Tests run one at a time in the calling thread;
 * a failure unwinds to the harness with jmp_restore() when it happens in
 * that thread, and ends the thread when it happens in a helper.
 *
 * Helpers started with test_helper_start are tracked until their function
 * returns or fails: a test that ends (fails, skips, or passes and gives
 * them a moment) while one of its helpers still runs ends the run, since
 * the helper may use data on the test's stack, which the next test would
 * reuse.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/clock.h>
#include <kern/errno.h>
#include <kern/log.h>
#include <kern/printf.h>
#include <kern/spinlock.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>
#include <machine/jmp.h>

extern const struct test *const test_table_start[];
extern const struct test *const test_table_end[];

struct test_ctx {
    const struct test *test;
    struct thread *thread;
    struct jmp_buf jmp;
    unsigned int preempt_level;
    volatile bool failed;
    bool skipped;
    const char *skip_reason;
};

static struct test_ctx test_ctx;
static volatile bool test_any_failed;

#define TEST_MAX_HELPERS        512
#define TEST_HELPER_GRACE_TICKS 100

struct test_helper {
    const struct test *test;        /* the test that started it */
    void (*fn)(void *arg);
    void *arg;
    struct thread *thread;          /* set by the helper itself */
    volatile bool running;
};

static struct spinlock test_helpers_lock = SPINLOCK_INITIALIZER;
static struct test_helper test_helpers[TEST_MAX_HELPERS];

/* The running helper record of the calling thread, or NULL. */
static struct test_helper *
test_helper_self(void)
{
    for (unsigned int i = 0; i < TEST_MAX_HELPERS; i++) {
        struct test_helper *h = &test_helpers[i];

        if (h->running && h->thread == thread_self()) {
            return h;
        }
    }

    return NULL;
}

static void
test_helper_main(void *arg)
{
    struct test_helper *h = arg;

    h->thread = thread_self();
    h->fn(h->arg);
    __atomic_store_n(&h->running, false, __ATOMIC_RELEASE);
}

int
test_helper_start(struct thread **threadp, const struct thread_attr *attr,
                  void (*fn)(void *arg), void *arg)
{
    struct test_helper *h = NULL;
    int error;

    spinlock_lock(&test_helpers_lock);

    for (unsigned int i = 0; i < TEST_MAX_HELPERS; i++) {
        if (!test_helpers[i].running) {
            h = &test_helpers[i];
            h->test = test_ctx.test;
            h->fn = fn;
            h->arg = arg;
            h->thread = NULL;
            h->running = true;
            break;
        }
    }

    spinlock_unlock(&test_helpers_lock);

    if (h == NULL) {
        return EAGAIN;
    }

    error = thread_create(threadp, attr, test_helper_main, h);

    if (error) {
        __atomic_store_n(&h->running, false, __ATOMIC_RELEASE);
    }

    return error;
}

/* Whether a helper of test still runs. */
static bool
test_helper_running(const struct test *test)
{
    for (unsigned int i = 0; i < TEST_MAX_HELPERS; i++) {
        struct test_helper *h = &test_helpers[i];

        if (__atomic_load_n(&h->running, __ATOMIC_ACQUIRE)
            && h->test == test) {
            return true;
        }
    }

    return false;
}

/*
 * Whether every helper of the test that just ended has returned. After a
 * pass, one may still be on its way out (it set the flag the test waited
 * on): give it TEST_HELPER_GRACE_TICKS. After a failure or a skip, a
 * helper may still use the test's stack, which waiting would reuse: no
 * grace.
 */
static bool
test_helpers_done(const struct test *test)
{
    uint64_t deadline = clock_get_time() + TEST_HELPER_GRACE_TICKS;

    if (test_ctx.failed || test_ctx.skipped) {
        return !test_helper_running(test);
    }

    while (test_helper_running(test)) {
        if (clock_get_time() >= deadline) {
            return false;
        }

        thread_delay(1);
    }

    return true;
}

void
test_diag(const char *fmt, ...)
{
    char buf[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("# %s\n", buf);
}

static __noreturn void
test_unwind(void)
{
    if (thread_self() == test_ctx.thread) {
        jmp_restore(&test_ctx.jmp, 1);
    }

    /* A helper thread: its failure is recorded, it ends here. */
    {
        struct test_helper *h = test_helper_self();

        if (h != NULL) {
            __atomic_store_n(&h->running, false, __ATOMIC_RELEASE);
        }
    }

    thread_exit();
}

void
test_fail_at(const char *file, int line, const char *fmt, ...)
{
    char buf[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("# FAIL %s:%d: %s\n", file, line, buf);
    test_ctx.failed = true;
    test_any_failed = true;
    test_unwind();
}

void
test_fail_cmp(const char *file, int line, const char *a_str,
              const char *op, const char *b_str, uint64_t a, uint64_t b)
{
    test_fail_at(file, line, "%s %s %s: %llu (0x%llx) vs %llu (0x%llx)",
                 a_str, op, b_str, (unsigned long long)a,
                 (unsigned long long)a, (unsigned long long)b,
                 (unsigned long long)b);
}

void
test_skip(const char *reason)
{
    test_ctx.skipped = true;
    test_ctx.skip_reason = reason;
    test_unwind();
}

/* Does entry (up to a comma or the end) select the test? */
static bool
test_entry_matches(const struct test *test, const char *entry, size_t len)
{
    size_t suite_len = strlen(test->suite);
    size_t name_len = strlen(test->name);

    if (len == 3 && strncmp(entry, "all", 3) == 0) {
        return !test->manual;
    }

    if (len < suite_len || strncmp(entry, test->suite, suite_len) != 0) {
        return false;
    }

    /* Naming a suite runs all of it, manual tests included. */
    if (len == suite_len) {
        return true;
    }

    return len == suite_len + 1 + name_len && entry[suite_len] == '.'
           && strncmp(entry + suite_len + 1, test->name, name_len) == 0;
}

static bool
test_selected(const struct test *test, const char *selection)
{
    const char *p = selection;

    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = (end == NULL) ? strlen(p) : (size_t)(end - p);

        if (test_entry_matches(test, p, len)) {
            return true;
        }

        p += len;

        if (*p == ',') {
            p++;
        }
    }

    return false;
}

/* Run one test and print its result; return false to stop the run. */
static bool
test_run_one(const struct test *test, unsigned int index)
{
    unsigned long flags = cpu_get_rflags();

    test_ctx.test = test;
    test_ctx.thread = thread_self();
    test_ctx.preempt_level = thread_preempt_level();
    test_ctx.failed = false;
    test_ctx.skipped = false;

    if (jmp_save(&test_ctx.jmp) == 0) {
        test->fn();
    } else if (thread_preempt_level() != test_ctx.preempt_level) {
        /*
         * The test stopped with a lock held or preemption disabled: the
         * kernel state cannot be trusted for the next tests.
         */
        printf("not ok %u %s.%s\n", index, test->suite, test->name);
        printf("# aborting the run: test ended with preemption disabled\n");
        test_any_failed = true;
        thread_preempt_level_set(test_ctx.preempt_level);
        cpu_intr_restore(flags);
        test_ctx.test = NULL;
        return false;
    }

    cpu_intr_restore(flags);

    if (!test_helpers_done(test)) {
        printf("not ok %u %s.%s\n", index, test->suite, test->name);
        printf("# aborting the run: the test %s with a helper thread "
               "still running\n", test_ctx.failed ? "failed"
                                   : test_ctx.skipped ? "skipped" : "ended");
        test_any_failed = true;
        test_ctx.failed = true;
        test_ctx.test = NULL;
        return false;
    }

    if (test_ctx.failed) {
        printf("not ok %u %s.%s\n", index, test->suite, test->name);
    } else if (test_ctx.skipped) {
        printf("ok %u %s.%s # SKIP %s\n", index, test->suite, test->name,
               test_ctx.skip_reason);
    } else {
        printf("ok %u %s.%s\n", index, test->suite, test->name);
    }

    test_ctx.test = NULL;
    return true;
}

/* The linker-built table; addresses are subtracted as integers since the
 * two symbols are distinct objects to the compiler. */
static size_t
test_table_size(void)
{
    return ((uintptr_t)test_table_end - (uintptr_t)test_table_start)
           / sizeof(test_table_start[0]);
}

unsigned int
test_run_all(const char *selection)
{
    unsigned int nr_selected = 0, index = 0, nr_failed = 0;
    size_t nr_tests = test_table_size();

    for (size_t i = 0; i < nr_tests; i++) {
        nr_selected += test_selected(test_table_start[i], selection);
    }

    printf("KTAP version 1\n1..%u\n", nr_selected);

    for (size_t i = 0; i < nr_tests; i++) {
        const struct test *t = test_table_start[i];
        bool go_on;

        if (!test_selected(t, selection)) {
            continue;
        }

        go_on = test_run_one(t, ++index);
        nr_failed += test_ctx.failed || !go_on;

        if (!go_on) {
            break;
        }
    }

    if (nr_selected == 0) {
        /* A selection that matches nothing is a mistake, not a pass. */
        printf("# no test matches test=%s\n", selection);
        nr_failed++;
    }

    return nr_failed;
}
