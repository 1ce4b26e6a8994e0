/* test_grpc.c: the gRPC session (src/server/grpc/grpc_session.c and
 * grpc_service.c) on raw HTTP/2 bytes from an nghttp2 client session, no
 * sockets: SETTINGS, Health/Check, ShouldRateLimit answers decoded with
 * protobuf-c, messages split over DATA frames and bytes fed one at a time,
 * Trailers-Only errors (UNIMPLEMENTED, INTERNAL, RESOURCE_EXHAUSTED,
 * DEADLINE_EXCEEDED, INVALID_ARGUMENT), HTTP 415 and 405, GOAWAY on broken
 * frames, closing on bytes that are not HTTP/2, the graceful shutdown that
 * still answers streams in flight, the hand-written RateLimitResponse
 * against protobuf-c's encoding of the same message, and the direct
 * RateLimitRequest decoder against protobuf-c's (decode_paths). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "policy/domains.h"
#include "server/grpc/grpc.h"
#include "server/grpc/grpc_service.h"
#include "server/request.h"
#include "sluice/clock.h"

#include "helpers.h"

#define RLS    "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
#define HEALTH "/grpc.health.v1.Health/Check"

/* ---- an HTTP/2 client talking to a session in memory ----------------------------- */

typedef struct reply {
    int32_t id;
    int status; /* :status */
    int grpc_status;
    char grpc_message[256];
    bool trailers_only;
    sl__buf data;
    bool closed;
    uint32_t rst;
    int headers_frames;
} reply;

typedef struct client {
    nghttp2_session *h2;
    reply r[64];
    size_t n;
    bool goaway;
    uint32_t goaway_code;
    sl__limits_config limits;
    sl__request_ctx rq; /* as a connection of sluiced gives it, without the connection */
    sl__buf out;        /* the server's output */
    sl__grpc_session *s;
    int feed_rc;
    size_t chunk; /* feed the server this many bytes at a time (0: all at once) */
} client;

typedef struct body {
    const uint8_t *p;
    size_t len, off, piece; /* piece: bytes per DATA frame (0: as many as fit) */
} body;

static reply *reply_of(client *c, int32_t id) {
    for (size_t i = 0; i < c->n; i++)
        if (c->r[i].id == id) return &c->r[i];
    reply *r = &c->r[c->n++];
    memset(r, 0, sizeof *r);
    r->id = id;
    r->grpc_status = -1;
    sl__buf_init(&r->data);
    return r;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *user) {
    (void)h2;
    (void)flags;
    client *c = user;
    reply *r = reply_of(c, f->hd.stream_id);
    char v[512];
    snprintf(v, sizeof v, "%.*s", (int)vl, value);
    if (nl == 7 && !memcmp(name, ":status", 7)) r->status = atoi(v);
    if (nl == 11 && !memcmp(name, "grpc-status", 11)) {
        r->grpc_status = atoi(v);
        r->trailers_only = r->headers_frames == 0;
    }
    if (nl == 12 && !memcmp(name, "grpc-message", 12))
        snprintf(r->grpc_message, sizeof r->grpc_message, "%.*s", (int)(vl < 255 ? vl : 255),
                 (const char *)value);
    return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user) {
    (void)h2;
    client *c = user;
    if (f->hd.type == NGHTTP2_HEADERS) reply_of(c, f->hd.stream_id)->headers_frames++;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = true;
        c->goaway_code = f->goaway.error_code;
    }
    return 0;
}

static int on_data(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                   void *user) {
    (void)h2;
    (void)flags;
    sl__buf_append(&reply_of(user, id)->data, d, len);
    return 0;
}

static int on_close(nghttp2_session *h2, int32_t id, uint32_t code, void *user) {
    (void)h2;
    reply *r = reply_of(user, id);
    r->closed = true;
    r->rst = code;
    return 0;
}

static ssize_t read_body(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *user) {
    (void)h2;
    (void)id;
    (void)user;
    body *b = src->ptr;
    size_t n = b->len - b->off;
    if (b->piece && n > b->piece) n = b->piece;
    if (n > length) n = length;
    memcpy(buf, b->p + b->off, n);
    b->off += n;
    if (b->off == b->len) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void client_init(client *c, sl__domain_set *set, size_t max_body) {
    memset(c, 0, sizeof *c);
    c->limits.max_body_bytes = max_body;
    c->limits.max_header_bytes = 8192;
    c->rq = (sl__request_ctx){.now = sl_now(), .domains = set, .limits = &c->limits};
    sl__buf_init(&c->out);
    c->s = sl__grpc_session_new(&c->limits, &c->out);
    assert_non_null(c->s);
    nghttp2_session_callbacks *cb;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    assert_int_equal(nghttp2_session_client_new(&c->h2, cb, c), 0);
    nghttp2_session_callbacks_del(cb);
    assert_int_equal(nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, NULL, 0), 0);
}

