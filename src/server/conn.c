/* conn.c: one client connection on a worker's loop: reading and handing
 * the input to its protocol (proto.h: the connection knows no protocol, it
 * calls the ops table of its listener's, with a request context, request.h),
 * pipelining (every request of a read is answered, all answers leave in one
 * write), the answer slots (reply.h), the bounds on queued output, the idle
 * and request timeouts, the connection cap, and closing (at once, after the
 * last answer, or when the worker drains).
 *
 * Reads land in the worker's shared buffer (SL__READ_BUF_BYTES). A
 * connection keeps bytes of its own (c->in) only for a partial RESP command
 * (HTTP keeps partial requests in its parser) and for input held back while
 * its output is over a bound.
 *
 * Output bounds (limits.max_pending_output, max_pending_output_total): the
 * answers a connection has queued (being built, being written, or waiting
 * behind an answer that comes later) are counted per connection and, in
 * server->pending_output, for the whole process. Before each request is
 * answered the bounds are checked; over one, the rest of the input is held
 * back and the connection is no longer read until its client has read
 * enough of its answers. Over the process bound, the connections holding
 * more than their share (the bound divided by the open connections) stop
 * first; the ones with nothing queued (clients that read their answers) go
 * on. So a client that pipelines without reading costs at most one bound
 * (and one answer, one read) of memory, whatever it sends, and the process
 * at most twice the total bound (connections below their share when the
 * total is reached may still fill it) plus one answer per connection.
 *
 * A self-paced protocol (gRPC: the session feeds nghttp2 one frame at a
 * time) asks sl__slot_stop before each unit, so the same bounds and turns
 * hold between frames. Answers the protocol holds (ops->held: what the
 * client's HTTP/2 flow-control window keeps inside nghttp2) count in the
 * pending output too (but do not stop reading: the WINDOW_UPDATE that frees
 * them must be read; the session refuses new streams instead). Its own
 * deadlines (ops->deadline: header_timeout for the preface, each frame and
 * each stream; grpc-timeout) drive the connection's timer, except while its
 * input is held back.
 *
 * Turns: one read callback builds at most TURN_OUTPUT bytes of answers;
 * the rest of its input is held back and handled at the next loop tick
 * (the worker's yield_idle), after the other connections' events. A
 * pipelining client cannot make the others wait for more than that.
 *
 * Draining (SIGTERM): everything that has arrived is answered, including
 * requests still in the socket buffers of idle keep-alive connections; the
 * last answer of an HTTP connection says Connection: close, and the
 * connection closes once it is written. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "server/proto.h"
#include "server/request.h"
#include "server/server.h"
#include "sluice/clock.h"
#include "util/counter.h"
#include "util/log.h"

#define MAX_DEFERRED 4096u       /* stop reading while this many answers are awaited */
#define BUF_KEEP     (64 * 1024) /* an emptied buffer larger than this is released */
#define TURN_OUTPUT  (64 * 1024) /* answers built in one turn of a connection, at most */

/* An answer that will be written later (a decision in Redis), and the
 * answers that follow it: pipelined answers leave in request order. */
struct sl__deferred {
    struct sl__deferred *next;
    struct sl__answer_slot *c;
    sl__buf answer; /* written by the protocol when the decision is in */
    sl__buf after;  /* answers to the requests that followed it, ready earlier */
    bool done;
    bool closes;                 /* its answer says Connection: close (sl__deferred_keep) */
    void (*on_close)(void *arg); /* sl__reply_on_close: the connection closed first */
    void *on_close_arg;
};

/* A connection; to its protocol's handlers, the answer slot of the request
 * being handled (reply.h). */
