/* test_http_body.c: the checks on JSON request bodies that cJSON does not
 * make (sl__http_json_scan: NUL, trailing bytes, the raw text of a member)
 * and the JSON string writer for arbitrary bytes (sl__http_json_string:
 * NUL and invalid UTF-8 always give valid JSON in UTF-8). Issue 12, items 6
 * and 16. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http.h"
#include "helpers.h"

static sl__json_scan scan(const char *body, const char *member, char *text, size_t size) {
    const char *t = NULL;
    size_t n = 0;
    sl__json_scan rc = sl__http_json_scan(body, strlen(body), member, &t, &n);
    if (text) snprintf(text, size, "%.*s", t ? (int)n : 4, t ? t : "NONE");
    return rc;
}

/* A body and what scanning it for no member returns. */
typedef struct scan_case {
    const char *body;
    sl__json_scan rc;
} scan_case;

static void expect_scans(const scan_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++)
        assert_int_equal(scan(cases[i].body, NULL, NULL, 0), cases[i].rc);
}

static void test_nul(void **state) {
    (void)state;
    static const scan_case escaped[] = {
        {"{\"key\":\"a\\u0000b\"}", SL__JSON_NUL},
        {"{\"key\":\"\\u0000\"}", SL__JSON_NUL},
        {"{\"ke\\u0000y\":\"a\"}", SL__JSON_NUL},
        {"[\"x\",{\"a\":[\"\\u0000\"]}]", SL__JSON_NUL},
        /* an escaped backslash, then the text u0000: no NUL */
        {"{\"key\":\"a\\\\u0000\"}", SL__JSON_OK},
        {"{\"key\":\"\\u0001\\u0100\"}", SL__JSON_OK},
    };
    expect_scans(escaped, COUNT(escaped));
    /* a raw 0 byte anywhere */
    static const char raw[] = "{\"key\":\"a\0b\"}";
    assert_int_equal(sl__http_json_scan(raw, sizeof raw - 1, NULL, NULL, NULL), SL__JSON_NUL);
    static const char after[] = "{\"key\":\"a\"}\0";
    assert_int_equal(sl__http_json_scan(after, sizeof after - 1, NULL, NULL, NULL), SL__JSON_NUL);
}

static void test_trailing_and_syntax(void **state) {
    (void)state;
    static const scan_case cases[] = {
        {"{\"a\":1}", SL__JSON_OK},
        {" \r\n\t{\"a\":1} \r\n\t", SL__JSON_OK},
        {"{\"a\":1} x", SL__JSON_TRAILING},
        {"{\"a\":1}{}", SL__JSON_TRAILING},
        {"{\"a\":1},", SL__JSON_TRAILING},
        {"{\"a\":1}]", SL__JSON_TRAILING},
        {"\"s\" 1", SL__JSON_TRAILING},
        {"1 2", SL__JSON_TRAILING},
        {"", SL__JSON_SYNTAX},
        {"   ", SL__JSON_SYNTAX},
        {"{\"a\":1", SL__JSON_SYNTAX},
        {"{\"a", SL__JSON_SYNTAX},
        {"{\"a\\u12\":1}", SL__JSON_SYNTAX},
        {"}", SL__JSON_SYNTAX},
        {"{\"a\":\xff}", SL__JSON_SYNTAX},
    };
    expect_scans(cases, COUNT(cases));
    /* deep nesting is counted, not recursed */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 1);
    assert_non_null(deep);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    assert_int_equal(scan(deep, "cost", NULL, 0), SL__JSON_OK);
    deep[2 * depth - 1] = '\0';
    assert_int_equal(scan(deep, "cost", NULL, 0), SL__JSON_SYNTAX);
    free(deep);
}

