/* test_params.c: refusal of bad input, with the exact error code and a real message:
 * sl_params_validate and sl_table_create on invalid parameters and options, sl_table_check on
 * bad costs, keys and times (nothing consumed), the rate and duration parsers and the rate
 * formatter (round trips and bad text), the algorithm names, and sl_strerror. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "helpers.h"

#define MIN  (60 * SEC)
#define HOUR (3600 * SEC)
#define DAY  (86400 * SEC)

static const sl_algorithm all_algorithms[] = {SL_FIXED_WINDOW, SL_SLIDING_LOG, SL_SLIDING_WINDOW,
                                              SL_TOKEN_BUCKET, SL_GCRA,        SL_LEAKY_QUEUE};
#define N_ALGORITHMS (sizeof all_algorithms / sizeof all_algorithms[0])

static bool is_bucket(sl_algorithm a) {
    return a == SL_TOKEN_BUCKET || a == SL_GCRA || a == SL_LEAKY_QUEUE;
}

/* rc must be exactly `want`, and an error must come with a specific, non-empty message. */
static void expect_code(int rc, int want, const char *what) {
    if (rc != want)
        fail_msg("%s: returned %d (%s), expected %d (%s)", what, rc, sl_strerror(rc), want,
                 sl_strerror(want));
    if (want == 0) return;
    const char *msg = sl_strerror(rc);
    if (!msg || !*msg) fail_msg("%s: sl_strerror(%d) is empty", what, rc);
    if (strcmp(msg, sl_strerror(-1000)) == 0)
        fail_msg("%s: sl_strerror(%d) is the text for unknown codes", what, rc);
}

/* A valid baseline: 5 per second, burst 3. */
static sl_params valid(sl_algorithm a) {
    return (sl_params){.algorithm = a, .rate = {5, SEC}, .burst = 3};
}

/* sl_params_validate and sl_table_create must both answer `want` for p. */
static void expect_params(const sl_params *p, int want, const char *what) {
    char label[160];
    snprintf(label, sizeof label, "sl_params_validate(%s: %s)",
             sl_algorithm_name(p->algorithm) ? sl_algorithm_name(p->algorithm) : "?", what);
    expect_code(sl_params_validate(p), want, label);

    sl_table_options o = {.params = *p, .shards = 1, .seed = 1};
    sl_table *t = NULL;
    int rc = sl_table_create(&o, &t);
    snprintf(label, sizeof label, "sl_table_create(%s: %s)",
             sl_algorithm_name(p->algorithm) ? sl_algorithm_name(p->algorithm) : "?", what);
    expect_code(rc, want, label);
    if (want == 0) {
        assert_non_null(t);
        const sl_params *got = sl_table_params(t);
        assert_int_equal(got->algorithm, p->algorithm);
        assert_int_equal(got->rate.limit, p->rate.limit);
        assert_int_equal(got->rate.period, p->rate.period);
        assert_int_equal(got->burst, p->burst);
        assert_int_equal(got->flags, p->flags);
        sl_table_destroy(t);
    } else if (t != NULL) {
        fail_msg("%s: refused, but *out was set", label);
    }
}

/* ---- sl_params_validate / sl_table_create ----------------------------------------------- */

static void valid_parameters_accepted(void **state) {
    (void)state;
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        sl_params p = valid(all_algorithms[i]);
        expect_params(&p, 0, "5/s burst 3");
        p.flags = SL_START_EMPTY | SL_COUNT_REJECTED;
        p.origin = 1000 * SEC;
        expect_params(&p, 0, "both flags");
        p = valid(all_algorithms[i]);
        p.rate = (sl_rate){1, 1}; /* 1 per ns */
        expect_params(&p, 0, "1/ns");
        p.rate = (sl_rate){3, SEC}; /* interval not a whole number of ns */
        expect_params(&p, 0, "3/s");
        p.rate = (sl_rate){7, 10 * SEC};
        expect_params(&p, 0, "7/10s");
        p.rate = (sl_rate){36500, 100 * 365 * DAY}; /* a period of 100 years of 365 days */
        expect_params(&p, 0, "36500 per 100 years");
    }
}

static void zero_or_negative_rate_refused(void **state) {
    (void)state;
    static const sl_rate bad[] = {{0, SEC}, {-1, SEC},      {INT64_MIN, SEC}, {5, 0},
                                  {5, -1},  {5, INT64_MIN}, {0, 0},           {-5, -SEC}};
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
            sl_params p = valid(all_algorithms[i]);
            p.rate = bad[j];
            char what[80];
            snprintf(what, sizeof what, "rate %" PRId64 "/%" PRId64 "ns", bad[j].limit,
                     bad[j].period);
            expect_params(&p, SL_ERATE, what);
        }
    }
}

