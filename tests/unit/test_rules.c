/* test_rules.c: who is counted, end to end below HTTP (src/policy/rules.c,
 * apikeys.c, policy.c and the new config sections), on a fake clock:
 *
 * - the config: the identity example loads, every new key is checked with
 *   "file:line: field: message" errors, the key file's errors included;
 * - the key file: fields, comments, tiers, organisations, duplicates;
 * - the seed's per-key demo (alice 200 200 200 429 with a retry of 200 ms,
 *   bob 200, a made-up key 401) and a flood of random keys that creates no
 *   limiter state;
 * - layered limits (all pass or none is charged, the refusing one reported),
 *   tiers, costs, calendar-month quotas, exemptions, shadow per rule and
 *   globally, /64 prefixes, trusted proxies, key sources, path
 *   normalization, and reloads that keep the state of unchanged limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/apikeys.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "policy/rules.h"
#include "sluice/sluice.h"

#include "decide_helper.h"
#include "helpers.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the source tree (tests/identity.cmake)"
#endif

#define DAY (86400 * SEC)

/* 2026-02-01T00:00:00Z and 2026-03-01T00:00:00Z */
#define FEB1 (INT64_C(1769904000) * SEC)
#define MAR1 (INT64_C(1772323200) * SEC)
#define T0   (FEB1 + 3 * DAY + 12 * 3600 * SEC) /* an ordinary moment */

static char keyfile[64];

static const char keys_text[] = "# test keys: KEY TIER ORG\n"
                                "alice free acme\n"
                                "bob   free\n"
                                "carol pro  acme\n"
                                "dave  -    globex\n"
                                "root  admin\r\n"
                                "   \t # an indented comment\n"
                                "erin\n";

static int setup(void **state) {
    (void)state;
    snprintf(keyfile, sizeof keyfile, "/tmp/sluice-test-keys-XXXXXX");
    int fd = mkstemp(keyfile);
    if (fd < 0) return -1;
    if (write(fd, keys_text, sizeof keys_text - 1) != (ssize_t)(sizeof keys_text - 1)) return -1;
    close(fd);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(keyfile);
    return 0;
}

/* The text with every "KEYS" replaced by the key file's path. */
static const char *with_keys(const char *text) {
    static char buf[16384];
    size_t o = 0;
    for (const char *s = text; *s && o + 80 < sizeof buf;) {
        if (strncmp(s, "KEYS", 4) == 0) {
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s", keyfile);
            s += 4;
        } else {
            buf[o++] = *s++;
        }
    }
    buf[o] = '\0';
    return buf;
}

static sl__config *parse_ok(const char *text) {
    return config_parse_ok(with_keys(text));
}

static void expect_errors_(const char *text, const char *const *want, size_t n) {
    config_expect_errors_map(with_keys(text), want, n, with_keys);
}

/* ---- a running set ---------------------------------------------------------- */

static sl__config *cfg;
static sl__policy_set *set;
static sl__rules_answer ans;

static void load(const char *text, int64_t now) {
    sl__config *c = parse_ok(text);
    sl__policy_set *s = NULL;
    char err[256];
    if (sl__policy_set_create(c, set, now, &s, err, sizeof err) != 0) fail_msg("%s", err);
    if (set) sl__policy_set_release(set);
    sl__config_free(cfg);
    cfg = c;
    set = s;
}

static void unload(void) {
    sl__policy_set_release(set);
    sl__config_free(cfg);
    set = NULL;
    cfg = NULL;
}

/* After each test, even a failed one: no state leaks into the next. */
static int fresh(void **state) {
    (void)state;
    if (set) unload();
    return 0;
}

/* Decides one request; extra headers as name, value pairs ending in NULL. */
static sl__verdict decide(const char *method, const char *uri, const char *ip, const char *key,
                          int64_t now, ...) {
    sl__req_header h[16];
    size_t n = 0;
    if (key) h[n++] = (sl__req_header){"X-API-Key", key, 9, strlen(key)};
    va_list ap;
    va_start(ap, now);
    for (const char *name; (name = va_arg(ap, const char *));) {
        const char *value = va_arg(ap, const char *);
        h[n++] = (sl__req_header){name, value, strlen(name), strlen(value)};
    }
    va_end(ap);
    sl__request r = {.method = method,
                     .method_len = method ? strlen(method) : 0,
                     .uri = uri,
                     .uri_len = uri ? strlen(uri) : 0,
                     .client = ip,
                     .client_len = ip ? strlen(ip) : 0,
                     .headers = h,
                     .nheaders = n};
    rules_decide(sl__policy_set_rules(set), &r, now, &ans);
    return ans.verdict;
}

static const char *refused_by(void) {
    assert_true(ans.refused < ans.n);
    return ans.items[ans.refused].policy->cfg.name;
}

static const sl__policy_item *item(const char *policy) {
    for (size_t i = 0; i < ans.n; i++)
        if (strcmp(ans.items[i].policy->cfg.name, policy) == 0) return &ans.items[i];
    fail_msg("no item for %s", policy);
    return NULL;
}

static uint64_t keys_in(const char *policy) {
    sl__policy *p = sl__policy_find(set, policy, strlen(policy));
    assert_non_null(p);
    sl_table_stats st;
    sl_table_stats_get(p->lim.store.table, &st);
    return st.keys;
}

/* ---- the config -------------------------------------------------------------- */

static void test_examples_load(void **state) {
    (void)state;
    sl__config *c = NULL;
    sl__config_errors e;
    const char *path = SLUICE_SOURCE_DIR "/examples/identity.yaml";
    if (sl__config_load(path, &c, &e) != 0) {
        print_errors(&e);
        fail_msg("%s does not load", path);
    }
    assert_non_null(c->identity.keys);
    assert_true(sl__apikeys_count(c->identity.keys) >= 4);
    assert_true(c->nrules >= 2);
    assert_true(c->ntiers >= 3);
    assert_true(c->ncosts >= 2);
    char err[256];
    sl__policy_set *s;
    assert_int_equal(sl__policy_set_create(c, NULL, T0, &s, err, sizeof err), 0);
    assert_non_null(sl__policy_find(s, "per_key:pro", 11));
    sl__policy_set_release(s);
    sl__config_free(c);
}

