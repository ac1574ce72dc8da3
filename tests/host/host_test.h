/*
 * Minimal KTAP harness for host unit tests: HOST_TEST(name) defines a test,
 * HOST_TEST_MAIN() runs them all and prints KTAP like the kernel does.
 */
#ifndef HOST_TEST_H
#define HOST_TEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct host_test {
    const char *name;
    void (*fn)(void);
    void (*fn_arg)(const void *arg);    /* when fn is NULL */
    const void *arg;
};

#define HOST_TEST_MAX 128

extern struct host_test host_tests[HOST_TEST_MAX];
extern unsigned int host_nr_tests;
extern jmp_buf host_test_jmp;

#define HOST_TEST(id)                                                   \
    static void host_test_##id(void);                                   \
    __attribute__((constructor)) static void host_test_reg_##id(void) \
    {                                                                   \
        host_tests[host_nr_tests].name = #id;                           \
        host_tests[host_nr_tests].fn = host_test_##id;                \
        host_nr_tests++;                                                \
    }                                                                   \
    static void host_test_##id(void)

/*
 * Register a test made at run time, from a table: fn(arg) runs as test
 * name. From a constructor, as HOST_TEST's registrations.
 */
static inline void
host_test_register(const char *name, void (*fn)(const void *arg),
                   const void *arg)
{
    host_tests[host_nr_tests].name = name;
    host_tests[host_nr_tests].fn = NULL;
    host_tests[host_nr_tests].fn_arg = fn;
    host_tests[host_nr_tests].arg = arg;
    host_nr_tests++;
}

#define HOST_FAIL(...)                                                  \
    do {                                                                \
        printf("# FAIL %s:%d: ", __FILE__, __LINE__);                   \
        printf(__VA_ARGS__);                                            \
        printf("\n");                                                   \
        longjmp(host_test_jmp, 1);                                      \
    } while (0)

#define HOST_ASSERT(cond)                                               \
    do {                                                                \
        if (!(cond)) {                                                  \
            HOST_FAIL("assertion failed: %s", #cond);                   \
        }                                                               \
    } while (0)

#define HOST_ASSERT_EQ(a, b)                                            \
    do {                                                                \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                \
        if (a_ != b_) {                                                 \
            HOST_FAIL("%s == %s: %" PRIu64 " (0x%" PRIx64 ") vs %"      \
                      PRIu64 " (0x%" PRIx64 ")", #a, #b, a_, a_, b_, b_); \
        }                                                               \
    } while (0)

#define HOST_ASSERT_STREQ(a, b)                                         \
    do {                                                                \
        const char *a_ = (a), *b_ = (b);                                \
        if (strcmp(a_, b_) != 0) {                                      \
            HOST_FAIL("%s == %s: \"%s\" vs \"%s\"", #a, #b, a_, b_);    \
        }                                                               \
    } while (0)

#define HOST_TEST_MAIN()                                                \
    struct host_test host_tests[HOST_TEST_MAX];                         \
    unsigned int host_nr_tests;                                         \
    jmp_buf host_test_jmp;                                              \
                                                                        \
    int                                                                 \
    main(void)                                                          \
    {                                                                   \
        volatile unsigned int failed = 0;                                      \
                                                                        \
        setvbuf(stdout, NULL, _IOLBF, 0);                               \
        printf("KTAP version 1\n1..%u\n", host_nr_tests);               \
                                                                        \
        for (unsigned int i = 0; i < host_nr_tests; i++) {             \
            if (setjmp(host_test_jmp) == 0) {                           \
                if (host_tests[i].fn != NULL) {                         \
                    host_tests[i].fn();                                 \
                } else {                                                \
                    host_tests[i].fn_arg(host_tests[i].arg);            \
                }                                                       \
                printf("ok %u %s\n", i + 1, host_tests[i].name);        \
            } else {                                                    \
                printf("not ok %u %s\n", i + 1, host_tests[i].name);    \
                failed++;                                               \
            }                                                           \
        }                                                               \
                                                                        \
        return failed != 0;                                             \
    }

#endif /* HOST_TEST_H */
