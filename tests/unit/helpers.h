/* helpers.h: what the cmocka unit tests share, so that each test file holds
 * only its own cases: COUNT and the time units, integer asserts that print
 * both values, a fake clock (sluice/clock.h's sl_clock, never the
 * machine's), and the comparison of a config error list with the messages a
 * case expects (and a config parsed or refused), a seeded generator for
 * random cases. Include it after <cmocka.h>; the error-list helpers are there
 * when policy/config.h is included before this file. Everything is static
 * inline or a macro: a test uses what it needs and nothing else is compiled
 * in. */
#ifndef SLUICE_TESTS_HELPERS_H
#define SLUICE_TESTS_HELPERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "sluice/clock.h"
#include "sluice/error.h"
#include "sluice/limit.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define SEC      SL_NS_PER_SEC
#define MS       SL_NS_PER_MS

/* ---- integer asserts: a == b, a <= b on int64 values, both values printed -- */

#define assert_i64(a, b)                                                                           \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) fail_msg("%s == %s failed: %lld != %lld", #a, #b, a_, b_);                   \
    } while (0)
#define assert_le(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (!(a_ <= b_)) fail_msg("%s <= %s failed: %lld > %lld", #a, #b, a_, b_);                 \
    } while (0)

/* ---- a seeded generator for random cases (xorshift64; *state must not be 0) ---- */
static inline uint64_t helper_rand(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}
/* Uniform enough in [lo, hi] (hi - lo small against 2^64). */
static inline int64_t helper_pick(uint64_t *state, int64_t lo, int64_t hi) {
    return lo + (int64_t)(helper_rand(state) % (uint64_t)(hi - lo + 1));
}

/* ---- a fake clock ---------------------------------------------------------------
 * `now` is the time (ns); nothing moves it but the test, fake_clock_tick and
 * sleep_until. sleep_until(t) moves it forward to t at once (never back) and
 * counts the call in `sleeps`. Safe from many threads (every field is
 * atomic or only written by one), except in strict mode, for one thread:
 * there every sleep must move time forward (a sleep for nothing fails the
 * test) and the first FAKE_CLOCK_LOG sleeps' lengths are kept in slept[]. */
#define FAKE_CLOCK_LOG 64

typedef struct fake_clock {
    _Atomic int64_t now;
    _Atomic int sleeps;
    bool strict;
    int64_t slept[FAKE_CLOCK_LOG];
} fake_clock;

static inline int64_t fake_clock_now(void *ctx) {
    return atomic_load(&((fake_clock *)ctx)->now);
}

static inline void fake_clock_sleep_until(void *ctx, int64_t t) {
    fake_clock *c = ctx;
    int n = atomic_fetch_add(&c->sleeps, 1);
    int64_t cur = atomic_load(&c->now);
    if (c->strict) {
        assert_true(t > cur); /* the caller never sleeps for nothing */
        if (n < FAKE_CLOCK_LOG) c->slept[n] = t - cur;
        atomic_store(&c->now, t);
        return;
    }
    while (cur < t && !atomic_compare_exchange_weak(&c->now, &cur, t)) {
    }
}

/* The clock as an sl_clock for sl_limiter_wait and libsluice-client. */
static inline sl_clock fake_clock_of(fake_clock *c) {
    return (sl_clock){.now = fake_clock_now, .sleep_until = fake_clock_sleep_until, .ctx = c};
}

/* Advances the clock by step and returns the new time: what one call of one
 * thread sees as now when each call takes the next tick. */
static inline int64_t fake_clock_tick(fake_clock *c, int64_t step) {
    return atomic_fetch_add(&c->now, step) + step;
}

/* ---- config error lists ----------------------------------------------------------
 * expect_errors(text, "msg", ...) calls the file's own
 * expect_errors_(text, want, n), which parses text its way and then checks the
 * list with expect_error_list (a config as "t.yaml": `#define expect_errors_
 * config_expect_errors`, below). */
#define expect_errors(text, ...)                                                                   \
    do {                                                                                           \
        const char *const want_[] = {__VA_ARGS__};                                                 \
        expect_errors_(text, want_, COUNT(want_));                                                 \
    } while (0)

