/*
 * perf report (kern/perf/perf_report.h): the last recording's samples
 * summed per entry.
 *
 * It walks the records perf record kept (kern/perf/perf_record.c), in the
 * order kept, through kern/perf/perf_record_i.h, changing nothing, so it
 * may run any number of times after one perf record. It sums the
 * samples' periods per entry (a distinct value of its sort keys: the
 * function, from the kernel's symbol table, the thread, the CPU) as Self
 * (the interrupted instruction's entry) and Children (every entry of the
 * call chain, once per sample), and with -g prints each entry's callers
 * as a tree built afresh from the samples (a bounded node table, so no
 * allocation per sample).
 *
 * Shell thread only, like the last recording itself.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/ksym.h>
#include <kern/macros.h>
#include <kern/perf/perf_record.h>
#include <kern/perf/perf_record_i.h>
#include <kern/perf/perf_report.h>
#include <kern/perf/perf_util.h>
#include <kern/perfmon_record.h>
#include <kern/printf.h>
#include <kern/string.h>

#define PERF_REPORT_MAX_ENTRIES     512U
#define PERF_REPORT_MAX_NODES       1024U
#define PERF_REPORT_TOP             20U
#define PERF_REPORT_PREFIX_SIZE     512U
#define PERF_REPORT_MAX_CHAIN       (PERF_RECORD_NR_FRAMES + 1)

/* ---- the samples' functions ------------------------------------------ */

static const char *
perf_report_func_name(uint64_t ip)
{
    uintptr_t offset;

    return ksym_lookup((uintptr_t)ip, &offset);
}

/*
 * A sample's functions, innermost first: the interrupted instruction's,
 * then its callers' (NULL: outside the kernel text). Return how many.
 */
static unsigned int
perf_report_sample_funcs(const struct perfmon_record_sample *s,
                         const char **names)
{
    const struct perfmon_record_callchain *chain;
    unsigned int nr = 0;

    names[nr++] = perf_report_func_name(s->ip);
    chain = perfmon_record_sample_callchain(s, s->header.size);

    /*
     * A caller outside the kernel text is where the walk left the
     * thread's frames (the first frame's saved return), not a function.
     */
    for (unsigned int i = 0; chain != NULL && i < chain->chunk.nr
                             && nr < PERF_REPORT_MAX_CHAIN; i++) {
        names[nr] = perf_report_func_name(chain->frames[i]);
        nr += (names[nr] != NULL);
    }

    return nr;
}

static const char *
perf_report_thread_name(const struct perf_record_last *last, uint32_t tid)
{
    if (tid == 0) {
        return "idle";
    }

    for (unsigned int i = 0; i < last->nr_threads; i++) {
        if (last->threads[i].tid == tid) {
            return last->threads[i].name;
        }
    }

    return "?";
}

/* ---- perf report ----------------------------------------------------- */

#define PERF_REPORT_SORT_SYMBOL     0x1U
#define PERF_REPORT_SORT_THREAD     0x2U
#define PERF_REPORT_SORT_CPU        0x4U

struct perf_report_opts {
    unsigned int sort;                  /* PERF_REPORT_SORT_*, or 0 */
    unsigned char order[3];             /* the keys in the order given,
                                           each once */
    unsigned int nr_keys;
    bool children;
    bool graph;
};

/*
 * One line of the report: a distinct value of the sort keys (the keys
 * not sorted by are left 0). self: the periods of the samples it was
 * interrupted in; children: of the samples it was anywhere in the call
 * chain of, itself included, counted once per sample.
 */
struct perf_report_entry {
    const char *name;                   /* NULL: outside the kernel text */
    uint32_t tid;
    unsigned int cpu;
    uint64_t self;
    uint64_t children;
    uint64_t nr_samples;
};

/* The call-graph tree of one entry: its callers, innermost first. */
struct perf_report_node {
    const char *name;
    uint64_t weight;
    int child;                          /* first child, or -1 */
    int sibling;                        /* next sibling, or -1 */
};