static const char full[] = "identity:\n"
                           "  trusted_proxies: [10.0.0.0/8, \"2001:db8:ffff::/48\"]\n"
                           "  forwarded_header: Forwarded\n"
                           "  ipv4_prefix: 24\n"
                           "  ipv6_prefix: 56\n"
                           "  client_ip_header: X-Client\n"
                           "  method_header: X-Method\n"
                           "  uri_header: X-Uri\n"
                           "  api_keys:\n"
                           "    file: KEYS\n"
                           "    header: X-Key\n"
                           "    bearer: false\n"
                           "    query: api_key\n"
                           "    required: true\n"
                           "tiers:\n"
                           "  free:\n"
                           "  pro:\n"
                           "    api: {rate: 50/s, burst: 100}\n"
                           "    monthly: {limit: 500}\n"
                           "  admin: ~\n"
                           "policies:\n"
                           "  - {name: api, algorithm: token_bucket, rate: 5/s, burst: 10}\n"
                           "quotas:\n"
                           "  - name: monthly\n"
                           "    limit: 100\n"
                           "    per: month\n"
                           "  - {name: daily, limit: 10, per: day, shadow: true}\n"
                           "costs:\n"
                           "  - {method: POST, path: /exports, cost: 50}\n"
                           "  - {method: [GET, HEAD], path: /search/*, cost: 5}\n"
                           "  - {path: \"*\", cost: 2}\n"
                           "exempt:\n"
                           "  paths: [/healthz, /status*]\n"
                           "  cidrs: [192.168.0.0/16]\n"
                           "  tiers: [admin]\n"
                           "rules:\n"
                           "  - name: api\n"
                           "    method: GET\n"
                           "    path: /api/*\n"
                           "    shadow: true\n"
                           "    limits:\n"
                           "      - {policy: api, by: [api_key, route], cost: 1}\n"
                           "      - {policy: monthly, by: org}\n"
                           "      - {policy: daily, by: \"header:X-Tenant\"}\n"
                           "      - {policy: api, by: global}\n"
                           "      - {policy: api, by: ip}\n"
                           "shadow: true\n";

static void test_config_keys(void **state) {
    (void)state;
    sl__config *c = parse_ok(full);
    const sl__identity_config *id = &c->identity;
    assert_int_equal(id->ntrusted, 2);
    assert_int_equal(id->forwarded, SL__FWD_FORWARDED);
    assert_int_equal(id->ipv4_prefix, 24);
    assert_int_equal(id->ipv6_prefix, 56);
    assert_string_equal(id->client_ip_header, "X-Client");
    assert_string_equal(id->method_header, "X-Method");
    assert_string_equal(id->uri_header, "X-Uri");
    assert_string_equal(id->key_header, "X-Key");
    assert_false(id->key_bearer);
    assert_string_equal(id->key_query, "api_key");
    assert_true(id->key_required);
    assert_int_equal(sl__apikeys_count(id->keys), 6);
    assert_int_equal(c->ntiers, 3);
    assert_string_equal(c->tiers[1].name, "pro");
    assert_int_equal(c->tiers[1].noverrides, 2);
    assert_int_equal(c->tiers[1].overrides[0].burst, 100);
    assert_int_equal(c->tiers[1].overrides[1].limit, 500);
    assert_int_equal(c->npolicies, 3); /* api, and the two quotas */
    const sl__policy_config *m = sl__config_policy(c, "monthly", 7);
    assert_true(m->quota);
    assert_int_equal(m->calendar, SL__CALENDAR_MONTH);
    assert_int_equal(m->params.algorithm, SL_FIXED_WINDOW);
    assert_int_equal(m->params.rate.limit, 100);
    const sl__policy_config *d = sl__config_policy(c, "daily", 5);
    assert_int_equal(d->params.rate.period, DAY);
    assert_true(d->shadow);
    assert_int_equal(c->ncosts, 3);
    assert_int_equal(c->costs[1].match.methods, SL__METHOD_GET | SL__METHOD_HEAD);
    assert_string_equal(c->costs[2].match.path, "");
    assert_int_equal(c->exempt.npaths, 2);
    assert_int_equal(c->exempt.ncidrs, 1);
    assert_int_equal(c->exempt.tiers, 1u << 2);
    assert_int_equal(c->nrules, 1);
    const sl__rule_config *r = &c->rules[0];
    assert_true(r->shadow);
    assert_int_equal(r->nlimits, 5);
    assert_int_equal(r->limits[0].nby, 2);
    assert_int_equal(r->limits[0].by[1], SL__SRC_ROUTE);
    assert_int_equal(r->limits[0].cost, 1);
    assert_int_equal(r->limits[1].cost, -1);
    assert_string_equal(r->limits[2].header, "X-Tenant");
    assert_true(c->shadow);
    sl__config_free(c);
}

static void test_config_errors(void **state) {
    (void)state;
    expect_errors("identity:\n"
                  "  trusted_proxies: [10.0.0.1/8, nope, \"::/200\"]\n"
                  "  forwarded_header: X-Real-IP\n"
                  "  ipv6_prefix: 0\n"
                  "  client_ip_header: \"X Real\"\n"
                  "  api_keys: {file: KEYS, bearr: true}\n"
                  "  trusted: []\n",
                  "t.yaml:2: identity.trusted_proxies[0]: cannot use \"10.0.0.1/8\": host bits are "
                  "set (write the network address, such as 10.0.0.0/8)",
                  "t.yaml:2: identity.trusted_proxies[1]: cannot use \"nope\": not an IP address "
                  "or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)",
                  "t.yaml:2: identity.trusted_proxies[2]: cannot use \"::/200\": the prefix length "
                  "of an IPv6 block is 0 to 128",
                  "t.yaml:3: identity.forwarded_header: unknown header \"X-Real-IP\" (expected "
                  "X-Forwarded-For or Forwarded, RFC 7239)",
                  "t.yaml:4: identity.ipv6_prefix: 0 is out of range (1 to 128)",
                  "t.yaml:5: identity.client_ip_header: \"X Real\" is not a header name (1 to 63 "
                  "letters, digits or - _ .)",
                  "t.yaml:6: identity.api_keys.bearr: unknown key (did you mean bearer?)",
                  "t.yaml:7: identity.trusted: unknown key (did you mean trusted_proxies?)");
    expect_errors("policies:\n"
                  "  - {name: api, algorithm: gcra, rate: 5/s, burst: 5}\n"
                  "tiers:\n"
                  "  pro:\n"
                  "    api: {limit: 5}\n"
                  "    nope: {rate: 1/s}\n"
                  "    q: {rate: 1/s}\n"
                  "    api2: 3\n"
                  "  Bad: ~\n"
                  "quotas:\n"
                  "  - {name: q, limit: 5, per: week}\n"
                  "  - {name: api, limit: 0}\n"
                  "exempt:\n"
                  "  tiers: [gold]\n",
                  "t.yaml:5: tiers.pro.api: api is a policy: a tier sets its rate and burst",
                  "t.yaml:6: tiers.pro.nope: no policy or quota named \"nope\"",
                  "t.yaml:7: tiers.pro.q: q is a quota: a tier sets its limit",
                  "t.yaml:8: tiers.pro.api2: expected a mapping of rate and burst (a policy) or "
                  "limit (a quota), got \"3\"",
                  "t.yaml:9: tiers.Bad: \"Bad\": a name uses only lower-case letters, digits, _ . "
                  "and -",
                  "t.yaml:11: quotas[0].per: unknown quota period \"week\" (expected day or month)",
                  "t.yaml:12: quotas[1].name: duplicate policy name \"api\" (first at line 2)",
                  "t.yaml:12: quotas[1].limit: 0 is out of range (1 to 2305843009213693952)",
                  "t.yaml:12: quotas[1].per: missing (every quota needs a period: per: day or per: "
                  "month)",
                  "t.yaml:14: exempt.tiers[0]: no tier named \"gold\" (declare it under tiers:)");
    expect_errors("policies:\n"
                  "  - {name: api, algorithm: gcra, rate: 5/s, burst: 5}\n"
                  "costs:\n"
                  "  - {method: GTE, path: /x}\n"
                  "  - {path: x, cost: 1}\n"
                  "  - {path: /a*b, cost: 1}\n"
                  "rules:\n"
                  "  - name: a\n"
                  "    limits:\n"
                  "      - {policy: api, by: api_key}\n"
                  "      - {policy: nope, by: [ip, ip]}\n"
                  "      - {policy: api, by: [global, ip]}\n"
                  "      - {policy: api, by: cookie}\n"
                  "      - {by: ip}\n"
                  "  - name: a\n"
                  "    limits: []\n"
                  "  - path: /x\n",
                  "t.yaml:4: costs[0].method: unknown method \"GTE\" (did you mean GET?)",
                  "t.yaml:4: costs[0].cost: missing (what a matching request costs)",
                  "t.yaml:5: costs[1].path: cannot use \"x\": a path starts with / (or is * for "
                  "every path)",
                  "t.yaml:6: costs[2].path: cannot use \"/a*b\": * may only end a path (/api/* or "
                  "/api*)",
                  "t.yaml:10: rules[0].limits[0].by: api_key needs API keys: set "
                  "identity.api_keys.file",
                  "t.yaml:11: rules[0].limits[1].by[1]: \"ip\" is listed twice",
                  "t.yaml:11: rules[0].limits[1].policy: no policy or quota named \"nope\"",
                  "t.yaml:12: rules[0].limits[2].by: global is one key for everyone: use it alone",
                  "t.yaml:13: rules[0].limits[3].by: unknown key source \"cookie\" (expected "
                  "api_key, org, ip, route, header:NAME or global)",
                  "t.yaml:14: rules[0].limits[4].policy: missing (the policy or quota this limit "
                  "checks)",
                  "t.yaml:15: rules[1].name: duplicate rule name \"a\" (first at line 8)",
                  "t.yaml:17: rules[2].name: missing (every rule needs a name)",
                  "t.yaml:17: rules[2].limits: missing (the limits a matching request must pass)");
}

