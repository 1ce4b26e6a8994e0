/* http_auth.h: the rules' path of the HTTP API (http_auth.c): GET /v1/auth
 * and POST /v1/graphql without a policy (http_graphql.c) decide a request
 * by the config's rules (policy/rules.h), from the headers a proxy sets. */
#ifndef SLUICE_SERVER_HTTP_AUTH_H
#define SLUICE_SERVER_HTTP_AUTH_H

#include <stdbool.h>

#include "policy/rules.h"
#include "util/buf.h"

struct sl__request_ctx;
struct sl__http_request;

/* Decides req by the rules and answers as /v1/auth does (200, 403, 401,
 * 400; 413 for a query over its rule's max_cost). query: the request's
 * GraphQL query (charged to the limits with cost: graphql), or NULL; it is
 * only read before this returns. Returns whether the connection stays open. */
bool sl__http_auth_decide(const struct sl__request_ctx *rq, const struct sl__http_request *req,
                          sl__buf *out, bool keep, const sl__rules_query *query);

#endif
