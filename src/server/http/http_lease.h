/* http_lease.h: the HTTP routes of concurrency limits (http_lease.c):
 * /v1/acquire, /v1/release, /v1/renew. */
#ifndef SLUICE_SERVER_HTTP_LEASE_H
#define SLUICE_SERVER_HTTP_LEASE_H

#include <stdbool.h>

#include "server/http/http.h"
#include "util/buf.h"

struct sl__request_ctx;

/* Answers r (one of the three paths) into out, now or once its store has
 * decided (server/reply.h). Returns whether the connection stays open. */
bool sl__http_lease_handle(const struct sl__request_ctx *rq, const sl__http_request *r,
                           sl__buf *out, bool keep);

#endif
