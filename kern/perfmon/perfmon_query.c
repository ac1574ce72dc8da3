/*
 * perfmon's queries for clients (kern/perfmon.h) about the devices, so
 * that a client such as the shell's perf tool reads no device structure
 * (kern/perfmon_dev.h is the drivers').
 */
#include <stdbool.h>
#include <stddef.h>

#include <kern/errno.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>

int
perfmon_dev_info(bool sw, struct perfmon_dev_info *info)
{
    const struct perfmon_dev *dev = perfmon_dev_get(sw);

    if (dev == NULL) {
        return ENODEV;
    }

    *info = (struct perfmon_dev_info){
        .name = dev->name,
        .nr_counters = dev->nr_counters,
        .min_width = dev->min_width,
        .fw_counters = dev->fw_counters,
    };
    return 0;
}
