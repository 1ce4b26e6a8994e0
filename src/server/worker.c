/* worker.c: one worker thread: its libuv loop, its listening sockets, the
 * clock read once per loop tick, picking up reloaded policy sets, and
 * draining on shutdown.
 *
 * At the file-descriptor limit (EMFILE, ENFILE), libuv's accept loop calls
 * back with the error and tries again at once, for as long as the error
 * lasts (libuv's own spare descriptor is lost when another thread takes
 * the one it frees): the worker would spin there and serve nobody. So on an
 * accept error the worker takes the pending connections itself with a
 * spare descriptor of its own (each is refused with a short answer and
 * closed), then pauses the listener (its handle is closed, a duplicate
 * keeps the socket and its backlog) and accepts again ACCEPT_PAUSE_MS
 * later. The warning is logged once a second at most, with
 * the count of failures since the last one. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/ramp.h"
#include "server/hold.h"
#include "server/reload.h"
#include "server/server.h"
#include "sluice/clock.h"
#include "util/counter.h"
#include "util/log.h"

#define ACCEPT_PAUSE_MS 100
#define REFUSE_MAX      1024 /* connections refused in one loop tick, at most */

int64_t sl__worker_now(sl__worker *w) {
    if (!w->now_valid) {
        w->now = sl_now();
        w->now_valid = true;
    }
    return w->now;
}

void sl__worker_take_policies(sl__worker *w) {
    sl__server *s = w->server;
    pthread_mutex_lock(&s->reload_lock);
    sl__policy_set *next = s->policies;
    sl__policy_set_retain(next);
    sl__domain_set *next_domains = s->domains;
    sl__domain_set_retain(next_domains);
    w->limits = s->config->limits;
    w->admin = s->config->admin;
    w->generation = atomic_load(&s->generation);
    pthread_mutex_unlock(&s->reload_lock);
    if (w->policies) sl__policy_set_release(w->policies);
    if (w->domains) sl__domain_set_release(w->domains);
    w->policies = next;
    w->domains = next_domains;
}

static void on_tick(uv_prepare_t *h) {
    sl__worker *w = h->data;
    w->now_valid = false;
    w->refused_tick = 0;
    sl__worker_refresh(w);
    if (sl__decider_recovered(w->decider)) { /* ramp_up: the store is back (policy/ramp.h) */
        sl__ramp_restart(sl_now(), SL__RAMP_BY_RECOVERY);
        if (sl__policy_set_ramped(w->policies))
            sl__log_info("worker %u: the store is reachable again: ramp_up restarts", w->id);
    }
}

/* One line a second at most, for the whole process. */
static void warn_accept(sl__worker *w, int status) {
    sl__server *s = w->server;
    atomic_fetch_add_explicit(&s->accept_unwarned, 1, memory_order_relaxed);
    int64_t now = sl_now_monotonic();
    int64_t last = atomic_load_explicit(&s->accept_warned_at, memory_order_relaxed);
    if (last && now - last < 1000000000) return;
    if (!atomic_compare_exchange_strong(&s->accept_warned_at, &last, now)) return;
    unsigned long long n = atomic_exchange(&s->accept_unwarned, 0);
    sl__log_warn("accept: %s (%llu time%s since the last warning); refusing new connections "
                 "until descriptors are free",
                 uv_strerror(status), n, n == 1 ? "" : "s");
}

/* The answer a connection refused at accept gets before it is closed (its
 * protocol's, proto.h). */
static void refuse_fd(int fd, sl__proto p) {
    const char *answer = sl__proto_ops(p)->refuse_raw;
    ssize_t rc = 0;
    if (answer) rc = send(fd, answer, strlen(answer), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)rc; /* best effort: the connection is closed either way */
    close(fd);
}

/* Takes the listener's pending connections with the spare descriptor and
 * refuses them (at most REFUSE_MAX per loop tick). */