static void burst_checked_for_buckets_only(void **state) {
    (void)state;
    static const int64_t bursts[] = {0, -1, INT64_MIN};
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        for (size_t j = 0; j < 3; j++) {
            sl_params p = valid(all_algorithms[i]);
            p.burst = bursts[j];
            char what[64];
            snprintf(what, sizeof what, "burst %" PRId64, bursts[j]);
            /* windows ignore the burst ("may be 0") */
            expect_params(&p, is_bucket(p.algorithm) ? SL_EBURST : 0, what);
        }
        sl_params p = valid(all_algorithms[i]);
        p.burst = INT64_MAX; /* ignored by windows; far too big for buckets */
        expect_params(&p, is_bucket(p.algorithm) ? SL_EOVERFLOW : 0, "burst INT64_MAX");
    }
}

/* burst * period / gcd(limit, period) <= 2^61 for buckets (sluice/limit.h). */
static void burst_times_period_overflow(void **state) {
    (void)state;
    const int64_t two61 = INT64_C(1) << 61;
    static const sl_algorithm buckets[] = {SL_TOKEN_BUCKET, SL_GCRA, SL_LEAKY_QUEUE};
    for (size_t i = 0; i < 3; i++) {
        sl_params p = valid(buckets[i]);
        p.rate = (sl_rate){1, SEC};
        p.burst = two61 / SEC; /* 2305843009 s of burst: product just below 2^61 */
        expect_params(&p, 0, "1/s, largest burst");
        p.burst++;
        expect_params(&p, SL_EOVERFLOW, "1/s, largest burst + 1");

        p.rate = (sl_rate){1, 1024}; /* product exactly 2^61: still allowed */
        p.burst = two61 / 1024;
        expect_params(&p, 0, "1/1024ns, burst * period == 2^61");
        p.burst++;
        expect_params(&p, SL_EOVERFLOW, "1/1024ns, burst * period == 2^61 + 1024");

        p.rate = (sl_rate){1000, SEC}; /* reduced to 1 per 1 ms: 2e12 * 1e6 fits */
        p.burst = 2000000000000;
        expect_params(&p, 0, "1000/s burst 2e12 (gcd 1000)");
        p.rate = (sl_rate){3, SEC}; /* gcd 1: 2e12 * 1e9 does not */
        expect_params(&p, SL_EOVERFLOW, "3/s burst 2e12");

        p.rate = (sl_rate){7, DAY}; /* docs/semantics.md's example */
        p.burst = 1000000;
        expect_params(&p, SL_EOVERFLOW, "7/d burst 1e6");
    }
}

static void period_and_limit_bounds(void **state) {
    (void)state;
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        sl_params p = valid(all_algorithms[i]);
        p.rate = (sl_rate){1, 101 * 366 * DAY}; /* beyond 100 years */
        expect_params(&p, SL_EOVERFLOW, "period 101 years");
        p.rate = (sl_rate){1, INT64_MAX};
        expect_params(&p, SL_EOVERFLOW, "period INT64_MAX");
        p.rate = (sl_rate){INT64_MAX, SEC}; /* count + cost would not fit */
        expect_params(&p, SL_EOVERFLOW, "limit INT64_MAX");
    }
    sl_params p = valid(SL_FIXED_WINDOW);
    p.rate = (sl_rate){1000000000000, HOUR};
    expect_params(&p, 0, "fixed window, 10^12 per hour");
}

static void sliding_log_limit_bound(void **state) {
    (void)state;
    sl_params p = valid(SL_SLIDING_LOG);
    p.rate = (sl_rate){SL_SLIDING_LOG_MAX + 1, SEC};
    expect_params(&p, SL_EINVAL, "sliding log limit SL_SLIDING_LOG_MAX + 1");
    p.rate = (sl_rate){INT64_C(1) << 40, SEC};
    expect_params(&p, SL_EINVAL, "sliding log limit 2^40");
    /* the other windows have no such bound */
    p.algorithm = SL_FIXED_WINDOW;
    expect_params(&p, 0, "fixed window limit 2^40");
    p.algorithm = SL_SLIDING_WINDOW;
    expect_params(&p, 0, "sliding window limit 2^40");

    /* the largest log works: one request of the whole limit, then nothing */
    p = valid(SL_SLIDING_LOG);
    p.rate = (sl_rate){SL_SLIDING_LOG_MAX, SEC};
    expect_params(&p, 0, "sliding log limit SL_SLIDING_LOG_MAX");
    sl_table_options o = {.params = p, .seed = 1};
    sl_table *t = NULL;
    assert_int_equal(sl_table_create(&o, &t), 0);
    sl_decision d;
    assert_int_equal(sl_table_check(t, "k", 1, SL_SLIDING_LOG_MAX, 10 * SEC, &d), 0);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    assert_int_equal(sl_table_check(t, "k", 1, 1, 10 * SEC + 1, &d), 0);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC - 1);
    sl_table_destroy(t);
}