static void client_free(client *c) {
    for (size_t i = 0; i < c->n; i++) sl__buf_free(&c->r[i].data);
    nghttp2_session_del(c->h2);
    sl__grpc_session_free(c->s);
    sl__buf_free(&c->out);
}

/* Feeds the server raw bytes (in chunks of c->chunk). */
static void feed_raw(client *c, const void *p, size_t len) {
    const char *b = p;
    while (len && c->feed_rc == 0) {
        size_t n = c->chunk && c->chunk < len ? c->chunk : len;
        size_t used = 0;
        c->feed_rc = sl__grpc_session_feed(c->s, &c->rq, b, n, &used);
        assert_int_equal(used, n); /* no connection: never held back */
        b += n;
        len -= n;
    }
}

/* Runs both sides until neither has anything to say. */
static void exchange(client *c) {
    for (int round = 0; round < 10000; round++) {
        bool moved = false;
        const uint8_t *data;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(c->h2, &data)) > 0) {
            feed_raw(c, data, (size_t)n);
            moved = true;
        }
        assert_true(n >= 0);
        if (c->out.len) {
            ssize_t k = nghttp2_session_mem_recv(c->h2, (const uint8_t *)c->out.data, c->out.len);
            assert_true(k >= 0);
            sl__buf_reset(&c->out);
            moved = true;
        }
        if (!moved) return;
    }
    fail_msg("the exchange does not settle");
}

static int32_t submit(client *c, const char *path, const char *ctype, const char *extra_name,
                      const char *extra_value, body *b) {
    nghttp2_nv nva[8];
    size_t n = 0;
#define H(k, v) nva[n++] = (nghttp2_nv){(uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), 0}
    H(":method", "POST");
    H(":scheme", "http");
    H(":path", path);
    H(":authority", "sluice");
    if (ctype) H("content-type", ctype);
    H("te", "trailers");
    if (extra_name) H(extra_name, extra_value);
#undef H
    nghttp2_data_provider prd = {.source = {.ptr = b}, .read_callback = read_body};
    int32_t id = nghttp2_submit_request(c->h2, NULL, nva, n, b ? &prd : NULL, NULL);
    assert_true(id > 0);
    return id;
}

/* A stream with the headers of a gRPC call and no END_STREAM, so the client
 * never ends it; with grpc-timeout: timeout unless NULL. Its id. */
static int32_t open_stream(client *c, const char *timeout) {
    nghttp2_nv nva[6];
    size_t n = 0;
#define H(k, v) nva[n++] = (nghttp2_nv){(uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), 0}
    H(":method", "POST");
    H(":scheme", "http");
    H(":path", HEALTH);
    H(":authority", "sluice");
    H("content-type", "application/grpc");
    if (timeout) H("grpc-timeout", timeout);
#undef H
    int32_t id = nghttp2_submit_headers(c->h2, NGHTTP2_FLAG_NONE, -1, NULL, nva, n, NULL);
    assert_true(id > 0);
    return id;
}

/* A client whose session has limits.header_timeout = 1 ns (a new session, its
 * SETTINGS dropped from the output). */
static void client_init_header_timeout(client *c) {
    client_init(c, NULL, 1024);
    sl__grpc_session_free(c->s);
    sl__buf_reset(&c->out);
    c->limits.header_timeout = 1;
    c->s = sl__grpc_session_new(&c->limits, &c->out);
    assert_non_null(c->s);
}

/* Stream id answered DEADLINE_EXCEEDED as Trailers-Only, then reset (CANCEL). */
static void expect_cancelled(client *c, int32_t id) {
    reply *r = reply_of(c, id);
    assert_int_equal(r->grpc_status, 4);
    assert_true(r->trailers_only);
    assert_true(r->closed);
    assert_int_equal(r->rst, NGHTTP2_CANCEL);
}

/* prefix + message */
static size_t framed(uint8_t *out, const uint8_t *msg, size_t len) {
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
    if (len) memcpy(out + 5, msg, len);
    return len + 5;
}

/* One request to Health/Check with content-type ctype (and extra_name:
 * extra_value unless NULL) and the body p[0..len) as it is (no body: p NULL);
 * its reply. */
static reply *call_raw(client *c, const char *ctype, const char *extra_name,
                       const char *extra_value, const char *p, size_t len) {
    body b = {.p = (const uint8_t *)p, .len = len};
    int32_t id = submit(c, HEALTH, ctype, extra_name, extra_value, p ? &b : NULL);
    exchange(c);
    return reply_of(c, id);
}

