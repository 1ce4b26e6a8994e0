/* reload.c: POST /v1/reload asks the main loop to reload (see reload.h).
 *
 * Threads: a worker queues an ask under the server's ask_lock and signals
 * the main loop's reload_async while still holding it, so that the handle
 * cannot be closed in between (sl__reload_stop closes it under the same
 * lock). The main loop takes every waiting ask at once, reloads once, and
 * puts each ask on its worker's answers list (same lock) before waking that
 * worker; the worker writes the answer into the place it reserved with
 * sl__slot_defer. An ask never outlives its worker: asks are refused and the
 * waiting ones answered before the workers drain. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "sluice/error.h"
#include "server/http/http.h"
#include "server/reload.h"
#include "util/log.h"

struct sl__reload_pending {
    struct sl__reload_pending *next;
    sl__worker *w;   /* the asking worker: the answer is written on its loop */
    sl__deferred *d; /* the answer's place on the connection */
    bool keep;       /* the connection stays open after the answer */
    bool draining;   /* answered by sl__reload_stop: no reload ran */
    sl__reload_result r;
};

/* ---- the main loop ------------------------------------------------------------ */

/* Hands every ask of `list` its answer and wakes the workers that asked. */
static void hand_back(sl__server *s, struct sl__reload_pending *list, const sl__reload_result *r,
                      bool draining) {
    bool wake[SL__MAX_WORKERS] = {false};
    pthread_mutex_lock(&s->ask_lock);
    while (list) {
        struct sl__reload_pending *a = list;
        list = a->next;
        a->r = *r;
        a->draining = draining;
        a->next = a->w->answers;
        a->w->answers = a;
        wake[a->w->id] = true;
    }
    pthread_mutex_unlock(&s->ask_lock);
    for (unsigned i = 0; i < s->nworkers; i++)
        if (wake[i]) uv_async_send(&s->workers[i].wake);
}

static struct sl__reload_pending *take_asks(sl__server *s) {
    pthread_mutex_lock(&s->ask_lock);
    struct sl__reload_pending *list = s->asks;
    s->asks = NULL;
    s->nasks = 0;
    pthread_mutex_unlock(&s->ask_lock);
    return list;
}

/* One reload for all the asks that are waiting now; asks that come while it
 * runs signal the handle again and get the next one (they may have been
 * sent after the file changed again). */
static void on_asks(uv_async_t *h) {
    sl__server *s = h->data;
    struct sl__reload_pending *list = take_asks(s);
    if (!list) return;
    sl__reload_result *r = malloc(sizeof *r);
    if (!r) {
        static const sl__reload_result oom = {.rc = SL_ENOMEM, .message = "out of memory"};
        hand_back(s, list, &oom, false);
        return;
    }
    unsigned n = 0;
    for (struct sl__reload_pending *a = list; a; a = a->next) n++;
    sl__log_debug("reload asked over HTTP by %u request(s)", n);
    sl__server_reload(s, r);
    hand_back(s, list, r, false);
    free(r);
}

int sl__reload_init(sl__server *s, uv_loop_t *main_loop) {
    pthread_mutex_init(&s->ask_lock, NULL);
    s->asks = NULL;
    s->nasks = 0;
    s->asks_closed = false;
    int rc = uv_async_init(main_loop, &s->reload_async, on_asks);
    if (rc != 0) return rc;
    s->reload_async.data = s;
    s->reload_async_open = true;
    return 0;
}

void sl__reload_stop(sl__server *s) {
    if (!s->reload_async_open) return;
    pthread_mutex_lock(&s->ask_lock);
    s->asks_closed = true;
    pthread_mutex_unlock(&s->ask_lock);
    struct sl__reload_pending *list = take_asks(s);
    static const sl__reload_result none = {.rc = SL_EINVAL, .message = "sluiced is shutting down"};
    if (list) hand_back(s, list, &none, true);
    uv_close((uv_handle_t *)&s->reload_async, NULL);
    s->reload_async_open = false;
}

/* ---- the workers --------------------------------------------------------------- */

static void answer_now(sl__buf *out, bool keep, int status, const char *code, const char *message,
                       const char *extra_name, const char *extra_value) {
    sl__buf body;
    sl__buf_init(&body);
    sl__http_error_json(&body, code, message);
    sl__http_begin(out, status);
    if (extra_name) sl__http_header_line(out, extra_name, extra_value);
    sl__http_end(out, keep, "application/json", body.data, body.len);
    sl__buf_free(&body);
}

static bool is_loopback(const struct sockaddr_storage *ss) {
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)ss;
        return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a)) return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}

bool sl__slot_loopback(sl__answer_slot *slot) {
    struct sockaddr_storage peer;
    return slot && sl__slot_peer(slot, &peer) == 0 && is_loopback(&peer);
}