static void unknown_flags_refused(void **state) {
    (void)state;
    /* 0x4 is SL_STEP_REFILL: a token bucket's (test_step_refill) */
    static const unsigned bad[] = {0x8u, 0x80000000u, SL_START_EMPTY | 0x10u, ~0u};
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
            sl_params p = valid(all_algorithms[i]);
            p.flags = bad[j];
            char what[40];
            snprintf(what, sizeof what, "flags 0x%x", bad[j]);
            expect_params(&p, SL_EINVAL, what);
        }
    }
}

static void unknown_algorithm_refused(void **state) {
    (void)state;
    static const int bad[] = {0, 7, 8, 100, -1, INT_MAX, INT_MIN};
    for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
        sl_params p = valid(SL_TOKEN_BUCKET);
        p.algorithm = (sl_algorithm)bad[j];
        char what[40];
        snprintf(what, sizeof what, "algorithm %d", bad[j]);
        expect_params(&p, SL_EALGORITHM, what);
    }
}

/* 0 <= origin <= SL_TIME_MAX (the flag that uses it is set). */
static void origin_bounds(void **state) {
    (void)state;
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        sl_params p = valid(all_algorithms[i]);
        p.flags = SL_START_EMPTY;
        p.origin = 0;
        expect_params(&p, 0, "origin 0");
        p.origin = SL_TIME_MAX;
        expect_params(&p, 0, "origin SL_TIME_MAX");
        p.origin = -1;
        expect_params(&p, SL_EINVAL, "origin -1");
        p.origin = SL_TIME_MAX + 1;
        expect_params(&p, SL_EINVAL, "origin SL_TIME_MAX + 1");
        p.origin = INT64_MIN;
        expect_params(&p, SL_EINVAL, "origin INT64_MIN");
    }
}

static void null_arguments(void **state) {
    (void)state;
    expect_code(sl_params_validate(NULL), SL_EINVAL, "sl_params_validate(NULL)");
    sl_table *t = NULL;
    expect_code(sl_table_create(NULL, &t), SL_EINVAL, "sl_table_create(NULL, &t)");
    assert_null(t);
    sl_table_options o = {.params = valid(SL_GCRA)};
    expect_code(sl_table_create(&o, NULL), SL_EINVAL, "sl_table_create(&o, NULL)");
}

static void bad_table_options(void **state) {
    (void)state;
    static const unsigned bad_shards[] = {3, 6, 12, 1000, 2048, 4096, UINT_MAX};
    for (size_t j = 0; j < sizeof bad_shards / sizeof bad_shards[0]; j++) {
        sl_table_options o = {.params = valid(SL_TOKEN_BUCKET), .shards = bad_shards[j]};
        sl_table *t = NULL;
        char what[48];
        snprintf(what, sizeof what, "sl_table_create(shards %u)", bad_shards[j]);
        expect_code(sl_table_create(&o, &t), SL_EINVAL, what);
        assert_null(t);
    }
    static const unsigned good_shards[] = {1, 2, 64, 1024};
    for (size_t j = 0; j < 4; j++) {
        sl_table_options o = {.params = valid(SL_TOKEN_BUCKET), .shards = good_shards[j]};
        sl_table *t = NULL;
        expect_code(sl_table_create(&o, &t), 0, "sl_table_create(good shards)");
        sl_table_destroy(t);
    }
    /* too small to hold a single state */
    sl_table_options o = {.params = valid(SL_SLIDING_LOG), .max_memory = 64};
    sl_table *t = NULL;
    expect_code(sl_table_create(&o, &t), SL_EINVAL, "sl_table_create(max_memory 64)");
    assert_null(t);
    o.max_memory = 1;
    expect_code(sl_table_create(&o, &t), SL_EINVAL, "sl_table_create(max_memory 1)");
    assert_null(t);
}

/* ---- sl_table_check ----------------------------------------------------------------------- */