static void test_key_file_errors(void **state) {
    (void)state;
    char bad[64];
    snprintf(bad, sizeof bad, "/tmp/sluice-test-badkeys-XXXXXX");
    int fd = mkstemp(bad);
    assert_true(fd >= 0);
    const char text[] = "alice free\n"
                        "bob gold\n"
                        "alice free\n"
                        "carol free acme extra\n"
                        "dave free ac/me\n"
                        "\xc3\xa9ve free\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    char yaml[512], e1[256], e2[256], e3[256], e4[256], e5[256], e6[256];
    snprintf(yaml, sizeof yaml, "identity:\n  api_keys:\n    file: %s\ntiers:\n  free:\n  pro:\n",
             bad);
    snprintf(e1, sizeof e1,
             "t.yaml:3: identity.api_keys.file: %s:2: unknown tier \"gold\" (declared: free or "
             "pro)",
             bad);
    snprintf(e2, sizeof e2,
             "t.yaml:3: identity.api_keys.file: %s:4: too many fields (expected KEY [TIER [ORG]])",
             bad);
    snprintf(e3, sizeof e3,
             "t.yaml:3: identity.api_keys.file: %s:5: the organisation must be 1 to 64 of A-Z a-z "
             "0-9 _ . -",
             bad);
    snprintf(e4, sizeof e4,
             "t.yaml:3: identity.api_keys.file: %s:6: the key has a byte that is not printable "
             "ASCII at column 1",
             bad);
    expect_errors(yaml, e1, e2, e3, e4);
    /* duplicates are found once the lines are otherwise fine */
    fd = open(bad, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "alice\nbob\nalice pro\n", 20), 20);
    close(fd);
    snprintf(e5, sizeof e5,
             "t.yaml:3: identity.api_keys.file: %s:3: duplicate key (first at line 1)", bad);
    expect_errors(yaml, e5);
    unlink(bad);
    snprintf(e6, sizeof e6,
             "t.yaml:3: identity.api_keys.file: %s: cannot open: No such file or "
             "directory",
             bad);
    expect_errors(yaml, e6);
    /* not a regular file (a FIFO would hang a reload) */
    expect_errors("identity:\n  api_keys:\n    file: /dev/null\n",
                  "t.yaml:3: identity.api_keys.file: /dev/null: not a regular file");
}

static int tier_of(void *ctx, const char *name, size_t len, const char **names) {
    (void)ctx;
    *names = "free or pro";
    if (len == 4 && memcmp(name, "free", 4) == 0) return 0;
    if (len == 3 && memcmp(name, "pro", 3) == 0) return 1;
    return -1;
}

static void test_apikeys(void **state) {
    (void)state;
    sl__apikeys *k;
    const char text[] = "k1 free a.b-c_D\n\n# c\nk2\tpro\nk3 -\n  k4   \r\nk5#x free\n";
    assert_int_equal(sl__apikeys_parse(text, sizeof text - 1, tier_of, NULL, NULL, NULL, &k),
                     SL_EINVAL);
    assert_int_equal(sl__apikeys_parse(text, sizeof text - 12, tier_of, NULL, NULL, NULL, &k), 0);
    assert_int_equal(sl__apikeys_count(k), 4);
    const sl__apikey *e = sl__apikeys_find(k, "k1", 2);
    assert_non_null(e);
    assert_int_equal(e->tier, 0);
    assert_string_equal(e->org, "a.b-c_D");
    e = sl__apikeys_find(k, "k2", 2);
    assert_int_equal(e->tier, 1);
    assert_null(e->org);
    assert_int_equal(sl__apikeys_find(k, "k3", 2)->tier, -1);
    assert_non_null(sl__apikeys_find(k, "k4", 2));
    assert_null(sl__apikeys_find(k, "k", 1));
    assert_null(sl__apikeys_find(k, "k10", 3));
    assert_null(sl__apikeys_find(k, "", 0));
    sl__apikeys_release(k);
    /* many keys: every one found, none invented */
    size_t n = 20000;
    char *big = malloc(n * 16);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += (size_t)sprintf(big + o, "key-%zu pro\n", i);
    assert_int_equal(sl__apikeys_parse(big, o, tier_of, NULL, NULL, NULL, &k), 0);
    assert_int_equal(sl__apikeys_count(k), n);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        int len = snprintf(name, sizeof name, "key-%zu", i);
        assert_non_null(sl__apikeys_find(k, name, (size_t)len));
        len = snprintf(name, sizeof name, "key-%zu", i + n);
        assert_null(sl__apikeys_find(k, name, (size_t)len));
    }
    sl__apikeys_release(k);
    free(big);
    /* an empty file is an empty table: every key unknown */
    assert_int_equal(sl__apikeys_parse("", 0, NULL, NULL, NULL, NULL, &k), 0);
    assert_null(sl__apikeys_find(k, "x", 1));
    sl__apikeys_release(k);
}