/* One call; returns its reply. */
static reply *rpc(client *c, const char *path, const uint8_t *msg, size_t len, size_t piece) {
    static uint8_t buf[1 << 16];
    body b = {.p = buf, .len = framed(buf, msg, len), .piece = piece};
    int32_t id = submit(c, path, "application/grpc", NULL, NULL, &b);
    exchange(c);
    reply *r = reply_of(c, id);
    assert_true(r->closed);
    return r;
}

static size_t pack_request(uint8_t *out, const char *domain, const char *key, const char *value) {
    Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__Entry e =
        ENVOY__EXTENSIONS__COMMON__RATELIMIT__V3__RATE_LIMIT_DESCRIPTOR__ENTRY__INIT;
    e.key = (char *)key;
    e.value = (char *)value;
    Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__Entry *ep = &e;
    Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor d =
        ENVOY__EXTENSIONS__COMMON__RATELIMIT__V3__RATE_LIMIT_DESCRIPTOR__INIT;
    d.n_entries = 1;
    d.entries = &ep;
    Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor *dp = &d;
    Envoy__Service__Ratelimit__V3__RateLimitRequest q =
        ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_REQUEST__INIT;
    q.domain = (char *)domain;
    q.n_descriptors = 1;
    q.descriptors = &dp;
    return envoy__service__ratelimit__v3__rate_limit_request__pack(&q, out);
}

static sl__domain_set *rules(void) {
    static const char text[] = "domain: d\ndescriptors:\n  - key: k\n"
                               "    rate_limit: {unit: hour, requests_per_unit: 2, name: two}\n";
    sl__domain_rules *r = NULL;
    sl__config_errors e = {0};
    assert_int_equal(sl__domain_rules_parse(text, sizeof text - 1, "r.yaml", &r, &e), 0);
    return domain_set_ok(r, NULL, 0);
}

/* ---- the tests -------------------------------------------------------------------------- */

