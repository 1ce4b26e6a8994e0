/* http_auth.c: placeholder for GET /v1/auth (nginx auth_request) until
 * identity rules exist: 404. */
#include "server/http/http.h"
#include "server/server.h"

bool sl__http_auth_handle(sl_worker *w, const sl_http_request *req, sl_buf *out, bool keep) {
    (void)w;
    (void)req;
    static const char body[] = "{\"error\":\"not_found\",\"message\":\"/v1/auth is not available yet\"}";
    sl__http_begin(out, 404);
    sl__http_end(out, keep, "application/json", body, sizeof body - 1);
    return keep;
}
