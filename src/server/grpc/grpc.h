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

#include "util/buf.h"

struct sl_worker;
typedef struct sl_grpc_session sl_grpc_session;

/* A session for one connection of worker w. `out` (the connection's output
 * buffer) lives as long as the session. NULL on allocation failure. */
sl_grpc_session *sl__grpc_session_new(struct sl_worker *w, sl_buf *out);

/* Feeds bytes read from the client; answers are appended to out. Returns 0,
 * or -1 when the connection must be closed once out is written (a GOAWAY has
 * been queued if the protocol allows one). */
int sl__grpc_session_feed(sl_grpc_session *s, const char *data, size_t len);

/* The earliest grpc-timeout deadline (CLOCK_MONOTONIC ns) among the streams
 * the client has not finished sending, or 0 when there is none. Optional: a
 * connection timer may call sl__grpc_session_tick at that time, so that such
 * a stream is answered DEADLINE_EXCEEDED (and reset) without waiting for the
 * client's next bytes; otherwise that happens at the next feed. */
int64_t sl__grpc_session_next_deadline(const sl_grpc_session *s);

/* Answers the streams whose deadline has passed; output is appended to out. */
void sl__grpc_session_tick(sl_grpc_session *s);

/* True when the session has nothing left to do (GOAWAY sent and all streams
 * answered): the connection may be closed after the output is written. */
bool sl__grpc_session_done(const sl_grpc_session *s);

/* Draining: queue a graceful GOAWAY; streams in flight are still answered. */
void sl__grpc_session_shutdown(sl_grpc_session *s);

void sl__grpc_session_free(sl_grpc_session *s);

#endif
