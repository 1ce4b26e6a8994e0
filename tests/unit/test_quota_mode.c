/* test_quota_mode.c: Envoy's quota_mode on the one decision engine
 * (policy/decide.h "any" groups, policy/domains.c), with a fake clock: the
 * peer's rule (refused when an ordinary descriptor is over, or every
 * quota-mode one is), sluiced's charges (a refused request charges nothing,
 * a passing one every group still under its limit), statuses, the
 * descriptors' metadata of those under their limits, the engine's groups
 * directly (several items per group, the order of tries, counters), and
 * charge_refused_hits refused next to quota_mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/config.h"
#include "policy/domains.h"
#include "sluice/sluice.h"

#include "decide_helper.h"
#include "helpers.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the source tree (tests/quota.cmake)"
#endif

#define T0 (INT64_C(1704067210) * SEC) /* 10 s into a minute */

/* ---- helpers ----------------------------------------------------------------- */

static sl__domain_set *rules(const char *text) {
    sl__domain_rules *r = NULL;
    static sl__config_errors e;
    e.n = 0;
    if (sl__domain_rules_parse(text, strlen(text), "q.yaml", &r, &e) != 0) print_errors(&e);
    assert_non_null(r);
    return domain_set_ok(r, NULL, T0);
}

/* One request of one-entry descriptors ("key=value" each). */
typedef struct ask {
    sl__rls_entry e[8];
    sl__rls_descriptor d[8];
    sl__rls_status st[8];
    int overall;
} ask;

static int ask_n(sl__domain_set *s, ask *a, const char *const *kv, size_t n, int64_t now) {
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        a->e[i] = (sl__rls_entry){.key = kv[i],
                                  .key_len = (size_t)(eq - kv[i]),
                                  .value = eq + 1,
                                  .value_len = strlen(eq + 1)};
        a->d[i] = (sl__rls_descriptor){.entries = &a->e[i], .nentries = 1};
    }
    sl__rls_request q = {.domain = "q", .domain_len = 1, .descriptors = a->d, .ndescriptors = n};
    const char *msg = NULL;
    assert_int_equal(domain_decide(s, &q, now, a->st, &a->overall, &msg), SL_OK);
    return a->overall;
}

#define ASK(s, a, now, ...)                                                                        \
    ask_n((s), (a), (const char *const[]){__VA_ARGS__},                                            \
          COUNT(((const char *const[]){__VA_ARGS__})), (now))

static uint64_t stat_of(sl__domain_set *s, const char *rule, int which) {
    sl__domain_rule_stats st;
    for (size_t i = 0; sl__domain_set_rule_stats(s, i, &st); i++)
        if (!strcmp(st.rule, rule)) return which == 0 ? st.allowed : st.limited;
    fail_msg("no rule %s", rule);
    return 0;
}

static const char RULES[] = "domain: q\ndescriptors:\n"
                            "  - key: r\n"
                            "    rate_limit: {unit: minute, requests_per_unit: 5}\n"
                            "  - key: qa\n"
                            "    quota_mode: true\n"
                            "    rate_limit: {unit: minute, requests_per_unit: 1}\n"
                            "    metadata: {backend: a}\n"
                            "  - key: qb\n"
                            "    quota_mode: true\n"
                            "    rate_limit: {unit: minute, requests_per_unit: 2}\n"
                            "    metadata: {backend: b}\n"
                            "  - key: zero\n"
                            "    quota_mode: true\n"
                            "    rate_limit: {unit: minute, requests_per_unit: 0}\n";

/* ---- the peer's rule, sluiced's charges ------------------------------------- */

