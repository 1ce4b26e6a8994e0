/* redis_client.c: a worker's asynchronous Redis connections (see
 * redis_client.h): hiredis async contexts on the worker's libuv loop, call
 * deadlines, a circuit breaker per node, and Redis Cluster routing (slot
 * map, MOVED, ASK, refresh after failures).
 *
 * Lifetimes: a call is referenced by the list of calls in flight (until its
 * function has been called) and by each hiredis callback that carries it
 * (until hiredis calls back: with a reply, or with NULL when the context is
 * freed). It is freed when both are gone, so a call that timed out can still
 * receive its late reply harmlessly. */
#include "store/redis_client.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis_cluster.h"
#include "util/counter.h"
#include "util/log.h"
#include "util/units.h"

#define MAX_NODES        SL__CLUSTER_MAX_NODES
#define MAX_REDIRECTS    5
#define MAINT_MS         50   /* housekeeping period: reconnects, probes, health */
#define RECONNECT_MIN_MS 50   /* a node that just failed to connect is not retried sooner */
#define REFRESH_MIN_MS   100  /* CLUSTER SLOTS at most this often */
#define REFRESH_IDLE_MS  5000 /* and at least this often in cluster mode */
#define DRAIN_READS      16   /* reads of a socket before calls in it time out */
#define STARTUP_WAIT_MS  2000 /* a node's first connection: calls wait this long for it */

enum { CLOSED, OPEN, HALF_OPEN };

typedef struct node {
    sl__redis *r;
    char host[SL__REDIS_HOST_MAX + 1];
    uint16_t port;
    redisAsyncContext *ac; /* NULL: not connected */
    bool connected;        /* the connect callback said yes */
    bool failed;           /* the last connection attempt or connection failed */
    bool drop;             /* close the connection at the next housekeeping */
    bool ever_ready;       /* a connection of it has answered its preamble once */
    unsigned ready_marks;  /* PINGs that end a preamble, not answered yet */
    bool in_map;           /* cluster: serves slots in the current map (single node: true) */
    uint64_t next_connect; /* uv_now ms */
    uint64_t ready_by;     /* first connection: calls sent before it is ready wait until then */
    /* breaker */
    int state;
    unsigned failures;      /* failed calls since the last success */
    uint64_t first_failure; /* uv_now ms of the first of them */
    uint64_t last_failure;  /* and of the last */
    uint64_t open_until;
    bool probe_out;
    int has_command; /* the answer to COMMAND INFO <r->probe_command>: -1 not yet, 0 no, 1 yes */
} node;

typedef struct call {
    struct call *prev, *next; /* calls whose function is still to be called */
    sl__redis *r;
    node *n; /* where it was last sent (NULL: waiting for the slot map) */
    sl__redis_reply_fn fn;
    void *arg;
    uint64_t deadline; /* uv_now ms */
    uint64_t started;  /* uv_hrtime ns */
    unsigned slot;
    int redirects;
    int refs; /* hiredis callbacks that carry it, plus 1 while in the list */
    bool probe;
    size_t len;
    char cmd[];
} call;

struct sl__redis {
    uv_loop_t *loop;
    const sl__redis_config *cfg;
    sl__redis_stats *stats;
    uv_timer_t deadline_timer, maint_timer;
    int open_handles;
    bool freeing;
    call *head, *tail; /* in flight, oldest first */
    node *nodes[MAX_NODES];
    size_t nnodes;
    /* cluster */
    node *slot_node[SL__CLUSTER_SLOTS];
    bool map_known, refreshing, refresh_wanted;
    uint64_t last_refresh;
    uint64_t startup_by; /* uv_now ms: calls wait this long for the first slot map */
    size_t refresh_rr;
    uint64_t replies; /* hiredis callbacks of calls so far (progress of reads) */
    char *preamble;   /* sent first on every connection */
    size_t preamble_len;
    char probe_command[32]; /* "": none (sl__redis_probe_command) */
};

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* ---- hiredis on libuv ------------------------------------------------------
 * hiredis's own adapters/libuv.h (0.14) ignores poll errors, so a refused
 * connect is never noticed (and every call would wait for its timeout).
 * This adapter is the same, except that an error is handed to hiredis as
 * readiness: its read or write then finds the error and fails the
 * connection at once. */

typedef struct uv_events {
    redisAsyncContext *ac;
    uv_poll_t poll;
    int events;
} uv_events;

