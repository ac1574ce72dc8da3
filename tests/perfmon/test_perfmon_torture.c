/*
 * perfmon torture: worker threads on every CPU attach, read and detach
 * thread and CPU events on random targets, with a seeded PRNG, while the
 * target threads emit, migrate and exit. Counts are checked as they go:
 * each target counts its own units on its own events, exactly, under all
 * that churn on the same slots; a worker's event on a target's channel
 * reads what the target published between attach and read, within one burst
 * at each end; any count never goes back. There are more raw events than
 * counters, so they take turns (multiplexing): the events checked exactly
 * are pinned (PERFMON_EF_PINNED), the kernel events and silent channels
 * (nobody emits there: they read 0, exactly) rotate. Workers also disable
 * (the count then stays exactly where it was), enable (it counts on from
 * there) and reset (zero, counting from then) their events, and targets
 * count their channels in a group, read at once. An attach is refused only
 * when its target has exited, or on purpose: workers attach groups with
 * more raw events than counters (E2BIG), events in no valid state and
 * groups with a member initialized again (EINVAL), and check that nothing
 * changed; they also add such a member back and count exactly with the
 * group. At the end every slot is free on every tier,
 * every thread reference is dropped, and no assertion fired. test=all runs
 * a bounded number of operations (about 6000 in all, so a 64-CPU run under
 * TCG stays short); `make torture` sets torture.ops (per CPU) for a run of
 * minutes.
 */
#include <stdbool.h>
#include <stdint.h>

#include <kern/arg.h>
#include <kern/errno.h>
#include <kern/macros.h>
#include <kern/perfmon.h>
#include <kern/perfmon_dev.h>
#include <kern/perfmon_session.h>
#include <kern/perfmon_test.h>
#include <kern/pmu_soft.h>
#include <kern/string.h>
#include <kern/test.h>
#include <kern/thread.h>
#include <machine/cpu.h>

#include "test_util.h"
#include "torture_util.h"

#define TORTURE_EVENTS          6
#define TORTURE_CHANNELS        3       /* emit channels the targets use */
#define TORTURE_OWN_CHANNEL     3       /* only targets' own events */

#define TORTURE_SILENT          10      /* first of the silent channels */

#define TORTURE_G_EVENTS        2       /* a worker's own group */
#define TORTURE_G_CHANNEL       20      /* its channels, nobody else's */

static const unsigned int torture_event_ids[] = {
    PMU_SOFT_EV_EMIT, PMU_SOFT_EV_EMIT + 1, PMU_SOFT_EV_EMIT + 2,
    PMU_SOFT_EV_CSWITCH, PMU_SOFT_EV_MIGRATION, PMU_SOFT_EV_TICK,
    PMU_SOFT_EV_XCALL,
    PMU_SOFT_EV_EMIT + TORTURE_SILENT, PMU_SOFT_EV_EMIT + TORTURE_SILENT + 1,
    PMU_SOFT_EV_EMIT + TORTURE_SILENT + 2,
    PMU_SOFT_EV_EMIT + TORTURE_SILENT + 3,
    PMU_SOFT_EV_EMIT + TORTURE_SILENT + 4,
    PMU_SOFT_EV_EMIT + TORTURE_SILENT + 5,
};

/*
 * The pinned raw events (the emit channels, the targets' private one and
 * the workers' group channels) always find counters: no EAGAIN. The
 * others outnumber what is left.
 */
_Static_assert(TORTURE_CHANNELS + 1 + TORTURE_G_EVENTS <= PMU_SOFT_NR_COUNTERS,
               "the torture expects no EAGAIN");
_Static_assert(ARRAY_SIZE(torture_event_ids) >= PMU_SOFT_NR_COUNTERS + 1,
               "a group of distinct raw events too many for the counters");
_Static_assert(ARRAY_SIZE(torture_event_ids) + 1 > PMU_SOFT_NR_COUNTERS,
               "the torture multiplexes");

/* A channel of the targets: its events are pinned, and checked exactly. */
static bool
torture_id_emitted(unsigned int id)
{
    return id >= PMU_SOFT_EV_EMIT
           && id < PMU_SOFT_EV_EMIT + TORTURE_OWN_CHANNEL + 1;
}

struct torture_target {
    struct thread *thread;      /* reference held until the end */
    uint64_t seed;
    unsigned int lifetime;      /* bursts before exiting on its own */
    volatile bool stop;
    volatile uint64_t emitted[TORTURE_CHANNELS];   /* published after */
    uint64_t own_emitted;       /* on TORTURE_OWN_CHANNEL */
};

