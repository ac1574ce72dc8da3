/*
 * ACPI: find the RSDP (from the boot loader, or by scanning the BIOS area),
 * walk the RSDT or XSDT to the MADT and register every enabled processor,
 * and to the FADT for the power-management timer. Layouts: ACPI
 * specification 6.5, sections 5.2.3.2 (Generic Address Structure), 5.2.5
 * (RSDP), 5.2.7-5.2.8 (RSDT, XSDT), 5.2.9 (FADT), 5.2.12 (MADT) and
 * 5.2.12.2 (Processor Local APIC).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/init.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/string.h>
#include <machine/acpi.h>
#include <machine/boot.h>
#include <machine/cpu.h>

struct acpi_rsdp {
    char signature[8];
    uint8_t checksum;
    char oem_id[6];
    uint8_t revision;
    uint32_t rsdt_address;
    uint32_t length;
    uint64_t xsdt_address;
    uint8_t extended_checksum;
    uint8_t reserved[3];
} __packed;

struct acpi_sdt_header {
    char signature[4];
    uint32_t length;
    uint8_t revision;
    uint8_t checksum;
    char oem_id[6];
    char oem_table_id[8];
    uint32_t oem_revision;
    uint32_t creator_id;
    uint32_t creator_revision;
} __packed;

struct acpi_gas {
    uint8_t space_id;
    uint8_t bit_width;
    uint8_t bit_offset;
    uint8_t access_size;
    uint64_t address;
} __packed;

#define ACPI_GAS_SYSTEM_IO      1

/* The FADT up to X_PM_TMR_BLK; older revisions end before the X_ fields. */
struct acpi_fadt {
    struct acpi_sdt_header header;
    uint8_t unused1[40];            /* FIRMWARE_CTRL to PM2_CNT_BLK */
    uint32_t pm_tmr_blk;
    uint8_t unused2[11];            /* GPE0_BLK to PM2_CNT_LEN */
    uint8_t pm_tmr_len;
    uint8_t unused3[20];            /* GPE0_BLK_LEN to reserved */
    uint32_t flags;
    uint8_t unused4[92];            /* RESET_REG to X_PM2_CNT_BLK */
    struct acpi_gas x_pm_tmr_blk;
} __packed;

_Static_assert(__builtin_offsetof(struct acpi_fadt, pm_tmr_blk) == 76,
               "FADT PM_TMR_BLK offset");
_Static_assert(__builtin_offsetof(struct acpi_fadt, flags) == 112,
               "FADT Flags offset");
_Static_assert(__builtin_offsetof(struct acpi_fadt, x_pm_tmr_blk) == 208,
               "FADT X_PM_TMR_BLK offset");

#define ACPI_FADT_TMR_VAL_EXT   0x100   /* the PM timer has 32 bits */
#define ACPI_FADT_HW_REDUCED    0x100000

struct acpi_madt {
    struct acpi_sdt_header header;
    uint32_t lapic_address;
    uint32_t flags;
} __packed;

#define ACPI_MADT_LAPIC         0
#define ACPI_MADT_LAPIC_ENABLED 0x1

struct acpi_madt_lapic {
    uint8_t type;
    uint8_t length;
    uint8_t processor_id;
    uint8_t apic_id;
    uint32_t flags;
} __packed;

static uint16_t acpi_pm_timer_port;
static unsigned int acpi_pm_timer_bits;

static bool
acpi_checksum_ok(const void *table, size_t size)
{
    const uint8_t *p = table;
    uint8_t sum = 0;

    for (size_t i = 0; i < size; i++) {
        sum += p[i];
    }

    return sum == 0;
}

/* The EBDA and the BIOS read-only area, 16-byte aligned (ACPI 5.2.5.1). */
static const struct acpi_rsdp *
acpi_scan_rsdp(void)
{
    uint64_t ebda = (uint64_t)*(const uint16_t *)boot_phys_to_virt(0x40e)
                    << 4;
    uint64_t ranges[2][2] = { { ebda, ebda + 1024 }, { 0xe0000, 0x100000 } };

    for (unsigned int r = 0; r < 2; r++) {
        for (uint64_t pa = ranges[r][0]; pa + 20 <= ranges[r][1]; pa += 16) {
            const struct acpi_rsdp *rsdp = boot_phys_to_virt(pa);

            if (memcmp(rsdp->signature, "RSD PTR ", 8) == 0
                && acpi_checksum_ok(rsdp, 20)) {
                return rsdp;
            }
        }
    }

    return NULL;
}