static void uv_on_poll(uv_poll_t *h, int status, int events) {
    uv_events *p = h->data;
    if (status < 0) events = p->events; /* let hiredis meet the error */
    if (p->ac && (events & UV_WRITABLE)) redisAsyncHandleWrite(p->ac);
    if (p->ac && (events & UV_READABLE)) redisAsyncHandleRead(p->ac);
}

static void uv_update(uv_events *p, int add, int del) {
    p->events = (p->events | add) & ~del;
    if (p->events)
        uv_poll_start(&p->poll, p->events, uv_on_poll);
    else
        uv_poll_stop(&p->poll);
}

static void uv_add_read(void *d) {
    uv_update(d, UV_READABLE, 0);
}
static void uv_del_read(void *d) {
    uv_update(d, 0, UV_READABLE);
}
static void uv_add_write(void *d) {
    uv_update(d, UV_WRITABLE, 0);
}
static void uv_del_write(void *d) {
    uv_update(d, 0, UV_WRITABLE);
}

static void uv_on_close(uv_handle_t *h) {
    free(h->data);
}

static void uv_cleanup(void *d) {
    uv_events *p = d;
    p->ac = NULL;
    uv_close((uv_handle_t *)&p->poll, uv_on_close);
}

static int uv_attach(redisAsyncContext *ac, uv_loop_t *loop) {
    if (ac->ev.data) return REDIS_ERR;
    uv_events *p = calloc(1, sizeof *p);
    if (!p) return REDIS_ERR;
    if (uv_poll_init(loop, &p->poll, ac->c.fd) != 0) {
        free(p);
        return REDIS_ERR;
    }
    p->ac = ac;
    p->poll.data = p;
    ac->ev.data = p;
    ac->ev.addRead = uv_add_read;
    ac->ev.delRead = uv_del_read;
    ac->ev.addWrite = uv_add_write;
    ac->ev.delWrite = uv_del_write;
    ac->ev.cleanup = uv_cleanup;
    return REDIS_OK;
}
static void send_call(call *c, node *n, bool asking);
static void refresh_slots(sl__redis *r);
static void on_deadline(uv_timer_t *t);

/* ---- the list of calls in flight, and their deadlines ------------------- */

static void arm_deadline(sl__redis *r) {
    if (r->freeing) return;
    if (!r->head) {
        uv_timer_stop(&r->deadline_timer);
        return;
    }
    uint64_t now = uv_now(r->loop);
    uint64_t d = r->head->deadline;
    uv_timer_start(&r->deadline_timer, on_deadline, d > now ? d - now : 0, 0);
}

/* Inserts c by deadline (almost always at the tail: every call has the
 * same timeout, except those waiting for a node's first connection). */
static void list_insert(sl__redis *r, call *c) {
    call *after = r->tail;
    while (after && after->deadline > c->deadline) after = after->prev;
    c->prev = after;
    c->next = after ? after->next : r->head;
    if (c->next)
        c->next->prev = c;
    else
        r->tail = c;
    if (after)
        after->next = c;
    else
        r->head = c;
    if (r->head == c) arm_deadline(r);
}

static void list_push(sl__redis *r, call *c) {
    c->refs++;
    list_insert(r, c);
}

static void list_remove(sl__redis *r, call *c) {
    bool was_head = r->head == c;
    if (c->prev)
        c->prev->next = c->next;
    else
        r->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        r->tail = c->prev;
    c->prev = c->next = NULL;
    if (was_head) arm_deadline(r);
}

static bool in_list(const call *c) {
    return c->fn != NULL;
}

/* Moves c's deadline later (it stays in the list). */
static void extend_deadline(sl__redis *r, call *c, uint64_t deadline) {
    if (deadline <= c->deadline) return;
    list_remove(r, c);
    c->deadline = deadline;
    list_insert(r, c);
}

static void unref(call *c) {
    if (--c->refs == 0) free(c);
}

/* ---- breaker -------------------------------------------------------------- */

static void breaker_success(node *n) {
    if (n->state != CLOSED) {
        atomic_fetch_sub(&n->r->stats->breaker_open, 1);
        sl__log_info("redis %s:%u: reachable again, circuit breaker closed", n->host, n->port);
    }
    n->state = CLOSED;
    n->failures = 0;
    n->probe_out = false;
}

