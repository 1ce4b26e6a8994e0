/* http_json.c: placeholder for POST /json (envoyproxy/ratelimit's JSON form)
 * until the rate-limit service exists: 404. */
#include "server/http/http.h"
#include "server/server.h"

bool sl__http_json_handle(sl_worker *w, const sl_http_request *req, sl_buf *out, bool keep) {
    (void)w;
    (void)req;
    static const char body[] = "{\"error\":\"not_found\",\"message\":\"/json is not available yet\"}";
    sl__http_begin(out, 404);
    sl__http_end(out, keep, "application/json", body, sizeof body - 1);
    return keep;
}
