/* test_proto.c: the protocols as the connection layer sees them (server/proto.h),
 * driven through their ops tables alone: no worker, no connection, no socket; a
 * request context filled by hand (server/request.h, a NULL answer slot). Guards
 * the split of issue 14: every protocol registers a complete table, HTTP and RESP
 * answer one request per feed (pipelined input is fed again with what is left),
 * write their own errors, timeouts and refusals, say when a request is on its
 * way, and gRPC paces itself. This file includes no server.h: the protocols
 * must not need the worker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "server/proto.h"
#include "server/request.h"
#include "sluice/sluice.h"

static const sl__limits_config limits = {.max_header_bytes = 8192,
                                         .max_body_bytes = 65536,
                                         .max_resp_frame = 65536,
                                         .header_timeout = 10 * SL_NS_PER_SEC,
                                         .command_timeout = 7 * SL_NS_PER_SEC};

static const sl__request_ctx rq = {.now = 1700000000 * SL_NS_PER_SEC, .limits = &limits};

static bool has(const sl__buf *b, const char *s) {
    return b->len && memmem(b->data, b->len, s, strlen(s)) != NULL;
}

/* Feeds len bytes at p as conn.c does: again with what is left, until all is
 * used or the protocol stops or closes; returns the flags of every feed, or-ed. */
static unsigned feed_all(const sl__proto_ops_table *ops, void *st, const char *p, size_t len,
                         sl__buf *out, size_t *used_total, unsigned *answers) {
    unsigned all = 0;
    size_t off = 0;
    *answers = 0;
    while (off < len) {
        size_t used = 0;
        unsigned r = ops->feed(st, &rq, p + off, len - off, out, &used);
        off += used;
        all |= r;
        if (r & SL__FEED_ANSWERED) (*answers)++;
        if (r & (SL__FEED_STOP | SL__FEED_CLOSE | SL__FEED_ERROR)) break;
    }
    *used_total = off;
    return all;
}

static void test_every_protocol_registers(void **state) {
    (void)state;
    for (int p = 0; p < SL__PROTO_COUNT; p++) {
        const sl__proto_ops_table *ops = sl__proto_ops((sl__proto)p);
        assert_non_null(ops);
        assert_int_equal(ops->id, p);
        assert_non_null(ops->feed);
        assert_non_null(ops->timeout);
        assert_non_null(ops->request_timeout);
        if (ops->create) assert_non_null(ops->free);
        /* a protocol that drains itself keeps its own deadlines too, and paces itself */
        assert_true(!ops->drain == !ops->deadline && !ops->deadline == !ops->tick);
        assert_true(!ops->drain || ops->self_paced);
        assert_true(ops->drain || ops->pending); /* conn.c times its requests */
    }
    assert_null(sl__proto_ops(SL__PROTO_COUNT));
    assert_int_equal(sl__proto_ops(SL__PROTO_RESP)->request_timeout(&limits), 7 * SL_NS_PER_SEC);
    assert_int_equal(sl__proto_ops(SL__PROTO_HTTP)->request_timeout(&limits), 10 * SL_NS_PER_SEC);
}

