/* test_domains.c: envoyproxy/ratelimit rule files (src/policy/domains.c).
 * The loader: README examples load unchanged; every check reports the exact
 * "file:line: field: message"; a directory loads its *.yaml / *.yml files in
 * name order; the config's `domains:` key loads them relative to the config
 * file and fails the load with their errors. Matching and deciding, with a
 * fake clock: most specific match, nested descriptors and depth, wildcards
 * (and share_threshold), replaces, unlimited, shadow_mode, 0 requests per
 * unit, request and descriptor hits_addend, limit overrides, all-or-nothing
 * over several descriptors, one status per descriptor in order,
 * duration_until_reset, the sluice extensions, and state kept across a
 * reload for unchanged limits only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/config.h"
#include "policy/domains.h"
#include "sluice/sluice.h"

#include "decide_helper.h"
#include "helpers.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the source tree (tests/grpc.cmake)"
#endif

/* a fixed "now": 2024-01-01T00:00:10Z, 10 s into a minute, hour and day */
#define T0 (INT64_C(1704067210) * SEC)

/* ---- helpers ----------------------------------------------------------------- */

static sl__domain_rules *rules_ok(const char *text) {
    return domain_rules_ok(text, "r.yaml");
}

static void expect_errors_(const char *text, const char *const *want, size_t n) {
    sl__domain_rules *r = (sl__domain_rules *)1;
    static sl__config_errors e;
    e.n = 0;
    assert_int_equal(sl__domain_rules_parse(text, strlen(text), "r.yaml", &r, &e), -1);
    assert_null(r);
    expect_error_list(&e, want, n, NULL, text);
}

static sl__domain_set *set_of(const char *text, sl__domain_set *prev) {
    return domain_set_ok(rules_ok(text), prev, T0);
}

/* A request of up to 8 descriptors written as "k=v,k2=v2" strings. */
typedef struct req {
    sl__rls_request q;
    sl__rls_descriptor d[8];
    sl__rls_entry e[8][8];
    char text[8][256];
    sl__rls_status st[8];
    int overall;
    const char *message;
} req;

static void build(req *r, const char *domain, const char *const *descs, size_t n) {
    memset(r, 0, sizeof *r);
    r->q.domain = domain;
    r->q.domain_len = strlen(domain);
    r->q.descriptors = r->d;
    r->q.ndescriptors = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(r->text[i], sizeof r->text[i], "%s", descs[i]);
        r->d[i].entries = r->e[i];
        for (char *p = r->text[i]; *p;) {
            sl__rls_entry *x = &r->e[i][r->d[i].nentries++];
            char *end = strchr(p, ',');
            if (end) *end = '\0';
            char *eq = strchr(p, '=');
            x->key = p;
            x->key_len = eq ? (size_t)(eq - p) : strlen(p);
            x->value = eq ? eq + 1 : "";
            x->value_len = strlen(x->value);
            p = end ? end + 1 : p + strlen(p);
        }
    }
}

static int decide(sl__domain_set *s, req *r, int64_t now) {
    int rc = domain_decide(s, &r->q, now, r->st, &r->overall, &r->message);
    assert_int_equal(rc, SL_OK);
    return r->overall;
}

/* Decides domain + descriptors at now; returns the overall code. */
#define DECIDE(set, r, now, domain, ...)                                                           \
    ({                                                                                             \
        const char *const d_[] = {__VA_ARGS__};                                                    \
        build((r), (domain), d_, COUNT(d_));                                                       \
        decide((set), (r), (now));                                                                 \
    })

static const char README_MESSAGING[] =
    "domain: messaging\n"
    "descriptors:\n"
    "  # Only allow 5 marketing messages a day\n"
    "  - key: message_type\n"
    "    value: marketing\n"
    "    descriptors:\n"
    "      - key: to_number\n"
    "        rate_limit:\n"
    "          unit: day\n"
    "          requests_per_unit: 5\n"
    "\n"
    "  # Only allow 100 messages a day to any unique phone number\n"
    "  - key: to_number\n"
    "    rate_limit:\n"
    "      unit: day\n"
    "      requests_per_unit: 100\n";

/* ---- loading ------------------------------------------------------------------ */

static void test_readme_examples_load(void **state) {
    (void)state;
    sl__domain_rules *r = rules_ok(README_MESSAGING);
    assert_int_equal(sl__domain_rules_domains(r), 1);
    assert_int_equal(sl__domain_rules_limits(r), 2);
    sl__domain_rules_free(r);
    static const char *const others[] = {
        "domain: edge_proxy_per_ip\ndescriptors:\n  - key: remote_address\n    rate_limit:\n"
        "      unit: second\n      requests_per_unit: 10\n  - key: remote_address\n"
        "    value: 50.0.0.5\n    rate_limit:\n      unit: second\n      requests_per_unit: 0\n",
        "domain: internal\ndescriptors:\n  - key: ldap\n    rate_limit:\n      unlimited: true\n"
        "  - key: azure\n    rate_limit:\n      unit: minute\n      requests_per_unit: 100\n",
        "domain: example8\ndescriptors:\n  - key: key1\n    detailed_metric: true\n"
        "    rate_limit:\n      unit: minute\n      requests_per_unit: 10\n",
        /* flow style, YAML 1.1 booleans, upper-case units, numbers as values */
        "{domain: d, descriptors: [{key: k, value: 123, shadow_mode: yes, rate_limit: {unit: "
        "SECOND, requests_per_unit: 1_000}}]}\n",
        /* the keys of newer upstream releases */
        "domain: d\ndescriptors:\n  - key: k\n    value: a*\n    share_threshold: true\n"
        "    value_to_metric: true\n    rate_limit: {unit: week, requests_per_unit: 3}\n",
        /* a domain without descriptors */
        "domain: empty\n",
    };
    for (size_t i = 0; i < COUNT(others); i++) sl__domain_rules_free(rules_ok(others[i]));
}