/* Compares in time that depends only on the configured token's length. */
static bool same_token(const char *given, size_t len, const char *want) {
    size_t n = strlen(want);
    unsigned char diff = len != n;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(want[i] ^ (i < len ? given[i] : 0));
    return diff == 0;
}

bool sl__reload_allowed(sl__worker *w, sl__answer_slot *slot, const sl__http_request *req,
                        bool keep, sl__buf *out, const char *what) {
    const sl__admin_config *ac = &w->admin;
    if (ac->reload == SL__RELOAD_OFF) {
        char msg[160];
        if (strcmp(what, "POST /v1/reload") == 0)
            snprintf(msg, sizeof msg,
                     "reloading over HTTP is turned off (admin.reload: off); send SIGHUP");
        else
            snprintf(msg, sizeof msg, "%s over HTTP is turned off (admin.reload: off)", what);
        answer_now(out, keep, 403, "reload_disabled", msg, NULL, NULL);
        return false;
    }
    if (ac->reload == SL__RELOAD_TOKEN) {
        const sl__http_field *h = sl__http_header(req, "Authorization");
        static const char scheme[] = "Bearer ";
        size_t sn = sizeof scheme - 1;
        if (h && h->value_len > sn && strncasecmp(h->value, scheme, sn) == 0 &&
            same_token(h->value + sn, h->value_len - sn, ac->reload_token))
            return true;
        char msg[160];
        snprintf(msg, sizeof msg, "%s needs Authorization: Bearer <admin.reload_token>", what);
        answer_now(out, keep, 401, "unauthorized", msg, "WWW-Authenticate",
                   "Bearer realm=\"sluiced admin\"");
        return false;
    }
    if (sl__slot_loopback(slot)) return true;
    char msg[200];
    snprintf(msg, sizeof msg,
             "only clients on loopback may %s (admin.reload: loopback; see "
             "docs/configuration.md)",
             strcmp(what, "POST /v1/reload") == 0 ? "reload" : what);
    answer_now(out, keep, 403, "forbidden", msg, NULL, NULL);
    return false;
}

bool sl__reload_ask(sl__worker *w, sl__answer_slot *slot, const sl__http_request *req, bool keep,
                    sl__buf *out) {
    sl__server *s = w->server;
    if (!sl__reload_allowed(w, slot, req, keep, out, "POST /v1/reload")) return false;
    struct sl__reload_pending *a = calloc(1, sizeof *a);
    if (!a) {
        answer_now(out, keep, 500, "internal", "out of memory", NULL, NULL);
        return false;
    }
    a->w = w;
    a->keep = keep;
    pthread_mutex_lock(&s->ask_lock);
    const char *refused = s->asks_closed                    ? "draining"
                          : s->nasks >= SL__RELOAD_MAX_ASKS ? "reload_busy"
                                                            : NULL;
    if (!refused && !(a->d = sl__slot_defer(slot))) refused = "internal";
    if (refused) {
        pthread_mutex_unlock(&s->ask_lock);
        free(a);
        if (strcmp(refused, "internal") == 0)
            answer_now(out, keep, 500, "internal", "out of memory", NULL, NULL);
        else if (strcmp(refused, "draining") == 0)
            answer_now(out, keep, 503, "draining", "sluiced is shutting down", NULL, NULL);
        else
            answer_now(out, keep, 503, "reload_busy",
                       "too many reloads are waiting; try again later", "Retry-After", "1");
        return false;
    }
    a->next = s->asks;
    s->asks = a;
    s->nasks++;
    uv_async_send(&s->reload_async); /* under the lock: the handle is open */
    pthread_mutex_unlock(&s->ask_lock);
    return true;
}

static void write_answer(sl__buf *out, const struct sl__reload_pending *a) {
    if (a->draining) {
        answer_now(out, a->keep, 503, "draining", a->r.message, NULL, NULL);
        return;
    }
    if (a->r.rc != 0) {
        answer_now(out, a->keep, 500, "reload_failed", a->r.message, NULL, NULL);
        return;
    }
    sl__buf body;
    sl__buf_init(&body);
    sl__buf_printf(&body,
                   "{\"reloaded\":true,\"policies\":%zu,\"added\":%zu,\"removed\":%zu,"
                   "\"changed\":%zu,\"kept\":%zu}",
                   a->r.policies, a->r.added, a->r.removed, a->r.changed, a->r.kept);
    sl__http_begin(out, 200);
    sl__http_end(out, a->keep, "application/json", body.data, body.len);
    sl__buf_free(&body);
}

void sl__reload_deliver(sl__worker *w) {
    sl__server *s = w->server;
    pthread_mutex_lock(&s->ask_lock);
    struct sl__reload_pending *list = w->answers;
    w->answers = NULL;
    pthread_mutex_unlock(&s->ask_lock);
    while (list) {
        struct sl__reload_pending *a = list;
        list = a->next;
        write_answer(sl__deferred_out(a->d), a);
        sl__deferred_done(a->d);
        free(a);
    }
}