typedef struct sl__answer_slot {
    uv_tcp_t tcp;
    uv_timer_t timer;
    sl__worker *w;
    const sl__proto_ops_table *ops; /* its protocol (proto.h) */
    void *state;                    /* the protocol's (a parser, a session), or NULL */
    struct sl__answer_slot *prev, *next;
    sl__buf in;   /* a partial RESP command, or input held back (see the top) */
    sl__buf out;  /* answers being built */
    sl__buf wbuf; /* answers being written */
    uv_write_t wreq;
    uint64_t last_activity_ms;
    uint64_t request_started_ms; /* 0: no partial HTTP request or RESP command */
    uint64_t paused_at_ms;       /* read_paused since (its request's deadline stops) */
    uint64_t timer_due_ms;       /* when the timer, if active, fires (loop time) */
    size_t deferred_bytes;       /* answers held by the awaited ones (their after buffers) */
    size_t accounted;            /* this connection's part of server->pending_output */
    size_t turn_made;            /* answers built in the input being handled, before this feed */
    size_t feed_mark;            /* the length of the feed's out when it began */
    bool writing, close_after_write, closing, read_paused;
    bool busy;    /* handling input: held-back input is not resumed from inside */
    bool yielded; /* used its turn: on the worker's yielded list, resumed next tick */
    struct sl__answer_slot *yprev, *ynext;
    int open_handles;
    sl__deferred *deferred, *deferred_tail; /* answers awaited, oldest first */
    unsigned ndeferred;
    bool freed; /* closed while answers were awaited: freed by the last one */
} conn;

/* Where the answer to the request being handled goes: after the last
 * awaited answer, if any. */
static sl__buf *conn_out(conn *c) {
    return c->deferred_tail ? &c->deferred_tail->after : &c->out;
}

static void conn_close(conn *c);
static void flush(conn *c);

static void list_add(sl__worker *w, conn *c) {
    conn *head = w->conns;
    c->prev = NULL;
    c->next = head;
    if (head) head->prev = c;
    w->conns = c;
}

static void list_remove(sl__worker *w, conn *c) {
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next) c->next->prev = c->prev;
}

static void count(atomic_uint_fast64_t *c) {
    sl__counter_add(c, 1);
}

/* Draining: the worker is, or the server has started to (the worker hears
 * of it at its next tick; answers given meanwhile already close). */
static bool draining(const sl__worker *w) {
    return w->draining || atomic_load_explicit(&w->server->draining, memory_order_relaxed);
}

/* Bytes the kernel has received for this connection that were not read
 * yet (0 if it cannot tell). Only asked while the worker drains. */
static int unread_bytes(conn *c) {
    uv_os_fd_t fd;
    int n = 0;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0 || ioctl(fd, FIONREAD, &n) != 0) return 0;
    return n;
}

/* ---- output bounds --------------------------------------------------------- */

/* Answers on their way to the socket: the ones reading waits for. */
static size_t queued_out(const conn *c) {
    return c->out.len + c->wbuf.len + c->deferred_bytes;
}

/* All of them, with those the protocol holds (gRPC's flow control). */
static size_t queued(const conn *c) {
    return queued_out(c) + (c->ops->held ? c->ops->held(c->state) : 0);
}

/* Brings the process total up to date with this connection's queued
 * output (a closing connection holds none). */
static void account(conn *c) {
    size_t q = c->closing ? 0 : queued(c);
    if (q == c->accounted) return;
    atomic_uint_fast64_t *total = &c->w->server->pending_output;
    if (q > c->accounted)
        atomic_fetch_add_explicit(total, q - c->accounted, memory_order_relaxed);
    else
        atomic_fetch_sub_explicit(total, c->accounted - q, memory_order_relaxed);
    c->accounted = q;
}

/* Is the connection's output over its bounds, divided by 2^shift (0 to
 * stop reading before the next answer, 1 to resume: the gap keeps a
 * connection from flapping)? */
static bool output_over(const conn *c, unsigned shift) {
    const sl__limits_config *l = &c->w->limits;
    size_t q = queued_out(c);
    if (q >= l->max_pending_output >> shift || c->ndeferred >= MAX_DEFERRED >> shift) return true;
    if (q == 0) return false;
    sl__server *s = c->w->server;
    uint64_t total = atomic_load_explicit(&s->pending_output, memory_order_relaxed);
    total = total - c->accounted + q; /* ours is in it: the thread that added it reads it */
    if (total < l->max_pending_output_total) return false;
    unsigned n = atomic_load_explicit(&s->connections, memory_order_relaxed);
    uint64_t share = l->max_pending_output_total / (n ? n : 1);
    return q >= share >> shift;
}