struct torture_worker {
    struct thread *thread;
    uint64_t seed;
    uint64_t ops;
    struct perfmon_event events[TORTURE_EVENTS];
    uint64_t last[TORTURE_EVENTS];
    struct torture_target *targets[TORTURE_EVENTS]; /* emit thread events */
    uint64_t attach_lo[TORTURE_EVENTS];     /* published before attach */
    uint64_t attach_hi[TORTURE_EVENTS];     /* published after attach */
    uint64_t base[TORTURE_EVENTS];          /* count at the last enable */
    bool disabled[TORTURE_EVENTS];

    /* A group of its own channels, pinned; one too big; a bogus event. */
    bool groups_ready;
    struct perfmon_group group;
    struct perfmon_event group_events[TORTURE_G_EVENTS];
    struct perfmon_group big;
    struct perfmon_event big_events[PMU_SOFT_NR_COUNTERS + 1];
    struct perfmon_event bogus;

    uint64_t nr_attach, nr_refused, nr_read, nr_detach, nr_toggle, nr_reset;
    uint64_t nr_readd, nr_refusals;
};

static struct torture_target torture_targets[TORTURE_MAX_TARGETS];
static unsigned int torture_nr_targets;

static void
torture_target_main(void *arg)
{
    struct perfmon_event own[TORTURE_CHANNELS + 1];
    struct torture_target *t = arg;
    struct perfmon_group group;
    struct perfmon_group_value value;

    /* The emit channels in a group, the private one alone. */
    TEST_ASSERT_EQ(perfmon_group_init(&group), 0);

    for (unsigned int ch = 0; ch <= TORTURE_CHANNELS; ch++) {
        TEST_ASSERT_EQ(perfmon_event_init(&own[ch], PMU_SOFT_EV_EMIT + ch,
                                          PERFMON_EF_SW | PERFMON_EF_PINNED),
                       0);

        if (ch < TORTURE_CHANNELS) {
            TEST_ASSERT_EQ(perfmon_group_add(&group, &own[ch]), 0);
        }
    }

    TEST_ASSERT_EQ(perfmon_group_attach(&group, thread_self()), 0);
    TEST_ASSERT_EQ(perfmon_event_attach(&own[TORTURE_CHANNELS],
                                        thread_self()), 0);

    for (unsigned int i = 1; i <= t->lifetime && !t->stop; i++) {
        uint64_t r = test_rand(&t->seed);
        unsigned int ch = r % TORTURE_CHANNELS;
        uint64_t n = 1 + (r >> 8) % TORTURE_BURST_MAX;

        if (r % 7 == 0 && pmu_soft_intr_mode() && pmu_soft_width() < 64) {
            /*
             * Wrap the private counter once (back to the same raw value)
             * and switch out with interrupts held off: only the pending
             * overflow tells the switch's sync that anything was counted.
             */
            unsigned long flags = cpu_intr_save();
            uint64_t wrap = 1ULL << pmu_soft_width();

            pmu_soft_emit_channel(TORTURE_OWN_CHANNEL, wrap);
            t->own_emitted += wrap;
            thread_yield();
            cpu_intr_restore(flags);
            continue;
        }

        n = test_emit_paced(ch, n);
        WRITE_ONCE(t->emitted[ch], t->emitted[ch] + n);

        if (i % 10 == 0) {
            thread_delay(1);
        } else if (r % 5 == 0) {
            thread_yield();
        }

        if (r % 13 == 0) {
            torture_migrate(r);
        }
    }

    /* Its own events count exactly what it emitted. */
    TEST_ASSERT_EQ(perfmon_group_read(&group, &value), 0);
    TEST_ASSERT_EQ(value.nr_events, TORTURE_CHANNELS);
    TEST_ASSERT_LE(value.time_running, value.time_enabled);

    for (unsigned int ch = 0; ch < TORTURE_CHANNELS; ch++) {
        TEST_ASSERT_EQ(value.counts[ch], t->emitted[ch]);
        TEST_ASSERT_EQ(perfmon_event_read(&own[ch]), t->emitted[ch]);
    }

    TEST_ASSERT_EQ(perfmon_group_detach(&group), 0);

    TEST_ASSERT_EQ(perfmon_event_read(&own[TORTURE_OWN_CHANNEL]),
                   t->own_emitted);
    TEST_ASSERT_EQ(perfmon_event_detach(&own[TORTURE_OWN_CHANNEL]), 0);
}