static sl_table *table(sl_algorithm a) {
    sl_table_options o = {.params = valid(a), .seed = 42};
    sl_table *t = NULL;
    int rc = sl_table_create(&o, &t);
    if (rc) fail_msg("sl_table_create(%s): %s", sl_algorithm_name(a), sl_strerror(rc));
    return t;
}

/* A refused call says "not allowed"; nothing was created or consumed. */
static void expect_refused(sl_table *t, const void *key, size_t len, int64_t cost, int64_t now,
                           int want, const char *what) {
    sl_decision d;
    memset(&d, 0x55, sizeof d);
    d.allowed = true;
    char label[160];
    snprintf(label, sizeof label, "%s: %s", sl_algorithm_name(sl_table_params(t)->algorithm), what);
    expect_code(sl_table_check(t, key, len, cost, now, &d), want, label);
    if (d.allowed) fail_msg("%s: refused call says allowed", label);
    if (want == SL_ECOST && d.retry_after != -1)
        fail_msg("%s: retry_after %" PRId64 ", expected -1", label, d.retry_after);
}

static void expect_untouched(sl_table *t, int64_t now) {
    sl_table_stats st;
    sl_table_stats_get(t, &st);
    if (st.keys != 0) fail_msg("a refused call created %" PRIu64 " state(s)", st.keys);
    const sl_params *p = sl_table_params(t);
    int64_t full = is_bucket(p->algorithm) ? p->burst : p->rate.limit;
    sl_decision d;
    assert_int_equal(sl_table_check(t, "k", 1, 0, now, &d), 0); /* a peek */
    assert_true(d.allowed);
    assert_int_equal(d.limit, full);
    assert_int_equal(d.remaining, full);
}

static void bad_cost_refused(void **state) {
    (void)state;
    const int64_t now = 100 * SEC;
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        sl_table *t = table(all_algorithms[i]);
        const sl_params *p = sl_table_params(t);
        int64_t max = is_bucket(p->algorithm) ? p->burst : p->rate.limit;
        expect_refused(t, "k", 1, -1, now, SL_ECOST, "cost -1");
        expect_refused(t, "k", 1, INT64_MIN, now, SL_ECOST, "cost INT64_MIN");
        expect_refused(t, "k", 1, max + 1, now, SL_ECOST, "cost max + 1");
        expect_refused(t, "k", 1, INT64_MAX, now, SL_ECOST, "cost INT64_MAX");
        expect_untouched(t, now);

        sl_decision d; /* the largest cost passes once on a fresh key */
        assert_int_equal(sl_table_check(t, "k", 1, max, now, &d), 0);
        assert_true(d.allowed);
        assert_int_equal(d.remaining, 0);
        assert_int_equal(sl_table_check(t, "k", 1, max, now, &d), 0);
        assert_false(d.allowed);
        assert_true(d.retry_after > 0);
        sl_table_destroy(t);
    }
}

/* Buckets bound the cost by the burst, not by the rate's limit. */
static void bucket_cost_bound_is_burst(void **state) {
    (void)state;
    static const sl_algorithm buckets[] = {SL_TOKEN_BUCKET, SL_GCRA, SL_LEAKY_QUEUE};
    for (size_t i = 0; i < 3; i++) {
        sl_table_options o = {.params = {.algorithm = buckets[i], .rate = {2, SEC}, .burst = 10},
                              .seed = 7};
        sl_table *t = NULL;
        assert_int_equal(sl_table_create(&o, &t), 0);
        sl_decision d;
        assert_int_equal(sl_table_check(t, "k", 1, 10, SEC, &d), 0); /* 10 > limit 2 */
        assert_true(d.allowed);
        assert_int_equal(d.limit, 10);
        expect_refused(t, "k", 1, 11, SEC, SL_ECOST, "cost burst + 1");
        sl_table_destroy(t);

        o.params.rate = (sl_rate){100, SEC};
        o.params.burst = 3;
        assert_int_equal(sl_table_create(&o, &t), 0);
        expect_refused(t, "k", 1, 4, SEC, SL_ECOST, "cost 4 > burst 3 < limit 100");
        expect_untouched(t, SEC);
        sl_table_destroy(t);
    }
}

