/* test_envoy_fixtures.c: envoyproxy/ratelimit's own rule files against
 * sluice's loader and matcher (issue 15). The fixtures are in
 * tests/peers/envoyproxy-ratelimit/: peer/ verbatim from the peer's
 * repository (peer/SOURCE names the commit), translated/ the configs of its
 * Go tests written as rule files.
 * - every file the peer accepts loads (each alone, and each directory the
 *   peer loads as one), every file it refuses is refused, for the reason it
 *   gives (its words, where sluice keeps them);
 * - wildcards anywhere in a value, several times (wildcard.yaml), matched as
 *   the peer matches them: each '*' any run of bytes, the whole value;
 *   (and against POSIX fnmatch on random patterns and values);
 * - share_threshold with those wildcards (share_threshold.yaml): one counter
 *   for every value under the pattern;
 * - quota_mode (per descriptor, and the config's top-level quota_mode) and
 *   descriptor metadata (kept as the JSON of a google.protobuf.Struct), as in
 *   the peer's example config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fnmatch.h>
#include <ftw.h>
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
#error "SLUICE_SOURCE_DIR must name the source tree (tests/envoy_fixtures.cmake)"
#endif

#define FIX  SLUICE_SOURCE_DIR "/tests/peers/envoyproxy-ratelimit/"
#define PEER FIX "peer/test/config/"
#define T0   (INT64_C(1704067210) * SEC) /* 10 s into a minute */

/* ---- helpers ----------------------------------------------------------------- */

static sl__config_errors errs;

static sl__domain_rules *load_ok(const char *path) {
    sl__domain_rules *r = NULL;
    errs.n = 0;
    if (sl__domain_rules_load(path, &r, &errs) != 0) {
        print_errors(&errs);
        fail_msg("the peer accepts %s; sluice refused it", path);
    }
    assert_non_null(r);
    return r;
}

/* path is refused, and one of its errors contains want. */
static void load_refused(const char *path, const char *want) {
    sl__domain_rules *r = (sl__domain_rules *)1;
    errs.n = 0;
    if (sl__domain_rules_load(path, &r, &errs) == 0) {
        sl__domain_rules_free(r);
        fail_msg("the peer refuses %s; sluice loaded it", path);
    }
    assert_null(r);
    for (size_t i = 0; i < errs.n && i < SL__CONFIG_MAX_ERRORS; i++)
        if (strstr(errs.msg[i], want)) return;
    print_errors(&errs);
    fail_msg("%s: no error says '%s'", path, want);
}

static sl__domain_set *set_of(const char *path) {
    return domain_set_ok(load_ok(path), NULL, T0);
}

/* One descriptor from "k=v,k2=v2" (at most 8 entries). */
typedef struct desc {
    sl__rls_descriptor d;
    sl__rls_entry e[8];
    char text[512];
} desc;