static void test_over_when_every_quota_is(void **state) {
    (void)state;
    sl__domain_set *s = rules(RULES);
    ask a;
    /* 1: everything under its limit: charged, metadata of each quota */
    assert_int_equal(ASK(s, &a, T0, "r=x", "qa=x", "qb=x"), SL__RLS_OK);
    assert_int_equal(a.st[0].limit_remaining, 4);
    assert_int_equal(a.st[1].limit_remaining, 0);
    assert_int_equal(a.st[2].limit_remaining, 1);
    assert_null(a.st[0].metadata);
    assert_string_equal(a.st[1].metadata, "{\"backend\":\"a\"}");
    assert_string_equal(a.st[2].metadata, "{\"backend\":\"b\"}");
    assert_false(a.st[1].quota_over || a.st[2].quota_over);
    /* 2: qa over, qb not: OK; qa says OK with 0 left and is a violation */
    assert_int_equal(ASK(s, &a, T0, "r=x", "qa=x", "qb=x"), SL__RLS_OK);
    assert_int_equal(a.st[0].limit_remaining, 3);
    assert_int_equal(a.st[1].code, SL__RLS_OK);
    assert_int_equal(a.st[1].limit_remaining, 0);
    assert_true(a.st[1].quota_over);
    assert_null(a.st[1].metadata);
    assert_int_equal(a.st[2].limit_remaining, 0);
    assert_string_equal(a.st[2].metadata, "{\"backend\":\"b\"}");
    /* 3: both over: OVER_LIMIT, and r is not charged (all or nothing) */
    assert_int_equal(ASK(s, &a, T0, "r=x", "qa=x", "qb=x"), SL__RLS_OVER_LIMIT);
    assert_int_equal(a.st[0].code, SL__RLS_OK);
    assert_int_equal(a.st[0].limit_remaining, 3);
    assert_int_equal(a.st[1].code, SL__RLS_OVER_LIMIT);
    assert_int_equal(a.st[2].code, SL__RLS_OVER_LIMIT);
    assert_false(a.st[1].quota_over || a.st[2].quota_over);
    assert_int_equal(ASK(s, &a, T0, "r=x"), SL__RLS_OK);
    assert_int_equal(a.st[0].limit_remaining, 2);
    /* counted: qa refused twice, qb once; r allowed 3 times (1, 2, alone) */
    assert_int_equal(stat_of(s, "qa", 1), 2);
    assert_int_equal(stat_of(s, "qb", 1), 1);
    assert_int_equal(stat_of(s, "r", 0), 3);
    /* the next minute: all back */
    assert_int_equal(ASK(s, &a, T0 + 60 * SEC, "qa=x", "qb=x"), SL__RLS_OK);
    assert_int_equal(a.st[1].limit_remaining, 1);
    sl__domain_set_release(s);
}

static void test_ordinary_over_refuses(void **state) {
    (void)state;
    sl__domain_set *s = rules(RULES);
    ask a;
    for (int i = 0; i < 5; i++) assert_int_equal(ASK(s, &a, T0, "r=y"), SL__RLS_OK);
    /* r over: refused though both quotas have room; they are not charged */
    assert_int_equal(ASK(s, &a, T0, "qa=y", "r=y", "qb=y"), SL__RLS_OVER_LIMIT);
    assert_int_equal(a.st[0].code, SL__RLS_OK);
    assert_int_equal(a.st[0].limit_remaining, 1);
    assert_int_equal(a.st[1].code, SL__RLS_OVER_LIMIT);
    assert_int_equal(a.st[2].limit_remaining, 2);
    assert_int_equal(ASK(s, &a, T0, "qa=y"), SL__RLS_OK);
    assert_int_equal(a.st[0].limit_remaining, 0);
    sl__domain_set_release(s);
}

static void test_quota_only(void **state) {
    (void)state;
    sl__domain_set *s = rules(RULES);
    ask a;
    /* one quota descriptor alone is every quota: over, it refuses */
    assert_int_equal(ASK(s, &a, T0, "qa=z"), SL__RLS_OK);
    assert_int_equal(ASK(s, &a, T0, "qa=z"), SL__RLS_OVER_LIMIT);
    assert_int_equal(a.st[0].code, SL__RLS_OVER_LIMIT);
    /* a quota of 0 requests is always over: with another one it does not refuse */
    assert_int_equal(ASK(s, &a, T0, "zero=z", "qb=z"), SL__RLS_OK);
    assert_true(a.st[0].quota_over);
    assert_int_equal(a.st[1].limit_remaining, 1);
    /* alone, or with only exhausted quotas: refused, r not charged */
    assert_int_equal(ASK(s, &a, T0, "zero=z"), SL__RLS_OVER_LIMIT);
    assert_int_equal(ASK(s, &a, T0, "r=z", "zero=z"), SL__RLS_OVER_LIMIT);
    assert_int_equal(a.st[0].limit_remaining, 5);
    assert_int_equal(ASK(s, &a, T0, "r=z", "zero=z", "qa=z"), SL__RLS_OVER_LIMIT);
    assert_int_equal(ASK(s, &a, T0, "r=z"), SL__RLS_OK);
    assert_int_equal(a.st[0].limit_remaining, 4);
    sl__domain_set_release(s);
}