static void long_key_refused(void **state) {
    (void)state;
    char *key = malloc(SL_KEY_MAX + 1);
    assert_non_null(key);
    memset(key, 'k', SL_KEY_MAX + 1);
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        sl_table *t = table(all_algorithms[i]);
        expect_refused(t, key, SL_KEY_MAX + 1, 1, SEC, SL_EKEY, "key SL_KEY_MAX + 1");
        /* the length is checked before a byte is read */
        expect_refused(t, "k", SIZE_MAX, 1, SEC, SL_EKEY, "key length SIZE_MAX");
        expect_refused(t, "k", (size_t)1 << 40, 1, SEC, SL_EKEY, "key length 2^40");
        expect_untouched(t, SEC);

        sl_decision d; /* the longest key is fine, and distinct from its prefix */
        assert_int_equal(sl_table_check(t, key, SL_KEY_MAX, 1, SEC, &d), 0);
        assert_true(d.allowed);
        assert_int_equal(d.remaining, d.limit - 1);
        assert_int_equal(sl_table_check(t, key, SL_KEY_MAX - 1, 1, SEC, &d), 0);
        assert_int_equal(d.remaining, d.limit - 1);
        sl_table_destroy(t);
    }
    free(key);
}

/* Times lie in [0, SL_TIME_MAX] (sluice/limit.h). */
static void time_out_of_range_refused(void **state) {
    (void)state;
    static const int64_t bad[] = {-1, INT64_MIN, SL_TIME_MAX + 1, INT64_MAX};
    for (size_t i = 0; i < N_ALGORITHMS; i++) {
        sl_table *t = table(all_algorithms[i]);
        for (size_t j = 0; j < 4; j++) {
            char what[48];
            snprintf(what, sizeof what, "now %" PRId64, bad[j]);
            expect_refused(t, "k", 1, 1, bad[j], SL_EINVAL, what);
        }
        expect_untouched(t, 0);
        sl_decision d;
        assert_int_equal(sl_table_check(t, "a", 1, 1, 0, &d), 0);
        assert_true(d.allowed);
        assert_int_equal(sl_table_check(t, "b", 1, 1, SL_TIME_MAX, &d), 0);
        assert_true(d.allowed);
        sl_table_destroy(t);
    }
}

/* ---- rates and durations ------------------------------------------------------------------ */

typedef struct rate_case {
    const char *text;
    int64_t limit, period;
} rate_case;

static const rate_case good_rates[] = {
    {"5/s", 5, SEC},          {"100/10s", 100, 10 * SEC},
    {"3/500ms", 3, 500 * MS}, {"1000/h", 1000, HOUR},
    {"10/d", 10, DAY},        {"60/m", 60, MIN},
    {"7/10s", 7, 10 * SEC},   {"1/1us", 1, 1000},
    {"9/3ns", 9, 3},          {"2/90m", 2, 90 * MIN},
    {"1/7d", 1, 7 * DAY},     {"250/250us", 250, 250000},
    {"1/1s", 1, SEC},         {"9223372036854775807/s", INT64_MAX, SEC},
};

static void rate_parse_good(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof good_rates / sizeof good_rates[0]; i++) {
        const rate_case *c = &good_rates[i];
        sl_rate r = {0, 0};
        int rc = sl_rate_parse(c->text, &r);
        if (rc) fail_msg("sl_rate_parse(\"%s\"): %s", c->text, sl_strerror(rc));
        if (r.limit != c->limit || r.period != c->period)
            fail_msg("sl_rate_parse(\"%s\") = %" PRId64 "/%" PRId64 "ns, expected %" PRId64
                     "/%" PRId64 "ns",
                     c->text, r.limit, r.period, c->limit, c->period);
    }
}

static void rate_parse_bad(void **state) {
    (void)state;
    static const struct {
        const char *text;
        int rc;
    } bad[] = {
        {"", SL_EPARSE},
        {"5", SL_EPARSE},
        {"/s", SL_EPARSE},
        {"5/", SL_EPARSE},
        {"5/x", SL_EPARSE},
        {"5/10", SL_EPARSE},
        {"5/sec", SL_EPARSE},
        {"5/S", SL_EPARSE},
        {"5//s", SL_EPARSE},
        {"5/s/s", SL_EPARSE},
        {"-5/s", SL_EPARSE},
        {"+5/s", SL_EPARSE},
        {"5.0/s", SL_EPARSE},
        {"5/1.5s", SL_EPARSE},
        {"5/-1s", SL_EPARSE},
        {" 5/s", SL_EPARSE},
        {"5/s ", SL_EPARSE},
        {"5 /s", SL_EPARSE},
        {"five/s", SL_EPARSE},
        {"0/s", SL_ERATE},
        {"0/10s", SL_ERATE},
        {"5/0s", SL_ERATE},
        {"5/0ms", SL_ERATE},
        {"0/0s", SL_ERATE},
        /* too big for int64, like sl_duration_parse */
        {"99999999999999999999/s", SL_EOVERFLOW},
        {"9223372036854775808/s", SL_EOVERFLOW},
        {"5/99999999999999999999s", SL_EOVERFLOW},
        {"5/106752d", SL_EOVERFLOW},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_rate r = {0, 0};
        char what[64];
        snprintf(what, sizeof what, "sl_rate_parse(\"%s\")", bad[i].text);
        expect_code(sl_rate_parse(bad[i].text, &r), bad[i].rc, what);
    }
    sl_rate r;
    if (sl_rate_parse(NULL, &r) == 0) fail_msg("sl_rate_parse(NULL) succeeded");
    if (sl_rate_parse("5/s", NULL) == 0) fail_msg("sl_rate_parse(\"5/s\", NULL) succeeded");
}

