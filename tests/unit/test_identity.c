/* test_identity.c: addresses, CIDR blocks, prefixes and the forwarded-header
 * walk (src/policy/identity.c): the forms each parser accepts and refuses,
 * canonical formatting, /64 and /56 prefixes, and X-Forwarded-For and RFC
 * 7239 Forwarded walked from the right through trusted proxies only: a
 * client-written entry never becomes the client, untrusted peers' headers
 * are ignored, garbage stops the walk at the last trusted hop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "policy/identity.h"
#include "sluice/error.h"

static sl__addr A(const char *s) {
    sl__addr a;
    if (sl__addr_parse(s, strlen(s), &a) != 0) fail_msg("cannot parse %s", s);
    return a;
}

static const char *fmt(const sl__addr *a) {
    static char buf[4][SL__ADDR_FORMAT_MAX];
    static int k;
    char *b = buf[k++ & 3];
    sl__addr_format(a, b);
    return b;
}

static bool parses(const char *s) {
    sl__addr a;
    return sl__addr_parse(s, strlen(s), &a) == 0;
}

static bool node_parses(const char *s, const char *want) {
    sl__addr a;
    if (sl__addr_parse_node(s, strlen(s), &a) != 0) return false;
    if (want && strcmp(fmt(&a), want) != 0) fail_msg("%s parsed as %s, not %s", s, fmt(&a), want);
    return true;
}

static void test_ipv4(void **state) {
    (void)state;
    assert_string_equal(fmt(&(sl__addr){0}), "::");
    sl__addr a = A("192.0.2.1");
    assert_true(sl__addr_is_v4(&a));
    assert_string_equal(fmt(&a), "192.0.2.1");
    assert_string_equal(fmt(&(sl__addr){.b = {[10] = 0xff, [11] = 0xff}}), "0.0.0.0");
    assert_true(parses("0.0.0.0"));
    assert_true(parses("255.255.255.255"));
    const char *bad[] = {"256.0.0.1", "1.2.3",    "1.2.3.4.5",  "01.2.3.4", "1.2.3.04",
                         "1..2.3",    " 1.2.3.4", "1.2.3.4 ",   "1.2.3.a",  "",
                         "1.2.3.4.",  ".1.2.3.4", "1.2.3.1000", "-1.2.3.4"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parses(bad[i])) fail_msg("accepted %s", bad[i]);
}

static void test_ipv6(void **state) {
    (void)state;
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"::", "::"},
        {"::1", "::1"},
        {"2001:db8::1", "2001:db8::1"},
        {"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
        {"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"},
        {"2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:1"},
        {"1::", "1::"},
        {"fe80::1%eth0", "fe80::1"},
        {"::ffff:192.0.2.1", "192.0.2.1"}, /* IPv4-mapped is IPv4 */
        {"::ffff:c000:201", "192.0.2.1"},
        {"64:ff9b::192.0.2.1", "64:ff9b::c000:201"},
        {"1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"},
        {"::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        sl__addr a = A(ok[i].in);
        assert_string_equal(fmt(&a), ok[i].out);
    }
    const char *bad[] = {":",       ":::",      "1:::2",         "1::2::3", "1:2:3:4:5:6:7:8:9",
                         "12345::", "g::",      "1:2:3:4:5:6:7", "::1.2.3", "1.2.3.4::",
                         "::1%",    "::1%e th", ":1::",          "1:",      "1::2:3:4:5:6:7:8",
                         "[::1]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parses(bad[i])) fail_msg("accepted %s", bad[i]);
}

static void test_nodes(void **state) {
    (void)state;
    assert_true(node_parses("192.0.2.1:8080", "192.0.2.1"));
    assert_true(node_parses(" 192.0.2.1 ", "192.0.2.1"));
    assert_true(node_parses("[2001:db8::1]", "2001:db8::1"));
    assert_true(node_parses("[2001:db8::1]:443", "2001:db8::1"));
    assert_true(node_parses("2001:db8::1", "2001:db8::1"));
    assert_false(node_parses("192.0.2.1:", NULL));
    assert_false(node_parses("192.0.2.1:65536", NULL));
    assert_false(node_parses("[2001:db8::1]443", NULL));
    assert_false(node_parses("[192.0.2.1]", NULL));
    assert_false(node_parses("unknown", NULL));
    assert_false(node_parses("_hidden", NULL));
    assert_false(node_parses("", NULL));
    assert_false(node_parses("[", NULL));
}

