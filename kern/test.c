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

struct test_undo {
    void (*fn)(void *arg);
    void *arg;
};

struct test_ctx {
    const struct test *test;
    struct thread *thread;
    struct jmp_buf jmp;
    unsigned int preempt_level;
    unsigned long flags;            /* interrupts as the test started */
    volatile bool failed;
    bool skipped;
    const char *skip_reason;
    struct test_undo undo[TEST_MAX_UNDO];
    unsigned int nr_undo;
    unsigned long nr_failures_end;  /* test_nr_failures as it was judged */
};

static struct test_ctx test_ctx;

/*
 * Every failure reported, by any thread, while a test runs or not: a test
 * failed when the count moved while it ran, and test_run_all counts the
 * moves between tests (a helper or an untracked thread that failed after
 * its test ended, a failure before the run) as failures of their own, so
 * that none is lost. Incremented with release after the failure's line is
 * printed; read with acquire by the test's thread.
 */
static unsigned long test_nr_failures;

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

int
test_undo_on_failure(void (*fn)(void *arg), void *arg)
{
    if (fn == NULL || test_ctx.test == NULL
        || thread_self() != test_ctx.thread) {
        return EINVAL;
    }

    if (test_ctx.nr_undo == ARRAY_SIZE(test_ctx.undo)) {
        return ENOMEM;
    }

    test_ctx.undo[test_ctx.nr_undo].fn = fn;
    test_ctx.undo[test_ctx.nr_undo].arg = arg;
    test_ctx.nr_undo++;
    return 0;
}

/*
 * Run the failed test's undo actions, still on its stack. Not when it
 * holds a lock or disabled preemption: the run stops there anyway. An
 * action that fails comes back here, past itself.
 */
static void
test_undo(void)
{
    if (thread_preempt_level() != test_ctx.preempt_level) {
        return;
    }

    cpu_intr_restore(test_ctx.flags);

    while (test_ctx.nr_undo > 0) {
        struct test_undo *undo = &test_ctx.undo[--test_ctx.nr_undo];

        undo->fn(undo->arg);
    }
}

