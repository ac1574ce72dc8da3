/*
 * perfmon's families: the threads an inherited event (or group) counts,
 * its root and every thread a member creates while it is attached.
 *
 * Each member has a record (struct perfmon_member) holding where its
 * count started and, once final, its share. A member counts as any
 * thread with an event does: its record holds one reference on each of
 * the family's slots in its thread's per-thread tier (perfmon_td.c), so
 * the context switch sees nothing new. The root's references are its
 * events' own (perfmon_snap_attach); the others' are taken when the
 * member joins, in thread_create before the thread is queued
 * (perfmon_td_create), and given back when it leaves: when its thread is
 * off its CPU for good (perfmon_td_exit, from thread_reap), where its
 * share is folded into its record, or at the family's detach, whichever
 * comes first.
 *
 * Records stay on the family's list, in the order their members joined,
 * until detach, so a read walks them without holding anything across its
 * cross-CPU calls: a final share is read from the record, a live member's
 * count from its thread (referenced for the call). A share folded after
 * the walk passed its record is the count the walk read or more, and a
 * member is counted through its record only, so no unit counts twice and
 * none emitted before the read is missed.
 *
 * Locks (after perfmon_i.h's): a thread's td lock (its list of records,
 * td->members, and its slots), then the family's lock (the family's list,
 * each record's state), innermost: nothing is taken under it, and no
 * cross-CPU call is made under either. A creation holds the new thread's
 * td lock, then its creator's, then each family's in turn: the new
 * thread is nobody's creator yet, so no path takes the two the other way.
 * A record is handed from the family to the one path that ends it
 * (claimed, for the detach; done, for the exit's fold) under the family's
 * lock.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/assert.h>
#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/list.h>
#include <kern/macros.h>
#include <kern/percpu.h>
#include <kern/perfmon.h>
#include <kern/perfmon/perfmon_cpu_i.h>
#include <kern/perfmon/perfmon_family_i.h>
#include <kern/perfmon/perfmon_i.h>
#include <kern/perfmon/perfmon_td_i.h>
#include <kern/perfmon_td.h>
#include <kern/perfmon_test.h>
#include <kern/spinlock.h>
#include <kern/thread.h>
#include <machine/cpu.h>

/*
 * A member's record. thread is set while the member counts (its slots
 * referenced); its share (counts, run, off) is final once done. Fields
 * but the lists' are written under the family's lock, or before the
 * record is published.
 */
struct perfmon_member {
    struct list family_node;    /* in family->members, until it is freed */
    struct list td_node;        /* in its thread's td->members, while it
                                   counts */
    struct perfmon_family *family;
    struct thread *thread;      /* while it counts, else NULL */
    uint32_t tid;
    bool root;                  /* the events' own thread */
    bool claimed;               /* the detach ends it */
    bool done;                  /* its share is final */
    uint64_t start_run;         /* its run time, and its time without a */
    uint64_t start_off;         /* counter, when it joined (TSC) */
    uint64_t run;               /* done: its run time since it joined, */
    uint64_t off;               /* and its time without a counter */
    uint64_t data[];            /* starts[nr_events], then counts[] */
};

struct perfmon_family {
    struct spinlock lock;
    bool dead;                  /* detach began: no thread joins */
    unsigned int nr_events;
    unsigned int nr_members;    /* records on members */
    struct perfmon_event *events[PERFMON_GROUP_MAX];
    struct list members;
    struct perfmon_member *root;
};

/* Records allocated and not freed, for the tests' leak checks. */
static unsigned int perfmon_family_nr_records;

/* Allocations of records still to fail, for the tests (relaxed). */
static unsigned int perfmon_family_fail;

static uint64_t *
perfmon_member_starts(struct perfmon_member *member)
{
    return member->data;
}

static uint64_t *
perfmon_member_counts(struct perfmon_member *member)
{
    return member->data + member->family->nr_events;
}

static size_t
perfmon_member_size(unsigned int nr_events)
{
    return sizeof(struct perfmon_member) + 2 * nr_events * sizeof(uint64_t);
}

