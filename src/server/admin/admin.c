/* admin.c: the admin pages' handle (admin.h) turned back into the worker
 * the request came to, for the pages that read the whole server. */
#include "server/admin/admin.h"

#include <string.h>

#include "policy/ramp.h"
#include "server/http/http.h"
#include "server/http/http_ops.h"
#include "server/reload.h"
#include "server/server.h"
#include "sluice/clock.h"
#include "util/log.h"

bool sl__admin_draining(sl__admin *a) {
    return a && sl__admin_worker(a)->draining;
}

/* Ready: not draining, and with the Redis store, Redis reachable from every
 * worker (no breaker open). Answers go on while Redis is down (the fail
 * modes decide), but a load balancer or orchestrator should know. */
int sl__admin_ready(sl__admin *a, sl__buf *body) {
    sl__worker *w = sl__admin_worker(a);
    if (w->draining) {
        sl__buf_puts(body, "{\"status\":\"draining\"}");
        return 503;
    }
    sl__server *s = w->server;
    sl__engine_report es;
    sl__engine_stats(s->engine, s->nworkers, &es);
    if (!es.redis) {
        sl__buf_puts(body, "{\"status\":\"ready\",\"store\":\"memory\"}");
        return 200;
    }
    int up = es.up && !es.module_missing, open = es.breakers_open;
    /* decide: how the workers' latest decision calls reached Redis
       (store.redis.module): "module" (SLUICE.DECIDE), "script" (EVALSHA),
       "mixed" (some workers each), "missing" (module: require, and Redis
       lacks it) */
    const char *via = es.module_missing                 ? "missing"
                      : es.module_workers == 0          ? "script"
                      : es.module_workers == es.workers ? "module"
                                                        : "mixed";
    sl__buf_printf(body,
                   "{\"status\":\"%s\",\"store\":\"redis\",\"redis\":\"%s\",\"breakers_open\":%d,"
                   "\"decide\":\"%s\"}",
                   up ? "ready" : "degraded", es.up ? "up" : "down", open, via);
    return up ? 200 : 503;
}

void sl__admin_metrics(sl__admin *a, sl__buf *body) {
    sl__metrics_write(sl__admin_worker(a)->server, body);
}

bool sl__admin_reload(sl__admin *a, sl__answer_slot *slot, const struct sl__http_request *req,
                      bool keep, sl__buf *out) {
    return sl__reload_ask(sl__admin_worker(a), slot, req, keep, out);
}

void sl__admin_ramp(sl__admin *a, sl__answer_slot *slot, const struct sl__http_request *req,
                    bool keep, sl__buf *out) {
    sl__worker *w = sl__admin_worker(a);
    if (!sl__reload_allowed(w, slot, req, keep, out, "POST /v1/ramp")) return;
    int64_t now = sl_now();
    sl__ramp_restart(now, SL__RAMP_BY_ADMIN);
    size_t ramped = sl__policy_set_ramped(w->policies);
    sl__log_info("POST /v1/ramp: ramp_up restarts (%zu policies ramp)", ramped);
    sl__buf body;
    sl__buf_init(&body);
    sl__buf_printf(&body, "{\"ramp\":\"restarted\",\"policies\":%zu,\"started_at_ms\":%lld}",
                   ramped, (long long)(sl__ramp_started() / SL_NS_PER_MS));
    sl__http_begin(out, 200);
    sl__http_end(out, keep, "application/json", body.data, body.len);
    sl__buf_free(&body);
}

void sl__admin_ops_view(sl__admin *a, sl__answer_slot *slot, bool store, bool peer,
                        struct sl__ops_view *v) {
    memset(v, 0, sizeof *v);
    if (!a) return;
    sl__worker *w = sl__admin_worker(a);
    sl__server *s = w->server;
    v->policies = w->policies;
    v->workers = s->nworkers;
    v->started_at = s->started_at;
    v->draining = w->draining;
    v->ui = w->admin.ui;
    if (store) sl__engine_stats(s->engine, s->nworkers, &v->store);
    v->peer_loopback = peer && v->ui == SL__UI_LOOPBACK && sl__slot_loopback(slot);
}