static void test_calendar(void **state) {
    (void)state;
    static const struct {
        int64_t t, index, start, days;
    } cases[] = {
        {0, 0, 0, 31},
        {INT64_C(1706745600) * SEC, 649, INT64_C(1706745600), 29}, /* February 2024: leap */
        {INT64_C(1709251199) * SEC, 649, INT64_C(1706745600), 29},
        {INT64_C(1709251200) * SEC, 650, INT64_C(1709251200), 31},
        {FEB1, 673, INT64_C(1769904000), 28},
        {MAR1 - 1, 673, INT64_C(1769904000), 28},
        {INT64_C(951868800) * SEC, 362, INT64_C(951868800), 31}, /* March 2000 */
        {INT64_C(1796083200) * SEC + 5, 683, INT64_C(1796083200), 31},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t index, start, length;
        sl__calendar_month(cases[i].t, &index, &start, &length);
        assert_int_equal(index, cases[i].index);
        assert_int_equal(start, cases[i].start * SEC);
        assert_int_equal(length, cases[i].days * DAY);
    }
}

/* ---- decisions ------------------------------------------------------------------ */

/* The seed's middleware: 5 per second, bursts of 3, keys alice and bob. */
static const char demo[] = "identity:\n"
                           "  api_keys: {file: KEYS}\n"
                           "tiers: {free: , pro: , admin: }\n"
                           "policies:\n"
                           "  - {name: per_key, algorithm: token_bucket, rate: 5/s, burst: 3}\n"
                           "rules:\n"
                           "  - name: all\n"
                           "    limits: [{policy: per_key, by: api_key}]\n";

static void test_seed_demo(void **state) {
    (void)state;
    load(demo, T0);
    for (int i = 0; i < 3; i++) assert_int_equal(decide("GET", "/", NULL, "alice", T0, NULL), 0);
    assert_int_equal(decide("GET", "/", NULL, "alice", T0, NULL), SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "per_key");
    assert_int_equal(ans.items[0].decision.retry_after, 200 * MS); /* Retry-After: 1 */
    assert_int_equal(decide("GET", "/", NULL, "bob", T0, NULL), SL__VERDICT_ALLOW);
    assert_int_equal(keys_in("per_key"), 2);
    assert_int_equal(decide("GET", "/", NULL, "x7f3-made-up", T0, NULL), SL__VERDICT_UNAUTHORIZED);
    assert_string_equal(ans.reason, "unknown_key");
    assert_int_equal(ans.n, 0);
    /* a flood of random keys: 401 each, and not one limiter state more */
    char key[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof key, "%08x%08x", (unsigned)rand(), (unsigned)i);
        assert_int_equal(decide("GET", "/", NULL, key, T0, NULL), SL__VERDICT_UNAUTHORIZED);
    }
    assert_int_equal(keys_in("per_key"), 2);
    /* no key at all: nothing to count by (not required) */
    assert_int_equal(decide("GET", "/", NULL, NULL, T0, NULL), SL__VERDICT_ALLOW);
    assert_int_equal(ans.n, 0);
    /* alice passes again 200 ms later */
    assert_int_equal(decide("GET", "/", NULL, "alice", T0 + 200 * MS, NULL), SL__VERDICT_ALLOW);
    unload();
}

/* Issue 12 item 20: the per-IP fence is in front of the key check. An
 * unknown key (or none, where one is required) is decided as an anonymous
 * request first: the fence is charged, and refuses once it is exhausted
 * (403), and only a request it let through is refused for its key (401). No
 * state is ever keyed by a made-up key. */
static void test_fence_before_key_check(void **state) {
    (void)state;
    load("identity:\n"
         "  api_keys: {file: KEYS}\n"
         "tiers: {free: , pro: , admin: }\n"
         "exempt: {tiers: [admin]}\n"
         "policies:\n"
         "  - {name: per_ip, algorithm: token_bucket, rate: 1/h, burst: 200}\n"
         "  - {name: per_key, algorithm: token_bucket, rate: 1/h, burst: 1000}\n"
         "rules:\n"
         "  - name: fence\n"
         "    limits: [{policy: per_ip, by: ip, cost: 1}]\n"
         "  - name: api\n"
         "    path: /api/*\n"
         "    limits: [{policy: per_key, by: api_key}]\n",
         T0);
    char key[32];
    for (int i = 0; i < 12000; i++) {
        snprintf(key, sizeof key, "%08x%08x", (unsigned)rand(), (unsigned)i);
        sl__verdict v = decide("GET", "/api/x", "198.51.100.7", key, T0 + i * MS, NULL);
        assert_int_equal(ans.key_refused, SL__KEY_UNKNOWN);
        if (i < 200) {
            assert_int_equal(v, SL__VERDICT_UNAUTHORIZED);
            assert_string_equal(ans.reason, "unknown_key");
            assert_int_equal(ans.n, 1); /* the fence alone: per_key needs a key */
            assert_true(item("per_ip")->decision.allowed);
        } else {
            assert_int_equal(v, SL__VERDICT_LIMITED);
            assert_string_equal(refused_by(), "per_ip");
            assert_true(ans.items[ans.refused].decision.retry_after > 0);
        }
    }
    sl__policy *fence = sl__policy_find(set, "per_ip", 6);
    assert_int_equal(atomic_load(&fence->lim.allowed), 200);
    assert_int_equal(atomic_load(&fence->lim.limited), 11800);
    assert_int_equal(keys_in("per_ip"), 1);
    assert_int_equal(keys_in("per_key"), 0);
    /* a valid key from the fenced address is fenced like any other request */
    assert_int_equal(decide("GET", "/api/x", "198.51.100.7", "alice", T0 + 13 * SEC, NULL),
                     SL__VERDICT_LIMITED);
    assert_int_equal(ans.key_refused, SL__KEY_ACCEPTED);
    /* another address has a fence of its own; exempt tiers skip everything */
    assert_int_equal(decide("GET", "/api/x", "198.51.100.8", "alice", T0 + 13 * SEC, NULL), 0);
    assert_int_equal(decide("GET", "/api/x", "198.51.100.8", "nope", T0 + 13 * SEC, NULL),
                     SL__VERDICT_UNAUTHORIZED);
    assert_int_equal(decide("GET", "/api/x", "198.51.100.7", "root", T0 + 13 * SEC, NULL),
                     SL__VERDICT_EXEMPT);
    /* no limit applies without a key (no fence on this path): the 401 at once */
    load("identity:\n"
         "  api_keys: {file: KEYS, required: true}\n"
         "tiers: {free: , pro: , admin: }\n"
         "policies:\n"
         "  - {name: per_ip, algorithm: token_bucket, rate: 1/h, burst: 2}\n"
         "rules:\n"
         "  - name: fence\n"
         "    path: /fenced\n"
         "    limits: [{policy: per_ip, by: ip}]\n",
         T0);
    assert_int_equal(decide("GET", "/open", "198.51.100.7", "nope", T0, NULL),
                     SL__VERDICT_UNAUTHORIZED);
    assert_int_equal(ans.n, 0);
    /* a missing key, where one is required, passes the fence first as well */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(decide("GET", "/fenced", "198.51.100.7", NULL, T0, NULL),
                         SL__VERDICT_UNAUTHORIZED);
        assert_string_equal(ans.reason, "missing_key");
        assert_int_equal(ans.key_refused, SL__KEY_MISSING);
    }
    assert_int_equal(decide("GET", "/fenced", "198.51.100.7", NULL, T0, NULL), SL__VERDICT_LIMITED);
    assert_int_equal(ans.key_refused, SL__KEY_MISSING);
    unload();
}