/* A record for a family of nr_events, or NULL. Thread context. */
static struct perfmon_member *
perfmon_member_alloc(unsigned int nr_events)
{
    struct perfmon_member *member;
    unsigned int fail;

    fail = __atomic_load_n(&perfmon_family_fail, __ATOMIC_RELAXED);

    while (fail != 0) {
        if (__atomic_compare_exchange_n(&perfmon_family_fail, &fail,
                                        fail - 1, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            return NULL;
        }
    }

    member = kmem_zalloc(perfmon_member_size(nr_events));

    if (member != NULL) {
        __atomic_add_fetch(&perfmon_family_nr_records, 1, __ATOMIC_RELAXED);
    }

    return member;
}

/* Thread or interrupt context (thread_reap frees none: it only folds). */
static void
perfmon_member_free(struct perfmon_member *member)
{
    __atomic_sub_fetch(&perfmon_family_nr_records, 1, __ATOMIC_RELAXED);
    kmem_free(member);
}

unsigned int
perfmon_family_nr_records_alive(void)
{
    return __atomic_load_n(&perfmon_family_nr_records, __ATOMIC_RELAXED);
}

void
perfmon_family_fail_allocs(unsigned int nr)
{
    __atomic_store_n(&perfmon_family_fail, nr, __ATOMIC_RELAXED);
}

int
perfmon_family_create(struct perfmon_event *const *events,
                      unsigned int nr_events,
                      struct perfmon_family **familyp)
{
    struct perfmon_family *family;

    assert(nr_events >= 1 && nr_events <= PERFMON_GROUP_MAX);
    family = kmem_zalloc(sizeof(*family));

    if (family == NULL) {
        return ENOMEM;
    }

    family->root = perfmon_member_alloc(nr_events);

    if (family->root == NULL) {
        kmem_free(family);
        return ENOMEM;
    }

    spinlock_init(&family->lock);
    list_init(&family->members);
    family->nr_events = nr_events;

    for (unsigned int i = 0; i < nr_events; i++) {
        family->events[i] = events[i];
    }

    family->root->family = family;
    family->root->root = true;
    list_node_init(&family->root->td_node);
    list_node_init(&family->root->family_node);
    *familyp = family;
    return 0;
}

struct perfmon_event *
perfmon_family_event(const struct perfmon_family *family, unsigned int i)
{
    assert(i < family->nr_events);
    return family->events[i];
}

void
perfmon_family_destroy(struct perfmon_family *family)
{
    if (family == NULL) {
        return;
    }

    perfmon_member_free(family->root);
    kmem_free(family);
}

void
perfmon_family_start(struct perfmon_family *family, struct thread *thread)
{
    struct perfmon_member *root = family->root;
    struct perfmon_td *td = thread_perfmon_td(thread);
    const struct perfmon_event *leader = family->events[0];
    unsigned long flags;

    /* The events' own start: the root counts through their references. */
    for (unsigned int i = 0; i < family->nr_events; i++) {
        perfmon_member_starts(root)[i] = family->events[i]->start;
        family->events[i]->family = family;
    }

    root->thread = thread;
    root->tid = thread_id(thread);
    root->start_run = leader->enabled_run;
    root->start_off = leader->enabled_off;
    list_insert_tail(&family->members, &root->family_node);
    family->nr_members = 1;

    /* Published to the root's creations by its td lock. */
    spinlock_lock_intr_save(&td->lock, &flags);
    list_insert_tail(&td->members, &root->td_node);
    spinlock_unlock_intr_restore(&td->lock, flags);
}

/* What a member's operation does where its thread's counters live. */
#define PERFMON_FAMILY_OP_READ      0
#define PERFMON_FAMILY_OP_LEAVE     1

/*
 * A member's operation (perfmon_td_run, or in place on an unloaded
 * thread): its thread's value of each of the family's slots, its run
 * time and its time without a counter, at one instant; leaving, with its
 * references on the slots given back and its record off the thread's
 * list.
 */
struct perfmon_family_op {
    struct perfmon_td_op op;
    struct perfmon_family *family;
    struct perfmon_member *member;
    struct thread *thread;
    unsigned int action;
    uint64_t values[PERFMON_GROUP_MAX];
    uint64_t run;
    uint64_t off;
};

/*
 * Interrupts disabled, td locked (perfmon_td_run, or perfmon_td_exit),
 * or the thread's own read in place.
 */
static void
perfmon_family_op_fn(struct perfmon_td_op *op, bool loaded)
{
    struct perfmon_family_op *fop = structof(op, struct perfmon_family_op,
                                             op);
    struct perfmon_family *family = fop->family;
    const struct perfmon_event *leader = family->events[0];
    const struct perfmon_cpu_slot *cslot;
    uint64_t now;

    assert_intr_disabled();

    for (unsigned int i = 0; i < family->nr_events; i++) {
        op->dev = family->events[i]->dev;
        op->index = family->events[i]->slot_index;
        op->event = NULL;

        if (fop->action == PERFMON_FAMILY_OP_LEAVE) {
            perfmon_td_op_detach(op, loaded);
        } else {
            perfmon_td_op_read(op, loaded);
        }

        fop->values[i] = op->value;
    }

    now = cpu_get_tsc();
    fop->run = loaded ? thread_run_time(fop->thread, now)
                      : thread_run_total(fop->thread);
    fop->off = op->td->off[leader->dev_index][leader->slot_index];
    cslot = perfmon_cpu_slot(cpu_local_ptr(perfmon_cpu), leader->dev,
                             leader->slot_index);

    /* Still without its counter here: the time since its mark. */
    if (loaded && !cslot->sched) {
        fop->off += now - cslot->off_mark;
    }

    if (fop->action == PERFMON_FAMILY_OP_LEAVE) {
        list_remove(&fop->member->td_node);
    }
}

static void
perfmon_family_op_init(struct perfmon_family_op *fop,
                       struct perfmon_family *family,
                       struct perfmon_member *member, struct thread *thread,
                       unsigned int action)
{
    fop->op = (struct perfmon_td_op){
        .td = thread_perfmon_td(thread),
        .fn = perfmon_family_op_fn,
    };
    fop->family = family;
    fop->member = member;
    fop->thread = thread;
    fop->action = action;
}

/* A member's share from its operation's results. Family locked. */
static void
perfmon_member_settle(struct perfmon_member *member,
                      const struct perfmon_family_op *fop)
{
    for (unsigned int i = 0; i < member->family->nr_events; i++) {
        perfmon_member_counts(member)[i] = fop->values[i]
                                           - perfmon_member_starts(member)[i];
    }

    member->run = fop->run - member->start_run;
    member->off = fop->off - member->start_off;
    member->done = true;
    member->thread = NULL;
}

/* A share's times: running is enabled less the time without a counter. */
static uint64_t
perfmon_member_running(uint64_t run, uint64_t off)
{
    return (run > off) ? run - off : 0;
}

int
perfmon_family_read(struct perfmon_family *family, uint64_t *counts,
                    uint64_t *enabledp, uint64_t *runningp,
                    struct perfmon_member_value *values, unsigned int max,
                    unsigned int *nrp, unsigned int which)
{
    uint64_t enabled = 0, running = 0;
    struct perfmon_family_op fop;
    unsigned int nr, k = 0;
    unsigned long flags;
    struct list *node;

    assert(which < family->nr_events);

    for (unsigned int i = 0; i < family->nr_events; i++) {
        counts[i] = 0;
    }

    spinlock_lock_intr_save(&family->lock, &flags);
    nr = family->nr_members;

    if (nrp != NULL && nr > max) {
        spinlock_unlock_intr_restore(&family->lock, flags);
        *nrp = nr;
        return E2BIG;
    }

    /*
     * The members that joined before the read: records are only added at
     * the tail and stay until detach, which the owner does not run
     * beside a read, so node stays valid while the lock is dropped.
     */
    node = list_first(&family->members);

    for (k = 0; k < nr; k++, node = node->next) {
        struct perfmon_member *member = list_entry(node,
                                                   struct perfmon_member,
                                                   family_node);
        uint64_t run, off;
        bool exited = member->done;

        assert(!list_end(&family->members, node));

        if (member->done) {
            for (unsigned int i = 0; i < family->nr_events; i++) {
                fop.values[i] = perfmon_member_counts(member)[i];
            }

            run = member->run;
            off = member->off;
        } else {
            /* Not folded yet: its thread still holds its own reference. */
            struct thread *thread = member->thread;

            thread_ref(thread);
            spinlock_unlock_intr_restore(&family->lock, flags);
            perfmon_family_op_init(&fop, family, member, thread,
                                   PERFMON_FAMILY_OP_READ);
            perfmon_td_run(&fop.op);
            thread_unref(thread);

            /* Starts never change once the record is published. */
            for (unsigned int i = 0; i < family->nr_events; i++) {
                fop.values[i] -= perfmon_member_starts(member)[i];
            }

            run = fop.run - member->start_run;
            off = fop.off - member->start_off;
            spinlock_lock_intr_save(&family->lock, &flags);
        }

        for (unsigned int i = 0; i < family->nr_events; i++) {
            counts[i] += fop.values[i];
        }

        enabled += run;
        running += perfmon_member_running(run, off);

        if (values != NULL) {
            values[k] = (struct perfmon_member_value){
                .tid = member->tid,
                .exited = exited,
                .count = fop.values[which],
                .time_enabled = perfmon_tsc_to_ns(run),
                .time_running =
                    perfmon_tsc_to_ns(perfmon_member_running(run, off)),
            };
        }
    }

    spinlock_unlock_intr_restore(&family->lock, flags);
    *enabledp = enabled;
    *runningp = running;

    if (nrp != NULL) {
        *nrp = nr;
    }

    return 0;
}

void
perfmon_family_detach(struct perfmon_family *family)
{
    uint64_t counts[PERFMON_GROUP_MAX] = { 0 };
    struct perfmon_member *root = family->root;
    struct perfmon_td *root_td = thread_perfmon_td(root->thread);
    uint64_t enabled = 0, running = 0;
    struct perfmon_family_op fop;
    struct list *node, *tmp;
    unsigned long flags;

    /* No thread joins from now on; the root creates no member either. */
    spinlock_lock_intr_save(&root_td->lock, &flags);
    spinlock_lock(&family->lock);
    family->dead = true;
    spinlock_unlock(&family->lock);
    list_remove(&root->td_node);
    spinlock_unlock_intr_restore(&root_td->lock, flags);

    /*
     * Each live member leaves where its counters are: claimed under the
     * family's lock, so that its exit leaves it to us, its thread
     * referenced across the call.
     */
    list_for_each(&family->members, node) {
        struct perfmon_member *member = list_entry(node,
                                                   struct perfmon_member,
                                                   family_node);
        struct thread *thread;

        if (member->root) {
            continue;
        }

        spinlock_lock_intr_save(&family->lock, &flags);

        if (member->done) {
            spinlock_unlock_intr_restore(&family->lock, flags);
            continue;
        }

        member->claimed = true;
        thread = member->thread;
        thread_ref(thread);
        spinlock_unlock_intr_restore(&family->lock, flags);

        perfmon_family_op_init(&fop, family, member, thread,
                               PERFMON_FAMILY_OP_LEAVE);
        perfmon_td_run(&fop.op);

        spinlock_lock_intr_save(&family->lock, &flags);
        perfmon_member_settle(member, &fop);
        spinlock_unlock_intr_restore(&family->lock, flags);
        thread_unref(thread);
    }

    /* The members' shares, every one final now. */
    list_for_each(&family->members, node) {
        struct perfmon_member *member = list_entry(node,
                                                   struct perfmon_member,
                                                   family_node);

        if (member->root) {
            continue;
        }

        for (unsigned int i = 0; i < family->nr_events; i++) {
            counts[i] += perfmon_member_counts(member)[i];
        }

        enabled += member->run;
        running += perfmon_member_running(member->run, member->off);
    }

    /* The root's own events, as any thread's. */
    perfmon_snap_detach(family->events, family->nr_events);

    for (unsigned int i = 0; i < family->nr_events; i++) {
        struct perfmon_event *event = family->events[i];

        event->final += counts[i];
        event->time_enabled += enabled;
        event->time_running += running;
        event->family = NULL;
    }

    list_for_each_safe(&family->members, node, tmp) {
        struct perfmon_member *member = list_entry(node,
                                                   struct perfmon_member,
                                                   family_node);

        list_remove(node);
        perfmon_member_free(member);
    }

    kmem_free(family);
}

/*
 * Join a new thread (child, its td locked, not yet queued) to a family,
 * with a record for it. Interrupts disabled, family locked.
 */
static void
perfmon_family_join(struct perfmon_family *family,
                    struct perfmon_member *member, struct thread *child)
{
    struct perfmon_td *td = thread_perfmon_td(child);
    const struct perfmon_event *leader = family->events[0];
    struct perfmon_td_op op = { .td = td };

    member->family = family;
    member->thread = child;
    member->tid = thread_id(child);

    /* Unloaded: its counters start when it first runs. */
    for (unsigned int i = 0; i < family->nr_events; i++) {
        op.dev = family->events[i]->dev;
        op.index = family->events[i]->slot_index;
        op.event = NULL;
        perfmon_td_op_attach(&op, false);
        perfmon_member_starts(member)[i] = op.value;
    }

    member->start_run = thread_run_total(child);
    member->start_off = td->off[leader->dev_index][leader->slot_index];
    list_insert_tail(&family->members, &member->family_node);
    family->nr_members++;
    list_insert_tail(&td->members, &member->td_node);
}

/* The records a creator's families need: their number, their largest. */
static void
perfmon_td_count_members(struct perfmon_td *td, unsigned int *nrp,
                         unsigned int *nr_eventsp)
{
    unsigned int nr = 0, nr_events = 0;
    struct list *node;

    list_for_each(&td->members, node) {
        const struct perfmon_member *member = list_entry(node,
                                                         struct perfmon_member,
                                                         td_node);

        nr++;
        nr_events = MAX(nr_events, member->family->nr_events);
    }

    *nrp = nr;
    *nr_eventsp = nr_events;
}

static void
perfmon_td_free_spares(struct list *spares)
{
    struct list *node, *tmp;

    list_for_each_safe(spares, node, tmp) {
        list_remove(node);
        perfmon_member_free(list_entry(node, struct perfmon_member, td_node));
    }
}

int
perfmon_td_create(struct thread *parent, struct thread *child)
{
    struct perfmon_td *ptd = thread_perfmon_td(parent);
    struct perfmon_td *ctd = thread_perfmon_td(child);
    unsigned int nr_spares = 0, spare_events = 0, nr, nr_events;
    struct list spares;
    unsigned long flags;
    struct list *node;

    list_init(&spares);

    for (;;) {
        spinlock_lock_intr_save(&ptd->lock, &flags);
        perfmon_td_count_members(ptd, &nr, &nr_events);
        spinlock_unlock_intr_restore(&ptd->lock, flags);

        if (nr == 0) {
            return 0;
        }

        /* Families added meanwhile, or larger ones: allocate anew. */
        if (nr > nr_spares || nr_events > spare_events) {
            perfmon_td_free_spares(&spares);
            nr_spares = 0;
            spare_events = nr_events;

            while (nr_spares < nr) {
                struct perfmon_member *member;

                member = perfmon_member_alloc(spare_events);

                if (member == NULL) {
                    perfmon_td_free_spares(&spares);
                    return ENOMEM;
                }

                list_insert_tail(&spares, &member->td_node);
                nr_spares++;
            }
        }

        /* The child first: nobody creates through it yet (see above). */
        spinlock_lock_intr_save(&ctd->lock, &flags);
        spinlock_lock(&ptd->lock);
        perfmon_td_count_members(ptd, &nr, &nr_events);

        if (nr <= nr_spares && nr_events <= spare_events) {
            break;
        }

        spinlock_unlock(&ptd->lock);
        spinlock_unlock_intr_restore(&ctd->lock, flags);
    }

    list_for_each(&ptd->members, node) {
        struct perfmon_member *member = list_entry(node, struct perfmon_member,
                                                   td_node);
        struct perfmon_family *family = member->family;
        struct perfmon_member *record;

        spinlock_lock(&family->lock);

        if (!family->dead) {
            record = list_first_entry(&spares, struct perfmon_member,
                                      td_node);
            list_remove(&record->td_node);
            perfmon_family_join(family, record, child);
        }

        spinlock_unlock(&family->lock);
    }

    spinlock_unlock(&ptd->lock);
    spinlock_unlock_intr_restore(&ctd->lock, flags);
    perfmon_td_free_spares(&spares);
    return 0;
}

void
perfmon_td_exit(struct thread *thread)
{
    struct perfmon_td *td = thread_perfmon_td(thread);
    struct perfmon_family_op fop;
    struct list *node, *tmp;

    assert_intr_disabled();
    spinlock_lock(&td->lock);
    assert(__atomic_load_n(&td->loaded_cpu, __ATOMIC_RELAXED)
           == PERFMON_CPU_NONE);

    list_for_each_safe(&td->members, node, tmp) {
        struct perfmon_member *member = list_entry(node, struct perfmon_member,
                                                   td_node);
        struct perfmon_family *family = member->family;

        /* A root counts through its events, detached by their owner. */
        if (member->root) {
            continue;
        }

        spinlock_lock(&family->lock);

        /* Claimed: the detach holds a reference and ends it. */
        if (!member->claimed) {
            perfmon_family_op_init(&fop, family, member, thread,
                                   PERFMON_FAMILY_OP_LEAVE);
            perfmon_nmi_enter();
            perfmon_family_op_fn(&fop.op, false);
            perfmon_nmi_leave();
            perfmon_member_settle(member, &fop);
        }

        spinlock_unlock(&family->lock);
    }

    spinlock_unlock(&td->lock);
}
