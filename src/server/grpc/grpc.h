/* grpc.h: the gRPC side of sluiced (HTTP/2 cleartext with prior knowledge,
 * as Envoy's gRPC clusters speak it): envoy.service.ratelimit.v3
 * RateLimitService/ShouldRateLimit and grpc.health.v1.Health/Check. A
 * session is transport-agnostic: the connection feeds it the bytes it reads
 * and sends whatever the session appends to `out`. */
#ifndef SLUICE_SERVER_GRPC_H
#define SLUICE_SERVER_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"
#include "server/request.h"
#include "util/buf.h"

typedef struct sl__grpc_session sl__grpc_session;

/* A session for one connection. limits (limits.max_body_bytes,
 * max_header_bytes, header_timeout, max_pending_output) is read as the
 * session goes (a reload may change it) and, like `out` (the connection's
 * output buffer), lives as long as the session. NULL on allocation failure. */
sl__grpc_session *sl__grpc_session_new(const sl__limits_config *limits, sl__buf *out);

/* Feeds bytes read from the client, one HTTP/2 frame at a time; answers are
 * appended to out. The streams that end in these bytes are decided with rq
 * (request.h: its rules, clock and decider; their answers held in its
 * slot), which is only used during the call. Before each frame it asks
 * sl__slot_stop(rq->slot) whether the connection's output is over its
 * bounds: then it stops, and *used (always set) says how many bytes were
 * taken; the caller holds the rest back and feeds it again later. Returns
 * 0, or -1 when the connection must be closed once out is written (a
 * GOAWAY has been queued if the protocol allows one). */
int sl__grpc_session_feed(sl__grpc_session *s, const sl__request_ctx *rq, const char *data,
                          size_t len, size_t *used);

/* The earliest deadline (CLOCK_MONOTONIC ns) of the session, or 0 when
 * there is none: a stream's grpc-timeout, a stream's limits.header_timeout
 * (not ended by the client, or its answer held by flow control), the
 * connection preface's or an unfinished frame's header_timeout. The
 * connection's timer calls sl__grpc_session_tick then. */
int64_t sl__grpc_session_next_deadline(const sl__grpc_session *s);

/* Acts on the deadlines that have passed; output is appended to out.
 * Returns how many streams were answered DEADLINE_EXCEEDED or reset, or -1
 * when the preface or a frame came too late: a GOAWAY is queued and the
 * connection must be closed once out is written. */
int sl__grpc_session_tick(sl__grpc_session *s);

/* Bytes of answers that nghttp2 holds because the client's flow-control
 * window has no room for them (not in out yet): part of the connection's
 * pending output. */
size_t sl__grpc_session_held(const sl__grpc_session *s);

/* True when the session has nothing left to do (GOAWAY sent and all streams
 * answered): the connection may be closed after the output is written. */
bool sl__grpc_session_done(const sl__grpc_session *s);

/* Draining: queue a graceful GOAWAY; streams in flight are still answered. */
void sl__grpc_session_shutdown(sl__grpc_session *s);

void sl__grpc_session_free(sl__grpc_session *s);

#endif
