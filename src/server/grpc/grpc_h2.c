/* grpc_h2.c: the nghttp2 callbacks of a gRPC session (grpc_session.h): a
 * stream's request headers (:method, :path, content-type, grpc-timeout,
 * grpc-encoding) and its DATA up to one message, within the connection's
 * bounds; control frames counted against floods; END_STREAM handed to
 * grpc_stream.c; resets after an answer; streams closed. */
#include <nghttp2/nghttp2.h>
#include <string.h>

#include "server/grpc/grpc_session.h"
#include "sluice/clock.h"

#define CONTROL_MAX 1000 /* PING and SETTINGS frames in one second, at most */

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
    sl__grpc_stream *st = sl__grpc_stream_new(s, frame->hd.stream_id);
    if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM this one */
    nghttp2_session_set_stream_user_data(h2, frame->hd.stream_id, st);
    s->last = st;
    if (s->header_timeout) {
        st->limit_at = s->now + s->header_timeout;
        sl__grpc_note_deadline(s, st->limit_at);
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
    sl__grpc_stream *st = sl__grpc_stream_of(s, frame->hd.stream_id);
    if (!st) return 0;
    st->header_bytes += namelen + valuelen + 32;
    if (st->header_bytes > s->max_header) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0; /* trailers: ignored */
    if (is(name, namelen, ":method")) {
        st->have_method = true;
        if (!is(value, valuelen, "POST")) st->http_status = SL__GRPC_ST_405;
    } else if (is(name, namelen, ":path")) {
        st->have_path = true;
        st->method = sl__grpc_method((const char *)value, valuelen);
    } else if (is(name, namelen, "content-type")) {
        st->have_ct = true;
        /* application/grpc, application/grpc+proto, application/grpc;... */
        bool grpc = valuelen >= 16 && !memcmp(value, "application/grpc", 16) &&
                    (valuelen == 16 || value[16] == '+' || value[16] == ';');
        if (!grpc && st->http_status != SL__GRPC_ST_405) st->http_status = SL__GRPC_ST_415;
    } else if (is(name, namelen, "grpc-timeout")) {
        int64_t t = parse_timeout(value, valuelen);
        if (t >= 0) {
            st->deadline = sl_now_monotonic() + t;
            sl__grpc_note_deadline(s, st->deadline);
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
static bool body_append(sl__grpc_session *s, sl__grpc_stream *st, const uint8_t *data, size_t n) {
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
    sl__grpc_stream *st = sl__grpc_stream_of(s, id);
    if (!st || st->answered || st->http_status || st->too_big || st->extra) return 0;
    while (len) {
        size_t have = st->body.len;
        if (have < SL__GRPC_PREFIX_BYTES) { /* the prefix, possibly split over frames */
            size_t n = SL__GRPC_PREFIX_BYTES - have < len ? SL__GRPC_PREFIX_BYTES - have : len;
            if (!body_append(s, st, data, n)) return 0;
            data += n;
            len -= n;
            if (st->body.len == SL__GRPC_PREFIX_BYTES) {
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
        size_t want = SL__GRPC_PREFIX_BYTES + st->msg_len - have;
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
    sl__grpc_stream *st = sl__grpc_stream_of(s, frame->hd.stream_id);
    if (st) sl__grpc_stream_finish(s, st);
    return 0;
}

/* After a Trailers-Only answer to a stream the client has not ended: the
 * reset that tells it to stop sending. */
static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *frame, void *user) {
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    sl__grpc_stream *st = sl__grpc_stream_of(user, frame->hd.stream_id);
    if (st && st->rst_after) {
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, st->id, st->rst_after - 1);
        st->rst_after = 0;
    }
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t id, uint32_t error_code, void *user) {
    (void)error_code;
    sl__grpc_session *s = user;
    sl__grpc_stream *st = nghttp2_session_get_stream_user_data(h2, id);
    if (st) {
        nghttp2_session_set_stream_user_data(h2, id, NULL);
        if (st->data_answer) s->held -= st->resp.len - st->resp_off;
        st->data_answer = false;
        if (st->pending)
            st->orphan = true; /* the decision in flight still points at it */
        else
            sl__grpc_stream_free(s, st);
    }
    return 0;
}

void sl__grpc_h2_callbacks(nghttp2_session_callbacks *cb) {
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
}