static void test_errors(void **state) {
    (void)state;
    expect_errors("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: sec\n"
                  "      requests_per_unit: 5\n",
                  "r.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit 'sec' "
                  "(expected second, minute, hour, day, week, month or year)");
    expect_errors(
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 5\n",
        "r.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit '' "
        "(expected second, minute, hour, day, week, month or year)");
    expect_errors("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n"
                  "      unit: second\n",
                  "r.yaml:6: descriptors[0].rate_limit.unit: should not specify rate limit unit "
                  "when unlimited");
    expect_errors("domain: d\ndescriptors:\n  - value: v\n",
                  "r.yaml:3: descriptors[0].key: descriptor has empty key");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: c\n  - key: a\n"
                  "    value: b\n",
                  "r.yaml:6: descriptors[2]: duplicate descriptor composite key 'd.a_b' (first at "
                  "line 3)");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: x\n"
                  "      - key: x\n",
                  "r.yaml:6: descriptors[0].descriptors[1]: duplicate descriptor composite key "
                  "'d.a.x' (first at line 5)");
    expect_errors("descriptors: []\n", "r.yaml:1: domain: config file cannot have empty domain");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                  "      requests_per_unit: 1\n      name: n\n      replaces:\n        - name: n\n",
                  "r.yaml:5: descriptors[0].rate_limit.replaces: replaces should not contain name "
                  "of same descriptor");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                  "      requests_per_unit: 1\n      replaces:\n        - name: \"\"\n",
                  "r.yaml:8: descriptors[0].rate_limit.replaces[0]: should not have an empty "
                  "replaces entry");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    frobnicate: 1\n",
                  "r.yaml:4: descriptors[0].frobnicate: config error, unknown key 'frobnicate'");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    unit: second\n",
                  "r.yaml:4: descriptors[0].unit: config error, key 'unit' belongs under "
                  "rate_limit");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n",
                  "r.yaml:3: descriptors[0].share_threshold: share_threshold can only be used "
                  "with wildcard values (containing '*')");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                  "      requests_per_unit: 99999999999\n",
                  "r.yaml:6: descriptors[0].rate_limit.requests_per_unit: 99999999999 is too "
                  "large (at most 4294967295)");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n",
                  "r.yaml:4: descriptors[0].shadow_mode: expected true or false, got 'maybe'");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                  "      requests_per_unit: 5\n      algorithm: leaky_bucket\n",
                  "r.yaml:7: descriptors[0].rate_limit.algorithm: unknown algorithm "
                  "'leaky_bucket' (expected fixed_window, sliding_log, sliding_window, "
                  "token_bucket, gcra or leaky_queue)");
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                  "      requests_per_unit: 200000\n      algorithm: sliding_log\n",
                  "r.yaml:6: descriptors[0].rate_limit.requests_per_unit: 200000 per SECOND with "
                  "sliding_log: invalid argument (a sliding_log keeps every request: at most "
                  "100000)");
    expect_errors("domain: d\ndescriptors: {key: a}\n",
                  "r.yaml:2: descriptors: expected a list of descriptors (- key: ...), got a "
                  "mapping");
    expect_errors("domain: d\n  bad: [\n", "r.yaml:2: yaml: mapping values are not allowed in "
                                           "this context at column 6");
    expect_errors("", "r.yaml:1: the file is empty (expected domain: and descriptors:)");
    expect_errors("domain: a\n---\ndomain: b\n",
                  "r.yaml:2: only one YAML document per rule file (remove the second ---)");
    expect_errors("domain: &x a\ndescriptors: *x\n",
                  "r.yaml:2: yaml: aliases (*name) are not supported");
    /* every error of a file, not just the first */
    expect_errors("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: x}\n  - bad: 1\n",
                  "r.yaml:4: descriptors[0].rate_limit.unit: invalid rate limit unit 'x' "
                  "(expected second, minute, hour, day, week, month or year)",
                  "r.yaml:5: descriptors[1].bad: config error, unknown key 'bad'",
                  "r.yaml:5: descriptors[1].key: descriptor has empty key");
}

static char tmpdir[64];