static const sl__rls_descriptor *parse_desc(desc *x, const char *spec) {
    memset(x, 0, sizeof *x);
    snprintf(x->text, sizeof x->text, "%s", spec);
    char *save = NULL;
    for (char *p = strtok_r(x->text, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(p, '=');
        assert_non_null(eq);
        *eq = '\0';
        sl__rls_entry *e = &x->e[x->d.nentries++];
        *e = (sl__rls_entry){
            .key = p, .key_len = strlen(p), .value = eq + 1, .value_len = strlen(eq + 1)};
    }
    x->d.entries = x->e;
    return &x->d;
}

/* The rule spec matches in domain, or NULL. */
static const char *rule_of(const sl__domain_set *s, const char *domain, const char *spec,
                           sl__domain_match *m) {
    desc x;
    sl__domain_match local;
    if (!m) m = &local;
    if (!sl__domain_set_match(s, domain, strlen(domain), parse_desc(&x, spec), m)) return NULL;
    return m->rule;
}

#define expect_rule(s, domain, spec, want)                                                         \
    do {                                                                                           \
        const char *got_ = rule_of(s, domain, spec, NULL);                                         \
        const char *want_ = (want);                                                                \
        if (!want_ ? got_ != NULL : !got_ || strcmp(got_, want_))                                  \
            fail_msg("%s: %s matched %s, expected %s", domain, spec, got_ ? got_ : "nothing",      \
                     want_ ? want_ : "nothing");                                                   \
    } while (0)

/* Decides one request of one descriptor; returns the status code. */
static int decide_one(sl__domain_set *s, const char *domain, const char *spec, int64_t now) {
    desc x;
    sl__rls_request q = {.domain = domain,
                         .domain_len = strlen(domain),
                         .descriptors = parse_desc(&x, spec),
                         .ndescriptors = 1};
    sl__rls_status st;
    int overall = 0;
    const char *message = NULL;
    assert_int_equal(domain_decide(s, &q, now, &st, &overall, &message), SL_OK);
    return st.code;
}

/* A directory of links to the given fixture files (loaded as one, as the
 * peer loads its runtime directory); removed by rm_dir. */
static char *dir_of(const char *const *files, size_t n) {
    static char tmpl[64];
    snprintf(tmpl, sizeof tmpl, "/tmp/sluice-fixtures-XXXXXX");
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    for (size_t i = 0; i < n; i++) {
        char link[256], target[512];
        snprintf(link, sizeof link, "%s/%zu.yaml", dir, i);
        snprintf(target, sizeof target, "%s", files[i]);
        assert_int_equal(symlink(target, link), 0);
    }
    return dir;
}

static void rm_dir(char *dir, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char link[256];
        snprintf(link, sizeof link, "%s/%zu.yaml", dir, i);
        unlink(link);
    }
    rmdir(dir);
}

/* ---- every fixture: accepted or refused as the peer does ----------------------------- */

/* The peer's verdict on every fixture file: refused (and why, in its
 * words), or accepted, alone or in a directory it loads as one. */
static const struct {
    const char *file, *why;
} refused[] = {
    {PEER "bad_limit_unit.yaml", "invalid rate limit unit 'foo'"},
    {PEER "bad_yaml.yaml", "bad_yaml.yaml:"},
    {PEER "duplicate_key.yaml", "duplicate descriptor composite key 'test-domain.key1_value1'"},
    {PEER "empty_domain.yaml", "config file cannot have empty domain"},
    {PEER "empty_key.yaml", "descriptor has empty key"},
    {PEER "misspelled_key.yaml", "ratelimit"},
    {PEER "misspelled_key2.yaml", "requestsperunit"},
    {PEER "non_map_list.yaml", "descriptors[0]"},
    {PEER "non_string_key.yaml", "0.25"},
    {PEER "replaces_empty.yaml", "should not have an empty replaces entry"},
    {PEER "replaces_self.yaml", "replaces should not contain name of same descriptor"},
    {PEER "unlimited_with_unit.yaml", "should not specify rate limit unit when unlimited"},
};

/* test/config/config_test.go loads these and expects no panic */
static const char *const accepted_files[] = {
    PEER "basic_config.yaml",
    PEER "duplicate_domain.yaml", /* alone: an empty domain is fine */
    PEER "merge_domain_key1.yaml",
    PEER "merge_domain_key2.yaml",
    PEER "metadata.yaml",
    PEER "shadowmode_config.yaml",
    PEER "share_threshold.yaml",
    PEER "wildcard.yaml",
    FIX "peer/test/integration/runtime/current/ratelimit/reload.yaml",
};

/* the directories the peer loads as one: its example's, its integration
 * tests' runtime, every translated Go-test config together, and the
 * derived files (the peer's own with what sluiced once refused removed) */
static const char *const accepted_dirs[] = {
    FIX "peer/examples/ratelimit/config",
    FIX "peer/test/integration/runtime/current/ratelimit/config",
    FIX "translated",
    FIX "derived",
};

static size_t walked, walked_refused;