static void test_settings_and_health(void **state) {
    (void)state;
    client c;
    client_init(&c, NULL, 1024);
    reply *r = rpc(&c, HEALTH, NULL, 0, 0);
    assert_int_equal(r->status, 200);
    assert_int_equal(r->grpc_status, 0);
    assert_false(r->trailers_only);
    assert_int_equal(r->headers_frames, 2); /* headers, then trailers */
    assert_int_equal(r->data.len, 7);
    assert_memory_equal(r->data.data, "\0\0\0\0\x02\x08\x01", 7); /* SERVING */
    assert_int_equal(
        nghttp2_session_get_remote_settings(c.h2, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 128);
    assert_int_equal(
        nghttp2_session_get_remote_settings(c.h2, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE), 8192);
    /* "ratelimit": the name envoyproxy/ratelimit serves its health under */
    uint8_t rl[] = {0x0a, 0x09, 'r', 'a', 't', 'e', 'l', 'i', 'm', 'i', 't'};
    r = rpc(&c, HEALTH, rl, sizeof rl, 0);
    assert_int_equal(r->grpc_status, 0);
    assert_int_equal(r->data.len, 7);
    assert_memory_equal(r->data.data, "\0\0\0\0\x02\x08\x01", 7); /* SERVING */
    /* unknown service */
    uint8_t m[] = {0x0a, 0x03, 'f', 'o', 'o'};
    r = rpc(&c, HEALTH, m, sizeof m, 0);
    assert_int_equal(r->grpc_status, 5);
    assert_true(r->trailers_only);
    client_free(&c);
}

static void test_should_rate_limit(void **state) {
    (void)state;
    sl__domain_set *set = rules();
    for (int mode = 0; mode < 2; mode++) {
        client c;
        client_init(&c, set, 1024);
        c.chunk = mode ? 1 : 0; /* every byte on its own read */
        uint8_t msg[256];
        size_t n = pack_request(msg, "d", "k", mode ? "b" : "a");
        for (int i = 0; i < 3; i++) {
            reply *r = rpc(&c, RLS, msg, n, mode ? 3 : 0); /* 3-byte DATA frames */
            assert_int_equal(r->grpc_status, 0);
            assert_true(r->data.len > 5);
            Envoy__Service__Ratelimit__V3__RateLimitResponse *resp =
                envoy__service__ratelimit__v3__rate_limit_response__unpack(
                    NULL, r->data.len - 5, (const uint8_t *)r->data.data + 5);
            assert_non_null(resp);
            assert_int_equal(resp->overall_code, i < 2 ? 1 : 2);
            assert_int_equal(resp->n_statuses, 1);
            assert_int_equal(resp->statuses[0]->limit_remaining, i < 2 ? 1 - i : 0);
            assert_non_null(resp->statuses[0]->current_limit);
            assert_int_equal(resp->statuses[0]->current_limit->requests_per_unit, 2);
            assert_int_equal(resp->statuses[0]->current_limit->unit, 3); /* HOUR */
            assert_string_equal(resp->statuses[0]->current_limit->name, "two");
            assert_non_null(resp->statuses[0]->duration_until_reset);
            assert_true(resp->statuses[0]->duration_until_reset->seconds > 0);
            envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(resp, NULL);
        }
        /* an empty domain */
        n = pack_request(msg, "", "k", "a");
        reply *r = rpc(&c, RLS, msg, n, 0);
        assert_int_equal(r->grpc_status, 3);
        assert_string_equal(r->grpc_message, "rate limit domain must not be empty");
        assert_int_equal(c.feed_rc, 0);
        client_free(&c);
    }
    sl__domain_set_release(set);
}

static void test_errors(void **state) {
    (void)state;
    client c;
    client_init(&c, NULL, 64);
    reply *r = rpc(&c, "/no.Such/Method", NULL, 0, 0);
    assert_int_equal(r->grpc_status, 12);
    assert_true(r->trailers_only);
    assert_int_equal(r->status, 200);
    /* unparsable */
    uint8_t bad[] = {0x0a, 0x7f, 'x'};
    r = rpc(&c, RLS, bad, sizeof bad, 0);
    assert_int_equal(r->grpc_status, 13);
    assert_string_equal(r->grpc_message, "cannot parse the RateLimitRequest");
    /* too large for limits.max_body_bytes (64 here) */
    uint8_t big[100] = {0x0a, 98};
    r = rpc(&c, RLS, big, sizeof big, 0);
    assert_int_equal(r->grpc_status, 8);
    assert_string_equal(r->grpc_message, "message larger than 64 bytes");
    /* no message; a truncated one; two */
    const char *grpc = "application/grpc";
    assert_int_equal(call_raw(&c, grpc, NULL, NULL, "", 0)->grpc_status, 12);
    assert_int_equal(call_raw(&c, grpc, NULL, NULL, "\0\0\0\0\x09\x01", 6)->grpc_status, 13);
    assert_int_equal(call_raw(&c, grpc, NULL, NULL, "\0\0\0\0\0\0\0\0\0\0", 10)->grpc_status, 12);
    /* compressed: without grpc-encoding INTERNAL, with gzip UNIMPLEMENTED */
    assert_int_equal(call_raw(&c, grpc, NULL, NULL, "\x01\0\0\0\0", 5)->grpc_status, 13);
    assert_int_equal(call_raw(&c, grpc, "grpc-encoding", "gzip", "\x01\0\0\0\0", 5)->grpc_status,
                     12);
    /* content-type: 415 (also when missing); another method: 405 */
    r = call_raw(&c, "application/json", NULL, NULL, "{}", 2);
    assert_int_equal(r->status, 415);
    assert_int_equal(r->grpc_status, -1);
    assert_int_equal(call_raw(&c, NULL, NULL, NULL, NULL, 0)->status, 415);
    /* an expired deadline: nothing decided */
    assert_int_equal(call_raw(&c, grpc, "grpc-timeout", "1n", "\0\0\0\0\0", 5)->grpc_status, 4);
    /* the session goes on */
    assert_int_equal(rpc(&c, HEALTH, NULL, 0, 0)->grpc_status, 0);
    assert_int_equal(c.feed_rc, 0);
    assert_false(c.goaway);
    client_free(&c);
}

static void test_broken_http2(void **state) {
    (void)state;
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    /* DATA on stream 0 */
    client c;
    client_init(&c, NULL, 1024);
    uint8_t frames[] = {0, 0, 0, 4, 0, 0, 0, 0, 0,       /* SETTINGS */
                        0, 0, 1, 0, 0, 0, 0, 0, 0, 'x'}; /* DATA, stream 0 */
    feed_raw(&c, preface, sizeof preface - 1);
    feed_raw(&c, frames, sizeof frames);
    assert_int_equal(c.feed_rc, -1);
    assert_true(sl__grpc_session_done(c.s));
    /* the GOAWAY is in the output: type 7 with PROTOCOL_ERROR */
    bool goaway = false;
    for (size_t o = 0; o + 9 <= c.out.len;) {
        const uint8_t *f = (const uint8_t *)c.out.data + o;
        size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
        if (f[3] == 7) goaway = f[9 + 7] == 1;
        o += 9 + len;
    }
    assert_true(goaway);
    client_free(&c);
    /* not HTTP/2 at all: closed without a GOAWAY */
    client_init(&c, NULL, 1024);
    size_t before = c.out.len;
    feed_raw(&c, "GET / HTTP/1.1\r\n\r\n", 18);
    assert_int_equal(c.feed_rc, -1);
    assert_int_equal(c.out.len, before);
    client_free(&c);
}

static void test_shutdown(void **state) {
    (void)state;
    client c;
    client_init(&c, NULL, 1024);
    /* a stream in flight: headers and half the message */
    uint8_t msg[5] = {0, 0, 0, 0, 0};
    body b = {.p = msg, .len = 5, .piece = 2};
    int32_t id = submit(&c, HEALTH, "application/grpc", NULL, NULL, &b);
    /* the server gets all but the last DATA frame (9 + 1 bytes) */
    sl__buf all;
    sl__buf_init(&all);
    const uint8_t *data;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(c.h2, &data)) > 0) sl__buf_append(&all, data, (size_t)n);
    assert_true(all.len > 10);
    feed_raw(&c, all.data, all.len - 10);
    sl__grpc_session_shutdown(c.s);
    assert_false(sl__grpc_session_done(c.s));
    feed_raw(&c, all.data + all.len - 10, 10);
    sl__buf_free(&all);
    exchange(&c);
    assert_true(c.goaway);
    assert_int_equal(c.goaway_code, 0);
    assert_int_equal(reply_of(&c, id)->grpc_status, 0); /* answered all the same */
    assert_true(sl__grpc_session_done(c.s));
    client_free(&c);
}

