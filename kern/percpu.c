/*
 * Per-CPU areas.
 */
#include <stddef.h>

#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/percpu.h>
#include <kern/string.h>
#include <machine/cpu.h>

void *percpu_areas[CPU_MAX] = { percpu_start };

int
percpu_area_create(unsigned int cpu)
{
    struct cpu_head *head;
    void *area;

    if (cpu >= CPU_MAX) {
        return EINVAL;
    }

    if (cpu == 0) {
        return 0;
    }

    if (percpu_areas[cpu] != NULL) {
        return EEXIST;
    }

    area = kmem_alloc(percpu_size());

    if (area == NULL) {
        return ENOMEM;
    }

    memset(area, 0, percpu_size());
    head = area;
    head->self = area;
    head->id = cpu;
    percpu_areas[cpu] = area;
    return 0;
}