static void write_file(const char *dir, const char *name, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup_dir(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sluice-domains-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown_dir(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_directory_and_config(void **state) {
    (void)state;
    char rules[128], p[256];
    snprintf(rules, sizeof rules, "%s/rules", tmpdir);
    assert_int_equal(mkdir(rules, 0700), 0);
    write_file(rules, "b.yaml", README_MESSAGING);
    write_file(rules, "a.yml", "domain: other\n");
    write_file(rules, "notes.txt", "not yaml at all: [");
    write_file(rules, ".hidden.yaml", "not yaml at all: [");
    sl__domain_rules *r = NULL;
    sl__config_errors e = {0};
    assert_int_equal(sl__domain_rules_load(rules, &r, &e), 0);
    assert_int_equal(sl__domain_rules_domains(r), 2);
    sl__domain_rules_free(r);

    /* the config: domains relative to the config file */
    write_file(tmpdir, "sluice.yaml",
               "domains: rules\npolicies:\n  - {name: a, algorithm: "
               "gcra, rate: 1/s, burst: 1}\n");
    snprintf(p, sizeof p, "%s/sluice.yaml", tmpdir);
    sl__config *c = NULL;
    e.n = 0;
    if (sl__config_load(p, &c, &e) != 0) print_errors(&e);
    assert_non_null(c);
    assert_non_null(c->domain_rules);
    assert_int_equal(sl__domain_rules_domains(c->domain_rules), 2);
    sl__domain_set *s = NULL;
    char err[128];
    assert_int_equal(sl__domain_set_create(c, NULL, T0, &s, err, sizeof err), 0);
    req q;
    assert_int_equal(DECIDE(s, &q, T0, "messaging", "to_number=1"), SL__RLS_OK);
    assert_int_equal(q.st[0].requests_per_unit, 100);
    sl__domain_set_release(s);
    sl__config_free(c);

    /* a rule file's errors fail the config, with the rule file's name and line */
    write_file(rules, "c.yaml",
               "domain: third\ndescriptors:\n  - key: k\n    rate_limit: {unit: "
               "second, requests_per_unit: 1}\n  - key: k\n");
    write_file(rules, "d.yaml", "domain: messaging\n");
    e.n = 0;
    c = (sl__config *)1;
    assert_int_equal(sl__config_load(p, &c, &e), SL_EPARSE);
    assert_null(c);
    assert_int_equal(e.n, 2);
    /* at the domains: line of the config, each naming its rule file and line */
    char want[2][512];
    snprintf(want[0], sizeof want[0],
             "%s/sluice.yaml:1: domains: %s/rules/c.yaml:5: descriptors[1]: duplicate descriptor "
             "composite key 'third.k' (first at line 3)",
             tmpdir, tmpdir);
    snprintf(want[1], sizeof want[1],
             "%s/sluice.yaml:1: domains: %s/rules/d.yaml:1: domain: duplicate domain 'messaging' "
             "in config file (first in %s/rules/b.yaml:1)",
             tmpdir, tmpdir, tmpdir);
    want[0][sizeof e.msg[0] - 1] = want[1][sizeof e.msg[1] - 1] = '\0'; /* messages are cut there */
    assert_string_equal(e.msg[0], want[0]);
    assert_string_equal(e.msg[1], want[1]);

    /* one file instead of a directory */
    write_file(tmpdir, "one.yaml", "domains: rules/b.yaml\n");
    snprintf(p, sizeof p, "%s/one.yaml", tmpdir);
    e.n = 0;
    assert_int_equal(sl__config_load(p, &c, &e), 0);
    assert_int_equal(sl__domain_rules_domains(c->domain_rules), 1);
    sl__config_free(c);

    /* a missing path */
    write_file(tmpdir, "missing.yaml", "domains: /nonexistent/rules\n");
    snprintf(p, sizeof p, "%s/missing.yaml", tmpdir);
    e.n = 0;
    assert_int_equal(sl__config_load(p, &c, &e), SL_EPARSE);
    char want_missing[256];
    snprintf(want_missing, sizeof want_missing,
             "%s/missing.yaml:1: domains: /nonexistent/rules: cannot open: No such file or "
             "directory",
             tmpdir);
    assert_string_equal(e.msg[0], want_missing);
}

/* ---- matching and deciding --------------------------------------------------------- */

static void test_nested_and_all_or_nothing(void **state) {
    (void)state;
    sl__domain_set *s = set_of(README_MESSAGING, NULL);
    req r;
    for (int i = 1; i <= 5; i++) {
        assert_int_equal(
            DECIDE(s, &r, T0, "messaging", "message_type=marketing,to_number=1", "to_number=1"),
            SL__RLS_OK);
        assert_int_equal(r.st[0].code, SL__RLS_OK);
        assert_int_equal(r.st[0].limit_remaining, 5 - i);
        assert_int_equal(r.st[1].limit_remaining, 100 - i);
        assert_true(r.st[0].has_limit);
        assert_int_equal(r.st[0].unit, SL__RLS_UNIT_DAY);
        assert_int_equal(r.st[0].reset_seconds, 86400 - 10);
    }
    assert_int_equal(
        DECIDE(s, &r, T0, "messaging", "message_type=marketing,to_number=1", "to_number=1"),
        SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].code, SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[1].code, SL__RLS_OK);
    assert_int_equal(r.st[1].limit_remaining, 95); /* nothing consumed */
    /* order: statuses follow the descriptors */
    assert_int_equal(
        DECIDE(s, &r, T0, "messaging", "to_number=1", "message_type=marketing,to_number=1"),
        SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].code, SL__RLS_OK);
    assert_int_equal(r.st[1].code, SL__RLS_OVER_LIMIT);
    /* the next day */
    assert_int_equal(
        DECIDE(s, &r, T0 + 86400 * SEC, "messaging", "message_type=marketing,to_number=1"),
        SL__RLS_OK);
    /* depth: more entries than the rules, or fewer, match nothing */
    assert_int_equal(DECIDE(s, &r, T0, "messaging", "to_number=1,x=y", "message_type=marketing"),
                     SL__RLS_OK);
    assert_false(r.st[0].has_limit);
    assert_false(r.st[1].has_limit);
    assert_int_equal(r.st[0].limit_remaining, 0);
    /* unknown domain, no entries */
    assert_int_equal(DECIDE(s, &r, T0, "nope", "to_number=1"), SL__RLS_OK);
    assert_false(r.st[0].has_limit);
    sl__domain_set_release(s);
}

static void test_specific_wildcard_and_zero(void **state) {
    (void)state;
    sl__domain_set *s = set_of("domain: d\n"
                               "descriptors:\n"
                               "  - key: ip\n"
                               "    rate_limit: {unit: second, requests_per_unit: 2}\n"
                               "  - key: ip\n"
                               "    value: 50.0.0.5\n"
                               "    rate_limit: {unit: second, requests_per_unit: 0}\n"
                               "  - key: ip\n"
                               "    value: 10.*\n"
                               "    rate_limit: {unit: second, requests_per_unit: 5}\n"
                               "  - key: path\n"
                               "    value: /api/*\n"
                               "    share_threshold: true\n"
                               "    rate_limit: {unit: minute, requests_per_unit: 3}\n",
                               NULL);
    req r;
    int64_t t = T0 + 250 * SL_NS_PER_MS;
    assert_int_equal(DECIDE(s, &r, t, "d", "ip=1.2.3.4"), SL__RLS_OK);
    assert_int_equal(r.st[0].requests_per_unit, 2);
    assert_int_equal(r.st[0].reset_seconds, 1); /* 750 ms, rounded up */
    assert_int_equal(DECIDE(s, &r, t, "d", "ip=1.2.3.4"), SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, t, "d", "ip=1.2.3.4"), SL__RLS_OVER_LIMIT);
    /* the exact value wins over the key alone: 0 per second refuses all */
    assert_int_equal(DECIDE(s, &r, t, "d", "ip=50.0.0.5"), SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].requests_per_unit, 0);
    assert_int_equal(r.st[0].limit_remaining, 0);
    /* ... a check without consuming too: a limit of 0 is always exhausted */
    build(&r, "d", (const char *const[]){"ip=50.0.0.5"}, 1);
    r.d[0].has_hits = true;
    r.d[0].hits = 0;
    assert_int_equal(decide(s, &r, t), SL__RLS_OVER_LIMIT);
    /* the wildcard wins over the key alone; a counter per value */
    for (int i = 0; i < 5; i++) assert_int_equal(DECIDE(s, &r, t, "d", "ip=10.0.0.1"), SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, t, "d", "ip=10.0.0.1"), SL__RLS_OVER_LIMIT);
    assert_int_equal(DECIDE(s, &r, t, "d", "ip=10.0.0.2"), SL__RLS_OK);
    assert_int_equal(r.st[0].requests_per_unit, 5);
    assert_int_equal(DECIDE(s, &r, t, "d", "ip=10."), SL__RLS_OK); /* an empty rest matches */
    /* share_threshold: one counter for every value under the pattern */
    assert_int_equal(DECIDE(s, &r, t, "d", "path=/api/a"), SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, t, "d", "path=/api/b"), SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, t, "d", "path=/api/c"), SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, t, "d", "path=/api/d"), SL__RLS_OVER_LIMIT);
    assert_int_equal(DECIDE(s, &r, t, "d", "path=/other"), SL__RLS_OK);
    assert_false(r.st[0].has_limit);
    sl__domain_set_release(s);
}