static void pause_reading(conn *c) {
    if (c->read_paused) return;
    c->read_paused = true;
    c->paused_at_ms = uv_now(&c->w->loop);
    count(&c->w->stats.read_pauses);
    uv_read_stop((uv_stream_t *)&c->tcp);
}

static void on_yield(uv_idle_t *h);

/* The connection used its turn: it stops being read, and its held-back
 * input is handled at the next tick. */
static void yield_turn(conn *c) {
    if (!c->read_paused) {
        c->read_paused = true;
        c->paused_at_ms = uv_now(&c->w->loop);
        uv_read_stop((uv_stream_t *)&c->tcp);
    }
    if (c->yielded) return;
    sl__worker *w = c->w;
    c->yielded = true;
    c->yprev = NULL;
    c->ynext = w->yielded;
    if (c->ynext) c->ynext->yprev = c;
    w->yielded = c;
    if (!uv_is_active((uv_handle_t *)&w->yield_idle)) uv_idle_start(&w->yield_idle, on_yield);
}

static void unyield(conn *c) {
    if (!c->yielded) return;
    c->yielded = false;
    if (c->yprev)
        c->yprev->ynext = c->ynext;
    else
        c->w->yielded = c->ynext;
    if (c->ynext) c->ynext->yprev = c->yprev;
    c->yprev = c->ynext = NULL;
}

/* Releases the storage of a buffer that was emptied after growing large,
 * so that idle connections do not pin it. */
static void buf_trim(sl__buf *b) {
    if (b->len == 0 && b->cap > BUF_KEEP) {
        sl__buf_free(b);
        sl__buf_init(b);
    }
}

/* ---- timers ------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

/* How long a partial request (HTTP) or command (RESP) may take, in ms. */
static uint64_t request_timeout_ms(const conn *c) {
    return (uint64_t)(c->ops->request_timeout(&c->w->limits) / 1000000);
}

/* A request has begun and is not complete. */
static bool pending(const conn *c) {
    return c->ops->pending && c->ops->pending(c->state, c->in.len);
}

static void arm_timer(conn *c) {
    const sl__limits_config *l = &c->w->limits;
    uint64_t now = uv_now(&c->w->loop);
    uint64_t idle = (uint64_t)(l->idle_timeout / 1000000);
    uint64_t deadline = c->last_activity_ms + idle;
    if (c->request_started_ms && !c->read_paused) { /* paused: it waits on us */
        uint64_t rd = c->request_started_ms + request_timeout_ms(c);
        if (rd < deadline) deadline = rd;
    }
    if (c->ops->deadline && !c->read_paused && !c->close_after_write) { /* paused: they wait */
        int64_t gd = c->ops->deadline(c->state);
        if (gd) {
            int64_t left = gd - sl_now_monotonic();
            uint64_t rd = now + (left > 0 ? (uint64_t)(left / 1000000) + 1 : 0);
            if (rd < deadline) deadline = rd;
        }
    }
    uint64_t due = deadline > now ? deadline : now + 1;
    /* a timer that fires by then already covers it: on_timer looks at the
     * deadlines themselves, and arms again for the next (a gRPC connection
     * comes here after every read, with the same deadlines: no heap update) */
    if (uv_is_active((uv_handle_t *)&c->timer) && c->timer_due_ms <= due) return;
    c->timer_due_ms = due;
    uv_timer_start(&c->timer, on_timer, due - now, 0);
}

/* After input was handled: a request or command that is now on its way
 * has its own deadline from its first byte (the timer moves up to it). */
static void track_request(conn *c, bool completed_some) {
    if (c->ops->deadline) { /* the protocol keeps its own deadlines */
        if (!c->close_after_write) arm_timer(c);
        return;
    }
    if (!pending(c) || c->close_after_write) {
        c->request_started_ms = 0;
        return;
    }
    if (c->request_started_ms && !completed_some) return; /* the same one, still on its way */
    c->request_started_ms = uv_now(&c->w->loop);
    arm_timer(c);
}

