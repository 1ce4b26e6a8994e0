/* test_prom.c: the Prometheus text format writer (src/server/admin/prom.h):
 * HELP/TYPE lines with escaping, samples with and without labels, label
 * value escaping, floats (including +Inf, -Inf, NaN) that read back
 * exactly, the latency bucket bounds and bucket selection, and the exact
 * text of a histogram: cumulative buckets, le in seconds, +Inf, _sum in
 * seconds, _count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/admin/prom.h"

static char *take(sl__buf *b) {
    sl__buf_append(b, "", 1);
    assert_false(b->failed);
    b->len--;
    return b->data;
}

static void test_family(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__prom_family(&b, "sluice_decisions_total", "counter", "Decisions by policy and outcome.");
    assert_string_equal(take(&b), "# HELP sluice_decisions_total Decisions by policy and outcome.\n"
                                  "# TYPE sluice_decisions_total counter\n");
    sl__buf_reset(&b);
    /* HELP escapes backslash and newline (quotes stay as they are) */
    sl__prom_family(&b, "x", "gauge", "a\\b\nc \"q\"");
    assert_string_equal(take(&b), "# HELP x a\\\\b\\nc \"q\"\n# TYPE x gauge\n");
    sl__buf_free(&b);
}

static void test_samples(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__prom_sample(&b, "sluice_connections", NULL, 0);
    const char *const none[] = {NULL};
    sl__prom_sample(&b, "sluice_reloads_total", none, 18446744073709551615u);
    const char *const two[] = {"policy", "api", "outcome", "allowed", NULL};
    sl__prom_sample(&b, "sluice_decisions_total", two, 42);
    const char *const esc[] = {"policy", "a\\b\"c\nd", NULL};
    sl__prom_sample(&b, "m", esc, 1);
    assert_string_equal(take(&b), "sluice_connections 0\n"
                                  "sluice_reloads_total 18446744073709551615\n"
                                  "sluice_decisions_total{policy=\"api\",outcome=\"allowed\"} 42\n"
                                  "m{policy=\"a\\\\b\\\"c\\nd\"} 1\n");
    sl__buf_free(&b);
}

static void test_floats(void **state) {
    (void)state;
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.0, "0"},       {0.5, "0.5"},    {0.1, "0.1"}, {1e-7, "1e-07"},
        {-2.25, "-2.25"}, {1e21, "1e+21"}, {3.0, "3"},   {1.0 / 3.0, "0.33333333333333331"},
    };
    sl__buf b;
    sl__buf_init(&b);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl__buf_reset(&b);
        sl__prom_sample_f(&b, "f", NULL, cases[i].v);
        char want[64];
        snprintf(want, sizeof want, "f %s\n", cases[i].text);
        assert_string_equal(take(&b), want);
        double back = strtod(b.data + 2, NULL);
        assert_memory_equal(&back, &cases[i].v, sizeof back); /* reads back exactly */
    }
    sl__buf_reset(&b);
    const char *const l[] = {"k", "v", NULL};
    sl__prom_sample_f(&b, "f", l, INFINITY);
    sl__prom_sample_f(&b, "f", l, -INFINITY);
    sl__prom_sample_f(&b, "f", l, NAN);
    assert_string_equal(take(&b), "f{k=\"v\"} +Inf\nf{k=\"v\"} -Inf\nf{k=\"v\"} NaN\n");
    sl__buf_free(&b);
}