static void test_replaces_unlimited_shadow(void **state) {
    (void)state;
    sl__domain_set *s = set_of("domain: d\n"
                               "descriptors:\n"
                               "  - key: key_1\n"
                               "    value: value_1\n"
                               "    descriptors:\n"
                               "      - key: user\n"
                               "        rate_limit: {name: specific_limit, unit: second, "
                               "requests_per_unit: 1}\n"
                               "  - key: key_2\n"
                               "    descriptors:\n"
                               "      - key: user\n"
                               "        rate_limit:\n"
                               "          replaces: [{name: specific_limit}]\n"
                               "          unit: second\n"
                               "          requests_per_unit: 2\n"
                               "  - key: ldap\n"
                               "    rate_limit: {unlimited: true}\n"
                               "  - key: soft\n"
                               "    shadow_mode: true\n"
                               "    rate_limit: {unit: minute, requests_per_unit: 1}\n"
                               "  - key: hard\n"
                               "    rate_limit: {unit: minute, requests_per_unit: 2}\n",
                               NULL);
    req r;
    /* the replaced limit is dropped: no status, not consumed */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(DECIDE(s, &r, T0, "d", "key_1=value_1,user=u", "key_2=x,user=u"),
                         SL__RLS_OK);
        assert_false(r.st[0].has_limit);
        assert_int_equal(r.st[1].requests_per_unit, 2);
    }
    assert_int_equal(DECIDE(s, &r, T0, "d", "key_1=value_1,user=u", "key_2=x,user=u"),
                     SL__RLS_OVER_LIMIT);
    assert_int_equal(DECIDE(s, &r, T0, "d", "key_1=value_1,user=u"), SL__RLS_OK);
    assert_string_equal(r.st[0].name, "specific_limit");
    /* unlimited */
    assert_int_equal(DECIDE(s, &r, T0, "d", "ldap=x"), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, UINT32_MAX);
    assert_false(r.st[0].has_limit);
    /* shadow: never refuses, never blocks the others, still counts */
    assert_int_equal(DECIDE(s, &r, T0, "d", "soft=a", "hard=a"), SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, T0, "d", "soft=a", "hard=a"), SL__RLS_OK);
    assert_int_equal(r.st[0].code, SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 0);
    assert_int_equal(r.st[1].limit_remaining, 0); /* the hard limit did consume */
    assert_int_equal(DECIDE(s, &r, T0, "d", "soft=a", "hard=a"), SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].code, SL__RLS_OK);
    assert_int_equal(r.st[1].code, SL__RLS_OVER_LIMIT);
    /* the counters */
    sl__domain_rule_stats st;
    bool found = false;
    for (size_t i = 0; i < sl__domain_set_rule_count(s); i++) {
        assert_true(sl__domain_set_rule_stats(s, i, &st));
        if (!strcmp(st.rule, "soft")) {
            found = true;
            assert_string_equal(st.domain, "d");
            assert_int_equal(st.allowed, 1);
            /* the third request was refused by the enforced limit: the
             * shadow group was only looked at (the engine's one rule) */
            assert_int_equal(st.shadow_limited, 1);
        }
    }
    assert_true(found);
    sl__domain_set_release(s);
}