/*
 * A worker's thread event on a target's emit channel counts what the
 * target emitted between attach and now: published counts bracket both
 * instants within one burst.
 */
static void
torture_check_bracket(struct torture_worker *w, unsigned int k,
                      uint64_t before, uint64_t value, uint64_t after)
{
    uint64_t lo = w->attach_hi[k] + TORTURE_BURST_MAX;

    /* Counted since the last enable (or attach, or reset), on base. */
    TEST_ASSERT_GE(value, w->base[k]);
    value -= w->base[k];
    TEST_ASSERT_GE(value + lo, before);
    TEST_ASSERT_LE(value + w->attach_lo[k], after + TORTURE_BURST_MAX);
}

/* Read or detach event k, checking its count. */
static void
torture_read(struct torture_worker *w, unsigned int k, bool detach)
{
    struct perfmon_event *event = &w->events[k];
    struct torture_target *t = w->targets[k];
    uint64_t before = 0, after = 0, value;
    unsigned int ch = event->id - PMU_SOFT_EV_EMIT;

    if (t != NULL) {
        before = READ_ONCE(t->emitted[ch]);
    }

    if (detach) {
        TEST_ASSERT_EQ(perfmon_event_detach(event), 0);
    }

    TEST_ASSERT_EQ(perfmon_event_get(event, &value), 0);

    if (w->disabled[k]) {
        TEST_ASSERT_EQ(value, w->base[k]);  /* frozen, exactly */
    } else if (t != NULL) {
        after = READ_ONCE(t->emitted[ch]);
        torture_check_bracket(w, k, before, value, after);
    }

    if (event->id >= PMU_SOFT_EV_EMIT + TORTURE_SILENT) {
        TEST_ASSERT_EQ(value, 0);
    }

    TEST_ASSERT_GE(value, w->last[k]);     /* counts never go back */
    w->last[k] = value;
}

/*
 * Disable event k (its count, checked, is frozen from then on) or enable
 * it (it counts on from there: the bracket starts again).
 */
static void
torture_toggle(struct torture_worker *w, unsigned int k)
{
    struct perfmon_event *event = &w->events[k];
    struct torture_target *t = w->targets[k];
    unsigned int ch = event->id - PMU_SOFT_EV_EMIT;
    uint64_t before = 0, value;

    if (t != NULL) {
        before = READ_ONCE(t->emitted[ch]);
    }

    if (w->disabled[k]) {
        TEST_ASSERT_EQ(perfmon_event_enable(event), 0);
        w->disabled[k] = false;

        if (t != NULL) {
            w->attach_lo[k] = before;
            w->attach_hi[k] = READ_ONCE(t->emitted[ch]);
        }

        return;
    }

    TEST_ASSERT_EQ(perfmon_event_disable(event), 0);
    TEST_ASSERT_EQ(perfmon_event_get(event, &value), 0);

    if (t != NULL) {
        torture_check_bracket(w, k, before, value,
                              READ_ONCE(t->emitted[ch]));
    }

    TEST_ASSERT_GE(value, w->last[k]);
    w->last[k] = value;
    w->base[k] = value;
    w->disabled[k] = true;
}

/* Reset event k: zero, frozen there while disabled, else counting on. */
static void
torture_reset(struct torture_worker *w, unsigned int k)
{
    struct perfmon_event *event = &w->events[k];
    struct torture_target *t = w->targets[k];
    unsigned int ch = event->id - PMU_SOFT_EV_EMIT;
    uint64_t value;

    if (t != NULL) {
        w->attach_lo[k] = READ_ONCE(t->emitted[ch]);
    }

    TEST_ASSERT_EQ(perfmon_event_reset(event), 0);

    if (t != NULL) {
        w->attach_hi[k] = READ_ONCE(t->emitted[ch]);
    }

    w->base[k] = 0;
    TEST_ASSERT_EQ(perfmon_event_get(event, &value), 0);

    if (w->disabled[k]) {
        TEST_ASSERT_EQ(value, 0);
    }

    w->last[k] = value;
}

static void
torture_group_member_init(struct torture_worker *w, unsigned int i)
{
    TEST_ASSERT_EQ(perfmon_event_init(&w->group_events[i],
                                      PMU_SOFT_EV_EMIT + TORTURE_G_CHANNEL + i,
                                      PERFMON_EF_SW | PERFMON_EF_PINNED), 0);
}