/* A stream left open past its grpc-timeout: answered DEADLINE_EXCEEDED by a
 * tick (a connection timer), then reset. */
static void test_deadline_tick(void **state) {
    (void)state;
    client c;
    client_init(&c, NULL, 1024);
    assert_int_equal(sl__grpc_session_next_deadline(c.s), 0);
    /* headers without END_STREAM: the client never ends the stream */
    int32_t id = open_stream(&c, "1n");
    const uint8_t *data;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(c.h2, &data)) > 0) feed_raw(&c, data, (size_t)n);
    assert_true(sl__grpc_session_next_deadline(c.s) > 0);
    assert_false(reply_of(&c, id)->closed);
    sl__grpc_session_tick(c.s); /* 1 ns later: expired */
    exchange(&c);
    expect_cancelled(&c, id);
    assert_int_equal(sl__grpc_session_next_deadline(c.s), 0);
    client_free(&c);
}

/* limits.header_timeout: a stream the client does not end in time is
 * answered DEADLINE_EXCEEDED and reset (CANCEL); the connection goes on. */
static void test_header_timeout_stream(void **state) {
    (void)state;
    client c;
    client_init_header_timeout(&c);
    int32_t id = open_stream(&c, NULL);
    exchange(&c);
    assert_true(sl__grpc_session_next_deadline(c.s) > 0);
    assert_false(reply_of(&c, id)->closed);
    assert_int_equal(sl__grpc_session_tick(c.s), 1); /* 1 ns later: expired */
    exchange(&c);
    expect_cancelled(&c, id);
    assert_false(c.goaway);
    client_free(&c);
}

/* limits.header_timeout: a frame cut short for too long gets a GOAWAY. */
static void test_header_timeout_frame(void **state) {
    (void)state;
    client c;
    client_init_header_timeout(&c);
    exchange(&c); /* the prefaces */
    assert_int_equal(sl__grpc_session_tick(c.s), 0);
    static const char ping_head[] = "\x00\x00\x08\x06\x00\x00\x00\x00\x00"
                                    "1234";
    feed_raw(&c, ping_head, sizeof ping_head - 1); /* half of a PING */
    assert_int_equal(c.feed_rc, 0);
    assert_true(sl__grpc_session_next_deadline(c.s) > 0);
    assert_int_equal(sl__grpc_session_tick(c.s), -1);
    exchange(&c);
    assert_true(c.goaway);
    assert_int_equal(c.goaway_code, NGHTTP2_NO_ERROR);
    assert_int_equal(sl__grpc_session_next_deadline(c.s), 0);
    client_free(&c);
}

