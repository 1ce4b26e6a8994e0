/* http_ops.h: what an operator watches over HTTP (docs/operations.md,
 * "Watching sluiced"): GET /v1/stats (http_stats.c), one JSON document with
 * the decision counters, top keys, store health and policies, and GET /ui/
 * (http_ui.c), the dashboard page that reads it, embedded in the binary and
 * off unless admin.ui turns it on. http_api.c routes these paths here. */
#ifndef SLUICE_SERVER_HTTP_OPS_H
#define SLUICE_SERVER_HTTP_OPS_H

#include <stdbool.h>

#include "policy/decide.h"
#include "policy/policy.h"
#include "server/http/http.h"
#include "server/request.h"

/* Whether r's path is one of the routes below (/v1/stats, /ui, /ui/...). */
bool sl__http_ops_path(const sl__http_request *r);

/* Answers r (a path sl__http_ops_path accepted) completely into out. keep:
 * may the connection stay open; returns whether it does. */
bool sl__http_ops_handle(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                         bool keep);

/* What these pages need of the server, filled by the admin handle
 * (admin/admin.c: sl__admin_ops_view, the one place that looks into the
 * worker and the server); the pages see only this. Borrowed for the
 * request. */
typedef struct sl__ops_view {
    const sl__policy_set *policies; /* the running set (the answering worker's); may be NULL */
    unsigned workers;
    int64_t started_at;      /* Unix ns */
    bool draining;           /* the server has begun to drain */
    sl__engine_report store; /* the store's health and work (filled for /v1/stats only) */
    uint8_t ui;              /* admin.ui: SL__UI_* */
    bool peer_loopback;      /* the client is connected from loopback (for /ui/ only) */
} sl__ops_view;

/* GET /v1/stats's document into body (http_stats.c); top: keys per list
 * (1..SL__STATS_TOP_MAX). Returns false, body untouched or partial, only when
 * out of memory. */
#define SL__STATS_TOP_DEFAULT  5
#define SL__STATS_TOP_MAX      20
#define SL__STATS_POLICIES_MAX 64
bool sl__http_stats_write(const sl__ops_view *v, unsigned top, sl__buf *body);

/* The /ui/ routes (http_ui.c): writes the whole answer for a path /ui... into
 * out. keep: may the connection stay open; returns whether it does. */
bool sl__http_ui_handle(const sl__ops_view *v, const sl__http_request *r, sl__buf *out, bool keep);

#endif
