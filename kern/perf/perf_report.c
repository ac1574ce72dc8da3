/*
 * Reading the last recording (kern/perf/perf_report.h): perf report, perf
 * annotate and perf script.
 *
 * Each walks the records perf record kept (kern/perf/perf_record.c), in the
 * order kept, through perf_record_last_get and the layout in
 * kern/perf/perf_record_i.h; none changes the recording, so each may run
 * any number of times after one perf record. perf report sums the
 * samples' periods per entry (a distinct value of its sort keys: the
 * function, from the kernel's symbol table, the thread, the CPU) as Self
 * (the interrupted instruction's entry) and Children (every entry of the
 * call chain, once per sample), and with -g prints each entry's callers
 * as a tree built afresh from the samples (a bounded node table, so no
 * allocation per sample). perf annotate sums one function's samples per
 * address. perf script prints the
 * dump tools/perf/perf-convert reads (a line per thread, per record and per
 * call chain), each line written at once so that no other output lands
 * inside it.
 *
 * Shell thread only, like the last recording itself.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/ksym.h>
#include <kern/log.h>
#include <kern/macros.h>
#include <kern/perf/perf_record.h>
#include <kern/perf/perf_record_i.h>
#include <kern/perf/perf_report.h>
#include <kern/perf/perf_util.h>
#include <kern/perfmon_record.h>
#include <kern/printf.h>
#include <kern/string.h>
#include <machine/qemu.h>

#define PERF_REPORT_MAX_ENTRIES     512U
#define PERF_REPORT_MAX_NODES       1024U
#define PERF_REPORT_MAX_ADDRS       256U
#define PERF_REPORT_TOP             20U
#define PERF_REPORT_LINE_SIZE       2048U
#define PERF_REPORT_DUMP_VERSION    2
#define PERF_REPORT_MAX_CHAIN       (PERF_RECORD_NR_FRAMES + 1)

/* ---- walking the recording ------------------------------------------- */

/* The next kept record at *offsetp, advancing it; NULL at the end. */
static const union perf_record_rec *
perf_report_next(const struct perf_record_last *last, size_t *offsetp)
{
    const union perf_record_rec *rec;

    if (*offsetp >= last->used) {
        return NULL;
    }

    rec = (const void *)(last->buf + *offsetp);

    if (rec->header.size < sizeof(rec->header)) {
        return NULL;    /* never kept: perf record keeps the sizes read */
    }

    *offsetp += rec->header.size;
    return rec;
}

/* The next kept sample at *offsetp, advancing it; NULL at the end. */
static const struct perfmon_record_sample *
perf_report_next_sample(const struct perf_record_last *last, size_t *offsetp)
{
    const union perf_record_rec *rec;

    while ((rec = perf_report_next(last, offsetp)) != NULL) {
        if (rec->header.type == PERFMON_RECORD_SAMPLE) {
            return &rec->sample;
        }
    }

    return NULL;
}

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

