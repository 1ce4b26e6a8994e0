/* grpc_stream.c: a gRPC stream's state and its answer (grpc_session.h):
 * streams made and reused, the checks when the client ends one, its
 * method called (ShouldRateLimit through the engine, its answer inline or
 * later), the answer submitted (Trailers-Only, or HEADERS, DATA the
 * client's window may hold, trailers), and the streams' deadlines. */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/decide.h"
#include "server/grpc/grpc_session.h"
#include "server/reply.h"
#include "server/request.h"
#include "sluice/clock.h"

#define GRPC_MESSAGE_MAX 200 /* bytes of a grpc-message before encoding */

/* ---- streams ----------------------------------------------------------------- */

sl__grpc_stream *sl__grpc_stream_new(sl__grpc_session *s, int32_t id) {
    sl__grpc_stream *st = s->free;
    if (st) {
        s->free = st->next;
        s->nfree--;
        sl__buf body = st->body, resp = st->resp;
        memset(st, 0, sizeof *st);
        sl__buf_reset(&body);
        sl__buf_reset(&resp);
        st->body = body;
        st->resp = resp;
    } else {
        st = calloc(1, sizeof *st);
        if (!st) return NULL;
        sl__buf_init(&st->body);
        sl__buf_init(&st->resp);
    }
    st->id = id;
    st->next = s->streams;
    if (s->streams) s->streams->prev = st;
    s->streams = st;
    return st;
}

void sl__grpc_stream_free(sl__grpc_session *s, sl__grpc_stream *st) {
    if (s->last == st) s->last = NULL;
    s->buffered -= st->body.len;
    if (st->prev)
        st->prev->next = st->next;
    else
        s->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    /* keep a few, with small buffers, for the next streams */
    if (s->nfree < SL__GRPC_MAX_STREAMS && st->body.cap <= 4096 && st->resp.cap <= 4096 &&
        !st->body.failed && !st->resp.failed) {
        st->next = s->free;
        s->free = st;
        s->nfree++;
        return;
    }
    sl__buf_free(&st->body);
    sl__buf_free(&st->resp);
    free(st);
}

/* ---- answers ------------------------------------------------------------------- */

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1,                              \
            NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE                           \
    }

static nghttp2_nv nv_dyn(const char *name, const char *value) {
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                        NGHTTP2_NV_FLAG_NO_COPY_NAME};
}

/* An answer nghttp2 could not take (out of memory): the stream is reset
 * rather than left waiting. */