static void timeout_answer(conn *c, bool request_late) {
    count(&c->w->stats.timeouts);
    c->ops->timeout(c->state, request_late, c->request_started_ms != 0, conn_out(c));
    c->close_after_write = true;
    flush(c);
}

static void on_timer(uv_timer_t *t) {
    conn *c = t->data;
    if (c->closing) return;
    if (c->ops->tick && !c->read_paused && !c->close_after_write) {
        int n = c->ops->tick(c->state);
        if (n != 0) sl__counter_add(&c->w->stats.timeouts, n > 0 ? (uint64_t)n : 1);
        if (n < 0) {          /* GOAWAY: a late preface or frame */
            if (c->writing) { /* the client is slow to read too: give up on it */
                conn_close(c);
                return;
            }
            c->close_after_write = true;
            flush(c);
            if (!c->closing) arm_timer(c); /* idle_timeout bounds the GOAWAY's write */
            return;
        }
        if (n > 0) flush(c);
        if (c->closing) return;
    }
    const sl__limits_config *l = &c->w->limits;
    uint64_t now = uv_now(&c->w->loop);
    /* While its input is held back, a request waits on us, not on the client. */
    bool request_late = c->request_started_ms && !c->read_paused &&
                        now - c->request_started_ms >= request_timeout_ms(c);
    bool idle = now - c->last_activity_ms >= (uint64_t)(l->idle_timeout / 1000000);
    if (request_late || idle) {
        if (c->writing) { /* the client is slow to read: give up on it */
            conn_close(c);
            return;
        }
        timeout_answer(c, request_late);
        return;
    }
    arm_timer(c);
}

/* ---- closing -------------------------------------------------------------- */

static void conn_free(conn *c) {
    sl__buf_free(&c->in);
    sl__buf_free(&c->out);
    sl__buf_free(&c->wbuf);
    if (c->state) c->ops->free(c->state);
    free(c);
}

static void on_closed(uv_handle_t *h) {
    conn *c = h->data;
    if (--c->open_handles > 0) return;
    sl__worker *w = c->w;
    if (c->ndeferred)
        c->freed = true; /* the last awaited answer frees it */
    else
        conn_free(c);
    w->connections--;
    atomic_fetch_sub(&w->server->connections, 1);
    count(&w->stats.closed);
    if (w->draining && w->connections == 0) sl__worker_finish(w);
}

static void release_done(conn *c);

/* Answers held long (sl__reply_on_close) are given up when the connection
 * closes: their holders are told, and their places released. */
static void cancel_awaited(conn *c) {
    bool any = false;
    for (sl__deferred *d = c->deferred; d; d = d->next) {
        if (!d->on_close || d->done) continue;
        void (*fn)(void *) = d->on_close;
        d->on_close = NULL;
        d->done = true;
        fn(d->on_close_arg);
        any = true;
    }
    if (any) release_done(c);
}