/* The peer's Go tests (translated/svc_quota.yaml): quota_mode only, all or
 * some over; mixed with a regular limit under its limit. */
static void test_peer_svc_quota(void **state) {
    (void)state;
    static sl__config_errors e;
    sl__domain_rules *r = NULL;
    e.n = 0;
    assert_int_equal(
        sl__domain_rules_load(SLUICE_SOURCE_DIR
                              "/tests/peers/envoyproxy-ratelimit/translated/svc_quota.yaml",
                              &r, &e),
        0);
    sl__domain_set *s = domain_set_ok(r, NULL, T0);
    ask a;
    for (int i = 0; i < 3; i++) {
        memset(&a, 0, sizeof a);
        sl__rls_entry e1 = {.key = "quota", .key_len = 5, .value = "v", .value_len = 1};
        sl__rls_entry e2 = {.key = "quota1", .key_len = 6, .value = "v", .value_len = 1};
        sl__rls_descriptor d[2] = {{.entries = &e1, .nentries = 1},
                                   {.entries = &e2, .nentries = 1}};
        sl__rls_request rq = {
            .domain = "svc-quota", .domain_len = 9, .descriptors = d, .ndescriptors = 2};
        const char *msg;
        assert_int_equal(domain_decide(s, &rq, T0, a.st, &a.overall, &msg), SL_OK);
        assert_int_equal(a.overall, SL__RLS_OK);
    }
    /* quota (3) is used up, quota1 (5) has 2 left: some over, OK */
    sl__rls_entry e1 = {.key = "quota", .key_len = 5, .value = "v", .value_len = 1};
    sl__rls_entry e2 = {.key = "quota1", .key_len = 6, .value = "v", .value_len = 1};
    sl__rls_entry e3 = {.key = "regular", .key_len = 7, .value = "v", .value_len = 1};
    sl__rls_descriptor d[3] = {{.entries = &e1, .nentries = 1},
                               {.entries = &e2, .nentries = 1},
                               {.entries = &e3, .nentries = 1}};
    sl__rls_request rq = {
        .domain = "svc-quota", .domain_len = 9, .descriptors = d, .ndescriptors = 3};
    const char *msg;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(domain_decide(s, &rq, T0, a.st, &a.overall, &msg), SL_OK);
        assert_int_equal(a.overall, SL__RLS_OK);
        assert_true(a.st[0].quota_over);
        assert_int_equal(a.st[2].limit_remaining, 4 - i);
    }
    /* all over: OVER_LIMIT, the regular one (3 left) not charged */
    assert_int_equal(domain_decide(s, &rq, T0, a.st, &a.overall, &msg), SL_OK);
    assert_int_equal(a.overall, SL__RLS_OVER_LIMIT);
    assert_int_equal(a.st[2].code, SL__RLS_OK);
    assert_int_equal(a.st[2].limit_remaining, 3);
    sl__domain_set_release(s);
}

/* ---- the engine's "any" groups directly ------------------------------------------- */

static sl__decide_limit *limit_new(int64_t n) {
    sl__decide_limit *l = calloc(1, sizeof *l);
    static sl_params p;
    p = (sl_params){.algorithm = SL_FIXED_WINDOW, .rate = {.limit = n, .period = 60 * SEC}};
    sl_params *pp = malloc(sizeof *pp);
    *pp = p;
    sl__decide_limit_init(l, false);
    l->store.name = "q";
    l->store.params = pp;
    sl_table *t = NULL;
    assert_int_equal(
        sl_table_create(&(sl_table_options){.params = *pp, .max_memory = 1u << 20}, &t), 0);
    atomic_store(&l->store.table, t);
    return l;
}

static void limit_free(sl__decide_limit *l) {
    sl_table_destroy(atomic_load(&l->store.table));
    free((void *)l->store.params);
    free(l);
}

static void noop(sl__decide_call *c) {
    (void)c;
}

