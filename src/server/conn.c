/* conn.c: one client connection on a worker's loop: reading into the
 * protocol parser, pipelining (every request of a read is answered, all
 * answers leave in one write), backpressure, the idle and header timeouts,
 * the connection cap, and closing (at once, after the last answer, or when
 * the worker drains).
 *
 * Reads land in the worker's shared buffer; only a partial RESP command is
 * copied into the connection (HTTP keeps partial requests in its parser). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/grpc/grpc.h"
#include "server/http/http.h"
#include "server/resp/resp.h"
#include "server/server.h"
#include "util/counter.h"
#include "util/log.h"

#define READ_BUF_BYTES (64 * 1024)
#define OUT_HIGH_WATER (4u << 20) /* stop reading while this much output is pending */
#define MAX_DEFERRED   4096       /* stop reading while this many answers are awaited */

/* An answer that will be written later (a decision in Redis), and the
 * answers that follow it: pipelined answers leave in request order. */
struct sl_deferred {
    struct sl_deferred *next;
    struct conn *c;
    sl_buf answer; /* written by the protocol when the decision is in */
    sl_buf after;  /* answers to the requests that followed it, ready earlier */
    bool done;
};

typedef struct conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    sl_worker *w;
    sl_proto proto;
    struct conn *prev, *next;
    sl_buf in;   /* RESP: bytes of an incomplete command */
    sl_buf out;  /* answers being built */
    sl_buf wbuf; /* answers being written */
    uv_write_t wreq;
    sl_http_parser *http;
    sl_grpc_session *grpc;
    uint64_t last_activity_ms;
    uint64_t request_started_ms; /* 0: not inside an HTTP request head */
    bool writing, close_after_write, closing, read_paused;
    int open_handles;
    sl_deferred *deferred, *deferred_tail; /* answers awaited, oldest first */
    unsigned ndeferred;
    bool freed; /* closed while answers were awaited: freed by the last one */
} conn;

/* Where the answer to the request being handled goes: after the last
 * awaited answer, if any. */
static sl_buf *conn_out(conn *c) {
    return c->deferred_tail ? &c->deferred_tail->after : &c->out;
}

static void conn_close(conn *c);
static void flush(conn *c);

static void list_add(sl_worker *w, conn *c) {
    conn *head = w->conns;
    c->prev = NULL;
    c->next = head;
    if (head) head->prev = c;
    w->conns = c;
}

static void list_remove(sl_worker *w, conn *c) {
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next) c->next->prev = c->prev;
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void count(atomic_uint_fast64_t *c);

static void count(atomic_uint_fast64_t *c) {
    sl__counter_add(c, 1);
}

/* Records n answers that took ns in all (a pipelined batch is timed once,
 * with two clock reads, and each of its answers counted at the average). */
static void record_batch(sl_worker *w, sl_proto proto, uint64_t n, int64_t ns) {
    if (n == 0) return;
    sl_worker_stats *st = &w->stats;
    sl__counter_add(&st->latency[proto][sl__prom_latency_bucket(ns / (int64_t)n)], n);
    sl__counter_add(&st->latency_sum_ns[proto], (uint64_t)ns);
    sl__counter_add(&st->requests[proto], n);
}

void sl__worker_record(sl_worker *w, sl_proto proto, int64_t ns) {
    record_batch(w, proto, 1, ns);
}

/* ---- timers ------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void arm_timer(conn *c) {
    const sl_limits_config *l = &c->w->limits;
    uint64_t now = uv_now(&c->w->loop);
    uint64_t idle = (uint64_t)(l->idle_timeout / 1000000);
    uint64_t deadline = c->last_activity_ms + idle;
    if (c->request_started_ms) {
        uint64_t hd = c->request_started_ms + (uint64_t)(l->header_timeout / 1000000);
        if (hd < deadline) deadline = hd;
    }
    uv_timer_start(&c->timer, on_timer, deadline > now ? deadline - now : 1, 0);
}

static void timeout_answer(conn *c) {
    count(&c->w->stats.timeouts);
    if (c->proto == SL_PROTO_HTTP) {
        if (c->request_started_ms || sl__http_parser_in_request(c->http)) {
            sl_buf body;
            sl__buf_init(&body);
            sl__http_error_json(&body, "request_timeout",
                                "the request did not arrive in time; closing the connection");
            sl__http_begin(conn_out(c), 408);
            sl__http_end(conn_out(c), false, "application/json", body.data, body.len);
            sl__buf_free(&body);
        }
    } else if (c->proto == SL_PROTO_GRPC) {
        sl__grpc_session_shutdown(c->grpc); /* GOAWAY */
    } else {
        sl__resp_error(conn_out(c), "ERR idle timeout, closing the connection");
    }
    c->close_after_write = true;
    flush(c);
}