struct perf_report {
    const struct perf_record_last *last;
    struct perf_report_opts opts;
    unsigned int event;                 /* the event reported (cookie) */
    uint64_t total;                     /* the periods of every sample */
    uint64_t nr_samples;
    uint64_t other;                     /* periods past a full table */
    unsigned int nr_entries;
    struct perf_report_entry entries[PERF_REPORT_MAX_ENTRIES];
    unsigned int nr_nodes;
    bool nodes_full;
    struct perf_report_node nodes[PERF_REPORT_MAX_NODES];
};

/* Parse perf report's options. Return 0, or -1 after a message. */
static int
perf_report_parse(struct perf_report_opts *opts, int argc, char **argv)
{
    opts->children = true;

    for (int i = 2; i < argc; i++) {
        char *keys;

        if (strcmp(argv[i], "-g") == 0) {
            opts->graph = true;
            continue;
        } else if (strcmp(argv[i], "--no-children") == 0) {
            opts->children = false;
            continue;
        } else if (strcmp(argv[i], "--children") == 0) {
            opts->children = true;
            continue;
        } else if (strcmp(argv[i], "--stdio") == 0
                   || strcmp(argv[i], "-n") == 0
                   || strcmp(argv[i], "--show-nr-samples") == 0) {
            continue;           /* the only output there is */
        } else if (strcmp(argv[i], "-i") == 0
                   || strncmp(argv[i], "--input=", 8) == 0) {
            const char *file = (argv[i][1] == 'i') ? argv[i + 1]
                                                   : argv[i] + 8;

            if (file == NULL) {
                printf("perf report: -i needs a value: perf.data, the last "
                       "recording\n");
                return -1;
            }

            if (strcmp(file, "perf.data") != 0) {
                printf("perf report: input '%s': no files here; perf "
                       "report reads the last recording, perf.data\n",
                       file);
                return -1;
            }

            i += (argv[i][1] == 'i');
            continue;
        } else if (strncmp(argv[i], "--sort=", 7) == 0) {
            keys = argv[i] + 7;
        } else if (strcmp(argv[i], "--sort") != 0
                   && strcmp(argv[i], "-s") != 0) {
            printf("perf report: unknown option '%s' (options: -g, "
                   "--no-children, --sort KEYS, --stdio, -n, -i perf.data)"
                   "\n", argv[i]);
            return -1;
        } else if (i + 1 == argc) {
            printf("perf report: %s needs a value: KEYS, symbol, thread, "
                   "cpu, comma-separated\n", argv[i]);
            return -1;
        } else {
            keys = argv[++i];
        }

        if (keys[0] == '\0') {
            printf("perf report: no sort keys given: KEYS, symbol, "
                   "thread, cpu, comma-separated\n");
            return -1;
        }

        opts->sort = 0;
        opts->nr_keys = 0;

        for (char *p = keys; *p != '\0';) {
            char *comma = strchr(p, ',');
            size_t len = (comma == NULL) ? strlen(p) : (size_t)(comma - p);
            unsigned int key;

            /* Linux's names too: sym, comm, pid and tid. */
            if ((len == 6 && strncmp(p, "symbol", len) == 0)
                || (len == 3 && strncmp(p, "sym", len) == 0)) {
                key = PERF_REPORT_SORT_SYMBOL;
            } else if ((len == 6 && strncmp(p, "thread", len) == 0)
                       || (len == 4 && strncmp(p, "comm", len) == 0)
                       || (len == 3 && strncmp(p, "pid", len) == 0)
                       || (len == 3 && strncmp(p, "tid", len) == 0)) {
                key = PERF_REPORT_SORT_THREAD;
            } else if (len == 3 && strncmp(p, "cpu", len) == 0) {
                key = PERF_REPORT_SORT_CPU;
            } else {
                printf("perf report: bad sort keys '%s' (symbol, thread, "
                       "cpu, comma-separated)\n", keys);
                return -1;
            }

            if (!(opts->sort & key)) {
                opts->sort |= key;
                opts->order[opts->nr_keys++] = (unsigned char)key;
            }

            p += len + (comma != NULL);
        }
    }

    if (opts->sort == 0) {
        opts->sort = PERF_REPORT_SORT_SYMBOL;
        opts->order[opts->nr_keys++] = PERF_REPORT_SORT_SYMBOL;
    }

    return 0;
}

