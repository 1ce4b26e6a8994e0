/* prom.h: writing the Prometheus text exposition format (version 0.0.4) by
 * hand (no packaged C client fits): HELP/TYPE lines once per family, label
 * values escaped (\\, \", \n), integers and seconds as decimals. */
#ifndef SLUICE_SERVER_PROM_H
#define SLUICE_SERVER_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* # HELP name help \n # TYPE name type */
void sl__prom_family(sl__buf *out, const char *name, const char *type, const char *help);
/* name{l1="v1",l2="v2"} value. labels: alternating names and values, NULL-terminated; may be NULL.
 */
void sl__prom_sample(sl__buf *out, const char *name, const char *const *labels, uint64_t value);
/* A family of one unlabelled sample: sl__prom_family, then name value. */
void sl__prom_single(sl__buf *out, const char *name, const char *type, const char *help,
                     uint64_t value);
void sl__prom_sample_f(sl__buf *out, const char *name, const char *const *labels, double value);

/* A latency histogram with fixed bucket bounds (ns). Counts are per bucket
 * (not cumulative); the writer makes them cumulative and adds +Inf, _sum
 * (seconds) and _count. */
#define SL__PROM_LATENCY_BUCKETS 12
extern const int64_t sl__prom_latency_bounds_ns[SL__PROM_LATENCY_BUCKETS];
void sl__prom_histogram(sl__buf *out, const char *name, const char *const *labels,
                        const uint64_t counts[SL__PROM_LATENCY_BUCKETS + 1], uint64_t sum_ns);
/* A histogram with nle bounds written as given (le[i], ascending, such as
 * "0.05"): counts[0..nle] per bucket (not cumulative; counts[nle] is above
 * the last bound), made cumulative with +Inf, _sum (the text `sum`) and
 * _count. */
void sl__prom_histogram_le(sl__buf *out, const char *name, const char *const *labels,
                           const char *const *le, size_t nle, const uint64_t *counts,
                           const char *sum);
/* Index of the bucket for a latency. */
int sl__prom_latency_bucket(int64_t ns);

#endif
