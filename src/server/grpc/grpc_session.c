/* grpc_session.c: one gRPC connection (grpc.h): HTTP/2 cleartext with prior
 * knowledge on nghttp2 (a server session fed with nghttp2_session_mem_recv,
 * its output taken with nghttp2_session_mem_send into the connection's
 * buffer), and gRPC's framing on top (doc/PROTOCOL-HTTP2.md).
 *
 * A stream collects its request headers (:method, :path, content-type,
 * grpc-timeout, grpc-encoding) and its DATA, whatever the frame boundaries,
 * up to one length-prefixed message of at most limits.max_body_bytes; it is
 * answered when the client ends it (END_STREAM):
 * - not POST: HTTP 405; content-type not application/grpc[+...]: HTTP 415;
 * - past its grpc-timeout: DEADLINE_EXCEEDED (nothing decided);
 * - unknown method: UNIMPLEMENTED; a grpc-encoding other than identity:
 *   UNIMPLEMENTED; a message over the limit: RESOURCE_EXHAUSTED (its bytes
 *   are dropped as they arrive); zero or several messages: UNIMPLEMENTED
 *   (cardinality); a compressed flag, a truncated prefix or an unparsable
 *   message: INTERNAL;
 * - otherwise the method's answer: HEADERS (:status 200), DATA (the message),
 *   trailers (grpc-status 0). Errors are Trailers-Only.
 * A stream whose grpc-timeout passes before the client ends it is answered
 * DEADLINE_EXCEEDED and reset (CANCEL) when the connection's timer asks
 * (sl__grpc_session_tick at sl__grpc_session_next_deadline).
 *
 * Hostile clients (limits.header_timeout, as HTTP/1.1's whole request):
 * - the connection preface and the client's first SETTINGS must arrive
 *   within header_timeout of the connection's first byte, and every frame
 *   within header_timeout of its own first byte; otherwise a GOAWAY
 *   (NO_ERROR, "limits.header_timeout") and the connection closes;
 * - a stream must be ended by the client (END_STREAM) within header_timeout
 *   of its HEADERS: otherwise it is answered DEADLINE_EXCEEDED and reset
 *   (CANCEL), and the other streams of the connection go on. An answer that
 *   the client's flow-control window keeps in nghttp2 is reset (CANCEL)
 *   header_timeout after it was made.
 * - Input is fed to nghttp2 one frame at a time; before each frame the
 *   connection checks its output bounds (sl__slot_stop) and may hold
 *   the rest of the input back, so that answers are never built past
 *   limits.max_pending_output by more than one frame's answer.
 * - Answers that flow control keeps inside nghttp2 (DATA the client's window
 *   has no room for) are counted (sl__grpc_session_held) in the
 *   connection's pending output; while they are over
 *   limits.max_pending_output new streams are refused (REFUSED_STREAM): the
 *   connection keeps being read, for the WINDOW_UPDATE that lets them go.
 * - The request messages of all the streams of a connection hold at most
 *   2 x limits.max_body_bytes (max_buffered): a stream whose DATA would go
 *   over is dropped and answered RESOURCE_EXHAUSTED when it ends.
 * - nghttp2's own flood limits, set explicitly: 8 CONTINUATION frames per
 *   header block, 32 entries per SETTINGS frame, incoming RST_STREAM at
 *   1000 at once and 33 a second (the "rapid reset" attack), then a GOAWAY.
 *   PING and SETTINGS ACKs land in the connection's output and count in its
 *   bounds like answers; more than CONTROL_MAX PING or SETTINGS frames in
 *   one second get a GOAWAY (ENHANCE_YOUR_CALM) and the connection closes
 *   (nghttp2's own guard, 1000 ACKs unsent, never fires here: the output is
 *   taken after every frame).
 *
 * SETTINGS: at most SL__GRPC_MAX_STREAMS concurrent streams (nghttp2 refuses
 * more with REFUSED_STREAM until the client acknowledges the SETTINGS, then
 * treats more as a connection error), header lists of at most limits.max_header_bytes. Broken
 * HTTP/2 (bad frames, flow-control or HPACK errors) gets a GOAWAY from nghttp2 and the connection
 * closes after it; bytes that are not HTTP/2 at all (no client preface) close the connection at
 * once. */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/decide.h"