/* The hand-written RateLimitResponse is byte for byte protobuf-c's. */
static void test_response_encoding(void **state) {
    (void)state;
    static const char *const names[] = {NULL, "", "n",
                                        "a-rather-long-name-for-a-limit-that-"
                                        "needs-more-than-one-byte-of-length-"
                                        "prefix-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"};
    uint32_t x = 12345;
    for (int round = 0; round < 2000; round++) {
        sl__rls_status st[SL__RLS_MAX_DESCRIPTORS];
        size_t n = 1 + (size_t)(x % 5);
        int overall = 1 + (int)(x % 2);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            memset(&st[i], 0, sizeof st[i]);
            st[i].code = 1 + (int)(x % 2);
            st[i].has_limit = x & 4;
            st[i].requests_per_unit = (x & 8) ? 0 : (x & 16) ? x : x % 200;
            st[i].unit = (int)(x % 8);
            st[i].name = names[(x >> 5) % 4];
            st[i].limit_remaining = (x & 32) ? 0 : (x & 64) ? UINT32_MAX : x % 1000;
            st[i].reset_seconds = (x & 128) ? 0 : (int64_t)(x % 100000);
        }
        sl__buf mine;
        sl__buf_init(&mine);
        assert_int_equal(sl__grpc_put_rls_response(&mine, overall, st, n), 0);
        /* the same through protobuf-c */
        Envoy__Service__Ratelimit__V3__RateLimitResponse r =
            ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__INIT;
        Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus
            ds[SL__RLS_MAX_DESCRIPTORS],
            *dp[SL__RLS_MAX_DESCRIPTORS];
        Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit rl[SL__RLS_MAX_DESCRIPTORS];
        Google__Protobuf__Duration du[SL__RLS_MAX_DESCRIPTORS];
        r.overall_code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)overall;
        r.n_statuses = n;
        r.statuses = dp;
        for (size_t i = 0; i < n; i++) {
            envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(&ds[i]);
            ds[i].code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)st[i].code;
            ds[i].limit_remaining = st[i].limit_remaining;
            if (st[i].has_limit) {
                envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&rl[i]);
                rl[i].requests_per_unit = st[i].requests_per_unit;
                rl[i].unit =
                    (Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit__Unit)st[i].unit;
                if (st[i].name) rl[i].name = (char *)st[i].name;
                ds[i].current_limit = &rl[i];
                google__protobuf__duration__init(&du[i]);
                du[i].seconds = st[i].reset_seconds;
                ds[i].duration_until_reset = &du[i];
            }
            dp[i] = &ds[i];
        }
        size_t len = envoy__service__ratelimit__v3__rate_limit_response__get_packed_size(&r);
        uint8_t *want = malloc(len + 1);
        assert_non_null(want);
        assert_int_equal(envoy__service__ratelimit__v3__rate_limit_response__pack(&r, want), len);
        assert_int_equal(mine.len, len + 5);
        assert_int_equal((size_t)((uint8_t)mine.data[1] << 24 | (uint8_t)mine.data[2] << 16 |
                                  (uint8_t)mine.data[3] << 8 | (uint8_t)mine.data[4]),
                         len);
        assert_memory_equal(mine.data + 5, want, len);
        free(want);
        sl__buf_free(&mine);
    }
}

/* dynamic_metadata: the statuses' metadata merged (the first descriptor
 * naming a key wins) after the quota violations, as a Struct protobuf-c
 * reads back value for value. */