static void conn_close(conn *c) {
    if (c->closing) return;
    c->closing = true;
    cancel_awaited(c);
    unyield(c);
    account(c); /* gives back its part of the process total */
    list_remove(c->w, c);
    uv_close((uv_handle_t *)&c->timer, on_closed);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* While the worker drains: once everything that arrived on the connection
 * is answered, it closes after its last answer. Input still to come (held
 * back, partial, or unread in the socket) keeps it open: it is read and
 * answered first. */
static void drain_check(conn *c) {
    if (!c->w->draining || c->closing || c->close_after_write || c->ops->drain) return;
    if (c->in.len || pending(c) || unread_bytes(c) > 0) return;
    c->close_after_write = true;
}

/* ---- reading ---------------------------------------------------------------- */

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static size_t handle_input(conn *c, const char *data, size_t len, bool *completed);

/* Handles the held-back input (and a partial RESP command's bytes). */
static void handle_held(conn *c) {
    bool completed = false;
    c->busy = true;
    size_t used = handle_input(c, c->in.data, c->in.len, &completed);
    c->busy = false;
    sl__buf_consume(&c->in, used);
    buf_trim(&c->in);
    track_request(c, completed);
    drain_check(c);
}

/* The connection's output went down (or its turn came again): it is read
 * again once its output is under half its bounds, starting with the input
 * that was held back. That input is handled one turn at a time: if it
 * stops again and its answers were written at once, it goes on at the
 * next tick. */
static void resume(conn *c) {
    if (c->closing || !c->read_paused || c->yielded || output_over(c, 1)) return;
    c->read_paused = false;
    /* the time it was held back does not count against its request */
    if (c->request_started_ms) c->request_started_ms += uv_now(&c->w->loop) - c->paused_at_ms;
    if (c->in.len && !c->close_after_write) {
        handle_held(c); /* may stop it again: output over a bound, or its turn used */
        c->busy = true; /* flush() must not come back here */
        flush(c);
        c->busy = false;
        if (c->closing) return;
        if (c->read_paused) {
            if (!c->yielded && !output_over(c, 1)) yield_turn(c);
            return;
        }
    }
    if (!c->close_after_write) {
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
        arm_timer(c); /* its deadlines run again */
    } else {
        flush(c); /* nothing more is read: it closes once written */
    }
}

/* ---- writing -------------------------------------------------------------- */

static void after_output(conn *c) {
    if (c->close_after_write && !c->writing && c->out.len == 0 && c->ndeferred == 0) {
        conn_close(c);
        return;
    }
    if (c->read_paused && !c->busy && !c->yielded && !output_over(c, 1)) resume(c);
}

/* The next tick: the connections that used their turn go on. */
static void on_yield(uv_idle_t *h) {
    sl__worker *w = h->data;
    conn *list = w->yielded;
    w->yielded = NULL;
    for (conn *c = list; c; c = c->ynext) c->yielded = false; /* off the old list */
    for (conn *c = list, *next; c; c = next) {
        next = c->ynext;
        c->yprev = c->ynext = NULL;
        if (c->closing) continue;
        if (output_over(c, 1)) count(&w->stats.read_pauses); /* stays stopped */
        resume(c);
    }
    if (!w->yielded) uv_idle_stop(h);
}

static void on_write(uv_write_t *req, int status) {
    conn *c = req->data;
    c->writing = false;
    sl__buf_reset(&c->wbuf);
    buf_trim(&c->wbuf);
    if (c->closing) return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->out.len)
        flush(c);
    else {
        account(c);
        after_output(c);
    }
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
            sl__buf t = c->wbuf;
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
        } else {
            buf_trim(&c->out);
        }
    }
    account(c);
    /* answers that came later (a decision in Redis) may have gone over */
    if (!c->read_paused && !c->close_after_write && output_over(c, 0)) pause_reading(c);
    after_output(c);
}

/* ---- protocols ------------------------------------------------------------ */

/* Before the next answer is built: over an output bound, the connection
 * stops being read; past TURN_OUTPUT bytes of answers `produced` in this
 * turn, it yields to the others. true: build nothing more now. */
static bool stop_before_answer(conn *c, size_t produced) {
    if (output_over(c, 0)) {
        pause_reading(c);
        return true;
    }
    if (produced >= TURN_OUTPUT) {
        yield_turn(c);
        return true;
    }
    return false;
}

/* Feeds the input to the protocol (proto.h) until it is all used or the
 * protocol stops. Returns how many bytes of data were used: all, unless the
 * output went over its bounds or the rest is an incomplete request (the
 * rest is held back). A pipelined batch of answers is timed once, from the
 * feed of its first request to the end. */
