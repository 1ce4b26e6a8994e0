/* grpc_session.h: the inside of a gRPC session (grpc.h), shared by the
 * three files it is made of: grpc_session.c (the session: nghttp2's
 * setup, input one frame at a time, the connection's own deadlines,
 * output), grpc_h2.c (nghttp2's callbacks: a stream's headers and DATA,
 * control frames, resets and closes) and grpc_stream.c (a stream's state
 * and its answer: decided, written, held by flow control, expired). One
 * thread: the connection's. */
#ifndef SLUICE_SERVER_GRPC_SESSION_H
#define SLUICE_SERVER_GRPC_SESSION_H

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/grpc/grpc.h"
#include "server/grpc/grpc_pool.h"
#include "server/grpc/grpc_service.h"
#include "server/request.h"
#include "util/buf.h"

#define SL__GRPC_MAX_STREAMS  128
#define SL__GRPC_PREFIX_BYTES 5 /* a message's prefix: compressed flag, length */
#define SL__GRPC_FRAME_HDR    9 /* an HTTP/2 frame header */

enum { SL__GRPC_ST_NONE = 0, SL__GRPC_ST_405 = 405, SL__GRPC_ST_415 = 415 };

typedef struct sl__grpc_stream {
    int32_t id;
    sl__grpc_method_id method;
    int http_status; /* SL__GRPC_ST_405 / SL__GRPC_ST_415, or 0 */
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
    struct sl__grpc_stream *prev, *next;
} sl__grpc_stream;

struct sl__grpc_session {
    const sl__limits_config *limits;
    const sl__request_ctx *rq; /* the feed's, while it runs (NULL otherwise) */
    sl__buf *out;
    nghttp2_session *h2;
    size_t max_message, max_header;
    sl__grpc_stream *streams; /* open streams */
    sl__grpc_stream *free;    /* spare ones, at most SL__GRPC_MAX_STREAMS */
    unsigned nfree;
    sl__grpc_stream *last; /* the stream of the latest callback (saves map lookups) */
    int64_t next_deadline; /* earliest deadline of an unanswered stream; 0 = none */
    bool shutdown, failed;
    bool in_feed;           /* inside sl__grpc_session_feed (nghttp2 callbacks run) */
    int64_t header_timeout; /* limits.header_timeout in ns; 0 = none */
    int64_t now;            /* the clock of the feed in progress */
    size_t held;            /* bytes of answers' DATA not yet taken by mem_send */
    size_t buffered;        /* bytes of request messages in the streams (their body) */
    size_t max_buffered;    /* ... at most: 2 x limits.max_body_bytes */
    /* the frame being received (input is fed one frame at a time) */
    enum { SL__GRPC_FR_PREFACE, SL__GRPC_FR_HEADER, SL__GRPC_FR_PAYLOAD } fr_state;
    uint32_t fr_left;                   /* bytes left of the preface or the payload */
    uint8_t fr_hdr[SL__GRPC_FRAME_HDR]; /* the frame header so far */
    unsigned fr_hdr_len;                /* its bytes */
    int64_t fr_started;                 /* first byte of the unfinished frame; 0 = between frames */
    int64_t preface_deadline;           /* until the client's first SETTINGS; 0 = none (yet) */
    bool started, got_settings;         /* a first byte; the client's first SETTINGS */
    bool timed_out;                     /* GOAWAY for a late preface or frame sent */
    int64_t ctl_since;                  /* the second in which ctl_count PING/SETTINGS arrived */
    unsigned ctl_count;
    sl__grpc_arena arena;
    sl__grpc_pool pool; /* nghttp2's memory */
};

/* Keeps next_deadline the earliest of the streams' deadlines. */
static inline void sl__grpc_note_deadline(sl__grpc_session *s, int64_t d) {
    if (d && (!s->next_deadline || d < s->next_deadline)) s->next_deadline = d;
}

/* The open stream id (nghttp2's stream user data), NULL if none. */
static inline sl__grpc_stream *sl__grpc_stream_of(sl__grpc_session *s, int32_t id) {
    if (s->last && s->last->id == id) return s->last;
    sl__grpc_stream *st = nghttp2_session_get_stream_user_data(s->h2, id);
    if (st) s->last = st;
    return st;
}

/* A stream for HEADERS of id, linked in s->streams (a spare one reused);
 * NULL when out of memory. */
sl__grpc_stream *sl__grpc_stream_new(sl__grpc_session *s, int32_t id);

/* Unlinks st and frees it, or keeps it as a spare (small buffers). */
void sl__grpc_stream_free(sl__grpc_session *s, sl__grpc_stream *st);

/* The client has ended st (END_STREAM): checks its headers and message,
 * decides it (s->rq, ShouldRateLimit by the engine, inline or later) and
 * submits its answer to nghttp2. Once per stream: an answered one is left. */
void sl__grpc_stream_finish(sl__grpc_session *s, sl__grpc_stream *st);

/* Streams past their deadline at now: not ended by the client in time (its
 * grpc-timeout, or header_timeout from its HEADERS) are answered
 * DEADLINE_EXCEEDED and reset; an answer still held by flow control
 * header_timeout after it was made is reset. Recomputes s->next_deadline.
 * Returns how many. */
unsigned sl__grpc_session_expire(sl__grpc_session *s, int64_t now);

/* Moves everything nghttp2 has to send into the connection's buffer
 * (s->out); s->failed when nghttp2 fails. */
void sl__grpc_session_pump(sl__grpc_session *s);

/* Sets the session's nghttp2 callbacks (grpc_h2.c) on cb. */
void sl__grpc_h2_callbacks(nghttp2_session_callbacks *cb);

#endif
