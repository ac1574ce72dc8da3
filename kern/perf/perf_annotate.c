/*
 * perf annotate (kern/perf/perf_annotate.h): one function's samples of
 * the last recording, summed per instruction address, read as perf
 * report reads them (kern/perf/perf_record_i.h). Shell thread only, like
 * the last recording itself.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/errno.h>
#include <kern/kmem.h>
#include <kern/ksym.h>
#include <kern/perf/perf_annotate.h>
#include <kern/perf/perf_record_i.h>
#include <kern/perf/perf_util.h>
#include <kern/perfmon_record.h>
#include <kern/printf.h>

#define PERF_ANNOTATE_MAX_ADDRS     256U

struct perf_annotate_addr {
    uint64_t ip;
    uint64_t weight;
    uint64_t nr_samples;
};

void
perf_annotate_cmd(int argc, char **argv)
{
    const struct perf_record_last *last;
    const struct perfmon_record_sample *s;
    struct perf_annotate_addr *addrs;
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

    last = perf_record_last_require();

    if (last == NULL) {
        return;
    }

    addrs = kmem_zalloc(PERF_ANNOTATE_MAX_ADDRS * sizeof(addrs[0]));

    if (addrs == NULL) {
        perf_util_error("annotate", ENOMEM);
        return;
    }

    while ((s = perf_record_last_next_sample(last, &offset)) != NULL) {
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
            if (nr_addrs == PERF_ANNOTATE_MAX_ADDRS) {
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
        struct perf_annotate_addr a = addrs[i];
        unsigned int j = i;

        for (; j > 0 && addrs[j - 1].ip > a.ip; j--) {
            addrs[j] = addrs[j - 1];
        }

        addrs[j] = a;
    }

    perf_util_format_pct(pct, sizeof(pct), in_func, total);
    printf("# perf annotate %s: 0x%llx, %llu bytes; %llu samples, %s of "
           "event '%s'\n#\n#  Percent   Samples  Address             "
           "Symbol+Offset\n#\n", argv[2], (unsigned long long)start,
           (unsigned long long)size, (unsigned long long)nr_in, pct,
           last->event);

    for (unsigned int i = 0; i < nr_addrs; i++) {
        printf(" ");
        perf_util_print_pct(addrs[i].weight, in_func);
        printf("  %8llu  0x%llx  %s+0x%llx\n",
               (unsigned long long)addrs[i].nr_samples,
               (unsigned long long)addrs[i].ip, argv[2],
               (unsigned long long)(addrs[i].ip - start));
    }

    if (other != 0) {
        printf(" ");
        perf_util_print_pct(other, in_func);
        printf("  (more than %u addresses)\n", PERF_ANNOTATE_MAX_ADDRS);
    }

    kmem_free(addrs);
}