static __noreturn void
test_unwind(void)
{
    if (thread_self() == test_ctx.thread) {
        test_undo();
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
    __atomic_fetch_add(&test_nr_failures, 1, __ATOMIC_RELEASE);
    test_ctx.failed = true;
    test_unwind();
}

void
test_loosen(const char *fmt, ...)
{
    char buf[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    printf("# loosened: %s\n", buf);
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

/* The linker-built table; addresses are subtracted as integers since the
 * two symbols are distinct objects to the compiler. */
static size_t
test_table_size(void)
{
    return ((uintptr_t)test_table_end - (uintptr_t)test_table_start)
           / sizeof(test_table_start[0]);
}

/*
 * Whether glob pattern pat (len characters; '*' any run, '?' any one
 * character) matches all of str. Backtracks only to the last '*', which
 * is enough for patterns without character classes.
 */
static bool
test_glob_match(const char *pat, size_t len, const char *str)
{
    const char *star = NULL, *resume = NULL;
    size_t i = 0;

    while (*str != '\0') {
        if (i < len && pat[i] == '*') {
            star = &pat[i++];
            resume = str;
        } else if (i < len && (pat[i] == '?' || pat[i] == *str)) {
            i++;
            str++;
        } else if (star != NULL) {
            i = (size_t)(star - pat) + 1;
            str = ++resume;
        } else {
            return false;
        }
    }

    while (i < len && pat[i] == '*') {
        i++;
    }

    return i == len;
}

static bool
test_entry_is_glob(const char *entry, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (entry[i] == '*' || entry[i] == '?') {
            return true;
        }
    }

    return false;
}

/*
 * Does entry (len characters) select the test? "all", a suite and a glob
 * leave manual tests out (they fail, crash or hang on purpose, or run for
 * minutes): those run only when named in full, suite.name.
 */
static bool
test_entry_matches(const struct test *test, const char *entry, size_t len)
{
    size_t suite_len = strlen(test->suite);
    size_t name_len = strlen(test->name);
    char full[96];

    if (len == 3 && strncmp(entry, "all", 3) == 0) {
        return !test->manual;
    }

    if (test_entry_is_glob(entry, len)) {
        snprintf(full, sizeof(full), "%s.%s", test->suite, test->name);
        return !test->manual && test_glob_match(entry, len, full);
    }

    if (len < suite_len || strncmp(entry, test->suite, suite_len) != 0) {
        return false;
    }

    if (len == suite_len) {
        return !test->manual;
    }

    return len == suite_len + 1 + name_len && entry[suite_len] == '.'
           && strncmp(entry + suite_len + 1, test->name, name_len) == 0;
}

/* Call fn on each non-empty comma-separated entry of selection. */
static bool
test_selection_any(const char *selection,
                   bool (*fn)(const char *entry, size_t len, const void *arg),
                   const void *arg)
{
    const char *p = selection;

    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = (end == NULL) ? strlen(p) : (size_t)(end - p);

        if (len > 0 && fn(p, len, arg)) {
            return true;
        }

        p += len;

        if (*p == ',') {
            p++;
        }
    }

    return false;
}

static bool
test_entry_selects(const char *entry, size_t len, const void *arg)
{
    return test_entry_matches(arg, entry, len);
}

static bool
test_selected(const struct test *test, const char *selection)
{
    return test_selection_any(selection, test_entry_selects, test);
}

/*
 * Report an entry that selects no test, as a command-line error (the
 * runner fails a boot that prints one). Never stops the iteration.
 */
static bool
test_entry_report_unknown(const char *entry, size_t len, const void *arg)
{
    unsigned int *nr_unknown = (unsigned int *)arg;
    const struct test *manual = NULL;

    for (size_t i = 0; i < test_table_size(); i++) {
        const struct test *t = test_table_start[i];

        if (test_entry_matches(t, entry, len)) {
            return false;
        }

        if (t->manual && manual == NULL && strlen(t->suite) == len
            && strncmp(t->suite, entry, len) == 0) {
            manual = t;
        }
    }

    (*nr_unknown)++;

    if (manual != NULL) {
        printf("error: command line: test=%.*s: only manual tests there, "
               "which run only by full name (e.g. %s.%s)\n", (int)len,
               entry, manual->suite, manual->name);
    } else {
        printf("error: command line: test=%.*s: no such test or suite "
               "(globs: * and ?)\n", (int)len, entry);
    }

    return false;
}

/*
 * Run one test and print its result; return false to stop the run. Its
 * failures are those counted after seen, the count test_stray_failures
 * last judged: one that lands between the two is the test's, not lost.
 */
static bool
test_run_one(const struct test *test, unsigned int index,
             unsigned long seen)
{
    unsigned long flags = cpu_get_rflags();
    unsigned long nr_failures = seen;

    test_ctx.test = test;
    test_ctx.thread = thread_self();
    test_ctx.preempt_level = thread_preempt_level();
    test_ctx.flags = flags;
    test_ctx.failed = false;
    test_ctx.skipped = false;
    test_ctx.nr_undo = 0;

    if (jmp_save(&test_ctx.jmp) == 0) {
        test->fn();
    } else if (thread_preempt_level() != test_ctx.preempt_level) {
        /*
         * The test stopped with a lock held or preemption disabled: the
         * kernel state cannot be trusted for the next tests.
         */
        printf("not ok %u %s.%s\n", index, test->suite, test->name);
        printf("# aborting the run: test ended with preemption disabled\n");
        test_ctx.failed = true;
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
        test_ctx.failed = true;
        test_ctx.test = NULL;
        return false;
    }

    /* A failure of another thread while the test ran fails it too. */
    test_ctx.nr_failures_end = __atomic_load_n(&test_nr_failures,
                                               __ATOMIC_ACQUIRE);

    if (test_ctx.nr_failures_end != nr_failures) {
        test_ctx.failed = true;
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

/*
 * Count the failures reported since *seen while no test ran (before the
 * run, between two tests, after the last one), each a failure of the run:
 * say so, and return how many.
 */
static unsigned int
test_stray_failures(unsigned long *seen)
{
    unsigned long now = __atomic_load_n(&test_nr_failures, __ATOMIC_ACQUIRE);
    unsigned long nr = now - *seen;

    *seen = now;

    if (nr != 0) {
        printf("# FAIL %lu failure%s reported outside a running test "
               "(above)\n", nr, (nr == 1) ? "" : "s");
    }

    return (unsigned int)nr;
}

unsigned int
test_run_all(const char *selection)
{
    unsigned int nr_selected = 0, index = 0, nr_failed = 0;
    size_t nr_tests = test_table_size();
    unsigned long seen = 0;

    /* Misspelt entries fail the run, even when others select tests. */
    test_selection_any(selection, test_entry_report_unknown, &nr_failed);

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

        nr_failed += test_stray_failures(&seen);
        go_on = test_run_one(t, ++index, seen);
        nr_failed += test_ctx.failed || !go_on;

        if (!go_on) {
            /* Its failures are counted, the run ends. */
            seen = __atomic_load_n(&test_nr_failures, __ATOMIC_ACQUIRE);
            break;
        }

        /* The failures up to its verdict were the test's: it failed. */
        seen = test_ctx.nr_failures_end;
    }

    nr_failed += test_stray_failures(&seen);

    if (nr_selected == 0 && nr_failed == 0) {
        /* An empty selection (test=,) is a mistake, not a pass. */
        printf("error: command line: test=%s selects no test\n", selection);
        nr_failed++;
    }

    return nr_failed;
}