static void duration_parse(void **state) {
    (void)state;
    static const struct {
        const char *text;
        int64_t ns;
    } good[] = {
        {"5ms", 5 * MS},           {"10s", 10 * SEC}, {"1h", HOUR},
        {"250us", 250000},         {"7ns", 7},        {"2d", 2 * DAY},
        {"90m", 90 * MIN},         {"0s", 0},         {"9223372036854775807ns", INT64_MAX},
        {"106751d", 106751 * DAY},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t ns = -1;
        int rc = sl_duration_parse(good[i].text, &ns);
        if (rc) fail_msg("sl_duration_parse(\"%s\"): %s", good[i].text, sl_strerror(rc));
        if (ns != good[i].ns)
            fail_msg("sl_duration_parse(\"%s\") = %" PRId64 ", expected %" PRId64, good[i].text, ns,
                     good[i].ns);
    }
    static const struct {
        const char *text;
        int rc;
    } bad[] = {
        {"", SL_EPARSE},
        {"ms", SL_EPARSE},
        {"5", SL_EPARSE},
        {"5 ms", SL_EPARSE},
        {" 5ms", SL_EPARSE},
        {"5ms ", SL_EPARSE},
        {"5sec", SL_EPARSE},
        {"5S", SL_EPARSE},
        {"5mss", SL_EPARSE},
        {"-5s", SL_EPARSE},
        {"1.5s", SL_EPARSE},
        {"5/s", SL_EPARSE},
        {"9223372036854775808ns", SL_EOVERFLOW},
        {"99999999999999999999s", SL_EOVERFLOW},
        {"106752d", SL_EOVERFLOW},
        {"2562048h", SL_EOVERFLOW},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ns = 0;
        char what[64];
        snprintf(what, sizeof what, "sl_duration_parse(\"%s\")", bad[i].text);
        expect_code(sl_duration_parse(bad[i].text, &ns), bad[i].rc, what);
    }
    int64_t ns;
    if (sl_duration_parse(NULL, &ns) == 0) fail_msg("sl_duration_parse(NULL) succeeded");
    if (sl_duration_parse("5s", NULL) == 0) fail_msg("sl_duration_parse(\"5s\", NULL) succeeded");
}

static void expect_format(sl_rate r, const char *want) {
    char buf[64];
    memset(buf, 'x', sizeof buf);
    int n = sl_rate_format(r, buf, sizeof buf);
    if (strcmp(buf, want) != 0 || n != (int)strlen(want))
        fail_msg("sl_rate_format(%" PRId64 "/%" PRId64 "ns) = \"%s\" (%d), expected \"%s\"",
                 r.limit, r.period, buf, n, want);
}

static void rate_format_shortest(void **state) {
    (void)state;
    expect_format((sl_rate){5, SEC}, "5/s");
    expect_format((sl_rate){100, 10 * SEC}, "100/10s");
    expect_format((sl_rate){3, 500 * MS}, "3/500ms");
    expect_format((sl_rate){1000, HOUR}, "1000/h");
    expect_format((sl_rate){10, DAY}, "10/d");
    expect_format((sl_rate){60, MIN}, "60/m");
    expect_format((sl_rate){7, 90 * SEC}, "7/90s");
    expect_format((sl_rate){5, 2 * MIN}, "5/2m");
    expect_format((sl_rate){1, 2 * HOUR}, "1/2h");
    expect_format((sl_rate){1, 7 * DAY}, "1/7d");
    expect_format((sl_rate){3, 1500 * MS}, "3/1500ms");
    expect_format((sl_rate){1, 1500}, "1/1500ns");
    expect_format((sl_rate){5, SEC + 1}, "5/1000000001ns");
    expect_format((sl_rate){INT64_MAX, SEC}, "9223372036854775807/s");
}

