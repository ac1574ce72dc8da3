/*
 * perfmon's device registry on the host: two hardware devices in one
 * registry, each counting a range of raw codes. An event goes to the first
 * device whose translate accepts it, counts exactly there, and leaves the
 * other device alone; an event no device accepts gets the first refusal;
 * the registry refuses a device twice, a second software device and a
 * device beyond PERFMON_MAX_DEVS, changing nothing.
 *
 * The devices are polled, with 48-bit counters whose values the test sets:
 * a counter's read is devs_values[device][counter].
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/init.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_test.h>

#include <machine/lapic.h>

#include "host_env.h"
#include "host_test.h"

#define DEVS_NR_COUNTERS    2
#define DEVS_WIDTH      48

/* Raw codes: device 0 counts 0x100-0x1ff, device 1 0x180-0x2ff. */
#define DEVS_CODE_0     0x110   /* device 0 only */
#define DEVS_CODE_BOTH  0x190   /* both: device 0, registered first */
#define DEVS_CODE_1     0x210   /* device 1 only */
#define DEVS_CODE_NONE  0x310   /* neither */

struct devs_dev {
    struct perfmon_dev dev;
    uint64_t lo;
    uint64_t hi;
    uint32_t reserved;
    uint64_t values[DEVS_NR_COUNTERS];
};

static struct devs_dev devs_devs[2];
static struct perfmon_dev devs_extra;

static struct devs_dev *
devs_of(unsigned int d)
{
    return &devs_devs[d];
}

/* The device whose operation this is: each has its own table. */
#define DEVS_OPS(d)                                                     \
static int                                                              \
devs_translate_##d(uint64_t *configp, uint64_t id, unsigned int flags)  \
{                                                                       \
    return devs_translate(devs_of(d), configp, id, flags);              \
}                                                                       \
                                                                        \
static int                                                              \
devs_alloc_##d(unsigned int *counterp, unsigned int *widthp,             \
               uint64_t config)                                         \
{                                                                       \
    return devs_alloc(devs_of(d), counterp, widthp, config);             \
}                                                                       \
                                                                        \
static void                                                             \
devs_free_##d(unsigned int counter)                                      \
{                                                                       \
    devs_of(d)->reserved &= ~(1U << counter);                            \
}                                                                       \
                                                                        \
static uint64_t                                                         \
devs_read_##d(unsigned int counter)                                      \
{                                                                       \
    return devs_of(d)->values[counter];                                  \
}                                                                       \
                                                                        \
static uint64_t                                                         \
devs_start_##d(unsigned int counter, uint64_t config)                    \
{                                                                       \
    (void)config;                                                       \
    return devs_of(d)->values[counter];                                  \
}                                                                       \
                                                                        \
static const struct perfmon_dev_ops devs_ops_##d = {                    \
    .translate = devs_translate_##d,                                    \
    .alloc = devs_alloc_##d,                                            \
    .free = devs_free_##d,                                              \
    .start = devs_start_##d,                                            \
    .stop = devs_stop,                                                  \
    .read = devs_read_##d,                                              \
};

static int
devs_translate(const struct devs_dev *d, uint64_t *configp, uint64_t id,
               unsigned int flags)
{
    if (!(flags & PERFMON_EF_RAW) || id < d->lo || id > d->hi) {
        return EINVAL;
    }

    *configp = id;
    return 0;
}

static int
devs_alloc(struct devs_dev *d, unsigned int *counterp, unsigned int *widthp,
           uint64_t config)
{
    (void)config;

    for (unsigned int i = 0; i < DEVS_NR_COUNTERS; i++) {
        if (!(d->reserved & (1U << i))) {
            d->reserved |= 1U << i;
            *counterp = i;
            *widthp = DEVS_WIDTH;
            return 0;
        }
    }

    return EAGAIN;
}

static void
devs_stop(unsigned int counter)
{
    (void)counter;
}

DEVS_OPS(0)
DEVS_OPS(1)

static int devs_setup_error;
static int devs_register_errors[2];
static bool devs_booted;

static void
devs_init(struct perfmon_dev *dev, const char *name,
          const struct perfmon_dev_ops *ops)
{
    dev->name = name;
    dev->ops = ops;
    dev->nr_counters = DEVS_NR_COUNTERS;
    dev->min_width = DEVS_WIDTH;
    dev->max_rate = 1ULL << 20;
}

static void
devs_boot(void)
{
    if (devs_booted) {
        return;
    }

    devs_booted = true;
    devs_setup_error = init_op_perfmon_setup.fn();
    devs_devs[0].lo = 0x100;
    devs_devs[0].hi = 0x1ff;
    devs_devs[1].lo = 0x180;
    devs_devs[1].hi = 0x2ff;
    devs_init(&devs_devs[0].dev, "devs0", &devs_ops_0);
    devs_init(&devs_devs[1].dev, "devs1", &devs_ops_1);
    devs_register_errors[0] = perfmon_dev_register(&devs_devs[0].dev);
    devs_register_errors[1] = perfmon_dev_register(&devs_devs[1].dev);
}