/* The entry for a key, added when new; NULL when the table is full. */
static struct perf_report_entry *
perf_report_entry_get(struct perf_report *r, const char *name, uint32_t tid,
                      unsigned int cpu)
{
    struct perf_report_entry *e;

    name = (r->opts.sort & PERF_REPORT_SORT_SYMBOL) ? name : NULL;
    tid = (r->opts.sort & PERF_REPORT_SORT_THREAD) ? tid : 0;
    cpu = (r->opts.sort & PERF_REPORT_SORT_CPU) ? cpu : 0;

    for (unsigned int i = 0; i < r->nr_entries; i++) {
        e = &r->entries[i];

        if (e->name == name && e->tid == tid && e->cpu == cpu) {
            return e;
        }
    }

    if (r->nr_entries == PERF_REPORT_MAX_ENTRIES) {
        return NULL;
    }

    e = &r->entries[r->nr_entries++];
    e->name = name;
    e->tid = tid;
    e->cpu = cpu;
    return e;
}

/*
 * Account one sample: self to the entry of its instruction, children to
 * every distinct entry of its chain (a recursive function counts once).
 */
static void
perf_report_add_sample(struct perf_report *r,
                       const struct perfmon_record_sample *s)
{
    struct perf_report_entry *seen[PERF_REPORT_MAX_CHAIN];
    const char *names[PERF_REPORT_MAX_CHAIN];
    unsigned int nr_names, nr_seen = 0;

    r->total += s->period;
    r->nr_samples++;
    nr_names = perf_report_sample_funcs(s, names);

    for (unsigned int i = 0; i < nr_names; i++) {
        struct perf_report_entry *e;
        bool known = false;

        e = perf_report_entry_get(r, names[i], s->tid, s->header.cpu);

        if (e == NULL) {
            r->other += (i == 0) ? s->period : 0;
            continue;
        }

        if (i == 0) {
            e->self += s->period;
            e->nr_samples++;
        }

        for (unsigned int j = 0; j < nr_seen; j++) {
            known |= (seen[j] == e);
        }

        if (!known) {
            seen[nr_seen++] = e;
            e->children += s->period;
        }
    }
}

static uint64_t
perf_report_entry_weight(const struct perf_report *r,
                         const struct perf_report_entry *e)
{
    return r->opts.children ? e->children : e->self;
}

/* Most weight first, then by name (insertion: few entries). */
static void
perf_report_entries_sort(struct perf_report *r)
{
    struct perf_report_entry *entries = r->entries;

    for (unsigned int i = 1; i < r->nr_entries; i++) {
        struct perf_report_entry e = entries[i];
        uint64_t w = perf_report_entry_weight(r, &e);
        unsigned int j = i;

        while (j > 0) {
            uint64_t wj = perf_report_entry_weight(r, &entries[j - 1]);

            if (wj > w || (wj == w && strcmp(entries[j - 1].name ?: "",
                                             e.name ?: "") <= 0)) {
                break;
            }

            entries[j] = entries[j - 1];
            j--;
        }

        entries[j] = e;
    }
}

/* ---- the call-graph tree ---------------------------------------------- */

/* The child of node named name, added when new; -1 when no room. */
static int
perf_report_node_child(struct perf_report *r, int node, const char *name)
{
    struct perf_report_node *n;
    int i;

    for (i = r->nodes[node].child; i >= 0; i = r->nodes[i].sibling) {
        if (r->nodes[i].name == name) {
            return i;
        }
    }

    if (r->nr_nodes == PERF_REPORT_MAX_NODES) {
        r->nodes_full = true;
        return -1;
    }

    i = (int)r->nr_nodes++;
    n = &r->nodes[i];
    n->name = name;
    n->weight = 0;
    n->child = -1;
    n->sibling = r->nodes[node].child;
    r->nodes[node].child = i;
    return i;
}

