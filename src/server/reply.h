/* reply.h: where the answer to a request goes. The connection layer gives
 * every request handler an explicit answer slot (sl__answer_slot, in its
 * request context, request.h): the place of this request's answer among the
 * connection's answers. A protocol handler starts a decision
 * (policy/decide.h) and writes its answer in the call's done: when done ran
 * inline (the memory store, a deny-cache hit: never another request's), straight
 * into the handler's output; otherwise into a place reserved in the slot
 * (sl__slot_defer), reserved only then, so answers leave in request order
 * and an inline decision costs no reservation. The pattern, the same for
 * HTTP, RESP and gRPC:
 *
 *     bool answered = false;
 *     sl__reply_begin(&ctx->reply, rq->slot, out, &answered);
 *     sl__engine_decide(rq->decider, call, rq->now);      // done may run here
 *     if (!answered && !sl__reply_wait(&ctx->reply))
 *         ... write an "out of memory" answer into out ...
 *
 * and in done: write into sl__reply_out(r), then sl__reply_end(r) (which
 * releases a reserved answer), then free the call. Implemented in conn.c. */
#ifndef SLUICE_SERVER_REPLY_H
#define SLUICE_SERVER_REPLY_H

#include <stdbool.h>

#include "util/buf.h"

/* The connection's place for the answer of the request being handled.
 * Valid only while its handler runs: reserve (sl__slot_defer, or
 * sl__reply_wait / sl__reply_hold) before returning. NULL: no connection
 * (tests, tools): nothing can be reserved. */
typedef struct sl__answer_slot sl__answer_slot;
typedef struct sl__deferred sl__deferred;

/* An answer that comes later (a decision that did not complete inline, a
 * reload): its place among the connection's answers is reserved with
 * sl__slot_defer, written into sl__deferred_out when ready, and
 * sl__deferred_done releases it (and the answers that followed) in request
 * order. NULL when out of memory or slot is NULL. If the connection closed
 * meanwhile, the answer is dropped. */
sl__deferred *sl__slot_defer(sl__answer_slot *slot);
sl__buf *sl__deferred_out(sl__deferred *d);
void sl__deferred_done(sl__deferred *d);
/* For an HTTP answer written into sl__deferred_out: the keep-alive it
 * may say. keep, except while the worker drains for the last answer of the
 * connection (false, and the connection closes after it). Call it just
 * before writing the answer. */
bool sl__deferred_keep(sl__deferred *d, bool keep);

/* For a protocol that handles its input piece by piece on its own (gRPC,
 * between HTTP/2 frames): true when the connection must stop here, its
 * output over its bounds (limits.max_pending_output, its share of
 * max_pending_output_total) or its turn used; the rest of its input is then
 * held back and fed again when the connection resumes. HTTP and RESP ask it
 * before each request. False for a NULL slot. */
bool sl__slot_stop(sl__answer_slot *slot);
/* For the last request of the input being handled: true when the worker
 * drains and nothing more has arrived on the connection (an HTTP answer
 * then says Connection: close). */
bool sl__slot_closing(sl__answer_slot *slot);
/* The peer's address of the connection. Returns 0, or a negative libuv
 * error (UV_ENOTCONN for a NULL slot). */
struct sockaddr_storage;
int sl__slot_peer(sl__answer_slot *slot, struct sockaddr_storage *out);

typedef struct sl__reply {
    sl__answer_slot *slot;
    sl__buf *out;           /* the handler's output, while it runs */
    bool *answered;         /* the handler's flag, while it runs */
    struct sl__deferred *d; /* the reserved place, once waiting */
    void *held;             /* the connection held (sl__reply_hold) */
    bool lost;              /* no place could be reserved: the answer is dropped */
    sl__buf scratch;        /* where a dropped answer is written */
} sl__reply;

/* Before starting the decision: the answer goes to out (slot: the
 * request's, or NULL: no connection at all); *answered is set when done has
 * written it. */
void sl__reply_begin(sl__reply *r, sl__answer_slot *slot, sl__buf *out, bool *answered);
/* After starting it, when *answered is still false: reserves the answer's
 * place. false: out of memory (or no connection); the handler then writes
 * an error answer into out itself, and done's answer is dropped. */
bool sl__reply_wait(sl__reply *r);
/* The same for a protocol that writes its answers elsewhere (gRPC: into
 * the stream, framed by HTTP/2): only holds the connection (it is not
 * freed, and its output is written, when sl__reply_end runs). Cannot fail
 * with a slot (false for a NULL one). */
bool sl__reply_hold(sl__reply *r);
/* In done: where the answer goes. */
sl__buf *sl__reply_out(sl__reply *r);
/* In done, for an HTTP answer: the keep-alive it may say (sl__deferred_keep
 * for a reserved answer; keep for one written inline). */
bool sl__reply_keep(sl__reply *r, bool keep);
/* For an answer held long (server/hold.h), once its place is reserved:
 * fn(arg) runs if the connection closes before the answer is written; the
 * place is then given up by the connection (write nothing, call neither
 * sl__reply_end nor sl__deferred_done after). fn NULL: nothing runs.
 * false: no place is reserved (nothing set). */
bool sl__reply_on_close(sl__reply *r, void (*fn)(void *arg), void *arg);
/* In done, after writing: releases a reserved answer (and those after it). */
void sl__reply_end(sl__reply *r);

#endif