/* A failed call. The breaker opens on sustained failure only: at least
 * breaker_failures failures with no success in between, spanning at least
 * breaker_window. Calls that time out together in one stall of Redis (or
 * of this machine) fail within a few ms of each other and do not open it.
 * A failure a whole window after the last one (no calls meanwhile) starts
 * a new streak: two stalls far apart are not one failure. */
static void breaker_failure(node *n) {
    sl__redis *r = n->r;
    uint64_t now = uv_now(r->loop);
    uint64_t window = (uint64_t)(r->cfg->breaker_window / 1000000);
    if (n->failures > 0 && window > 0 && now - n->last_failure > window) n->failures = 0;
    if (n->failures++ == 0) n->first_failure = now;
    n->last_failure = now;
    bool sustained = n->failures >= r->cfg->breaker_failures && now - n->first_failure >= window;
    if (n->state == HALF_OPEN || (n->state == CLOSED && sustained)) {
        if (n->state == CLOSED) {
            atomic_fetch_add(&r->stats->breaker_open, 1);
            sl__log_warn("redis %s:%u: %u failures over %llu ms without a success, circuit "
                         "breaker open for %lld ms",
                         n->host, n->port, n->failures,
                         (unsigned long long)(now - n->first_failure),
                         (long long)(r->cfg->breaker_cooldown / 1000000));
        }
        n->state = OPEN;
        n->probe_out = false;
        n->open_until = now + (uint64_t)(r->cfg->breaker_cooldown / 1000000);
        n->drop = n->ac != NULL; /* a hung connection's queue is thrown away */
    }
}

/* May a call go to n now? Marks the probe when the breaker is half open. */
static bool breaker_admits(node *n, bool *probe) {
    *probe = false;
    if (n->state == CLOSED) return true;
    uint64_t now = uv_now(n->r->loop);
    if (n->state == OPEN && now >= n->open_until) n->state = HALF_OPEN;
    if (n->state == HALF_OPEN && !n->probe_out) {
        n->probe_out = true;
        *probe = true;
        return true;
    }
    return false;
}

/* ---- finishing calls ------------------------------------------------------ */

static void finish(call *c, const redisReply *reply, int status) {
    sl__redis *r = c->r;
    if (!in_list(c)) return;
    list_remove(r, c);
    sl__redis_reply_fn fn = c->fn;
    c->fn = NULL;
    switch (status) {
    case SL__REDIS_OK:
        sl__counter_add(&r->stats->ok, 1);
        sl__counter_add(&r->stats->latency_sum_us, (uv_hrtime() - c->started) / 1000);
        break;
    case SL__REDIS_ETIMEOUT:
        sl__counter_add(&r->stats->timeouts, 1);
        break;
    case SL__REDIS_EOPEN:
        sl__counter_add(&r->stats->rejected_open, 1);
        break;
    default:
        sl__counter_add(&r->stats->errors, 1);
    }
    if (c->n) {
        if (status == SL__REDIS_OK)
            breaker_success(c->n);
        else if (status == SL__REDIS_ETIMEOUT || status == SL__REDIS_EIO)
            breaker_failure(c->n);
        else if (c->probe)
            c->n->probe_out = false;
    }
    if (status != SL__REDIS_OK && r->cfg->cluster) r->refresh_wanted = true;
    fn(c->arg, reply, status);
    unref(c);
}

static void on_deadline(uv_timer_t *t) {
    sl__redis *r = t->data;
    /* libuv runs timers before it polls: after this loop was held up (a
     * busy machine), replies may be waiting unread in the sockets. They
     * are read first, so that only calls Redis has not answered time out. */
    for (size_t i = 0; i < r->nnodes && !r->freeing; i++) {
        node *n = r->nodes[i];
        /* (hiredis reads 16 KB at a time: a few reads, while it finds some) */
        for (int k = 0; k < DRAIN_READS; k++) {
            if (!n->ac || !n->connected || !r->head || r->head->deadline > uv_now(r->loop)) break;
            uint64_t before = r->replies;
            redisAsyncHandleRead(n->ac);
            if (r->replies == before) break; /* nothing more there */
        }
    }
    uv_update_time(r->loop);
    uint64_t now = uv_now(r->loop);
    while (r->head && r->head->deadline <= now) finish(r->head, NULL, SL__REDIS_ETIMEOUT);
    arm_deadline(r);
}

/* ---- connections ------------------------------------------------------------ */

