/* worker.c: one worker thread: its libuv loop, its listening sockets, the
 * clock read once per loop tick, picking up reloaded policy sets, and
 * draining on shutdown. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/reload.h"
#include "server/server.h"
#include "sluice/clock.h"
#include "store/batch.h"
#include "store/store.h"
#include "util/log.h"

#define READ_BUF_BYTES (64 * 1024)

int64_t sl__worker_now(sl_worker *w) {
    if (!w->now_valid) {
        w->now = sl_now();
        w->now_valid = true;
    }
    return w->now;
}

void sl__worker_refresh(sl_worker *w) {
    sl_server *s = w->server;
    unsigned g = atomic_load_explicit(&s->generation, memory_order_acquire);
    if (g == w->generation) return;
    pthread_mutex_lock(&s->reload_lock);
    sl_policy_set *next = s->policies;
    sl__policy_set_retain(next);
    sl_domain_set *next_domains = s->domains;
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
    sl_worker *w = h->data;
    w->now_valid = false;
    sl__worker_refresh(w);
}

static void on_connection(uv_stream_t *listener, int status) {
    sl_worker *w = listener->loop->data;
    if (status < 0) {
        sl__log_warn("accept: %s", uv_strerror(status));
        return;
    }
    for (int p = 0; p < SL_PROTO_COUNT; p++)
        if (listener == (uv_stream_t *)&w->listeners[p]) sl__conn_accept(w, listener, (sl_proto)p);
}

static void close_handle(uv_handle_t *h) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void close_walk(uv_handle_t *h, void *arg) {
    (void)arg;
    close_handle(h);
}

static void stop_store(sl_worker *w) {
    /* calls still in flight are answered by their fail modes */
    sl__store_worker_free(w->store);
    w->store = NULL;
    if (w->batch_redis) {
        sl__batch_stop(w->server->batch);
        sl__redis_free(w->batch_redis);
        w->batch_redis = NULL;
    }
}

/* Batched mode: charges what the rest of the fleet consumed to this
 * worker's (the server's) tables; returns the debt to carry. */
static int64_t batch_charge(void *ctx, const char *policy, const char *key, size_t keylen,
                            int64_t n) {
    sl_worker *w = ctx;
    sl_policy *p = w->policies ? sl__policy_find(w->policies, policy, strlen(policy)) : NULL;
    unsigned n_inst = w->server->redis_cfg.expected_instances;
    return p ? sl__policy_charge_shared(p, key, keylen, n, sl__worker_now(w),
                                        n_inst > 1 ? n_inst - 1 : 1)
             : 0;
}

static int start_store(sl_worker *w) {
    sl_server *s = w->server;
    if (!s->redis) return 0;
    if (!s->batch) {
        w->store = sl__store_worker_new(&w->loop, &s->redis_cfg, &w->store_stats, &w->redis_stats);
        return w->store ? 0 : -1;
    }
    if (w->id != 0) { /* only worker 0 talks to Redis in batched mode */
        atomic_store(&w->redis_stats.up, 1);
        return 0;
    }
    w->batch_redis = sl__redis_new(&w->loop, &s->batch_cfg, &w->redis_stats);
    if (!w->batch_redis) return -1;
    sl__store_preamble(w->batch_redis);
    sl_batch_hooks hooks = {.charge = batch_charge, .ctx = w};
    sl__batch_start(s->batch, &w->loop, w->batch_redis, &hooks);
    return 0;
}

void sl__worker_finish(sl_worker *w) {
    stop_store(w);
    close_handle((uv_handle_t *)&w->wake);
    close_handle((uv_handle_t *)&w->tick);
    close_handle((uv_handle_t *)&w->drain_timer);
}

static void on_drain_deadline(uv_timer_t *t) {
    sl_worker *w = t->data;
    if (w->connections)
        sl__log_warn("worker %u: closing %u connections at the drain deadline", w->id,
                     w->connections);
    sl__conn_close_all(w);
    if (w->connections == 0) sl__worker_finish(w);
}

static void start_drain(sl_worker *w) {
    w->draining = true;
    for (int p = 0; p < SL_PROTO_COUNT; p++)
        if (w->listening[p]) close_handle((uv_handle_t *)&w->listeners[p]);
    sl__conn_drain_all(w);
    if (w->connections == 0) {
        sl__worker_finish(w);
        return;
    }
    int64_t grace_ms = w->server->drain_grace / 1000000;
    uv_timer_start(&w->drain_timer, on_drain_deadline, grace_ms > 0 ? (uint64_t)grace_ms : 1, 0);
}

static void on_wake(uv_async_t *a) {
    sl_worker *w = a->data;
    sl__worker_refresh(w);
    sl__reload_deliver(w); /* before draining: the answers are written, then it closes */
    if (atomic_load(&w->server->draining) && !w->draining) start_drain(w);
}

void *sl__worker_main(void *arg) {
    sl_worker *w = arg;
    sl_server *s = w->server;
    w->read_buf = malloc(READ_BUF_BYTES);
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
    if (start_store(w) != 0) {
        sl__log_error("worker %u: cannot set up the Redis store", w->id);
        w->start_error = -1;
    }
    for (int p = 0; p < SL_PROTO_COUNT; p++) {
        if (!w->listening[p]) continue;
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
    uv_walk(&w->loop, close_walk, NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_loop_close(&w->loop);
    if (w->policies) sl__policy_set_release(w->policies);
    if (w->domains) sl__domain_set_release(w->domains);
    w->policies = NULL;
    w->domains = NULL;
    free(w->read_buf);
    (void)s;
    return NULL;
}