/* Shadow limits are their own all-or-nothing group, as everywhere else
 * (the engine's one rule; the memory path used to charge the other shadow
 * limits of a request when one of them refused, the Redis path did not):
 * when one refuses, the others keep what they had. */
static void test_shadow_group_all_or_nothing(void **state) {
    (void)state;
    sl__domain_set *s = set_of("domain: d\ndescriptors:\n"
                               "  - key: one\n"
                               "    shadow_mode: true\n"
                               "    rate_limit: {unit: minute, requests_per_unit: 1}\n"
                               "  - key: five\n"
                               "    shadow_mode: true\n"
                               "    rate_limit: {unit: minute, requests_per_unit: 5}\n",
                               NULL);
    req r;
    assert_int_equal(DECIDE(s, &r, T0, "d", "one=a", "five=a"), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 0);
    assert_int_equal(r.st[1].limit_remaining, 4);
    /* `one` would refuse: the group charges nothing, `five` keeps 4 */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(DECIDE(s, &r, T0, "d", "one=a", "five=a"), SL__RLS_OK);
        assert_int_equal(r.st[0].code, SL__RLS_OK);
        assert_int_equal(r.st[1].limit_remaining, 4);
    }
    /* alone, `five` is charged as usual */
    assert_int_equal(DECIDE(s, &r, T0, "d", "five=a"), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 3);
    sl__domain_rule_stats st;
    for (size_t i = 0; i < sl__domain_set_rule_count(s); i++) {
        assert_true(sl__domain_set_rule_stats(s, i, &st));
        if (!strcmp(st.rule, "one")) assert_int_equal(st.shadow_limited, 3);
        if (!strcmp(st.rule, "five")) assert_int_equal(st.shadow_limited, 0);
    }
    sl__domain_set_release(s);
}

static void test_hits_and_overrides(void **state) {
    (void)state;
    sl__domain_set *s = set_of("domain: d\ndescriptors:\n  - key: k\n"
                               "    rate_limit: {unit: hour, requests_per_unit: 5}\n",
                               NULL);
    req r;
    build(&r, "d", (const char *const[]){"k=a"}, 1);
    r.q.hits_addend = 3;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 2);
    /* descriptor hits_addend overrides the request's; 0 checks without consuming */
    build(&r, "d", (const char *const[]){"k=a"}, 1);
    r.q.hits_addend = 3;
    r.d[0].has_hits = true;
    r.d[0].hits = 0;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 2);
    r.d[0].hits = 3;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].limit_remaining, 0); /* OVER_LIMIT says 0, as upstream (2 are left) */
    r.d[0].hits = UINT64_MAX; /* can never pass: remaining 0 (store.h), nothing charged */
    assert_int_equal(decide(s, &r, T0), SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].limit_remaining, 0); /* the store contract, and what the peer sends */
    assert_int_equal(r.st[0].reset_seconds, 3600 - 10);
    /* a limit override: a table of its own per (rate, unit), fixed windows */
    build(&r, "d", (const char *const[]){"k=a", "other=b"}, 2);
    r.d[1].has_limit = true;
    r.d[1].limit_requests_per_unit = 1;
    r.d[1].limit_unit = SL__RLS_UNIT_MINUTE;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OK);
    assert_int_equal(r.st[1].requests_per_unit, 1);
    assert_int_equal(r.st[1].unit, SL__RLS_UNIT_MINUTE);
    assert_int_equal(r.st[1].reset_seconds, 50);
    assert_int_equal(r.st[0].limit_remaining, 1);
    assert_int_equal(decide(s, &r, T0), SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].limit_remaining, 1); /* the rule was not consumed */
    r.d[1].limit_unit = 0;
    assert_int_equal(domain_decide(s, &r.q, T0, r.st, &r.overall, &r.message), SL_EINVAL);
    /* bad requests */
    build(&r, "", (const char *const[]){"k=a"}, 1);
    assert_int_equal(domain_decide(s, &r.q, T0, r.st, &r.overall, &r.message), SL_EINVAL);
    assert_string_equal(r.message, "rate limit domain must not be empty");
    build(&r, "d", NULL, 0);
    assert_int_equal(domain_decide(s, &r.q, T0, r.st, &r.overall, &r.message), SL_EINVAL);
    assert_string_equal(r.message, "rate limit descriptor list must not be empty");
    /* no set at all */
    build(&r, "d", (const char *const[]){"k=a"}, 1);
    assert_int_equal(decide(NULL, &r, T0), SL__RLS_OK);
    sl__domain_set_release(s);
}

