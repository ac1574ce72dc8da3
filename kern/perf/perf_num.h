/*
 * perf stat's arithmetic and number formats (kern/perf/perf_stat.c): pure
 * code, also compiled into the host unit tests. Every function may be
 * called in any context and cannot fail.
 */
#ifndef KERN_PERF_NUM_H
#define KERN_PERF_NUM_H

#include <stddef.h>
#include <stdint.h>

/* a * b / c, rounded down, without overflow for c * b below 2^64. */
uint64_t perf_num_muldiv(uint64_t a, uint64_t b, uint64_t c);

/* The integer square root of n (rounded down). */
uint64_t perf_num_isqrt(uint64_t n);

/*
 * The mean of n values (n at least 1), with no overflow for any values,
 * and into *devp the relative standard deviation of that mean, Linux perf
 * stat -r's "+- x%", in hundredths of a percent (0 for n 1 or mean 0).
 */
uint64_t perf_num_mean(const uint64_t *values, unsigned int n,
                       uint64_t *devp);

/* n in decimal with a comma every three digits, "1,234,567". */
void perf_num_format_count(char *buf, size_t size, uint64_t n);

/* v / 10^decimals with its decimals, "12.345" (decimals 1 to 9). */
void perf_num_format_fixed(char *buf, size_t size, uint64_t v,
                           unsigned int decimals);

/* Nanoseconds as milliseconds with two decimals, "1,002.39". */
void perf_num_format_msec(char *buf, size_t size, uint64_t ns);

/*
 * count per second of us microseconds (us not 0), with three decimals,
 * in the unit Linux picks: return "/sec", "K/sec", "M/sec" or "G/sec"
 * ("400.000" and "K/sec" for 200 in 500 us).
 */
const char *perf_num_format_rate(char *buf, size_t size, uint64_t count,
                                 uint64_t us);

#endif /* KERN_PERF_NUM_H */