/* The worker's groups, made once. */
static void
torture_groups_setup(struct torture_worker *w)
{
    struct perfmon_dev *soft = perfmon_dev_get(true);

    if (w->groups_ready) {
        return;
    }

    TEST_ASSERT_EQ(perfmon_group_init(&w->group), 0);

    for (unsigned int i = 0; i < TORTURE_G_EVENTS; i++) {
        torture_group_member_init(w, i);
        TEST_ASSERT_EQ(perfmon_group_add(&w->group, &w->group_events[i]), 0);
    }

    /* Distinct raw events, one more than the device has counters. */
    TEST_ASSERT_EQ(perfmon_group_init(&w->big), 0);

    for (unsigned int i = 0; i <= soft->nr_counters; i++) {
        TEST_ASSERT_EQ(perfmon_event_init(&w->big_events[i],
                                          torture_event_ids[i],
                                          PERFMON_EF_SW), 0);
        TEST_ASSERT_EQ(perfmon_group_add(&w->big, &w->big_events[i]), 0);
    }

    w->groups_ready = true;
}

/*
 * Member j of the worker's group initialized again and added back: it
 * takes its old place, once. The group, attached to the worker or its
 * CPU (the worker's, pinned: only it emits on the group's channels
 * there), counts exactly what the worker emits, one count per member in
 * add order, and takes one thread reference per member, all dropped at
 * detach.
 */
static void
torture_readd(struct torture_worker *w, uint64_t r)
{
    struct thread *self = thread_self();
    unsigned int j = (r >> 44) % TORTURE_G_EVENTS, refs = self->refs;
    bool cpu_group = (r >> 48) % 2;
    uint64_t want[TORTURE_G_EVENTS];
    struct perfmon_group_value value;

    torture_group_member_init(w, j);
    TEST_ASSERT_EQ(perfmon_group_add(&w->group, &w->group_events[j]), 0);
    TEST_ASSERT_EQ(w->group.nr_events, TORTURE_G_EVENTS);
    TEST_ASSERT(w->group.events[j] == &w->group_events[j]);

    if (cpu_group) {
        TEST_ASSERT_EQ(perfmon_group_attach_cpu(&w->group, cpu_id()), 0);
    } else {
        TEST_ASSERT_EQ(perfmon_group_attach(&w->group, self), 0);
        TEST_ASSERT_EQ(self->refs, refs + TORTURE_G_EVENTS);
    }

    for (unsigned int i = 0; i < TORTURE_G_EVENTS; i++) {
        want[i] = test_emit_paced(TORTURE_G_CHANNEL + i,
                                  1 + (r >> (52 + 4 * i)) % 8);
    }

    TEST_ASSERT_EQ(perfmon_group_read(&w->group, &value), 0);
    TEST_ASSERT_EQ(value.nr_events, TORTURE_G_EVENTS);

    for (unsigned int i = 0; i < TORTURE_G_EVENTS; i++) {
        TEST_ASSERT_EQ(value.counts[i], want[i]);
    }

    TEST_ASSERT_EQ(perfmon_group_detach(&w->group), 0);
    TEST_ASSERT_EQ(self->refs, refs);

    for (unsigned int i = 0; i < TORTURE_G_EVENTS; i++) {
        TEST_ASSERT_EQ(perfmon_event_read(&w->group_events[i]), want[i]);
    }
}

/*
 * An attach that must be refused: the big group (E2BIG), an event in no
 * valid state or the worker's group with a member initialized again and
 * not added back (EINVAL), to the worker or its CPU. Refused before
 * anything is taken: with interrupts off nothing else changes this CPU's
 * slots meanwhile (nor, on one CPU, the device's), so they must read the
 * same after. The objects are left as they were, the worker's thread
 * references too, and its attached events still count as they should
 * (one of them, at random, is read).
 */
