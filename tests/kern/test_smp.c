/*
 * Processors and per-CPU data.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/percpu.h>
#include <kern/test.h>
#include <kern/xcall.h>
#include <machine/cpu.h>
#include <machine/lapic.h>

static unsigned int test_smp_seen[CPU_MAX];
static unsigned int test_smp_apic[CPU_MAX];
static uint64_t test_smp_local __percpu;

static void
test_smp_report(void *arg)
{
    unsigned int cpu = cpu_id();

    (void)arg;
    __atomic_fetch_add(&test_smp_seen[cpu], 1, __ATOMIC_RELAXED);
    test_smp_apic[cpu] = lapic_get_id();
    *cpu_local_ptr(test_smp_local) = 1000 + cpu;
}

/* Every CPU runs code, once, reports distinct APIC ids, and owns its
 * per-CPU copy. */
TEST_DEFINE(smp, every_cpu_comes_up)
{
    unsigned int n = cpu_count();

    for (unsigned int i = 0; i < CPU_MAX; i++) {
        test_smp_seen[i] = 0;
    }

    xcall_broadcast(test_smp_report, NULL);

    for (unsigned int i = 0; i < n; i++) {
        TEST_ASSERT(cpu_online(i));
        TEST_ASSERT_EQ(test_smp_seen[i], 1);
        TEST_ASSERT_EQ(test_smp_apic[i], cpu_apic_id(i));

        for (unsigned int j = 0; j < i; j++) {
            TEST_ASSERT_NE(test_smp_apic[i], test_smp_apic[j]);
        }

        TEST_ASSERT_EQ(*percpu_ptr(test_smp_local, i), 1000 + i);
    }

    for (unsigned int i = n; i < CPU_MAX; i++) {
        TEST_ASSERT(!cpu_online(i));
        TEST_ASSERT_EQ(test_smp_seen[i], 0);
    }
}

TEST_DEFINE(smp, percpu_areas_are_distinct)
{
    for (unsigned int i = 0; i < cpu_count(); i++) {
        for (unsigned int j = 0; j < i; j++) {
            uintptr_t a = (uintptr_t)percpu_ptr(test_smp_local, i);
            uintptr_t b = (uintptr_t)percpu_ptr(test_smp_local, j);

            TEST_ASSERT(a >= b + percpu_size() || b >= a + percpu_size());
        }
    }
}

/*
 * percpu_area_create refuses a CPU at or past CPU_MAX (EINVAL) and one
 * that has its area (EEXIST), and changes no area.
 */
TEST_DEFINE(smp, percpu_area_create_rejects_bad_cpus)
{
    unsigned int last = cpu_count() - 1;
    void *area = percpu_areas[last];

    TEST_ASSERT_EQ(percpu_area_create(CPU_MAX), EINVAL);
    TEST_ASSERT_EQ(percpu_area_create(~0U), EINVAL);

    if (last != 0) {
        TEST_ASSERT_EQ(percpu_area_create(last), EEXIST);
    }

    TEST_ASSERT(percpu_areas[last] == area);
    TEST_ASSERT_EQ(percpu_area_create(0), 0);
    TEST_ASSERT(percpu_areas[0] == percpu_start);
}