/* One file found under FIX: checked by its verdict, and it must have one. */
static int check_found(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb;
    (void)ftw;
    size_t n = strlen(path);
    if (type != FTW_F || n < 5 || strcmp(path + n - 5, ".yaml") != 0) return 0;
    walked++;
    for (size_t i = 0; i < COUNT(refused); i++)
        if (strcmp(path, refused[i].file) == 0) {
            load_refused(path, refused[i].why);
            walked_refused++;
            return 0;
        }
    bool known = false;
    for (size_t i = 0; i < COUNT(accepted_files); i++)
        known |= strcmp(path, accepted_files[i]) == 0;
    for (size_t i = 0; i < COUNT(accepted_dirs); i++) {
        size_t d = strlen(accepted_dirs[i]);
        known |=
            strncmp(path, accepted_dirs[i], d) == 0 && path[d] == '/' && !strchr(path + d + 1, '/');
    }
    if (!known) fail_msg("%s: a fixture with no verdict (add it to a list of this test)", path);
    sl__domain_rules_free(load_ok(path)); /* each alone, too */
    return 0;
}

static void test_every_fixture_has_its_verdict(void **state) {
    (void)state;
    walked = walked_refused = 0;
    assert_int_equal(nftw(FIX, check_found, 16, FTW_PHYS), 0);
    assert_int_equal(walked_refused, COUNT(refused)); /* none of the lists names a missing file */
    assert_true(walked >= COUNT(refused) + COUNT(accepted_files) + COUNT(accepted_dirs));
}

static void test_accepted_fixtures_load(void **state) {
    (void)state;
    for (size_t i = 0; i < COUNT(accepted_files); i++)
        sl__domain_rules_free(load_ok(accepted_files[i]));
    sl__domain_rules_free(load_ok(FIX "peer/examples/ratelimit/config/config.yaml"));
    sl__domain_rules_free(load_ok(FIX "peer/examples/ratelimit/config/example.yaml"));
    for (size_t i = 0; i < COUNT(accepted_dirs); i++) {
        sl__domain_rules *r = load_ok(accepted_dirs[i]);
        assert_true(sl__domain_rules_domains(r) >= 2);
        sl__domain_rules_free(r);
    }
    /* and each of them compiles into a set */
    sl__domain_set_release(set_of(FIX "translated"));
    sl__domain_set_release(set_of(FIX "derived"));
    sl__domain_set_release(set_of(FIX "peer/examples/ratelimit/config"));
}

static void test_refused_fixtures_are_refused(void **state) {
    (void)state;
    for (size_t i = 0; i < COUNT(refused); i++) load_refused(refused[i].file, refused[i].why);
    /* TestDuplicateDomain: basic_config.yaml and duplicate_domain.yaml together */
    static const char *const dup[] = {PEER "basic_config.yaml", PEER "duplicate_domain.yaml"};
    char *dir = dir_of(dup, COUNT(dup));
    char path[128];
    snprintf(path, sizeof path, "%s", dir);
    load_refused(path, "duplicate domain 'test-domain' in config file");
    rm_dir(dir, COUNT(dup));
    /* the two merge_domain files together: merging needs MERGE_DOMAIN_CONFIG,
     * which sluice does not have (docs/envoy.md); without it the peer refuses */
    static const char *const merge[] = {PEER "merge_domain_key1.yaml",
                                        PEER "merge_domain_key2.yaml"};
    dir = dir_of(merge, COUNT(merge));
    snprintf(path, sizeof path, "%s", dir);
    load_refused(path, "duplicate domain 'test-domain' in config file");
    rm_dir(dir, COUNT(merge));
}

/* ---- wildcards anywhere ----------------------------------------------------------------- */