static size_t handle_input(conn *c, const char *data, size_t len, bool *completed) {
    sl__worker *w = c->w;
    const sl__proto_ops_table *ops = c->ops;
    /* a reload answered to anyone is in force for every request after it,
       on every worker (one atomic load when nothing changed) */
    sl__worker_refresh(w);
    sl__request_ctx rq = {.now = sl__worker_now(w),
                          .policies = w->policies,
                          .domains = w->domains,
                          .cell = w->server->cell,
                          .decider = w->decider,
                          .slot = c,
                          .stats = &w->stats,
                          .limits = &w->limits,
                          .draining =
                              atomic_load_explicit(&w->server->draining, memory_order_relaxed),
                          .admin = sl__worker_admin(w),
                          .hold = w->hold};
    size_t off = 0;
    uint64_t answered = 0;
    int64_t t0 = 0;
    c->turn_made = 0;
    while (off < len && !c->close_after_write) {
        if (!ops->self_paced && stop_before_answer(c, c->turn_made)) break;
        sl__buf *out = conn_out(c);
        c->feed_mark = out->len;
        if (answered == 0) t0 = sl_now_monotonic();
        size_t used = 0;
        unsigned r = ops->feed(c->state, &rq, data + off, len - off, out, &used);
        off += used;
        size_t made = out->len - c->feed_mark;
        c->turn_made += made;
        if (out != &c->out) c->deferred_bytes += made;
        if (r & SL__FEED_ANSWERED) answered++;
        if (r & SL__FEED_ERROR) count(&w->stats.protocol_errors);
        if (r & (SL__FEED_CLOSE | SL__FEED_ERROR)) c->close_after_write = true;
        if (r & SL__FEED_STOP) break;
    }
    if (answered) sl__stats_record(&w->stats, ops->id, answered, sl_now_monotonic() - t0);
    *completed = answered > 0;
    return c->close_after_write ? len : off;
}

bool sl__slot_stop(sl__answer_slot *c) {
    if (!c || c->closing || c->close_after_write) return false;
    return stop_before_answer(c, c->turn_made + (conn_out(c)->len - c->feed_mark));
}

bool sl__slot_closing(sl__answer_slot *c) {
    return c && draining(c->w) && unread_bytes(c) == 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    conn *c = h->data;
    buf->base = c->w->read_buf;
    buf->len = SL__READ_BUF_BYTES;
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
    if (c->in.len) {
        sl__buf_append(&c->in, buf->base, (size_t)nread);
        handle_held(c);
    } else {
        bool completed = false;
        c->busy = true;
        size_t used = handle_input(c, buf->base, (size_t)nread, &completed);
        c->busy = false;
        if (used < (size_t)nread) sl__buf_append(&c->in, buf->base + used, (size_t)nread - used);
        track_request(c, completed);
        drain_check(c);
    }
    if (c->in.failed) {
        conn_close(c);
        return;
    }
    flush(c);
}

/* ---- answers that come later -------------------------------------------------- */

static void answered_later(conn *c);