static void test_cidr(void **state) {
    (void)state;
    sl__cidr c;
    const char *why;
    assert_int_equal(sl__cidr_parse("10.0.0.0/8", 10, &c, &why), 0);
    assert_int_equal(c.bits, 104);
    assert_int_equal(sl__cidr_user_bits(&c), 8);
    sl__addr in = A("10.200.3.4"), out = A("11.0.0.1"), v6 = A("2001:db8::1");
    assert_true(sl__cidr_contains(&c, &in));
    assert_false(sl__cidr_contains(&c, &out));
    assert_false(sl__cidr_contains(&c, &v6));
    assert_int_equal(sl__cidr_parse("2001:db8::/32", 13, &c, &why), 0);
    assert_true(sl__cidr_contains(&c, &v6));
    assert_false(sl__cidr_contains(&c, &in));
    assert_int_equal(sl__cidr_parse("192.0.2.7", 9, &c, &why), 0); /* a host: /32 */
    assert_int_equal(c.bits, 128);
    assert_int_equal(sl__cidr_parse("0.0.0.0/0", 9, &c, &why), 0);
    assert_true(sl__cidr_contains(&c, &in));
    assert_false(sl__cidr_contains(&c, &v6)); /* IPv4's /0 is every IPv4 address only */
    assert_int_equal(sl__cidr_parse("::/0", 4, &c, &why), 0);
    assert_true(sl__cidr_contains(&c, &v6) && sl__cidr_contains(&c, &in));
    assert_int_equal(sl__cidr_parse("10.0.0.1/8", 10, &c, &why), SL_EPARSE);
    assert_non_null(strstr(why, "host bits"));
    assert_int_equal(sl__cidr_parse("10.0.0.0/33", 11, &c, &why), SL_EPARSE);
    assert_non_null(strstr(why, "0 to 32"));
    assert_int_equal(sl__cidr_parse("::/129", 6, &c, &why), SL_EPARSE);
    assert_int_equal(sl__cidr_parse("10.0.0.0/08", 11, &c, &why), SL_EPARSE);
    assert_int_equal(sl__cidr_parse("10.0.0.0/", 9, &c, &why), SL_EPARSE);
    assert_int_equal(sl__cidr_parse("localhost", 9, &c, &why), SL_EPARSE);
    /* odd prefix lengths */
    assert_int_equal(sl__cidr_parse("10.128.0.0/9", 12, &c, &why), 0);
    sl__addr x = A("10.129.0.1"), y = A("10.127.0.1");
    assert_true(sl__cidr_contains(&c, &x));
    assert_false(sl__cidr_contains(&c, &y));
}

static void test_prefixes(void **state) {
    (void)state;
    sl__addr p;
    unsigned bits;
    sl__addr a = A("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), b = A("2001:db8:1:2::1"),
             c = A("2001:db8:1:3::1");
    sl__addr_prefix(&a, 32, 64, &p, &bits);
    assert_int_equal(bits, 64);
    assert_string_equal(fmt(&p), "2001:db8:1:2::");
    sl__addr pb, pc;
    sl__addr_prefix(&b, 32, 64, &pb, &bits);
    sl__addr_prefix(&c, 32, 64, &pc, &bits);
    assert_memory_equal(&p, &pb, sizeof p); /* the same /64: one client */
    assert_memory_not_equal(&p, &pc, sizeof p);
    sl__addr_prefix(&c, 32, 56, &pc, &bits); /* the same /56 */
    sl__addr_prefix(&a, 32, 56, &p, &bits);
    assert_int_equal(bits, 56);
    assert_memory_equal(&p, &pc, sizeof p);
    assert_string_equal(fmt(&p), "2001:db8:1::");
    sl__addr v4 = A("198.51.100.77");
    sl__addr_prefix(&v4, 32, 64, &p, &bits);
    assert_int_equal(bits, 128);
    assert_string_equal(fmt(&p), "198.51.100.77");
    sl__addr_prefix(&v4, 24, 64, &p, &bits);
    assert_int_equal(bits, 120);
    assert_string_equal(fmt(&p), "198.51.100.0");
}

/* ---- the walk ---------------------------------------------------------------- */

static sl__cidr trusted[3];
static size_t ntrusted;

static void trust(const char *list) {
    ntrusted = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) {
        const char *why;
        assert_int_equal(sl__cidr_parse(t, strlen(t), &trusted[ntrusted++], &why), 0);
    }
}