static void test_http_pipelined(void **state) {
    (void)state;
    const sl__proto_ops_table *ops = sl__proto_ops(SL__PROTO_HTTP);
    void *st = ops->create(&limits, NULL);
    assert_non_null(st);
    sl__buf out;
    sl__buf_init(&out);
    static const char two[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /nope HTTP/1.1\r\nHost: x\r\n\r\nGET /hea";
    size_t used;
    unsigned answers;
    unsigned r = feed_all(ops, st, two, sizeof two - 1, &out, &used, &answers);
    assert_int_equal(answers, 2);
    assert_int_equal(used, sizeof two - 1); /* the parser keeps the partial third */
    assert_false(r & (SL__FEED_CLOSE | SL__FEED_ERROR));
    assert_true(has(&out, "HTTP/1.1 200 OK"));
    assert_true(has(&out, "{\"status\":\"ok\"}"));
    assert_true(has(&out, "HTTP/1.1 404 Not Found"));
    assert_true(ops->pending(st, 0)); /* the third is on its way */
    /* it times out: 408, written by the protocol */
    sl__buf_reset(&out);
    ops->timeout(st, true, true, &out);
    assert_true(has(&out, "HTTP/1.1 408 "));
    assert_true(has(&out, "\"request_timeout\""));
    assert_true(has(&out, "Connection: close"));
    ops->free(st);

    /* a malformed request: 400 by the protocol, an error for the connection */
    st = ops->create(&limits, NULL);
    sl__buf_reset(&out);
    static const char bad[] = "GET / HTTP/1.1\r\nBad Header\r\n\r\n";
    r = feed_all(ops, st, bad, sizeof bad - 1, &out, &used, &answers);
    assert_true(r & SL__FEED_ERROR);
    assert_int_equal(answers, 0);
    assert_true(has(&out, "HTTP/1.1 400 "));
    assert_true(has(&out, "\"bad_request\""));
    /* not on its way: an idle connection's timeout says nothing */
    ops->free(st);
    st = ops->create(&limits, NULL);
    sl__buf_reset(&out);
    assert_false(ops->pending(st, 0));
    ops->timeout(st, false, false, &out);
    assert_int_equal(out.len, 0);
    /* Connection: close asked for: answered, then the connection closes */
    static const char close_req[] = "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n";
    r = feed_all(ops, st, close_req, sizeof close_req - 1, &out, &used, &answers);
    assert_int_equal(answers, 1);
    assert_true(r & SL__FEED_CLOSE);
    ops->free(st);

    sl__buf_reset(&out);
    ops->refuse(&out);
    assert_true(has(&out, "HTTP/1.1 503 "));
    assert_true(has(&out, "Retry-After: 1"));
    assert_non_null(strstr(ops->refuse_raw, "HTTP/1.1 503 "));
    sl__buf_free(&out);
}

static void test_resp_commands(void **state) {
    (void)state;
    const sl__proto_ops_table *ops = sl__proto_ops(SL__PROTO_RESP);
    assert_null(ops->create); /* a partial command is the connection's held input */
    sl__buf out;
    sl__buf_init(&out);
    static const char in[] = "PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*1\r\n$4\r\nPI";
    size_t used;
    unsigned answers;
    unsigned r = feed_all(ops, NULL, in, sizeof in - 1, &out, &used, &answers);
    assert_int_equal(answers, 2);
    assert_true(r & SL__FEED_STOP);
    assert_int_equal(used, strlen("PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"));
    assert_int_equal(out.len, strlen("+PONG\r\n$2\r\nhi\r\n"));
    assert_memory_equal(out.data, "+PONG\r\n$2\r\nhi\r\n", out.len);
    assert_true(ops->pending(NULL, sizeof in - 1 - used));
    assert_false(ops->pending(NULL, 0));

    /* command names in any case, eight bytes at a time and the rest: only
       letters may differ in case (0x0e | 0x20 is '.', yet no match) */
    static const struct {
        const char *in;
        const char *want;
    } names[] = {
        {"*1\r\n$8\r\nsL.cHeCk\r\n", "-ERR wrong number of arguments for 'sl.check' command"},
        {"*1\r\n$8\r\nSL\x0e"
         "CHECK\r\n",
         "-ERR unknown command 'SL\x0e"
         "CHECK'"},
        {"*1\r\n$8\r\nSL.CHECk\r\n", "-ERR wrong number of arguments for 'sl.check' command"},
        {"*1\r\n$8\r\nSL.CHECL\r\n", "-ERR unknown command 'SL.CHECL'"},
        {"*1\r\n$8\r\nSL.CHEC\xcb\r\n", "-ERR unknown command 'SL.CHEC\xcb'"},
        {"*1\r\n$11\r\nCl.ThRoTtLe\r\n", "Usage: cl.throttle"},
        {"*1\r\n$11\r\nCL.THROTTL\x05\r\n", "-ERR unknown command"},
        {"*1\r\n$11\r\nCL\x0eTHROTTLE\r\n", "-ERR unknown command"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        sl__buf_reset(&out);
        r = feed_all(ops, NULL, names[i].in, strlen(names[i].in), &out, &used, &answers);
        assert_int_equal(answers, 1);
        if (!has(&out, names[i].want)) fail_msg("%s: %.*s", names[i].in, (int)out.len, out.data);
    }

    sl__buf_reset(&out);
    static const char quit[] = "QUIT\r\nPING\r\n";
    r = feed_all(ops, NULL, quit, sizeof quit - 1, &out, &used, &answers);
    assert_int_equal(answers, 1);
    assert_true(r & SL__FEED_CLOSE);
    assert_memory_equal(out.data, "+OK\r\n", out.len);

    sl__buf_reset(&out);
    static const char bad[] = "*1\r\n$x\r\n";
    r = feed_all(ops, NULL, bad, sizeof bad - 1, &out, &used, &answers);
    assert_true(r & SL__FEED_ERROR);
    assert_true(has(&out, "-ERR Protocol error: "));

    sl__buf_reset(&out);
    ops->timeout(NULL, true, true, &out);
    assert_true(has(&out, "-ERR command timeout"));
    sl__buf_reset(&out);
    ops->timeout(NULL, false, false, &out);
    assert_true(has(&out, "-ERR idle timeout"));
    sl__buf_reset(&out);
    ops->refuse(&out);
    assert_memory_equal(out.data, "-ERR max number of clients reached\r\n", out.len);
    assert_string_equal(ops->refuse_raw, "-ERR max number of clients reached\r\n");
    sl__buf_free(&out);
}

static void test_grpc_paces_itself(void **state) {
    (void)state;
    const sl__proto_ops_table *ops = sl__proto_ops(SL__PROTO_GRPC);
    assert_true(ops->self_paced);
    assert_null(ops->refuse); /* closed without a word */
    assert_null(ops->refuse_raw);
    sl__buf out;
    sl__buf_init(&out);
    void *st = ops->create(&limits, &out);
    assert_non_null(st);
    assert_true(out.len > 0); /* the server preface, written on its own */
    assert_int_equal(ops->held(st), 0);
    /* not HTTP/2 at all */
    static const char junk[] = "GET / HTTP/1.1\r\n\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    size_t used;
    unsigned answers;
    unsigned r = feed_all(ops, st, junk, sizeof junk - 1, &out, &used, &answers);
    assert_true(r & SL__FEED_ERROR);
    assert_int_equal(answers, 0);
    ops->free(st);

    /* draining an idle session: GOAWAY, and nothing is left */
    sl__buf_reset(&out);
    st = ops->create(&limits, &out);
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                  "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    r = feed_all(ops, st, preface, sizeof preface - 1, &out, &used, &answers);
    assert_int_equal(used, sizeof preface - 1);
    assert_false(r & (SL__FEED_ERROR | SL__FEED_CLOSE));
    size_t before = out.len;
    assert_true(ops->drain(st));
    assert_true(out.len > before); /* the GOAWAY */
    ops->free(st);
    sl__buf_free(&out);
}

/* Leaves a pattern where the next calls' frames will be, so that a field
 * read before it is written is neither 0 nor 1 (UBSan's bool check sees
 * it; a zeroed stack would hide it). */
static __attribute__((noinline)) void dirty_stack(void) {
    volatile unsigned char junk[32 * 1024];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = 0x5a;
}

/* GET /v1/auth on a server without a policy set (rq.policies NULL): the
 * error answer, every field of it written (auth_error once left
 * query_costed unset, read by the JSON body: clang-tidy and UBSan). */
static void test_auth_without_policies(void **state) {
    (void)state;
    const sl__proto_ops_table *ops = sl__proto_ops(SL__PROTO_HTTP);
    void *st = ops->create(&limits, NULL);
    assert_non_null(st);
    sl__buf out;
    sl__buf_init(&out);
    static const char req[] = "GET /v1/auth HTTP/1.1\r\nHost: x\r\n\r\n";
    size_t used;
    unsigned answers;
    dirty_stack();
    unsigned r = feed_all(ops, st, req, sizeof req - 1, &out, &used, &answers);
    assert_int_equal(answers, 1);
    assert_false(r & SL__FEED_ERROR);
    assert_true(has(&out, "HTTP/1.1 500 "));
    assert_true(has(&out, "no policy set"));
    assert_false(has(&out, "\"cost\":")); /* no query was costed */
    ops->free(st);
    sl__buf_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_protocol_registers),
        cmocka_unit_test(test_http_pipelined),
        cmocka_unit_test(test_resp_commands),
        cmocka_unit_test(test_grpc_paces_itself),
        cmocka_unit_test(test_auth_without_policies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