static void
torture_refuse(struct torture_worker *w, uint64_t r)
{
    struct perfmon_dev *soft = perfmon_dev_get(true);
    struct perfmon_group *group = NULL, copy;
    struct perfmon_event *event = NULL, bogus_copy;
    struct thread *self = thread_self();
    unsigned int kind = (r >> 44) % 3, refs = self->refs, cpu, used;
    unsigned int j = (r >> 48) % TORTURE_G_EVENTS, used_dev;
    bool cpu_target = (r >> 50) % 2;
    unsigned long flags;
    int error, want;

    switch (kind) {
    case 0:
        group = &w->big;
        want = E2BIG;
        break;
    case 1:
        event = &w->bogus;
        TEST_ASSERT_EQ(perfmon_event_init(event, PMU_SOFT_EV_EMIT,
                                          PERFMON_EF_SW), 0);
        event->state = 77;
        bogus_copy = *event;
        want = EINVAL;
        break;
    default:
        torture_group_member_init(w, j);
        group = &w->group;
        want = EINVAL;
    }

    if (group != NULL) {
        copy = *group;
    }

    flags = cpu_intr_save();
    cpu = cpu_id();
    used = perfmon_cpu_nr_used_slots(cpu);
    used_dev = perfmon_dev_nr_used_slots(soft);

    if (group != NULL) {
        error = cpu_target ? perfmon_group_attach_cpu(group, cpu)
                           : perfmon_group_attach(group, self);
    } else {
        error = cpu_target ? perfmon_event_attach_cpu(event, cpu)
                           : perfmon_event_attach(event, self);
    }

    TEST_ASSERT_EQ(error, want);
    TEST_ASSERT_EQ(perfmon_cpu_nr_used_slots(cpu), used);

    if (cpu_count() == 1) {
        TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), used_dev);
    }

    cpu_intr_restore(flags);
    TEST_ASSERT_EQ(self->refs, refs);

    if (group != NULL) {
        TEST_ASSERT_EQ(memcmp(group, &copy, sizeof(*group)), 0);

        for (unsigned int i = 0; i < group->nr_events; i++) {
            TEST_ASSERT(!perfmon_event_attached(group->events[i]));
        }
    } else {
        TEST_ASSERT_EQ(memcmp(event, &bogus_copy, sizeof(*event)), 0);
    }

    /* The member goes back: the group is whole again. */
    if (kind == 2) {
        TEST_ASSERT_EQ(perfmon_group_add(&w->group, &w->group_events[j]), 0);
        TEST_ASSERT_EQ(w->group.nr_events, TORTURE_G_EVENTS);
    }

    if (perfmon_event_attached(&w->events[r % TORTURE_EVENTS])) {
        torture_read(w, r % TORTURE_EVENTS, false);
    }
}

static void
torture_op(struct torture_worker *w)
{
    uint64_t r = test_rand(&w->seed);
    unsigned int k = r % TORTURE_EVENTS;
    struct perfmon_event *event = &w->events[k];
    int error;

    /* Now and then (few: the run time stays), groups and refusals. */
    switch ((r >> 36) % 64) {
    case 0:
        torture_groups_setup(w);
        torture_readd(w, r);
        w->nr_readd++;
        return;
    case 1:
        torture_groups_setup(w);
        torture_refuse(w, r);
        w->nr_refusals++;
        return;
    default:
        break;
    }

    if (!perfmon_event_attached(event)) {
        unsigned int id = torture_event_ids[(r >> 8)
                                            % ARRAY_SIZE(torture_event_ids)];

        TEST_ASSERT_EQ(perfmon_event_init(event, id,
                                          PERFMON_EF_SW
                                          | (torture_id_emitted(id)
                                             ? PERFMON_EF_PINNED : 0)), 0);

        w->targets[k] = NULL;

        if ((r >> 16) % 3 == 0) {
            error = perfmon_event_attach_cpu(event,
                                             (r >> 20) % cpu_count());
        } else {
            struct torture_target *t;
            unsigned int ch = id - PMU_SOFT_EV_EMIT;
            bool emits = torture_id_emitted(id);

            t = &torture_targets[(r >> 20) % torture_nr_targets];
            w->attach_lo[k] = emits ? READ_ONCE(t->emitted[ch]) : 0;
            error = perfmon_event_attach(event, t->thread);
            w->attach_hi[k] = emits ? READ_ONCE(t->emitted[ch]) : 0;

            /* The only refusal: a target that has exited. */
            if (error == EINVAL) {
                TEST_ASSERT(READ_ONCE(t->thread->exited));
                w->nr_refused++;
                return;
            }

            w->targets[k] = emits ? t : NULL;
        }

        /* Pinned raw events always fit, the others wait: no EAGAIN. */
        TEST_ASSERT_EQ(error, 0);
        w->last[k] = 0;
        w->base[k] = 0;
        w->disabled[k] = false;
        w->nr_attach++;
    } else {
        switch ((r >> 8) % 8) {
        case 0:
        case 1:
            torture_read(w, k, true);
            w->nr_detach++;
            break;
        case 2:
            torture_toggle(w, k);
            w->nr_toggle++;
            break;
        case 3:
            torture_reset(w, k);
            w->nr_reset++;
            break;
        default:
            torture_read(w, k, false);
            w->nr_read++;
        }
    }


    if (r % 17 == 0) {
        thread_yield();
    } else if (r % 97 == 0) {
        thread_delay(1);
    }
}

