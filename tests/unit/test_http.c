/* test_http.c: the HTTP/1.x side of sluiced (src/server/http/http.h), pure
 * bytes in and out. The request parser: every split point of a pipelined
 * buffer and byte-by-byte feeding parse exactly like one read, precise
 * *consumed, chunked bodies and trailers, the 431 and 413 bounds to the
 * byte, malformed input (400, 501, 505), other methods, keep-alive rules,
 * absolute-form targets, Expect: 100-continue; the fast path (http_fast.c)
 * against libhttp-parser alone on the same bytes at every step of every
 * feed here (feed_cuts), what it must take and what it must leave, its
 * bounds, each byte of four requests replaced by each value; query
 * parameter decoding (several names in one pass as one at a time) and
 * header lookup. The writers: the exact bytes of a 429, the RateLimit
 * fields checked by a Structured Field parser for every algorithm on real
 * decisions, JSON escaping checked by cJSON, roundings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "server/http/http.h"
#include "sluice/sluice.h"
#include "helpers.h"

#define HTTP_FEED_CHECK(c) assert_true(c)
#include "http_feed.h"

#define T0 (1000 * SEC)

/* ---- feeding helpers ---------------------------------------------------------- */

/* A readable, complete description of a parsed request, to compare parses. */
static void dump(sl__buf *b, const sl__http_request *r) {
    sl__buf_printf(b, "%d %s path=[%.*s](%zu) query=[%.*s](%zu) HTTP/%d.%d ka=%d\n", r->method,
                   r->method_name, (int)r->path_len, r->path, r->path_len, (int)r->query_len,
                   r->query, r->query_len, r->http_major, r->http_minor, r->keep_alive);
    assert_int_equal(strlen(r->path), r->path_len);
    assert_int_equal(strlen(r->query), r->query_len);
    for (size_t i = 0; i < r->nheaders; i++) {
        const sl__http_field *h = &r->headers[i];
        assert_int_equal(strlen(h->name), h->name_len);
        assert_int_equal(strlen(h->value), h->value_len);
        sl__buf_printf(b, "  [%s]=[%s]\n", h->name, h->value);
    }
    sl__buf_printf(b, "  body(%zu)=[", r->body_len);
    sl__buf_append(b, r->body, r->body_len);
    sl__buf_puts(b, "]\n");
}

static void dump_to(const sl__http_request *r, void *out) {
    dump(out, r);
}

/* Feeds `len` bytes as the pieces cut at cuts[0..ncuts) (increasing), the
 * way a connection does: each piece is fed until it is used up, a READY
 * request is dumped and the parser moved on, an error ends everything.
 * Checks that NEED_MORE always consumes the whole piece, and that the
 * parser with its fast path agrees with libhttp-parser alone at every step
 * (http_feed_both). Returns the dump (caller frees); *fast_taken (if not
 * NULL) counts the requests the fast path took. */
static char *feed_cuts_fast(size_t max_header, size_t max_body, const char *data, size_t len,
                            const size_t *cuts, size_t ncuts, size_t *fast_taken) {
    sl__http_parser *p = sl__http_parser_new(max_header, max_body);
    sl__http_parser *slow = sl__http_parser_new(max_header, max_body);
    assert_non_null(p);
    assert_non_null(slow);
    sl__http_parser_set_fast(slow, false);
    size_t taken = 0;
    sl__buf out;
    sl__buf_init(&out);
    for (size_t c = 0, start = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        const char *msg;
        int status =
            http_feed_both(p, slow, data + start, end - start, dump_to, &out, &msg, &taken);
        if (status) {
            sl__buf_printf(&out, "ERROR %d\n", status);
            break;
        }
        start = end;
    }
    sl__http_parser_free(p);
    sl__http_parser_free(slow);
    sl__buf_append(&out, "", 1);
    if (fast_taken) *fast_taken = taken;
    return out.data;
}

static char *feed_cuts(size_t max_header, size_t max_body, const char *data, size_t len,
                       const size_t *cuts, size_t ncuts) {
    return feed_cuts_fast(max_header, max_body, data, len, cuts, ncuts, NULL);
}

static char *feed_whole(size_t max_header, size_t max_body, const char *data, size_t len) {
    return feed_cuts(max_header, max_body, data, len, NULL, 0);
}

static char *feed_bytewise(size_t max_header, size_t max_body, const char *data, size_t len) {
    size_t *cuts = malloc((len ? len : 1) * sizeof *cuts);
    for (size_t i = 0; i + 1 < len; i++) cuts[i] = i + 1;
    char *r = feed_cuts(max_header, max_body, data, len, cuts, len ? len - 1 : 0);
    free(cuts);
    return r;
}

/* d, a feed's dump (freed here), is exactly want. */
static void expect_dump(char *d, const char *want) {
    assert_string_equal(d, want);
    free(d);
}

/* Parses one complete request and returns the parser holding it. */
static sl__http_parser *parse_one(const char *req) {
    sl__http_parser *p = sl__http_parser_new(8192, 65536);
    size_t used = 0;
    sl__http_status st = sl__http_parser_feed(p, req, strlen(req), &used);
    if (st != SL__HTTP_READY) {
        const char *msg = "";
        int s = st == SL__HTTP_ERROR ? sl__http_parser_error_status(p, &msg) : 0;
        fail_msg("not ready (%d, %d %s): %s", st, s, msg, req);
    }
    assert_int_equal(used, strlen(req));
    return p;
}

/* The status a request gets: 0 when it parses, else the error status. */
static int status_of(size_t max_header, size_t max_body, const char *req, size_t len) {
    sl__http_parser *p = sl__http_parser_new(max_header, max_body);
    size_t used = 0;
    sl__http_status st = sl__http_parser_feed(p, req, len, &used);
    int s = st == SL__HTTP_ERROR   ? sl__http_parser_error_status(p, NULL)
            : st == SL__HTTP_READY ? 0
                                   : -1;
    sl__http_parser_free(p);
    return s;
}

/* ---- parsing ------------------------------------------------------------------ */

static void test_simple_get(void **state) {
    (void)state;
    sl__http_parser *p = parse_one("GET /v1/check?policy=api&key=alice HTTP/1.1\r\n"
                                   "Host: localhost:8080\r\nUser-Agent: curl/7.88.1\r\n"
                                   "Accept: */*\r\n\r\n");
    const sl__http_request *r = sl__http_parser_request(p);
    assert_int_equal(r->method, SL__HTTP_GET);
    assert_string_equal(r->method_name, "GET");
    assert_string_equal(r->path, "/v1/check");
    assert_int_equal(r->path_len, 9);
    assert_string_equal(r->query, "policy=api&key=alice");
    assert_int_equal(r->query_len, 20);
    assert_int_equal(r->nheaders, 3);
    assert_string_equal(r->headers[0].name, "Host");
    assert_string_equal(r->headers[0].value, "localhost:8080");
    assert_string_equal(r->headers[2].value, "*/*");
    assert_int_equal(r->body_len, 0);
    assert_non_null(r->body);
    assert_true(r->keep_alive);
    assert_int_equal(r->http_major, 1);
    assert_int_equal(r->http_minor, 1);
    sl__http_parser_free(p);
}

static void test_header_values(void **state) {
    (void)state;
    sl__http_parser *p =
        parse_one("GET / HTTP/1.1\r\nX-Empty:\r\nX-Spaces:   \r\n"
                  "X-Trail: value \t \r\nX-Fold: a\r\n b\r\nX-Inner: a  b\r\n\r\n");
    const sl__http_request *r = sl__http_parser_request(p);
    assert_int_equal(r->nheaders, 5);
    assert_string_equal(r->headers[0].name, "X-Empty");
    assert_string_equal(r->headers[0].value, "");
    assert_int_equal(r->headers[0].value_len, 0);
    assert_string_equal(r->headers[1].name, "X-Spaces");
    assert_string_equal(r->headers[1].value, "");
    assert_string_equal(r->headers[2].value, "value");
    assert_int_equal(r->headers[2].value_len, 5);
    assert_string_equal(r->headers[3].value, "a b"); /* obs-fold becomes one space */
    assert_string_equal(r->headers[4].value, "a  b");
    assert_string_equal(r->query, "");
    sl__http_parser_free(p);
}

static const char pipeline[] =
    "GET /v1/check?policy=api&key=alice%40example.com HTTP/1.1\r\nHost: localhost\r\n"
    "X-Empty:\r\nX-Fold: a\r\n b\r\nUser-Agent: t  \r\n\r\n"
    "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Content-Length: 37\r\n\r\n{\"policy\":\"api\",\"key\":\"bob\",\"cost\":2}"
    "\r\n" /* a stray empty line between requests is allowed (RFC 9112 2.2) */
    "POST /x?a=1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer-One: t\r\n\r\n"
    "PUT /v1/check HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
    "HEAD /healthz HTTP/1.0\r\n\r\n";

