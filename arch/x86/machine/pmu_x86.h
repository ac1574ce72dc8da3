/*
 * Helpers shared by the x86 PMU drivers (pmu_intel, pmu_amd), so that
 * neither carries a copy of the other's code.
 */
#ifndef X86_PMU_X86_H
#define X86_PMU_X86_H

#include <stdint.h>

#include <kern/errno.h>
#include <machine/cpu.h>

/*
 * Write value to an MSR and read it back, through the exception-safe
 * accessors, to prove the register before a driver trusts it: a hypervisor
 * may advertise a PMU yet fault on its MSRs, or drop the writes. Return 0,
 * EIO (an access faulted) or ENODEV (the value did not stick); on error
 * *msrp names the MSR. Boot CPU, counting off.
 */
static inline int
pmu_x86_probe_msr(uint32_t msr, uint64_t value, uint32_t *msrp)
{
    uint64_t readback;
    int error;

    *msrp = msr;
    error = cpu_set_msr_safe(msr, value);

    if (error) {
        return error;
    }

    error = cpu_get_msr_safe(msr, &readback);

    if (error) {
        return error;
    }

    return (readback == value) ? 0 : ENODEV;
}

#endif /* X86_PMU_X86_H */
