/* http_ui.c: GET /ui/, the live dashboard (docs/operations.md, "The
 * dashboard"): three files compiled into sluiced from src/server/ui/
 * (index.html, app.js, app.css; src/server/ui/ui.cmake embeds them) and
 * its icon, no other asset. The page reads GET /v1/stats every second and shows nothing
 * that endpoint and /v1/top do not already give any client of the listener.
 * admin.ui decides who gets the page: off (404, the default), loopback
 * (403 for other peers) or on. Every answer carries a Content-Security-Policy
 * that allows only these files and requests to this origin, and
 * X-Content-Type-Options: nosniff; the page writes key names as text, never
 * as markup. */
#include <string.h>

#include "server/http/http_ops.h"

extern const char sl__ui_index_html[], sl__ui_app_js[], sl__ui_app_css[];

/* the page's icon (without one, a browser asks for /favicon.ico: a 404) */
static const char icon_svg[] =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
    "<rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#1d2330\"/>"
    "<path d=\"M3 11h10M3 8h7M3 5h4\" stroke=\"#2f7d4f\" stroke-width=\"2\"/></svg>";

#define UI_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "                \
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static bool path_is(const sl__http_request *r, const char *p) {
    size_t n = strlen(p);
    return r->path_len == n && memcmp(r->path, p, n) == 0;
}

/* One answer with the page's security headers. body may be NULL (none). */
static void answer(sl__buf *out, const sl__http_request *r, bool keep, int status, const char *type,
                   const char *body, const char *location) {
    size_t n = body ? strlen(body) : 0;
    sl__http_begin(out, status);
    sl__http_header_line(out, "Content-Security-Policy", UI_CSP);
    sl__http_header_line(out, "X-Content-Type-Options", "nosniff");
    sl__http_header_line(out, "X-Frame-Options", "DENY");
    sl__http_header_line(out, "Referrer-Policy", "no-referrer");
    sl__http_header_line(out, "Cache-Control", "no-store");
    if (location) sl__http_header_line(out, "Location", location);
    sl__http_end(out, keep, type, body, n);
    if (r->method == SL__HTTP_HEAD) out->len -= n;
}

static void refuse(sl__buf *out, const sl__http_request *r, bool keep, int status, const char *code,
                   const char *message) {
    sl__buf body;
    sl__buf_init(&body);
    sl__http_error_json(&body, code, message);
    sl__buf_append(&body, "", 1); /* a NUL: answer takes a C string */
    answer(out, r, keep, status, "application/json", body.failed ? "{}" : body.data, NULL);
    sl__buf_free(&body);
}

bool sl__http_ui_handle(const sl__ops_view *v, const sl__http_request *r, sl__buf *out, bool keep) {
    if (v->ui == SL__UI_OFF) {
        refuse(out, r, keep, 404, "not_found",
               "the dashboard is off (admin.ui: off); see docs/operations.md");
        return keep;
    }
    if (v->ui == SL__UI_LOOPBACK && !v->peer_loopback) {
        refuse(out, r, keep, 403, "forbidden",
               "only clients on loopback may load the dashboard (admin.ui: loopback)");
        return keep;
    }
    if (path_is(r, "/ui"))
        answer(out, r, keep, 301, "text/plain; charset=utf-8", "/ui/\n", "/ui/");
    else if (path_is(r, "/ui/") || path_is(r, "/ui/index.html"))
        answer(out, r, keep, 200, "text/html; charset=utf-8", sl__ui_index_html, NULL);
    else if (path_is(r, "/ui/app.js"))
        answer(out, r, keep, 200, "text/javascript; charset=utf-8", sl__ui_app_js, NULL);
    else if (path_is(r, "/ui/app.css"))
        answer(out, r, keep, 200, "text/css; charset=utf-8", sl__ui_app_css, NULL);
    else if (path_is(r, "/ui/icon.svg"))
        answer(out, r, keep, 200, "image/svg+xml", icon_svg, NULL);
    else
        refuse(out, r, keep, 404, "not_found", "the dashboard has no such file");
    return keep;
}
