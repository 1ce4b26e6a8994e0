/* test_grpc_nul.c: ShouldRateLimit refuses a NUL byte in the strings that
 * name a limit (the domain, an entry's key or value), which protobuf-c would
 * hand over cut at the NUL (issue 12, item 6), and only there: zero bytes
 * in varints and in other length-delimited fields (a limit override, a
 * hits_addend wrapper) are not strings. On sl__grpc_call with hand-made
 * protobuf bytes (protocols.md 1.2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "server/grpc/grpc_service.h"

typedef struct msg {
    uint8_t b[512];
    size_t n;
} msg;

static void put(msg *m, const void *p, size_t n) {
    assert_true(m->n + n <= sizeof m->b);
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

/* tag, length (< 128), bytes */
static void put_len(msg *m, uint8_t tag, const void *p, size_t n) {
    assert_true(n < 128);
    uint8_t h[2] = {tag, (uint8_t)n};
    put(m, h, 2);
    put(m, p, n);
}

/* A RateLimitRequest: domain, one descriptor of one entry, and `extra`
 * bytes inside the descriptor (other fields). */
static msg request(const char *domain, size_t dl, const char *key, size_t kl, const char *value,
                   size_t vl, const void *extra, size_t el) {
    msg e = {0}, d = {0}, r = {0};
    put_len(&e, 0x0a, key, kl);
    put_len(&e, 0x12, value, vl);
    put_len(&d, 0x0a, e.b, e.n);
    if (el) put(&d, extra, el);
    put_len(&r, 0x0a, domain, dl);
    put_len(&r, 0x12, d.b, d.n);
    return r;
}

static int call(const msg *m, const char **message) {
    sl__grpc_arena arena = {0};
    sl__grpc_call_env env = {.domains = NULL, .now = 0, .serving = true, .arena = &arena};
    sl__buf out;
    sl__buf_init(&out);
    *message = NULL;
    int rc = sl__grpc_call(&env, SL__GRPC_M_SHOULD_RATE_LIMIT, m->b, m->n, &out, message);
    sl__buf_free(&out);
    sl__grpc_arena_free(&arena);
    return rc;
}

static void test_nul_refused(void **state) {
    (void)state;
    const char *why;
    msg m = request("edge", 4, "k", 1, "v\0x", 3, NULL, 0);
    assert_int_equal(call(&m, &why), SL__GRPC_INVALID_ARGUMENT);
    assert_string_equal(why, "a domain, descriptor key or value contains a NUL byte");
    m = request("edge\0zz", 7, "k", 1, "v", 1, NULL, 0);
    assert_int_equal(call(&m, &why), SL__GRPC_INVALID_ARGUMENT);
    m = request("edge", 4, "k\0", 2, "v", 1, NULL, 0);
    assert_int_equal(call(&m, &why), SL__GRPC_INVALID_ARGUMENT);
    m = request("edge", 4, "k", 1, "\0", 1, NULL, 0);
    assert_int_equal(call(&m, &why), SL__GRPC_INVALID_ARGUMENT);
    /* the same without the NUL: decided (no rules: OK) */
    m = request("edge", 4, "k", 1, "vx", 2, NULL, 0);
    assert_int_equal(call(&m, &why), SL__GRPC_OK);
}

static void test_zero_bytes_elsewhere(void **state) {
    (void)state;
    const char *why;
    /* descriptor limit {requests_per_unit: 0, unit: 0} and hits_addend {value: 0}:
       zero bytes inside sub-messages that are not strings */
    static const uint8_t extra[] = {0x12, 0x04, 0x08, 0x00, 0x10, 0x00, 0x1a, 0x02, 0x08, 0x00};
    msg m = request("edge", 4, "k", 1, "v", 1, extra, sizeof extra);
    int rc = call(&m, &why);
    assert_true(rc == SL__GRPC_OK || (why && !strstr(why, "NUL")));
    /* the request's hits_addend 0 (a varint 0x00) */
    m = request("edge", 4, "k", 1, "v", 1, NULL, 0);
    static const uint8_t hits[] = {0x18, 0x00};
    put(&m, hits, sizeof hits);
    assert_int_equal(call(&m, &why), SL__GRPC_OK);
    /* an unknown length-delimited field with zeros, at every level */
    static const uint8_t unknown[] = {0x7a, 0x02, 0x00, 0x00};
    m = request("edge", 4, "k", 1, "v", 1, unknown, sizeof unknown);
    put(&m, unknown, sizeof unknown);
    assert_int_equal(call(&m, &why), SL__GRPC_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nul_refused),
        cmocka_unit_test(test_zero_bytes_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
