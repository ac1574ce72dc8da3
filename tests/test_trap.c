/*
 * Exceptions: a breakpoint is handled and execution resumes after it.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/test.h>
#include <machine/trap.h>

static volatile unsigned int test_trap_bp_count;
static volatile uint64_t test_trap_bp_rip;

static void
test_trap_bp_handler(struct trap_frame *frame)
{
    test_trap_bp_count++;
    test_trap_bp_rip = frame->rip;
}

TEST_DEFINE(trap, breakpoint_resumes)
{
    volatile unsigned int after = 0;
    uintptr_t resume_addr;

    trap_register(TRAP_BP, test_trap_bp_handler);
    test_trap_bp_count = 0;

    /* int3 is a trap: the saved RIP is the instruction after it. */
    __asm__ volatile("int3\n"
                     "1:\n"
                     "leaq 1b(%%rip), %0\n"
                     : "=r"(resume_addr));
    after = 1;
    trap_register(TRAP_BP, NULL);

    TEST_ASSERT_EQ(test_trap_bp_count, 1);
    TEST_ASSERT_EQ(test_trap_bp_rip, resume_addr);
    TEST_ASSERT_EQ(after, 1);
}

TEST_DEFINE(trap, exception_names)
{
    TEST_ASSERT(trap_name(TRAP_PF)[0] == 'p');
    TEST_ASSERT(trap_name(TRAP_GP)[0] == 'g');
    TEST_ASSERT(trap_name(TRAP_DF)[0] == 'd');
}

/* Deliberate crash: run with test=crash.page_fault to see a panic report. */
TEST_DEFINE_MANUAL(crash, page_fault)
{
    volatile uint64_t *bad = (volatile uint64_t *)0xdead000;

    *bad = 1;
    TEST_ASSERT(0);
}