/* The client of a request from `peer` with one header line (or none). */
static sl__fwd_result walk(sl__fwd_kind kind, const char *peer, const char *header) {
    sl__addr p = A(peer);
    sl__fwd_result r;
    const char *vals[1] = {header};
    size_t lens[1] = {header ? strlen(header) : 0};
    sl__forwarded_client(kind, &p, trusted, ntrusted, vals, lens, header ? 1 : 0, &r);
    return r;
}

static const char *client(sl__fwd_kind kind, const char *peer, const char *header) {
    sl__fwd_result r = walk(kind, peer, header);
    return fmt(&r.client);
}

static void test_xff(void **state) {
    (void)state;
    sl__fwd_kind X = SL__FWD_XFF;
    /* no trusted proxies: the header is ignored */
    trust("");
    assert_string_equal(client(X, "203.0.113.9", "1.2.3.4"), "203.0.113.9");
    trust("10.0.0.0/8 2001:db8:ffff::/48");
    /* an untrusted peer's header is ignored: a spoofed entry never counts */
    assert_string_equal(client(X, "203.0.113.9", "1.2.3.4"), "203.0.113.9");
    /* one trusted proxy: the entry it appended */
    assert_string_equal(client(X, "10.0.0.2", "198.51.100.7"), "198.51.100.7");
    /* the client wrote a fake leftmost entry; the proxy appended the truth */
    assert_string_equal(client(X, "10.0.0.2", "6.6.6.6, 198.51.100.7"), "198.51.100.7");
    /* two trusted hops */
    assert_string_equal(client(X, "10.0.0.2", "6.6.6.6, 198.51.100.7, 10.1.1.1"), "198.51.100.7");
    /* every entry trusted: the leftmost (still a trusted address) */
    assert_string_equal(client(X, "10.0.0.2", "10.9.9.9, 10.1.1.1"), "10.9.9.9");
    /* garbage where an address should be: stop at the last trusted hop */
    sl__fwd_result r = walk(X, "10.0.0.2", "198.51.100.7, unknown");
    assert_true(r.bad_entry);
    assert_string_equal(fmt(&r.client), "10.0.0.2");
    r = walk(X, "10.0.0.2", "garbage, 198.51.100.7");
    assert_false(r.bad_entry); /* never reached: 198.51.100.7 is not trusted */
    assert_int_equal(r.hops, 1);
    /* ports, brackets, IPv6, spaces, empty elements */
    assert_string_equal(client(X, "10.0.0.2", " 198.51.100.7:5555 "), "198.51.100.7");
    assert_string_equal(client(X, "10.0.0.2", "[2001:db8::7]:443"), "2001:db8::7");
    assert_string_equal(client(X, "10.0.0.2", "2001:db8::7,,"), "2001:db8::7");
    assert_string_equal(client(X, "2001:db8:ffff::1", "2001:db8::7"), "2001:db8::7");
    /* an empty header: the peer */
    assert_string_equal(client(X, "10.0.0.2", ""), "10.0.0.2");
    assert_string_equal(client(X, "10.0.0.2", NULL), "10.0.0.2");
}