static void on_connect(const redisAsyncContext *ac, int status) {
    node *n = ac->data;
    if (!n) return;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this (its calls get NULL replies) */
        if (!n->failed)
            sl__log_warn("redis %s:%u: cannot connect: %s", n->host, n->port, ac->errstr);
        n->ac = NULL;
        n->connected = false;
        n->failed = true;
        n->next_connect = uv_now(n->r->loop) + RECONNECT_MIN_MS;
        return;
    }
    if (n->failed) sl__log_info("redis %s:%u: connected", n->host, n->port);
    n->connected = true;
    n->failed = false;
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    node *n = ac->data;
    if (!n) return;
    if (status != REDIS_OK && !n->r->freeing)
        sl__log_warn("redis %s:%u: connection lost: %s", n->host, n->port,
                     ac->errstr[0] ? ac->errstr : "closed");
    n->ac = NULL;
    n->connected = false;
    n->failed = status != REDIS_OK;
    n->next_connect = uv_now(n->r->loop) + RECONNECT_MIN_MS;
    if (n->r->cfg->cluster) n->r->refresh_wanted = true;
}

static void ignore_reply(redisAsyncContext *ac, void *reply, void *privdata) {
    (void)ac;
    (void)privdata;
    const redisReply *rep = reply;
    if (rep && rep->type == REDIS_REPLY_ERROR) sl__log_warn("redis: %s", rep->str);
}

/* The answer to the last command of a connection's preamble: the node is
 * ready (connected, authenticated, script loaded). privdata: the node
 * (nodes live as long as the client). */
static void on_ready(redisAsyncContext *ac, void *reply, void *privdata) {
    ignore_reply(ac, reply, NULL);
    node *n = privdata;
    if (--n->ready_marks == 0 && reply) n->ever_ready = true;
}

/* The answer to COMMAND INFO <probe_command> on n's connection: an array
 * of one nil when the server lacks the command. A connection lost before
 * it answers leaves the last answer. */
static void on_probe_reply(redisAsyncContext *ac, void *reply, void *privdata) {
    (void)ac;
    node *n = privdata;
    const redisReply *rep = reply;
    if (!rep) return;
    n->has_command = rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 && rep->element[0] &&
                     rep->element[0]->type == REDIS_REPLY_ARRAY;
}

/* Ends what was sent on n's connection so far with a PING whose answer
 * marks the node ready (only until it has been once). */
static void mark_ready_after(node *n) {
    if (n->ever_ready || !n->ac) return;
    if (redisAsyncCommand(n->ac, on_ready, n, "PING") == REDIS_OK) n->ready_marks++;
}

/* How long calls wait for a node's first connection: STARTUP_WAIT_MS, or
 * the timeout when that is longer. */
static uint64_t startup_wait(const sl__redis_config *cfg) {
    uint64_t t = (uint64_t)sl__ceil_ms(cfg->timeout);
    return t > STARTUP_WAIT_MS ? t : STARTUP_WAIT_MS;
}

/* Opens n's connection if it has none (and may have one now). */
static bool ensure_connected(node *n) {
    if (n->ac) return true;
    sl__redis *r = n->r;
    if (r->freeing || uv_now(r->loop) < n->next_connect) return false;
    const sl__redis_config *cfg = r->cfg;
    redisAsyncContext *ac = !cfg->cluster && cfg->unix_path[0]
                                ? redisAsyncConnectUnix(cfg->unix_path)
                                : redisAsyncConnect(n->host, n->port);
    sl__counter_add(&r->stats->reconnects, 1);
    if (!ac) return false;
    if (ac->err) {
        if (!n->failed)
            sl__log_warn("redis %s:%u: cannot connect: %s", n->host, n->port, ac->errstr);
        redisAsyncFree(ac);
        n->failed = true;
        n->next_connect = uv_now(r->loop) + RECONNECT_MIN_MS;
        return false;
    }
    if (uv_attach(ac, r->loop) != REDIS_OK) {
        redisAsyncFree(ac);
        return false;
    }
    ac->data = n;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    n->ac = ac;
    n->connected = false;
    /* sent ahead of every call on this connection (pipelined, in order) */
    if (cfg->password[0]) {
        if (cfg->user[0])
            redisAsyncCommand(ac, ignore_reply, NULL, "AUTH %s %s", cfg->user, cfg->password);
        else
            redisAsyncCommand(ac, ignore_reply, NULL, "AUTH %s", cfg->password);
    }
    if (!cfg->cluster && cfg->db) redisAsyncCommand(ac, ignore_reply, NULL, "SELECT %u", cfg->db);
    if (r->preamble)
        redisAsyncFormattedCommand(ac, ignore_reply, NULL, r->preamble, r->preamble_len);
    if (r->probe_command[0])
        redisAsyncCommand(ac, on_probe_reply, n, "COMMAND INFO %s", r->probe_command);
    if (!n->ever_ready) {
        /* the first connection (a PING marks the end of its preamble); at
         * startup, calls wait for it rather than time out while Redis loads
         * the script */
        mark_ready_after(n);
        uint64_t now = uv_now(r->loop);
        if (!n->ready_by && now < r->startup_by) n->ready_by = now + startup_wait(cfg);
    }
    return true;
}