static void test_bounds(void **state) {
    (void)state;
    for (int i = 1; i < SL__PROM_LATENCY_BUCKETS; i++)
        assert_true(sl__prom_latency_bounds_ns[i - 1] < sl__prom_latency_bounds_ns[i]);
    assert_true(sl__prom_latency_bounds_ns[0] <= 1000); /* <= 1 us */
    assert_true(sl__prom_latency_bounds_ns[SL__PROM_LATENCY_BUCKETS - 1] >= 100000000); /* 100 ms */
    /* le is inclusive: a latency equal to a bound is in that bucket */
    for (int i = 0; i < SL__PROM_LATENCY_BUCKETS; i++) {
        int64_t le = sl__prom_latency_bounds_ns[i];
        assert_int_equal(sl__prom_latency_bucket(le), i);
        assert_int_equal(sl__prom_latency_bucket(le + 1), i + 1);
        if (i > 0)
            assert_int_equal(sl__prom_latency_bucket(sl__prom_latency_bounds_ns[i - 1] + 1), i);
    }
    assert_int_equal(sl__prom_latency_bucket(0), 0);
    assert_int_equal(sl__prom_latency_bucket(-5), 0); /* a clock step back counts as fastest */
    assert_int_equal(sl__prom_latency_bucket(INT64_MAX), SL__PROM_LATENCY_BUCKETS);
}

static void test_histogram(void **state) {
    (void)state;
    uint64_t counts[SL__PROM_LATENCY_BUCKETS + 1] = {0};
    counts[0] = 5;  /* <= 250 ns */
    counts[2] = 3;  /* <= 1 us */
    counts[11] = 1; /* <= 100 ms */
    counts[12] = 2; /* beyond */
    sl__buf b;
    sl__buf_init(&b);
    const char *const l[] = {"proto", "http", NULL};
    sl__prom_histogram(&b, "sluice_decision_seconds", l, counts, UINT64_C(1500000123));
    assert_string_equal(take(&b),
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.00000025\"} 5\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.0000005\"} 5\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.000001\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.0000025\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.000005\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.00001\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.00005\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.0001\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.0005\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.001\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.01\"} 8\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"0.1\"} 9\n"
                        "sluice_decision_seconds_bucket{proto=\"http\",le=\"+Inf\"} 11\n"
                        "sluice_decision_seconds_sum{proto=\"http\"} 1.500000123\n"
                        "sluice_decision_seconds_count{proto=\"http\"} 11\n");
    /* without labels; an empty histogram */
    uint64_t zero[SL__PROM_LATENCY_BUCKETS + 1] = {0};
    sl__buf_reset(&b);
    sl__prom_histogram(&b, "h", NULL, zero, 0);
    const char *s = take(&b);
    assert_non_null(strstr(s, "h_bucket{le=\"0.00000025\"} 0\n"));
    assert_non_null(strstr(s, "h_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n"));
    /* whole seconds in the sum */
    sl__buf_reset(&b);
    sl__prom_histogram(&b, "h", NULL, zero, UINT64_C(2000000000));
    assert_non_null(strstr(take(&b), "h_sum 2\n"));
    sl__buf_reset(&b);
    sl__prom_histogram(&b, "h", NULL, zero, UINT64_MAX);
    assert_non_null(strstr(take(&b), "h_sum 18446744073.709551615\n"));
    sl__buf_free(&b);
}

/* A whole exposition, as /metrics writes it, is well formed line by line. */
static void test_exposition_lines(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__prom_family(&b, "sluice_decisions_total", "counter", "Decisions.");
    const char *const l1[] = {"policy", "api", "outcome", "limited", NULL};
    sl__prom_sample(&b, "sluice_decisions_total", l1, 7);
    sl__prom_family(&b, "sluice_decision_seconds", "histogram", "Latency.");
    uint64_t counts[SL__PROM_LATENCY_BUCKETS + 1] = {1, 2, 3};
    sl__prom_histogram(&b, "sluice_decision_seconds", NULL, counts, 1234);
    char *text = take(&b);
    assert_true(b.len > 0 && text[b.len - 1] == '\n');
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') {
            assert_true(strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0);
            continue;
        }
        /* name[{...}] value: exactly one space before the value */
        char *sp = strrchr(line, ' ');
        assert_non_null(sp);
        char *end;
        strtod(sp + 1, &end);
        assert_true(*end == '\0' && end > sp + 1);
        assert_true(line[0] == '_' || (line[0] >= 'a' && line[0] <= 'z'));
    }
    sl__buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family),    cmocka_unit_test(test_samples),
        cmocka_unit_test(test_floats),    cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_histogram), cmocka_unit_test(test_exposition_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