static const char pipeline_dump[] =
    "1 GET path=[/v1/check](9) query=[policy=api&key=alice%40example.com](34) HTTP/1.1 ka=1\n"
    "  [Host]=[localhost]\n  [X-Empty]=[]\n  [X-Fold]=[a b]\n  [User-Agent]=[t]\n  body(0)=[]\n"
    "3 POST path=[/v1/check](9) query=[](0) HTTP/1.1 ka=1\n"
    "  [Host]=[x]\n  [Content-Type]=[application/json]\n  [Content-Length]=[37]\n"
    "  body(37)=[{\"policy\":\"api\",\"key\":\"bob\",\"cost\":2}]\n"
    "3 POST path=[/x](2) query=[a=1](3) HTTP/1.1 ka=1\n"
    "  [Transfer-Encoding]=[chunked]\n  body(11)=[hello world]\n"
    "0 PUT path=[/v1/check](9) query=[](0) HTTP/1.1 ka=1\n  [Content-Length]=[2]\n  body(2)=[hi]\n"
    "2 HEAD path=[/healthz](8) query=[](0) HTTP/1.0 ka=0\n  body(0)=[]\n";

static void test_pipelined_whole(void **state) {
    (void)state;
    expect_dump(feed_whole(8192, 65536, pipeline, sizeof pipeline - 1), pipeline_dump);
}

/* Each request ends exactly where the next begins. */
static void test_pipelined_consumed(void **state) {
    (void)state;
    const char *a = "GET /a HTTP/1.1\r\n\r\n",
               *b = "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz";
    char buf[256];
    snprintf(buf, sizeof buf, "%s%s%s", a, b, a);
    sl__http_parser *p = sl__http_parser_new(8192, 65536);
    size_t used, off = 0, len = strlen(buf);
    assert_int_equal(sl__http_parser_feed(p, buf, len, &used), SL__HTTP_READY);
    assert_int_equal(used, strlen(a));
    /* Without sl__http_parser_next() nothing more is taken. */
    assert_int_equal(sl__http_parser_feed(p, buf + used, len - used, &used), SL__HTTP_READY);
    assert_int_equal(used, 0);
    off = strlen(a);
    sl__http_parser_next(p);
    assert_int_equal(sl__http_parser_feed(p, buf + off, len - off, &used), SL__HTTP_READY);
    assert_int_equal(used, strlen(b));
    assert_string_equal(sl__http_parser_request(p)->body, "xyz");
    off += used;
    sl__http_parser_next(p);
    assert_int_equal(sl__http_parser_feed(p, buf + off, len - off, &used), SL__HTTP_READY);
    assert_int_equal(used, strlen(a));
    assert_string_equal(sl__http_parser_request(p)->path, "/a");
    sl__http_parser_next(p);
    assert_int_equal(sl__http_parser_feed(p, "", 0, &used), SL__HTTP_NEED_MORE);
    assert_int_equal(used, 0);
    sl__http_parser_free(p);
}

static void test_every_split_point(void **state) {
    (void)state;
    size_t len = sizeof pipeline - 1;
    for (size_t i = 0; i <= len; i++) {
        char *d = feed_cuts(8192, 65536, pipeline, len, &i, 1);
        if (strcmp(d, pipeline_dump) != 0) fail_msg("split at %zu:\n%s", i, d);
        free(d);
    }
    /* and every pair of split points of the first two requests */
    for (size_t i = 0; i < 200; i++)
        for (size_t j = i; j < 200; j++) {
            size_t cuts[2] = {i, j};
            char *d = feed_cuts(8192, 65536, pipeline, len, cuts, 2);
            if (strcmp(d, pipeline_dump) != 0) fail_msg("split at %zu, %zu:\n%s", i, j, d);
            free(d);
        }
}

static void test_bytewise(void **state) {
    (void)state;
    expect_dump(feed_bytewise(8192, 65536, pipeline, sizeof pipeline - 1), pipeline_dump);
}

static void test_random_pieces(void **state) {
    (void)state;
    size_t len = sizeof pipeline - 1;
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int round = 0; round < 2000; round++) {
        size_t cuts[64], n = 0, at = 0;
        while (n < 64) {
            helper_rand(&x);
            at += 1 + x % 40;
            if (at >= len) break;
            cuts[n++] = at;
        }
        expect_dump(feed_cuts(8192, 65536, pipeline, len, cuts, n), pipeline_dump);
    }
}

