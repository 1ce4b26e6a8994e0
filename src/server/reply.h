/* reply.h: where the answer to a decision goes. A protocol handler starts a
 * decision (policy/decide.h) and writes its answer in the call's done:
 * when done ran inline (the memory store, a deny-cache hit, an open
 * breaker), straight into the handler's output; otherwise into a place
 * reserved among the connection's answers (sl__conn_defer), reserved only
 * then, so answers leave in request order and an inline decision costs no
 * reservation. The pattern, the same for HTTP, RESP and gRPC:
 *
 *     bool answered = false;
 *     sl__reply_begin(&ctx->reply, w, out, &answered);
 *     sl__engine_decide(w->decider, call, now);      // done may run here
 *     if (!answered && !sl__reply_wait(&ctx->reply))
 *         ... write an "out of memory" answer into out ...
 *
 * and in done: write into sl__reply_out(r), then sl__reply_end(r) (which
 * releases a reserved answer), then free the call. Implemented in conn.c. */
#ifndef SLUICE_SERVER_REPLY_H
#define SLUICE_SERVER_REPLY_H

#include <stdbool.h>

#include "util/buf.h"

struct sl_worker;
struct sl_deferred;

typedef struct sl_reply {
    struct sl_worker *w;
    sl_buf *out;           /* the handler's output, while it runs */
    bool *answered;        /* the handler's flag, while it runs */
    struct sl_deferred *d; /* the reserved place, once waiting */
    void *held;            /* the connection held (sl__reply_hold) */
    bool lost;             /* no place could be reserved: the answer is dropped */
    sl_buf scratch;        /* where a dropped answer is written */
} sl_reply;

/* Before starting the decision: the answer goes to out (w's request being
 * handled now, or no connection at all: w may be NULL); *answered is set
 * when done has written it. */
void sl__reply_begin(sl_reply *r, struct sl_worker *w, sl_buf *out, bool *answered);
/* After starting it, when *answered is still false: reserves the answer's
 * place. false: out of memory (or no connection); the handler then writes
 * an error answer into out itself, and done's answer is dropped. */
bool sl__reply_wait(sl_reply *r);
/* The same for a protocol that writes its answers elsewhere (gRPC: into
 * the stream, framed by HTTP/2): only holds the connection (it is not
 * freed, and its output is written, when sl__reply_end runs). Cannot fail
 * while a request is being handled on r's worker (false otherwise). */
bool sl__reply_hold(sl_reply *r);
/* In done: where the answer goes. */
sl_buf *sl__reply_out(sl_reply *r);
/* In done, for an HTTP answer: the keep-alive it may say (sl__deferred_keep
 * for a reserved answer; keep for one written inline). */
bool sl__reply_keep(sl_reply *r, bool keep);
/* In done, after writing: releases a reserved answer (and those after it). */
void sl__reply_end(sl_reply *r);

#endif