/* hits_addend 0 checks without charging (Envoy checks on the request path
 * and charges at the stream's end): OK while one more hit would pass,
 * OVER_LIMIT once the limit is exhausted; counted as what it answered. */
static void test_check_only_hits_zero(void **state) {
    (void)state;
    sl__domain_set *s = set_of("domain: d\ndescriptors:\n"
                               "  - key: k\n"
                               "    rate_limit: {unit: hour, requests_per_unit: 2}\n"
                               "  - key: sh\n"
                               "    shadow_mode: true\n"
                               "    rate_limit: {unit: hour, requests_per_unit: 1}\n",
                               NULL);
    req r;
    build(&r, "d", (const char *const[]){"k=a"}, 1);
    r.d[0].has_hits = true;
    r.d[0].hits = 0;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 2);
    assert_int_equal(DECIDE(s, &r, T0, "d", "k=a"), SL__RLS_OK);
    build(&r, "d", (const char *const[]){"k=a"}, 1);
    r.d[0].has_hits = true;
    r.d[0].hits = 0;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OK); /* one hit is left */
    assert_int_equal(r.st[0].limit_remaining, 1);
    assert_int_equal(DECIDE(s, &r, T0, "d", "k=a"), SL__RLS_OK);
    build(&r, "d", (const char *const[]){"k=a"}, 1);
    r.d[0].has_hits = true;
    r.d[0].hits = 0;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OVER_LIMIT); /* exhausted */
    assert_int_equal(r.st[0].code, SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].limit_remaining, 0);
    /* the next window: a check passes again */
    build(&r, "d", (const char *const[]){"k=a"}, 1);
    r.d[0].has_hits = true;
    r.d[0].hits = 0;
    assert_int_equal(decide(s, &r, T0 + 3600 * SEC), SL__RLS_OK);
    /* a shadow limit exhausted: the check is shadow-limited, the request OK */
    assert_int_equal(DECIDE(s, &r, T0, "d", "sh=x"), SL__RLS_OK);
    build(&r, "d", (const char *const[]){"sh=x"}, 1);
    r.d[0].has_hits = true;
    r.d[0].hits = 0;
    assert_int_equal(decide(s, &r, T0), SL__RLS_OK);
    assert_int_equal(r.st[0].code, SL__RLS_OK);
    /* the counters say what was answered */
    sl__domain_rule_stats k = {0}, sh = {0};
    for (size_t i = 0; i < sl__domain_set_rule_count(s); i++) {
        sl__domain_rule_stats st;
        assert_true(sl__domain_set_rule_stats(s, i, &st));
        if (strstr(st.rule, "sh"))
            sh = st;
        else
            k = st;
    }
    assert_int_equal(k.allowed, 5);
    assert_int_equal(k.limited, 1);
    assert_int_equal(sh.allowed, 1);
    assert_int_equal(sh.shadow_limited, 1);
    sl__domain_set_release(s);
}

/* charge_refused_hits: the peer's way (every hit is charged, refused or
 * not) as an opt-in; by default a refused request charges nothing. */
static void test_charge_refused_hits(void **state) {
    (void)state;
    char rules[256], p[256];
    snprintf(rules, sizeof rules, "%s/charge", tmpdir);
    assert_int_equal(mkdir(rules, 0700), 0);
    write_file(rules, "c.yaml",
               "domain: c\ndescriptors:\n"
               "  - {key: a, rate_limit: {unit: hour, requests_per_unit: 1}}\n"
               "  - {key: b, rate_limit: {unit: hour, requests_per_unit: 5}}\n");
    for (int charge = 0; charge <= 1; charge++) {
        write_file(tmpdir, "charge.yaml",
                   charge ? "domains: charge\ncharge_refused_hits: true\n" : "domains: charge\n");
        snprintf(p, sizeof p, "%s/charge.yaml", tmpdir);
        sl__config *c = NULL;
        sl__config_errors e = {0};
        if (sl__config_load(p, &c, &e) != 0) print_errors(&e);
        assert_non_null(c);
        assert_int_equal(c->charge_refused_hits, charge);
        sl__domain_set *s = NULL;
        char err[128];
        assert_int_equal(sl__domain_set_create(c, NULL, T0, &s, err, sizeof err), 0);
        req r;
        assert_int_equal(DECIDE(s, &r, T0, "c", "a=1", "b=1"), SL__RLS_OK);
        assert_int_equal(r.st[1].limit_remaining, 4);
        assert_int_equal(DECIDE(s, &r, T0, "c", "a=1", "b=1"), SL__RLS_OVER_LIMIT);
        assert_int_equal(r.st[0].code, SL__RLS_OVER_LIMIT);
        /* b's count: charged by the refused request only when asked to */
        assert_int_equal(DECIDE(s, &r, T0, "c", "b=1"), SL__RLS_OK);
        assert_int_equal(r.st[0].limit_remaining, charge ? 2 : 3);
        sl__domain_set_release(s);
        sl__config_free(c);
    }
}

