/* request.h: what a protocol handler gets for one request (DESIGN.md
 * section 4): the narrow context of the decision, never the worker or the
 * store. The connection layer fills one for the input it hands to its
 * protocol (proto.h: feed), after picking up a reload, and it lives while
 * that input is handled: a handler that answers later keeps what it needs
 * (the policy set, with sl__decide_call_hold; its reserved answer, with
 * reply.h), never the context.
 *
 *   clock       now: this loop tick's (Unix ns)
 *   snapshot    policies, domains, cell: the running policy set, Envoy
 *               rules and CL.THROTTLE's table
 *   decisions   decider: the engine on this worker's store (policy/decide.h)
 *   answer      slot: the request's place among its connection's answers
 *               (reply.h); hold: where an answer waits for its release
 *               time (hold.h), served from the worker's loop
 *
 * and, for what a handler reports or a protocol bounds: stats (counters),
 * limits (limits.*), draining (the server has begun to drain), admin (the
 * server's own pages: only src/server/admin/ looks into it). Tests and
 * tools fill one by hand: NULL slot, stats, admin and decider (the memory
 * store) are fine. */
#ifndef SLUICE_SERVER_REQUEST_H
#define SLUICE_SERVER_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/config.h"
#include "server/reply.h"
#include "server/stats.h"

struct sl__policy_set;
struct sl__domain_set;
struct sl__cell;
struct sl__decider;
typedef struct sl__admin sl__admin; /* opaque: admin/admin.h */

typedef struct sl__request_ctx {
    int64_t now;                     /* this loop tick's clock (Unix ns) */
    struct sl__policy_set *policies; /* the running policy set; may be NULL */
    struct sl__domain_set *domains;  /* Envoy rules of the same generation; may be NULL */
    struct sl__cell *cell;           /* CL.THROTTLE's table; may be NULL */
    struct sl__decider *decider;     /* decisions (policy/decide.h); NULL: the memory store */
    sl__answer_slot *slot;           /* this request's answer (reply.h); NULL: no connection */
    sl__worker_stats *stats;         /* counters; NULL: none */
    const sl__limits_config *limits; /* limits.*; never NULL */
    bool draining;                   /* the server has begun to drain (SIGTERM) */
    sl__admin *admin;                /* the admin pages' handle (admin/admin.h); NULL: none */
    struct sl__hold *hold;           /* this worker's held answers (hold.h); NULL: never held */
} sl__request_ctx;

#endif