static void drop_connection(node *n) {
    redisAsyncContext *ac = n->ac;
    n->drop = false;
    if (!ac) return;
    n->ac = NULL;
    n->connected = false;
    /* every callback it still holds is called with NULL now */
    redisAsyncFree(ac);
}

static node *node_get(sl__redis *r, const char *host, uint16_t port) {
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i]->port == port && strcmp(r->nodes[i]->host, host) == 0) return r->nodes[i];
    if (r->nnodes == MAX_NODES) return NULL;
    node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->has_command = -1;
    n->r = r;
    snprintf(n->host, sizeof n->host, "%s", host);
    n->port = port;
    n->state = CLOSED;
    n->in_map = !r->cfg->cluster;
    r->nodes[r->nnodes++] = n;
    return n;
}

/* ---- sending ---------------------------------------------------------------- */

static void send_call(call *c, node *n, bool asking) {
    bool probe;
    c->n = n;
    if (!breaker_admits(n, &probe)) {
        finish(c, NULL, SL__REDIS_EOPEN);
        return;
    }
    c->probe = c->probe || probe;
    if (!ensure_connected(n)) {
        finish(c, NULL, SL__REDIS_EIO);
        return;
    }
    if (!n->ever_ready && n->ready_by) extend_deadline(n->r, c, n->ready_by);
    if (asking) redisAsyncCommand(n->ac, NULL, NULL, "ASKING");
    c->refs++;
    if (redisAsyncFormattedCommand(n->ac, on_reply, c, c->cmd, c->len) != REDIS_OK) {
        c->refs--;
        finish(c, NULL, SL__REDIS_EIO);
    }
}

static void dispatch(call *c) {
    sl__redis *r = c->r;
    if (!r->cfg->cluster) {
        send_call(c, r->nodes[0], false);
        return;
    }
    node *n = r->map_known ? r->slot_node[c->slot] : NULL;
    if (n) {
        send_call(c, n, false);
        return;
    }
    /* no map yet (or no node for the slot): wait for a refresh, within the
     * deadline (at startup: until the first connection's wait is over) */
    c->n = NULL;
    if (!r->map_known) extend_deadline(r, c, r->startup_by);
    r->refresh_wanted = true;
    refresh_slots(r);
}

static bool is_redirect(const redisReply *rep) {
    return rep->type == REDIS_REPLY_ERROR && rep->len > 4 &&
           (strncmp(rep->str, "MOVED ", 6) == 0 || strncmp(rep->str, "ASK ", 4) == 0);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata) {
    (void)ac;
    call *c = privdata;
    const redisReply *rep = reply;
    c->r->replies++;
    if (in_list(c)) {
        if (!rep) {
            finish(c, NULL, SL__REDIS_EIO);
        } else if (c->r->cfg->cluster && is_redirect(rep) && c->redirects < MAX_REDIRECTS) {
            sl__redis *r = c->r;
            unsigned slot;
            char host[SL__CLUSTER_HOST_MAX];
            uint16_t port;
            int kind = sl__cluster_redirect(rep->str, rep->len, &slot, host, sizeof host, &port);
            const char *sp = rep->len < 256 ? memchr(rep->str + 4, ' ', rep->len - 4) : NULL;
            sp = sp ? memchr(sp + 1, ' ', rep->len - (size_t)(sp + 1 - rep->str)) : NULL;
            if (!kind && c->n && sp && sp[1] == ':') {
                /* "MOVED 3999 :6381": Redis 7 leaves the host out when it is the
                 * one that was asked */
                char full[320];
                int k =
                    snprintf(full, sizeof full, "%.*s%s%.*s", (int)(sp + 1 - rep->str), rep->str,
                             c->n->host, (int)(rep->len - (size_t)(sp + 1 - rep->str)), sp + 1);
                if (k > 0 && (size_t)k < sizeof full)
                    kind = sl__cluster_redirect(full, (size_t)k, &slot, host, sizeof host, &port);
            }
            node *to = kind ? node_get(r, host, port) : NULL;
            if (!to) {
                finish(c, rep, SL__REDIS_OK); /* an error answer the caller reports */
            } else {
                c->redirects++;
                if (kind == 1) { /* MOVED: the slot lives there now */
                    sl__counter_add(&r->stats->moved, 1);
                    if (slot < SL__CLUSTER_SLOTS) r->slot_node[slot] = to;
                    r->refresh_wanted = true;
                } else {
                    sl__counter_add(&r->stats->ask, 1);
                }
                /* the node answered, so it is healthy */
                if (c->n) breaker_success(c->n);
                send_call(c, to, kind == 2);
            }
        } else {
            finish(c, rep, SL__REDIS_OK);
        }
    }
    unref(c);
}

