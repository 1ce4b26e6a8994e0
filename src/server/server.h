/* server.h: the one sluiced server instance: configuration, the running
 * policy set (swapped atomically on reload), the worker threads (one libuv
 * loop each), and the counters the metrics page reports. */
#ifndef SLUICE_SERVER_SERVER_H
#define SLUICE_SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "policy/cell.h"
#include "policy/config.h"
#include "policy/decide.h"
#include "policy/domains.h"
#include "policy/policy.h"
#include "server/admin/prom.h"
#include "server/proto.h"
#include "server/request.h"
#include "server/stats.h"
#include "server/reply.h"
#include "util/buf.h"

#define SL__MAX_WORKERS 256
/* The worker's read buffer (sl__worker.read_buf), shared by its connections:
   allocated (worker.c) and offered to every read (conn.c) with this size. */
#define SL__READ_BUF_BYTES (64 * 1024)

enum { SL__LISTEN_OPEN, SL__LISTEN_CLOSING, SL__LISTEN_PAUSED };

struct sl__server;
struct sl__reload_pending;

typedef struct sl__worker {
    struct sl__server *server;
    unsigned id;
    pthread_t thread;
    uv_loop_t loop;
    uv_tcp_t listeners[SL__PROTO_COUNT]; /* by sl__proto */
    bool listening[SL__PROTO_COUNT];
    int listen_fd[SL__PROTO_COUNT]; /* bound by the main thread, opened on this loop */
    sl__limits_config limits;       /* copied from the config at each policy refresh */
    sl__admin_config admin;         /* likewise */
    uv_async_t wake;                /* from the main thread: a new policy set, or drain */
    uv_prepare_t tick;              /* before each poll: forget the clock reading */
    uv_timer_t drain_timer;
    uv_idle_t yield_idle; /* conn.c: connections that used their turn go on next tick */
    void *yielded;        /* their list (conn.c) */
    /* accepting at the file-descriptor limit (worker.c) */
    int spare_fd;                    /* kept open to accept (and refuse) with at EMFILE */
    int listen_dup[SL__PROTO_COUNT]; /* the listening socket, while its handle is paused */
    unsigned char listen_state[SL__PROTO_COUNT]; /* SL__LISTEN_*: open, closing, paused */
    uv_timer_t accept_timer;                     /* reopens paused listeners */
    unsigned refused_tick;                       /* connections refused in this loop tick */
    int64_t now; /* Unix ns, read once per loop tick (sl__worker_now) */
    bool now_valid;
    unsigned generation; /* of the policy set this worker holds */
    sl__policy_set *policies;
    sl__domain_set *domains; /* envoyproxy/ratelimit rules, same generation */
    bool draining;
    unsigned connections;
    void *conns;    /* intrusive list head of open connections (conn.c) */
    char *read_buf; /* SL__READ_BUF_BYTES, shared by the worker's connections for reads */
    sl__worker_stats stats;
    sl__decider *decider;               /* this worker's handle on the engine (its store) */
    struct sl__hold *hold;              /* answers held until their release time (hold.h) */
    struct sl__reload_pending *answers; /* reloads done for this worker's clients (reload.c),
                                      under the server's ask_lock */
    int start_error;                    /* listener setup result, for the main thread */
    uv_sem_t started;
} sl__worker;