static const struct acpi_sdt_header *
acpi_find_table(const struct acpi_rsdp *rsdp, const char *signature)
{
    const struct acpi_sdt_header *root;
    size_t entry_size, nr_entries;
    bool xsdt = rsdp->revision >= 2 && rsdp->xsdt_address != 0;

    root = boot_phys_to_virt(xsdt ? rsdp->xsdt_address : rsdp->rsdt_address);
    entry_size = xsdt ? 8 : 4;
    nr_entries = (root->length - sizeof(*root)) / entry_size;

    for (size_t i = 0; i < nr_entries; i++) {
        const uint8_t *entry = (const uint8_t *)(root + 1) + i * entry_size;
        uint64_t pa = 0;
        const struct acpi_sdt_header *table;

        memcpy(&pa, entry, entry_size);
        table = boot_phys_to_virt(pa);

        if (memcmp(table->signature, signature, 4) == 0
            && acpi_checksum_ok(table, table->length)) {
            return table;
        }
    }

    return NULL;
}

/*
 * Section 5.2.9: the PM timer exists when PM_TMR_LEN is 4 and the
 * platform is not HW_REDUCED_ACPI; X_PM_TMR_BLK, when the table is long
 * enough to hold it and it is not zero, replaces PM_TMR_BLK; TMR_VAL_EXT
 * gives the width. A timer in memory space is left unused (QEMU's is in
 * I/O space).
 */
static void
acpi_parse_fadt(const struct acpi_fadt *fadt)
{
    uint64_t port = fadt->pm_tmr_blk;

    if (fadt->header.length < __builtin_offsetof(struct acpi_fadt, unused4)
        || fadt->pm_tmr_len != 4 || (fadt->flags & ACPI_FADT_HW_REDUCED)) {
        return;
    }

    if (fadt->header.length >= sizeof(*fadt)
        && fadt->x_pm_tmr_blk.address != 0) {
        if (fadt->x_pm_tmr_blk.space_id != ACPI_GAS_SYSTEM_IO) {
            return;
        }

        port = fadt->x_pm_tmr_blk.address;
    }

    if (port == 0 || port > UINT16_MAX - 3) {
        return;
    }

    acpi_pm_timer_port = (uint16_t)port;
    acpi_pm_timer_bits = (fadt->flags & ACPI_FADT_TMR_VAL_EXT) ? 32 : 24;
}

static int
acpi_setup(void)
{
    const struct acpi_fadt *fadt;
    const struct acpi_rsdp *rsdp;
    const struct acpi_madt *madt;
    const uint8_t *p, *end;
    unsigned int nr_found = 0;

    if (boot_info.rsdp_size >= 20) {
        rsdp = (const struct acpi_rsdp *)boot_info.rsdp;
    } else {
        rsdp = acpi_scan_rsdp();
    }

    if (rsdp == NULL) {
        log_warning("acpi: no RSDP, running on the boot processor only");
        return ENOENT;
    }

    fadt = (const struct acpi_fadt *)acpi_find_table(rsdp, "FACP");

    if (fadt != NULL) {
        acpi_parse_fadt(fadt);
    }

    madt = (const struct acpi_madt *)acpi_find_table(rsdp, "APIC");

    if (madt == NULL) {
        log_warning("acpi: no MADT, running on the boot processor only");
        return ENOENT;
    }

    p = (const uint8_t *)(madt + 1);
    end = (const uint8_t *)madt + madt->header.length;

    while (p + 2 <= end && p[1] >= 2 && p + p[1] <= end) {
        const struct acpi_madt_lapic *lapic = (const void *)p;

        if (lapic->type == ACPI_MADT_LAPIC
            && (lapic->flags & ACPI_MADT_LAPIC_ENABLED)) {
            nr_found++;

            if (cpu_register(lapic->apic_id) < 0) {
                log_warning("acpi: more than %u processors, apic id %u "
                            "ignored", CPU_MAX, lapic->apic_id);
            }
        }

        p += p[1];
    }

    log_info("acpi: %u processor%s in the MADT", nr_found,
             (nr_found == 1) ? "" : "s");
    return 0;
}

int
acpi_get_pm_timer(uint16_t *port, unsigned int *bits)
{
    if (acpi_pm_timer_port == 0) {
        return ENOENT;
    }

    *port = acpi_pm_timer_port;
    *bits = acpi_pm_timer_bits;
    return 0;
}

INIT_OP_DEFINE(acpi_setup);
