/* admin.h: the server's own pages, the one part of the protocols that sees
 * the whole server (its workers, counters, engine and reloads). A request
 * context carries an opaque sl__admin (request.h): the HTTP routes
 * (/healthcheck, /readyz, /metrics, /v1/reload) and RESP's INFO hand it to
 * these functions; nothing else looks into it. */
#ifndef SLUICE_SERVER_ADMIN_H
#define SLUICE_SERVER_ADMIN_H

#include <stdbool.h>

#include "server/request.h"
#include "util/buf.h"

struct sl__http_request;

/* The worker the request came to drains (GET /healthcheck: 500, /readyz:
 * 503). false for a NULL a. */
bool sl__admin_draining(sl__admin *a);

/* GET /readyz: writes the JSON body and returns the status (200, or 503
 * while draining or when a worker cannot reach Redis). */
int sl__admin_ready(sl__admin *a, sl__buf *body);

/* GET /metrics: the Prometheus text of the whole server (metrics.c). */
void sl__admin_metrics(sl__admin *a, sl__buf *body);

/* What the operator's pages (/v1/stats, /ui/: http_ops.h) show: the running
 * policies, workers, start time, draining, admin.ui, and with `store` the
 * store's statistics (a lock per worker), with `peer` whether the client of
 * slot is on loopback. a NULL: an empty view. */
struct sl__ops_view;
void sl__admin_ops_view(sl__admin *a, sl__answer_slot *slot, bool store, bool peer,
                        struct sl__ops_view *v);

/* POST /v1/reload (reload.c): either the answer is reserved in slot and
 * written when the main loop has reloaded (returns true), or it is complete
 * in `out` at once (false). keep: may the connection stay open. */
bool sl__admin_reload(sl__admin *a, sl__answer_slot *slot, const struct sl__http_request *req,
                      bool keep, sl__buf *out);

/* POST /v1/ramp: restarts every policy's ramp_up now (policy/ramp.h), if
 * admin.reload lets the client (as for POST /v1/reload); the answer (200,
 * or the refusal) is complete in out. */
void sl__admin_ramp(sl__admin *a, sl__answer_slot *slot, const struct sl__http_request *req,
                    bool keep, sl__buf *out);

/* RESP INFO's own sections (sl__resp_context.info, resp.h), with the
 * request's admin handle as its context (metrics.c). */
void sl__resp_info(void *admin, sl__buf *out);

/* The Prometheus text of the whole server (metrics.c). */
struct sl__server;
void sl__metrics_write(struct sl__server *s, sl__buf *out);

#endif