/* Decides items of (limit, any_group) at now: the refused index (n: passed). */
static size_t run(sl__decide_limit **l, const uint8_t *g, size_t n, int64_t now,
                  sl__decide_item *out) {
    sl__decide_item it[8];
    for (size_t i = 0; i < n; i++)
        it[i] =
            (sl__decide_item){.limit = l[i], .key = "k", .keylen = 1, .cost = 1, .any_group = g[i]};
    sl__decide_call *c = sl__decide_call_new(it, n, NULL, NULL, 0);
    c->done = noop;
    sl__engine_decide(NULL, c, now);
    size_t r = c->refused;
    memcpy(out, c->items, n * sizeof *out);
    sl__decide_call_free(c);
    return r;
}

static void test_engine_groups(void **state) {
    (void)state;
    /* required R(10); group 1 = {A(1), B(5)}; group 2 = {C(2)} */
    sl__decide_limit *R = limit_new(10), *A = limit_new(1), *B = limit_new(5), *C = limit_new(2);
    sl__decide_limit *l[] = {R, A, B, C};
    const uint8_t g[] = {0, 1, 1, 2};
    sl__decide_item o[4];
    assert_int_equal(run(l, g, 4, T0, o), 4); /* all charged */
    assert_int_equal(o[2].decision.remaining, 4);
    assert_int_equal(o[3].decision.remaining, 1);
    /* A over: group 1 dropped whole (B not charged), group 2 passes */
    assert_int_equal(run(l, g, 4, T0, o), 4);
    assert_true(o[1].dropped && o[2].dropped && !o[3].dropped);
    assert_false(o[1].decision.allowed);
    assert_int_equal(o[2].decision.remaining, 4); /* a look: nothing taken */
    assert_int_equal(o[3].decision.remaining, 0);
    assert_int_equal(o[0].decision.remaining, 8);
    /* both groups over: refused at the last group's item, nothing charged */
    assert_int_equal(run(l, g, 4, T0, o), 3);
    assert_int_equal(o[0].decision.remaining, 8);
    const uint8_t only_r[] = {0};
    assert_int_equal(run(l, only_r, 1, T0, o), 1);
    assert_int_equal(o[0].decision.remaining, 7);
    assert_int_equal(atomic_load(&A->limited), 2);
    assert_int_equal(atomic_load(&C->limited), 1);
    assert_int_equal(atomic_load(&B->allowed), 1);
    assert_int_equal(atomic_load(&B->limited), 0);
    /* a required item over ends it at once: no other try */
    for (int i = 0; i < 7; i++) run(l, only_r, 1, T0, o);
    assert_int_equal(run(l, (const uint8_t[]){2, 0}, 2, T0 + 60 * SEC, o), 2);
    sl__decide_limit *l2[] = {C, R};
    assert_int_equal(run(l2, (const uint8_t[]){1, 0}, 2, T0, o), 0); /* the last group: final */
    assert_false(o[0].dropped);
    for (size_t i = 0; i < COUNT(l); i++) limit_free(l[i]);
}

/* ---- charge_refused_hits ------------------------------------------------------------ */

static void test_charge_refused_hits_refused(void **state) {
    (void)state;
    sl__config cfg = {0};
    sl__domain_rules *r = NULL;
    static sl__config_errors e;
    assert_int_equal(sl__domain_rules_parse(RULES, strlen(RULES), "q.yaml", &r, &e), 0);
    cfg.domain_rules = r;
    cfg.max_memory = 16u << 20;
    cfg.charge_refused_hits = true;
    sl__domain_set *s = NULL;
    char err[256] = "";
    assert_int_equal(sl__domain_set_create(&cfg, NULL, T0, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "charge_refused_hits: not supported with quota_mode"));
    cfg.charge_refused_hits = false;
    assert_int_equal(sl__domain_set_create(&cfg, NULL, T0, &s, err, sizeof err), 0);
    sl__domain_set_release(s);
    sl__domain_rules_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_over_when_every_quota_is),
        cmocka_unit_test(test_ordinary_over_refuses),
        cmocka_unit_test(test_quota_only),
        cmocka_unit_test(test_peer_svc_quota),
        cmocka_unit_test(test_engine_groups),
        cmocka_unit_test(test_charge_refused_hits_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
