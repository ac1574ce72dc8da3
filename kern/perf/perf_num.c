/*
 * perf stat's arithmetic and number formats (kern/perf/perf_num.h). Pure code:
 * the host tests compile it unchanged.
 */
#include <stddef.h>
#include <stdint.h>

#include <kern/perf/perf_num.h>
#include <kern/printf.h>

uint64_t
perf_num_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    return (a / c) * b + (a % c) * b / c;
}

uint64_t
perf_num_isqrt(uint64_t n)
{
    uint64_t x = n, y = n / 2 + (n & 1);

    /* Newton's iteration from above: it decreases to the floor. */
    while (y < x) {
        x = y;
        y = (x + n / x) / 2;
    }

    return x;
}

/*
 * Each value's deviation is taken relative to the mean first, in
 * ten-thousandths, so the squares stay far from overflow for any count
 * (a deviation of n times the mean squares to 10^8 n^2).
 */
uint64_t
perf_num_mean(const uint64_t *values, unsigned int n, uint64_t *devp)
{
    uint64_t quotients = 0, remainders = 0, mean, squares = 0;

    for (unsigned int i = 0; i < n; i++) {
        quotients += values[i] / n;
        remainders += values[i] % n;
    }

    mean = quotients + remainders / n;
    *devp = 0;

    if (n < 2 || mean == 0) {
        return mean;
    }

    for (unsigned int i = 0; i < n; i++) {
        uint64_t d = (values[i] > mean) ? values[i] - mean : mean - values[i];
        uint64_t rel = perf_num_muldiv(d, 10000, mean);

        squares += rel * rel;
    }

    /* The variance of the values over n - 1, of their mean over n more. */
    *devp = perf_num_isqrt(squares / (n - 1) / n);
    return mean;
}

void
perf_num_format_count(char *buf, size_t size, uint64_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%llu",
                       (unsigned long long)n);
    size_t j = 0;

    for (int i = 0; i < len && j + 1 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0 && j + 2 < size) {
            buf[j++] = ',';
        }

        buf[j++] = digits[i];
    }

    buf[j] = '\0';
}

void
perf_num_format_fixed(char *buf, size_t size, uint64_t v,
                      unsigned int decimals)
{
    uint64_t div = 1;

    for (unsigned int i = 0; i < decimals; i++) {
        div *= 10;
    }

    snprintf(buf, size, "%llu.%0*llu", (unsigned long long)(v / div),
             (int)decimals, (unsigned long long)(v % div));
}

void
perf_num_format_msec(char *buf, size_t size, uint64_t ns)
{
    uint64_t cs = ns / 10000;           /* hundredths of a millisecond */
    char whole[32];

    perf_num_format_count(whole, sizeof(whole), cs / 100);
    snprintf(buf, size, "%s.%02llu", whole, (unsigned long long)(cs % 100));
}

const char *
perf_num_format_rate(char *buf, size_t size, uint64_t count, uint64_t us)
{
    static const char *const units[] = { "/sec", "K/sec", "M/sec", "G/sec" };
    /* Thousandths per second: count * 10^9 / microseconds. */
    uint64_t rate = perf_num_muldiv(count, 1000000000ULL, us), div = 1;
    unsigned int unit = 0;

    while (unit + 1 < sizeof(units) / sizeof(units[0])
           && rate / div >= 1000000) {
        div *= 1000;
        unit++;
    }

    perf_num_format_fixed(buf, size, rate / div, 3);
    return units[unit];
}