static void test_wildcards_anywhere(void **state) {
    (void)state;
    sl__domain_set *s = set_of(PEER "wildcard.yaml");
    const char *d = "test-domain";
    /* foo*: a prefix; the '*' may stand for nothing */
    expect_rule(s, d, "wild=foo1", "wild_foo*");
    expect_rule(s, d, "wild=foo", "wild_foo*");
    expect_rule(s, d, "wild=foo/bar*", "wild_foo*");
    expect_rule(s, d, "wild=fo", NULL);
    expect_rule(s, d, "wild=xfoo", NULL);
    /* no wildcard: the value itself; no value: any value */
    expect_rule(s, d, "noWild=foo", "noWild_foo");
    expect_rule(s, d, "noWild=foo1", NULL);
    expect_rule(s, d, "noVal=anything", "noVal");
    /* bar*b: starts with bar, ends with b, anything between */
    expect_rule(s, d, "midWild=barab", "midWild_bar*b");
    expect_rule(s, d, "midWild=barb", "midWild_bar*b");
    expect_rule(s, d, "midWild=barbab", "midWild_bar*b");
    expect_rule(s, d, "midWild=bar-anything-b", "midWild_bar*b");
    expect_rule(s, d, "midWild=bar", NULL); /* "bar" and "b" cannot overlap */
    expect_rule(s, d, "midWild=barba", NULL);
    expect_rule(s, d, "midWild=xbarb", NULL);
    /* foo*bar*baz: the three parts in order, the last at the end */
    expect_rule(s, d, "multiWild=foo1bar2baz", "multiWild_foo*bar*baz");
    expect_rule(s, d, "multiWild=foobarbaz", "multiWild_foo*bar*baz");
    expect_rule(s, d, "multiWild=foobazbarbaz", "multiWild_foo*bar*baz");
    expect_rule(s, d, "multiWild=foobarbazbaz", "multiWild_foo*bar*baz");
    expect_rule(s, d, "multiWild=foobarbaz3", NULL);
    expect_rule(s, d, "multiWild=foobaz", NULL);
    expect_rule(s, d, "multiWild=foobazbar", NULL);
    expect_rule(s, d, "multiWild=barfoobaz", NULL);
    /* nested: the wildcard of the second level */
    expect_rule(s, d, "nestedWild=val1,wild=goo2", "nestedWild_val1.wild_goo*");
    expect_rule(s, d, "nestedWild=val1,wild=goo", "nestedWild_val1.wild_goo*");
    expect_rule(s, d, "nestedWild=val1,wild=foo1", NULL);
    expect_rule(s, d, "nestedWild=val2,wild=goo2", NULL);
    /* a match applies (10 per minute on multiWild): one counter per value
     * when share_threshold is off */
    for (int i = 0; i < 10; i++)
        assert_int_equal(decide_one(s, d, "multiWild=foo1bar2baz", T0), SL__RLS_OK);
    assert_int_equal(decide_one(s, d, "multiWild=foo1bar2baz", T0), SL__RLS_OVER_LIMIT);
    assert_int_equal(decide_one(s, d, "multiWild=foobarbaz", T0), SL__RLS_OK);
    sl__domain_set_release(s);
}

static void test_wildcards_in_file_order_and_exact_first(void **state) {
    (void)state;
    static const char text[] =
        "domain: d\n"
        "descriptors:\n"
        "  - {key: k, value: 'a*z', rate_limit: {unit: minute, requests_per_unit: 1}}\n"
        "  - {key: k, value: 'a*', rate_limit: {unit: minute, requests_per_unit: 2}}\n"
        "  - {key: k, value: 'abz', rate_limit: {unit: minute, requests_per_unit: 3}}\n"
        "  - {key: k, value: '*', rate_limit: {unit: minute, requests_per_unit: 4}}\n"
        "  - {key: k, rate_limit: {unit: minute, requests_per_unit: 5}}\n"
        "  - {key: j, value: '**x**', rate_limit: {unit: minute, requests_per_unit: 6}}\n";
    sl__domain_rules *r = NULL;
    errs.n = 0;
    assert_int_equal(sl__domain_rules_parse(text, sizeof text - 1, "r.yaml", &r, &errs), 0);
    sl__domain_set *s = domain_set_ok(r, NULL, T0);
    expect_rule(s, "d", "k=abz", "k_abz"); /* the exact value first */
    expect_rule(s, "d", "k=aaz", "k_a*z"); /* then the wildcards, in file order */
    expect_rule(s, "d", "k=aaa", "k_a*");
    expect_rule(s, "d", "k=zzz", "k_*"); /* '*' alone: every value, the empty one too */
    expect_rule(s, "d", "k=", "k_*");
    expect_rule(s, "d", "j=x", "j_**x**"); /* runs of '*' are one */
    expect_rule(s, "d", "j=abxcd", "j_**x**");
    expect_rule(s, "d", "j=abcd", NULL);
    sl__domain_set_release(s);
}

/* Random patterns over {a, b, /, *} and values over {a, b, /}: a wildcard
 * rule matches exactly when POSIX fnmatch (no flags: '*' any run of
 * characters, '/' included) says the pattern matches the whole value. A
 * fixed seed, so the same cases every run. */
