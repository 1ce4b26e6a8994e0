/* prom.c: the Prometheus text exposition format, version 0.0.4 (see
 * prom.h), written by hand: no packaged C client fits a server that keeps
 * its own counters.
 *
 * Format rules followed (prometheus/docs exposition_formats.md):
 * - "# HELP name text" with '\' and newline escaped as \\ and \n;
 * - "# TYPE name counter|gauge|histogram|summary|untyped";
 * - name{label="value",...} value, label values with '\', '"' and newline
 *   escaped as \\, \" and \n;
 * - histograms: name_bucket{le="<bound>"} cumulative counts in increasing
 *   order of bound, ending with le="+Inf" (equal to _count), then name_sum
 *   (in seconds, the base unit) and name_count;
 * - floats as Go's ParseFloat reads them, including +Inf, -Inf, NaN.
 * Latencies are integer nanoseconds, written as exact decimal seconds
 * (no float rounding in the bounds or the sums). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/admin/prom.h"

/* Decision latency bounds, upper inclusive (le), in ns: an in-memory decision
 * takes a few hundred ns, so the resolution is finest there (250 ns to
 * 10 us); the Redis store and loaded machines fill the tail (up to 100 ms). */
const int64_t sl__prom_latency_bounds_ns[SL__PROM_LATENCY_BUCKETS] = {
    250, 500, 1000, 2500, 5000, 10000, 50000, 100000, 500000, 1000000, 10000000, 100000000,
};

int sl__prom_latency_bucket(int64_t ns) {
    int i = 0;
    while (i < SL__PROM_LATENCY_BUCKETS && ns > sl__prom_latency_bounds_ns[i]) i++;
    return i;
}

/* Appends s with '\' (and '"' in label values) escaped by a backslash and
 * newlines as \n. */
static void put_escaped(sl__buf *out, const char *s, bool quote) {
    const char *stop = quote ? "\\\"\n" : "\\\n";
    for (;;) {
        size_t n = strcspn(s, stop);
        sl__buf_append(out, s, n);
        s += n;
        if (!*s) return;
        if (*s == '\n')
            sl__buf_append(out, "\\n", 2);
        else {
            char esc[2] = {'\\', *s};
            sl__buf_append(out, esc, 2);
        }
        s++;
    }
}

void sl__prom_family(sl__buf *out, const char *name, const char *type, const char *help) {
    sl__buf_puts(out, "# HELP ");
    sl__buf_puts(out, name);
    sl__buf_puts(out, " ");
    put_escaped(out, help ? help : "", false);
    sl__buf_puts(out, "\n# TYPE ");
    sl__buf_puts(out, name);
    sl__buf_puts(out, " ");
    sl__buf_puts(out, type);
    sl__buf_puts(out, "\n");
}

/* name{labels[,le="le"]} without the value. */
static void put_series(sl__buf *out, const char *name, const char *suffix,
                       const char *const *labels, const char *le) {
    sl__buf_puts(out, name);
    if (suffix) sl__buf_puts(out, suffix);
    bool any = (labels && labels[0]) || le;
    if (!any) return;
    sl__buf_puts(out, "{");
    bool first = true;
    for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
        if (!first) sl__buf_puts(out, ",");
        first = false;
        sl__buf_puts(out, labels[i]);
        sl__buf_puts(out, "=\"");
        put_escaped(out, labels[i + 1], true);
        sl__buf_puts(out, "\"");
    }
    if (le) {
        if (!first) sl__buf_puts(out, ",");
        sl__buf_puts(out, "le=\"");
        sl__buf_puts(out, le);
        sl__buf_puts(out, "\"");
    }
    sl__buf_puts(out, "}");
}

static void put_u64(sl__buf *out, uint64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    sl__buf_append(out, tmp, (size_t)n);
}

void sl__prom_sample(sl__buf *out, const char *name, const char *const *labels, uint64_t value) {
    put_series(out, name, NULL, labels, NULL);
    sl__buf_puts(out, " ");
    put_u64(out, value);
    sl__buf_puts(out, "\n");
}

/* The shortest of %.15g / %.17g that reads back as the same double. */
static void put_double(sl__buf *out, double v) {
    if (isnan(v)) {
        sl__buf_puts(out, "NaN");
        return;
    }
    if (isinf(v)) {
        sl__buf_puts(out, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.15g", v);
    double back = strtod(tmp, NULL);
    // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): the same bits, on purpose
    if (memcmp(&back, &v, sizeof v) != 0) snprintf(tmp, sizeof tmp, "%.17g", v);
    sl__buf_puts(out, tmp);
}

void sl__prom_single(sl__buf *out, const char *name, const char *type, const char *help,
                     uint64_t value) {
    sl__prom_family(out, name, type, help);
    sl__prom_sample(out, name, NULL, value);
}

void sl__prom_sample_f(sl__buf *out, const char *name, const char *const *labels, double value) {
    put_series(out, name, NULL, labels, NULL);
    sl__buf_puts(out, " ");
    put_double(out, value);
    sl__buf_puts(out, "\n");
}

/* ns as exact decimal seconds, without trailing zeros: 250 -> "0.00000025",
 * 1500000000 -> "1.5", 2000000000 -> "2". */
static void format_seconds(char *buf, size_t size, uint64_t ns) {
    int n = snprintf(buf, size, "%llu.%09llu", (unsigned long long)(ns / 1000000000u),
                     (unsigned long long)(ns % 1000000000u));
    if (n < 0 || (size_t)n >= size) return;
    while (n > 0 && buf[n - 1] == '0') buf[--n] = '\0';
    if (n > 0 && buf[n - 1] == '.') buf[--n] = '\0';
}

void sl__prom_histogram(sl__buf *out, const char *name, const char *const *labels,
                        const uint64_t counts[SL__PROM_LATENCY_BUCKETS + 1], uint64_t sum_ns) {
    char le[SL__PROM_LATENCY_BUCKETS][32];
    const char *lep[SL__PROM_LATENCY_BUCKETS];
    for (int i = 0; i < SL__PROM_LATENCY_BUCKETS; i++) {
        format_seconds(le[i], sizeof le[i], (uint64_t)sl__prom_latency_bounds_ns[i]);
        lep[i] = le[i];
    }
    char sum[32];
    format_seconds(sum, sizeof sum, sum_ns);
    sl__prom_histogram_le(out, name, labels, lep, SL__PROM_LATENCY_BUCKETS, counts, sum);
}

void sl__prom_histogram_le(sl__buf *out, const char *name, const char *const *labels,
                           const char *const *le, size_t nle, const uint64_t *counts,
                           const char *sum) {
    uint64_t cum = 0;
    for (size_t i = 0; i <= nle; i++) {
        cum += counts[i];
        put_series(out, name, "_bucket", labels, i < nle ? le[i] : "+Inf");
        sl__buf_puts(out, " ");
        put_u64(out, cum);
        sl__buf_puts(out, "\n");
    }
    put_series(out, name, "_sum", labels, NULL);
    sl__buf_puts(out, " ");
    sl__buf_puts(out, sum);
    sl__buf_puts(out, "\n");
    put_series(out, name, "_count", labels, NULL);
    sl__buf_puts(out, " ");
    put_u64(out, cum);
    sl__buf_puts(out, "\n");
}