static void on_timer(uv_timer_t *t) {
    conn *c = t->data;
    if (c->closing) return;
    const sl_limits_config *l = &c->w->limits;
    uint64_t now = uv_now(&c->w->loop);
    bool head_late = c->request_started_ms &&
                     now - c->request_started_ms >= (uint64_t)(l->header_timeout / 1000000);
    bool idle = now - c->last_activity_ms >= (uint64_t)(l->idle_timeout / 1000000);
    if (head_late || idle) {
        if (c->writing) { /* the client is slow to read: give up on it */
            conn_close(c);
            return;
        }
        timeout_answer(c);
        return;
    }
    arm_timer(c);
}

/* ---- closing -------------------------------------------------------------- */

static void conn_free(conn *c) {
    sl__buf_free(&c->in);
    sl__buf_free(&c->out);
    sl__buf_free(&c->wbuf);
    if (c->http) sl__http_parser_free(c->http);
    if (c->grpc) sl__grpc_session_free(c->grpc);
    free(c);
}

static void on_closed(uv_handle_t *h) {
    conn *c = h->data;
    if (--c->open_handles > 0) return;
    sl_worker *w = c->w;
    if (c->ndeferred)
        c->freed = true; /* the last awaited answer frees it */
    else
        conn_free(c);
    w->connections--;
    atomic_fetch_sub(&w->server->connections, 1);
    count(&w->stats.closed);
    if (w->draining && w->connections == 0) sl__worker_finish(w);
}

static void conn_close(conn *c) {
    if (c->closing) return;
    c->closing = true;
    list_remove(c->w, c);
    uv_close((uv_handle_t *)&c->timer, on_closed);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* ---- writing -------------------------------------------------------------- */

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

static void after_output(conn *c) {
    if (c->close_after_write && !c->writing && c->out.len == 0 && c->ndeferred == 0) {
        conn_close(c);
        return;
    }
    if (c->read_paused && c->out.len + c->wbuf.len < OUT_HIGH_WATER / 2 &&
        c->ndeferred < MAX_DEFERRED / 2) {
        c->read_paused = false;
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    }
}

static void on_write(uv_write_t *req, int status) {
    conn *c = req->data;
    c->writing = false;
    sl__buf_reset(&c->wbuf);
    if (c->closing) return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->out.len)
        flush(c);
    else
        after_output(c);
}

static void flush(conn *c) {
    if (c->closing) return;
    if (c->out.failed) {
        conn_close(c);
        return;
    }
    if (!c->writing && c->out.len) {
        uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
        int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (n < 0 && n != UV_EAGAIN) {
            conn_close(c);
            return;
        }
        if (n > 0) sl__buf_consume(&c->out, (size_t)n);
        if (c->out.len) { /* the rest goes out asynchronously */
            sl_buf t = c->wbuf;
            c->wbuf = c->out;
            c->out = t;
            sl__buf_reset(&c->out);
            c->writing = true;
            c->wreq.data = c;
            uv_buf_t wb = uv_buf_init(c->wbuf.data, (unsigned)c->wbuf.len);
            if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &wb, 1, on_write) != 0) {
                c->writing = false;
                conn_close(c);
                return;
            }
        }
    }
    if (!c->read_paused &&
        (c->out.len + c->wbuf.len >= OUT_HIGH_WATER || c->ndeferred >= MAX_DEFERRED)) {
        c->read_paused = true;
        uv_read_stop((uv_stream_t *)&c->tcp);
    }
    after_output(c);
}

/* ---- protocols ------------------------------------------------------------ */