static void test_wildcards_against_fnmatch(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    static const char pat_chars[] = "ab/*", val_chars[] = "ab/";
    for (int round = 0; round < 300; round++) {
        char pat[16], text[256];
        size_t pn = 0;
        do {
            pn = 0;
            size_t len = 1 + (x >> 60) % 8;
            for (size_t i = 0; i < len; i++) {
                x = x * 6364136223846793005u + 1442695040888963407u;
                pat[pn++] = pat_chars[(x >> 33) % 4];
            }
            pat[pn] = '\0';
        } while (!strchr(pat, '*'));
        snprintf(text, sizeof text,
                 "domain: d\ndescriptors:\n  - {key: k, value: '%s', rate_limit: {unit: second, "
                 "requests_per_unit: 1}}\n",
                 pat);
        sl__domain_rules *r = NULL;
        errs.n = 0;
        assert_int_equal(sl__domain_rules_parse(text, strlen(text), "r.yaml", &r, &errs), 0);
        sl__domain_set *s = NULL;
        char err[128];
        assert_int_equal(sl__domain_set_build(r, 1u << 20, NULL, T0, &s, err, sizeof err), 0);
        sl__domain_rules_free(r);
        for (int v = 0; v < 40; v++) {
            char val[16], spec[32];
            x = x * 6364136223846793005u + 1442695040888963407u;
            size_t vn = (x >> 59) % 10;
            for (size_t i = 0; i < vn; i++) {
                x = x * 6364136223846793005u + 1442695040888963407u;
                val[i] = val_chars[(x >> 33) % 3];
            }
            val[vn] = '\0';
            snprintf(spec, sizeof spec, "k=%s", val);
            bool want = fnmatch(pat, val, 0) == 0;
            bool got = rule_of(s, "d", spec, NULL) != NULL;
            if (got != want)
                fail_msg("pattern '%s' value '%s': matched %d, fnmatch %d", pat, val, got, want);
        }
        sl__domain_set_release(s);
    }
}

/* ---- share_threshold with those wildcards ---------------------------------------------- */

static void test_share_threshold_fixture(void **state) {
    (void)state;
    sl__domain_set *s = set_of(PEER "share_threshold.yaml");
    const char *d = "test-domain";
    sl__domain_match m;
    static const struct {
        const char *spec, *rule;
        uint32_t rpu;
        bool shared;
    } cases[] = {
        {"files=files/a.pdf", "files_files/*", 100, true},
        {"nested=parent,files=nested/x", "nested_parent.files_nested/*", 200, true},
        {"files=top/1,files=nested/2", "files_top/*.files_nested/*", 300, true},
        {"route=api/v1,method=GET", "route_api/*.method", 60, true},
        {"service=svc/a,endpoint=e", "service_svc/*.endpoint", 80, true},
        {"path=path/1,file=file/2,type=t", "path_path/*.file_file/*.type", 120, true},
        {"user=user/1,resource=res/2,action=a", "user_user/*.resource_res/*.action", 150, true},
        {"file=test1", "file_test1", 50, false}, /* the explicit value wins */
        {"file=test2", "file_test*", 100, true},
        {"midpath=/api/users/v1", "midpath_/api*v1", 100, true},
        {"midpath=/apiv1", "midpath_/api*v1", 100, true},
        {"multiroute=svc1ep2rpc", "multiroute_svc*ep*rpc", 50, true},
        {"midroute=/api/x/v2", "midroute_/api*v2", 80, true},
        {"tenant=t1prod,resource=res-a-v2", "tenant_t*prod.resource_res*v2", 60, true},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        const char *got = rule_of(s, d, cases[i].spec, &m);
        if (!got || strcmp(got, cases[i].rule))
            fail_msg("%s matched %s, expected %s", cases[i].spec, got ? got : "nothing",
                     cases[i].rule);
        assert_int_equal(m.requests_per_unit, cases[i].rpu);
        assert_int_equal(m.shared, cases[i].shared);
    }
    expect_rule(s, d, "midpath=/api/v2", NULL);
    expect_rule(s, d, "multiroute=svc1rpc", NULL);
    expect_rule(s, d, "tenant=t1prod,resource=res-a-v3", NULL);
    /* svc*ep*rpc, 50 per minute: every value under the pattern counts on one
     * counter (the 51st refused, whatever its value) */
    char spec[64];
    for (int i = 0; i < 50; i++) {
        snprintf(spec, sizeof spec, "multiroute=svc%dep%drpc", i, i * 7);
        assert_int_equal(decide_one(s, d, spec, T0), SL__RLS_OK);
    }
    assert_int_equal(decide_one(s, d, "multiroute=svc-other-ep-rpc", T0), SL__RLS_OVER_LIMIT);
    /* t*prod / res*v2 nested, 60 per minute, both shared */
    for (int i = 0; i < 60; i++) {
        snprintf(spec, sizeof spec, "tenant=t%dprod,resource=res%dv2", i, i);
        assert_int_equal(decide_one(s, d, spec, T0), SL__RLS_OK);
    }
    assert_int_equal(decide_one(s, d, "tenant=tXprod,resource=resYv2", T0), SL__RLS_OVER_LIMIT);
    /* the explicit value has its own counter */
    assert_int_equal(decide_one(s, d, "file=test1", T0), SL__RLS_OK);
    sl__domain_set_release(s);

    /* share_threshold needs a '*' somewhere in the value */
    static const char bad[] = "domain: d\ndescriptors:\n  - key: a\n    value: b\n"
                              "    share_threshold: true\n";
    static const char good[] = "domain: d\ndescriptors:\n  - key: a\n    value: b*c\n"
                               "    share_threshold: true\n";
    sl__domain_rules *r = NULL;
    errs.n = 0;
    assert_int_equal(sl__domain_rules_parse(bad, sizeof bad - 1, "r.yaml", &r, &errs), -1);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.msg[0], "r.yaml:3: descriptors[0].share_threshold: share_threshold "
                                     "can only be used with wildcard values (containing '*')");
    errs.n = 0;
    assert_int_equal(sl__domain_rules_parse(good, sizeof good - 1, "r.yaml", &r, &errs), 0);
    sl__domain_rules_free(r);
}

