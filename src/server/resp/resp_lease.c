/* resp_lease.c: the RESP commands of concurrency limits (docs/resp.md):
 *   SL.ACQUIRE policy key        -> [allowed, lease, limit, remaining, retry_after_ms, lease_ms]
 *   SL.RELEASE policy key lease [latency_ms] -> 1 released, 0 no such lease held
 *   SL.RENEW policy key lease    -> lease_ms after the renewal, 0 no such lease held
 * Each starts one lease operation through the context's decider
 * (policy/lease_set.h) and replies in done, inline or in the reserved place
 * (server/reply.h). Registered in resp_commands.c's table. */
#include "server/resp/resp_lease.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/lease_set.h"
#include "policy/policy.h"
#include "server/reply.h"
#include "server/resp/resp_args.h"
#include "sluice/error.h"
#include "util/units.h"

typedef struct lease_ctx {
    sl__reply reply;
    sl__lease_call call;
    sl__policy_set *set; /* held: the limit lives until done */
    size_t keylen;
    char key[]; /* copied: the command's bytes do not outlive a deferred answer */
} lease_ctx;

static void reply(sl__buf *out, const sl__lease_call *c) {
    if (c->rc != SL_OK && c->rc != SL_ELEASE &&
        !(c->op == SL__LEASE_ACQUIRE && c->rc == SL_ENOMEM)) {
        sl__resp_errorf(out, "ERR %s", c->rc == SL_EKEY ? "key too long" : sl_strerror(c->rc));
        return;
    }
    if (c->op == SL__LEASE_RELEASE) {
        sl__resp_int(out, c->rc == SL_OK);
        return;
    }
    if (c->op == SL__LEASE_RENEW) {
        sl__resp_int(out, c->rc == SL_OK ? sl__ceil_ms(c->lease.expires - c->now) : 0);
        return;
    }
    const sl_acquire *a = &c->acq;
    sl__resp_array(out, 6);
    sl__resp_int(out, a->acquired);
    if (a->acquired) {
        char id[17];
        snprintf(id, sizeof id, "%016llx", (unsigned long long)a->lease.id);
        sl__resp_bulk(out, id, 16);
    } else {
        sl__resp_null(out);
    }
    sl__resp_int(out, a->limit);
    sl__resp_int(out, a->remaining);
    sl__resp_int(out, a->acquired ? 0 : sl__ceil_ms(a->retry_after));
    sl__resp_int(out, a->acquired ? sl__ceil_ms(a->lease.expires - c->now) : 0);
}

static void lease_done(sl__lease_call *c) {
    lease_ctx *x = c->arg;
    sl__lease_count(c);
    reply(sl__reply_out(&x->reply), c);
    sl__reply_end(&x->reply);
    sl__policy_set_release(x->set);
    free(x);
}

static int run(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out,
               sl__lease_op op, const char *name, size_t argc) {
    if (cmd->argc != argc && !(op == SL__LEASE_RELEASE && cmd->argc == argc + 1)) {
        sl__resp_errorf(out, "ERR wrong number of arguments for '%s' command", name);
        return 0;
    }
    if (!ctx->policies) {
        sl__resp_error(out, "ERR no policies are loaded");
        return 0;
    }
    const char *pname = cmd->argv[1];
    size_t plen = cmd->argl[1];
    bool nameable = plen <= SL__POLICY_NAME_MAX && !memchr(pname, '\0', plen);
    sl__lease_limit *l =
        nameable ? sl__lease_set_find(sl__policy_set_leases(ctx->policies), pname, plen) : NULL;
    if (!l) {
        if (nameable && sl__policy_find(ctx->policies, pname, plen))
            sl__resp_errorf(
                out, "ERR policy '%.*s' is a rate limit, not a concurrency limit: use SL.CHECK",
                (int)plen, pname);
        else
            sl__resp_errorf(out, "ERR unknown concurrency limit '%.*s'",
                            (int)(plen < ECHO_MAX ? plen : ECHO_MAX), pname);
        return 0;
    }
    uint64_t id = 0;
    if (op != SL__LEASE_ACQUIRE && !sl__lease_id_parse(cmd->argv[3], cmd->argl[3], &id)) {
        sl__resp_error(out, "ERR lease must be the id SL.ACQUIRE answered (1 to 16 hex digits)");
        return 0;
    }
    int64_t latency = 0;
    if (cmd->argc == 5) {
        int64_t v = 0;
        bool ok = cmd->argl[4] >= 1 && cmd->argl[4] <= 7;
        for (size_t i = 0; ok && i < cmd->argl[4]; i++) {
            char ch = cmd->argv[4][i];
            ok = ch >= '0' && ch <= '9';
            v = v * 10 + (ch - '0');
        }
        if (!ok || v < 1 || v > 3600000) {
            sl__resp_error(out, "ERR latency_ms must be an integer from 1 to 3600000");
            return 0;
        }
        latency = v * SL_NS_PER_MS;
    }
    size_t keylen = cmd->argl[2];
    lease_ctx *x = malloc(sizeof *x + keylen + 1);
    if (!x) {
        sl__resp_error(out, "ERR out of memory");
        return 0;
    }
    memset(x, 0, sizeof *x);
    memcpy(x->key, cmd->argv[2], keylen);
    x->keylen = keylen;
    x->set = ctx->policies;
    sl__policy_set_retain(x->set);
    x->call = (sl__lease_call){.op = op,
                               .limit = l,
                               .key = x->key,
                               .keylen = keylen,
                               .id = id,
                               .latency = latency,
                               .now = ctx->now,
                               .done = lease_done,
                               .arg = x};
    bool answered;
    sl__reply_begin(&x->reply, ctx->slot, out, &answered);
    sl__lease_start(ctx->decider, &x->call);
    if (!answered && !sl__reply_wait(&x->reply)) sl__resp_error(out, "ERR out of memory");
    return 0;
}

int sl__resp_cmd_acquire(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    return run(ctx, cmd, out, SL__LEASE_ACQUIRE, "sl.acquire", 3);
}

int sl__resp_cmd_release(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    return run(ctx, cmd, out, SL__LEASE_RELEASE, "sl.release", 4);
}

int sl__resp_cmd_renew(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    return run(ctx, cmd, out, SL__LEASE_RENEW, "sl.renew", 4);
}
