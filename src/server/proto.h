/* proto.h: what a protocol is to the connection layer (conn.c). Each
 * protocol (HTTP/1.1, RESP, gRPC over HTTP/2) fills one table of operations
 * and registers it in proto.c; a connection keeps the table of its
 * listener and calls through it, as libuv has one set of operations per
 * handle type and nginx sets a handler per connection. conn.c owns the
 * socket, pipelining and answer order, the output bounds and turns, the
 * timers and draining; the protocol owns its parser, its answers (errors
 * included) and its per-connection state.
 *
 * The loop (conn.c): for the bytes read, feed is called again and again,
 * each time with the bytes not used yet, until they are all used or feed
 * says stop. Every call answers at most one request (HTTP, RESP), and the
 * connection checks its output bounds and turn before each call; or, for a
 * protocol that paces itself (gRPC), a call handles as much as it likes and
 * asks sl__slot_stop itself before each unit (an HTTP/2 frame). Answers go into `out`, the
 * connection's place for the answer to the next request (after the answers still awaited). */
#ifndef SLUICE_SERVER_PROTO_H
#define SLUICE_SERVER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"
#include "util/buf.h"

typedef enum sl__proto {
    SL__PROTO_HTTP,
    SL__PROTO_RESP,
    SL__PROTO_GRPC,
    SL__PROTO_COUNT
} sl__proto;

struct sl__request_ctx;

/* What one feed call did (flags). */
enum {
    SL__FEED_ANSWERED = 1, /* one request was answered (or its answer reserved): counted and timed
                             by the connection, in its protocol's requests and latency */
    SL__FEED_STOP = 2,     /* handle nothing more of this input now: the rest is an incomplete
                             request (kept by the connection, fed again with what follows) or
                             is held back (sl__slot_stop said so) */
    SL__FEED_CLOSE = 4,    /* close once the output is written; the rest of the input is dropped */
    SL__FEED_ERROR = 8     /* a protocol error (its answer, if any, is in out): counted, and the
                             connection closes once the output is written */
};

typedef struct sl__proto_ops_table {
    sl__proto id;    /* the index of its counters (sl__worker_stats) */
    bool self_paced; /* feed takes many units and asks sl__slot_stop before each */
    /* The connection's state (a parser, a session), or NULL when out of
     * memory. `out` is the connection's output buffer, for a protocol that
     * writes on its own (gRPC: the server preface, frames between requests);
     * it lives as long as the state. NULL: the protocol keeps no state. */
    void *(*create)(const sl__limits_config *limits, sl__buf *out);
    /* Handles the len bytes at data (len > 0) with the request context rq
     * (request.h: the same for all the feeds of one input): sets *used (the
     * bytes taken) and returns SL__FEED_* flags. A self-paced protocol asks
     * sl__slot_stop(rq->slot) before each unit it takes and, when that says
     * so, returns SL__FEED_STOP with nothing more used. */
    unsigned (*feed)(void *st, const struct sl__request_ctx *rq, const char *data, size_t len,
                     sl__buf *out, size_t *used);
    /* A request has begun and is not complete (its request timeout runs);
     * `held`: bytes of input the connection keeps (a partial RESP command).
     * NULL: never (a protocol with deadlines of its own). */
    bool (*pending)(const void *st, size_t held);
    /* How long a request may take once begun (ns): limits.header_timeout or
     * limits.command_timeout. */
    int64_t (*request_timeout)(const sl__limits_config *l);
    /* The connection times out and closes after what this writes into out:
     * request_late (its request took too long) or idle; started: a request
     * was on its way. */
    void (*timeout)(void *st, bool request_late, bool started, sl__buf *out);
    /* The connection is refused (limits.max_connections): the answer to
     * write before closing it. NULL: closed without a word. */
    void (*refuse)(sl__buf *out);
    /* The same when no descriptor is left to accept it with (worker.c
     * writes it on the raw socket): static bytes, or NULL. */
    const char *refuse_raw;
    void (*free)(void *st);

    /* Optional, for a protocol that drains and keeps deadlines on its own
     * (gRPC); NULL for the others, which conn.c drains and times itself. */
    /* Draining (SIGTERM): stop taking requests, finish the ones in flight.
     * Returns true when nothing is left (close once written). */
    bool (*drain)(void *st);
    /* The earliest deadline of the protocol (CLOCK_MONOTONIC ns), 0: none. */
    int64_t (*deadline)(const void *st);
    /* Acts on the deadlines that passed: how many requests timed out, or -1
     * when the connection must close once its output is written. */
    int (*tick)(void *st);
    /* Bytes of answers the protocol holds outside `out` (HTTP/2 flow
     * control): counted in the connection's pending output. */
    size_t (*held)(const void *st);
} sl__proto_ops_table;

/* The protocols, by listener (proto.c). */
const sl__proto_ops_table *sl__proto_ops(sl__proto p);

extern const sl__proto_ops_table sl__http_proto; /* http/http_conn.c */
extern const sl__proto_ops_table sl__resp_proto; /* resp/resp_conn.c */
extern const sl__proto_ops_table sl__grpc_proto; /* grpc/grpc_conn.c */

#endif