static const char layered[] =
    "identity:\n"
    "  trusted_proxies: [10.0.0.0/8]\n"
    "  api_keys: {file: KEYS}\n"
    "tiers:\n"
    "  free:\n"
    "  pro:\n"
    "    per_key: {rate: 50/s, burst: 10}\n"
    "    monthly: {limit: 6}\n"
    "  admin:\n"
    "policies:\n"
    "  - {name: per_ip, algorithm: token_bucket, rate: 1/s, burst: 4}\n"
    "  - {name: per_key, algorithm: token_bucket, rate: 1/s, burst: 2}\n"
    "  - {name: per_org, algorithm: fixed_window, rate: 3/m}\n"
    "  - {name: points, algorithm: token_bucket, rate: 100/s, burst: 100}\n"
    "  - {name: global, algorithm: fixed_window, rate: 1000/s}\n"
    "quotas:\n"
    "  - {name: monthly, limit: 3, per: month}\n"
    "costs:\n"
    "  - {method: POST, path: /exports, cost: 50}\n"
    "  - {method: GET, path: /search, cost: 5}\n"
    "exempt:\n"
    "  paths: [/healthz]\n"
    "  cidrs: [192.168.0.0/16]\n"
    "  tiers: [admin]\n"
    "rules:\n"
    "  - name: fence\n"
    "    limits: [{policy: per_ip, by: ip, cost: 1}]\n"
    "  - name: api\n"
    "    path: /api/*\n"
    "    limits:\n"
    "      - {policy: per_key, by: api_key, cost: 1}\n"
    "      - {policy: per_org, by: org, cost: 1}\n"
    "      - {policy: global, by: global, cost: 1}\n"
    "  - name: billing\n"
    "    path: /billed/*\n"
    "    limits:\n"
    "      - {policy: monthly, by: api_key, cost: 1}\n"
    "  - name: costly\n"
    "    limits: [{policy: points, by: api_key}]\n";

static int64_t remaining(const char *policy) {
    const sl__policy_item *it = item(policy);
    assert_true(it->decided);
    return it->decision.remaining;
}

static void test_layered(void **state) {
    (void)state;
    load(layered, T0);
    /* alice: per_key has 2, per_ip 4 */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.1", "alice", T0, NULL), 0);
    assert_int_equal(ans.n, 5); /* per_ip, per_key, per_org, global, points */
    assert_int_equal(remaining("per_ip"), 3);
    assert_int_equal(decide("GET", "/api/a", "198.51.100.1", "alice", T0, NULL), 0);
    assert_int_equal(decide("GET", "/api/a", "198.51.100.1", "alice", T0, NULL),
                     SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "per_key");
    /* the refusal charged nothing: per_ip still has 2 (4 - 2), global 998 */
    assert_int_equal(remaining("per_ip"), 2);
    assert_int_equal(remaining("global"), 998);
    /* bob shares the IP: per_ip is the fence, bob's own key is fresh */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.1", "bob", T0, NULL), 0);
    assert_int_equal(decide("GET", "/api/a", "198.51.100.1", "bob", T0, NULL), 0);
    assert_int_equal(decide("GET", "/api/a", "198.51.100.1", "bob", T0, NULL), SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "per_ip");
    /* per organisation: alice and carol are acme; 3 per minute between them */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.2", "carol", T0, NULL), 0);
    assert_int_equal(remaining("per_org"), 0); /* alice 2 + carol 1 */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.2", "carol", T0, NULL),
                     SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "per_org");
    /* dave has an org but no tier; erin has neither: org limits skip her */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.3", "erin", T0, NULL), 0);
    for (size_t i = 0; i < ans.n; i++)
        assert_string_not_equal(ans.items[i].policy->cfg.name, "per_org");
    /* no key: only the limits by ip and global apply */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.4", NULL, T0, NULL), 0);
    assert_int_equal(ans.n, 2);
    /* counters: every limit that said no counts as limited (bob's third
     * request was over per_ip, which refused first, and over per_key too) */
    sl__policy *pk = sl__policy_find(set, "per_key", 7), *pi = sl__policy_find(set, "per_ip", 6);
    assert_int_equal(atomic_load(&pk->lim.limited), 2);
    assert_int_equal(atomic_load(&pi->lim.limited), 1);
    unload();
}

static void test_tiers_and_costs(void **state) {
    (void)state;
    load(layered, T0);
    /* carol is pro: per_key:pro has 10 */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.9", "carol", T0, NULL), 0);
    assert_int_equal(item("per_key:pro")->decision.remaining, 9);
    assert_int_equal(item("per_key:pro")->decision.limit, 10);
    /* costs: POST /exports takes 50 points, so two pass and the third waits
     * half a second; the fence (fixed cost 1) is charged 1 each time */
    int64_t t = T0;
    assert_int_equal(decide("POST", "/exports", "198.51.100.10", "dave", t, NULL), 0);
    assert_int_equal(ans.cost, 50);
    assert_int_equal(remaining("points"), 50);
    assert_int_equal(remaining("per_ip"), 3);
    assert_int_equal(decide("POST", "/exports", "198.51.100.10", "dave", t, NULL), 0);
    assert_int_equal(decide("POST", "/exports", "198.51.100.10", "dave", t, NULL),
                     SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "points");
    assert_int_equal(item("points")->decision.retry_after, 500 * MS);
    /* GET /search costs 5; the method matters: POST /search costs 1 */
    assert_int_equal(decide("GET", "/search", "198.51.100.11", "bob", t, NULL), 0);
    assert_int_equal(remaining("points"), 95);
    assert_int_equal(decide("POST", "/search", "198.51.100.11", "bob", t, NULL), 0);
    assert_int_equal(remaining("points"), 94);
    /* normalized paths cannot dodge a cost */
    assert_int_equal(decide("POST", "//exports/.", "198.51.100.12", "erin", t, NULL), 0);
    assert_int_equal(ans.cost, 1); /* "/exports/" is another path */
    assert_int_equal(decide("POST", "/x/../%65xports?q=1", "198.51.100.12", "erin", t, NULL), 0);
    assert_int_equal(ans.cost, 50);
    unload();
}