/* ---- quota_mode and metadata ------------------------------------------------------------ */

static void test_quota_mode_and_metadata(void **state) {
    (void)state;
    sl__domain_set *s = set_of(FIX "peer/examples/ratelimit/config/example.yaml");
    sl__domain_match m;
    assert_non_null(rule_of(s, "rl", "service=service_1", &m));
    assert_true(m.quota_mode);
    assert_false(m.shadow);
    assert_int_equal(m.requests_per_unit, 1);
    assert_string_equal(m.metadata, "{\"service_with_quota\":{\"name\":\"service_1\"}}");
    assert_non_null(rule_of(s, "rl", "service=service_2", &m));
    assert_true(m.quota_mode);
    assert_string_equal(m.metadata, "{\"service_with_quota\":{\"name\":\"service_2\"}}");
    assert_non_null(rule_of(s, "rl", "foo=x,baz=shady", &m));
    assert_false(m.quota_mode);
    assert_true(m.shadow);
    assert_null(m.metadata);
    /* the config's top-level quota_mode: every limit */
    sl__domain_set_quota_mode(s, true);
    assert_non_null(rule_of(s, "rl", "foo=x,baz=shady", &m));
    assert_true(m.quota_mode);
    sl__domain_set_release(s);

    s = set_of(PEER "metadata.yaml");
    assert_non_null(rule_of(s, "test-domain", "key1=value1,subkey1=x", &m));
    assert_string_equal(m.metadata, "{\"name\":\"service_1\"}");
    assert_int_equal(m.requests_per_unit, 5);
    assert_non_null(rule_of(s, "test-domain", "key1=value1,subkey1=subvalue1", &m));
    assert_null(m.metadata);
    assert_non_null(rule_of(s, "test-domain", "key2=y", &m));
    assert_string_equal(m.metadata, "{\"service_with_quota\":{\"name\":\"service_2\"}}");
    sl__domain_set_release(s);
}

