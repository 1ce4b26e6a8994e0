/* http_api.h: the routes of sluiced's HTTP API (http_api.c routes a request
 * by its path; docs/http-api.md). Every handler has one shape: it gets the
 * request context (request.h: clock, policy set, decider, answer slot) and
 * the parsed request, writes its answer into out (or reserves it in
 * rq->slot, reply.h), and returns whether the connection stays open: keep,
 * unless it must close. A new endpoint is one handler of this shape in a
 * file of its own, declared here, and one `path_is` branch in http_api.c's
 * route_handler. */
#ifndef SLUICE_SERVER_HTTP_API_H
#define SLUICE_SERVER_HTTP_API_H

#include <stdbool.h>

#include "server/http/http.h"
#include "server/request.h"
#include "util/buf.h"

typedef bool sl__http_handler(const sl__request_ctx *rq, const sl__http_request *req, sl__buf *out,
                              bool keep);

/* Every request (http_conn.c): routes it, or answers 404 / 405. */
sl__http_handler sl__http_api_handle;
/* GET /v1/auth: nginx auth_request (http_auth.c). */
sl__http_handler sl__http_auth_handle;
/* POST /json: envoyproxy/ratelimit's JSON API (http_json.c). */
sl__http_handler sl__http_json_handle;

#endif