static void refuse_pending(sl__worker *w, sl__proto p) {
    uv_os_fd_t lfd;
    if (w->spare_fd < 0 || uv_fileno((uv_handle_t *)&w->listeners[p], &lfd) != 0) return;
    close(w->spare_fd);
    w->spare_fd = -1;
    while (w->refused_tick < REFUSE_MAX) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            break; /* EAGAIN: none left; EMFILE: another thread took the descriptor */
        }
        refuse_fd(fd, p);
        sl__counter_add(&w->stats.refused_connections, 1);
        w->refused_tick++;
    }
    w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void on_listener_closed(uv_handle_t *h) {
    sl__worker *w = h->loop->data;
    for (int p = 0; p < SL__PROTO_COUNT; p++)
        if (h == (uv_handle_t *)&w->listeners[p]) w->listen_state[p] = SL__LISTEN_PAUSED;
}

static void on_connection(uv_stream_t *listener, int status);

/* Reopens the paused listeners (their sockets kept their backlogs). */
static void on_accept_timer(uv_timer_t *t) {
    sl__worker *w = t->data;
    bool again = false;
    for (int p = 0; p < SL__PROTO_COUNT && !w->draining; p++) {
        if (w->listen_state[p] == SL__LISTEN_CLOSING) again = true;
        if (w->listen_state[p] != SL__LISTEN_PAUSED) continue;
        int fd = dup(w->listen_dup[p]);
        if (fd < 0) { /* still no descriptor to spare */
            again = true;
            continue;
        }
        uv_tcp_init(&w->loop, &w->listeners[p]);
        int rc = uv_tcp_open(&w->listeners[p], fd);
        if (rc != 0)
            close(fd); /* not the handle's */
        else
            rc = uv_listen((uv_stream_t *)&w->listeners[p], 1024, on_connection);
        if (rc == 0) {
            w->listen_state[p] = SL__LISTEN_OPEN;
            continue;
        }
        w->listen_state[p] = SL__LISTEN_CLOSING;
        uv_close((uv_handle_t *)&w->listeners[p], on_listener_closed);
        again = true;
    }
    if (w->spare_fd < 0) w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (again && !w->draining)
        uv_timer_start(&w->accept_timer, on_accept_timer, ACCEPT_PAUSE_MS, 0);
}

/* Stops accepting on this listener for ACCEPT_PAUSE_MS: closing its handle
 * is the only way out of libuv's accept loop. */
static void pause_listener(sl__worker *w, sl__proto p) {
    if (w->listen_state[p] != SL__LISTEN_OPEN || w->listen_dup[p] < 0) return;
    w->listen_state[p] = SL__LISTEN_CLOSING;
    uv_close((uv_handle_t *)&w->listeners[p], on_listener_closed);
    if (!uv_is_active((uv_handle_t *)&w->accept_timer))
        uv_timer_start(&w->accept_timer, on_accept_timer, ACCEPT_PAUSE_MS, 0);
}

static void on_connection(uv_stream_t *listener, int status) {
    sl__worker *w = listener->loop->data;
    int p = 0;
    while (p < SL__PROTO_COUNT && listener != (uv_stream_t *)&w->listeners[p]) p++;
    if (p == SL__PROTO_COUNT) return;
    if (status < 0) {
        sl__counter_add(&w->stats.accept_errors, 1);
        warn_accept(w, status);
        /* The pending connections are refused now; then the listener rests
         * (at the limit, every accept fails at once, whether a connection
         * is waiting or not: libuv would call back again and again). */
        if (status == UV_EMFILE || status == UV_ENFILE) refuse_pending(w, (sl__proto)p);
        pause_listener(w, (sl__proto)p);
        return;
    }
    sl__conn_accept(w, listener, (sl__proto)p);
}

static void close_handle(uv_handle_t *h) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void close_walk(uv_handle_t *h, void *arg) {
    (void)arg;
    close_handle(h);
}

static void stop_store(sl__worker *w) {
    /* calls still in flight are answered by their fail modes */
    sl__decider_free(w->decider);
    w->decider = NULL;
}

static int start_store(sl__worker *w) {
    w->decider = sl__engine_worker_new(w->server->engine, &w->loop, w->id, &w->policies);
    return w->decider ? 0 : -1;
}

static void close_dups(sl__worker *w) {
    for (int p = 0; p < SL__PROTO_COUNT; p++) {
        if (w->listen_dup[p] >= 0) close(w->listen_dup[p]);
        w->listen_dup[p] = -1;
    }
    if (w->spare_fd >= 0) close(w->spare_fd);
    w->spare_fd = -1;
}

