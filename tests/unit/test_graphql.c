/* test_graphql.c: sluice/graphql.h. The seed's example under both schemes,
 * the lexical grammar's corners, fragments (spreads, inline, cycles, unknown
 * and duplicate names), variables for first/last, the bounds and their
 * errors with byte offsets, saturation on hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sluice/graphql.h"

static const char *SEED = "query {\n  viewer {\n    repositories(first: 50) {\n"
                          "      issues(first: 20) {\n        title\n      }\n    }\n  }\n}\n";

static int parse(const char *q, sl_gql_doc **d, sl_gql_error *e) {
    return sl_gql_parse(q, strlen(q), NULL, d, e);
}

/* Costs q under o; returns sl_gql_cost's code (parse must succeed). */
static int cost(const char *q, const sl_gql_options *o, sl_gql_cost_result *r, sl_gql_error *e) {
    sl_gql_doc *d = NULL;
    int rc = parse(q, &d, e);
    if (rc != 0) fail_msg("parse: %s at %zu", e->message, e->offset);
    rc = sl_gql_cost(d, o, r, e);
    sl_gql_free(d);
    return rc;
}

static void seed_objects(void **state) {
    (void)state;
    sl_gql_options o;
    sl_gql_options_init(&o);
    sl_gql_cost_result r;
    sl_gql_error e;
    assert_int_equal(cost(SEED, &o, &r, &e), 0);
    assert_int_equal(r.objects, 1051); /* 1 + 50 + 50 x 20 */
    assert_int_equal(r.requests, 51);  /* 1 + 50 */
    assert_int_equal(r.points, 1051);
    o.divisor = 100; /* scaled down: 1051 / 100 rounded up */
    assert_int_equal(cost(SEED, &o, &r, &e), 0);
    assert_int_equal(r.points, 11);
}

static void seed_github(void **state) {
    (void)state;
    sl_gql_options o;
    sl_gql_options_init(&o);
    o.scheme = SL_GQL_GITHUB;
    sl_gql_cost_result r;
    sl_gql_error e;
    assert_int_equal(cost(SEED, &o, &r, &e), 0);
    assert_int_equal(r.requests, 51);
    assert_int_equal(r.points, 1); /* 51 / 100 rounds to 1 */
    /* GitHub's documented example: 100 repositories x 50 issues x 60 labels */
    const char *gh = "query { viewer { login repositories(first: 100) { edges { node { id "
                     "issues(first: 50) { edges { node { id labels(first: 60) { edges { node "
                     "{ id name } } } } } } } } } } }";
    assert_int_equal(cost(gh, &o, &r, &e), 0);
    assert_int_equal(r.requests, 1 + 100 + 100 * 50); /* 5,101 */
    assert_int_equal(r.points, 51);
    assert_int_equal(r.objects, 1 + 100 + 100 * 50 + 100 * 50 * 60);
}

static void max_cost_refuses(void **state) {
    (void)state;
    sl_gql_options o;
    sl_gql_options_init(&o);
    o.max_cost = 1050;
    sl_gql_cost_result r;
    sl_gql_error e;
    assert_int_equal(cost(SEED, &o, &r, &e), SL_ECOST);
    assert_int_equal(e.kind, SL_GQL_ETOO_COSTLY);
    assert_int_equal(r.points, 1051);
    o.max_cost = 1051;
    assert_int_equal(cost(SEED, &o, &r, &e), 0);
}

static void default_page_and_connections(void **state) {
    (void)state;
    sl_gql_options o;
    sl_gql_options_init(&o);
    o.default_page = 10;
    sl_gql_cost_result r;
    sl_gql_error e;
    /* followers selects nodes: a connection without first, 10 objects */
    assert_int_equal(cost("{ user { followers { nodes { login } } } }", &o, &r, &e), 0);
    assert_int_equal(r.objects, 1 + 10);
    assert_int_equal(r.requests, 1);
    /* a named connection */
    const char *const conns[] = {"stars", NULL};
    o.connections = conns;
    assert_int_equal(cost("{ stars { name } }", &o, &r, &e), 0);
    assert_int_equal(r.objects, 10);
    /* last, and the larger of first and last */
    assert_int_equal(cost("{ a(last: 7, first: 3) { b } }", &o, &r, &e), 0);
    assert_int_equal(r.objects, 7);
    /* pageInfo comes once per connection, edges/node are its items */
    assert_int_equal(cost("{ v { r(first: 50) { totalCount pageInfo { endCursor } edges { cursor "
                          "node { i(first: 2) { pageInfo { x } nodes { t } } } } } } }",
                          &o, &r, &e),
                     0);
    assert_int_equal(r.objects, 1 + 50 + 1 + 100 + 50);
    assert_int_equal(r.requests, 1 + 50);
    /* first: null is the default page */
    assert_int_equal(cost("{ a(first: null) { b } }", &o, &r, &e), 0);
    assert_int_equal(r.objects, 10);
}

