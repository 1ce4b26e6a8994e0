/* resp_async.c: SL.CHECK and CL.THROTTLE with the Redis store. The command's reply is
 * reserved in the connection's order (sl__conn_defer) and written when Redis,
 * the deny cache or a fail mode has decided; replies to later pipelined
 * commands wait behind it. */
#include <stdio.h>
#include <stdlib.h>

#include "policy/policy.h"
#include "server/resp/cell.h"
#include "server/resp/resp.h"
#include "server/server.h"
#include "sluice/error.h"
#include "store/store.h"

typedef struct resp_check {
    sl_deferred *d;
} resp_check;

static void check_done(sl_policy_call *pc) {
    resp_check *rc = pc->arg;
    const sl_policy_item *it = &pc->items[0];
    sl__resp_check_reply(sl__deferred_out(rc->d), it->policy, pc->rc, &it->decision, it->cost);
    sl__deferred_done(rc->d);
    sl__policy_call_free(pc);
    free(rc);
}

bool sl__resp_check_async(sl_worker *w, sl_policy *p, const char *key, size_t keylen, int64_t cost,
                          sl_buf *out) {
    if (!w || !w->store) return false;
    sl_policy_item item = {.policy = p, .key = key, .keylen = keylen, .cost = cost};
    resp_check *rc = malloc(sizeof *rc);
    sl_policy_call *pc = rc ? sl__policy_call_new(w->policies, &item, 1, NULL, NULL) : NULL;
    sl_deferred *d = pc ? sl__conn_defer(w) : NULL;
    if (!d) {
        sl__policy_call_free(pc);
        free(rc);
        sl__resp_error(out, "ERR out of memory");
        return true;
    }
    rc->d = d;
    pc->done = check_done;
    pc->arg = rc;
    sl__policy_call_start(w->store, pc, sl__worker_now(w));
    return true;
}

/* ---- CL.THROTTLE ------------------------------------------------------------ */

typedef struct resp_throttle {
    sl_deferred *d;
    sl_params params; /* the call points at it */
    int64_t max_burst;
    char name[80]; /* "cell:<max_burst>:<count>:<period>": the Redis keys' namespace */
} resp_throttle;

static void throttle_done(sl_store_call *c) {
    resp_throttle *rt = c->arg;
    const sl_store_item *it = &c->items[0];
    int64_t reply[5];
    if (!it->decided) {
        sl__resp_error(sl__deferred_out(rt->d), "ERR the store could not decide");
    } else {
        bool never = it->decision.retry_after < 0;
        sl__cell_reply(rt->max_burst, &it->decision, never, reply);
        sl__resp_ints(sl__deferred_out(rt->d), reply, 5);
    }
    sl__deferred_done(rt->d);
    sl__store_call_free(c);
    free(rt);
}

void sl__resp_throttle_async(sl_worker *w, sl_table *local, const sl_params *params,
                             const char *key, size_t keylen, int64_t max_burst, int64_t quantity,
                             sl_buf *out) {
    resp_throttle *rt = malloc(sizeof *rt);
    sl_store_call *c = rt ? sl__store_call_new(1, keylen) : NULL;
    sl_deferred *d = c ? sl__conn_defer(w) : NULL;
    if (!d) {
        sl__store_call_free(c);
        free(rt);
        sl__resp_error(out, "ERR out of memory");
        return;
    }
    rt->d = d;
    rt->params = *params;
    rt->max_burst = max_burst;
    snprintf(rt->name, sizeof rt->name, "cell:%lld:%lld:%lld", (long long)max_burst,
             (long long)params->rate.limit, (long long)(params->rate.period / SL_NS_PER_SEC));
    c->items[0] = (sl_store_item){.params = &rt->params,
                                  .policy = rt->name,
                                  .local = local,
                                  .on_failure = w->server->redis_cfg.on_failure,
                                  .key = sl__store_call_key(c, key, keylen),
                                  .keylen = keylen,
                                  .cost = quantity};
    c->now = sl__worker_now(w);
    c->done = throttle_done;
    c->arg = rt;
    sl__store_decide(w->store, c);
}