static void
torture_worker_main(void *arg)
{
    struct torture_worker *w = arg;

    for (uint64_t i = 0; i < w->ops; i++) {
        torture_op(w);
    }

    for (unsigned int k = 0; k < TORTURE_EVENTS; k++) {
        if (perfmon_event_attached(&w->events[k])) {
            torture_read(w, k, true);
        }
    }
}

TEST_DEFINE(perfmon_torture, random_ops_leave_nothing_behind)
{
    static struct torture_worker workers[CPU_MAX];
    unsigned int alive = thread_nr_alive();
    struct perfmon_dev *soft = perfmon_dev_get(true);
    uint64_t ops = MAX(TORTURE_OPS_TOTAL / cpu_count(), TORTURE_OPS_MIN);
    uint64_t seed = 0x5eed;
    uint64_t totals[8] = { 0 };

    arg_get_u64("torture.ops", &ops);
    arg_get_u64("torture.seed", &seed);
    test_diag("torture: %llu operations per CPU, seed 0x%llx",
              (unsigned long long)ops, (unsigned long long)seed);
    TEST_ASSERT(soft != NULL);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);

    torture_nr_targets = cpu_count() * TORTURE_TARGETS_PER_CPU;

    for (unsigned int i = 0; i < torture_nr_targets; i++) {
        struct torture_target *t = &torture_targets[i];

        t->seed = seed * 1000 + i + 1;
        t->lifetime = 50 + test_rand(&t->seed) % (20 * ops / 10 + 1);
        t->stop = false;

        for (unsigned int ch = 0; ch < TORTURE_CHANNELS; ch++) {
            t->emitted[ch] = 0;
        }

        t->own_emitted = 0;

        t->thread = test_thread_start("torture-target", 0,
                                      torture_target_main, t);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        struct torture_worker *w = &workers[c];

        *w = (struct torture_worker){ .seed = seed + 7 * c + 1, .ops = ops };
        w->thread = test_thread_start("torture-worker", 1ULL << c,
                                      torture_worker_main, w);
    }

    for (unsigned int c = 0; c < cpu_count(); c++) {
        thread_join(workers[c].thread);
        totals[0] += workers[c].nr_attach;
        totals[1] += workers[c].nr_refused;
        totals[2] += workers[c].nr_read;
        totals[3] += workers[c].nr_detach;
        totals[4] += workers[c].nr_toggle;
        totals[5] += workers[c].nr_reset;
        totals[6] += workers[c].nr_readd;
        totals[7] += workers[c].nr_refusals;
    }

    for (unsigned int i = 0; i < torture_nr_targets; i++) {
        torture_targets[i].stop = true;
        thread_join(torture_targets[i].thread);
    }

    test_diag("torture: %llu attaches, %llu refused, %llu reads, "
              "%llu detaches, %llu enables or disables, %llu resets, "
              "%llu groups with a member added back, %llu refused on purpose",
              (unsigned long long)totals[0], (unsigned long long)totals[1],
              (unsigned long long)totals[2], (unsigned long long)totals[3],
              (unsigned long long)totals[4], (unsigned long long)totals[5],
              (unsigned long long)totals[6], (unsigned long long)totals[7]);
    TEST_ASSERT_GT(totals[0], 0);
    TEST_ASSERT_GT(totals[2], 0);
    TEST_ASSERT_GT(totals[4], 0);
    TEST_ASSERT_GT(totals[5], 0);
    TEST_ASSERT_GT(totals[6], 0);
    TEST_ASSERT_GT(totals[7], 0);
    TEST_ASSERT_EQ(perfmon_dev_nr_used_slots(soft), 0);

    for (unsigned int c = 0; c < cpu_count(); c++) {
        TEST_ASSERT_EQ(perfmon_cpu_nr_used_slots(c), 0);
    }

    TEST_ASSERT_EQ(thread_nr_alive(), alive);
}
