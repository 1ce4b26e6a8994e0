/* http_conn.c: HTTP/1.1 as a protocol of the connection layer (proto.h):
 * one request per feed, through the incremental parser (http_request.c) to
 * the routes (http_api.c); the answers the connection layer asks for
 * without a request: parse errors (400, 413, 431, 501, 505; 500 when memory
 * ran out), 408 for a request that did not arrive in time, 503 at the
 * connection limit, and "100 Continue". */
#include "server/http/http.h"
#include "server/http/http_api.h"
#include "server/proto.h"
#include "server/request.h"

static void *http_new(const sl__limits_config *limits, sl__buf *out) {
    (void)out;
    return sl__http_parser_new(limits->max_header_bytes, limits->max_body_bytes);
}

static unsigned http_feed(void *st, const sl__request_ctx *rq, const char *data, size_t len,
                          sl__buf *out, size_t *used) {
    sl__http_parser *p = st;
    *used = 0;
    sl__http_status s = sl__http_parser_feed(p, data, len, used);
    if (s == SL__HTTP_READY) {
        const sl__http_request *req = sl__http_parser_request(p);
        /* draining: the last request that arrived is answered with
         * Connection: close (earlier pipelined ones keep it open) */
        bool keep =
            req->keep_alive && !(*used == len && rq->draining && sl__slot_closing(rq->slot));
        keep = sl__http_api_handle(rq, req, out, keep);
        sl__http_parser_next(p);
        return keep ? SL__FEED_ANSWERED : SL__FEED_ANSWERED | SL__FEED_CLOSE;
    }
    if (s == SL__HTTP_ERROR) {
        const char *msg = "bad request";
        int status = sl__http_parser_error_status(p, &msg);
        sl__http_error_answer(out, status, false,
                              status == 431   ? "headers_too_large"
                              : status == 413 ? "body_too_large"
                              : status == 501 ? "not_implemented"
                              : status == 505 ? "http_version_not_supported"
                                              : "bad_request",
                              msg);
        return SL__FEED_ERROR;
    }
    /* a client waiting for "100 Continue" before sending its body */
    if (sl__http_parser_take_continue(p)) sl__http_continue(out);
    return *used == 0 ? SL__FEED_STOP : 0; /* 0 used should not happen: NEED_MORE takes all */
}

static bool http_pending(const void *st, size_t held) {
    (void)held; /* input held back is not a request on its way */
    return sl__http_parser_in_request(st);
}

static int64_t http_request_timeout(const sl__limits_config *l) {
    return l->header_timeout;
}

static void http_timeout(void *st, bool request_late, bool started, sl__buf *out) {
    (void)request_late;
    if (started || sl__http_parser_in_request(st))
        sl__http_error_answer(out, 408, false, "request_timeout",
                              "the request did not arrive in time; closing the connection");
}

static void http_refuse(sl__buf *out) {
    static const char body[] =
        "{\"error\":\"too_many_connections\",\"message\":\"the server has reached its "
        "connection limit; try again later\"}";
    sl__http_begin(out, 503);
    sl__http_header_line(out, "Retry-After", "1");
    sl__http_end(out, false, "application/json", body, sizeof body - 1);
}

static void http_free(void *st) {
    sl__http_parser_free(st);
}

const sl__proto_ops_table sl__http_proto = {
    .id = SL__PROTO_HTTP,
    .create = http_new,
    .feed = http_feed,
    .pending = http_pending,
    .request_timeout = http_request_timeout,
    .timeout = http_timeout,
    .refuse = http_refuse,
    .refuse_raw = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                  "Retry-After: 1\r\nConnection: close\r\nContent-Length: 97\r\n\r\n"
                  "{\"error\":\"too_many_connections\",\"message\":\"the server has no file "
                  "descriptor left; try again later\"}",
    .free = http_free,
};