/* The last recording, or NULL after saying there is none. */
static const struct perf_record_last *
perf_report_require_last(void)
{
    const struct perf_record_last *last = perf_record_last_get();

    if (last == NULL) {
        printf("perf: no recording yet (perf record first)\n");
    }

    return last;
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

static void
perf_report_print_pct(uint64_t part, uint64_t total)
{
    uint64_t bp = (total == 0) ? 0 : part * 10000 / total;

    printf("%6llu.%02llu%%", (unsigned long long)(bp / 100),
           (unsigned long long)(bp % 100));
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
        } else if (strcmp(argv[i], "--stdio") == 0) {
            continue;           /* the only output there is */
        } else if ((strcmp(argv[i], "--sort") != 0
                    && strcmp(argv[i], "-s") != 0) || i + 1 == argc) {
            printf("perf report: unknown option '%s' (options: -g, "
                   "--no-children, --sort KEYS, --stdio)\n", argv[i]);
            return -1;
        }

        keys = argv[++i];
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

    while ((s = perf_report_next_sample(r->last, &offset)) != NULL) {
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

/* "NN.NN%" into buf: a share with no padding. */
static int
perf_report_format_pct(char *buf, size_t size, uint64_t part, uint64_t total)
{
    uint64_t bp = (total == 0) ? 0 : part * 10000 / total;

    return snprintf(buf, size, "%llu.%02llu%%", (unsigned long long)(bp / 100),
                    (unsigned long long)(bp % 100));
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

        width = perf_report_format_pct(pct, sizeof(pct), c->weight,
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

    printf("#\n# %llu received, %llu lost, %llu throttled (%llu produced)",
           (unsigned long long)last->received, (unsigned long long)lost,
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
    static char prefix[PERF_REPORT_LINE_SIZE / 4];
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
            perf_report_print_pct(e->children, r->total);
            printf("  ");
        }

        perf_report_print_pct(e->self, r->total);
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

        perf_report_print_pct(other, r->total);
        printf("  %8s  (other entries: self)\n", "");
    }
}

void
perf_report_cmd_report(int argc, char **argv)
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

    r->last = perf_report_require_last();

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

        while ((s = perf_report_next_sample(r->last, &offset)) != NULL) {
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

/* ---- perf annotate ----------------------------------------------------- */

struct perf_report_addr {
    uint64_t ip;
    uint64_t weight;
    uint64_t nr_samples;
};

void
perf_report_cmd_annotate(int argc, char **argv)
{
    const struct perf_record_last *last;
    const struct perfmon_record_sample *s;
    struct perf_report_addr *addrs;
    uint64_t total = 0, in_func = 0, nr_in = 0, other = 0;
    uintptr_t start, size;
    unsigned int nr_addrs = 0;
    size_t offset = 0;
    char pct[16];

    if (argc != 3) {
        printf("usage: perf annotate SYMBOL (a function of the kernel)\n");
        return;
    }

    if (ksym_find(argv[2], &start, &size) != 0) {
        printf("perf annotate: no function named '%s' in the kernel\n",
               argv[2]);
        return;
    }

    last = perf_report_require_last();

    if (last == NULL) {
        return;
    }

    addrs = kmem_zalloc(PERF_REPORT_MAX_ADDRS * sizeof(addrs[0]));

    if (addrs == NULL) {
        perf_util_error("annotate", ENOMEM);
        return;
    }

    while ((s = perf_report_next_sample(last, &offset)) != NULL) {
        unsigned int i;

        total += s->period;

        if (s->ip < start || s->ip >= start + size) {
            continue;
        }

        in_func += s->period;
        nr_in++;

        for (i = 0; i < nr_addrs && addrs[i].ip != s->ip; i++) {
            continue;
        }

        if (i == nr_addrs) {
            if (nr_addrs == PERF_REPORT_MAX_ADDRS) {
                other += s->period;
                continue;
            }

            addrs[nr_addrs++].ip = s->ip;
        }

        addrs[i].weight += s->period;
        addrs[i].nr_samples++;
    }

    /* By address (insertion: few entries). */
    for (unsigned int i = 1; i < nr_addrs; i++) {
        struct perf_report_addr a = addrs[i];
        unsigned int j = i;

        for (; j > 0 && addrs[j - 1].ip > a.ip; j--) {
            addrs[j] = addrs[j - 1];
        }

        addrs[j] = a;
    }

    perf_report_format_pct(pct, sizeof(pct), in_func, total);
    printf("# perf annotate %s: 0x%llx, %llu bytes; %llu samples, %s of "
           "event '%s'\n#\n#  Percent   Samples  Address             "
           "Symbol+Offset\n#\n", argv[2], (unsigned long long)start,
           (unsigned long long)size, (unsigned long long)nr_in, pct,
           last->event);

    for (unsigned int i = 0; i < nr_addrs; i++) {
        printf(" ");
        perf_report_print_pct(addrs[i].weight, in_func);
        printf("  %8llu  0x%llx  %s+0x%llx\n",
               (unsigned long long)addrs[i].nr_samples,
               (unsigned long long)addrs[i].ip, argv[2],
               (unsigned long long)(addrs[i].ip - start));
    }

    if (other != 0) {
        printf(" ");
        perf_report_print_pct(other, in_func);
        printf("  (more than %u addresses)\n", PERF_REPORT_MAX_ADDRS);
    }

    kmem_free(addrs);
}

/* ---- perf script: the dump ------------------------------------------- */

/* Formatting into one line, written at once so no other output lands in
 * it. */
struct perf_report_line {
    char buf[PERF_REPORT_LINE_SIZE];
    size_t len;
    bool overflow;
    bool capture;                       /* to QEMU's debugcon, not the log */
};

static void
perf_report_line_add(struct perf_report_line *line, const char *fmt, ...)
    __format_printf(2, 3);

static void
perf_report_line_add(struct perf_report_line *line, const char *fmt, ...)
{
    size_t left = sizeof(line->buf) - line->len;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line->buf + line->len, left, fmt, ap);
    va_end(ap);

    if (n < 0 || (size_t)n >= left) {
        line->overflow = true;
        line->buf[line->len] = '\0';
        return;
    }

    line->len += (size_t)n;
}

/* Write the line with a newline, and start the next one. */
static void
perf_report_line_put(struct perf_report_line *line, uint64_t *nr_linesp)
{
    line->buf[line->len++] = '\n';

    if (line->capture) {
        qemu_debugcon_write(line->buf, line->len);
    } else {
        log_write(line->buf, line->len);
    }

    line->len = 0;
    line->overflow = false;

    if (nr_linesp != NULL) {
        (*nr_linesp)++;
    }
}

static void
perf_report_line_frame(struct perf_report_line *line, uint64_t addr)
{
    const char *name;
    uintptr_t offset;
    size_t len = line->len;

    name = ksym_lookup((uintptr_t)addr, &offset);

    if (name != NULL) {
        perf_report_line_add(line, " 0x%llx %s+0x%llx",
                             (unsigned long long)addr, name,
                             (unsigned long long)offset);
    }

    if (name == NULL || line->overflow) {
        /* Without its name rather than cut. */
        line->len = len;
        line->overflow = false;
        perf_report_line_add(line, " 0x%llx ?", (unsigned long long)addr);
    }
}

/*
 * A sample's lines: its fixed part, then its call chain, when it has
 * callers, on a line of its own (the dump's lines follow the record's
 * parts: a new chunk type becomes a new kind of line after the sample).
 */
static void
perf_report_script_sample(struct perf_report_line *line,
                          const struct perfmon_record_sample *s,
                          uint64_t *nr_linesp)
{
    const struct perfmon_record_callchain *chain;
    unsigned int nr_frames;

    perf_report_line_add(line, "pd sample %u %llu %u %llu %llu",
                         s->header.cpu, (unsigned long long)s->time, s->tid,
                         (unsigned long long)s->period,
                         (unsigned long long)s->cookie);
    perf_report_line_frame(line, s->ip);
    perf_report_line_put(line, nr_linesp);
    chain = perfmon_record_sample_callchain(s, s->header.size);
    nr_frames = (chain == NULL) ? 0 : chain->chunk.nr;

    if (nr_frames == 0) {
        return;
    }

    perf_report_line_add(line, "pd callchain %u", nr_frames);

    for (unsigned int i = 0; i < nr_frames; i++) {
        perf_report_line_frame(line, chain->frames[i]);
    }

    perf_report_line_put(line, nr_linesp);
}

void
perf_report_cmd_script(int argc, char **argv)
{
    static struct perf_report_line line;
    const struct perf_record_last *last;
    const union perf_record_rec *rec;
    uint64_t nr_lines = 0, lost = 0;
    size_t offset = 0;

    line.capture = (argc == 3 && strcmp(argv[2], "--capture") == 0);

    if (argc != 2 && !line.capture) {
        printf("usage: perf script [--capture]\n"
               "  --capture: write the dump to the capture channel, QEMU's "
               "debugcon\n");
        return;
    }

    if (line.capture && !qemu_debugcon_present()) {
        printf("perf script: no capture channel: boot QEMU with "
               "-debugcon file:PATH (make profile does)\n");
        return;
    }

    last = perf_report_require_last();

    if (last == NULL) {
        return;
    }

    line.len = 0;
    perf_report_line_add(&line, "perfmon-dump %u begin cpus=%u tsc_hz=%llu "
                         "event=%s period=", PERF_REPORT_DUMP_VERSION,
                         last->nr_cpus, (unsigned long long)last->tsc_hz,
                         last->event);

    /* A period per event, in the order of the names (0: at freq). */
    for (unsigned int e = 0; e < last->nr_events; e++) {
        perf_report_line_add(&line, "%s%llu", (e != 0) ? "," : "",
                             (unsigned long long)last->periods[e]);
    }

    perf_report_line_add(&line, " freq=%llu frames=%u ms=%llu target=%s",
                         (unsigned long long)last->freq,
                         PERF_RECORD_NR_FRAMES, (unsigned long long)last->ms,
                         last->target);
    perf_report_line_put(&line, NULL);
    perf_report_line_add(&line, "pd thread 0 idle");
    perf_report_line_put(&line, &nr_lines);

    for (unsigned int i = 0; i < last->nr_threads; i++) {
        perf_report_line_add(&line, "pd thread %u %s", last->threads[i].tid,
                             last->threads[i].name);
        perf_report_line_put(&line, &nr_lines);
    }

    while ((rec = perf_report_next(last, &offset)) != NULL) {
        if (rec->header.type == PERFMON_RECORD_SAMPLE) {
            perf_report_script_sample(&line, &rec->sample, &nr_lines);
            continue;
        }

        perf_report_line_add(&line, "pd throttle %u %llu %llu %llu",
                             rec->header.cpu,
                             (unsigned long long)rec->throttle.time_start,
                             (unsigned long long)rec->throttle.time_end,
                             (unsigned long long)rec->throttle.nr_periods);
        perf_report_line_put(&line, &nr_lines);
    }

    for (unsigned int cpu = 0; cpu < last->nr_cpus; cpu++) {
        lost += last->lost[cpu];

        if (last->lost[cpu] != 0) {
            perf_report_line_add(&line, "pd lost %u %llu", cpu,
                                 (unsigned long long)last->lost[cpu]);
            perf_report_line_put(&line, &nr_lines);
        }
    }

    perf_report_line_add(&line, "pd totals received=%llu lost=%llu "
                         "throttled=%llu produced=%llu dropped=%llu",
                         (unsigned long long)last->received,
                         (unsigned long long)lost,
                         (unsigned long long)last->throttled,
                         (unsigned long long)last->produced,
                         (unsigned long long)last->dropped);
    perf_report_line_put(&line, &nr_lines);
    perf_report_line_add(&line, "perfmon-dump %u end lines=%llu",
                         PERF_REPORT_DUMP_VERSION,
                         (unsigned long long)nr_lines);
    perf_report_line_put(&line, NULL);

    if (line.capture) {
        printf("perf script: %llu lines written to the capture channel\n",
               (unsigned long long)nr_lines + 2);
    }
}