static void test_metadata_as_struct_json(void **state) {
    (void)state;
    static const char text[] = "domain: d\n"
                               "descriptors:\n"
                               "  - key: k\n"
                               "    rate_limit: {unit: second, requests_per_unit: 1}\n"
                               "    metadata:\n"
                               "      s: text\n"
                               "      q: \"42\"\n"
                               "      n: 42\n"
                               "      neg: -1.5e3\n"
                               "      t: true\n"
                               "      f: off\n"
                               "      z: ~\n"
                               "      l: [1, two, {three: 3}]\n"
                               "      esc: \"a\\\"b\\\\c\\td\"\n"
                               "      nested: {a: {b: {c: d}}}\n"
                               "      hex: 0x10\n"
                               "  - key: e\n"
                               "    metadata:\n";
    sl__domain_rules *r = NULL;
    errs.n = 0;
    if (sl__domain_rules_parse(text, sizeof text - 1, "r.yaml", &r, &errs) != 0)
        print_errors(&errs);
    assert_non_null(r);
    sl__domain_set *s = domain_set_ok(r, NULL, T0);
    sl__domain_match m;
    assert_non_null(rule_of(s, "d", "k=v", &m));
    assert_string_equal(m.metadata,
                        "{\"s\":\"text\",\"q\":\"42\",\"n\":42,\"neg\":-1.5e3,"
                        "\"t\":true,\"f\":false,\"z\":null,"
                        "\"l\":[1,\"two\",{\"three\":3}],\"esc\":\"a\\\"b\\\\c\\u0009d\","
                        "\"nested\":{\"a\":{\"b\":{\"c\":\"d\"}}},\"hex\":\"0x10\"}");
    sl__domain_set_release(s);

    /* metadata must be a mapping, as the peer's map */
    static const char bad[] = "domain: d\ndescriptors:\n  - key: k\n    metadata: [a]\n";
    r = (sl__domain_rules *)1;
    errs.n = 0;
    assert_int_equal(sl__domain_rules_parse(bad, sizeof bad - 1, "r.yaml", &r, &errs), -1);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.msg[0], "r.yaml:4: descriptors[0].metadata: "));
    assert_non_null(strstr(errs.msg[0], "a mapping"));
    /* a key twice in one mapping, as yaml.v2 refuses it */
    static const char dup[] = "domain: d\ndescriptors:\n  - key: k\n    metadata:\n      a: 1\n"
                              "      b: {a: 1}\n      a: 2\n";
    errs.n = 0;
    assert_int_equal(sl__domain_rules_parse(dup, sizeof dup - 1, "r.yaml", &r, &errs), -1);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.msg[0], "r.yaml:7: descriptors[0].metadata: duplicate metadata key "
                                     "'a' (first at line 5)");
    /* quota_mode is a boolean */
    static const char badq[] = "domain: d\ndescriptors:\n  - key: k\n    quota_mode: sometimes\n";
    errs.n = 0;
    assert_int_equal(sl__domain_rules_parse(badq, sizeof badq - 1, "r.yaml", &r, &errs), -1);
    assert_non_null(strstr(errs.msg[0], "r.yaml:4: descriptors[0].quota_mode: "));
}

static void test_config_quota_mode(void **state) {
    (void)state;
    static const char text[] = "quota_mode: true\n";
    sl__config *c = NULL;
    errs.n = 0;
    if (sl__config_parse(text, sizeof text - 1, "sluice.yaml", &c, &errs) != 0) print_errors(&errs);
    assert_non_null(c);
    assert_true(c->quota_mode);
    sl__config_free(c);
    static const char off[] = "listen: {http: 127.0.0.1:0}\n";
    errs.n = 0;
    assert_int_equal(sl__config_parse(off, sizeof off - 1, "sluice.yaml", &c, &errs), 0);
    assert_false(c->quota_mode);
    sl__config_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_fixture_has_its_verdict),
        cmocka_unit_test(test_accepted_fixtures_load),
        cmocka_unit_test(test_refused_fixtures_are_refused),
        cmocka_unit_test(test_wildcards_anywhere),
        cmocka_unit_test(test_wildcards_in_file_order_and_exact_first),
        cmocka_unit_test(test_wildcards_against_fnmatch),
        cmocka_unit_test(test_share_threshold_fixture),
        cmocka_unit_test(test_quota_mode_and_metadata),
        cmocka_unit_test(test_metadata_as_struct_json),
        cmocka_unit_test(test_config_quota_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
