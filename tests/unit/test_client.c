/* test_client.c: the pure parts of libsluice-client, exactly: HTTP-date and
 * Retry-After parsing, the wait arithmetic (hint plus jitter, exponential
 * backoff with full jitter), the retry budget, the AIMD step, RateLimit /
 * X-RateLimit-* reading and pacing, and the bounded header store. No
 * network, no clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "client/backoff.h"
#include "client/budget.h"
#include "client/hosts.h"
#include "client/quota.h"
#include "client/response.h"
#include "sluice/client.h"
#include "sluice/sluice.h"
#include "helpers.h"

/* 1994-11-06 08:49:37 UTC, RFC 9110's example date */
#define EXAMPLE_UNIX INT64_C(784111777)

static int64_t date_of(const char *text) {
    int64_t t = -1;
    assert_int_equal(sl_http_date_parse(text, strlen(text), &t), SL_OK);
    return t;
}

static void test_http_date_forms(void **state) {
    (void)state;
    /* the three forms RFC 9110 section 5.6.7 says a recipient must accept */
    assert_int_equal(date_of("Sun, 06 Nov 1994 08:49:37 GMT"), EXAMPLE_UNIX * SEC);
    assert_int_equal(date_of("Sunday, 06-Nov-94 08:49:37 GMT"), EXAMPLE_UNIX * SEC);
    assert_int_equal(date_of("Sun Nov  6 08:49:37 1994"), EXAMPLE_UNIX * SEC);
    assert_int_equal(date_of("  Sun, 06 Nov 1994 08:49:37 GMT\t"), EXAMPLE_UNIX * SEC);
    assert_int_equal(date_of("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    assert_int_equal(date_of("Thu, 29 Feb 2024 23:59:59 GMT"), INT64_C(1709251199) * SEC);
    assert_int_equal(date_of("Fri, 01 Mar 2024 00:00:00 GMT"), INT64_C(1709251200) * SEC);
    assert_int_equal(date_of("Wed, 31 Dec 1969 23:59:59 GMT"), -SEC);
    /* two-digit years: 70..99 are 19xx, 00..69 are 20xx */
    assert_int_equal(date_of("Thursday, 01-Jan-70 00:00:00 GMT"), 0);
    assert_int_equal(date_of("Saturday, 01-Jan-00 00:00:00 GMT"), INT64_C(946684800) * SEC);
    /* the seed's example of a date form */
    assert_int_equal(date_of("Fri, 30 Oct 2026 12:01:00 GMT"), INT64_C(1793361660) * SEC);
    /* int64 nanoseconds end in 2262: later dates clamp */
    assert_int_equal(date_of("Fri, 31 Dec 9999 23:59:59 GMT"), INT64_MAX / SEC * SEC);
}

static void test_http_date_rejects(void **state) {
    (void)state;
    const char *bad[] = {
        "",
        "yesterday",
        "Sun, 06 Nov 1994 08:49:37",     /* no GMT */
        "Sun, 06 Nov 1994 08:49:37 UTC", /* not GMT */
        "Sun, 6 Nov 1994 08:49:37 GMT",  /* day needs two digits */
        "Sun, 06 Nov 94 08:49:37 GMT",   /* IMF year needs four */
        "Sun, 31 Nov 1994 08:49:37 GMT", /* no such day */
        "Sun, 29 Feb 2023 08:49:37 GMT", /* not a leap year */
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06 Nov 1994 08:49:37 GMT", /* long day name with the IMF date */
        "Sun, 06-Nov-94 08:49:37 GMT",      /* short day name with the RFC 850 date */
        "Sun Nov 6 08:49:37 1994",          /* asctime pads the day with a space */
        "Sun, 06 Nov 1994 08:49:37 GMT x",
        "Sun, 06 Nov 1994 08:49:37 GMTX",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t t;
        if (sl_http_date_parse(bad[i], strlen(bad[i]), &t) != SL_EPARSE)
            fail_msg("accepted '%s'", bad[i]);
    }
    int64_t t;
    assert_int_equal(sl_http_date_parse(NULL, 0, &t), SL_EPARSE);
    /* length bounds the text: the date is not read beyond it */
    const char *d = "Sun, 06 Nov 1994 08:49:37 GMT";
    assert_int_equal(sl_http_date_parse(d, strlen(d) - 1, &t), SL_EPARSE);
}

static void test_retry_after(void **state) {
    (void)state;
    int64_t d = -1, now = EXAMPLE_UNIX * SEC;
    assert_int_equal(sl_retry_after_parse("1", now, &d), SL_OK);
    assert_int_equal(d, SEC);
    assert_int_equal(sl_retry_after_parse(" 120 ", now, &d), SL_OK);
    assert_int_equal(d, 120 * SEC);
    assert_int_equal(sl_retry_after_parse("0", now, &d), SL_OK);
    assert_int_equal(d, 0);
    assert_int_equal(sl_retry_after_parse("99999999999999999999999", now, &d), SL_OK);
    assert_int_equal(d, INT64_C(1000000000) * SEC);
    /* an HTTP-date is read relative to `now` (the answer's Date) */
    assert_int_equal(sl_retry_after_parse("Sun, 06 Nov 1994 08:49:39 GMT", now, &d), SL_OK);
    assert_int_equal(d, 2 * SEC);
    assert_int_equal(sl_retry_after_parse("Sun, 06 Nov 1994 08:49:39 GMT", now + 500 * MS, &d),
                     SL_OK);
    assert_int_equal(d, 1500 * MS);
    assert_int_equal(sl_retry_after_parse("Sun Nov  6 08:50:37 1994", now, &d), SL_OK);
    assert_int_equal(d, 60 * SEC);
    /* a date in the past: no wait */
    assert_int_equal(sl_retry_after_parse("Sun, 06 Nov 1994 08:49:00 GMT", now, &d), SL_OK);
    assert_int_equal(d, 0);
    const char *bad[] = {"", " ", "-1", "1.5", "1s", "+1", "soon", "1 2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (sl_retry_after_parse(bad[i], now, &d) != SL_EPARSE) fail_msg("accepted '%s'", bad[i]);
    assert_int_equal(sl_retry_after_parse(NULL, now, &d), SL_EPARSE);
}

static const sl__backoff seed_backoff = {400 * MS, 2000, 10 * SEC};

static void test_backoff_bound(void **state) {
    (void)state;
    /* the seed's defaults: 400 ms, 800 ms, 1.6 s, 3.2 s, 6.4 s, then capped at 10 s */
    const int64_t want[] = {400 * MS,  800 * MS, 1600 * MS, 3200 * MS,
                            6400 * MS, 10 * SEC, 10 * SEC};
    for (int k = 1; k <= 7; k++) assert_int_equal(sl__backoff_bound(&seed_backoff, k), want[k - 1]);
    assert_int_equal(sl__backoff_bound(&seed_backoff, 1000000), 10 * SEC);
    /* x1.5, rounded down at each step */
    sl__backoff b = {333, 1500, 1000000};
    assert_int_equal(sl__backoff_bound(&b, 1), 333);
    assert_int_equal(sl__backoff_bound(&b, 2), 499);
    assert_int_equal(sl__backoff_bound(&b, 3), 748);
    /* x1: constant; a base above the cap is capped */
    sl__backoff flat = {5 * SEC, 1000, 10 * SEC};
    assert_int_equal(sl__backoff_bound(&flat, 1000), 5 * SEC);
    sl__backoff big = {20 * SEC, 2000, 10 * SEC};
    assert_int_equal(sl__backoff_bound(&big, 1), 10 * SEC);
    /* huge factor and cap: no overflow */
    sl__backoff huge = {INT64_C(1) << 60, 1000000, INT64_MAX};
    assert_int_equal(sl__backoff_bound(&huge, 3), INT64_MAX);
}

static void test_hint_wait(void **state) {
    (void)state;
    sl__prng r;
    sl__prng_seed(&r, 42);
    int64_t lo = INT64_MAX, hi = 0, sum = 0;
    const int n = 10000;
    for (int i = 0; i < n; i++) {
        /* the seed's remedy: the hint, plus up to the hint again */
        int64_t w = sl__retry_wait(&seed_backoff, 1 + i % 4, SEC, &r);
        assert_true(w >= SEC && w < 2 * SEC);
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
        sum += w - SEC;
    }
    /* spread over the whole second, not bunched */
    assert_true(lo < SEC + 10 * MS);
    assert_true(hi > 2 * SEC - 10 * MS);
    int64_t mean = sum / n;
    assert_true(mean > 480 * MS && mean < 520 * MS);
    /* the same seed draws the same waits */
    sl__prng a, b;
    sl__prng_seed(&a, 7);
    sl__prng_seed(&b, 7);
    for (int i = 0; i < 100; i++)
        assert_int_equal(sl__retry_wait(&seed_backoff, 1, 3 * SEC, &a),
                         sl__retry_wait(&seed_backoff, 1, 3 * SEC, &b));
    /* hint + jitter is clamped to max_wait, never below the hint */
    sl__backoff cap = {400 * MS, 2000, 6 * SEC};
    for (int i = 0; i < 1000; i++) {
        int64_t w = sl__retry_wait(&cap, 1, 4 * SEC, &r);
        assert_true(w >= 4 * SEC && w <= 6 * SEC);
    }
    assert_int_equal(sl__retry_wait(&cap, 1, 6 * SEC, &r), 6 * SEC);
    /* a 1 ns hint: wait exactly 1 ns (U[0,1) is 0) */
    assert_int_equal(sl__retry_wait(&cap, 1, 1, &r), 1);
}

static void test_full_jitter(void **state) {
    (void)state;
    sl__prng r;
    sl__prng_seed(&r, 1);
    for (int attempt = 1; attempt <= 8; attempt++) {
        int64_t bound = sl__backoff_bound(&seed_backoff, attempt), lo = INT64_MAX, hi = 0;
        for (int i = 0; i < 2000; i++) {
            int64_t w = sl__retry_wait(&seed_backoff, attempt, -1, &r);
            assert_true(w >= 0 && w < bound); /* "anywhere in [0, backoff)" */
            lo = w < lo ? w : lo;
            hi = w > hi ? w : hi;
        }
        assert_true(lo < bound / 50);
        assert_true(hi > bound - bound / 50);
    }
    /* a hint of 0 is no hint: backoff */
    int64_t w = sl__retry_wait(&seed_backoff, 1, 0, &r);
    assert_true(w >= 0 && w < 400 * MS);
    assert_int_equal(sl__prng_below(&r, 0), 0);
    assert_int_equal(sl__prng_below(&r, 1), 0);
}

/* client/prng.h, the one PRNG (retry jitter and the simulator): splitmix64's
 * reference outputs, and both bounded draws are the same draw. */
static void test_prng(void **state) {
    (void)state;
    sl__prng r;
    sl__prng_seed(&r, 0);
    assert_true(sl__prng_next(&r) == UINT64_C(0xe220a8397b1dcdaf));
    assert_true(sl__prng_next(&r) == UINT64_C(0x6e789e6aa1b965f4));
    sl__prng a, b;
    sl__prng_seed(&a, 99);
    sl__prng_seed(&b, 99);
    for (int64_t n = 1; n < 2000; n += 7)
        assert_true((uint64_t)sl__prng_below(&a, n) == sl__prng_upto(&b, (uint64_t)n - 1));
    sl__prng_seed(&a, 5);
    sl__prng_seed(&b, 5);
    assert_true(sl__prng_upto(&a, UINT64_MAX) == sl__prng_next(&b));
    for (int i = 0; i < 1000; i++) assert_true(sl__prng_upto(&a, 3) <= 3);
}

static void test_budget(void **state) {
    (void)state;
    /* 10 % with a reserve of 10: the reserve, then one retry per 10 requests
     * (the first request's share is lost: the bucket was full then) */
    sl__budget b;
    assert_int_equal(sl__budget_init(&b, 100000, 10, false), SL_OK);
    assert_int_equal(sl__budget_available(&b), 10);
    int64_t taken = 0;
    for (int req = 1; req <= 1000; req++) {
        sl__budget_request(&b);
        while (sl__budget_take(&b)) taken++;
        /* never more than the reserve plus 10 % of the requests */
        assert_true(taken <= 10 + req / 10);
        assert_int_equal(taken, 10 + (req - 1) / 10);
    }
    sl__budget_free(&b);

    /* saved-up retries are capped by the reserve */
    assert_int_equal(sl__budget_init(&b, 100000, 10, false), SL_OK);
    for (int req = 0; req < 1000; req++) sl__budget_request(&b);
    assert_int_equal(sl__budget_available(&b), 10);
    sl__budget_free(&b);

    /* 0 %: the reserve only, never refilled */
    assert_int_equal(sl__budget_init(&b, 0, 3, false), SL_OK);
    for (int req = 0; req < 100; req++) sl__budget_request(&b);
    assert_true(sl__budget_take(&b) && sl__budget_take(&b) && sl__budget_take(&b));
    assert_false(sl__budget_take(&b));
    sl__budget_request(&b);
    assert_false(sl__budget_take(&b));
    sl__budget_free(&b);

    /* 2.5 % is exact: one retry per 40 requests */
    assert_int_equal(sl__budget_init(&b, 25000, 1, false), SL_OK);
    assert_true(sl__budget_take(&b));
    for (int req = 1; req <= 39; req++) {
        sl__budget_request(&b);
        assert_false(sl__budget_take(&b));
    }
    sl__budget_request(&b);
    assert_true(sl__budget_take(&b));
    sl__budget_free(&b);

    /* off: unlimited */
    assert_int_equal(sl__budget_init(&b, 0, 0, true), SL_OK);
    for (int i = 0; i < 1000; i++) assert_true(sl__budget_take(&b));
    assert_int_equal(sl__budget_available(&b), INT64_MAX);
    sl__budget_free(&b);

    assert_int_equal(sl__budget_init(&b, -1, 10, false), SL_EINVAL);
    assert_int_equal(sl__budget_init(&b, 1000001, 10, false), SL_EINVAL);
    assert_int_equal(sl__budget_init(&b, 100000, 0, false), SL_EINVAL);
}

static void test_aimd_step(void **state) {
    (void)state;
    /* the seed's adjust(): +0.5/s per success, halve per 429, within 1..50/s */
    sl_client_aimd a = {
        .start = 20000, .increase = 500, .decrease_ppm = 500000, .floor = 1000, .cap = 50000};
    /* "Starting from 20/s, two successes and a 429 give 20.5 -> 21 -> 10.5" */
    int64_t r = sl__aimd_next(&a, 20000, 200);
    assert_int_equal(r, 20500);
    r = sl__aimd_next(&a, r, 200);
    assert_int_equal(r, 21000);
    r = sl__aimd_next(&a, r, 429);
    assert_int_equal(r, 10500);
    assert_int_equal(sl__aimd_next(&a, 10500, 503), 5250);
    assert_int_equal(sl__aimd_next(&a, 1500, 429), 1000);   /* floor */
    assert_int_equal(sl__aimd_next(&a, 49800, 204), 50000); /* cap */
    assert_int_equal(sl__aimd_next(&a, 7000, 304), 7500);
    /* other answers say nothing about the rate */
    assert_int_equal(sl__aimd_next(&a, 7000, 404), 7000);
    assert_int_equal(sl__aimd_next(&a, 7000, 500), 7000);
    /* the decrease rounds down */
    a.decrease_ppm = 333333;
    assert_int_equal(sl__aimd_next(&a, 10001, 429), 3333);
}

/* A field lookup over a NULL-terminated name/value array. */
static const char *lookup(void *ctx, const char *name) {
    const char *const *kv = ctx;
    for (; kv[0]; kv += 2)
        if (strcasecmp(kv[0], name) == 0) return kv[1];
    return NULL;
}

static sl__quota quota_of(const char *const *kv, int64_t now) {
    sl__quota q;
    sl__quota_read(lookup, (void *)kv, now, &q);
    return q;
}

static void test_quota_read(void **state) {
    (void)state;
    /* sluiced's answer (docs/http-api.md) */
    const char *const sluiced[] = {"RateLimit-Policy",
                                   "\"api\";q=5;w=1;sluice-rate=\"5/s\"",
                                   "RateLimit",
                                   "\"api\";r=4;t=1",
                                   "X-RateLimit-Remaining",
                                   "99",
                                   NULL};
    sl__quota q = quota_of(sluiced, 0);
    assert_true(q.known);
    assert_int_equal(q.remaining, 4);
    assert_int_equal(q.reset, SEC);
    assert_int_equal(q.limit, 5);
    /* several policies: the one with the fewest left wins; q of the same name */
    const char *const two[] = {"RateLimit", "\"hour\";r=100;t=3000, \"sec\";r=2;t=1",
                               "RateLimit-Policy", "\"hour\";q=1000;w=3600, \"sec\";q=10;w=1",
                               NULL};
    q = quota_of(two, 0);
    assert_int_equal(q.remaining, 2);
    assert_int_equal(q.reset, SEC);
    assert_int_equal(q.limit, 10);
    /* token items and unknown parameters are fine */
    const char *const tok[] = {"RateLimit", "default;x=\"a,b\";r=0;t=7;y=?1", NULL};
    q = quota_of(tok, 0);
    assert_true(q.known);
    assert_int_equal(q.remaining, 0);
    assert_int_equal(q.reset, 7 * SEC);
    assert_int_equal(q.limit, -1);
    /* older drafts */
    const char *const old[] = {
        "RateLimit-Limit", "100", "RateLimit-Remaining", "3", "RateLimit-Reset", "30", NULL};
    q = quota_of(old, 0);
    assert_int_equal(q.remaining, 3);
    assert_int_equal(q.reset, 30 * SEC);
    assert_int_equal(q.limit, 100);
    /* X-RateLimit-*: seconds, or a Unix timestamp (GitHub) read against now */
    const char *const x[] = {
        "X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset",
        "1700000060",        NULL};
    q = quota_of(x, INT64_C(1700000000) * SEC);
    assert_int_equal(q.remaining, 0);
    assert_int_equal(q.reset, 60 * SEC);
    const char *const xs[] = {"X-RateLimit-Remaining", "5", "X-RateLimit-Reset", "12", NULL};
    q = quota_of(xs, 0);
    assert_int_equal(q.reset, 12 * SEC);
    assert_int_equal(q.limit, -1);
    /* malformed: ignored, the next source is read */
    const char *const bad[] = {
        "RateLimit", "\"api;r=1", "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "2", NULL};
    q = quota_of(bad, 0);
    assert_true(q.known);
    assert_int_equal(q.remaining, 7);
    const char *const junk[] = {"X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", "2", NULL};
    assert_false(quota_of(junk, 0).known);
    const char *const none[] = {"Content-Type", "text/plain", NULL};
    assert_false(quota_of(none, 0).known);
    const char *const half[] = {"X-RateLimit-Remaining", "3", NULL};
    assert_false(quota_of(half, 0).known);
}

static void test_quota_pace(void **state) {
    (void)state;
    /* plenty left: no slow-down */
    sl__quota q = {.known = true, .remaining = 4, .reset = SEC, .limit = 5};
    assert_int_equal(sl__quota_pace(&q), 0);
    /* nothing left: wait for the reset */
    q.remaining = 0;
    assert_int_equal(sl__quota_pace(&q), SEC);
    /* a tenth or less left: spread it until the reset (rounded up) */
    q = (sl__quota){.known = true, .remaining = 9, .reset = 100 * SEC, .limit = 100};
    assert_int_equal(sl__quota_pace(&q), 10 * SEC);
    q.remaining = 10;
    assert_int_equal(sl__quota_pace(&q), (100 * SEC + 10) / 11);
    q.remaining = 11;
    assert_int_equal(sl__quota_pace(&q), 0);
    /* no quota known: only an empty allowance slows down */
    q = (sl__quota){.known = true, .remaining = 1, .reset = 5 * SEC, .limit = -1};
    assert_int_equal(sl__quota_pace(&q), 0);
    q.remaining = 0;
    assert_int_equal(sl__quota_pace(&q), 5 * SEC);
    q.known = false;
    assert_int_equal(sl__quota_pace(&q), 0);
}

static int feed(sl_response *r, const char *line) {
    return sl__response_header_line(r, line, strlen(line));
}

static void test_response_fields(void **state) {
    (void)state;
    sl_response *r = sl__response_new();
    assert_non_null(r);
    /* an interim answer's fields are dropped with it */
    assert_int_equal(feed(r, "HTTP/1.1 100 Continue\r\n"), 0);
    assert_int_equal(feed(r, "X-Interim: 1\r\n"), 0);
    assert_int_equal(feed(r, "\r\n"), 0);
    assert_int_equal(feed(r, "HTTP/1.1 429 Too Many Requests\r\n"), 0);
    assert_int_equal(feed(r, "Retry-After:   2  \r\n"), 0);
    assert_int_equal(feed(r, "retry-after: 9\r\n"), 0);
    assert_int_equal(feed(r, "Empty:\r\n"), 0);
    assert_int_equal(feed(r, "no colon here\r\n"), 0);
    assert_int_equal(feed(r, "\r\n"), 1);
    assert_int_equal(sl_response_status(r), 429);
    assert_null(sl_response_header(r, "X-Interim"));
    assert_string_equal(sl_response_header(r, "RETRY-AFTER"), "2"); /* the first one */
    assert_string_equal(sl_response_header(r, "empty"), "");
    assert_null(sl_response_header(r, "Retry"));
    /* HTTP/2 status lines */
    sl__response_reset(r);
    assert_int_equal(feed(r, "HTTP/2 503 \r\n"), 0);
    assert_int_equal(feed(r, "\r\n"), 1);
    assert_int_equal(sl_response_status(r), 503);
    /* bounded: 256 fields kept, the rest dropped */
    sl__response_reset(r);
    feed(r, "HTTP/1.1 200 OK\r\n");
    char line[64];
    for (int i = 0; i < 300; i++) {
        snprintf(line, sizeof line, "F%d: %d\r\n", i, i);
        assert_int_equal(feed(r, line), 0);
    }
    assert_int_equal(r->nfields, SL__MAX_FIELDS);
    assert_string_equal(sl_response_header(r, "F255"), "255");
    assert_null(sl_response_header(r, "F256"));
    /* the body is bounded too */
    assert_int_equal(sl__response_append(r, "abc", 3, 5), 0);
    assert_int_equal(sl__response_append(r, "def", 3, 5), SL_EINVAL);
    size_t len;
    assert_string_equal(sl_response_body(r, &len), "abc");
    assert_int_equal(len, 3);
    sl_response_free(r);
}

static void test_options(void **state) {
    (void)state;
    sl_client_options o;
    sl_client_options_init(&o);
    assert_int_equal(o.max_attempts, 5);
    assert_int_equal(o.backoff_base, 400 * MS);
    assert_int_equal(o.backoff_factor_milli, 2000);
    assert_int_equal(o.max_wait, 10 * SEC);
    assert_int_equal(o.budget_ppm, 100000);
    assert_int_equal(o.budget_reserve, 10);
    sl_client *c;
    assert_int_equal(sl_client_create(&o, &c), SL_OK);
    sl_client_destroy(c);
    assert_int_equal(sl_client_create(NULL, &c), SL_OK);
    sl_client_destroy(c);
    sl_client_options z = {0}; /* not initialised: refused, never guessed */
    assert_int_equal(sl_client_create(&z, &c), SL_EINVAL);
    o.max_attempts = 0;
    assert_int_equal(sl_client_create(&o, &c), SL_EINVAL);
    sl_client_options_init(&o);
    o.backoff_factor_milli = 999;
    assert_int_equal(sl_client_create(&o, &c), SL_EINVAL);
    sl_client_options_init(&o);
    o.budget_ppm = 2000000;
    assert_int_equal(sl_client_create(&o, &c), SL_EINVAL);
    o.flags = SL_CLIENT_NO_BUDGET; /* the budget's fields do not matter then */
    assert_int_equal(sl_client_create(&o, &c), SL_OK);
    sl_client_destroy(c);
    sl_client_options_init(&o);
    o.flags = SL_CLIENT_AIMD;
    o.aimd.floor = 60000; /* above the cap */
    assert_int_equal(sl_client_create(&o, &c), SL_ERATE);
    o.aimd.floor = 0;
    assert_int_equal(sl_client_create(&o, &c), SL_ERATE);
    sl_client_options_init(&o);
    o.flags = SL_CLIENT_AIMD;
    o.aimd.decrease_ppm = 1000000;
    assert_int_equal(sl_client_create(&o, &c), SL_EINVAL);
    sl_client_options_init(&o);
    o.flags = 0x100;
    assert_int_equal(sl_client_create(&o, &c), SL_EINVAL);
    assert_int_equal(sl_client_create(NULL, NULL), SL_EINVAL);
    assert_string_equal(sl_strerror(SL_ETRANSFER), "the HTTP transfer failed");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_date_forms),
        cmocka_unit_test(test_http_date_rejects),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_backoff_bound),
        cmocka_unit_test(test_hint_wait),
        cmocka_unit_test(test_full_jitter),
        cmocka_unit_test(test_prng),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_aimd_step),
        cmocka_unit_test(test_quota_read),
        cmocka_unit_test(test_quota_pace),
        cmocka_unit_test(test_response_fields),
        cmocka_unit_test(test_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