static void test_xff_lines_and_bounds(void **state) {
    (void)state;
    trust("10.0.0.0/8");
    /* several header lines form one list, in order */
    const char *vals[2] = {"6.6.6.6, 198.51.100.7", "10.0.0.9"};
    size_t lens[2] = {strlen(vals[0]), strlen(vals[1])};
    sl__addr peer = A("10.0.0.2");
    sl__fwd_result r;
    sl__forwarded_client(SL__FWD_XFF, &peer, trusted, ntrusted, vals, lens, 2, &r);
    assert_string_equal(fmt(&r.client), "198.51.100.7");
    assert_int_equal(r.hops, 2);
    /* more trusted hops than are kept: the last one kept */
    char big[4096];
    size_t o = (size_t)snprintf(big, sizeof big, "1.2.3.4");
    for (int i = 0; i < 40; i++) o += (size_t)snprintf(big + o, sizeof big - o, ", 10.0.0.%d", i);
    r = walk(SL__FWD_XFF, "10.0.0.2", big);
    assert_true(r.truncated);
    assert_int_equal(r.hops, SL__FWD_MAX_HOPS);
    assert_string_equal(fmt(&r.client), "10.0.0.8");
    /* a long untrusted tail costs nothing more than a scan */
    o = 0;
    for (int i = 0; i < 300; i++)
        o += (size_t)snprintf(big + o, sizeof big - o, "9.9.9.%d,", i % 250);
    o += (size_t)snprintf(big + o, sizeof big - o, "198.51.100.7");
    assert_string_equal(client(SL__FWD_XFF, "10.0.0.2", big), "198.51.100.7");
}

static void test_forwarded(void **state) {
    (void)state;
    sl__fwd_kind F = SL__FWD_FORWARDED;
    trust("");
    assert_string_equal(client(F, "203.0.113.9", "for=1.2.3.4"), "203.0.113.9");
    trust("10.0.0.0/8");
    assert_string_equal(client(F, "203.0.113.9", "for=1.2.3.4"), "203.0.113.9");
    assert_string_equal(client(F, "10.0.0.2", "for=192.0.2.60;proto=http;by=203.0.113.43"),
                        "192.0.2.60");
    /* RFC 7239 section 4's examples */
    assert_string_equal(client(F, "10.0.0.2", "for=\"_gazonk\""), "10.0.0.2");
    assert_string_equal(client(F, "10.0.0.2", "For=\"[2001:db8:cafe::17]:4711\""),
                        "2001:db8:cafe::17");
    assert_string_equal(client(F, "10.0.0.2", "for=192.0.2.43, for=198.51.100.17"),
                        "198.51.100.17");
    assert_string_equal(client(F, "10.0.0.2", "for=192.0.2.43, for=10.3.3.3"), "192.0.2.43");
    /* spoofed leftmost element, proxy's element on the right */
    assert_string_equal(client(F, "10.0.0.2", "for=6.6.6.6, for=198.51.100.17;proto=https"),
                        "198.51.100.17");
    /* quoted strings with escapes and commas inside other parameters */
    assert_string_equal(client(F, "10.0.0.2", "for=\"198.51\\.100.17\";by=\"a,b\""),
                        "198.51.100.17");
    assert_string_equal(client(F, "10.0.0.2", "for=1.1.1.1, by=\"x,y\";for=198.51.100.17"),
                        "198.51.100.17");
    /* an element without for=, for=unknown, two for=, or malformed: the walk stops */
    sl__fwd_result r = walk(F, "10.0.0.2", "for=198.51.100.17, proto=https");
    assert_true(r.bad_entry);
    assert_string_equal(fmt(&r.client), "10.0.0.2");
    r = walk(F, "10.0.0.2", "for=unknown");
    assert_true(r.bad_entry);
    r = walk(F, "10.0.0.2", "for=1.1.1.1;for=2.2.2.2");
    assert_true(r.bad_entry);
    r = walk(F, "10.0.0.2", "for");
    assert_true(r.bad_entry);
    r = walk(F, "10.0.0.2", "for=\"198.51.100.17");
    assert_true(r.bad_entry);
    assert_string_equal(client(F, "10.0.0.2", " for = 1.2.3.4 "), "10.0.0.2"); /* "for " */
    assert_string_equal(client(F, "10.0.0.2", "for=198.51.100.17 ; proto=http"), "198.51.100.17");
    assert_string_equal(client(F, "10.0.0.2", ",,for=198.51.100.17,"), "198.51.100.17");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ipv4),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_cidr),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_xff),
        cmocka_unit_test(test_xff_lines_and_bounds),
        cmocka_unit_test(test_forwarded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
