/* http_ops.c: routes the operator's endpoints (http_ops.h): GET /v1/stats
 * here, /ui/ to http_ui.c. Only GET and HEAD; any other method is a 405.
 * What the pages show comes in an sl__ops_view from the admin handle
 * (admin/admin.c), the one part that looks into the server. */
#include <string.h>

#include "server/admin/admin.h"
#include "server/http/http_ops.h"

static bool path_is(const sl__http_request *r, const char *p) {
    size_t n = strlen(p);
    return r->path_len == n && memcmp(r->path, p, n) == 0;
}

bool sl__http_ops_path(const sl__http_request *r) {
    return path_is(r, "/v1/stats") || path_is(r, "/ui") ||
           (r->path_len >= 4 && memcmp(r->path, "/ui/", 4) == 0);
}

/* A JSON error answer, complete. */
static void error_answer(sl__buf *out, const sl__http_request *r, bool keep, int status,
                         const char *code, const char *message) {
    sl__buf body;
    sl__buf_init(&body);
    sl__http_error_json(&body, code, message);
    sl__http_begin(out, status);
    if (status == 405) sl__http_header_line(out, "Allow", "GET, HEAD");
    sl__http_header_line(out, "X-Content-Type-Options", "nosniff");
    sl__http_end(out, keep, "application/json", body.data, body.len);
    if (r->method == SL__HTTP_HEAD) out->len -= body.len;
    sl__buf_free(&body);
}

/* GET /v1/stats[?top=N]: N keys per list, 1..SL__STATS_TOP_MAX (default 5). */
static void stats(const sl__ops_view *v, const sl__http_request *r, sl__buf *out, bool keep) {
    char nbuf[8];
    unsigned top = SL__STATS_TOP_DEFAULT;
    long m = sl__http_query_param(r->query, r->query_len, "top", nbuf, sizeof nbuf);
    if (m != -1) {
        unsigned n = 0;
        bool ok = m > 0 && m <= 2;
        for (long i = 0; ok && i < m; i++) {
            if (nbuf[i] < '0' || nbuf[i] > '9') ok = false;
            n = n * 10 + (unsigned)(nbuf[i] - '0');
        }
        if (!ok || n < 1 || n > SL__STATS_TOP_MAX)
            return error_answer(out, r, keep, 400, "bad_top",
                                "top must be an integer from 1 to 20");
        top = n;
    }
    sl__buf body;
    sl__buf_init(&body);
    if (!sl__http_stats_write(v, top, &body)) {
        sl__buf_free(&body);
        return error_answer(out, r, keep, 500, "internal", "out of memory");
    }
    sl__http_begin(out, 200);
    sl__http_header_line(out, "Cache-Control", "no-store");
    sl__http_header_line(out, "X-Content-Type-Options", "nosniff");
    sl__http_end(out, keep, "application/json", body.data, body.len);
    if (r->method == SL__HTTP_HEAD) out->len -= body.len;
    sl__buf_free(&body);
}

bool sl__http_ops_handle(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                         bool keep) {
    if (r->method != SL__HTTP_GET && r->method != SL__HTTP_HEAD) {
        error_answer(out, r, keep, 405, "method_not_allowed",
                     "this endpoint does not take that method");
        return keep;
    }
    bool is_stats = path_is(r, "/v1/stats");
    sl__ops_view v;
    sl__admin_ops_view(rq->admin, rq->slot, is_stats, !is_stats, &v);
    if (is_stats) {
        stats(&v, r, out, keep);
        return keep;
    }
    return sl__http_ui_handle(&v, r, out, keep);
}