static void rate_format_truncates(void **state) {
    (void)state;
    sl_rate r = {100, 10 * SEC}; /* "100/10s", 7 characters */
    char buf[8];
    memset(buf, 'x', sizeof buf);
    assert_int_equal(sl_rate_format(r, buf, 4), 7);
    assert_string_equal(buf, "100");
    assert_int_equal(buf[4], 'x');
    memset(buf, 'x', sizeof buf);
    assert_int_equal(sl_rate_format(r, buf, 1), 7);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(buf[1], 'x');
    memset(buf, 'x', sizeof buf);
    assert_int_equal(sl_rate_format(r, buf, 0), 7);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(sl_rate_format(r, buf, 8), 7);
    assert_string_equal(buf, "100/10s");
}

/* format then parse gives the same rate back; parse then format gives the same text back. */
static void rate_round_trips(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof good_rates / sizeof good_rates[0]; i++) {
        sl_rate r;
        assert_int_equal(sl_rate_parse(good_rates[i].text, &r), 0);
        char buf[64];
        sl_rate_format(r, buf, sizeof buf);
        sl_rate back;
        int rc = sl_rate_parse(buf, &back);
        if (rc || back.limit != r.limit || back.period != r.period)
            fail_msg("\"%s\" -> \"%s\" -> rc %d, %" PRId64 "/%" PRId64 "ns", good_rates[i].text,
                     buf, rc, back.limit, back.period);
    }
    static const char *const canonical[] = {"5/s",      "100/10s", "3/500ms", "1000/h",
                                            "10/d",     "60/m",    "7/90s",   "1/2h",
                                            "3/1500ms", "1/7d",    "4/10m"};
    for (size_t i = 0; i < sizeof canonical / sizeof canonical[0]; i++) {
        sl_rate r;
        assert_int_equal(sl_rate_parse(canonical[i], &r), 0);
        char buf[64];
        sl_rate_format(r, buf, sizeof buf);
        if (strcmp(buf, canonical[i]) != 0)
            fail_msg("\"%s\" formats back as \"%s\"", canonical[i], buf);
    }
    /* many rates: every unit times a multiplier, and plain nanoseconds */
    static const int64_t units[] = {1, 1000, MS, SEC, MIN, HOUR, DAY};
    uint64_t x = 88172645463325252u; /* xorshift64 */
    for (int i = 0; i < 20000; i++) {
        helper_rand(&x);
        int64_t limit = 1 + (int64_t)(x % 1000000000);
        int64_t unit = units[(x >> 32) % 7];
        int64_t k = 1 + (int64_t)((x >> 40) % 10000);
        sl_rate r = {limit, unit * k};
        char buf[64];
        int n = sl_rate_format(r, buf, sizeof buf);
        sl_rate back;
        int rc = sl_rate_parse(buf, &back);
        if (n != (int)strlen(buf) || rc || back.limit != r.limit || back.period != r.period)
            fail_msg("%" PRId64 "/%" PRId64 "ns -> \"%s\" -> rc %d, %" PRId64 "/%" PRId64 "ns",
                     r.limit, r.period, buf, rc, back.limit, back.period);
    }
}

/* ---- algorithm names and error texts -------------------------------------------------------- */

/* sl_algorithm_is_bucket and sl_params_limit: the size a decision reports. */
static void bucket_query_and_limit(void **state) {
    (void)state;
    static const struct {
        sl_algorithm a;
        bool bucket;
    } all[] = {{SL_FIXED_WINDOW, false}, {SL_SLIDING_LOG, false}, {SL_SLIDING_WINDOW, false},
               {SL_TOKEN_BUCKET, true},  {SL_GCRA, true},         {SL_LEAKY_QUEUE, true}};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(sl_algorithm_is_bucket(all[i].a), all[i].bucket);
        sl_params p = {.algorithm = all[i].a, .rate = {7, SL_NS_PER_SEC}, .burst = 3};
        assert_int_equal(sl_params_limit(&p), all[i].bucket ? 3 : 7);
        sl_table *t = NULL;
        sl_table_options o = {.params = p};
        assert_int_equal(sl_table_create(&o, &t), 0);
        sl_decision d;
        assert_int_equal(sl_table_check(t, "k", 1, 1, 0, &d), 0);
        assert_int_equal(d.limit, sl_params_limit(&p));
        sl_table_destroy(t);
    }
    assert_false(sl_algorithm_is_bucket((sl_algorithm)0));
    assert_false(sl_algorithm_is_bucket((sl_algorithm)7));
    sl_params unknown = {.algorithm = (sl_algorithm)0, .rate = {7, SL_NS_PER_SEC}, .burst = 3};
    assert_int_equal(sl_params_limit(&unknown), 7);
}

