/* http_graphql.h: POST /v1/graphql?policy=P&key=K, a GraphQL query's cost
 * charged to a policy's points budget (http_graphql.c, docs/graphql.md). */
#ifndef SLUICE_SERVER_HTTP_GRAPHQL_H
#define SLUICE_SERVER_HTTP_GRAPHQL_H

#include <stdbool.h>

#include "util/buf.h"

struct sl__request_ctx;
struct sl__http_request;

/* Answers one POST /v1/graphql into out (now, or from the engine's done,
 * reply.h). Returns whether the connection stays open (keep). */
bool sl__http_graphql_handle(const struct sl__request_ctx *rq, const struct sl__http_request *r,
                             sl__buf *out, bool keep);

#endif