static void variables(void **state) {
    (void)state;
    sl_gql_options o;
    sl_gql_options_init(&o);
    o.default_page = 5;
    sl_gql_cost_result r;
    sl_gql_error e;
    const char *q = "query Q($n: Int = 30, $m: Int) { a(first: $n) { b(first: $m) { c } } }";
    assert_int_equal(cost(q, &o, &r, &e), 0);
    assert_int_equal(r.objects, 30 + 30 * 5); /* $n's default, $m unset: the default page */
    sl_gql_var v[] = {{"n", 2}, {"m", 3}};
    o.vars = v;
    o.nvars = 2;
    assert_int_equal(cost(q, &o, &r, &e), 0);
    assert_int_equal(r.objects, 2 + 2 * 3);
    v[0].value = -1;
    assert_int_equal(cost(q, &o, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EARGUMENT);
    assert_int_equal(cost("{ a(first: $x) { b } }", &o, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EVARIABLE);
    assert_int_equal(e.offset, 11);
    assert_int_equal(cost("{ a(first: -1) { b } }", &o, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EARGUMENT);
    assert_int_equal(cost("{ a(first: \"x\") { b } }", &o, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EARGUMENT);
}

static void fragments(void **state) {
    (void)state;
    sl_gql_cost_result r;
    sl_gql_error e;
    const char *q = "query { viewer { ...V } } fragment V on User { repositories(first: 50) "
                    "{ ... on Repo { issues(first: 20) { ...T } } } } fragment T on Issue { "
                    "title }";
    assert_int_equal(cost(q, NULL, &r, &e), 0);
    assert_int_equal(r.objects, 1051);
    /* a cycle parses (graphql-js parse accepts it) but is refused by the cost */
    q = "{ a { ...A } } fragment A on T { b { ...B } } fragment B on T { ...A }";
    assert_int_equal(cost(q, NULL, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_ECYCLE);
    q = "{ ...Self } fragment Self on Q { ...Self }";
    assert_int_equal(cost(q, NULL, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_ECYCLE);
    assert_int_equal(cost("{ ...Nope }", NULL, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EFRAGMENT);
    assert_int_equal(e.offset, 2);
    q = "{ ...A } fragment A on T { a } fragment A on T { b }";
    assert_int_equal(cost(q, NULL, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EFRAGMENT);
}

static void exponential_fragments_are_bounded(void **state) {
    (void)state;
    /* each fragment spreads the next twice: 2^40 selections once expanded */
    char q[8192];
    size_t n;
    n = (size_t)snprintf(q, sizeof q, "{ ...F0 }");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(q + n, sizeof q - n, " fragment F%d on T { x { ...F%d ...F%d } }", i,
                              i + 1, i + 1);
    snprintf(q + n, sizeof q - n, " fragment F40 on T { y }");
    sl_gql_cost_result r;
    sl_gql_error e;
    sl_gql_doc *d;
    assert_int_equal(parse(q, &d, &e), 0);
    assert_int_equal(sl_gql_cost(d, NULL, &r, &e), SL_EPARSE);
    assert_true(e.kind == SL_GQL_ENODES || e.kind == SL_GQL_EDEPTH);
    sl_gql_free(d);
}

static void many_variables_are_bounded(void **state) {
    (void)state;
    /* 2,000 variables, a fragment reading the last one spread 300 times: the
     * name lookups count against max_expanded (without that, 901 visits) */
    static char q[65536];
    size_t n = (size_t)snprintf(q, sizeof q, "query(");
    for (int i = 0; i < 2000; i++) n += (size_t)snprintf(q + n, sizeof q - n, "$v%d: Int ", i);
    n += (size_t)snprintf(q + n, sizeof q - n, ") { x {");
    for (int i = 0; i < 300; i++) n += (size_t)snprintf(q + n, sizeof q - n, " ...F");
    snprintf(q + n, sizeof q - n, " } } fragment F on T { a(first: $v1999) { b } }");
    sl_gql_limits l;
    sl_gql_limits_init(&l);
    l.max_expanded = 10000;
    sl_gql_doc *d;
    sl_gql_error e;
    sl_gql_cost_result r;
    assert_int_equal(sl_gql_parse(q, strlen(q), &l, &d, &e), 0);
    assert_int_equal(sl_gql_cost(d, NULL, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_ENODES);
    sl_gql_free(d);
    l.max_expanded = 1000000; /* with room, it costs: 1 + 300 x 100 */
    assert_int_equal(sl_gql_parse(q, strlen(q), &l, &d, &e), 0);
    assert_int_equal(sl_gql_cost(d, NULL, &r, &e), 0);
    assert_int_equal(r.objects, 1 + 300 * 100);
    sl_gql_free(d);
}

static void saturates(void **state) {
    (void)state;
    sl_gql_cost_result r;
    sl_gql_error e;
    const char *q = "{ a(first: 99999999999999999999999) { b(first: 4294967296) { c(first: "
                    "4294967296) { d } } } }";
    assert_int_equal(cost(q, NULL, &r, &e), 0);
    assert_true(r.objects == UINT64_MAX);
    assert_true(r.points == UINT64_MAX);
    sl_gql_options o;
    sl_gql_options_init(&o);
    o.max_cost = 1000000;
    assert_int_equal(cost(q, &o, &r, &e), SL_ECOST);
}

static void operations(void **state) {
    (void)state;
    sl_gql_cost_result r;
    sl_gql_error e;
    sl_gql_options o;
    sl_gql_options_init(&o);
    const char *q = "query A { x { y } } mutation B { z(first: 3) { w } }";
    assert_int_equal(cost(q, &o, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EOPERATION);
    o.operation = "B";
    assert_int_equal(cost(q, &o, &r, &e), 0);
    assert_int_equal(r.objects, 3);
    o.operation = "C";
    assert_int_equal(cost(q, &o, &r, &e), SL_EPARSE);
    assert_int_equal(cost("fragment F on T { a }", NULL, &r, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EOPERATION);
    /* leaves cost nothing, a query at least one point */
    assert_int_equal(cost("{ __typename }", NULL, &r, &e), 0);
    assert_int_equal(r.objects, 0);
    assert_int_equal(r.points, 1);
}

static void accept(const char *q) {
    sl_gql_doc *d = NULL;
    sl_gql_error e;
    int rc = parse(q, &d, &e);
    if (rc != 0) fail_msg("refused %s: %s at %zu", q, e.message, e.offset);
    sl_gql_free(d);
}

static void refuse(const char *q, size_t len, sl_gql_errkind kind, size_t off) {
    sl_gql_doc *d = NULL;
    sl_gql_error e;
    int rc = sl_gql_parse(q, len, NULL, &d, &e);
    if (rc == 0) fail_msg("accepted %s", q);
    assert_int_equal(rc, SL_EPARSE);
    assert_null(d);
    if (e.kind != kind || e.offset != off)
        fail_msg("%s: kind %d offset %zu (%s), wanted %d at %zu", q, e.kind, e.offset, e.message,
                 kind, off);
    assert_true(strlen(e.message) > 0);
}
#define REFUSE(q, off) refuse(q, sizeof q - 1, SL_GQL_ESYNTAX, off)

static void lexical(void **state) {
    (void)state;
    accept("{a}");
    accept("\xEF\xBB\xBF{a}");        /* BOM */
    accept("{a,,,b , c}# comment\n"); /* commas are whitespace */
    accept("{a(x: 0, y: -0, z: 1.5e-3, w: 2E+10, v: -1.0)}");
    accept("{a(s: \"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u{1F600} \\uD83D\\uDE00\")}");
    accept("{a(s: \"\"\"block \\\"\"\" \"\" \n line\"\"\")}");
    accept("{a(s: \"h\xC3\xA9llo \xF0\x9F\x98\x80\")} # \xE2\x82\xAC");
    accept("{a(e: ENUM, b: true, n: null, l: [1 [2] {x: 3}], o: {a: {b: [$v]}})}");
    accept("query($v: [Int!]! = [1], $w: In @d(a: 1)) @x { a: b(c: $v) @skip(if: true) }");
    accept("{ query mutation fragment on subscription }"); /* keywords are field names */
    accept("\"desc\" query Q { a } \"\"\"f\"\"\" fragment F on T { b }");
    accept("query ( \"d\" $a: Int) { a }");
    accept("subscription S { a ... { b } ... on T { c } ...F @d } fragment F on T { x }");
    REFUSE("", 0);
    REFUSE("   # only a comment", 19);
    REFUSE("{}", 1);         /* empty selection set */
    REFUSE("{a(x: 01)}", 7); /* digit after 0 */
    REFUSE("{a(x: 1.)}", 8);
    REFUSE("{a(x: .5)}", 6);
    REFUSE("{a(x: 1e)}", 8);
    REFUSE("{a(x: 1x)}", 7);
    REFUSE("{a(x: 1.2.3)}", 9);
    REFUSE("{a(x: -)}", 7);
    REFUSE("{a(x: \"abc)}", 12);   /* unterminated */
    REFUSE("{a(x: \"a\nb\")}", 8); /* newline in a string */
    REFUSE("{a(x: \"\\x\")}", 7);  /* bad escape */
    REFUSE("{a(x: \"\\u12G4\")}", 7);
    REFUSE("{a(x: \"\\uD800\")}", 7); /* lone surrogate */
    REFUSE("{a(x: \"\\u{}\")}", 7);
    REFUSE("{a(x: \"\\u{110000}\")}", 7);
    REFUSE("{a(x: \"\"\"abc)}", 14);
    REFUSE("{a(x: \"\xC3\")}", 7);         /* truncated UTF-8 */
    REFUSE("{a(x: \"\xED\xA0\x80\")}", 7); /* an encoded surrogate */
    REFUSE("{a(x: \"\xC0\xAF\")}", 7);     /* overlong */
    REFUSE("{a} # \xFF", 6);
    REFUSE("{a ..b}", 3);
    REFUSE("{a 'b'}", 3);
    REFUSE("{\xC3\xA9}", 1); /* names are ASCII */
    REFUSE("{a(x: $v)} extra", 11);
    REFUSE("query Q($v: Int = $w) { a }", 18); /* a variable in a constant */
    REFUSE("query Q($v: Int = $ 1) { a }", 18);
    REFUSE("fragment on on T { a }", 9);
    REFUSE("fragment F T { a }", 11);
    REFUSE("type T { a: Int }", 0); /* SDL */
    REFUSE("\"d\" { a }", 0);
    REFUSE("\"d\" quer { a }", 0); /* graphql-js: at the description */
    REFUSE("\"d\" { a }", 0);
    REFUSE("{a(x:)}", 5);
    REFUSE("{a()}", 3);
    REFUSE("query Q() { a }", 8);
    REFUSE("{a @}", 4);
    REFUSE("{ a: }", 5);
    REFUSE("{ a", 3);
    REFUSE("{ a & b }", 4);
    const char nul[] = "{a}\0";
    refuse(nul, sizeof nul - 1, SL_GQL_ESYNTAX, 3);
}

static void bounds(void **state) {
    (void)state;
    sl_gql_limits l;
    sl_gql_limits_init(&l);
    sl_gql_doc *d = NULL;
    sl_gql_error e;
    l.max_bytes = 8;
    assert_int_equal(sl_gql_parse("{ a { b } }", 11, &l, &d, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_ESIZE);
    sl_gql_limits_init(&l);
    l.max_depth = 3;
    assert_int_equal(sl_gql_parse("{a{b{c}}}", 9, &l, &d, &e), 0);
    sl_gql_free(d);
    assert_int_equal(sl_gql_parse("{a{b{c{d}}}}", 12, &l, &d, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EDEPTH);
    assert_int_equal(e.offset, 6);
    assert_int_equal(sl_gql_parse("{a(x: [[[[1]]]])}", 17, &l, &d, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EDEPTH);
    sl_gql_limits_init(&l);
    l.max_nodes = 5;
    assert_int_equal(sl_gql_parse("{a b c d e f}", 13, &l, &d, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_ENODES);
    /* a deep document does not overflow the stack: refused at max_depth */
    static char deep[200001];
    for (size_t i = 0; i < 100000; i++) deep[i] = '[';
    memcpy(deep, "{a(x:", 5);
    sl_gql_limits_init(&l);
    l.max_bytes = sizeof deep;
    assert_int_equal(sl_gql_parse(deep, 100000, &l, &d, &e), SL_EPARSE);
    assert_int_equal(e.kind, SL_GQL_EDEPTH);
    /* arguments */
    assert_int_equal(sl_gql_parse(NULL, 1, NULL, &d, &e), SL_EINVAL);
    assert_int_equal(sl_gql_parse("{a}", 3, NULL, NULL, &e), SL_EINVAL);
    l.max_depth = 0;
    assert_int_equal(sl_gql_parse("{a}", 3, &l, &d, &e), SL_EINVAL);
    assert_int_equal(sl_gql_cost(NULL, NULL, NULL, NULL), SL_EINVAL);
    sl_gql_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_objects),
        cmocka_unit_test(seed_github),
        cmocka_unit_test(max_cost_refuses),
        cmocka_unit_test(default_page_and_connections),
        cmocka_unit_test(variables),
        cmocka_unit_test(fragments),
        cmocka_unit_test(exponential_fragments_are_bounded),
        cmocka_unit_test(many_variables_are_bounded),
        cmocka_unit_test(saturates),
        cmocka_unit_test(operations),
        cmocka_unit_test(lexical),
        cmocka_unit_test(bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
