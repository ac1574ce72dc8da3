/*
 * Exceptions: a breakpoint is handled and execution resumes after it; a
 * #GP of an exception-safe MSR access resumes at its fixup.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/string.h>
#include <kern/test.h>
#include <machine/cpu.h>
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

/*
 * The exception-safe MSR accessors. An MSR that exists reads as RDMSR
 * reads it. A #GP comes back as EIO instead of a panic: a write of
 * reserved bits 63:32 of IA32_PKRS faults everywhere (SDM vol. 4, table
 * 2-2; without PKS the MSR does not exist at all), QEMU's TCG included.
 * A read of an MSR that does not exist faults on hardware and under KVM,
 * but TCG (QEMU 7.2) reads every MSR it does not emulate as 0 without a
 * #GP - the TSC MSR among them - so there the read can only be checked
 * for surviving.
 */
#define TEST_TRAP_MSR_TSC       0x10
#define TEST_TRAP_MSR_APIC_BASE 0x1b
#define TEST_TRAP_MSR_PKRS      0x6e1
#define TEST_TRAP_MSR_EFER      0xc0000080
#define TEST_TRAP_MSR_MISSING   0xdeadbeef  /* in no allocated range */

#define TEST_TRAP_APIC_BASE_EN  (1ULL << 11)
#define TEST_TRAP_EFER_LMA      (1ULL << 10)

/* True under QEMU's TCG (hypervisor leaf signature "TCGTCGTCGTCG"). */
static bool
test_trap_under_tcg(void)
{
    uint32_t eax, ebx, ecx, edx;
    char signature[12];

    cpu_cpuid(1, 0, &eax, &ebx, &ecx, &edx);

    if (!(ecx & CPU_CPUID1_ECX_HYPERVISOR)) {
        return false;
    }

    cpu_cpuid(0x40000000, 0, &eax, &ebx, &ecx, &edx);
    memcpy(&signature[0], &ebx, 4);
    memcpy(&signature[4], &ecx, 4);
    memcpy(&signature[8], &edx, 4);
    return memcmp(signature, "TCGTCGTCGTCG", sizeof(signature)) == 0;
}

TEST_DEFINE(trap, msr_safe_reads_existing_msrs)
{
    uint64_t before, after, value;

    value = 0;
    TEST_ASSERT_EQ(cpu_get_msr_safe(TEST_TRAP_MSR_EFER, &value), 0);
    TEST_ASSERT_EQ(value, cpu_get_msr(TEST_TRAP_MSR_EFER));
    TEST_ASSERT(value & TEST_TRAP_EFER_LMA);    /* we run in long mode */

    value = 0;
    TEST_ASSERT_EQ(cpu_get_msr_safe(TEST_TRAP_MSR_APIC_BASE, &value), 0);
    TEST_ASSERT_EQ(value, cpu_get_msr(TEST_TRAP_MSR_APIC_BASE));
    TEST_ASSERT(value & TEST_TRAP_APIC_BASE_EN);

    before = cpu_get_tsc();
    value = 0;
    TEST_ASSERT_EQ(cpu_get_msr_safe(TEST_TRAP_MSR_TSC, &value), 0);
    after = cpu_get_tsc();

    if (!test_trap_under_tcg()) {
        TEST_ASSERT(value >= before);
        TEST_ASSERT(value <= after);
    }
}

TEST_DEFINE(trap, msr_safe_write_fault_returns_eio)
{
    for (unsigned int i = 0; i < 3; i++) {
        TEST_ASSERT_EQ(cpu_set_msr_safe(TEST_TRAP_MSR_PKRS, 1ULL << 32), EIO);
    }

    TEST_ASSERT(cpu_intr_enabled());
}

TEST_DEFINE(trap, msr_safe_read_of_missing_msr_survives)
{
    uint64_t value = 0x1234;
    int error;

    error = cpu_get_msr_safe(TEST_TRAP_MSR_MISSING, &value);
    TEST_ASSERT_EQ(value, 0);

    if (test_trap_under_tcg()) {
        TEST_ASSERT_EQ(error, 0);
        test_diag("TCG reads a missing MSR as 0 without #GP");
    } else {
        TEST_ASSERT_EQ(error, EIO);
    }
}