static void test_month_quota(void **state) {
    (void)state;
    /* 3 per calendar month; February 2026 has 28 days */
    int64_t t = MAR1 - 10 * SEC;
    load(layered, t);
    for (int i = 0; i < 3; i++)
        assert_int_equal(decide("GET", "/billed/x", "198.51.100.20", "bob", t, NULL), 0);
    assert_int_equal(remaining("monthly"), 0);
    assert_int_equal(decide("GET", "/billed/x", "198.51.100.20", "bob", t, NULL),
                     SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "monthly");
    /* exactly until 1 March 00:00 UTC, not 31 days after 1 February */
    assert_int_equal(item("monthly")->decision.retry_after, 10 * SEC);
    assert_int_equal(item("monthly")->decision.reset_after, 10 * SEC);
    /* the quota refused: the points bucket was not charged (100 - 3) */
    assert_int_equal(remaining("points"), 97);
    uint64_t q, w;
    sl__policy_quota(item("monthly")->policy, t, &q, &w);
    assert_int_equal(q, 3);
    assert_int_equal(w, 28 * 86400);
    assert_int_equal(decide("GET", "/billed/x", "198.51.100.20", "bob", MAR1 - 1, NULL),
                     SL__VERDICT_LIMITED);
    assert_int_equal(decide("GET", "/billed/x", "198.51.100.20", "bob", MAR1, NULL), 0);
    assert_int_equal(remaining("monthly"), 2);
    /* March has 31 days: the reset is 31 days away */
    assert_int_equal(item("monthly")->decision.reset_after, 31 * DAY);
    sl__policy_quota(item("monthly")->policy, MAR1, &q, &w);
    assert_int_equal(w, 31 * 86400);
    /* pro has 6 a month (the tier's limit) */
    for (int i = 0; i < 6; i++) { /* from several addresses: the per_ip fence has 4 */
        char ip[32];
        snprintf(ip, sizeof ip, "198.51.100.%d", 100 + i);
        assert_int_equal(decide("GET", "/billed/x", ip, "carol", MAR1, NULL), 0);
    }
    assert_int_equal(decide("GET", "/billed/x", "198.51.100.21", "carol", MAR1, NULL),
                     SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "monthly:pro");
    /* a refused rate limit does not use up the quota: erin empties points */
    assert_int_equal(decide("POST", "/billed/exports", "198.51.100.22", "erin", MAR1, NULL), 0);
    assert_int_equal(remaining("monthly"), 2);
    /* the same policy checked on its own (/v1/check, SL.CHECK) uses the calendar */
    sl__policy *m = sl__policy_find(set, "monthly", 7);
    sl_decision d;
    bool sh;
    for (int i = 0; i < 4; i++)
        assert_int_equal(policy_check(m, "z", 1, 1, MAR1 + DAY, &d, &sh), SL_OK);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 30 * DAY);
    unload();
}

static void test_exemptions(void **state) {
    (void)state;
    load(layered, T0);
    assert_int_equal(decide("GET", "/healthz", NULL, NULL, T0, NULL), SL__VERDICT_EXEMPT);
    assert_string_equal(ans.reason, "path");
    /* exempt paths need no key, even a bad one */
    assert_int_equal(decide("GET", "/healthz", NULL, "nope", T0, NULL), SL__VERDICT_EXEMPT);
    assert_int_equal(decide("GET", "/api/x", "192.168.7.7", "nope", T0, NULL), SL__VERDICT_EXEMPT);
    assert_string_equal(ans.reason, "cidr");
    /* an internal address behind a trusted proxy */
    assert_int_equal(
        decide("GET", "/api/x", "10.0.0.5", NULL, T0, "X-Forwarded-For", "192.168.1.1", NULL),
        SL__VERDICT_EXEMPT);
    assert_int_equal(decide("GET", "/api/x", "198.51.100.30", "root", T0, NULL),
                     SL__VERDICT_EXEMPT);
    assert_string_equal(ans.reason, "tier");
    assert_int_equal(keys_in("per_ip"), 0);
    unload();
}