void sl__redis_call(sl__redis *r, unsigned slot, const char *cmd, size_t len, sl__redis_reply_fn fn,
                    void *arg) {
    call *c = malloc(sizeof *c + len);
    if (!c) {
        fn(arg, NULL, SL__REDIS_EIO);
        return;
    }
    *c = (call){.r = r,
                .fn = fn,
                .arg = arg,
                .deadline = uv_now(r->loop) + (uint64_t)sl__ceil_ms(r->cfg->timeout),
                .started = uv_hrtime(),
                .slot = slot % SL__CLUSTER_SLOTS,
                .len = len};
    memcpy(c->cmd, cmd, len);
    list_push(r, c);
    dispatch(c);
}

/* ---- the cluster's slot map ----------------------------------------------------- */

/* The slots' owners of map m into r->slot_node, and which of r's nodes
 * serve slots (in_map). Returns the slots served. */
static size_t apply_map(sl__redis *r, const sl__cluster_map *m) {
    node *by_index[SL__CLUSTER_MAX_NODES] = {0};
    for (size_t i = 0; i < m->nnodes; i++)
        by_index[i] = node_get(r, m->nodes[i].host, m->nodes[i].port);
    size_t covered = 0;
    bool serves[MAX_NODES] = {0};
    for (unsigned s = 0; s < SL__CLUSTER_SLOTS; s++) {
        int i = m->node[s];
        r->slot_node[s] = i >= 0 && (size_t)i < m->nnodes ? by_index[i] : NULL;
        covered += r->slot_node[s] != NULL;
        if (i >= 0 && (size_t)i < m->nnodes) serves[i] = true;
    }
    for (size_t k = 0; k < r->nnodes; k++) r->nodes[k]->in_map = false;
    for (size_t i = 0; i < m->nnodes; i++)
        if (serves[i] && by_index[i]) by_index[i]->in_map = true;
    return covered;
}

/* A node that left the map (a dead master after its failover) no longer
 * counts: its breaker and health say nothing about the slots' owners,
 * and it is not reconnected. A MOVED or a later map brings it back. */
static void close_unmapped(sl__redis *r) {
    for (size_t k = 0; k < r->nnodes; k++) {
        node *n = r->nodes[k];
        if (n->in_map || n->state == CLOSED) continue;
        atomic_fetch_sub(&r->stats->breaker_open, 1);
        sl__log_info("redis %s:%u: no longer serves slots, its circuit breaker is closed", n->host,
                     n->port);
        n->state = CLOSED;
        n->failures = 0;
        n->probe_out = false;
    }
}

/* The calls that waited for the map go out now, all of them (held by a
 * reference each: sending one may finish others, even free the client). */