#ifdef SLUICE_POLICY_CONFIG_H
static inline void print_errors(const sl__config_errors *e) {
    for (size_t i = 0; i < e->n && i < SL__CONFIG_MAX_ERRORS; i++)
        print_message("  %s\n", e->msg[i]);
}

/* text parsed as "t.yaml": the config (never NULL, with no error listed), or
 * the test fails with its errors. */
static inline sl__config *config_parse_ok(const char *text) {
    sl__config *c = NULL;
    static sl__config_errors e;
    if (sl__config_parse(text, strlen(text), "t.yaml", &c, &e) != 0) {
        print_errors(&e);
        fail_msg("expected this config to load:\n%s", text);
    }
    assert_non_null(c);
    assert_int_equal(e.n, 0);
    return c;
}

/* e must hold exactly the messages want[0..n), in order; each wanted message
 * is passed through map first when map is not NULL (a test's placeholders).
 * Otherwise prints what came and what was wanted and fails, showing text. */
static inline void expect_error_list(const sl__config_errors *e, const char *const *want, size_t n,
                                     const char *(*map)(const char *), const char *text) {
    bool same = e->n == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(e->msg[i], map ? map(want[i]) : want[i]) == 0;
    if (!same) {
        print_message("got %zu error(s):\n", e->n);
        print_errors(e);
        print_message("wanted %zu:\n", n);
        for (size_t i = 0; i < n; i++) print_message("  %s\n", want[i]);
        fail_msg("unexpected errors for:\n%s", text);
    }
}

/* text parsed as "t.yaml" must fail, leaving no config, with exactly
 * want[0..n) (each passed through map first when map is not NULL). */
static inline void config_expect_errors_map(const char *text, const char *const *want, size_t n,
                                            const char *(*map)(const char *)) {
    sl__config *c = (sl__config *)1; /* the parser must set it to NULL */
    static sl__config_errors e;
    assert_int_equal(sl__config_parse(text, strlen(text), "t.yaml", &c, &e), SL_EPARSE);
    assert_null(c);
    expect_error_list(&e, want, n, map, text);
}

static inline void config_expect_errors(const char *text, const char *const *want, size_t n) {
    config_expect_errors_map(text, want, n, NULL);
}
#endif

#if defined(SLUICE_POLICY_DOMAINS_H) && defined(SLUICE_POLICY_CONFIG_H)
/* ---- Envoy rule files (policy/domains.h) --------------------------------------- */

/* text parsed as rule file `file`: the rules, or the test fails with their errors. */
static inline sl__domain_rules *domain_rules_ok(const char *text, const char *file) {
    sl__domain_rules *r = NULL;
    static sl__config_errors e;
    e.n = 0;
    if (sl__domain_rules_parse(text, strlen(text), file, &r, &e) != 0) {
        print_errors(&e);
        fail_msg("expected these rules to load:\n%s", text);
    }
    assert_non_null(r);
    return r;
}

/* r compiled into a set (16 MiB, after prev, at now) and freed: the set. */
static inline sl__domain_set *domain_set_ok(sl__domain_rules *r, sl__domain_set *prev,
                                            int64_t now) {
    sl__domain_set *s = NULL;
    char err[256];
    assert_int_equal(sl__domain_set_build(r, 16u << 20, prev, now, &s, err, sizeof err), 0);
    sl__domain_rules_free(r);
    return s;
}
#endif

#ifdef SLUICE_TABLE_H
/* ---- keyed tables (sluice/table.h) ------------------------------------------------ */

/* The table of o, or the test fails. */
static inline sl_table *table_ok(sl_table_options o) {
    sl_table *t = NULL;
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    return t;
}

/* One request of cost 1 on key "k" at now: its decision (the call succeeds). */
static inline sl_decision check_one(sl_table *t, int64_t now) {
    sl_decision d;
    assert_int_equal(sl_table_check(t, "k", 1, 1, now, &d), SL_OK);
    return d;
}
#endif

#endif