static void handle_http(conn *c, const char *data, size_t len) {
    sl_worker *w = c->w;
    size_t off = 0;
    uint64_t answered = 0;
    int64_t t0 = 0;
    while (off < len && !c->close_after_write) {
        size_t used = 0;
        sl_http_status st = sl__http_parser_feed(c->http, data + off, len - off, &used);
        off += used;
        if (st == SL_HTTP_READY) {
            if (answered == 0) t0 = mono_ns();
            const sl_http_request *req = sl__http_parser_request(c->http);
            w->current_conn = c;
            bool keep = sl__http_api_handle(w, req, conn_out(c));
            w->current_conn = NULL;
            answered++;
            sl__http_parser_next(c->http);
            c->request_started_ms = 0;
            if (!keep) c->close_after_write = true;
        } else if (st == SL_HTTP_ERROR) {
            const char *msg = "bad request";
            int status = sl__http_parser_error_status(c->http, &msg);
            count(&w->stats.protocol_errors);
            sl_buf body;
            sl__buf_init(&body);
            sl__http_error_json(&body,
                                status == 431   ? "headers_too_large"
                                : status == 413 ? "body_too_large"
                                : status == 501 ? "not_implemented"
                                : status == 505 ? "http_version_not_supported"
                                                : "bad_request",
                                msg);
            sl__http_begin(conn_out(c), status);
            sl__http_end(conn_out(c), false, "application/json", body.data, body.len);
            sl__buf_free(&body);
            c->close_after_write = true;
            break;
        } else {
            /* a client waiting for "100 Continue" before sending its body */
            if (sl__http_parser_take_continue(c->http)) sl__http_continue(conn_out(c));
            if (used == 0) break; /* should not happen: NEED_MORE consumes everything */
        }
    }
    if (answered) record_batch(w, SL_PROTO_HTTP, answered, mono_ns() - t0);
    if (!c->close_after_write && sl__http_parser_in_request(c->http) && !c->request_started_ms)
        c->request_started_ms = uv_now(&w->loop);
}

/* Returns how many bytes of data were used (the rest is an incomplete command). */
static size_t handle_resp(conn *c, const char *data, size_t len) {
    sl_worker *w = c->w;
    sl_resp_context ctx = {.policies = w->policies,
                           .cell = w->server->cell,
                           .now = sl__worker_now(w),
                           .info = sl__resp_info,
                           .info_ctx = w,
                           .check_async = w->store ? sl__resp_check_async : NULL,
                           .throttle_async = w->store ? sl__resp_throttle_async : NULL,
                           .worker = w};
    size_t off = 0;
    uint64_t answered = 0;
    int64_t t0 = 0;
    while (off < len && !c->close_after_write) {
        sl_resp_command cmd;
        const char *err = NULL;
        long n = sl__resp_parse(data + off, len - off, w->limits.max_resp_frame, &cmd, &err);
        if (n == 0) break;
        if (n < 0) {
            count(&w->stats.protocol_errors);
            char msg[160];
            snprintf(msg, sizeof msg, "ERR Protocol error: %s", err ? err : "malformed request");
            sl__resp_error(conn_out(c), msg);
            c->close_after_write = true;
            if (answered) record_batch(w, SL_PROTO_RESP, answered, mono_ns() - t0);
            return len;
        }
        if (answered == 0) t0 = mono_ns();
        w->current_conn = c;
        int quit = sl__resp_execute(&ctx, &cmd, conn_out(c));
        w->current_conn = NULL;
        answered++;
        off += (size_t)n;
        if (quit) c->close_after_write = true;
    }
    if (answered) record_batch(w, SL_PROTO_RESP, answered, mono_ns() - t0);
    return off;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    conn *c = h->data;
    buf->base = c->w->read_buf;
    buf->len = READ_BUF_BYTES;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    conn *c = s->data;
    if (nread == 0 || c->closing) return;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    c->last_activity_ms = uv_now(&c->w->loop);
    if (c->close_after_write) return; /* ignore what follows an answer that closes */
    if (c->proto == SL_PROTO_HTTP) {
        handle_http(c, buf->base, (size_t)nread);
    } else if (c->proto == SL_PROTO_GRPC) {
        c->w->current_conn = c;
        int frc = sl__grpc_session_feed(c->grpc, buf->base, (size_t)nread);
        c->w->current_conn = NULL;
        if (frc != 0) {
            count(&c->w->stats.protocol_errors);
            c->close_after_write = true;
        } else if (sl__grpc_session_done(c->grpc)) {
            c->close_after_write = true;
        }
    } else if (c->in.len == 0) {
        size_t used = handle_resp(c, buf->base, (size_t)nread);
        if (used < (size_t)nread && !c->close_after_write)
            sl__buf_append(&c->in, buf->base + used, (size_t)nread - used);
    } else {
        sl__buf_append(&c->in, buf->base, (size_t)nread);
        size_t used = handle_resp(c, c->in.data, c->in.len);
        sl__buf_consume(&c->in, used);
    }
    if (c->w->draining && c->proto == SL_PROTO_RESP && c->in.len == 0) c->close_after_write = true;
    flush(c);
}