static void
devs_begin(void)
{
    devs_boot();
    host_env_recover();
    HOST_ASSERT_EQ(devs_setup_error, 0);
    HOST_ASSERT_EQ(devs_register_errors[0], 0);
    HOST_ASSERT_EQ(devs_register_errors[1], 0);
}

static void
devs_end(void)
{
    for (unsigned int d = 0; d < 2; d++) {
        HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(&devs_devs[d].dev), 0);
        HOST_ASSERT_EQ(devs_devs[d].reserved, 0);
    }

    HOST_ASSERT_EQ(host_env_nr_locks_held(), 0);
}

/* No interrupt is raised here; the environment's trap path needs it. */
void
lapic_eoi(void)
{
}

/* Two hardware devices register; the first is the one perfmon names. */
HOST_TEST(two_hardware_devices_register)
{
    devs_begin();
    HOST_ASSERT(perfmon_dev_get(false) == &devs_devs[0].dev);
    HOST_ASSERT(perfmon_dev_get(true) == NULL);
    devs_end();
}

/*
 * An event goes to the first device that accepts it, counts exactly
 * what that device's counter counted, and takes nothing of the other.
 */
HOST_TEST(event_goes_to_the_first_device_that_translates_it)
{
    static const struct {
        uint64_t code;
        unsigned int dev;
    } cases[] = {
        { DEVS_CODE_0, 0 },
        { DEVS_CODE_BOTH, 0 },
        { DEVS_CODE_1, 1 },
    };

    devs_begin();

    for (unsigned int k = 0; k < ARRAY_SIZE(cases); k++) {
        struct devs_dev *d = &devs_devs[cases[k].dev];
        struct devs_dev *other = &devs_devs[1 - cases[k].dev];
        struct perfmon_event event;
        unsigned int counter, width;

        HOST_ASSERT_EQ(perfmon_event_check(cases[k].code,
                                           PERFMON_EF_RAW | PERFMON_EF_KERN),
                       0);
        HOST_ASSERT_EQ(perfmon_event_init(&event, cases[k].code,
                                          PERFMON_EF_RAW | PERFMON_EF_KERN),
                       0);
        HOST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), 0);
        HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(&d->dev), 1);
        HOST_ASSERT_EQ(perfmon_dev_nr_used_slots(&other->dev), 0);
        HOST_ASSERT_EQ(other->reserved, 0);
        HOST_ASSERT(perfmon_slot_counter(&d->dev,
                                         perfmon_event_slot_index(&event),
                                         &counter, &width));
        HOST_ASSERT_EQ(width, DEVS_WIDTH);

        /* The other device's counter with the same id moves: no count. */
        d->values[counter] += 1000 + k;
        other->values[counter] += 77;
        HOST_ASSERT_EQ(perfmon_event_read(&event), 1000 + k);
        HOST_ASSERT_EQ(perfmon_event_detach(&event), 0);
        HOST_ASSERT_EQ(perfmon_event_read(&event), 1000 + k);
    }

    devs_end();
}

/* An event no device accepts: the first refusal, nothing taken. */
HOST_TEST(event_no_device_translates_is_refused)
{
    struct perfmon_event event;

    devs_begin();
    HOST_ASSERT_EQ(perfmon_event_check(DEVS_CODE_NONE,
                                       PERFMON_EF_RAW | PERFMON_EF_KERN),
                   EINVAL);
    HOST_ASSERT_EQ(perfmon_event_init(&event, DEVS_CODE_NONE,
                                      PERFMON_EF_RAW | PERFMON_EF_KERN), 0);
    HOST_ASSERT_EQ(perfmon_event_attach_cpu(&event, 0), EINVAL);
    HOST_ASSERT(!perfmon_event_attached(&event));

    /* Software events name no device here: none is registered. */
    HOST_ASSERT_EQ(perfmon_event_check(0, PERFMON_EF_SW), ENODEV);
    devs_end();
}

/* A device registered twice, or beyond the registry's room: EBUSY. */
HOST_TEST(registry_refuses_again_and_beyond_its_room)
{
    devs_begin();
    HOST_ASSERT_EQ(perfmon_dev_register(&devs_devs[1].dev), EBUSY);
    devs_init(&devs_extra, "extra", &devs_ops_0);
    HOST_ASSERT_EQ(perfmon_dev_register(&devs_extra), EBUSY);
    devs_extra.sw = true;
    HOST_ASSERT_EQ(perfmon_dev_register(&devs_extra), EBUSY);
    HOST_ASSERT(perfmon_dev_get(false) == &devs_devs[0].dev);
    HOST_ASSERT(perfmon_dev_get(true) == NULL);
    devs_end();
}

HOST_TEST_MAIN()