void sl__worker_finish(sl__worker *w) {
    stop_store(w);
    sl__hold_close(w->hold); /* its connections are closed: nothing is held */
    close_handle((uv_handle_t *)&w->accept_timer);
    close_handle((uv_handle_t *)&w->yield_idle);
    close_handle((uv_handle_t *)&w->wake);
    close_handle((uv_handle_t *)&w->tick);
    close_handle((uv_handle_t *)&w->drain_timer);
}

static void on_drain_deadline(uv_timer_t *t) {
    sl__worker *w = t->data;
    if (w->connections)
        sl__log_warn("worker %u: closing %u connections at the drain deadline", w->id,
                     w->connections);
    sl__conn_close_all(w);
    if (w->connections == 0) sl__worker_finish(w);
}

static void start_drain(sl__worker *w) {
    w->draining = true;
    for (int p = 0; p < SL__PROTO_COUNT; p++)
        if (w->listening[p] && w->listen_state[p] == SL__LISTEN_OPEN)
            close_handle((uv_handle_t *)&w->listeners[p]);
    uv_timer_stop(&w->accept_timer);
    close_dups(w);
    sl__log_info("worker %u: draining %u connections", w->id, w->connections);
    sl__conn_drain_all(w);
    if (w->connections == 0) {
        sl__worker_finish(w);
        return;
    }
    int64_t grace_ms = w->server->drain_grace / 1000000;
    uv_timer_start(&w->drain_timer, on_drain_deadline, grace_ms > 0 ? (uint64_t)grace_ms : 1, 0);
}

static void on_wake(uv_async_t *a) {
    sl__worker *w = a->data;
    sl__worker_refresh(w);
    sl__reload_deliver(w); /* before draining: the answers are written, then it closes */
    if (atomic_load(&w->server->draining) && !w->draining) start_drain(w);
}

void *sl__worker_main(void *arg) {
    sl__worker *w = arg;
    sl__server *s = w->server;
    w->read_buf = malloc(SL__READ_BUF_BYTES);
    if (!w->read_buf || uv_loop_init(&w->loop) != 0) {
        w->start_error = -1;
        uv_sem_post(&w->started);
        return NULL;
    }
    w->loop.data = w;
    sl__worker_refresh(w);
    uv_async_init(&w->loop, &w->wake, on_wake);
    w->wake.data = w;
    uv_prepare_init(&w->loop, &w->tick);
    w->tick.data = w;
    uv_prepare_start(&w->tick, on_tick);
    uv_timer_init(&w->loop, &w->drain_timer);
    w->drain_timer.data = w;
    uv_timer_init(&w->loop, &w->accept_timer);
    w->accept_timer.data = w;
    uv_idle_init(&w->loop, &w->yield_idle);
    w->yield_idle.data = w;
    w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    w->hold = sl__hold_new(w->limits.max_held, &w->loop); /* NULL: none held */
    if (start_store(w) != 0) {
        sl__log_error("worker %u: cannot set up its store", w->id);
        w->start_error = -1;
    }
    for (int p = 0; p < SL__PROTO_COUNT; p++) {
        w->listen_dup[p] = -1;
        if (!w->listening[p]) continue;
        w->listen_dup[p] = fcntl(w->listen_fd[p], F_DUPFD_CLOEXEC, 0);
        uv_tcp_init(&w->loop, &w->listeners[p]);
        int rc = uv_tcp_open(&w->listeners[p], w->listen_fd[p]);
        if (rc == 0) rc = uv_listen((uv_stream_t *)&w->listeners[p], 1024, on_connection);
        if (rc != 0) {
            sl__log_error("worker %u: listen: %s", w->id, uv_strerror(rc));
            w->start_error = -1;
        }
    }
    uv_sem_post(&w->started);
    if (!w->start_error) uv_run(&w->loop, UV_RUN_DEFAULT);
    /* close whatever is left (error paths) and let the callbacks run */
    stop_store(w);
    close_dups(w);
    uv_walk(&w->loop, close_walk, NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_loop_close(&w->loop);
    sl__hold_free(w->hold);
    w->hold = NULL;
    if (w->policies) sl__policy_set_release(w->policies);
    if (w->domains) sl__domain_set_release(w->domains);
    w->policies = NULL;
    w->domains = NULL;
    free(w->read_buf);
    (void)s;
    return NULL;
}