#include "server/grpc/grpc.h"
#include "server/grpc/grpc_pool.h"
#include "server/grpc/grpc_service.h"
#include "server/reply.h"
#include "server/request.h"
#include "sluice/clock.h"

#define SL__GRPC_MAX_STREAMS 128
#define PREFIX_BYTES         5
#define GRPC_MESSAGE_MAX     200 /* bytes of a grpc-message before encoding */

#define CONTROL_MAX   1000 /* PING and SETTINGS frames in one second, at most */
#define PREFACE_BYTES 24   /* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */
#define FRAME_HDR     9

enum { ST_NONE = 0, ST_405 = 405, ST_415 = 415 };

typedef struct stream {
    int32_t id;
    sl__grpc_method_id method;
    int http_status; /* ST_405 / ST_415, or 0 */
    bool have_method, have_path, have_ct, bad_encoding, too_big, extra;
    bool crowded; /* dropped: the connection's request bytes were over max_buffered */
    bool answered;
    bool data_answer;    /* answered with DATA (answer_ok): may be held by flow control */
    bool pending;        /* decided in Redis: the answer comes later */
    bool orphan;         /* closed by the peer while pending: freed when the answer comes */
    uint32_t rst_after;  /* + 1: reset the stream with this code once the answer is sent */
    int64_t deadline;    /* grpc-timeout, monotonic ns; 0 = none */
    int64_t limit_at;    /* header_timeout: ended by then, or its answer sent; 0 = none */
    size_t header_bytes; /* for max_header_bytes */
    uint32_t msg_len;    /* from the prefix, once known */
    sl__buf body;        /* the request's bytes (prefix + at most one message) */
    sl__buf resp;        /* the answer's DATA */
    size_t resp_off;
    char encoding[32]; /* the unsupported grpc-encoding, for the message */
    struct stream *prev, *next;
} stream;

struct sl__grpc_session {
    const sl__limits_config *limits;
    const sl__request_ctx *rq; /* the feed's, while it runs (NULL otherwise) */
    sl__buf *out;
    nghttp2_session *h2;
    size_t max_message, max_header;
    stream *streams; /* open streams */
    stream *free;    /* spare ones, at most SL__GRPC_MAX_STREAMS */
    unsigned nfree;
    stream *last;          /* the stream of the latest callback (saves map lookups) */
    int64_t next_deadline; /* earliest deadline of an unanswered stream; 0 = none */
    bool shutdown, failed;
    bool in_feed;           /* inside sl__grpc_session_feed (nghttp2 callbacks run) */
    int64_t header_timeout; /* limits.header_timeout in ns; 0 = none */
    int64_t now;            /* the clock of the feed in progress */
    size_t held;            /* bytes of answers' DATA not yet taken by mem_send */
    size_t buffered;        /* bytes of request messages in the streams (their body) */
    size_t max_buffered;    /* ... at most: 2 x limits.max_body_bytes */
    /* the frame being received (input is fed one frame at a time) */
    enum { FR_PREFACE, FR_HEADER, FR_PAYLOAD } fr_state;
    uint32_t fr_left;           /* bytes left of the preface or the payload */
    uint8_t fr_hdr[FRAME_HDR];  /* the frame header so far */
    unsigned fr_hdr_len;        /* its bytes */
    int64_t fr_started;         /* first byte of the unfinished frame; 0 = between frames */
    int64_t preface_deadline;   /* until the client's first SETTINGS; 0 = none (yet) */
    bool started, got_settings; /* a first byte; the client's first SETTINGS */
    bool timed_out;             /* GOAWAY for a late preface or frame sent */
    int64_t ctl_since;          /* the second in which ctl_count PING/SETTINGS arrived */
    unsigned ctl_count;
    sl__grpc_arena arena;
    sl__grpc_pool pool; /* nghttp2's memory */
};

/* Keeps next_deadline the earliest of the streams' deadlines. */
static void note_deadline(sl__grpc_session *s, int64_t d) {
    if (d && (!s->next_deadline || d < s->next_deadline)) s->next_deadline = d;
}

/* ---- streams ----------------------------------------------------------------- */