static void send_waiting(sl__redis *r) {
    size_t nw = 0;
    for (call *c = r->head; c; c = c->next) nw += !c->n;
    call *small[64];
    /* an array of pointers */
    // NOLINTNEXTLINE(bugprone-sizeof-expression)
    call **waiting = nw <= 64 ? small : malloc(nw * sizeof *waiting);
    if (!waiting) { /* out of memory: the first ones now, the rest at their deadline */
        waiting = small;
        nw = 64;
    }
    size_t k = 0;
    for (call *c = r->head; c && k < nw; c = c->next)
        if (!c->n) {
            c->refs++;
            waiting[k++] = c;
        }
    for (size_t i = 0; i < k; i++) {
        call *c = waiting[i];
        node *n = r->slot_node[c->slot];
        if (in_list(c) && !c->n && !r->freeing) {
            if (n)
                send_call(c, n, false);
            else
                finish(c, NULL, SL__REDIS_ENOSLOT);
        }
        unref(c);
    }
    if (waiting != small) free(waiting);
}

static void on_slots(redisAsyncContext *ac, void *reply, void *privdata) {
    sl__redis *r = privdata;
    const redisReply *rep = reply;
    node *from = ac->data;
    r->refreshing = false;
    if (r->freeing) return;
    sl__cluster_map *m = malloc(sizeof *m);
    char err[128] = "";
    if (!rep || !m) {
        free(m);
        return;
    }
    sl__cluster_map_init(m);
    if (sl__cluster_map_from_slots(m, rep, from ? from->host : "127.0.0.1", err, sizeof err) != 0) {
        sl__log_warn("redis cluster: unusable CLUSTER SLOTS answer: %s", err);
        free(m);
        return;
    }
    size_t covered = apply_map(r, m);
    free(m);
    close_unmapped(r);
    bool first = !r->map_known;
    r->map_known = true;
    sl__counter_add(&r->stats->slot_refreshes, 1);
    if (first && from) /* from is NULL only while freeing (returned above) */
        sl__log_info("redis cluster: slot map from %s:%u, %zu of %u slots served", from->host,
                     from->port, covered, SL__CLUSTER_SLOTS);
    send_waiting(r);
}

static void refresh_slots(sl__redis *r) {
    uint64_t now = uv_now(r->loop);
    if (r->refreshing || r->freeing || r->nnodes == 0) return;
    if (r->last_refresh && now - r->last_refresh < REFRESH_MIN_MS) return;
    /* ask the nodes in turn, connected ones first */
    node *pick = NULL;
    for (size_t k = 0; k < r->nnodes && !pick; k++) {
        node *n = r->nodes[(r->refresh_rr + k) % r->nnodes];
        if (n->connected && n->state == CLOSED) pick = n;
    }
    for (size_t k = 0; k < r->nnodes && !pick; k++) {
        node *n = r->nodes[(r->refresh_rr + k) % r->nnodes];
        if (!n->failed || now >= n->next_connect) pick = n;
    }
    r->refresh_rr++;
    if (!pick || !ensure_connected(pick)) return;
    r->last_refresh = now;
    r->refresh_wanted = false;
    if (redisAsyncCommand(pick->ac, on_slots, r, "CLUSTER SLOTS") == REDIS_OK) r->refreshing = true;
}

/* ---- housekeeping ------------------------------------------------------------------ */

static void probe_done(void *arg, const redisReply *reply, int status) {
    (void)arg;
    (void)reply;
    (void)status;
}

static void on_maint(uv_timer_t *t) {
    sl__redis *r = t->data;
    uint64_t now = uv_now(r->loop);
    int up = 1;
    for (size_t i = 0; i < r->nnodes; i++) {
        node *n = r->nodes[i];
        if (n->drop) drop_connection(n);
        if (!n->in_map && r->map_known) continue; /* not an owner of slots: does not count */
        /* keep a failed node's connection coming back (readiness shows it),
         * and connect to every owner of slots before its first call */
        if (!n->ac && (n->failed || !n->ever_ready) && n->state == CLOSED) ensure_connected(n);
        /* an open breaker with no traffic to probe it: probe it ourselves */
        if (n->state != CLOSED && now >= n->open_until && !n->probe_out) {
            static const char ping[] = "*1\r\n$4\r\nPING\r\n";
            call *c = malloc(sizeof *c + sizeof ping - 1);
            if (c) {
                *c = (call){.r = r,
                            .fn = probe_done,
                            .deadline = now + (uint64_t)sl__ceil_ms(r->cfg->timeout),
                            .started = uv_hrtime(),
                            .len = sizeof ping - 1};
                memcpy(c->cmd, ping, sizeof ping - 1);
                list_push(r, c);
                send_call(c, n, false);
            }
        }
        if (n->state != CLOSED || n->failed || !n->ever_ready) {
            up = 0;
            /* an owner of slots is down: look for its successor (a failover)
             * even without traffic (at most every REFRESH_MIN_MS) */
            if (n->state != CLOSED || n->failed) r->refresh_wanted = true;
        }
    }
    if (r->cfg->cluster) {
        if (!r->map_known) up = 0;
        if (r->refresh_wanted || now - r->last_refresh >= REFRESH_IDLE_MS) refresh_slots(r);
    }
    atomic_store(&r->stats->up, up);
}