static void test_dynamic_metadata(void **state) {
    (void)state;
    sl__rls_status st[3] = {{.code = SL__RLS_OK,
                             .metadata = "{\"svc\":{\"name\":\"a\\\"b\\u0001\"},"
                                         "\"n\":1.5,\"l\":[true,null,\"x\"]}"},
                            {.code = SL__RLS_OK, .quota_over = true},
                            {.code = SL__RLS_OK, .metadata = "{\"svc\":2,\"z\":false}"}};
    char *json = NULL;
    size_t len = sl__domain_dynamic_metadata(st, 3, &json);
    assert_string_equal(json, "{\"quotaModeViolations\":[1],\"svc\":{\"name\":\"a\\\"b\\u0001\"},"
                              "\"n\":1.5,\"l\":[true,null,\"x\"],\"z\":false}");
    assert_int_equal(len, strlen(json));
    free(json);
    sl__buf mine;
    sl__buf_init(&mine);
    assert_int_equal(sl__grpc_put_rls_response(&mine, SL__RLS_OK, st, 3), 0);
    Envoy__Service__Ratelimit__V3__RateLimitResponse *r =
        envoy__service__ratelimit__v3__rate_limit_response__unpack(NULL, mine.len - 5,
                                                                   (const uint8_t *)mine.data + 5);
    assert_non_null(r);
    Google__Protobuf__Struct *m = r->dynamic_metadata;
    assert_non_null(m);
    assert_int_equal(m->n_fields, 5);
    assert_string_equal(m->fields[0]->key, "quotaModeViolations");
    Google__Protobuf__ListValue *v = m->fields[0]->value->list_value;
    assert_int_equal(v->n_values, 1);
    assert_int_equal((int)(v->values[0]->number_value * 2), 2);
    assert_string_equal(m->fields[1]->key, "svc");
    Google__Protobuf__Struct *svc = m->fields[1]->value->struct_value;
    assert_string_equal(svc->fields[0]->key, "name");
    assert_string_equal(svc->fields[0]->value->string_value, "a\"b\001");
    assert_int_equal((int)(m->fields[2]->value->number_value * 2), 3);
    Google__Protobuf__ListValue *l = m->fields[3]->value->list_value;
    assert_int_equal(l->n_values, 3);
    assert_int_equal(l->values[0]->kind_case, GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE);
    assert_true(l->values[0]->bool_value);
    assert_int_equal(l->values[1]->kind_case, GOOGLE__PROTOBUF__VALUE__KIND_NULL_VALUE);
    assert_string_equal(l->values[2]->string_value, "x");
    assert_string_equal(m->fields[4]->key, "z");
    assert_int_equal(m->fields[4]->value->kind_case, GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE);
    assert_false(m->fields[4]->value->bool_value);
    envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(r, NULL);
    sl__buf_free(&mine);
    /* nothing to say: no field 6 */
    sl__rls_status plain = {.code = SL__RLS_OK};
    assert_int_equal(sl__domain_dynamic_metadata(&plain, 1, &json), 0);
    assert_null(json);
}

/* Decodes msg with `how` into a fresh arena; the status. */
static int decode_with(const uint8_t *msg, size_t len, sl__grpc_decoder how, sl__grpc_arena *a,
                       sl__rls_request *q, sl__rls_descriptor *ds, const char **message) {
    sl__grpc_call_env env = {.arena = a};
    sl__grpc_arena_reset(a);
    a->cap = 1u << 20;
    *message = NULL;
    return sl__grpc_rls_decode(&env, msg, len, q, ds, message, how);
}

/* The direct RateLimitRequest decoder takes the shape Envoy sends, with the
 * fields protobuf-c reads; it declines the rest (duplicates of a single
 * field, unknown fields, NUL bytes, over the bounds), which AUTO leaves to
 * protobuf-c: the same answers as before. */