static void algorithm_names(void **state) {
    (void)state;
    static const struct {
        sl_algorithm a;
        int abi;
        const char *name;
    } names[] = {
        {SL_FIXED_WINDOW, 1, "fixed_window"},
        {SL_SLIDING_LOG, 2, "sliding_log"},
        {SL_SLIDING_WINDOW, 3, "sliding_window"},
        {SL_TOKEN_BUCKET, 4, "token_bucket"},
        {SL_GCRA, 5, "gcra"},
        {SL_LEAKY_QUEUE, 6, "leaky_queue"},
    };
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal((int)names[i].a, names[i].abi);
        const char *n = sl_algorithm_name(names[i].a);
        assert_non_null(n);
        assert_string_equal(n, names[i].name);
        sl_algorithm a = (sl_algorithm)0;
        expect_code(sl_algorithm_parse(names[i].name, &a), 0, names[i].name);
        assert_int_equal(a, names[i].a);
    }
    static const char *const bad[] = {
        "",     "Token_Bucket", "token-bucket",           "token_bucket ", " gcra",
        "GCRA", "leaky_bucket", "sliding_window_counter", "fixed",         "gcra\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_algorithm a = SL_GCRA;
        char what[64];
        snprintf(what, sizeof what, "sl_algorithm_parse(\"%s\")", bad[i]);
        expect_code(sl_algorithm_parse(bad[i], &a), SL_EALGORITHM, what);
    }
    sl_algorithm a;
    expect_code(sl_algorithm_parse(NULL, &a), SL_EALGORITHM, "sl_algorithm_parse(NULL)");
    assert_null(sl_algorithm_name((sl_algorithm)0));
    assert_null(sl_algorithm_name((sl_algorithm)7));
    assert_null(sl_algorithm_name((sl_algorithm)-1));
    assert_null(sl_algorithm_name((sl_algorithm)INT_MAX));
}

static void error_texts(void **state) {
    (void)state;
    static const int codes[] = {SL_EINVAL,    SL_ERATE,  SL_EBURST,    SL_ECOST,
                                SL_EOVERFLOW, SL_ENOMEM, SL_EDEADLINE, SL_EKEY,
                                SL_ETOOMANY,  SL_EPARSE, SL_EALGORITHM};
    const size_t n = sizeof codes / sizeof codes[0];
    const char *unknown = sl_strerror(-1000);
    assert_non_null(unknown);
    assert_true(strlen(unknown) > 0);
    assert_non_null(sl_strerror(SL_OK));
    assert_true(strlen(sl_strerror(SL_OK)) > 0);
    for (size_t i = 0; i < n; i++) {
        const char *m = sl_strerror(codes[i]);
        assert_non_null(m);
        assert_true(strlen(m) > 0);
        if (strcmp(m, unknown) == 0) fail_msg("code %d has the unknown-code text", codes[i]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(m, sl_strerror(codes[j])) == 0)
                fail_msg("codes %d and %d share the text \"%s\"", codes[i], codes[j], m);
    }
    static const int odd[] = {1, 42, -12, -100, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        const char *m = sl_strerror(odd[i]);
        assert_non_null(m);
        assert_true(strlen(m) > 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_parameters_accepted),
        cmocka_unit_test(zero_or_negative_rate_refused),
        cmocka_unit_test(burst_checked_for_buckets_only),
        cmocka_unit_test(burst_times_period_overflow),
        cmocka_unit_test(period_and_limit_bounds),
        cmocka_unit_test(sliding_log_limit_bound),
        cmocka_unit_test(unknown_flags_refused),
        cmocka_unit_test(unknown_algorithm_refused),
        cmocka_unit_test(origin_bounds),
        cmocka_unit_test(null_arguments),
        cmocka_unit_test(bad_table_options),
        cmocka_unit_test(bad_cost_refused),
        cmocka_unit_test(bucket_cost_bound_is_burst),
        cmocka_unit_test(long_key_refused),
        cmocka_unit_test(time_out_of_range_refused),
        cmocka_unit_test(rate_parse_good),
        cmocka_unit_test(rate_parse_bad),
        cmocka_unit_test(duration_parse),
        cmocka_unit_test(rate_format_shortest),
        cmocka_unit_test(rate_format_truncates),
        cmocka_unit_test(rate_round_trips),
        cmocka_unit_test(bucket_query_and_limit),
        cmocka_unit_test(algorithm_names),
        cmocka_unit_test(error_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
