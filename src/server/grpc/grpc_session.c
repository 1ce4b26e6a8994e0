/* grpc_session.c: one gRPC connection (grpc.h): HTTP/2 cleartext with prior
 * knowledge on nghttp2 (a server session fed with nghttp2_session_mem_recv,
 * its output taken with nghttp2_session_mem_send into the connection's
 * buffer), and gRPC's framing on top (doc/PROTOCOL-HTTP2.md). This file is
 * the session itself (nghttp2's setup, input one frame at a time, the
 * connection's deadlines, output); nghttp2's callbacks are grpc_h2.c, a
 * stream's checks, decision and answer grpc_stream.c, nghttp2's memory
 * grpc_pool.c, and what they share grpc_session.h.
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
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc.h"
#include "server/grpc/grpc_session.h"
#include "server/reply.h"
#include "server/request.h"
#include "sluice/clock.h"

#define PREFACE_BYTES 24 /* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */

/* ---- the session ----------------------------------------------------------------------- */

/* Moves everything nghttp2 has to send into the connection's buffer. */
void sl__grpc_session_pump(sl__grpc_session *s) {
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
    s->fr_state = SL__GRPC_FR_PREFACE;
    s->fr_left = PREFACE_BYTES;
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        free(s);
        return NULL;
    }
    sl__grpc_h2_callbacks(cb);
    int rc = nghttp2_option_new(&opt);
    if (rc == 0) {
        /* the peer may not reserve more stream state than we allow */
        nghttp2_option_set_max_reserved_remote_streams(opt, 0);
        /* HTTP semantics are checked in sl__grpc_stream_finish, only as far as gRPC needs:
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
    sl__grpc_session_pump(s);
    return s;
}

/* How many of the len bytes at p belong to the frame (or the preface)
 * being received, up to its end; notes where the frame ends. */
static size_t frame_take(sl__grpc_session *s, const uint8_t *p, size_t len) {
    size_t n;
    switch (s->fr_state) {
    case SL__GRPC_FR_PREFACE:
    case SL__GRPC_FR_PAYLOAD:
        n = s->fr_left < len ? s->fr_left : len;
        s->fr_left -= (uint32_t)n;
        if (s->fr_left == 0) {
            s->fr_state = SL__GRPC_FR_HEADER;
            s->fr_hdr_len = 0;
            s->fr_started = 0;
        }
        return n;
    case SL__GRPC_FR_HEADER:
    default:
        n = SL__GRPC_FRAME_HDR - s->fr_hdr_len < len ? SL__GRPC_FRAME_HDR - s->fr_hdr_len : len;
        memcpy(s->fr_hdr + s->fr_hdr_len, p, n);
        s->fr_hdr_len += (unsigned)n;
        if (s->fr_hdr_len < SL__GRPC_FRAME_HDR) return n;
        s->fr_left = (uint32_t)s->fr_hdr[0] << 16 | (uint32_t)s->fr_hdr[1] << 8 | s->fr_hdr[2];
        if (s->fr_left == 0) {
            s->fr_hdr_len = 0;
            s->fr_started = 0;
            return n;
        }
        s->fr_state = SL__GRPC_FR_PAYLOAD;
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
            sl__grpc_session_pump(s);
            return -1;
        }
        off += n;
        sl__grpc_session_pump(s);
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
        sl__grpc_session_pump(s);
        return -1;
    }
    int n = (int)sl__grpc_session_expire(s, now);
    sl__grpc_session_pump(s);
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
    sl__grpc_session_pump(s);
}

void sl__grpc_session_free(sl__grpc_session *s) {
    if (!s) return;
    if (s->h2) nghttp2_session_del(s->h2); /* closes the streams: on_stream_close frees them */
    /* stream_free unlinks the head first */
    // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
    while (s->streams) sl__grpc_stream_free(s, s->streams);
    for (sl__grpc_stream *st = s->free, *next; st; st = next) {
        next = st->next;
        sl__buf_free(&st->body);
        sl__buf_free(&st->resp);
        free(st);
    }
    sl__grpc_arena_free(&s->arena);
    sl__grpc_pool_drop(&s->pool);
    free(s);
}
