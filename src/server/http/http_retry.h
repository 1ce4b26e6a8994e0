/* http_retry.h: a policy's retry budget over HTTP (policy/retry_stage.h,
 * docs/protection.md "Retry budget"): which requests are retries, and the
 * answer to a retry the budget refused; and a request's priority for load
 * shedding. /v1/check answers it 429; /v1/auth
 * 403 (nginx's auth_request passes only 2xx, 401 and 403), both with
 * `Sluice-Retry-Budget: exhausted` and Retry-After. */
#ifndef SLUICE_SERVER_HTTP_RETRY_H
#define SLUICE_SERVER_HTTP_RETRY_H

#include <stdbool.h>

#include "server/http/http.h"
#include "sluice/shed.h"
#include "policy/retry_stage.h"
#include "util/buf.h"

/* True when r carries `header` with a decimal value >= 1 (a retry); absent,
 * 0 or anything else is a first attempt. */
bool sl__http_retry_marked(const sl__http_request *r, const char *header);

/* The request's priority: `header`'s value (critical, default, sheddable;
 * any case), default when absent or anything else (load shedding). */
sl_priority sl__http_priority(const sl__http_request *r, const char *header);

/* Retry-After of a refused retry in whole seconds, at least 1 (the window
 * when only new first attempts can let it pass). */
long long sl__http_retry_after_s(const sl__retry_call *c);

/* Writes the refusal of c (a retry the budget of `policy` refused) with
 * `status` (429 or 403); HEAD gets the headers only. */
void sl__http_retry_refused(sl__buf *out, int status, bool head, bool keep, const char *policy,
                            const sl__retry_call *c);

#endif