static void test_member_text(void **state) {
    (void)state;
    char t[64];
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"policy\":\"p\",\"key\":\"k\",\"cost\":3}", "3"},
        {"{\"cost\":1e2}", "1e2"},
        {"{ \"cost\" : 3.0 , \"key\":\"k\"}", "3.0"},
        {"{\"cost\":-0}", "-0"},
        {"{\"cost\":\"5\"}", "\"5\""},
        {"{\"cost\":null}", "null"},
        {"{\"cost\":[1, 2]}", "[1, 2]"},
        {"{\"cost\":{\"cost\":1}}", "{\"cost\":1}"},
        /* the first one, as cJSON's GetObjectItem */
        {"{\"cost\":1.5,\"cost\":2}", "1.5"},
        /* names are compared unescaped */
        {"{\"co\\u0073t\":7}", "7"},
        {"{\"\\u0063ost\":8,\"cost\":9}", "8"},
        /* nested members and string values are not the member */
        {"{\"x\":{\"cost\":1.5},\"cost\":2}", "2"},
        {"{\"x\":[{\"cost\":1.5}],\"y\":\"cost\",\"cost\":4}", "4"},
        {"{\"costs\":1,\"cos\":2,\"cost\\u0000\":3}", "NONE"},
        {"{\"x\":\"cost\"}", "NONE"},
        {"[{\"cost\":1}]", "NONE"},
        {"{}", "NONE"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl__json_scan rc = scan(cases[i].body, "cost", t, sizeof t);
        if (strcmp(cases[i].want, "NONE") == 0 && strstr(cases[i].body, "\\u0000")) {
            assert_int_equal(rc, SL__JSON_NUL);
            continue;
        }
        assert_int_equal(rc, SL__JSON_OK);
        if (strcmp(t, cases[i].want))
            fail_msg("case %zu: got [%s], want [%s]", i, t, cases[i].want);
    }
}

/* A ']' where the member's value would start is no value: no text (it was
 * reported from the ']' with a length below zero; fuzz_http found it). */
static void test_member_text_no_value(void **state) {
    (void)state;
    static const char *const bodies[] = {"{\"cost\":]", "{\"cost\":]}", "{\"cost\":,,]\n:"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        const char *t = bodies[i];
        size_t n = 1;
        sl__http_json_scan(bodies[i], strlen(bodies[i]), "cost", &t, &n); /* cJSON judges it */
        assert_null(t);
        assert_int_equal(n, 0);
    }
}

static char *json_of(const void *s, size_t n) {
    sl__buf b;
    sl__buf_init(&b);
    sl__http_json_string(&b, s, n);
    sl__buf_append(&b, "", 1);
    assert_false(b.failed);
    return b.data;
}

/* RFC 3629 UTF-8, strictly (no overlongs, surrogates or beyond U+10FFFF). */
static bool valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t k;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1, cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2, cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3, cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i <= k) return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

static void test_json_string(void **state) {
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"abc", 3, "\"abc\""},
        {"a\0b", 3, "\"a\\u0000b\""},
        {"\0", 1, "\"\\u0000\""},
        {"q\"b\\\n\r\t\b\f\x01\x7f", 11, "\"q\\\"b\\\\\\n\\r\\t\\b\\f\\u0001\\u007f\""},
        {"\xff", 1, "\"\\ufffd\""},
        {"\xc3\x28", 2, "\"\\ufffd(\""},
        {"\xe2\x82", 2, "\"\\ufffd\\ufffd\""},                       /* cut short at the end */
        {"\xe2\x82\xac", 3, "\"\xe2\x82\xac\""},                     /* the euro sign, kept */
        {"\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\""},             /* U+1F600 */
        {"\xc0\x80", 2, "\"\\ufffd\\ufffd\""},                       /* an overlong NUL */
        {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""},            /* a surrogate */
        {"\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* beyond U+10FFFF */
        {"\xe2\0\xac", 3, "\"\\ufffd\\u0000\\ufffd\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = json_of(cases[i].in, cases[i].n);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu: got [%s] want [%s]", i, got, cases[i].want);
        free(got);
    }
    /* any bytes: valid UTF-8 and JSON, and plain bytes come back unchanged */
    uint64_t x = 0x9e3779b97f4a7c15u;
    unsigned char in[64];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 64);
        for (size_t i = 0; i < n; i++) {
            helper_rand(&x);
            in[i] = (unsigned char)(round & 1 ? x : (x % 3 ? 0x80 | (x >> 8 & 0x7f) : x >> 16));
        }
        char *got = json_of(in, n);
        size_t gl = strlen(got);
        assert_true(valid_utf8((const unsigned char *)got, gl));
        cJSON *j = cJSON_Parse(got);
        if (!cJSON_IsString(j)) fail_msg("round %d: not a JSON string: %s", round, got);
        if (valid_utf8(in, n) && !memchr(in, 0, n)) {
            assert_int_equal(strlen(j->valuestring), n);
            assert_memory_equal(j->valuestring, in, n);
        }
        cJSON_Delete(j);
        free(got);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nul),         cmocka_unit_test(test_trailing_and_syntax),
        cmocka_unit_test(test_member_text), cmocka_unit_test(test_member_text_no_value),
        cmocka_unit_test(test_json_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
