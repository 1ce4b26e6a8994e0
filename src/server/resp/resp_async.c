/* resp_async.c: SL.CHECK and CL.THROTTLE with the Redis store. The command's reply is
 * reserved in the connection's order (sl__conn_defer) and written when Redis,
 * the deny cache or a fail mode has decided; replies to later pipelined
 * commands wait behind it. */
#include <stdlib.h>

#include "policy/policy.h"
#include "policy/cell.h"
#include "server/resp/resp.h"
#include "server/server.h"
#include "sluice/error.h"

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

static void throttle_done(void *arg, const int64_t reply[5], const char *err) {
    sl_deferred *d = arg;
    if (err)
        sl__resp_error(sl__deferred_out(d), err);
    else
        sl__resp_ints(sl__deferred_out(d), reply, 5);
    sl__deferred_done(d);
}

void sl__resp_throttle_async(sl_worker *w, const char *key, size_t keylen, int64_t max_burst,
                             int64_t count, int64_t period, int64_t quantity, sl_buf *out) {
    sl_deferred *d = sl__conn_defer(w);
    if (!d) {
        sl__resp_error(out, "ERR out of memory");
        return;
    }
    sl__cell_throttle_store(w->server->cell, w->store, w->server->redis_cfg.on_failure, key, keylen,
                            max_burst, count, period, quantity, sl__worker_now(w), throttle_done,
                            d);
}
