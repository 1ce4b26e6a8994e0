/* resp_del.c: DEL key [key ...] for CL.THROTTLE's state (resp_del.h,
 * docs/resp.md). The keys go to the decision engine's forget (policy/
 * decide.h), which the worker's store carries out: a table delete in
 * memory, a DEL of the key the Redis store uses; this file knows neither.
 * The answer waits in the command's slot when the store answers later, as
 * CL.THROTTLE's does. A key named twice is counted once, as Redis does. */
#include "server/resp/resp_del.h"

#include <string.h>

#include "policy/cell.h"
#include "policy/decide.h"
#include "server/reply.h"

static void del_done(sl__decide_call *call) {
    sl__reply *r = sl__decide_call_user(call);
    char err[SL__CELL_ERR_MAX];
    /* a key named twice: counted where it is first named */
    for (size_t i = 0; i < call->n; i++)
        for (size_t j = 0; j < i && call->items[i].decided; j++)
            if (call->items[j].keylen == call->items[i].keylen &&
                !memcmp(call->items[j].key, call->items[i].key, call->items[i].keylen))
                call->items[i].decided = false;
    long long n = sl__cell_forgotten(call, err, sizeof err);
    if (n < 0)
        sl__resp_error(sl__reply_out(r), err);
    else
        sl__resp_int(sl__reply_out(r), n);
    sl__reply_end(r);
    sl__decide_call_free(call);
}

int sl__resp_cmd_del(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    if (cmd->argc < 2) {
        sl__resp_error(out, "ERR wrong number of arguments for 'del' command");
        return 0;
    }
    if (cmd->argc - 1 > SL__CELL_DEL_MAX) {
        sl__resp_error(out, "ERR DEL takes at most 16 keys here (CL.THROTTLE state)");
        return 0;
    }
    if (!ctx->cell) {
        sl__resp_error(out, "ERR CL.THROTTLE is not enabled on this server");
        return 0;
    }
    sl__decide_call *call =
        sl__cell_forget_prepare(ctx->cell, (const char *const *)cmd->argv + 1, cmd->argl + 1,
                                cmd->argc - 1, sizeof(sl__reply));
    if (!call) {
        sl__resp_error(out, "ERR out of memory");
        return 0;
    }
    sl__reply *r = sl__decide_call_user(call);
    call->done = del_done;
    bool answered;
    sl__reply_begin(r, ctx->slot, out, &answered);
    sl__engine_forget(ctx->decider, call, ctx->now);
    if (!answered && !sl__reply_wait(r)) sl__resp_error(out, "ERR out of memory");
    return 0;
}