/* The tree of e's callers, from the samples whose instruction is in e. */
static void
perf_report_graph_build(struct perf_report *r,
                        const struct perf_report_entry *e)
{
    const struct perfmon_record_sample *s;
    const char *names[PERF_REPORT_MAX_CHAIN];
    size_t offset = 0;

    r->nr_nodes = 1;
    r->nodes[0] = (struct perf_report_node){ e->name, 0, -1, -1 };

    while ((s = perf_record_last_next_sample(r->last, &offset)) != NULL) {
        unsigned int nr = perf_report_sample_funcs(s, names);
        int node = 0;

        if (perf_report_entry_get(r, names[0], s->tid, s->header.cpu) != e) {
            continue;
        }

        r->nodes[0].weight += s->period;

        for (unsigned int i = 1; i < nr && node >= 0; i++) {
            node = perf_report_node_child(r, node, names[i]);

            if (node >= 0) {
                r->nodes[node].weight += s->period;
            }
        }
    }
}

/* The heaviest child of node not yet printed (weight cleared once). */
static int
perf_report_node_next(struct perf_report *r, int node)
{
    int best = -1;

    for (int i = r->nodes[node].child; i >= 0; i = r->nodes[i].sibling) {
        if (r->nodes[i].weight != 0
            && (best < 0 || r->nodes[i].weight > r->nodes[best].weight)) {
            best = i;
        }
    }

    return best;
}

/*
 * Print node's callers as Linux's graph does: a branch per caller with
 * its share of every sample, then the callers of a caller that has only
 * one, a name a line, under it. prefix: the columns to the left, len its
 * length; the depth is bounded by the call chains' length.
 */
static void
perf_report_graph_print(struct perf_report *r, int node, char *prefix,
                        size_t len, size_t size)
{
    int child = perf_report_node_next(r, node);

    while (child >= 0) {
        struct perf_report_node *c = &r->nodes[child];
        char pct[16];
        size_t pad = len;
        int next, width;

        width = perf_util_format_pct(pct, sizeof(pct), c->weight,
                                     r->total);
        c->weight = 0;
        next = perf_report_node_next(r, node);
        printf("%s%s--%s--%s\n", prefix, (next >= 0) ? "|" : " ", pct,
               c->name ?: "[unknown]");

        /* The callers go under the name: past "|--", the share, "--". */
        if (len + 5 + (size_t)width < size) {
            prefix[pad++] = (next >= 0) ? '|' : ' ';

            for (int i = 0; i < 4 + width; i++) {
                prefix[pad++] = ' ';
            }

            prefix[pad] = '\0';

            while (c->child >= 0 && r->nodes[c->child].sibling < 0) {
                c = &r->nodes[c->child];
                printf("%s%s\n", prefix, c->name ?: "[unknown]");
            }

            perf_report_graph_print(r, (int)(c - r->nodes), prefix, pad,
                                    size);
            prefix[len] = '\0';
        }

        if (next >= 0) {
            printf("%s|\n", prefix);
        }

        child = next;
    }
}

static void
perf_report_print_keys(const struct perf_report *r,
                       const struct perf_report_entry *e)
{
    for (unsigned int k = 0; k < r->opts.nr_keys; k++) {
        switch (r->opts.order[k]) {
        case PERF_REPORT_SORT_THREAD:
            printf("  %-16s", perf_report_thread_name(r->last, e->tid));
            break;
        case PERF_REPORT_SORT_CPU:
            printf("  %03u", e->cpu);
            break;
        default:
            /* Padded when another column follows. */
            printf("  %-*s", (k + 1 < r->opts.nr_keys) ? 32 : 0,
                   e->name ?: "[unknown]");
            break;
        }
    }

    printf("\n");
}

static void
perf_report_print_header(const struct perf_report *r)
{
    const struct perf_record_last *last = r->last;
    uint64_t period = last->periods[r->event];

    printf("# Samples: %llu of event '%s', %s %llu%s, target %s, %llu ms\n"
           "# Event count: %llu\n#\n#%s",
           (unsigned long long)r->nr_samples, last->names[r->event],
           (period != 0) ? "period" : "frequency",
           (unsigned long long)((period != 0) ? period : last->freq),
           (period != 0) ? "" : " Hz", last->target,
           (unsigned long long)last->ms, (unsigned long long)r->total,
           r->opts.children ? " Children      Self" : " Overhead");
    printf("   Samples");

    for (unsigned int k = 0; k < r->opts.nr_keys; k++) {
        switch (r->opts.order[k]) {
        case PERF_REPORT_SORT_THREAD:
            printf("  %-16s", "Thread");
            break;
        case PERF_REPORT_SORT_CPU:
            printf("  CPU");
            break;
        default:
            printf("  %-*s", (k + 1 < r->opts.nr_keys) ? 32 : 0, "Symbol");
            break;
        }
    }

    printf("\n#\n");
}