typedef struct sl__server {
    sl__config *config;
    char *config_path; /* NULL: the embedded default */
    pthread_mutex_t reload_lock;
    sl__policy_set *policies; /* under reload_lock; workers take it when generation moves */
    sl__domain_set *domains;  /* likewise */
    atomic_uint generation;
    sl__cell *cell;
    unsigned nworkers;
    sl__worker *workers;
    atomic_uint connections; /* open, all workers */
    /* bytes of answers queued on all connections (conn.c: limits.max_pending_output_total) */
    atomic_uint_fast64_t pending_output;
    /* accept() failures: one warning a second at most, with the count since the last one */
    atomic_int_fast64_t accept_warned_at; /* monotonic ns; 0 = never */
    atomic_uint_fast64_t accept_unwarned;
    atomic_bool draining;
    atomic_uint_fast64_t reloads, reload_failures;
    int64_t started_at;
    int64_t drain_grace;                  /* ns, set by sl__server_drain_and_stop */
    uint16_t bound_port[SL__PROTO_COUNT]; /* the ports actually bound (for port 0) */
    sl__engine *engine;                   /* the decision engine for the store (fixed at start) */
    /* reloads asked over HTTP (reload.c): run on the main loop only */
    uv_async_t reload_async; /* on the main loop: asks are waiting */
    bool reload_async_open;
    pthread_mutex_t ask_lock; /* guards asks, nasks, asks_closed and every worker's answers */
    struct sl__reload_pending *asks; /* waiting for the next reload */
    unsigned nasks;
    bool asks_closed; /* shutting down: new asks are refused */
} sl__server;

/* What one reload did (sl__server_reload). */
typedef struct sl__reload_result {
    int rc;             /* 0: the new config runs; < 0 (SL_E*): refused, the old one still runs */
    char message[2048]; /* rc < 0: why (the config's errors, "; "-separated) */
    size_t policies;    /* rc 0: policies (and tier variants) now running */
    size_t added, removed, changed, kept; /* rc 0: against the previous set; `changed`
                                             and `added` start with fresh state */
} sl__reload_result;

/* Creates the server for a loaded config (takes ownership of cfg), binds
 * the listeners on every worker and starts the threads. `main_loop` is the
 * loop of the calling (main) thread: the only one that ever reloads; it
 * must run until sl__server_drain_and_stop. Returns 0, or a negative SL_E*
 * (SL_ENOMEM, or SL_EINVAL: a config or listener refused) with the reason logged. */
int sl__server_start(sl__server *s, sl__config *cfg, const char *config_path, uv_loop_t *main_loop);

/* Reloads the config file (or re-reads the embedded default) and swaps in a
 * new policy set; logs what changed. Main thread only (SIGHUP, and the asks
 * of POST /v1/reload through reload.c): workers never parse a config.
 * Returns r->rc; when < 0 the running config is untouched. */
int sl__server_reload(sl__server *s, sl__reload_result *r);

/* Stops accepting, lets open requests finish (at most `grace` ns), joins
 * the workers and frees everything. Main thread, with its loop stopped;
 * reloads still waiting are answered 503 first. */
void sl__server_drain_and_stop(sl__server *s, int64_t grace);

/* The worker's clock for this loop tick (Unix ns). */
int64_t sl__worker_now(sl__worker *w);

/* Takes the newest policy set if a reload happened (at each tick, and before
 * each input a connection handles): one atomic load when nothing changed. */
void sl__worker_take_policies(sl__worker *w);
static inline void sl__worker_refresh(sl__worker *w) {
    if (atomic_load_explicit(&w->server->generation, memory_order_acquire) != w->generation)
        sl__worker_take_policies(w);
}

/* The worker thread's body (worker.c); sl__worker_finish closes the
 * worker's own handles once it is draining and has no connection left. */
void *sl__worker_main(void *arg);
void sl__worker_finish(sl__worker *w);

/* The connection layer (conn.c). */
void sl__conn_accept(sl__worker *w, uv_stream_t *listener, sl__proto proto);
void sl__conn_drain_all(sl__worker *w);
void sl__conn_close_all(sl__worker *w);

/* The admin pages' handle on w (request.h): the worker itself, opaque to
 * the protocols; only src/server/admin/ turns it back. */
static inline sl__admin *sl__worker_admin(sl__worker *w) {
    return (sl__admin *)(void *)w;
}
static inline sl__worker *sl__admin_worker(sl__admin *a) {
    return (sl__worker *)(void *)a;
}

#endif
