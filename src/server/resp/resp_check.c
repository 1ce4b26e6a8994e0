/* resp_check.c: SL.CHECK policy key [cost] [DELAY] [PRIORITY p] [RETRY n]
 * (docs/resp.md): the policy's retry budget first (retry_budget:, RETRY
 * n >= 1 is a retry: -RETRYBUDGET when over it), then one item of the
 * policy decided by the engine through the context's decider with the
 * server's shedding capacity at PRIORITY p (shedding:, its scope's, as for
 * every protocol: sl__decide_call_shed; -SHED when over capacity), its
 * reply (five integers, six with DELAY) written in done, inline or in the
 * reserved place (server/reply.h). Registered in resp_commands.c's table. */
#include "server/resp/resp_check.h"

#include <stdatomic.h>
#include <string.h>

#include "policy/decide.h"
#include "policy/policy.h"
#include "policy/retry_stage.h"
#include "server/reply.h"
#include "server/resp/resp_args.h"
#include "sluice/sluice.h"
#include "util/units.h"

static sl__decider *decider_of(const sl__resp_context *ctx) {
    return ctx->decider ? ctx->decider : sl__decider_memory();
}

/* SL.CHECK's call: where the reply goes, its form, and what it took. */
typedef struct check_ctx {
    sl__reply r;
    bool delay; /* DELAY: delay_ms as a sixth integer */
    int64_t now;
    sl__retry_stage retry; /* the policy's retry_budget:, before the decision */
} check_ctx;

/* The server's capacity shed the call (the engine decided it, nothing
 * else): -SHED, counted by policy and priority. */
static void write_shed(sl__buf *out, sl__policy *p, sl_priority prio, int64_t retry_after) {
    atomic_fetch_add_explicit(&p->shed[prio], 1, memory_order_relaxed);
    int64_t secs = retry_after < 0 ? 1 : sl__ceil_s(retry_after);
    sl__resp_errorf(out,
                    "SHED the server is over capacity: %s requests are shed (retry after %lld s)",
                    sl_priority_name(prio), (long long)(secs < 1 ? 1 : secs));
}

static void check_done(sl__decide_call *call) {
    check_ctx *cc = sl__decide_call_user(call);
    const sl__decide_item *it = &call->items[0];
    if (call->shed)
        write_shed(sl__reply_out(&cc->r), sl__policy_of(it->limit), call->priority,
                   call->shed_retry);
    else
        sl__resp_check_reply(sl__reply_out(&cc->r), sl__policy_of(it->limit), call->rc,
                             &it->decision, it->cost, cc->delay);
    sl__reply_end(&cc->r);
    sl__decide_call_free(call);
}

/* The retry budget refused a retry: -RETRYBUDGET, and it is not decided. */
static void check_retry_refused(sl__retry_stage *st) {
    check_ctx *cc = st->arg;
    const sl__retry_call *rc = &st->call;
    int64_t ns = rc->d.retry_after < 0 ? rc->limit->opts.window : rc->d.retry_after;
    long long secs = sl__ceil_s(ns) < 1 ? 1 : (long long)sl__ceil_s(ns);
    sl__resp_errorf(sl__reply_out(&cc->r),
                    "RETRYBUDGET retries of this key are over the retry budget of policy '%s' "
                    "(%lld of %lld; retry after %lld s)",
                    rc->limit->name, (long long)rc->d.retries, (long long)rc->d.budget, secs);
    sl__reply_end(&cc->r);
    sl__decide_call_free(st->decide);
}

/* SL.CHECK's arguments after the key: [cost] [DELAY] [PRIORITY p] [RETRY n]
 * (the options in any order). */
typedef struct check_opts {
    int64_t cost, retry;
    bool delay;
    sl_priority priority;
} check_opts;

/* Reads them; false with the error written into out. */
static bool parse_opts(const sl__resp_command *cmd, check_opts *o, sl__buf *out) {
    *o = (check_opts){.cost = 1, .priority = SL_PRIORITY_DEFAULT};
    size_t i = 3, argc = cmd->argc;
    if (i < argc && !IEQ(cmd->argv[i], cmd->argl[i], "delay") &&
        !IEQ(cmd->argv[i], cmd->argl[i], "priority") && !IEQ(cmd->argv[i], cmd->argl[i], "retry")) {
        if (!parse_i64(cmd->argv[i], cmd->argl[i], &o->cost) || o->cost < 0) {
            sl__resp_error(out, "ERR cost must be an integer >= 0");
            return false;
        }
        i++;
    }
    for (; i < argc; i++) {
        const char *a = cmd->argv[i];
        size_t n = cmd->argl[i];
        if (IEQ(a, n, "delay")) {
            o->delay = true;
        } else if (IEQ(a, n, "priority") && i + 1 < argc) {
            i++;
            if (sl_priority_parse(cmd->argv[i], cmd->argl[i], &o->priority) != SL_OK) {
                sl__resp_error(out, "ERR PRIORITY must be critical, default or sheddable");
                return false;
            }
        } else if (IEQ(a, n, "retry") && i + 1 < argc) {
            i++;
            if (!parse_i64(cmd->argv[i], cmd->argl[i], &o->retry) || o->retry < 0) {
                sl__resp_error(out, "ERR RETRY must be an integer >= 0 (the attempt: 0 first)");
                return false;
            }
        } else {
            wrong_args(out, "sl.check"); /* what any other extra argument always got */
            return false;
        }
    }
    return true;
}

int sl__resp_cmd_check(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    if (cmd->argc < 3) {
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
    sl__policy *p = nlen <= SL__POLICY_NAME_MAX && !memchr(name, '\0', nlen)
                        ? sl__policy_find(ctx->policies, name, nlen)
                        : NULL;
    if (!p) {
        sl__resp_errorf(out, "ERR unknown policy '%.*s'", echo_len(nlen), name);
        return 0;
    }
    check_opts o;
    if (!parse_opts(cmd, &o, out)) return 0;
    sl__decide_item item = sl__policy_use(p, cmd->argv[2], cmd->argl[2], o.cost, false);
    sl__decide_call *call = sl__decide_call_new(&item, 1, NULL, NULL, sizeof(check_ctx));
    if (!call) {
        sl__resp_error(out, "ERR out of memory");
        return 0;
    }
    check_ctx *cc = sl__decide_call_user(call);
    cc->delay = o.delay;
    cc->now = ctx->now;
    sl__decide_capacity *cap = sl__policy_set_shed(ctx->policies, NULL);
    if (cap) sl__decide_call_shed(call, cap, o.priority); /* lives with the set */
    sl__decide_call_hold(call, ctx->policies);
    call->done = check_done;
    bool answered;
    sl__reply_begin(&cc->r, ctx->slot, out, &answered);
    /* retry_budget: first the budget (policy/retry_stage.h), then the policy */
    sl__engine_decide_retry(&cc->retry, p->retry, (const char *)call->items[0].key, cmd->argl[2],
                            o.retry >= 1, call, decider_of(ctx), ctx->now, check_retry_refused, cc);
    if (!answered && !sl__reply_wait(&cc->r)) sl__resp_error(out, "ERR out of memory");
    return 0;
}

void sl__resp_check_reply(sl__buf *out, const sl__policy *p, int rc, const sl_decision *d,
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