static void submitted(sl__grpc_session *s, sl__grpc_stream *st, int rc) {
    if (rc != 0)
        nghttp2_submit_rst_stream(s->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
}

/* grpc-message: percent-encoded UTF-8 (PROTOCOL-HTTP2.md). */
static void percent_encode(char *out, size_t size, const char *msg) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && o + 4 < size; p++) {
        if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

/* Trailers-Only: the whole answer in one HEADERS frame with END_STREAM. */
static void answer_status(sl__grpc_session *s, sl__grpc_stream *st, int code, const char *message) {
    char status[8], text[3 * GRPC_MESSAGE_MAX + 1];
    snprintf(status, sizeof status, "%d", code);
    percent_encode(text, sizeof text, message ? message : "");
    nghttp2_nv nva[5] = {NV(":status", "200"), NV("content-type", "application/grpc")};
    size_t n = 2;
    nva[n++] = nv_dyn("grpc-status", status);
    if (message && *message) nva[n++] = nv_dyn("grpc-message", text);
    if (st->bad_encoding) nva[n++] = (nghttp2_nv)NV("grpc-accept-encoding", "identity");
    st->answered = true;
    submitted(s, st, nghttp2_submit_response(s->h2, st->id, nva, n, NULL));
}

static void answer_http(sl__grpc_session *s, sl__grpc_stream *st, int status) {
    st->answered = true;
    if (status == SL__GRPC_ST_405) {
        nghttp2_nv nva[] = {NV(":status", "405"), NV("allow", "POST")};
        submitted(s, st, nghttp2_submit_response(s->h2, st->id, nva, 2, NULL));
    } else {
        nghttp2_nv nva[] = {NV(":status", "415"), NV("content-type", "text/plain")};
        submitted(s, st, nghttp2_submit_response(s->h2, st->id, nva, 2, NULL));
    }
}

/* The DATA of an answer, then its trailers. */
static ssize_t read_resp(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *user) {
    sl__grpc_stream *st = src->ptr;
    size_t left = st->resp.len - st->resp_off;
    size_t n = left < length ? left : length;
    memcpy(buf, st->resp.data + st->resp_off, n);
    st->resp_off += n;
    sl__grpc_session *s = user;
    s->held -= n;
    if (st->resp_off == st->resp.len) {
        static const nghttp2_nv ok[] = {NV("grpc-status", "0")};
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (nghttp2_submit_trailer(h2, id, ok, 1) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

static void answer_ok(sl__grpc_session *s, sl__grpc_stream *st, int64_t now) {
    static const nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
    nghttp2_data_provider prd = {.source = {.ptr = st}, .read_callback = read_resp};
    st->answered = true;
    st->data_answer = true;
    s->held += st->resp.len - st->resp_off;
    /* sent within header_timeout, or reset: a client that opens no window
     * for it must not hold the stream (and its answer) forever */
    if (s->header_timeout) {
        st->limit_at = now + s->header_timeout;
        sl__grpc_note_deadline(s, st->limit_at);
    }
    submitted(s, st, nghttp2_submit_response(s->h2, st->id, nva, 2, &prd));
}

/* ShouldRateLimit: the table limits are decided by the worker's engine;
 * the stream is answered in done, inline or later (its connection is held
 * until then: reply.h). */
typedef struct rls_ctx {
    sl__reply reply;
    sl__grpc_session *s;
    sl__grpc_stream *st;
} rls_ctx;

static void rls_done(sl__decide_call *call) {
    rls_ctx *rc = sl__domain_user(call);
    sl__grpc_session *s = rc->s;
    sl__grpc_stream *st = rc->st;
    st->pending = false;
    if (st->orphan) {
        sl__grpc_stream_free(s, st);
    } else {
        const char *message = NULL;
        int code = sl__grpc_rls_answer(call, &st->resp, &message);
        if (code == SL__GRPC_OK && st->resp.failed) {
            code = SL__GRPC_RESOURCE_EXHAUSTED;
            message = "out of memory";
        }
        if (code == SL__GRPC_OK)
            answer_ok(s, st, sl_now_monotonic());
        else
            answer_status(s, st, code, message);
        if (!s->failed && !s->in_feed) sl__grpc_session_pump(s); /* inside a feed, the feed pumps */
    }
    sl__reply r = rc->reply; /* the call goes first: ending may free the connection */
    sl__decide_call_free(call);
    sl__reply_end(&r);
}

/* Starts ShouldRateLimit. Returns SL__GRPC_OK with st->answered when it is
 * answered (now or later), SL__GRPC_OK without when the answer is in
 * st->resp, or a status with *message. */
static int rls_start(sl__grpc_session *s, sl__grpc_stream *st, const sl__grpc_call_env *env,
                     const uint8_t *msg, size_t len, const char **message) {
    const sl__request_ctx *rq = s->rq;
    sl__decide_call *call = NULL;
    int code = sl__grpc_rls_prepare(env, msg, len, sizeof(rls_ctx), &call, &st->resp, message);
    if (code != SL__GRPC_OK || !call) return code;
    rls_ctx *rc = sl__domain_user(call);
    rc->s = s;
    rc->st = st;
    call->done = rls_done;
    st->pending = true;
    st->answered = true; /* nothing else answers it meanwhile (deadlines included) */
    bool answered;
    sl__reply_begin(&rc->reply, rq->slot, &st->resp, &answered);
    sl__engine_decide(rq->decider, call, env->now);
    if (!answered) sl__reply_hold(&rc->reply); /* the handler's connection: never fails */
    return SL__GRPC_OK;
}

/* Whether the request of an ended stream (method, encoding, one whole
 * uncompressed message) can be called: SL__GRPC_OK, or its status and
 * *message (written into text, GRPC_MESSAGE_MAX bytes, when it says a
 * figure). */
static int request_status(const sl__grpc_session *s, const sl__grpc_stream *st, char *text,
                          const char **message) {
    const uint8_t *b = (const uint8_t *)st->body.data;
    if (!st->have_path || st->method == SL__GRPC_M_UNKNOWN) {
        *message = "unknown method";
        return SL__GRPC_UNIMPLEMENTED;
    }
    if (st->bad_encoding) {
        snprintf(text, GRPC_MESSAGE_MAX, "grpc-encoding %s is not supported (only identity)",
                 st->encoding);
        *message = text;
        return SL__GRPC_UNIMPLEMENTED;
    }
    if (st->crowded) {
        snprintf(text, GRPC_MESSAGE_MAX,
                 "the requests on this connection hold more than %zu bytes; try again",
                 s->max_buffered);
        *message = text;
        return SL__GRPC_RESOURCE_EXHAUSTED;
    }
    if (st->too_big) {
        snprintf(text, GRPC_MESSAGE_MAX, "message larger than %zu bytes", s->max_message);
        *message = text;
        return SL__GRPC_RESOURCE_EXHAUSTED;
    }
    if (st->body.failed) {
        *message = "out of memory";
        return SL__GRPC_RESOURCE_EXHAUSTED;
    }
    if (st->body.len == 0) {
        *message = "no request message (a unary method needs exactly one)";
        return SL__GRPC_UNIMPLEMENTED;
    }
    if (st->body.len < SL__GRPC_PREFIX_BYTES ||
        st->body.len < SL__GRPC_PREFIX_BYTES + (size_t)st->msg_len) {
        *message = "the request message is truncated";
        return SL__GRPC_INTERNAL;
    }
    if (b[0] != 0) {
        *message = b[0] == 1 ? "compressed message without grpc-encoding"
                             : "bad compressed flag in the message prefix";
        return SL__GRPC_INTERNAL;
    }
    if (st->extra) {
        *message = "more than one request message (a unary method takes exactly one)";
        return SL__GRPC_UNIMPLEMENTED;
    }
    return SL__GRPC_OK;
}

void sl__grpc_stream_finish(sl__grpc_session *s, sl__grpc_stream *st) {
    if (st->answered) return;
    const sl__request_ctx *rq = s->rq;
    int64_t t0 = sl_now_monotonic();
    if (!st->have_method) st->http_status = SL__GRPC_ST_405;
    if (!st->http_status && !st->have_ct) st->http_status = SL__GRPC_ST_415;
    if (st->http_status) {
        answer_http(s, st, st->http_status);
        return;
    }
    if (st->deadline && t0 >= st->deadline) {
        answer_status(s, st, SL__GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
        sl__stats_record(rq->stats, SL__PROTO_GRPC, 1, sl_now_monotonic() - t0);
        return;
    }
    const char *message = NULL;
    char text[GRPC_MESSAGE_MAX];
    int code = request_status(s, st, text, &message);
    if (code == SL__GRPC_OK) {
        const uint8_t *msg = (const uint8_t *)st->body.data + SL__GRPC_PREFIX_BYTES;
        sl__grpc_call_env env = {
            .domains = rq->domains, .now = rq->now, .serving = !rq->draining, .arena = &s->arena};
        sl__buf_reset(&st->resp);
        st->resp_off = 0;
        if (st->method == SL__GRPC_M_SHOULD_RATE_LIMIT) {
            code = rls_start(s, st, &env, msg, st->msg_len, &message);
            if (code == SL__GRPC_OK && st->answered) { /* answered later, or already */
                sl__stats_record(rq->stats, SL__PROTO_GRPC, 1, sl_now_monotonic() - t0);
                return;
            }
        } else {
            code = sl__grpc_call(&env, st->method, msg, st->msg_len, &st->resp, &message);
        }
        if (code == SL__GRPC_OK && st->resp.failed) {
            code = SL__GRPC_RESOURCE_EXHAUSTED;
            message = "out of memory";
        }
    }
    if (code == SL__GRPC_OK)
        answer_ok(s, st, t0);
    else
        answer_status(s, st, code, message);
    sl__stats_record(rq->stats, SL__PROTO_GRPC, 1, sl_now_monotonic() - t0);
}

/* Streams past their deadline: not ended by the client in time (its
 * grpc-timeout, or header_timeout from its HEADERS) are answered
 * DEADLINE_EXCEEDED and reset; an answer still held by flow control
 * header_timeout after it was made is reset. Returns how many. */
unsigned sl__grpc_session_expire(sl__grpc_session *s, int64_t now) {
    if (!s->next_deadline || now < s->next_deadline) return 0;
    s->next_deadline = 0;
    unsigned n = 0;
    for (sl__grpc_stream *st = s->streams; st; st = st->next) {
        if (st->pending || st->rst_after) continue;
        if (!st->answered) {
            bool late = st->deadline && st->deadline <= now;
            if (late || (st->limit_at && st->limit_at <= now)) {
                /* the answer first: a reset submitted now would drop it */
                st->rst_after = NGHTTP2_CANCEL + 1;
                answer_status(s, st, SL__GRPC_DEADLINE_EXCEEDED,
                              late ? "deadline exceeded"
                                   : "the request did not arrive within limits.header_timeout");
                n++;
                continue;
            }
            sl__grpc_note_deadline(s, st->deadline);
            sl__grpc_note_deadline(s, st->limit_at);
        } else if (st->data_answer && st->limit_at) {
            if (st->limit_at <= now) {
                st->limit_at = 0;
                nghttp2_submit_rst_stream(s->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
                n++;
            } else {
                sl__grpc_note_deadline(s, st->limit_at);
            }
        }
    }
    return n;
}