static void
perf_report_print_totals(const struct perf_report *r)
{
    const struct perf_record_last *last = r->last;
    uint64_t lost = 0;

    for (unsigned int cpu = 0; cpu < last->nr_cpus; cpu++) {
        lost += last->lost[cpu];
    }

    printf("#\n# %llu received, %llu lost, %llu periods throttled (%llu "
           "events, %llu records); %llu produced",
           (unsigned long long)last->received, (unsigned long long)lost,
           (unsigned long long)last->throttled_periods,
           (unsigned long long)last->throttled_events,
           (unsigned long long)last->throttled,
           (unsigned long long)last->produced);

    if (last->dropped != 0) {
        printf("; %llu did not fit the buffer",
               (unsigned long long)last->dropped);
    }

    printf("\n");
}

static void
perf_report_print(struct perf_report *r)
{
    static char prefix[PERF_REPORT_PREFIX_SIZE];
    uint64_t other = r->other;

    perf_report_print_header(r);

    for (unsigned int i = 0; i < r->nr_entries; i++) {
        const struct perf_report_entry *e = &r->entries[i];

        if (i >= PERF_REPORT_TOP) {
            other += e->self;
            continue;
        }

        /* Without children, a function only ever a caller has no line. */
        if (!r->opts.children && e->self == 0) {
            continue;
        }

        if (r->opts.children) {
            perf_util_print_pct(e->children, r->total);
            printf("  ");
        }

        perf_util_print_pct(e->self, r->total);
        printf("  %8llu", (unsigned long long)e->nr_samples);
        perf_report_print_keys(r, e);

        if (!r->opts.graph || e->self == 0
            || !(r->opts.sort & PERF_REPORT_SORT_SYMBOL)) {
            continue;
        }

        perf_report_graph_build(r, e);
        snprintf(prefix, sizeof(prefix), "%*s", r->opts.children ? 22 : 11,
                 "");
        printf("%s|\n", prefix);
        perf_report_graph_print(r, 0, prefix, strlen(prefix),
                                sizeof(prefix));

        if (r->nodes_full) {
            printf("%s(tree cut: more than %u call paths)\n", prefix,
                   PERF_REPORT_MAX_NODES);
            r->nodes_full = false;
        }

        printf("\n");
    }

    if (other != 0) {
        if (r->opts.children) {
            printf("%9s", "");
        }

        perf_util_print_pct(other, r->total);
        printf("  %8s  (other entries: self)\n", "");
    }
}

void
perf_report_cmd(int argc, char **argv)
{
    const struct perfmon_record_sample *s;
    struct perf_report *r;
    size_t offset = 0;

    r = kmem_zalloc(sizeof(*r));

    if (r == NULL) {
        perf_util_error("report", ENOMEM);
        return;
    }

    if (perf_report_parse(&r->opts, argc, argv) != 0) {
        goto out;
    }

    r->last = perf_record_last_require();

    if (r->last == NULL) {
        goto out;
    }

    /* A section per event, as Linux's perf report prints them. */
    for (unsigned int e = 0; e < r->last->nr_events; e++) {
        struct perf_report_opts opts = r->opts;
        const struct perf_record_last *last = r->last;

        memset(r, 0, sizeof(*r));
        r->opts = opts;
        r->last = last;
        r->event = e;
        offset = 0;

        while ((s = perf_record_last_next_sample(r->last, &offset)) != NULL) {
            if (s->cookie == e) {
                perf_report_add_sample(r, s);
            }
        }

        perf_report_entries_sort(r);
        printf("%s", (e != 0) ? "\n" : "");
        perf_report_print(r);
    }

    perf_report_print_totals(r);

out:
    kmem_free(r);
}