/* ---- answers that come later -------------------------------------------------- */

sl_deferred *sl__conn_defer(sl_worker *w) {
    conn *c = w->current_conn;
    if (!c) return NULL;
    sl_deferred *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->c = c;
    sl__buf_init(&d->answer);
    sl__buf_init(&d->after);
    if (c->deferred_tail)
        c->deferred_tail->next = d;
    else
        c->deferred = d;
    c->deferred_tail = d;
    c->ndeferred++;
    return d;
}

sl_buf *sl__deferred_out(sl_deferred *d) {
    return &d->answer;
}

static void deferred_free(sl_deferred *d) {
    sl__buf_free(&d->answer);
    sl__buf_free(&d->after);
    free(d);
}

void sl__deferred_done(sl_deferred *d) {
    conn *c = d->c;
    d->done = true;
    /* release the answers that are complete, in order */
    while (c->deferred && c->deferred->done) {
        sl_deferred *h = c->deferred;
        c->deferred = h->next;
        if (!c->deferred) c->deferred_tail = NULL;
        c->ndeferred--;
        if (!c->closing) {
            sl__buf_append(&c->out, h->answer.data, h->answer.len);
            sl__buf_append(&c->out, h->after.data, h->after.len);
            if (h->answer.failed || h->after.failed) c->out.failed = true;
        }
        deferred_free(h);
    }
    if (c->freed) {
        if (c->ndeferred == 0) conn_free(c);
        return;
    }
    if (!c->closing) flush(c);
}

int sl__conn_peer(sl_worker *w, struct sockaddr_storage *out) {
    conn *c = w->current_conn;
    if (!c) return UV_ENOTCONN;
    int len = (int)sizeof *out;
    return uv_tcp_getpeername(&c->tcp, (struct sockaddr *)out, &len);
}

/* ---- accepting ------------------------------------------------------------ */

void sl__conn_accept(sl_worker *w, uv_stream_t *listener, sl_proto proto) {
    conn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->w = w;
    c->proto = proto;
    uv_tcp_init(&w->loop, &c->tcp);
    uv_timer_init(&w->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open_handles = 2;
    w->connections++;
    atomic_fetch_add(&w->server->connections, 1);
    list_add(w, c);
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    count(&w->stats.accepted);
    uv_tcp_nodelay(&c->tcp, 1);
    c->last_activity_ms = uv_now(&w->loop);
    if (atomic_load(&w->server->connections) > w->limits.max_connections) {
        count(&w->stats.refused_connections);
        if (proto == SL_PROTO_HTTP) {
            static const char body[] =
                "{\"error\":\"too_many_connections\",\"message\":\"the server has reached its "
                "connection limit; try again later\"}";
            sl__http_begin(&c->out, 503);
            sl__http_header_line(&c->out, "Retry-After", "1");
            sl__http_end(&c->out, false, "application/json", body, sizeof body - 1);
        } else if (proto == SL_PROTO_RESP) {
            sl__resp_error(&c->out, "ERR max number of clients reached");
        } /* gRPC: closed without a word (an HTTP/2 client retries elsewhere) */
        c->close_after_write = true;
        flush(c);
        return;
    }
    if (proto == SL_PROTO_HTTP) {
        c->http = sl__http_parser_new(w->limits.max_header_bytes, w->limits.max_body_bytes);
        if (!c->http) {
            conn_close(c);
            return;
        }
    } else if (proto == SL_PROTO_GRPC) {
        c->grpc = sl__grpc_session_new(w, &c->out);
        if (!c->grpc) {
            conn_close(c);
            return;
        }
    }
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    arm_timer(c);
}

void sl__conn_drain_all(sl_worker *w) {
    for (conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        /* A request on its way is read to its end and answered; the answer
         * closes the connection (HTTP answers say Connection: close while
         * the worker drains; RESP closes once no partial command is left). */
        if ((c->http && sl__http_parser_in_request(c->http)) || c->in.len) continue;
        if (c->grpc) { /* GOAWAY; streams in flight are still answered */
            sl__grpc_session_shutdown(c->grpc);
            if (sl__grpc_session_done(c->grpc)) c->close_after_write = true;
            flush(c);
            continue;
        }
        if (c->writing || c->out.len || c->ndeferred)
            c->close_after_write = true;
        else
            conn_close(c);
    }
}

void sl__conn_close_all(sl_worker *w) {
    for (conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        conn_close(c);
    }
}
