/* resp_check.c: SL.CHECK policy key [cost] [DELAY] (docs/resp.md): one
 * item of the policy, decided by the engine through the context's decider,
 * and its reply (five integers, six with DELAY) written in done, inline or
 * in the reserved place (server/reply.h). Registered in resp_commands.c's
 * table. */
#include "server/resp/resp_check.h"

#include <string.h>

#include "policy/decide.h"
#include "policy/policy.h"
#include "server/reply.h"
#include "server/resp/resp_args.h"
#include "sluice/sluice.h"
#include "util/units.h"

static sl_decider *decider_of(const sl_resp_context *ctx) {
    return ctx->decider ? ctx->decider : sl__decider_memory();
}

/* SL.CHECK's call: where the reply goes, and its form. */
typedef struct check_ctx {
    sl_reply r;
    bool delay; /* DELAY: delay_ms as a sixth integer */
} check_ctx;

static void check_done(sl_decide_call *call) {
    check_ctx *cc = sl__decide_call_user(call);
    const sl_decide_item *it = &call->items[0];
    sl__resp_check_reply(sl__reply_out(&cc->r), sl__policy_of(it->limit), call->rc, &it->decision,
                         it->cost, cc->delay);
    sl__reply_end(&cc->r);
    sl__decide_call_free(call);
}

int sl__resp_cmd_check(const sl_resp_context *ctx, const sl_resp_command *cmd, sl_buf *out) {
    /* SL.CHECK policy key [cost] [DELAY] */
    size_t argc = cmd->argc;
    bool delay = argc >= 4 && IEQ(cmd->argv[argc - 1], cmd->argl[argc - 1], "delay");
    if (delay) argc--;
    if (argc != 3 && argc != 4) {
        wrong_args(out, "sl.check");
        return 0;
    }
    if (!ctx->policies) {
        sl__resp_error(out, "ERR no policies are loaded");
        return 0;
    }
    /* a name that cannot be a policy's is never looked up (names are C strings) */
    const char *name = cmd->argv[1];
    size_t nlen = cmd->argl[1];
    sl_policy *p = nlen <= SL_POLICY_NAME_MAX && !memchr(name, '\0', nlen)
                       ? sl__policy_find(ctx->policies, name, nlen)
                       : NULL;
    if (!p) {
        sl__resp_errorf(out, "ERR unknown policy '%.*s'", echo_len(nlen), name);
        return 0;
    }
    int64_t cost = 1;
    if (argc == 4 && (!parse_i64(cmd->argv[3], cmd->argl[3], &cost) || cost < 0)) {
        sl__resp_error(out, "ERR cost must be an integer >= 0");
        return 0;
    }
    sl_decide_item item = sl__policy_use(p, cmd->argv[2], cmd->argl[2], cost, false);
    sl_decide_call *call = sl__decide_call_new(&item, 1, NULL, NULL, sizeof(check_ctx));
    if (!call) {
        sl__resp_error(out, "ERR out of memory");
        return 0;
    }
    check_ctx *cc = sl__decide_call_user(call);
    cc->delay = delay;
    sl__decide_call_hold(call, ctx->policies);
    call->done = check_done;
    bool answered;
    sl__reply_begin(&cc->r, ctx->slot, out, &answered);
    sl__engine_decide(decider_of(ctx), call, ctx->now);
    if (!answered && !sl__reply_wait(&cc->r)) sl__resp_error(out, "ERR out of memory");
    return 0;
}

void sl__resp_check_reply(sl_buf *out, const sl_policy *p, int rc, const sl_decision *d,
                          int64_t cost, bool delay) {
    switch (rc) {
    case SL_OK:
        break;
    case SL_ECOST:
        sl__resp_errorf(out, "ERR cost %lld can never pass policy '%s' (limit %lld)",
                        (long long)cost, p->cfg.name, (long long)d->limit);
        return;
    case SL_EKEY:
        sl__resp_error(out, "ERR key too long");
        return;
    case SL_ENOMEM:
        sl__resp_error(out, "ERR out of memory");
        return;
    default:
        sl__resp_errorf(out, "ERR %s", sl_strerror(rc));
        return;
    }
    int64_t reply[6] = {d->allowed,
                        d->limit,
                        d->remaining,
                        d->allowed ? 0 : sl__ceil_ms(d->retry_after),
                        sl__ceil_ms(d->reset_after),
                        d->allowed && d->delay > 0 ? sl__ceil_ms(d->delay) : 0};
    sl__resp_ints(out, reply, delay ? 6 : 5);
}