sl__deferred *sl__slot_defer(sl__answer_slot *c) {
    if (!c) return NULL;
    sl__deferred *d = calloc(1, sizeof *d);
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

sl__buf *sl__deferred_out(sl__deferred *d) {
    return &d->answer;
}

static void deferred_free(sl__deferred *d) {
    sl__buf_free(&d->answer);
    sl__buf_free(&d->after);
    free(d);
}

/* Releases the answers that are complete, in order. */
static void release_done(conn *c) {
    while (c->deferred && c->deferred->done) {
        sl__deferred *h = c->deferred;
        c->deferred = h->next;
        if (!c->deferred) c->deferred_tail = NULL;
        c->ndeferred--;
        size_t held = h->after.len;
        c->deferred_bytes = c->deferred_bytes > held ? c->deferred_bytes - held : 0;
        if (!c->closing) {
            sl__buf_append(&c->out, h->answer.data, h->answer.len);
            sl__buf_append(&c->out, h->after.data, h->after.len);
            if (h->answer.failed || h->after.failed) c->out.failed = true;
            if (h->closes) c->close_after_write = true;
        }
        deferred_free(h);
    }
}

void sl__deferred_done(sl__deferred *d) {
    conn *c = d->c;
    d->done = true;
    release_done(c);
    answered_later(c);
}

/* An awaited answer came: free a connection closed meanwhile, or write. */
static void answered_later(conn *c) {
    if (c->freed) {
        if (c->ndeferred == 0) conn_free(c);
        return;
    }
    if (!c->closing) {
        drain_check(c);
        flush(c);
        if (c->ops->deadline && !c->closing && !c->close_after_write)
            arm_timer(c); /* its answer's deadline */
    }
}

bool sl__deferred_keep(sl__deferred *d, bool keep) {
    conn *c = d->c;
    if (!keep || c->closing || !draining(c->w)) return keep;
    /* draining: only the last answer of the connection closes it */
    if (d != c->deferred_tail || d->after.len || c->in.len || pending(c) || unread_bytes(c) > 0)
        return true;
    d->closes = true;
    return false;
}

int sl__slot_peer(sl__answer_slot *c, struct sockaddr_storage *out) {
    if (!c) return UV_ENOTCONN;
    int len = (int)sizeof *out;
    return uv_tcp_getpeername(&c->tcp, (struct sockaddr *)out, &len);
}

/* ---- accepting ------------------------------------------------------------ */

void sl__conn_accept(sl__worker *w, uv_stream_t *listener, sl__proto proto) {
    conn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->w = w;
    c->ops = sl__proto_ops(proto);
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
        if (c->ops->refuse) c->ops->refuse(&c->out);
        c->close_after_write = true;
        flush(c);
        return;
    }
    if (c->ops->create && !(c->state = c->ops->create(&w->limits, &c->out))) {
        conn_close(c);
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    arm_timer(c);
}

void sl__conn_drain_all(sl__worker *w) {
    for (conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->ops->drain) { /* the protocol drains itself (gRPC: GOAWAY, streams answered) */
            if (c->ops->drain(c->state)) c->close_after_write = true;
            flush(c);
            continue;
        }
        /* What has arrived is read and answered first (a request on its
         * way, input held back, or bytes still in the socket buffer); then
         * the connection closes after its last answer. */
        drain_check(c);
        if (c->close_after_write) flush(c);
    }
}

void sl__conn_close_all(sl__worker *w) {
    for (conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        conn_close(c);
    }
}

/* ---- where a decision's answer goes (reply.h) ------------------------------------ */

void sl__reply_begin(sl__reply *r, sl__answer_slot *slot, sl__buf *out, bool *answered) {
    *r = (sl__reply){.slot = slot, .out = out, .answered = answered};
    sl__buf_init(&r->scratch);
    *answered = false;
}

bool sl__reply_hold(sl__reply *r) {
    r->answered = NULL;
    r->out = NULL;
    conn *c = r->slot;
    if (!c) return false;
    c->ndeferred++; /* counted as an awaited answer: the connection stays */
    r->held = c;
    return true;
}

bool sl__reply_wait(sl__reply *r) {
    r->answered = NULL; /* the handler returns: done runs later */
    r->out = NULL;
    r->d = sl__slot_defer(r->slot);
    if (!r->d) r->lost = true;
    return r->d != NULL;
}

sl__buf *sl__reply_out(sl__reply *r) {
    if (r->answered) return r->out;
    if (r->d) return sl__deferred_out(r->d);
    return &r->scratch;
}

bool sl__reply_on_close(sl__reply *r, void (*fn)(void *arg), void *arg) {
    if (!r->d) return false;
    r->d->on_close = fn;
    r->d->on_close_arg = arg;
    return true;
}

bool sl__reply_keep(sl__reply *r, bool keep) {
    return r->d ? sl__deferred_keep(r->d, keep) : keep;
}

void sl__reply_end(sl__reply *r) {
    if (r->answered) {
        *r->answered = true;
        r->answered = NULL;
    }
    sl__buf_free(&r->scratch);
    if (r->held) {
        conn *c = r->held;
        r->held = NULL;
        c->ndeferred--;
        answered_later(c);
    }
    if (r->d) {
        sl__deferred *d = r->d;
        r->d = NULL;
        sl__deferred_done(d);
    }
}