static void test_algorithms(void **state) {
    (void)state;
    sl__domain_set *s = set_of("domain: d\ndescriptors:\n"
                               "  - key: tb\n"
                               "    rate_limit: {unit: second, requests_per_unit: 2, algorithm: "
                               "token_bucket, burst: 4}\n"
                               "  - key: gcra\n"
                               "    rate_limit: {unit: minute, requests_per_unit: 60, algorithm: "
                               "gcra}\n",
                               NULL);
    req r;
    for (int i = 0; i < 4; i++) assert_int_equal(DECIDE(s, &r, T0, "d", "tb=x"), SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, T0, "d", "tb=x"), SL__RLS_OVER_LIMIT);
    assert_int_equal(r.st[0].reset_seconds, 1); /* retry after 500 ms, rounded up */
    assert_int_equal(r.st[0].requests_per_unit, 2);
    assert_int_equal(DECIDE(s, &r, T0 + 500 * SL_NS_PER_MS, "d", "tb=x"), SL__RLS_OK);
    /* gcra 60/min, burst = requests_per_unit */
    assert_int_equal(DECIDE(s, &r, T0, "d", "gcra=x"), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 59);
    assert_int_equal(r.st[0].reset_seconds, 1);
    sl__domain_set_release(s);
}

static void test_reload_keeps_state(void **state) {
    (void)state;
    const char *v1 = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, "
                     "requests_per_unit: 5}\n  - key: b\n    rate_limit: {unit: hour, "
                     "requests_per_unit: 5}\n";
    const char *v2 = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, "
                     "requests_per_unit: 5}\n  - key: b\n    rate_limit: {unit: hour, "
                     "requests_per_unit: 6}\n";
    sl__domain_set *s1 = set_of(v1, NULL);
    req r;
    DECIDE(s1, &r, T0, "d", "a=1", "b=1");
    /* a limit override in use also survives */
    build(&r, "d", (const char *const[]){"c=1"}, 1);
    r.d[0].has_limit = true;
    r.d[0].limit_requests_per_unit = 3;
    r.d[0].limit_unit = SL__RLS_UNIT_HOUR;
    decide(s1, &r, T0);
    sl__domain_set *s2 = set_of(v2, s1);
    sl__domain_set_release(s1);
    DECIDE(s2, &r, T0, "d", "a=1", "b=1");
    assert_int_equal(r.st[0].limit_remaining, 3); /* kept */
    assert_int_equal(r.st[1].limit_remaining, 5); /* changed: fresh */
    build(&r, "d", (const char *const[]){"c=1"}, 1);
    r.d[0].has_limit = true;
    r.d[0].limit_requests_per_unit = 3;
    r.d[0].limit_unit = SL__RLS_UNIT_HOUR;
    decide(s2, &r, T0);
    assert_int_equal(r.st[0].limit_remaining, 1);
    sl__domain_set_release(s2);
}

/* examples/envoy: the config and its rule file load, and decide as the
 * comments there say. */
static void test_envoy_example(void **state) {
    (void)state;
    sl__config *c = NULL;
    sl__config_errors e = {0};
    if (sl__config_load(SLUICE_SOURCE_DIR "/examples/envoy/sluice.yaml", &c, &e) != 0)
        print_errors(&e);
    assert_non_null(c);
    sl__domain_set *s = NULL;
    char err[128];
    assert_int_equal(sl__domain_set_create(c, NULL, T0, &s, err, sizeof err), 0);
    req r;
    assert_int_equal(DECIDE(s, &r, T0, "edge", "remote_address=198.51.100.1"), SL__RLS_OK);
    assert_int_equal(r.st[0].requests_per_unit, 10);
    assert_int_equal(DECIDE(s, &r, T0, "edge", "remote_address=203.0.113.7"), SL__RLS_OVER_LIMIT);
    assert_int_equal(DECIDE(s, &r, T0, "edge", "api_key=internal-batch"), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, UINT32_MAX);
    assert_int_equal(DECIDE(s, &r, T0, "edge", "api_key=k1"), SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 49); /* gcra, burst 50 */
    for (int i = 0; i < 7; i++)
        assert_int_equal(DECIDE(s, &r, T0, "edge", "generic_key=login,remote_address=1"),
                         SL__RLS_OK);
    sl__domain_set_release(s);
    sl__config_free(c);
}

/* The stats of the limit with this rule key, or a failure. */
static sl__domain_rule_stats stats_of(const sl__domain_set *s, const char *rule) {
    sl__domain_rule_stats st;
    for (size_t i = 0; i < sl__domain_set_rule_count(s); i++)
        if (sl__domain_set_rule_stats(s, i, &st) && strcmp(st.rule, rule) == 0) return st;
    fail_msg("no rule %s", rule);
    return st;
}

/* Issue 12 item 15: the config's top-level shadow covers every limit of the
 * rule files (overrides too); every outcome is counted per rule, and the
 * refused descriptors go into the domain's sketch (kept by a reload), shadow
 * refusals included. */
