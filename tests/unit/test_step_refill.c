/* test_step_refill.c: a token bucket that refills in steps (SL_STEP_REFILL,
 * policy option `refill: steps`), Envoy's local rate limit: tokens_per_fill
 * tokens at every multiple of fill_interval, capped at max_tokens.
 * - the seed's example (100 tokens every 1 s, max 100) worked by hand;
 * - random traces (rates, bursts, costs, clock steps, count_rejected, start
 *   empty) against a reference model written from the definition with
 *   plain token counts (no scaling, no 128-bit arithmetic);
 * - only a token bucket takes the flag; the config's `refill:` key, its
 *   errors, and the Redis store's refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/config.h"
#include "sluice/sluice.h"
#include "helpers.h"

static sl_table *table_of(const sl_params *p) {
    return table_ok((sl_table_options){.params = *p, .max_memory = 1u << 20, .seed = 1});
}

static sl_decision check(sl_table *t, int64_t cost, int64_t now) {
    sl_decision d;
    int rc = sl_table_check(t, "k", 1, cost, now, &d);
    assert_true(rc == SL_OK || rc == SL_ECOST);
    return d;
}

/* The seed's Envoy example: max_tokens 100, tokens_per_fill 100, every 1 s. */
static void envoy_example(void **state) {
    (void)state;
    sl_params p = {
        .algorithm = SL_TOKEN_BUCKET, .rate = {100, SEC}, .burst = 100, .flags = SL_STEP_REFILL};
    sl_table *t = table_of(&p);
    int64_t t0 = 1000 * SEC + 200 * MS; /* 200 ms into a step */
    sl_decision d = check(t, 100, t0);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    assert_int_equal(d.reset_after, 800 * MS); /* full again at the next step */
    /* continuous refill would have 80 tokens back 800 ms later; steps have none */
    d = check(t, 1, t0 + 799 * MS);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 1 * MS);
    d = check(t, 1, t0 + 800 * MS); /* the step: all 100 at once */
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 99);
    sl_table_destroy(t);

    /* tokens_per_fill below max_tokens: 2 every 500 ms, max 5 */
    p = (sl_params){
        .algorithm = SL_TOKEN_BUCKET, .rate = {2, 500 * MS}, .burst = 5, .flags = SL_STEP_REFILL};
    t = table_of(&p);
    d = check(t, 5, 10 * SEC + 100 * MS);
    assert_true(d.allowed);
    assert_int_equal(d.reset_after, 3 * 500 * MS - 100 * MS); /* 3 steps to be full */
    d = check(t, 3, 10 * SEC + 100 * MS);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 2 * 500 * MS - 100 * MS); /* 2 steps bring 4 */
    d = check(t, 2, 10 * SEC + 400 * MS);                     /* one step: 2 tokens */
    assert_false(d.allowed);
    d = check(t, 2, 10 * SEC + 500 * MS);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    sl_table_destroy(t);
}

/* The reference: whole tokens, from the definition. */
typedef struct ref {
    bool seen;
    int64_t tokens;
    int64_t last; /* the latest time the state was brought to */
} ref;

static int64_t ref_step(int64_t t, int64_t period) {
    return t / period * period;
}

static int64_t ref_wait(int64_t missing, int64_t at, int64_t limit, int64_t period) {
    int64_t k = (missing + limit - 1) / limit; /* steps needed */
    return ref_step(at, period) + k * period - at;
}