static stream *stream_new(sl__grpc_session *s, int32_t id) {
    stream *st = s->free;
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

static stream *stream_of(sl__grpc_session *s, int32_t id) {
    if (s->last && s->last->id == id) return s->last;
    stream *st = nghttp2_session_get_stream_user_data(s->h2, id);
    if (st) s->last = st;
    return st;
}

static void stream_free(sl__grpc_session *s, stream *st) {
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
static void submitted(sl__grpc_session *s, stream *st, int rc) {
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
static void answer_status(sl__grpc_session *s, stream *st, int code, const char *message) {
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

static void answer_http(sl__grpc_session *s, stream *st, int status) {
    st->answered = true;
    if (status == ST_405) {
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
    stream *st = src->ptr;
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

static void answer_ok(sl__grpc_session *s, stream *st, int64_t now) {
    static const nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
    nghttp2_data_provider prd = {.source = {.ptr = st}, .read_callback = read_resp};
    st->answered = true;
    st->data_answer = true;
    s->held += st->resp.len - st->resp_off;
    /* sent within header_timeout, or reset: a client that opens no window
     * for it must not hold the stream (and its answer) forever */
    if (s->header_timeout) {
        st->limit_at = now + s->header_timeout;
        note_deadline(s, st->limit_at);
    }
    submitted(s, st, nghttp2_submit_response(s->h2, st->id, nva, 2, &prd));
}

static void pump(sl__grpc_session *s);

/* ShouldRateLimit: the table limits are decided by the worker's engine;
 * the stream is answered in done, inline or later (its connection is held
 * until then: reply.h). */
typedef struct rls_ctx {
    sl__reply reply;
    sl__grpc_session *s;
    stream *st;
} rls_ctx;

static void rls_done(sl__decide_call *call) {
    rls_ctx *rc = sl__domain_user(call);
    sl__grpc_session *s = rc->s;
    stream *st = rc->st;
    st->pending = false;
    if (st->orphan) {
        stream_free(s, st);
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
        if (!s->failed && !s->in_feed) pump(s); /* inside a feed, the feed pumps */
    }
    sl__reply r = rc->reply; /* the call goes first: ending may free the connection */
    sl__decide_call_free(call);
    sl__reply_end(&r);
}

/* Starts ShouldRateLimit. Returns SL__GRPC_OK with st->answered when it is
 * answered (now or later), SL__GRPC_OK without when the answer is in
 * st->resp, or a status with *message. */
static int rls_start(sl__grpc_session *s, stream *st, const sl__grpc_call_env *env,
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

/* The client has ended the stream: decide and answer. */
static void finish(sl__grpc_session *s, stream *st) {
    if (st->answered) return;
    const sl__request_ctx *rq = s->rq;
    int64_t t0 = sl_now_monotonic();
    if (!st->have_method) st->http_status = ST_405;
    if (!st->http_status && !st->have_ct) st->http_status = ST_415;
    if (st->http_status) {
        answer_http(s, st, st->http_status);
        return;
    }
    if (st->deadline && t0 >= st->deadline) {
        answer_status(s, st, SL__GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
        sl__stats_record(rq->stats, SL__PROTO_GRPC, 1, sl_now_monotonic() - t0);
        return;
    }
    int code = SL__GRPC_OK;
    const char *message = NULL;
    char text[GRPC_MESSAGE_MAX];
    const uint8_t *b = (const uint8_t *)st->body.data;
    if (!st->have_path || st->method == SL__GRPC_M_UNKNOWN) {
        code = SL__GRPC_UNIMPLEMENTED;
        message = "unknown method";
    } else if (st->bad_encoding) {
        code = SL__GRPC_UNIMPLEMENTED;
        snprintf(text, sizeof text, "grpc-encoding %s is not supported (only identity)",
                 st->encoding);
        message = text;
    } else if (st->crowded) {
        code = SL__GRPC_RESOURCE_EXHAUSTED;
        snprintf(text, sizeof text,
                 "the requests on this connection hold more than %zu bytes; try again",
                 s->max_buffered);
        message = text;
    } else if (st->too_big) {
        code = SL__GRPC_RESOURCE_EXHAUSTED;
        snprintf(text, sizeof text, "message larger than %zu bytes", s->max_message);
        message = text;
    } else if (st->body.failed) {
        code = SL__GRPC_RESOURCE_EXHAUSTED;
        message = "out of memory";
    } else if (st->body.len == 0) {
        code = SL__GRPC_UNIMPLEMENTED;
        message = "no request message (a unary method needs exactly one)";
    } else if (st->body.len < PREFIX_BYTES || st->body.len < PREFIX_BYTES + (size_t)st->msg_len) {
        code = SL__GRPC_INTERNAL;
        message = "the request message is truncated";
    } else if (b[0] != 0) {
        code = SL__GRPC_INTERNAL;
        message = b[0] == 1 ? "compressed message without grpc-encoding"
                            : "bad compressed flag in the message prefix";
    } else if (st->extra) {
        code = SL__GRPC_UNIMPLEMENTED;
        message = "more than one request message (a unary method takes exactly one)";
    } else {
        sl__grpc_call_env env = {
            .domains = rq->domains, .now = rq->now, .serving = !rq->draining, .arena = &s->arena};
        sl__buf_reset(&st->resp);
        st->resp_off = 0;
        if (st->method == SL__GRPC_M_SHOULD_RATE_LIMIT) {
            code = rls_start(s, st, &env, b + PREFIX_BYTES, st->msg_len, &message);
            if (code == SL__GRPC_OK && st->answered) { /* answered later, or already */
                sl__stats_record(rq->stats, SL__PROTO_GRPC, 1, sl_now_monotonic() - t0);
                return;
            }
        } else {
            code =
                sl__grpc_call(&env, st->method, b + PREFIX_BYTES, st->msg_len, &st->resp, &message);
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
static unsigned expire(sl__grpc_session *s, int64_t now) {
    if (!s->next_deadline || now < s->next_deadline) return 0;
    s->next_deadline = 0;
    unsigned n = 0;
    for (stream *st = s->streams; st; st = st->next) {
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
            note_deadline(s, st->deadline);
            note_deadline(s, st->limit_at);
        } else if (st->data_answer && st->limit_at) {
            if (st->limit_at <= now) {
                st->limit_at = 0;
                nghttp2_submit_rst_stream(s->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
                n++;
            } else {
                note_deadline(s, st->limit_at);
            }
        }
    }
    return n;
}

/* ---- headers ------------------------------------------------------------------------- */

/* grpc-timeout: 1 to 8 digits and a unit (H M S m u n). Returns ns, -1 when
 * malformed (ignored), -2 when too far away to matter. */
static int64_t parse_timeout(const uint8_t *v, size_t len) {
    if (len < 2 || len > 9) return -1;
    int64_t n = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9') return -1;
        n = n * 10 + (v[i] - '0');
    }
    int64_t unit;
    switch (v[len - 1]) {
    case 'H':
        unit = 3600 * SL_NS_PER_SEC;
        break;
    case 'M':
        unit = 60 * SL_NS_PER_SEC;
        break;
    case 'S':
        unit = SL_NS_PER_SEC;
        break;
    case 'm':
        unit = SL_NS_PER_MS;
        break;
    case 'u':
        unit = 1000;
        break;
    case 'n':
        unit = 1;
        break;
    default:
        return -1;
    }
    /* 99999999H is beyond int64 ns: anything over a century is no deadline (-2) */
    return n > (INT64_C(100) * 366 * 86400 * SL_NS_PER_SEC) / unit ? -2 : n * unit;
}

static bool is(const uint8_t *p, size_t n, const char *lit) {
    size_t l = strlen(lit);
    return n == l && memcmp(p, lit, l) == 0;
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *frame, void *user) {
    sl__grpc_session *s = user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    /* answers the client's window keeps here are over the bound: no new
     * work until it lets them go (REFUSED_STREAM: safe to retry) */
    size_t bound = s->limits->max_pending_output;
    if (bound && s->held >= bound) {
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                  NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    stream *st = stream_new(s, frame->hd.stream_id);
    if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM this one */
    nghttp2_session_set_stream_user_data(h2, frame->hd.stream_id, st);
    s->last = st;
    if (s->header_timeout) {
        st->limit_at = s->now + s->header_timeout;
        note_deadline(s, st->limit_at);
    }
    return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user) {
    (void)h2;
    (void)flags;
    sl__grpc_session *s = user;
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    stream *st = stream_of(s, frame->hd.stream_id);
    if (!st) return 0;
    st->header_bytes += namelen + valuelen + 32;
    if (st->header_bytes > s->max_header) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0; /* trailers: ignored */
    if (is(name, namelen, ":method")) {
        st->have_method = true;
        if (!is(value, valuelen, "POST")) st->http_status = ST_405;
    } else if (is(name, namelen, ":path")) {
        st->have_path = true;
        st->method = sl__grpc_method((const char *)value, valuelen);
    } else if (is(name, namelen, "content-type")) {
        st->have_ct = true;
        /* application/grpc, application/grpc+proto, application/grpc;... */
        bool grpc = valuelen >= 16 && !memcmp(value, "application/grpc", 16) &&
                    (valuelen == 16 || value[16] == '+' || value[16] == ';');
        if (!grpc && st->http_status != ST_405) st->http_status = ST_415;
    } else if (is(name, namelen, "grpc-timeout")) {
        int64_t t = parse_timeout(value, valuelen);
        if (t >= 0) {
            st->deadline = sl_now_monotonic() + t;
            note_deadline(s, st->deadline);
        }
    } else if (is(name, namelen, "grpc-encoding")) {
        if (!is(value, valuelen, "identity")) {
            st->bad_encoding = true;
            size_t n = valuelen < sizeof st->encoding - 1 ? valuelen : sizeof st->encoding - 1;
            for (size_t i = 0; i < n; i++)
                st->encoding[i] = (char)(value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?');
            st->encoding[n] = '\0';
        }
    }
    return 0;
}

/* Appends n request bytes to a stream's body, unless the connection's
 * streams would then hold more than max_buffered: 128 streams of one
 * max_body_bytes message each, trickled, would hold 128 times what one
 * HTTP/1.1 connection may. The stream is then dropped (its bytes freed,
 * RESOURCE_EXHAUSTED when it ends). */
static bool body_append(sl__grpc_session *s, stream *st, const uint8_t *data, size_t n) {
    if (s->buffered + n > s->max_buffered) {
        s->buffered -= st->body.len;
        sl__buf_free(&st->body);
        sl__buf_init(&st->body);
        st->crowded = st->too_big = true;
        return false;
    }
    size_t before = st->body.len;
    sl__buf_append(&st->body, data, n);
    s->buffered += st->body.len - before;
    return true;
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *user) {
    (void)h2;
    (void)flags;
    sl__grpc_session *s = user;
    stream *st = stream_of(s, id);
    if (!st || st->answered || st->http_status || st->too_big || st->extra) return 0;
    while (len) {
        size_t have = st->body.len;
        if (have < PREFIX_BYTES) { /* the prefix, possibly split over frames */
            size_t n = PREFIX_BYTES - have < len ? PREFIX_BYTES - have : len;
            if (!body_append(s, st, data, n)) return 0;
            data += n;
            len -= n;
            if (st->body.len == PREFIX_BYTES) {
                const uint8_t *p = (const uint8_t *)st->body.data;
                st->msg_len =
                    (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
                if (st->msg_len > s->max_message) {
                    st->too_big = true;
                    return 0;
                }
            }
            continue;
        }
        size_t want = PREFIX_BYTES + st->msg_len - have;
        if (want == 0) { /* a second message */
            st->extra = true;
            return 0;
        }
        size_t n = want < len ? want : len;
        if (!body_append(s, st, data, n)) return 0;
        data += n;
        len -= n;
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame, void *user) {
    sl__grpc_session *s = user;
    if ((frame->hd.type == NGHTTP2_SETTINGS || frame->hd.type == NGHTTP2_PING) &&
        !(frame->hd.flags & NGHTTP2_FLAG_ACK)) {
        if (frame->hd.type == NGHTTP2_SETTINGS)
            s->got_settings = true; /* the first one ends the client's preface */
        /* each asks for an ACK: a flood of them is work for nothing */
        if (s->now - s->ctl_since >= SL_NS_PER_SEC) {
            s->ctl_since = s->now;
            s->ctl_count = 0;
        }
        if (++s->ctl_count > CONTROL_MAX)
            nghttp2_session_terminate_session(h2, NGHTTP2_ENHANCE_YOUR_CALM);
        return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    stream *st = stream_of(s, frame->hd.stream_id);
    if (st) finish(s, st);
    return 0;
}

/* After a Trailers-Only answer to a stream the client has not ended: the
 * reset that tells it to stop sending. */
static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *frame, void *user) {
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    stream *st = stream_of(user, frame->hd.stream_id);
    if (st && st->rst_after) {
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, st->id, st->rst_after - 1);
        st->rst_after = 0;
    }
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t id, uint32_t error_code, void *user) {
    (void)error_code;
    sl__grpc_session *s = user;
    stream *st = nghttp2_session_get_stream_user_data(h2, id);
    if (st) {
        nghttp2_session_set_stream_user_data(h2, id, NULL);
        if (st->data_answer) s->held -= st->resp.len - st->resp_off;
        st->data_answer = false;
        if (st->pending)
            st->orphan = true; /* the decision in flight still points at it */
        else
            stream_free(s, st);
    }
    return 0;
}

/* ---- the session ----------------------------------------------------------------------- */

/* Moves everything nghttp2 has to send into the connection's buffer. */
static void pump(sl__grpc_session *s) {
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(s->h2, &data);
        if (n < 0) {
            s->failed = true;
            return;
        }
        if (n == 0) return;
        sl__buf_append(s->out, data, (size_t)n);
    }
}

sl__grpc_session *sl__grpc_session_new(const sl__limits_config *limits, sl__buf *out) {
    sl__grpc_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->limits = limits;
    s->out = out;
    s->max_message = limits->max_body_bytes ? limits->max_body_bytes : 64 * 1024;
    s->max_header = limits->max_header_bytes ? limits->max_header_bytes : 8 * 1024;
    s->header_timeout = limits->header_timeout > 0 ? limits->header_timeout : 0;
    s->max_buffered = 2 * s->max_message;
    s->fr_state = FR_PREFACE;
    s->fr_left = PREFACE_BYTES;
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        free(s);
        return NULL;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    int rc = nghttp2_option_new(&opt);
    if (rc == 0) {
        /* the peer may not reserve more stream state than we allow */
        nghttp2_option_set_max_reserved_remote_streams(opt, 0);
        /* HTTP semantics are checked here (finish), only as far as gRPC needs:
         * nghttp2's checks of every header cost more than the rest of a call */
        nghttp2_option_set_no_http_messaging(opt, 1);
        /* floods (nghttp2's defaults today, kept whatever a later version
         * chooses): CONTINUATION frames after one HEADERS, entries of one
         * SETTINGS frame, incoming resets (burst, per second) */
        nghttp2_option_set_max_continuations(opt, 8);
        nghttp2_option_set_max_settings(opt, 32);
        nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
        nghttp2_mem mem = sl__grpc_pool_mem(&s->pool);
        rc = nghttp2_session_server_new3(&s->h2, cb, s, opt, &mem);
        nghttp2_option_del(opt);
    }
    nghttp2_session_callbacks_del(cb);
    if (rc != 0) {
        free(s);
        return NULL;
    }
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, SL__GRPC_MAX_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)s->max_header},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        /* no RFC 7540 priority tree: its upkeep costs on every stream, and
         * the answers of one connection need no ordering */
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    };
    /* the server preface goes first, before any answer */
    if (nghttp2_submit_settings(s->h2, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0) {
        sl__grpc_session_free(s);
        return NULL;
    }
    pump(s);
    return s;
}

/* How many of the len bytes at p belong to the frame (or the preface)
 * being received, up to its end; notes where the frame ends. */
static size_t frame_take(sl__grpc_session *s, const uint8_t *p, size_t len) {
    size_t n;
    switch (s->fr_state) {
    case FR_PREFACE:
    case FR_PAYLOAD:
        n = s->fr_left < len ? s->fr_left : len;
        s->fr_left -= (uint32_t)n;
        if (s->fr_left == 0) {
            s->fr_state = FR_HEADER;
            s->fr_hdr_len = 0;
            s->fr_started = 0;
        }
        return n;
    case FR_HEADER:
    default:
        n = FRAME_HDR - s->fr_hdr_len < len ? FRAME_HDR - s->fr_hdr_len : len;
        memcpy(s->fr_hdr + s->fr_hdr_len, p, n);
        s->fr_hdr_len += (unsigned)n;
        if (s->fr_hdr_len < FRAME_HDR) return n;
        s->fr_left = (uint32_t)s->fr_hdr[0] << 16 | (uint32_t)s->fr_hdr[1] << 8 | s->fr_hdr[2];
        if (s->fr_left == 0) {
            s->fr_hdr_len = 0;
            s->fr_started = 0;
            return n;
        }
        s->fr_state = FR_PAYLOAD;
        return n + frame_take(s, p + n, len - n);
    }
}

/* The deadline of the connection itself: its preface, the frame on its way. */
static int64_t conn_deadline(const sl__grpc_session *s) {
    if (s->timed_out || !s->header_timeout) return 0;
    int64_t d = s->got_settings ? 0 : s->preface_deadline;
    if (s->fr_started && (!d || s->fr_started + s->header_timeout < d))
        d = s->fr_started + s->header_timeout;
    return d;
}

static int feed(sl__grpc_session *s, const char *data, size_t len, size_t *used);

int sl__grpc_session_feed(sl__grpc_session *s, const sl__request_ctx *rq, const char *data,
                          size_t len, size_t *used) {
    s->rq = rq;
    int rc = feed(s, data, len, used);
    s->rq = NULL;
    return rc;
}

static int feed(sl__grpc_session *s, const char *data, size_t len, size_t *used) {
    *used = len;
    if (s->failed) return -1;
    s->now = sl_now_monotonic();
    if (!s->started && len) {
        s->started = true;
        if (s->header_timeout) s->preface_deadline = s->now + s->header_timeout;
    }
    size_t off = 0;
    while (off < len) {
        if (!s->fr_started) {
            /* between frames: the answers so far are counted before the
             * next frame may build more */
            if (sl__slot_stop(s->rq->slot)) break;
            s->fr_started = s->now;
        }
        size_t n = frame_take(s, (const uint8_t *)data + off, len - off);
        s->in_feed = true;
        ssize_t r = nghttp2_session_mem_recv(s->h2, (const uint8_t *)data + off, n);
        s->in_feed = false;
        if (r < 0) {
            s->failed = true;
            if (r == NGHTTP2_ERR_BAD_CLIENT_MAGIC) return -1; /* not HTTP/2 at all: just close */
            nghttp2_session_terminate_session(s->h2, NGHTTP2_PROTOCOL_ERROR);
            pump(s);
            return -1;
        }
        off += n;
        pump(s);
        if (s->failed) return -1;
        /* nghttp2 ended the session on its own: a connection error (GOAWAY sent) */
        if (!s->shutdown && !nghttp2_session_want_read(s->h2) && !nghttp2_session_want_write(s->h2))
            return -1;
    }
    *used = off;
    return 0;
}

int64_t sl__grpc_session_next_deadline(const sl__grpc_session *s) {
    if (s->failed) return 0;
    int64_t d = conn_deadline(s);
    return d && (!s->next_deadline || d < s->next_deadline) ? d : s->next_deadline;
}

int sl__grpc_session_tick(sl__grpc_session *s) {
    if (s->failed) return 0;
    int64_t now = sl_now_monotonic();
    int64_t cd = conn_deadline(s);
    if (cd && now >= cd) {
        /* the preface or a frame came too slowly: the connection cannot go
         * on (a frame is cut), the streams the client completed are not
         * waited for */
        static const char why[] = "limits.header_timeout";
        s->timed_out = true;
        nghttp2_submit_goaway(s->h2, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(s->h2), NGHTTP2_NO_ERROR,
                              (const uint8_t *)why, sizeof why - 1);
        pump(s);
        return -1;
    }
    int n = (int)expire(s, now);
    pump(s);
    return n;
}

size_t sl__grpc_session_held(const sl__grpc_session *s) {
    return s->held;
}

bool sl__grpc_session_done(const sl__grpc_session *s) {
    return s->failed || (!nghttp2_session_want_read(s->h2) && !nghttp2_session_want_write(s->h2));
}

void sl__grpc_session_shutdown(sl__grpc_session *s) {
    if (s->shutdown || s->failed) return;
    s->shutdown = true;
    /* streams the client opened up to here are still answered; later ones
     * are refused by the GOAWAY (the client may retry them elsewhere) */
    nghttp2_submit_goaway(s->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(s->h2),
                          NGHTTP2_NO_ERROR, NULL, 0);
    pump(s);
}

void sl__grpc_session_free(sl__grpc_session *s) {
    if (!s) return;
    if (s->h2) nghttp2_session_del(s->h2); /* closes the streams: on_stream_close frees them */
    /* stream_free unlinks the head first */
    // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
    while (s->streams) stream_free(s, s->streams);
    for (stream *st = s->free, *next; st; st = next) {
        next = st->next;
        sl__buf_free(&st->body);
        sl__buf_free(&st->resp);
        free(st);
    }
    sl__grpc_arena_free(&s->arena);
    sl__grpc_pool_drop(&s->pool);
    free(s);
}