static void test_global_shadow_stats_and_top(void **state) {
    (void)state;
    static const char rules[] = "domain: edge\n"
                                "descriptors:\n"
                                "  - key: remote_address\n"
                                "    rate_limit: {unit: hour, requests_per_unit: 2}\n"
                                "  - key: blocked\n"
                                "    rate_limit: {unit: hour, requests_per_unit: 0}\n"
                                "  - key: free\n"
                                "    rate_limit: {unlimited: true}\n";
    sl__domain_set *s = set_of(rules, NULL);
    sl__domain_set_shadow(s, true);
    req r;
    for (int i = 0; i < 5; i++)
        assert_int_equal(DECIDE(s, &r, T0, "edge", "remote_address=198.51.100.7"), SL__RLS_OK);
    assert_int_equal(r.st[0].code, SL__RLS_OK);
    assert_int_equal(r.st[0].limit_remaining, 0);
    assert_int_equal(DECIDE(s, &r, T0, "edge",
                            "blocked=a\x01"
                            "b"),
                     SL__RLS_OK);
    assert_int_equal(DECIDE(s, &r, T0, "edge", "free=x"), SL__RLS_OK);
    /* a limit override is a shadow limit as well */
    build(&r, "edge", (const char *const[]){"k=v"}, 1);
    r.d[0].has_limit = true;
    r.d[0].limit_requests_per_unit = 1;
    r.d[0].limit_unit = SL__RLS_UNIT_HOUR;
    decide(s, &r, T0);
    assert_int_equal(decide(s, &r, T0), SL__RLS_OK);
    sl__domain_rule_stats st = stats_of(s, "remote_address");
    assert_string_equal(st.domain, "edge");
    assert_int_equal(st.allowed, 2);
    assert_int_equal(st.limited, 0);
    assert_int_equal(st.shadow_limited, 3);
    assert_int_equal(st.keys, 1);
    assert_int_equal(stats_of(s, "blocked").shadow_limited, 1);
    assert_int_equal(stats_of(s, "free").allowed, 1);
    st = stats_of(s, "limit_override.1_per_HOUR");
    assert_int_equal(st.allowed, 1);
    assert_int_equal(st.shadow_limited, 1);
    /* the sketch: by rule, the entries in printable ASCII */
    sl__domain_top_item top[8];
    assert_int_equal(sl__domain_set_top(s, "edge", 4, NULL, 0, top, 8), 3);
    assert_string_equal(top[0].rule, "remote_address");
    assert_string_equal(top[0].key, "remote_address=198.51.100.7");
    assert_int_equal(top[0].count, 3);
    assert_int_equal(sl__domain_set_top(s, "edge", 4, "blocked", 7, top, 8), 1);
    assert_string_equal(top[0].key, "blocked=a?b");
    assert_int_equal(sl__domain_set_top(s, "edge", 4, "limit_override.1_per_HOUR", 25, top, 8), 1);
    assert_string_equal(top[0].key, "k=v");
    assert_int_equal(sl__domain_set_top(s, "edge", 4, NULL, 0, top, 1), 1);
    assert_int_equal(sl__domain_set_top(s, "nope", 4, NULL, 0, top, 8), -1);
    /* a reload without shadow: enforced, the tables and the sketch kept */
    sl__domain_set *s2 = set_of(rules, s);
    sl__domain_set_release(s);
    assert_int_equal(DECIDE(s2, &r, T0, "edge", "remote_address=198.51.100.7"), SL__RLS_OVER_LIMIT);
    assert_int_equal(stats_of(s2, "remote_address").limited, 1);
    assert_int_equal(sl__domain_set_top(s2, "edge", 4, "remote_address", 14, top, 8), 1);
    assert_int_equal(top[0].count, 4);
    sl__domain_set_release(s2);
}

/* The loader's error codes (sluice/error.h, domains.h): invalid input is
 * SL_EINVAL, whatever its kind, *out NULL and the reason in the list. */
static void test_error_codes(void **state) {
    (void)state;
    static sl__config_errors e;
    sl__domain_rules *r = (sl__domain_rules *)1;
    e.n = 0;
    assert_int_equal(sl__domain_rules_load("/nonexistent/sluice-rules", &r, &e), SL_EINVAL);
    assert_null(r);
    assert_int_equal(e.n, 1);
    /* too large: refused before it is read */
    r = (sl__domain_rules *)1;
    e.n = 0;
    assert_int_equal(
        sl__domain_rules_parse("domain: d\n", SL__DOMAINS_MAX_FILE_SIZE + 1, "r.yaml", &r, &e),
        SL_EINVAL);
    assert_null(r);
    assert_int_equal(e.n, 1);
    /* not YAML, an empty file */
    r = (sl__domain_rules *)1;
    e.n = 0;
    assert_int_equal(sl__domain_rules_parse("a: [", 4, "r.yaml", &r, &e), SL_EINVAL);
    assert_null(r);
    e.n = 0;
    assert_int_equal(sl__domain_rules_parse("", 0, "r.yaml", &r, &e), SL_EINVAL);
    assert_null(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readme_examples_load),
        cmocka_unit_test(test_errors),
        cmocka_unit_test_setup_teardown(test_directory_and_config, setup_dir, teardown_dir),
        cmocka_unit_test(test_nested_and_all_or_nothing),
        cmocka_unit_test(test_specific_wildcard_and_zero),
        cmocka_unit_test(test_replaces_unlimited_shadow),
        cmocka_unit_test(test_shadow_group_all_or_nothing),
        cmocka_unit_test(test_hits_and_overrides),
        cmocka_unit_test(test_check_only_hits_zero),
        cmocka_unit_test_setup_teardown(test_charge_refused_hits, setup_dir, teardown_dir),
        cmocka_unit_test(test_algorithms),
        cmocka_unit_test(test_reload_keeps_state),
        cmocka_unit_test(test_envoy_example),
        cmocka_unit_test(test_global_shadow_stats_and_top),
        cmocka_unit_test(test_error_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