static void test_decode_paths(void **state) {
    (void)state;
    static sl__grpc_arena a1, a2;
    static sl__rls_descriptor d1[SL__RLS_MAX_DESCRIPTORS], d2[SL__RLS_MAX_DESCRIPTORS];
    sl__rls_request q1, q2;
    const char *m1, *m2;
    /* Envoy's: two descriptors, the second with an override and hits_addend */
    static const uint8_t envoy[] = {
        0x0a, 0x03, 'd',  'o',  'm',                                         /* domain */
        0x12, 0x0a, 0x0a, 0x08, 0x0a, 0x01, 'k',  0x12, 0x03, 'v', 'a', 'l', /* {k=val} */
        0x12, 0x16, 0x0a, 0x05, 0x0a, 0x01, 'a',  0x12, 0x00,                /* {a=""} */
        0x0a, 0x02, 0x12, 0x00,                                              /* {""=""} */
        0x12, 0x05, 0x08, 0xac, 0x02, 0x10, 0x03,                            /* limit 300/hour */
        0x1a, 0x02, 0x08, 0x07,                                              /* hits_addend 7 */
        0x18, 0x05};                                                         /* hits_addend 5 */
    assert_int_equal(decode_with(envoy, sizeof envoy, SL__GRPC_DECODE_DIRECT, &a1, &q1, d1, &m1),
                     SL__GRPC_OK);
    assert_int_equal(
        decode_with(envoy, sizeof envoy, SL__GRPC_DECODE_PROTOBUF_C, &a2, &q2, d2, &m2),
        SL__GRPC_OK);
    assert_int_equal(q1.domain_len, 3);
    assert_memory_equal(q1.domain, "dom", 3);
    assert_int_equal(q2.domain_len, 3);
    assert_int_equal(q1.hits_addend, 5);
    assert_int_equal(q2.hits_addend, 5);
    assert_int_equal(q1.ndescriptors, 2);
    assert_int_equal(q2.ndescriptors, 2);
    assert_int_equal(d1[0].nentries, 1);
    assert_false(d1[0].has_limit || d1[0].has_hits);
    assert_int_equal(d1[0].entries[0].value_len, 3);
    assert_memory_equal(d1[0].entries[0].value, "val", 3);
    assert_int_equal(d1[1].nentries, 2);
    assert_int_equal(d2[1].nentries, 2);
    assert_int_equal(d1[1].entries[1].key_len + d1[1].entries[1].value_len, 0);
    assert_true(d1[1].has_limit && d2[1].has_limit);
    assert_int_equal(d1[1].limit_requests_per_unit, 300);
    assert_int_equal(d2[1].limit_requests_per_unit, 300);
    assert_int_equal(d1[1].limit_unit, 3);
    assert_int_equal(d2[1].limit_unit, 3);
    assert_true(d1[1].has_hits && d2[1].has_hits);
    assert_int_equal(d1[1].hits, 7);
    assert_int_equal(d2[1].hits, 7);
    assert_int_equal(decode_with(envoy, sizeof envoy, SL__GRPC_DECODE_AUTO, &a1, &q1, d1, &m1),
                     SL__GRPC_OK);
    /* declined, then protobuf-c's answer */
    static const uint8_t twice[] = {0x0a, 0x01, 'x', 0x0a, 0x01, 'y'}; /* the last one wins */
    assert_int_equal(decode_with(twice, sizeof twice, SL__GRPC_DECODE_DIRECT, &a1, &q1, d1, &m1),
                     SL__GRPC_DECLINED);
    assert_int_equal(decode_with(twice, sizeof twice, SL__GRPC_DECODE_AUTO, &a1, &q1, d1, &m1),
                     SL__GRPC_OK);
    assert_int_equal(q1.domain_len, 1);
    assert_int_equal(q1.domain[0], 'y');
    static const uint8_t unknown[] = {0x0a, 0x01, 'x', 0x20, 0x01}; /* field 4 */
    assert_int_equal(
        decode_with(unknown, sizeof unknown, SL__GRPC_DECODE_DIRECT, &a1, &q1, d1, &m1),
        SL__GRPC_DECLINED);
    assert_int_equal(decode_with(unknown, sizeof unknown, SL__GRPC_DECODE_AUTO, &a1, &q1, d1, &m1),
                     SL__GRPC_OK);
    assert_int_equal(q1.domain_len, 1);
    static const uint8_t with_nul[] = {0x12, 0x08, 0x0a, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01, 0x00};
    assert_int_equal(
        decode_with(with_nul, sizeof with_nul, SL__GRPC_DECODE_DIRECT, &a1, &q1, d1, &m1),
        SL__GRPC_DECLINED);
    assert_int_equal(
        decode_with(with_nul, sizeof with_nul, SL__GRPC_DECODE_AUTO, &a1, &q1, d1, &m1),
        SL__GRPC_INVALID_ARGUMENT);
    assert_string_equal(m1, "a domain, descriptor key or value contains a NUL byte");
    static const uint8_t truncated[] = {0x0a, 0x05, 'x'};
    assert_int_equal(
        decode_with(truncated, sizeof truncated, SL__GRPC_DECODE_AUTO, &a1, &q1, d1, &m1),
        SL__GRPC_INTERNAL);
    assert_string_equal(m1, "cannot parse the RateLimitRequest");
    /* 65 descriptors: protobuf-c's path says how many are allowed */
    uint8_t many[2 * (SL__RLS_MAX_DESCRIPTORS + 1)];
    for (size_t i = 0; i < sizeof many; i += 2) many[i] = 0x12, many[i + 1] = 0x00;
    assert_int_equal(decode_with(many, sizeof many, SL__GRPC_DECODE_DIRECT, &a1, &q1, d1, &m1),
                     SL__GRPC_DECLINED);
    assert_int_equal(decode_with(many, sizeof many, SL__GRPC_DECODE_AUTO, &a1, &q1, d1, &m1),
                     SL__GRPC_INVALID_ARGUMENT);
    assert_string_equal(m1, "too many descriptors (at most 64)");
    assert_int_equal(decode_with(many, sizeof many - 2, SL__GRPC_DECODE_DIRECT, &a1, &q1, d1, &m1),
                     SL__GRPC_OK);
    assert_int_equal(q1.ndescriptors, SL__RLS_MAX_DESCRIPTORS);
    sl__grpc_arena_free(&a1);
    sl__grpc_arena_free(&a2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings_and_health),
        cmocka_unit_test(test_should_rate_limit),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_broken_http2),
        cmocka_unit_test(test_shutdown),
        cmocka_unit_test(test_deadline_tick),
        cmocka_unit_test(test_header_timeout_stream),
        cmocka_unit_test(test_header_timeout_frame),
        cmocka_unit_test(test_response_encoding),
        cmocka_unit_test(test_dynamic_metadata),
        cmocka_unit_test(test_decode_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