/* ---- life ------------------------------------------------------------------------- */

sl__redis *sl__redis_new(uv_loop_t *loop, const sl__redis_config *cfg, sl__redis_stats *stats) {
    sl__redis *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->loop = loop;
    r->cfg = cfg;
    r->stats = stats;
    uv_timer_init(loop, &r->deadline_timer);
    uv_timer_init(loop, &r->maint_timer);
    r->deadline_timer.data = r->maint_timer.data = r;
    r->open_handles = 2;
    uv_update_time(loop);
    r->startup_by = uv_now(loop) + startup_wait(cfg);
    if (cfg->cluster) {
        for (size_t i = 0; i < cfg->nseeds; i++)
            node_get(r, cfg->seeds[i].host, cfg->seeds[i].port);
        refresh_slots(r);
    } else {
        node *n = node_get(r, cfg->unix_path[0] ? cfg->unix_path : cfg->addr.host,
                           cfg->unix_path[0] ? 0 : cfg->addr.port);
        if (n) ensure_connected(n);
    }
    if (r->nnodes == 0) {
        sl__redis_free(r);
        return NULL;
    }
    uv_timer_start(&r->maint_timer, on_maint, MAINT_MS, MAINT_MS);
    return r;
}

void sl__redis_set_preamble(sl__redis *r, const char *cmd, size_t len) {
    char *p = malloc(len);
    if (!p) return;
    memcpy(p, cmd, len);
    free(r->preamble);
    r->preamble = p;
    r->preamble_len = len;
    /* a connection already open gets it too */
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i]->ac) {
            redisAsyncFormattedCommand(r->nodes[i]->ac, ignore_reply, NULL, p, len);
            mark_ready_after(r->nodes[i]);
        }
}

static void on_handle_closed(uv_handle_t *h) {
    sl__redis *r = h->data;
    if (--r->open_handles == 0) {
        for (size_t i = 0; i < r->nnodes; i++) free(r->nodes[i]);
        free(r->preamble);
        free(r);
    }
}

void sl__redis_free(sl__redis *r) {
    if (!r) return;
    r->freeing = true;
    for (size_t i = 0; i < r->nnodes; i++) {
        node *n = r->nodes[i];
        if (n->ac) {
            n->ac->data = NULL;
            drop_connection(n);
        }
    }
    /* finish unlinks the head first */
    // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
    while (r->head) finish(r->head, NULL, SL__REDIS_EIO);
    uv_close((uv_handle_t *)&r->deadline_timer, on_handle_closed);
    uv_close((uv_handle_t *)&r->maint_timer, on_handle_closed);
}

static node *node_for(sl__redis *r, unsigned slot) {
    if (!r->cfg->cluster) return r->nnodes ? r->nodes[0] : NULL;
    return r->map_known ? r->slot_node[slot % SL__CLUSTER_SLOTS] : NULL;
}

bool sl__redis_available(sl__redis *r, unsigned slot) {
    node *n = node_for(r, slot);
    if (!n) return true; /* unknown yet: try */
    return n->state == CLOSED || uv_now(r->loop) >= n->open_until;
}

int sl__redis_has_command(sl__redis *r, unsigned slot) {
    node *n = node_for(r, slot);
    return n ? n->has_command : -1;
}

void sl__redis_probe_command(sl__redis *r, const char *name) {
    snprintf(r->probe_command, sizeof r->probe_command, "%s", name);
    /* a connection already open is asked too, before it counts as ready */
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i]->ac) {
            redisAsyncCommand(r->nodes[i]->ac, on_probe_reply, r->nodes[i], "COMMAND INFO %s",
                              r->probe_command);
            mark_ready_after(r->nodes[i]);
        }
}

uint64_t sl__redis_retry_at(sl__redis *r, unsigned slot) {
    node *n = node_for(r, slot);
    return n && n->state != CLOSED ? n->open_until : 0;
}