static void test_chunked(void **state) {
    (void)state;
    sl__http_parser *p = parse_one("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                   "Content-Type: application/json\r\n\r\n"
                                   "1\r\n{\r\nA;name=\"quoted\"\r\n\"a\":\"0123\"\r\n"
                                   "1\r\n}\r\n0\r\n\r\n");
    const sl__http_request *r = sl__http_parser_request(p);
    assert_int_equal(r->body_len, 12);
    assert_memory_equal(r->body, "{\"a\":\"0123\"}", 12);
    assert_int_equal(r->body[12], '\0');
    assert_int_equal(r->nheaders, 2);
    sl__http_parser_free(p);

    /* Trailers are accepted, not stored. */
    p = parse_one("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "3\r\nabc\r\n0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\n");
    r = sl__http_parser_request(p);
    assert_int_equal(r->nheaders, 1);
    assert_string_equal(r->body, "abc");
    sl__http_parser_free(p);

    /* upper-case hex sizes */
    p = parse_one("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "0A\r\n0123456789\r\n0\r\n\r\n");
    assert_string_equal(sl__http_parser_request(p)->body, "0123456789");
    sl__http_parser_free(p);
}

/* ---- bounds ------------------------------------------------------------------- */

/* A GET whose request line and header section are exactly `len` bytes. */
static char *request_of_size(size_t len) {
    const char *head = "GET / HTTP/1.1\r\nX: ", *tail = "\r\n\r\n";
    size_t fixed = strlen(head) + strlen(tail);
    assert_true(len > fixed);
    char *r = malloc(len + 64);
    strcpy(r, head);
    memset(r + strlen(head), 'a', len - fixed);
    strcpy(r + len - strlen(tail), tail);
    assert_int_equal(strlen(r), len);
    return r;
}

static void test_431_exact(void **state) {
    (void)state;
    for (size_t len = 30; len < 300; len += 37) {
        char *r = request_of_size(len);
        assert_int_equal(status_of(len, 0, r, len), 0);
        assert_int_equal(status_of(len - 1, 0, r, len), 431);
        char *d = feed_bytewise(len, 0, r, len);
        assert_int_equal(strncmp(d, "1 GET", 5), 0);
        free(d);
        expect_dump(feed_bytewise(len - 1, 0, r, len), "ERROR 431\n");
        /* with a pipelined request behind it, exactly at the bound */
        strcat(r, "GET /next HTTP/1.1\r\n\r\n");
        d = feed_whole(len, 0, r, strlen(r));
        assert_non_null(strstr(d, "path=[/next]"));
        free(d);
        free(r);
    }
    /* The bound covers leading empty lines and the request line alone. */
    assert_int_equal(status_of(10, 0, "\r\n\r\nGET / HTTP/1.1\r\n\r\n", 22), 431);
    char longurl[600] = "GET /";
    memset(longurl + 5, 'x', 500);
    strcpy(longurl + 505, " HTTP/1.1\r\n\r\n");
    assert_int_equal(status_of(400, 0, longurl, strlen(longurl)), 431);
    assert_int_equal(status_of(600, 0, longurl, strlen(longurl)), 0);
    /* 431 as soon as the bound is passed, without waiting for the end. */
    assert_int_equal(status_of(400, 0, longurl, 401), 431);
    assert_int_equal(status_of(400, 0, longurl, 400), -1);
    /* A POST whose header section is exactly the bound, body behind it. */
    const char *post = "POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody";
    size_t head = strlen(post) - 4;
    assert_int_equal(status_of(head, 4, post, strlen(post)), 0);
    assert_int_equal(status_of(head - 1, 4, post, strlen(post)), 431);
}

static void test_too_many_headers(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_puts(&b, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < SL__HTTP_MAX_HEADERS; i++) sl__buf_printf(&b, "H%d: %d\r\n", i, i);
    size_t mark = b.len;
    sl__buf_puts(&b, "\r\n");
    assert_int_equal(status_of(8192, 0, b.data, b.len), 0);
    b.len = mark;
    sl__buf_puts(&b, "One-Too-Many: x\r\n\r\n");
    assert_int_equal(status_of(8192, 0, b.data, b.len), 431);
    sl__buf_free(&b);
}

static void test_413(void **state) {
    (void)state;
    /* by Content-Length: decided when the header section ends, no body sent */
    const char *h11 = "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n";
    assert_int_equal(status_of(8192, 10, h11, strlen(h11)), 413);
    const char *h10 = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789";
    assert_int_equal(status_of(8192, 10, h10, strlen(h10)), 0);
    const char *huge = "POST / HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n";
    assert_int_equal(status_of(8192, 10, huge, strlen(huge)), 413);
    /* by a chunk size: before the chunk's data arrives */
    const char *c11 = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n";
    assert_int_equal(status_of(8192, 10, c11, strlen(c11)), 413);
    /* by chunks adding up */
    const char *c6_5 = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "6\r\n012345\r\n5\r\n";
    assert_int_equal(status_of(8192, 10, c6_5, strlen(c6_5)), 413);
    const char *c6_4 = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n";
    assert_int_equal(status_of(8192, 10, c6_4, strlen(c6_4)), 0);
    expect_dump(feed_bytewise(8192, 10, c6_5, strlen(c6_5)), "ERROR 413\n");
    /* max_body 0: any body is too large */
    const char *one = "POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx";
    assert_int_equal(status_of(8192, 0, one, strlen(one)), 413);
    const char *zero = "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(status_of(8192, 0, zero, strlen(zero)), 0);
}

/* Chunk extensions and trailers are framing, not body: still bounded. */
static void test_chunk_framing_bounded(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_puts(&b, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;");
    for (int i = 0; i < 40000; i++) sl__buf_puts(&b, "x");
    sl__buf_puts(&b, "\r\na\r\n0\r\n\r\n");
    assert_int_equal(status_of(1024, 10, b.data, b.len), 413);
    expect_dump(feed_cuts(1024, 10, b.data, b.len, (size_t[]){100, 20000}, 2), "ERROR 413\n");
    sl__buf_reset(&b);
    sl__buf_puts(&b, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: ");
    for (int i = 0; i < 2000; i++) sl__buf_puts(&b, "y");
    sl__buf_puts(&b, "\r\n\r\n");
    assert_int_equal(status_of(1024, 10, b.data, b.len), 431);
    assert_int_equal(status_of(4096, 10, b.data, b.len), 0);
    sl__buf_free(&b);
}

typedef struct bad_case {
    const char *req;
    int status;
} bad_case;

static void test_bad_requests(void **state) {
    (void)state;
    static const bad_case cases[] = {
        {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400}, /* a TLS ClientHello */
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400},             /* the HTTP/2 preface */
        {"GET / HTTP/2.0\r\n\r\n", 505},
        {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
        {"GET / HTTP/0.9\r\n\r\n", 505},
        {"GET / HTTP/3.1\r\nHost: x", 505}, /* known at the first header field */
        {"GET / HTTP/12.1\r\n\r\n", 400},
        {"GET / FOO/1.1\r\n\r\n", 400},
        {"GET /\r\n\r\n", 505}, /* HTTP/0.9 */
        {"FOO / HTTP/1.1\r\n\r\n", 400},
        {"get / HTTP/1.1\r\n\r\n", 400},
        {"GET /a b HTTP/1.1\r\n\r\n", 400},
        {"GET /\x01 HTTP/1.1\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\x01"
         "b\r\n\r\n",
         400},
        {"GET / HTTP/1.1\r\nHost: \x01"
         "b\r\n\r\n",
         400},
        {"GET / HTTP/1.1\r\nHost: \x1b[31m\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: \x7f\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n: novalue\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *r = cases[i].req;
        int s = status_of(8192, 1024, r, strlen(r));
        if (s != cases[i].status)
            fail_msg("case %zu: got %d, want %d: %s", i, s, cases[i].status, r);
        char *d = feed_bytewise(8192, 1024, r, strlen(r));
        char want[32];
        snprintf(want, sizeof want, "ERROR %d\n", cases[i].status);
        if (strcmp(d, want) != 0) fail_msg("case %zu bytewise: %s", i, d);
        free(d);
    }
    /* a NUL would make a C string lie about its length */
    static const char nul_first[] = "GET / HTTP/1.1\r\nHost: \0b\r\n\r\n";
    static const char nul_mid[] = "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n";
    static const char nul_url[] = "GET /a\0b HTTP/1.1\r\n\r\n";
    static const char nul_name[] = "GET / HTTP/1.1\r\nHo\0st: b\r\n\r\n";
    assert_int_equal(status_of(8192, 1024, nul_first, sizeof nul_first - 1), 400);
    assert_int_equal(status_of(8192, 1024, nul_mid, sizeof nul_mid - 1), 400);
    assert_int_equal(status_of(8192, 1024, nul_url, sizeof nul_url - 1), 400);
    assert_int_equal(status_of(8192, 1024, nul_name, sizeof nul_name - 1), 400);
    /* the error stays: nothing more is parsed */
    sl__http_parser *p = sl__http_parser_new(8192, 1024);
    size_t used;
    assert_int_equal(sl__http_parser_feed(p, "XYZ", 3, &used), SL__HTTP_ERROR);
    assert_int_equal(sl__http_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &used), SL__HTTP_ERROR);
    assert_int_equal(used, 0);
    assert_null(sl__http_parser_request(p));
    const char *msg;
    assert_int_equal(sl__http_parser_error_status(p, &msg), 400);
    assert_true(strlen(msg) > 0);
    /* a new request after sl__http_parser_next() parses again */
    sl__http_parser_next(p);
    assert_int_equal(sl__http_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &used), SL__HTTP_READY);
    sl__http_parser_free(p);
}

static void test_other_methods(void **state) {
    (void)state;
    static const char *const reqs[] = {"PUT /v1/check HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi",
                                       "DELETE /v1/check HTTP/1.1\r\n\r\n",
                                       "OPTIONS * HTTP/1.1\r\n\r\n",
                                       "PATCH /x HTTP/1.1\r\n\r\n",
                                       "CONNECT example.com:443 HTTP/1.1\r\n\r\n",
                                       "TRACE / HTTP/1.1\r\n\r\n"};
    static const char *const names[] = {"PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE"};
    static const char *const paths[] = {"/v1/check", "/v1/check",       "*",
                                        "/x",        "example.com:443", "/"};
    for (size_t i = 0; i < 6; i++) {
        sl__http_parser *p = parse_one(reqs[i]);
        const sl__http_request *r = sl__http_parser_request(p);
        assert_int_equal(r->method, SL__HTTP_OTHER);
        assert_string_equal(r->method_name, names[i]);
        assert_string_equal(r->path, paths[i]);
        sl__http_parser_free(p);
    }
    sl__http_parser *p = parse_one("HEAD /healthz HTTP/1.1\r\n\r\n");
    assert_int_equal(sl__http_parser_request(p)->method, SL__HTTP_HEAD);
    sl__http_parser_free(p);
}

static void test_keep_alive(void **state) {
    (void)state;
    static const struct {
        const char *req;
        bool keep;
    } cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", true},
        {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nConnection: Close\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: close\r\n\r\n", false},
        {"POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl__http_parser *p = parse_one(cases[i].req);
        if (sl__http_parser_request(p)->keep_alive != cases[i].keep)
            fail_msg("case %zu: %s", i, cases[i].req);
        sl__http_parser_free(p);
    }
}

static void test_targets(void **state) {
    (void)state;
    static const struct {
        const char *target, *path, *query;
    } cases[] = {
        {"/v1/check?policy=a", "/v1/check", "policy=a"},
        {"/", "/", ""},
        {"/?", "/", ""},
        {"/p?q=1?2", "/p", "q=1?2"},
        {"/p#frag", "/p", ""},
        {"/p?q=1#frag", "/p", "q=1"},
        {"http://localhost:8080/v1/check?policy=a", "/v1/check", "policy=a"},
        {"HTTP://host", "/", ""},
        {"http://host?x=1", "/", "x=1"},
        {"https://host/a/b", "/a/b", ""},
        {"/%7Euser/a%20b", "/%7Euser/a%20b", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char req[256];
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", cases[i].target);
        sl__http_parser *p = parse_one(req);
        const sl__http_request *r = sl__http_parser_request(p);
        if (strcmp(r->path, cases[i].path) || strcmp(r->query, cases[i].query))
            fail_msg("%s: path [%s] query [%s]", cases[i].target, r->path, r->query);
        assert_int_equal(r->path_len, strlen(cases[i].path));
        assert_int_equal(r->query_len, strlen(cases[i].query));
        sl__http_parser_free(p);
    }
}

static void test_in_request(void **state) {
    (void)state;
    sl__http_parser *p = sl__http_parser_new(8192, 1024);
    size_t used;
    assert_false(sl__http_parser_in_request(p));
    /* empty lines before a request do not start one */
    assert_int_equal(sl__http_parser_feed(p, "\r\n", 2, &used), SL__HTTP_NEED_MORE);
    assert_false(sl__http_parser_in_request(p));
    assert_int_equal(sl__http_parser_feed(p, "GE", 2, &used), SL__HTTP_NEED_MORE);
    assert_true(sl__http_parser_in_request(p));
    assert_int_equal(sl__http_parser_feed(p, "T / HTTP/1.1\r\n\r\n", 16, &used), SL__HTTP_READY);
    assert_false(sl__http_parser_in_request(p));
    sl__http_parser_next(p);
    assert_false(sl__http_parser_in_request(p));
    sl__http_parser_free(p);
}

static void test_expect_continue(void **state) {
    (void)state;
    sl__http_parser *p = sl__http_parser_new(8192, 1024);
    const char *h = "POST /v1/check HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n";
    size_t used;
    assert_false(sl__http_parser_take_continue(p));
    assert_int_equal(sl__http_parser_feed(p, h, strlen(h), &used), SL__HTTP_NEED_MORE);
    assert_true(sl__http_parser_take_continue(p));
    assert_false(sl__http_parser_take_continue(p)); /* once */
    assert_int_equal(sl__http_parser_feed(p, "hello", 5, &used), SL__HTTP_READY);
    assert_false(sl__http_parser_take_continue(p));
    sl__http_parser_next(p);
    static const struct {
        const char *req;
        sl__http_status st;
    } no_continue[] = {
        /* body already there: nothing to continue */
        {"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx", SL__HTTP_READY},
        /* no body, HTTP/1.0, or too large (below): no 100 */
        {"GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n", SL__HTTP_READY},
        {"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
         SL__HTTP_NEED_MORE},
    };
    for (size_t i = 0; i < COUNT(no_continue); i++) {
        const char *req = no_continue[i].req;
        assert_int_equal(sl__http_parser_feed(p, req, strlen(req), &used), no_continue[i].st);
        assert_false(sl__http_parser_take_continue(p));
        sl__http_parser_next(p);
    }
    const char *big = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n";
    assert_int_equal(sl__http_parser_feed(p, big, strlen(big), &used), SL__HTTP_ERROR);
    assert_int_equal(sl__http_parser_error_status(p, NULL), 413);
    assert_false(sl__http_parser_take_continue(p));
    sl__http_parser_free(p);

    sl__buf b;
    sl__buf_init(&b);
    sl__http_continue(&b);
    assert_int_equal(b.len, 25);
    assert_memory_equal(b.data, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    sl__buf_free(&b);
}

/* A large request grows the arena; the next ones still parse (and the big
 * arena is released). */
static void test_arena_reuse(void **state) {
    (void)state;
    size_t big = 300 * 1024;
    sl__http_parser *p = sl__http_parser_new(8192, big);
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_printf(&b, "POST / HTTP/1.1\r\nContent-Length: %zu\r\n\r\n", big);
    char *body = sl__buf_reserve(&b, big);
    for (size_t i = 0; i < big; i++) body[i] = (char)('a' + i % 26);
    sl__buf_commit(&b, big);
    size_t used;
    assert_int_equal(sl__http_parser_feed(p, b.data, b.len, &used), SL__HTTP_READY);
    const sl__http_request *r = sl__http_parser_request(p);
    assert_int_equal(r->body_len, big);
    assert_int_equal(r->body[big - 1], 'a' + (big - 1) % 26);
    for (int i = 0; i < 1000; i++) {
        sl__http_parser_next(p);
        char req[128];
        int n = snprintf(req, sizeof req, "GET /r%d?i=%d HTTP/1.1\r\nX-I: %d\r\n\r\n", i, i, i);
        assert_int_equal(sl__http_parser_feed(p, req, (size_t)n, &used), SL__HTTP_READY);
        r = sl__http_parser_request(p);
        char want[32];
        snprintf(want, sizeof want, "%d", i);
        assert_string_equal(r->headers[0].value, want);
    }
    sl__buf_free(&b);
    sl__http_parser_free(p);
}

/* ---- the fast path (http_fast.c) against libhttp-parser alone ------------------ */

/* Fed whole and byte by byte, req (len bytes) parses the same with the fast
 * path and without (feed_cuts_fast checks each step); returns how many of
 * its requests the fast path took when fed whole. */
static size_t fast_count(size_t max_header, size_t max_body, const char *req, size_t len) {
    size_t taken = 0, bytewise = 0;
    free(feed_cuts_fast(max_header, max_body, req, len, NULL, 0, &taken));
    size_t *cuts = malloc((len ? len : 1) * sizeof *cuts);
    for (size_t i = 0; i + 1 < len; i++) cuts[i] = i + 1;
    free(feed_cuts_fast(max_header, max_body, req, len, cuts, len ? len - 1 : 0, &bytewise));
    free(cuts);
    /* one byte at a time, only a request of one byte could be whole: none */
    assert_int_equal(bytewise, 0);
    return taken;
}

typedef struct fast_case {
    const char *req;
    size_t requests; /* how many the fast path takes, fed whole */
} fast_case;

/* Requests the fast path takes: the same request as libhttp-parser's. */
static void test_fast_accepts(void **state) {
    (void)state;
    static const fast_case cases[] = {
        {"GET /v1/check?policy=api&key=k HTTP/1.1\r\nHost: x\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\n\r\n", 1},
        {"HEAD /healthz HTTP/1.1\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n", 1},
        {"POST /v1/check HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 26\r\n"
         "\r\n{\"policy\":\"api\",\"key\":\"k\"}",
         1},
        {"POST /x HTTP/1.1\r\ncontent-length: 0\r\n\r\n", 1},
        {"GET /x HTTP/1.1\r\nCONTENT-LENGTH: 007\r\n\r\nabcdefg", 1}, /* a body on a GET */
        {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nConnection: CLOSE\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\n", 1},
        {"GET /a?b=c?d&e=%20+f HTTP/1.1\r\nX-Empty:\r\nX-Spaces: \t \r\n"
         "X-Trail: v \t\r\nX-Inner: a \t b\r\nX-Punct: !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\r\n"
         "!#$%&'*+-.^_`|~09azAZ: tchar\r\n\r\n",
         1},
        {"GET /a HTTP/1.1\r\nContent-Lengthy: 5\r\nConnectio: x\r\nExpects: y\r\n"
         "Upgrades: z\r\nTransfer-Encodin: w\r\nConnections: close\r\n\r\n",
         1}, /* names that only look like the special ones */
        /* pipelined: each in turn, consumed exactly */
        {"GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyzGET /c "
         "HTTP/1.1\r\n"
         "\r\nHEAD /d HTTP/1.1\r\nConnection: close\r\n\r\n",
         4},
        /* the fast path after a slow one, on the same parser */
        {"PUT /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n", 1},
        {"GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n", 1},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        size_t n = fast_count(8192, 1024, cases[i].req, strlen(cases[i].req));
        if (n != cases[i].requests)
            fail_msg("case %zu: fast path took %zu, want %zu: %s", i, n, cases[i].requests,
                     cases[i].req);
    }
    /* keep-alive and the fields, as libhttp-parser gives them */
    sl__http_parser *p = parse_one("GET /p?q HTTP/1.1\r\nConnection: close\r\nX-T: a \t\r\n\r\n");
    assert_true(sl__http_parser_took_fast(p));
    const sl__http_request *r = sl__http_parser_request(p);
    assert_false(r->keep_alive);
    assert_string_equal(r->path, "/p");
    assert_string_equal(r->query, "q");
    assert_string_equal(r->headers[1].value, "a");
    assert_int_equal(r->headers[1].value_len, 1);
    sl__http_parser_free(p);
    /* turned off: never taken */
    p = sl__http_parser_new(8192, 1024);
    sl__http_parser_set_fast(p, false);
    size_t used;
    assert_int_equal(sl__http_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &used), SL__HTTP_READY);
    assert_false(sl__http_parser_took_fast(p));
    sl__http_parser_free(p);
}

/* Requests the fast path leaves to libhttp-parser, whatever it then says
 * (a request, or an error with the status it always had). */
static void test_fast_declines(void **state) {
    (void)state;
    static const char *const cases[] = {
        "GET / HTTP/1.0\r\n\r\n",
        "GET / HTTP/1.2\r\n\r\n",
        "GET / HTTP/2.0\r\n\r\n",
        "PUT / HTTP/1.1\r\n\r\n",
        "DELETE / HTTP/1.1\r\n\r\n",
        "get / HTTP/1.1\r\n\r\n",
        "GET  / HTTP/1.1\r\n\r\n",
        "GET /  HTTP/1.1\r\n\r\n",
        "GET * HTTP/1.1\r\n\r\n",
        "GET http://h/a HTTP/1.1\r\n\r\n",
        "GET /a#frag HTTP/1.1\r\n\r\n",
        "GET /a\tb HTTP/1.1\r\n\r\n",
        "GET /\x80 HTTP/1.1\r\n\r\n",
        "GET /\x7f HTTP/1.1\r\n\r\n",
        "GET /\r\n\r\n",
        "\r\nGET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\n\n",
        "GET / HTTP/1.1\r\nHost: x\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\n\n",
        "GET / HTTP/1.1\r\nHost: x\rX\r\n\r\n",
        "GET / HTTP/1.1\r\nX-Fold: a\r\n b\r\n\r\n",
        "GET / HTTP/1.1\r\nX-Fold: a\r\n\tb\r\n\r\n",
        "GET / HTTP/1.1\r\n Host: x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "GET / HTTP/1.1\r\n: x\r\n\r\n",
        "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
        "GET / HTTP/1.1\r\nX(y): z\r\n\r\n",
        "GET / HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n",
        "GET / HTTP/1.1\r\nX: \x7f\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n",
        "GET / HTTP/1.1\r\nTransfer-Encodings: x\r\n\r\n", /* 501 for libhttp-parser 2.9.4 */
        "GET / HTTP/1.1\r\nTransfer-Encoding-X: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy",
        "POST / HTTP/1.1\r\nContent-Length: 1 \r\n\r\nx",
        "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx",
        "POST / HTTP/1.1\r\nContent-Length: 1,1\r\n\r\nx",
        "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 0000000001\r\n\r\nx", /* 10 digits */
        "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1025\r\n\r\n", /* > max_body: 413 */
        "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc", /* partial body */
        "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
        "GET / HTTP/1.1\r\nexpect: whatever\r\n\r\n",
        "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "GET / HTTP/1.1\r\nUpgrade: h2c\r\n\r\n",
        "GET / HTTP/1.1\r\nProxy-Connection: close\r\n\r\n",
        "GET / HTTP/1.1\r\nConnection: close \r\n\r\n",
        "GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n",
        "GET / HTTP/1.1\r\nConnection: upgrade\r\n\r\n",
        "GET / HTTP/1.1\r\nConnection: closed\r\n\r\n",
        "GET / HTTP/1.1\r\nConnection:\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\n", /* partial */
        "GET / HTTP/1.1\r\nHost: x\r\n\r",
        "GET / HTTP/1.1",
        "GET /",
        "GET",
        "",
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        size_t n = fast_count(8192, 1024, cases[i], strlen(cases[i]));
        if (n != 0) fail_msg("case %zu: the fast path took it: %s", i, cases[i]);
    }
    static const char nul_value[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
    static const char nul_url[] = "GET /a\0 HTTP/1.1\r\n\r\n";
    assert_int_equal(fast_count(8192, 1024, nul_value, sizeof nul_value - 1), 0);
    assert_int_equal(fast_count(8192, 1024, nul_url, sizeof nul_url - 1), 0);
}

/* The limits: the fast path takes a request at each bound and declines
 * one byte past it, where libhttp-parser answers 431 or 413. */
static void test_fast_bounds(void **state) {
    (void)state;
    for (size_t len = 30; len < 300; len += 37) {
        char *r = request_of_size(len);
        assert_int_equal(fast_count(len, 0, r, len), 1);
        assert_int_equal(fast_count(len - 1, 0, r, len), 0);
        assert_int_equal(status_of(len - 1, 0, r, len), 431);
        free(r);
    }
    /* its own bound: heads of up to 8 KiB */
    char *r = request_of_size(8192);
    assert_int_equal(fast_count(65536, 0, r, 8192), 1);
    free(r);
    r = request_of_size(8193);
    assert_int_equal(fast_count(65536, 0, r, 8193), 0);
    assert_int_equal(status_of(65536, 0, r, 8193), 0);
    free(r);
    const char *post = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789";
    assert_int_equal(fast_count(8192, 10, post, strlen(post)), 1);
    assert_int_equal(fast_count(8192, 9, post, strlen(post)), 0);
    assert_int_equal(status_of(8192, 9, post, strlen(post)), 413);
    /* SL__HTTP_MAX_HEADERS fields, then one more (431) */
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_puts(&b, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < SL__HTTP_MAX_HEADERS; i++) sl__buf_printf(&b, "H%d: %d\r\n", i, i);
    size_t mark = b.len;
    sl__buf_puts(&b, "\r\n");
    assert_int_equal(fast_count(8192, 0, b.data, b.len), 1);
    b.len = mark;
    sl__buf_puts(&b, "One-Too-Many: x\r\n\r\n");
    assert_int_equal(fast_count(8192, 0, b.data, b.len), 0);
    assert_int_equal(status_of(8192, 0, b.data, b.len), 431);
    sl__buf_free(&b);
}

/* Each byte of requests the fast path takes, replaced by each of the 256
 * values (and each prefix of them, and each split in two): the fast path
 * and libhttp-parser alone agree on all of them, fed whole and split. */
static void test_fast_every_byte(void **state) {
    (void)state;
    static const char *const templates[] = {
        "GET /v1/check?policy=api&key=k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "POST /v1/check HTTP/1.1\r\nContent-Length: 2\r\nX: a b\r\n\r\n{}GET / HTTP/1.1\r\n\r\n",
        "HEAD / HTTP/1.1\r\nTe: x\r\nUpgrade0: y\r\nExpect1: z\r\n\r\n",
        /* names one byte away from the special ones (and from longer ones) */
        "GET / HTTP/1.1\r\nTransfer-Encodin9s: w\r\nContent-Lengt9: 3\r\n"
        "Connectio9: close\r\nUpgrad9: y\r\nExpec9: z\r\nProxy-Connectio9: k\r\n\r\nabc",
    };
    size_t accepted = 0;
    for (size_t t = 0; t < COUNT(templates); t++) {
        size_t len = strlen(templates[t]);
        char *buf = malloc(len);
        memcpy(buf, templates[t], len);
        assert_true(fast_count(8192, 16, buf, len) >= 1);
        for (size_t i = 0; i < len; i++) {
            char keep = buf[i];
            for (int v = 0; v < 256; v++) {
                size_t taken = 0;
                buf[i] = (char)v;
                free(feed_cuts_fast(8192, 16, buf, len, NULL, 0, &taken));
                accepted += taken;
                size_t cut = i + 1;
                free(feed_cuts_fast(8192, 16, buf, len, &cut, 1, NULL));
            }
            buf[i] = keep;
            free(feed_cuts_fast(8192, 16, buf, i, NULL, 0, NULL)); /* a prefix */
            free(feed_cuts_fast(8192, 16, buf, len, &i, 1, NULL)); /* two reads */
        }
        free(buf);
    }
    assert_true(accepted > 1000); /* many of the variants are the fast path's */
}

/* ---- lookups ------------------------------------------------------------------ */

static void test_header_lookup(void **state) {
    (void)state;
    sl__http_parser *p = parse_one("POST / HTTP/1.1\r\ncontent-type: application/json\r\n"
                                   "X-Dup: first\r\nX-Dup: second\r\nContent: no\r\n"
                                   "Content-Length: 0\r\n\r\n");
    const sl__http_request *r = sl__http_parser_request(p);
    const sl__http_field *h = sl__http_header(r, "Content-Type");
    assert_non_null(h);
    assert_string_equal(h->value, "application/json");
    assert_ptr_equal(sl__http_header(r, "CONTENT-TYPE"), h);
    assert_ptr_equal(sl__http_header(r, "content-type"), h);
    assert_string_equal(sl__http_header(r, "x-dup")->value, "first");
    assert_string_equal(sl__http_header(r, "content")->value, "no");
    assert_null(sl__http_header(r, "Content-Typ"));
    assert_null(sl__http_header(r, "Content-Type2"));
    assert_null(sl__http_header(r, "Accept"));
    assert_null(sl__http_header(r, ""));
    sl__http_parser_free(p);
}

static long qp(const char *query, const char *name, char *buf, size_t size) {
    return sl__http_query_param(query, strlen(query), name, buf, size);
}

static void test_query_param(void **state) {
    (void)state;
    char buf[64];
    const char *q = "policy=api&key=alice%40example.com&cost=3&sp=a+b%2Bc&e=&flag&k%65y2=v2";
    assert_int_equal(qp(q, "policy", buf, sizeof buf), 3);
    assert_string_equal(buf, "api");
    assert_int_equal(qp(q, "key", buf, sizeof buf), 17);
    assert_string_equal(buf, "alice@example.com");
    assert_int_equal(qp(q, "cost", buf, sizeof buf), 1);
    assert_string_equal(buf, "3");
    assert_int_equal(qp(q, "sp", buf, sizeof buf), 5);
    assert_string_equal(buf, "a b+c");
    assert_int_equal(qp(q, "e", buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(qp(q, "flag", buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(qp(q, "key2", buf, sizeof buf), 2); /* the name is decoded too */
    assert_int_equal(qp(q, "missing", buf, sizeof buf), -1);
    assert_int_equal(qp(q, "ke", buf, sizeof buf), -1);
    assert_int_equal(qp(q, "policyx", buf, sizeof buf), -1);
    assert_int_equal(qp("", "key", buf, sizeof buf), -1);
    assert_int_equal(qp("&&", "key", buf, sizeof buf), -1);
    assert_int_equal(qp("&&key=v&", "key", buf, sizeof buf), 1);
    assert_int_equal(qp("keys=1&key=2", "key", buf, sizeof buf), 1);
    assert_string_equal(buf, "2");
    assert_int_equal(qp("key=1&key=2", "key", buf, sizeof buf), 1); /* the first one */
    assert_string_equal(buf, "1");
    assert_int_equal(qp("key=a=b", "key", buf, sizeof buf), 3);
    assert_string_equal(buf, "a=b");
    assert_int_equal(qp("key=%2f%2F%C3%A9", "key", buf, sizeof buf), 4);
    assert_string_equal(buf, "//\xc3\xa9");
    /* malformed escapes in the value asked for */
    static const char *const bad[] = {"key=%",   "key=%4",  "key=a%zz", "key=%G0",
                                      "key=%0g", "key=%00", "key=a%",   "key=%%41"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (qp(bad[i], "key", buf, sizeof buf) != -2) fail_msg("%s", bad[i]);
    /* ... but not in another parameter */
    assert_int_equal(qp("x=%zz&key=v", "key", buf, sizeof buf), 1);
    assert_int_equal(qp("%zz=1&key=v", "key", buf, sizeof buf), 1);
    /* bounds: size-1 bytes fit, one more does not */
    assert_int_equal(qp("key=abcd", "key", buf, 5), 4);
    assert_string_equal(buf, "abcd");
    assert_int_equal(qp("key=abcd", "key", buf, 4), -2);
    assert_int_equal(qp("key=%41%42%43%44", "key", buf, 5), 4);
    assert_int_equal(qp("key=%41%42%43%44", "key", buf, 4), -2);
    assert_int_equal(qp("key=", "key", buf, 1), 0);
    assert_int_equal(qp("key=", "key", buf, 0), -2);
    /* query_len is a hard bound: nothing beyond it is read */
    assert_int_equal(sl__http_query_param("key=abcdef", 7, "key", buf, sizeof buf), 3);
    assert_string_equal(buf, "abc");
    assert_int_equal(sl__http_query_param("key=%41", 6, "key", buf, sizeof buf), -2);
    assert_int_equal(sl__http_query_param("key=1", 2, "key", buf, sizeof buf), -1);
}

/* ---- responses ---------------------------------------------------------------- */

static char *take(sl__buf *b) {
    sl__buf_append(b, "", 1);
    assert_false(b->failed);
    return b->data;
}

static void test_reasons(void **state) {
    (void)state;
    static const int used[] = {200, 204, 400, 401, 403, 404, 405, 408,
                               413, 415, 429, 431, 500, 501, 503, 505};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) {
        const char *r = sl__http_reason(used[i]);
        assert_non_null(r);
        assert_string_not_equal(r, "Unknown");
    }
    assert_string_equal(sl__http_reason(429), "Too Many Requests");
    assert_string_equal(sl__http_reason(431), "Request Header Fields Too Large");
    assert_string_equal(sl__http_reason(299), "Unknown");
    assert_string_equal(sl__http_reason(418), "Unknown");
    sl__buf b;
    sl__buf_init(&b);
    sl__http_begin(&b, 404);
    assert_string_equal(take(&b), "HTTP/1.1 404 Not Found\r\nServer: sluiced\r\n");
    sl__buf_reset(&b);
    sl__http_begin(&b, 42); /* nonsense becomes 500 */
    assert_string_equal(take(&b), "HTTP/1.1 500 Internal Server Error\r\nServer: sluiced\r\n");
    sl__buf_free(&b);
}

static void test_framing(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__http_begin(&b, 200);
    sl__http_header_line(&b, "Allow", "GET, HEAD");
    sl__http_end(&b, true, "text/plain", "ok", 2);
    assert_string_equal(take(&b), "HTTP/1.1 200 OK\r\nServer: sluiced\r\nAllow: GET, HEAD\r\n"
                                  "Content-Type: text/plain\r\nContent-Length: 2\r\n"
                                  "Connection: keep-alive\r\n\r\nok");
    sl__buf_reset(&b);
    sl__http_begin(&b, 400);
    sl__http_end(&b, false, NULL, NULL, 0);
    assert_string_equal(take(&b), "HTTP/1.1 400 Bad Request\r\nServer: sluiced\r\n"
                                  "Content-Length: 0\r\nConnection: close\r\n\r\n");
    /* no header can be smuggled through a value */
    sl__buf_reset(&b);
    sl__http_header_line(&b, "X-A", "v\r\nSet-Cookie: x=1\n");
    assert_string_equal(take(&b), "X-A: v  Set-Cookie: x=1 \r\n");
    sl__buf_free(&b);
}

/* The view /v1/check and /v1/auth build for a policy of these parameters:
 * the policy layer's q, w and rate text (the one implementation of them).
 * p is a stand-in policy that only has its config; it must outlive v. */
static sl__http_policy_view view_of(sl__policy *p, const char *name, sl_algorithm alg, sl_rate rate,
                                    int64_t burst) {
    memset(p, 0, sizeof *p);
    p->cfg.params.algorithm = alg;
    p->cfg.params.rate = rate;
    p->cfg.params.burst = burst;
    sl__policy_rate_format(&p->cfg, p->rate_text, sizeof p->rate_text);
    sl__http_policy_view v = {.name = name, .rate = p->rate_text};
    sl__policy_quota(p, T0, &v.q, &v.w);
    return v;
}

/* The exact bytes of a 429, from a real decision: the seed's token bucket
 * (2/s, burst 3), fourth request at once. */
static void test_429_bytes(void **state) {
    (void)state;
    sl_table_options o = {.params = {.algorithm = SL_TOKEN_BUCKET, .rate = {2, SEC}, .burst = 3},
                          .seed = 1};
    sl_table *t;
    assert_int_equal(sl_table_create(&o, &t), 0);
    sl_decision d;
    for (int i = 0; i < 4; i++) assert_int_equal(sl_table_check(t, "alice", 5, 1, T0, &d), 0);
    assert_false(d.allowed);
    assert_i64(d.retry_after, 500 * MS);
    assert_i64(d.reset_after, 1500 * MS);
    sl__buf body, out;
    sl__buf_init(&body);
    sl__buf_init(&out);
    sl__http_decision_json(&body, "api", &d, false);
    sl__policy sp;
    sl__http_policy_view v = view_of(&sp, "api", SL_TOKEN_BUCKET, (sl_rate){2, SEC}, 3);
    sl__http_begin(&out, 429);
    sl__http_ratelimit_fields(&out, &v, &d);
    sl__http_header_line(&out, "Cache-Control", "no-store");
    sl__http_end(&out, true, "application/json", body.data, body.len);
    assert_string_equal(take(&out),
                        "HTTP/1.1 429 Too Many Requests\r\n"
                        "Server: sluiced\r\n"
                        "RateLimit-Policy: \"api\";q=3;w=2;sluice-rate=\"2/s\"\r\n"
                        "RateLimit: \"api\";r=0;t=1\r\n"
                        "X-RateLimit-Limit: 3\r\n"
                        "X-RateLimit-Remaining: 0\r\n"
                        "X-RateLimit-Reset: 2\r\n"
                        "Retry-After: 1\r\n"
                        "Cache-Control: no-store\r\n"
                        "Content-Type: application/json\r\n"
                        "Content-Length: 99\r\n"
                        "Connection: keep-alive\r\n"
                        "\r\n"
                        "{\"allowed\":false,\"limit\":3,\"remaining\":0,\"retry_after_ms\":500,"
                        "\"reset_after_ms\":1500,\"policy\":\"api\"}");
    sl__buf_free(&body);
    sl__buf_free(&out);
    sl_table_destroy(t);
}

/* ---- a Structured Field List parser (RFC 9651 4.2), just enough ---------------- */

typedef struct sf_param {
    char key[32];
    bool is_int, is_str;
    long long ival;
    char sval[64];
} sf_param;

typedef struct sf_item {
    char name[64]; /* the item: a String */
    sf_param params[8];
    int nparams;
} sf_item;

static const char *sf_string(const char *s, char *out, size_t size) {
    if (*s++ != '"') return NULL;
    size_t n = 0;
    for (;; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\') {
            c = (unsigned char)*++s;
            if (c != '"' && c != '\\') return NULL;
        } else if (c == '"') {
            break;
        } else if (c < 0x20 || c > 0x7e) {
            return NULL;
        }
        if (n + 1 >= size) return NULL;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return s + 1;
}

static const char *sf_integer(const char *s, long long *out) {
    int digits = 0;
    long long v = 0;
    bool neg = *s == '-';
    if (neg) s++;
    while (*s >= '0' && *s <= '9') {
        if (++digits > 15) return NULL;
        v = v * 10 + (*s++ - '0');
    }
    if (!digits || *s == '.') return NULL; /* decimals are not expected here */
    *out = neg ? -v : v;
    return s;
}

/* Parses a field value holding one list member; returns false if malformed. */
static bool sf_parse_item(const char *s, sf_item *it) {
    memset(it, 0, sizeof *it);
    s = sf_string(s, it->name, sizeof it->name);
    if (!s) return false;
    while (*s == ';') {
        s++;
        if (it->nparams == 8) return false;
        sf_param *p = &it->params[it->nparams++];
        size_t n = 0;
        if (!((*s >= 'a' && *s <= 'z') || *s == '*')) return false;
        while ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' ||
               *s == '.' || *s == '*') {
            if (n + 1 >= sizeof p->key) return false;
            p->key[n++] = *s++;
        }
        if (*s != '=') return false; /* we never send boolean-true parameters */
        s++;
        if (*s == '"') {
            p->is_str = true;
            s = sf_string(s, p->sval, sizeof p->sval);
        } else {
            p->is_int = true;
            s = sf_integer(s, &p->ival);
        }
        if (!s) return false;
    }
    return *s == '\0';
}

static const sf_param *sf_get(const sf_item *it, const char *key) {
    for (int i = 0; i < it->nparams; i++)
        if (strcmp(it->params[i].key, key) == 0) return &it->params[i];
    return NULL;
}

/* The value of header `name` in a block of header lines, or NULL. */
static const char *field(const char *block, const char *name, char *buf, size_t size) {
    size_t n = strlen(name);
    for (const char *l = block; *l;) {
        const char *e = strstr(l, "\r\n");
        if (!e) break;
        if (strncmp(l, name, n) == 0 && l[n] == ':' && l[n + 1] == ' ') {
            size_t vl = (size_t)(e - l) - n - 2;
            assert_true(vl < size);
            memcpy(buf, l + n + 2, vl);
            buf[vl] = '\0';
            return buf;
        }
        l = e + 2;
    }
    return NULL;
}

static long long ceil_s(int64_t ns) {
    return ns <= 0 ? 0 : (ns + SEC - 1) / SEC;
}

typedef struct rl_case {
    sl_algorithm alg;
    const char *rate;
    int64_t burst;
    long long q, w;
} rl_case;

/* Every algorithm, on real decisions from a table at a fake clock, until
 * it limits and after: the fields parse as Structured Field Lists, and each
 * parameter means what docs/http-api.md says. */
static void test_ratelimit_fields_all_algorithms(void **state) {
    (void)state;
    static const rl_case cases[] = {
        {SL_FIXED_WINDOW, "100/m", 0, 100, 60},
        {SL_FIXED_WINDOW, "3/s", 0, 3, 1},
        {SL_SLIDING_LOG, "3/500ms", 0, 3, 1},
        {SL_SLIDING_LOG, "5/10s", 0, 5, 10},
        {SL_SLIDING_WINDOW, "10/90s", 0, 10, 90},
        {SL_SLIDING_WINDOW, "7/1500ms", 0, 7, 2},
        {SL_TOKEN_BUCKET, "2/s", 3, 3, 2},
        {SL_TOKEN_BUCKET, "1000/s", 1, 1, 1},
        {SL_GCRA, "5/s", 5, 5, 1},
        {SL_GCRA, "10/s", 21, 21, 3},
        {SL_LEAKY_QUEUE, "1/h", 10, 10, 36000},
        {SL_LEAKY_QUEUE, "5/s", 5, 5, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const rl_case *k = &cases[c];
        sl_table_options o = {.params = {.algorithm = k->alg, .burst = k->burst}, .seed = 7};
        assert_int_equal(sl_rate_parse(k->rate, &o.params.rate), 0);
        sl_table *t;
        assert_int_equal(sl_table_create(&o, &t), 0);
        sl__policy sp;
        sl__http_policy_view v = view_of(&sp, "pol.x-1_2", k->alg, o.params.rate, k->burst);
        int64_t now = T0 + 123 * MS;
        int limited = 0;
        for (int i = 0; i < 150 && limited < 3; i++) {
            sl_decision d;
            int64_t cost = i == 0 ? 0 : 1; /* a peek first: fresh state, t=0 */
            assert_int_equal(sl_table_check(t, "k", 1, cost, now, &d), 0);
            if (!d.allowed) limited++;
            sl__buf b;
            sl__buf_init(&b);
            sl__http_ratelimit_fields(&b, &v, &d);
            const char *text = take(&b);
            char pol[256], rl[256], tmp[64];
            sf_item ip, ir;
            if (!field(text, "RateLimit-Policy", pol, sizeof pol) || !sf_parse_item(pol, &ip))
                fail_msg("%s: bad RateLimit-Policy in\n%s", k->rate, text);
            if (!field(text, "RateLimit", rl, sizeof rl) || !sf_parse_item(rl, &ir))
                fail_msg("%s: bad RateLimit in\n%s", k->rate, text);
            assert_string_equal(ip.name, "pol.x-1_2");
            assert_string_equal(ir.name, "pol.x-1_2");
            assert_true(sf_get(&ip, "q")->is_int);
            assert_i64(sf_get(&ip, "q")->ival, k->q);
            assert_i64(sf_get(&ip, "w")->ival, k->w);
            assert_string_equal(sf_get(&ip, "sluice-rate")->sval, k->rate);
            assert_i64(sf_get(&ir, "r")->ival, d.remaining);
            long long tt = sf_get(&ir, "t")->ival;
            assert_true(tt >= 0);
            assert_i64(atoll(field(text, "X-RateLimit-Limit", tmp, sizeof tmp)), d.limit);
            assert_i64(atoll(field(text, "X-RateLimit-Remaining", tmp, sizeof tmp)), d.remaining);
            long long reset = atoll(field(text, "X-RateLimit-Reset", tmp, sizeof tmp));
            assert_i64(reset, ceil_s(d.reset_after));
            const char *ra = field(text, "Retry-After", tmp, sizeof tmp);
            if (d.allowed) {
                assert_null(ra);
                assert_i64(tt, reset);
                if (i == 0) assert_i64(tt, 0);
            } else {
                assert_non_null(ra);
                long long r = atoll(ra);
                assert_true(r >= 1);
                assert_i64(r, ceil_s(d.retry_after) ? ceil_s(d.retry_after) : 1);
                assert_i64(tt, r);       /* t is the Retry-After moment */
                assert_true(reset >= r); /* and the reset is not earlier */
            }
            sl__buf_free(&b);
            if (i % 5 == 0) now += 7 * MS;
        }
        assert_true(limited > 0);
        sl_table_destroy(t);
    }
}

static void test_ratelimit_fields_edges(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    /* Retry-After rounds up, at least 1; t follows it */
    static const struct {
        int64_t retry, reset;
        const char *want;
    } limited[] = {
        {1, 1,
         "RateLimit: \"p\";r=0;t=1\r\nX-RateLimit-Limit: 1\r\nX-RateLimit-Remaining: 0\r\n"
         "X-RateLimit-Reset: 1\r\nRetry-After: 1\r\n"},
        {0, 0,
         "RateLimit: \"p\";r=0;t=1\r\nX-RateLimit-Limit: 1\r\nX-RateLimit-Remaining: 0\r\n"
         "X-RateLimit-Reset: 0\r\nRetry-After: 1\r\n"},
        {SEC, SEC,
         "RateLimit: \"p\";r=0;t=1\r\nX-RateLimit-Limit: 1\r\n"
         "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1\r\nRetry-After: 1\r\n"},
        {SEC + 1, 3 * SEC + 1,
         "RateLimit: \"p\";r=0;t=2\r\nX-RateLimit-Limit: 1\r\n"
         "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 4\r\nRetry-After: 2\r\n"},
        /* a cost that can never pass: no Retry-After to give */
        {-1, 5 * SEC,
         "RateLimit: \"p\";r=0;t=5\r\nX-RateLimit-Limit: 1\r\n"
         "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 5\r\n"},
    };
    sl__policy sp;
    sl__http_policy_view v = view_of(&sp, "p", SL_FIXED_WINDOW, (sl_rate){1, SEC}, 0);
    for (size_t i = 0; i < sizeof limited / sizeof limited[0]; i++) {
        sl__buf_reset(&b);
        sl_decision d = {.allowed = false,
                         .limit = 1,
                         .remaining = 0,
                         .retry_after = limited[i].retry,
                         .reset_after = limited[i].reset};
        sl__http_ratelimit_fields(&b, &v, &d);
        char *s = take(&b);
        const char *rl = strstr(s, "RateLimit: ");
        assert_non_null(rl);
        if (strcmp(rl, limited[i].want)) fail_msg("case %zu:\n%s", i, s);
    }
    /* allowed: t is the reset, rounded up */
    sl__buf_reset(&b);
    sl_decision ok = {.allowed = true, .limit = 1, .remaining = 0, .reset_after = 1500 * MS};
    sl__http_ratelimit_fields(&b, &v, &ok);
    assert_non_null(strstr(take(&b), "RateLimit: \"p\";r=0;t=2\r\n"));
    /* Structured Field integers have at most 15 digits */
    sl__buf_reset(&b);
    sl__policy hp;
    sl__http_policy_view huge = view_of(
        &hp, "h", SL_TOKEN_BUCKET, (sl_rate){1, INT64_C(36600) * 86400 * SEC}, INT64_C(1) << 40);
    sl_decision big = {.allowed = true,
                       .limit = INT64_C(1) << 40,
                       .remaining = INT64_C(1) << 60,
                       .reset_after = INT64_C(1) << 62};
    sl__http_ratelimit_fields(&b, &huge, &big);
    char *s = take(&b);
    assert_non_null(strstr(s, "RateLimit-Policy: \"h\";q=1099511627776;w=999999999999999;"));
    assert_non_null(strstr(s, "RateLimit: \"h\";r=999999999999999;t=4611686019\r\n"));
    assert_non_null(strstr(s, "X-RateLimit-Remaining: 1152921504606846976\r\n"));
    /* odd characters in a name cannot break the sf-string */
    sl__buf_reset(&b);
    sl__policy op;
    sl__http_policy_view odd = view_of(&op, "a\"b\\c\x01", SL_GCRA, (sl_rate){1, SEC}, 1);
    sl__http_ratelimit_fields(&b, &odd, &ok);
    assert_non_null(strstr(take(&b), "RateLimit-Policy: \"a\\\"b\\\\c?\";q=1;w=1;"));
    /* sub-second windows and bucket refills round up to 1 */
    sl__buf_reset(&b);
    sl__policy fp;
    sl__http_policy_view fast = view_of(&fp, "f", SL_GCRA, (sl_rate){1000, SEC}, 10);
    sl__http_ratelimit_fields(&b, &fast, &ok);
    assert_non_null(
        strstr(take(&b), "RateLimit-Policy: \"f\";q=10;w=1;sluice-rate=\"1000/s\"\r\n"));
    sl__buf_free(&b);
}

/* sluice-rate is the policy layer's text; it must say what sl_rate_format says. */
static void test_rate_text_matches_core(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    uint64_t x = 88172645463325252u;
    for (int i = 0; i < 20000; i++) {
        helper_rand(&x);
        static const int64_t units[] = {1, 1000, MS, SEC, 60 * SEC, 3600 * SEC, 86400 * SEC};
        sl_rate r = {.limit = (int64_t)(x % 100000) + 1,
                     .period = (int64_t)((x >> 20) % 1000 + 1) * units[(x >> 40) % 7]};
        if (i == 0) r = (sl_rate){INT64_C(1) << 61, INT64_C(36600) * 86400 * SEC};
        if (i == 1) r = (sl_rate){1, 1};
        if (i == 2) r = (sl_rate){7, 1500 * MS + 1};
        char want[64], got[64];
        sl_rate_format(r, want, sizeof want);
        sl__buf_reset(&b);
        sl__policy sp;
        sl__http_policy_view v = view_of(&sp, "p", SL_GCRA, r, 1);
        sl__http_ratelimit_fields(&b, &v, &(sl_decision){.allowed = true});
        char *text = take(&b), pol[256];
        sf_item it;
        assert_true(sf_parse_item(field(text, "RateLimit-Policy", pol, sizeof pol), &it));
        snprintf(got, sizeof got, "%s", sf_get(&it, "sluice-rate")->sval);
        if (strcmp(got, want)) fail_msg("%s != %s", got, want);
    }
    sl__buf_free(&b);
}

static void test_decision_json(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl_decision d = {
        .allowed = true, .limit = 5, .remaining = 4, .retry_after = 0, .reset_after = 200 * MS};
    sl__http_decision_json(&b, "api", &d, false);
    assert_string_equal(take(&b),
                        "{\"allowed\":true,\"limit\":5,\"remaining\":4,\"retry_after_ms\":0,"
                        "\"reset_after_ms\":200,\"policy\":\"api\"}");
    /* ms round up; the delay of a leaky queue; shadow */
    sl__buf_reset(&b);
    sl_decision q = {.allowed = true,
                     .limit = 5,
                     .remaining = 0,
                     .retry_after = 0,
                     .reset_after = 1,
                     .delay = 400 * MS + 1};
    sl__http_decision_json(&b, "queue", &q, true);
    assert_string_equal(take(&b),
                        "{\"allowed\":true,\"limit\":5,\"remaining\":0,\"retry_after_ms\":0,"
                        "\"reset_after_ms\":1,\"delay_ms\":401,\"policy\":\"queue\","
                        "\"shadow\":true}");
    /* a cost that can never pass */
    sl__buf_reset(&b);
    sl_decision never = {.allowed = false, .limit = 5, .remaining = 5, .retry_after = -1};
    sl__http_decision_json(&b, "api", &never, false);
    assert_string_equal(take(&b), "{\"allowed\":false,\"limit\":5,\"remaining\":5,"
                                  "\"retry_after_ms\":-1,\"reset_after_ms\":0,\"policy\":\"api\"}");
    sl__buf_free(&b);
}

static void test_json_escaping(void **state) {
    (void)state;
    sl__buf b;
    sl__buf_init(&b);
    sl__http_error_json(&b, "bad_request", "q\"b\\s/\n\r\t\b\f\x01\x1f\x7f|");
    assert_string_equal(take(&b), "{\"error\":\"bad_request\",\"message\":"
                                  "\"q\\\"b\\\\s/\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f|\"}");
    /* UTF-8 passes through; invalid sequences become U+FFFD */
    sl__buf_reset(&b);
    sl__http_error_json(&b, "e",
                        "\xc3\xa9|\xe2\x82\xac|\xf0\x9f\x98\x80|\xff|\xc3|\xe2\x82|\xc0\xaf|"
                        "\xed\xa0\x80|\xf4\x90\x80\x80|\x80");
    assert_string_equal(take(&b), "{\"error\":\"e\",\"message\":\"\xc3\xa9|\xe2\x82\xac|"
                                  "\xf0\x9f\x98\x80|\\ufffd|\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|"
                                  "\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd|\\ufffd\"}");
    /* a truncated sequence at the very end */
    sl__buf_reset(&b);
    sl__http_error_json(&b, "e", "x\xf0\x9f");
    assert_string_equal(take(&b), "{\"error\":\"e\",\"message\":\"x\\ufffd\\ufffd\"}");
    /* every byte value, checked by a JSON parser */
    char all[256];
    for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
    all[255] = '\0';
    sl__buf_reset(&b);
    sl__http_error_json(&b, all, all);
    cJSON *j = cJSON_Parse(take(&b));
    assert_non_null(j);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    assert_true(cJSON_IsString(m));
    assert_memory_equal(m->valuestring, all, 127); /* ASCII survives exactly */
    cJSON_Delete(j);
    sl__buf_reset(&b);
    sl__http_decision_json(&b, "we\"ird\\\n", &(sl_decision){.allowed = true}, false);
    j = cJSON_Parse(take(&b));
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "policy")->valuestring, "we\"ird\\\n");
    cJSON_Delete(j);
    sl__buf_free(&b);
}

/* sl__http_query_params finds in one pass what sl__http_query_param finds
 * name by name: lengths, values and errors, first occurrences, decoded
 * names, a value too long for its buffer next to one that fits. */
static void test_query_params(void **state) {
    (void)state;
    static const char *const queries[] = {
        "policy=api&key=alice%40example.com&cost=3&sp=a+b%2Bc&e=&flag&k%65y2=v2",
        "key=1&key=2&policy=p&policy=q",
        "cost=%zz&key=v&%70olicy=x",
        "policy=0123456789abcdef&key=%&cost=",
        "&&cost&key=a=b&",
        "",
    };
    static const char *const names[] = {"policy", "key", "cost", "sp", "key2", "flag", "e"};
    enum { N = sizeof names / sizeof names[0] };
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
        char one[N][16], all[N][16];
        sl__http_param ps[N];
        for (size_t i = 0; i < N; i++)
            ps[i] = (sl__http_param){names[i], strlen(names[i]), all[i], i == 0 ? 8 : 16, 0};
        sl__http_query_params(queries[q], strlen(queries[q]), ps, N);
        for (size_t i = 0; i < N; i++) {
            long want = sl__http_query_param(queries[q], strlen(queries[q]), names[i], one[i],
                                             i == 0 ? 8 : 16);
            if (ps[i].len != want)
                fail_msg("%s: %s: %ld, not %ld", queries[q], names[i], ps[i].len, want);
            if (want >= 0) assert_string_equal(all[i], one[i]);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_get),
        cmocka_unit_test(test_header_values),
        cmocka_unit_test(test_pipelined_whole),
        cmocka_unit_test(test_pipelined_consumed),
        cmocka_unit_test(test_every_split_point),
        cmocka_unit_test(test_bytewise),
        cmocka_unit_test(test_random_pieces),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_431_exact),
        cmocka_unit_test(test_too_many_headers),
        cmocka_unit_test(test_413),
        cmocka_unit_test(test_chunk_framing_bounded),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_other_methods),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_in_request),
        cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_arena_reuse),
        cmocka_unit_test(test_fast_accepts),
        cmocka_unit_test(test_fast_declines),
        cmocka_unit_test(test_fast_bounds),
        cmocka_unit_test(test_fast_every_byte),
        cmocka_unit_test(test_header_lookup),
        cmocka_unit_test(test_query_param),
        cmocka_unit_test(test_query_params),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_429_bytes),
        cmocka_unit_test(test_ratelimit_fields_all_algorithms),
        cmocka_unit_test(test_ratelimit_fields_edges),
        cmocka_unit_test(test_rate_text_matches_core),
        cmocka_unit_test(test_decision_json),
        cmocka_unit_test(test_json_escaping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