static sl_decision ref_decide(ref *live, const sl_params *p, int64_t cost, int64_t now) {
    ref peek = *live, *r = cost ? live : &peek; /* cost 0 is a peek: nothing is recorded */
    int64_t N = p->rate.limit, P = p->rate.period, B = p->burst;
    if (!r->seen) {
        r->seen = true;
        r->tokens = (p->flags & SL_START_EMPTY) ? 0 : B;
        r->last = (p->flags & SL_START_EMPTY) ? p->origin : now;
    }
    if (now > r->last) {
        int64_t steps = ref_step(now, P) / P - ref_step(r->last, P) / P;
        int64_t t = r->tokens + steps * N; /* small numbers here: no overflow */
        r->tokens = t > B ? B : t;
        r->last = now;
    }
    int64_t at = r->last; /* the clock behind: judged as of last */
    bool allowed = r->tokens >= cost;
    if (allowed || (p->flags & SL_COUNT_REJECTED))
        r->tokens = r->tokens >= cost ? r->tokens - cost : 0;
    sl_decision d = {.allowed = allowed, .limit = B, .remaining = r->tokens};
    d.retry_after = allowed ? 0 : (at - now) + ref_wait(cost - r->tokens, at, N, P);
    d.reset_after = r->tokens >= B ? 0 : (at - now) + ref_wait(B - r->tokens, at, N, P);
    return d;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static int64_t pick(int64_t lo, int64_t hi) {
    return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

static void against_reference(void **state) {
    (void)state;
    static const int64_t periods[] = {1, 7, MS, 250 * MS, SEC, 60 * SEC};
    for (int trace = 0; trace < 3000; trace++) {
        sl_params p = {.algorithm = SL_TOKEN_BUCKET,
                       .rate = {pick(1, 20), periods[pick(0, 5)]},
                       .burst = pick(1, 30),
                       .flags = SL_STEP_REFILL};
        if (next() % 4 == 0) p.flags |= SL_COUNT_REJECTED;
        int64_t now = pick(0, 1000) * p.rate.period + pick(0, p.rate.period - 1);
        if (next() % 4 == 0) {
            p.flags |= SL_START_EMPTY;
            p.origin = now - pick(0, 3) * p.rate.period;
            if (p.origin < 0) p.origin = 0;
        }
        sl_table *t = table_of(&p);
        ref r = {0};
        for (int i = 0; i < 60; i++) {
            int64_t step = next() % 8 == 0 ? -pick(0, p.rate.period) : pick(0, 2 * p.rate.period);
            if (now + step >= 0) now += step;
            int64_t cost = pick(0, p.burst);
            sl_decision got = check(t, cost, now), want = ref_decide(&r, &p, cost, now);
            if (got.allowed != want.allowed || got.remaining != want.remaining ||
                got.retry_after != want.retry_after || got.reset_after != want.reset_after)
                fail_msg("trace %d step %d: %lld/%lld ns burst %lld flags %u, cost %lld at %lld: "
                         "got %d rem %lld retry %lld reset %lld, want %d rem %lld retry %lld "
                         "reset %lld",
                         trace, i, (long long)p.rate.limit, (long long)p.rate.period,
                         (long long)p.burst, p.flags, (long long)cost, (long long)now, got.allowed,
                         (long long)got.remaining, (long long)got.retry_after,
                         (long long)got.reset_after, want.allowed, (long long)want.remaining,
                         (long long)want.retry_after, (long long)want.reset_after);
        }
        sl_table_destroy(t);
    }
}

static void only_token_bucket(void **state) {
    (void)state;
    sl_params p = {
        .algorithm = SL_TOKEN_BUCKET, .rate = {1, SEC}, .burst = 1, .flags = SL_STEP_REFILL};
    assert_int_equal(sl_params_validate(&p), SL_OK);
    sl_algorithm others[] = {SL_FIXED_WINDOW, SL_SLIDING_LOG, SL_SLIDING_WINDOW, SL_GCRA,
                             SL_LEAKY_QUEUE};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        p.algorithm = others[i];
        assert_int_equal(sl_params_validate(&p), SL_EINVAL);
    }
}

static int load(const char *text, sl__config **c, sl__config_errors *e) {
    char path[] = "/tmp/sluice-step-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    e->n = 0;
    int rc = sl__config_load(path, c, e);
    unlink(path);
    return rc;
}

static void config_key(void **state) {
    (void)state;
    sl__config *c = NULL;
    sl__config_errors e = {0};
    assert_int_equal(load("policies:\n  - {name: envoy, algorithm: token_bucket, rate: 100/1s, "
                          "burst: 100, refill: steps}\n  - {name: smooth, algorithm: token_bucket, "
                          "rate: 1/s, burst: 1, refill: continuous}\n",
                          &c, &e),
                     0);
    assert_int_equal(c->npolicies, 2);
    assert_true(c->policies[0].params.flags & SL_STEP_REFILL);
    assert_false(c->policies[1].params.flags & SL_STEP_REFILL);
    sl__config_free(c);

    assert_int_equal(
        load("policies:\n  - {name: a, algorithm: gcra, rate: 1/s, burst: 1, refill: steps}\n", &c,
             &e),
        SL_EPARSE);
    assert_int_equal(e.n, 1);
    assert_non_null(strstr(e.msg[0], "policies[0].refill: steps: only a token_bucket refills in "
                                     "steps"));
    assert_int_equal(
        load("policies:\n  - {name: a, algorithm: token_bucket, rate: 1/s, burst: 1, refill: "
             "stepwise}\n",
             &c, &e),
        SL_EPARSE);
    assert_non_null(strstr(e.msg[0], "refill"));
    /* the Redis store decides it too (decide.lua, the module) */
    assert_int_equal(load("store:\n  type: redis\n  redis: {url: redis://127.0.0.1:1}\n"
                          "policies:\n  - {name: a, algorithm: token_bucket, rate: 1/s, burst: 1, "
                          "refill: steps}\n",
                          &c, &e),
                     0);
    assert_true(c->policies[0].params.flags & SL_STEP_REFILL);
    sl__config_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(envoy_example),
        cmocka_unit_test(against_reference),
        cmocka_unit_test(only_token_bucket),
        cmocka_unit_test(config_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
