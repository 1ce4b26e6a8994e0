/* grpc_conn.c: gRPC (HTTP/2 cleartext) as a protocol of the connection
 * layer (proto.h): the session (grpc_session.c) is fed everything read and
 * asks sl__slot_stop before each frame; it drains (GOAWAY), keeps
 * its own deadlines and holds the answers flow control keeps back. A
 * connection over the connection limit is closed without a word (an HTTP/2
 * client retries elsewhere). */
#include "server/grpc/grpc.h"
#include "server/proto.h"

static void *grpc_new(const sl__limits_config *limits, sl__buf *out) {
    return sl__grpc_session_new(limits, out);
}

static unsigned grpc_feed(void *st, const sl__request_ctx *rq, const char *data, size_t len,
                          sl__buf *out, size_t *used) {
    (void)out; /* the session writes into the buffer it was made with */
    if (sl__grpc_session_feed(st, rq, data, len, used) != 0) return SL__FEED_ERROR;
    if (sl__grpc_session_done(st)) return SL__FEED_CLOSE;
    return *used < len ? SL__FEED_STOP : 0;
}

static int64_t grpc_request_timeout(const sl__limits_config *l) {
    return l->header_timeout;
}

static void grpc_timeout(void *st, bool request_late, bool started, sl__buf *out) {
    (void)request_late;
    (void)started;
    (void)out;
    sl__grpc_session_shutdown(st); /* GOAWAY */
}

static bool grpc_drain(void *st) {
    sl__grpc_session_shutdown(st); /* streams in flight are still answered */
    return sl__grpc_session_done(st);
}

static int64_t grpc_deadline(const void *st) {
    return sl__grpc_session_next_deadline(st);
}

static int grpc_tick(void *st) {
    return sl__grpc_session_tick(st);
}

static size_t grpc_held(const void *st) {
    return sl__grpc_session_held(st);
}

static void grpc_free(void *st) {
    sl__grpc_session_free(st);
}

const sl__proto_ops_table sl__grpc_proto = {
    .id = SL__PROTO_GRPC,
    .self_paced = true,
    .create = grpc_new,
    .feed = grpc_feed,
    .request_timeout = grpc_request_timeout,
    .timeout = grpc_timeout,
    .free = grpc_free,
    .drain = grpc_drain,
    .deadline = grpc_deadline,
    .tick = grpc_tick,
    .held = grpc_held,
};