static void test_shadow(void **state) {
    (void)state;
    const char text[] = "policies:\n"
                        "  - {name: a, algorithm: fixed_window, rate: 1/m}\n"
                        "  - {name: b, algorithm: fixed_window, rate: 2/m}\n"
                        "rules:\n"
                        "  - name: enforced\n"
                        "    path: /e\n"
                        "    limits: [{policy: b, by: ip}]\n"
                        "  - name: trial\n"
                        "    shadow: true\n"
                        "    limits: [{policy: a, by: ip}, {policy: b, by: ip}]\n";
    load(text, T0);
    /* only the shadow rule: a refuses from the 2nd request on, never enforced */
    for (int i = 0; i < 3; i++)
        assert_int_equal(decide("GET", "/x", "198.51.100.40", NULL, T0, NULL), 0);
    assert_true(item("a")->shadowed);
    sl__policy *a = sl__policy_find(set, "a", 1), *b = sl__policy_find(set, "b", 1);
    assert_int_equal(atomic_load(&a->lim.shadow_limited), 2);
    assert_int_equal(atomic_load(&a->lim.limited), 0);
    /* the shadow group is all-or-nothing too: b was charged once (the first
     * request, when a still passed) */
    assert_int_equal(decide("GET", "/e", "198.51.100.41", NULL, T0, NULL), 0);
    /* b appears in both rules for /e: counted once, enforced wins */
    assert_int_equal(ans.n, 2);
    assert_false(item("b")->shadow);
    assert_int_equal(decide("GET", "/e", "198.51.100.41", NULL, T0, NULL), 0);
    assert_int_equal(decide("GET", "/e", "198.51.100.41", NULL, T0, NULL), SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "b");
    assert_int_equal(atomic_load(&b->lim.limited), 1);
    unload();
    /* global shadow: every policy decides and counts, nothing refuses */
    char g[sizeof text + 16];
    snprintf(g, sizeof g, "%sshadow: true\n", text);
    load(g, T0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(decide("GET", "/e", "198.51.100.42", NULL, T0, NULL), 0);
    /* all four are shadow now: a refuses from the second on, and the group
     * (a and b) charges nothing then, so b never fills up */
    a = sl__policy_find(set, "a", 1);
    b = sl__policy_find(set, "b", 1);
    assert_int_equal(atomic_load(&a->lim.shadow_limited), 3);
    assert_int_equal(atomic_load(&a->lim.limited), 0);
    assert_int_equal(atomic_load(&b->lim.shadow_limited), 0);
    /* and /v1/check's path too; a cost that can never pass is a shadow
     * refusal like any other (the engine's one rule; the memory path used
     * to answer SL_ECOST where the Redis path allowed) */
    sl_decision d;
    bool sh;
    assert_int_equal(policy_check(b, "k", 1, 3, T0, &d, &sh), SL_OK);
    assert_true(d.allowed && sh);
    assert_int_equal(policy_check(b, "k", 1, 2, T0, &d, &sh), SL_OK);
    assert_int_equal(policy_check(b, "k", 1, 1, T0, &d, &sh), SL_OK);
    assert_true(d.allowed && sh);
    unload();
}

static void test_addresses(void **state) {
    (void)state;
    const char text[] = "identity:\n"
                        "  trusted_proxies: [10.0.0.0/8]\n"
                        "policies:\n"
                        "  - {name: ip, algorithm: fixed_window, rate: 2/m}\n"
                        "rules:\n"
                        "  - name: all\n"
                        "    limits: [{policy: ip, by: ip}]\n";
    load(text, T0);
    /* one /64: the second address of the same home network is the same client */
    assert_int_equal(decide("GET", "/", "2001:db8:1:2::a", NULL, T0, NULL), 0);
    assert_int_equal(decide("GET", "/", "2001:db8:1:2:ffff::b", NULL, T0, NULL), 0);
    assert_int_equal(decide("GET", "/", "2001:db8:1:2::c", NULL, T0, NULL), SL__VERDICT_LIMITED);
    assert_int_equal(decide("GET", "/", "2001:db8:1:3::a", NULL, T0, NULL), 0);
    /* a spoofed X-Forwarded-For from an untrusted client is ignored */
    for (int i = 0; i < 2; i++) {
        char fake[32];
        snprintf(fake, sizeof fake, "203.0.113.%d", i);
        assert_int_equal(
            decide("GET", "/", "198.51.100.50", NULL, T0, "X-Forwarded-For", fake, NULL), 0);
    }
    assert_int_equal(
        decide("GET", "/", "198.51.100.50", NULL, T0, "X-Forwarded-For", "203.0.113.99", NULL),
        SL__VERDICT_LIMITED);
    /* through a trusted proxy the forwarded client counts; its fake entry does not */
    assert_int_equal(
        decide("GET", "/", "10.0.0.1", NULL, T0, "X-Forwarded-For", "6.6.6.6, 198.51.100.51", NULL),
        0);
    assert_int_equal(
        decide("GET", "/", "10.0.0.2", NULL, T0, "X-Forwarded-For", "7.7.7.7, 198.51.100.51", NULL),
        0);
    assert_int_equal(
        decide("GET", "/", "10.0.0.2", NULL, T0, "X-Forwarded-For", "8.8.8.8, 198.51.100.51", NULL),
        SL__VERDICT_LIMITED);
    char ip[SL__ADDR_FORMAT_MAX];
    sl__addr_format(&ans.client, ip);
    assert_string_equal(ip, "198.51.100.51");
    /* an IPv4-mapped address is the IPv4 client */
    assert_int_equal(decide("GET", "/", "::ffff:198.51.100.51", NULL, T0, NULL),
                     SL__VERDICT_LIMITED);
    /* no address where one is needed; a malformed one */
    assert_int_equal(decide("GET", "/", NULL, NULL, T0, NULL), SL__VERDICT_BAD_REQUEST);
    assert_string_equal(ans.reason, "missing_client_address");
    assert_int_equal(decide("GET", "/", "300.1.1.1", NULL, T0, NULL), SL__VERDICT_BAD_REQUEST);
    assert_string_equal(ans.reason, "bad_client_address");
    assert_int_equal(decide("GET", NULL, "1.1.1.1", NULL, T0, NULL), SL__VERDICT_BAD_REQUEST);
    assert_string_equal(ans.reason, "missing_uri");
    assert_int_equal(decide(NULL, "/", "1.1.1.1", NULL, T0, NULL), SL__VERDICT_BAD_REQUEST);
    assert_int_equal(decide("GET", "/%zz", "1.1.1.1", NULL, T0, NULL), SL__VERDICT_BAD_REQUEST);
    assert_string_equal(ans.reason, "bad_uri");
    unload();
}

static void test_key_sources(void **state) {
    (void)state;
    const char text[] = "identity:\n"
                        "  api_keys: {file: KEYS, query: api_key, required: true}\n"
                        "tiers: {free: , pro: , admin: }\n"
                        "policies:\n"
                        "  - {name: k, algorithm: fixed_window, rate: 100/m}\n"
                        "  - {name: acct, algorithm: fixed_window, rate: 1/m}\n"
                        "rules:\n"
                        "  - name: all\n"
                        "    limits: [{policy: k, by: api_key}]\n"
                        "  - name: login\n"
                        "    method: POST\n"
                        "    path: /login\n"
                        "    limits: [{policy: acct, by: \"header:X-Account\"}]\n";
    load(text, T0);
    assert_int_equal(decide("GET", "/", NULL, NULL, T0, NULL), SL__VERDICT_UNAUTHORIZED);
    assert_string_equal(ans.reason, "missing_key");
    assert_int_equal(decide("GET", "/", NULL, NULL, T0, "Authorization", "Bearer alice", NULL), 0);
    assert_int_equal(decide("GET", "/", NULL, NULL, T0, "Authorization", "bearer  bob ", NULL), 0);
    assert_int_equal(decide("GET", "/", NULL, NULL, T0, "Authorization", "Basic YWxpY2U=", NULL),
                     SL__VERDICT_UNAUTHORIZED);
    assert_int_equal(decide("GET", "/?x=1&api_key=carol", NULL, NULL, T0, NULL), 0);
    assert_int_equal(ans.tier, 1);
    assert_string_equal(ans.tier_name, "pro");
    assert_int_equal(decide("GET", "/?api_key=%63arol", NULL, NULL, T0, NULL), 0);
    assert_int_equal(decide("GET", "/?api_key=mallory", NULL, NULL, T0, NULL),
                     SL__VERDICT_UNAUTHORIZED);
    /* the header source: one counter per account; absent header, no limit */
    assert_int_equal(decide("POST", "/login", NULL, "bob", T0, "X-Account", "u1", NULL), 0);
    assert_int_equal(decide("POST", "/login", NULL, "bob", T0, "X-Account", "u1", NULL),
                     SL__VERDICT_LIMITED);
    assert_string_equal(refused_by(), "acct");
    assert_int_equal(decide("POST", "/login", NULL, "bob", T0, "X-Account", "u2", NULL), 0);
    assert_int_equal(decide("POST", "/login", NULL, "bob", T0, NULL), 0);
    assert_int_equal(ans.n, 1);
    assert_int_equal(decide("GET", "/login", NULL, "bob", T0, "X-Account", "u1", NULL), 0);
    unload();
}

static void test_paths(void **state) {
    (void)state;
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"/", "/"},
        {"/a/b", "/a/b"},
        {"/a/b/", "/a/b/"},
        {"//a///b", "/a/b"},
        {"/a/./b/.", "/a/b/"},
        {"/a/b/../c", "/a/c"},
        {"/a/b/..", "/a/"},
        {"/../../a", "/a"},
        {"/%61%2fb?x=%zz", "/a/b"},
        {"/a?b/../c#d", "/a"},
        {"http://example.com/a/b?q", "/a/b"},
        {"https://example.com", "/"},
        {"/caf\xc3\xa9", "/caf\xc3\xa9"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char out[64];
        const char *q;
        size_t ql;
        long n = sl__rules_normalize_path(ok[i].in, strlen(ok[i].in), out, sizeof out, &q, &ql);
        if (n < 0 || strcmp(out, ok[i].out) != 0)
            fail_msg("%s: got %s, wanted %s", ok[i].in, n < 0 ? "(error)" : out, ok[i].out);
    }
    const char *q;
    size_t ql;
    char out[16];
    assert_int_equal(sl__rules_normalize_path("/a?x=1&y#f", 10, out, sizeof out, &q, &ql), 2);
    assert_int_equal(ql, 5);
    assert_memory_equal(q, "x=1&y", 5);
    const char *bad[] = {
        "", "a/b", "/%", "/%4", "/%00", "/%0a", "/a b", "/\x01", "/aaaaaaaaaaaaaaaaaaaa"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (sl__rules_normalize_path(bad[i], strlen(bad[i]), out, sizeof out, &q, &ql) >= 0)
            fail_msg("accepted %s", bad[i]);
    size_t n;
    assert_null(sl__rules_bearer("Bearer", 6, &n));
    assert_null(sl__rules_bearer("Bearer a b", 10, &n));
    assert_string_equal(sl__rules_bearer("BEARER tok", 10, &n), "tok");
}

static void test_reload_keeps_state(void **state) {
    (void)state;
    load(layered, T0);
    assert_int_equal(decide("GET", "/api/a", "198.51.100.60", "alice", T0, NULL), 0);
    assert_int_equal(decide("GET", "/api/a", "198.51.100.60", "carol", T0, NULL), 0);
    sl__policy *ip = sl__policy_find(set, "per_ip", 6);
    /* the same config again: the same policies, the same state */
    load(layered, T0);
    assert_ptr_equal(sl__policy_find(set, "per_ip", 6), ip);
    assert_int_equal(decide("GET", "/api/a", "198.51.100.60", "carol", T0, NULL), 0);
    assert_int_equal(remaining("per_ip"), 1);
    assert_int_equal(remaining("per_key:pro"), 8);
    assert_int_equal(remaining("per_org"), 0);
    /* a new rate for pro: only that variant starts afresh */
    char changed[sizeof layered + 8];
    snprintf(changed, sizeof changed, "%s", layered);
    char *at = strstr(changed, "rate: 50/s, burst: 10");
    memcpy(at, "rate: 60/s, burst: 10", 21);
    sl__policy *pro = sl__policy_find(set, "per_key:pro", 11);
    sl__policy *key = sl__policy_find(set, "per_key", 7);
    load(changed, T0);
    assert_ptr_equal(sl__policy_find(set, "per_ip", 6), ip);
    assert_ptr_equal(sl__policy_find(set, "per_key", 7), key);
    assert_ptr_not_equal(sl__policy_find(set, "per_key:pro", 11), pro);
    /* the organisation's window (a minute) passes; pro's new table is fresh */
    assert_int_equal(decide("GET", "/api/a", "198.51.100.61", "carol", T0 + 60 * SEC, NULL), 0);
    assert_int_equal(remaining("per_key:pro"), 9);
    assert_int_equal(item("per_key:pro")->decision.limit, 10);
    unload();
}

/* ---- many threads ---------------------------------------------------------------- */

/* A monthly quota of 1000 and a rate limit, under 8 threads deciding layered
 * requests for one key and 2 more checking the quota alone (as /v1/check
 * does). Phase 1: the alone threads make 300 checks each while the layered
 * threads run, so the quota always has room (at most 600 + 259 used) and
 * every layered refusal is the rate's (burst 200 + 1/ms over 60 ms: at most
 * 259 pass of 4800); phase 2 (after a barrier): the alone threads race on
 * the quota until it is used up. Whatever the interleaving: exactly 1000
 * requests get through, never more, so none that the rate refused touched
 * the quota. */
static const char busy[] =
    "policies:\n"
    "  - {name: rate, algorithm: token_bucket, rate: 1/ms, burst: 200}\n"
    "quotas:\n"
    "  - {name: monthly, limit: 1000, per: month}\n"
    "rules:\n"
    "  - name: all\n"
    "    limits: [{policy: rate, by: global}, {policy: monthly, by: global}]\n";

#define BUSY_LAYERED 8
#define BUSY_STEPS   600

static atomic_int allowed_layered, allowed_alone;
static pthread_barrier_t busy_phase;

static void *busy_thread(void *arg) {
    intptr_t alone = (intptr_t)arg;
    sl__rules_answer *a = malloc(sizeof *a);
    const sl__rules *r = sl__policy_set_rules(set);
    sl__policy *m = sl__policy_find(set, "monthly", 7);
    sl__request req = {.method = "GET", .method_len = 3, .uri = "/", .uri_len = 1};
    int steps = alone ? BUSY_STEPS / 2 : BUSY_STEPS;
    for (int phase = 0; phase < 2; phase++) {
        for (int i = 0; i < steps; i++) {
            int64_t now = T0 + i * 100 * 1000; /* 0.1 ms apart: the rate refuses most */
            if (alone) {
                sl_decision d;
                bool sh;
                /* the key of "by: global": tag 'g', length 0 */
                if (policy_check(m, "g\0\0", 3, 1, now, &d, &sh) == SL_OK && d.allowed)
                    atomic_fetch_add(&allowed_alone, 1);
            } else if (phase == 0) {
                rules_decide(r, &req, now, a);
                if (a->verdict == SL__VERDICT_ALLOW) atomic_fetch_add(&allowed_layered, 1);
            }
        }
        pthread_barrier_wait(&busy_phase); /* phase 2: the layered threads are done */
        steps = alone ? BUSY_STEPS : 0;    /* 1200 checks: more than the quota can have left */
    }
    free(a);
    return NULL;
}

static void test_concurrent_quota(void **state) {
    (void)state;
    load(busy, T0);
    atomic_store(&allowed_layered, 0);
    atomic_store(&allowed_alone, 0);
    pthread_t th[BUSY_LAYERED + 2];
    assert_int_equal(pthread_barrier_init(&busy_phase, NULL, BUSY_LAYERED + 2), 0);
    for (intptr_t i = 0; i < BUSY_LAYERED + 2; i++)
        pthread_create(&th[i], NULL, busy_thread, (void *)(intptr_t)(i >= BUSY_LAYERED));
    for (int i = 0; i < BUSY_LAYERED + 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&busy_phase);
    int n_layered = atomic_load(&allowed_layered);
    assert_int_equal(n_layered + atomic_load(&allowed_alone), 1000);
    sl__policy *m = sl__policy_find(set, "monthly", 7);
    sl_decision d;
    bool sh;
    assert_int_equal(policy_check(m, "g\0\0", 3, 0, T0, &d, &sh), SL_OK);
    assert_int_equal(d.remaining, 0);
    /* the rate's bound, and every layered refusal was the rate's (the
       quota had room throughout phase 1) */
    assert_true(n_layered <= 200 + 60);
    sl__policy *rate = sl__policy_find(set, "rate", 4);
    assert_int_equal(atomic_load(&rate->lim.limited), BUSY_LAYERED * BUSY_STEPS - n_layered);
    unload();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_examples_load, fresh),
        cmocka_unit_test_teardown(test_config_keys, fresh),
        cmocka_unit_test_teardown(test_config_errors, fresh),
        cmocka_unit_test_teardown(test_key_file_errors, fresh),
        cmocka_unit_test_teardown(test_apikeys, fresh),
        cmocka_unit_test_teardown(test_calendar, fresh),
        cmocka_unit_test_teardown(test_seed_demo, fresh),
        cmocka_unit_test_teardown(test_fence_before_key_check, fresh),
        cmocka_unit_test_teardown(test_layered, fresh),
        cmocka_unit_test_teardown(test_tiers_and_costs, fresh),
        cmocka_unit_test_teardown(test_month_quota, fresh),
        cmocka_unit_test_teardown(test_exemptions, fresh),
        cmocka_unit_test_teardown(test_shadow, fresh),
        cmocka_unit_test_teardown(test_addresses, fresh),
        cmocka_unit_test_teardown(test_key_sources, fresh),
        cmocka_unit_test_teardown(test_paths, fresh),
        cmocka_unit_test_teardown(test_concurrent_quota, fresh),
        cmocka_unit_test_teardown(test_reload_keeps_state, fresh),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
