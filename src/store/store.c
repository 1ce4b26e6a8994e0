/* store.c: decisions in Redis for one worker (see store.h): the deny cache
 * in front, one script call per request (per cluster slot when a request's
 * keys fall in several), and the fail modes behind. */
#include "store/store.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "server/log.h"
#include "server/buf.h"
#include "sluice/error.h"
#include "store/redis_cluster.h"
#include "store/redis_script.h"

typedef struct deny_entry {
    uint64_t h1, h2; /* the Redis key's fingerprint (two seeded hashes) */
    int64_t until;   /* refused until (worker clock, ns) */
    int64_t reset_until;
    int64_t limit;
    int64_t cost; /* the refused cost: a smaller one may pass sooner, so it is not refused here */
} deny_entry;

struct sl_store_worker {
    uv_loop_t *loop;
    const sl_redis_config *cfg;
    sl_redis *redis;
    sl_redis_stats *rstats;
    sl_store_stats *stats;
    deny_entry *deny;
    size_t deny_mask;
    uint64_t seed1, seed2;
    sl_buf cmd; /* scratch: the command being formatted */
};

/* One script call: the items of one cluster slot. */
typedef struct part {
    sl_store_call *c;
    unsigned slot;
    size_t n;
    uint8_t idx[SL_STORE_MAX_ITEMS];
    bool with_source;
} part;

typedef struct call_state {
    part parts[SL_STORE_MAX_ITEMS];
    const char *rkey[SL_STORE_MAX_ITEMS];
    size_t rkeylen[SL_STORE_MAX_ITEMS];
    char *rkeys; /* their bytes */
} call_state;

static void add(atomic_uint_fast64_t *c, uint64_t n) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* ---- worker ------------------------------------------------------------------ */

void sl__store_preamble(sl_redis *r) {
    const char *src = sl__redis_script_source();
    size_t n = strlen(src);
    sl_buf b;
    sl__buf_init(&b);
    sl__buf_printf(&b, "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$%zu\r\n", n);
    sl__buf_append(&b, src, n);
    sl__buf_puts(&b, "\r\n");
    if (!b.failed) sl__redis_set_preamble(r, b.data, b.len);
    sl__buf_free(&b);
}

sl_store_worker *sl__store_worker_new(uv_loop_t *loop, const sl_redis_config *cfg,
                                      sl_store_stats *stats, sl_redis_stats *rstats) {
    sl_store_worker *sw = calloc(1, sizeof *sw);
    if (!sw) return NULL;
    sw->stats = stats;
    sw->rstats = rstats;
    sw->loop = loop;
    sw->cfg = cfg;
    sl__buf_init(&sw->cmd);
    if (cfg->deny_cache) {
        size_t cap = 1;
        while (cap < cfg->deny_cache) cap <<= 1;
        sw->deny = calloc(cap, sizeof *sw->deny);
        if (!sw->deny) {
            free(sw);
            return NULL;
        }
        sw->deny_mask = cap - 1;
    }
    sw->seed1 = sl__random_seed();
    sw->seed2 = sl__random_seed() | 1;
    sw->redis = sl__redis_new(loop, cfg, sw->rstats);
    if (!sw->redis) {
        free(sw->deny);
        free(sw);
        return NULL;
    }
    sl__store_preamble(sw->redis);
    return sw;
}

void sl__store_worker_free(sl_store_worker *sw) {
    if (!sw) return;
    sl__redis_free(sw->redis); /* fails the calls in flight: their fail modes answer */
    sl__buf_free(&sw->cmd);
    free(sw->deny);
    free(sw);
}

/* ---- calls -------------------------------------------------------------------- */

sl_store_call *sl__store_call_new(size_t n, size_t key_bytes) {
    if (n > SL_STORE_MAX_ITEMS) return NULL;
    size_t cap = key_bytes + n + 1;
    sl_store_call *c = calloc(1, sizeof *c + cap);
    if (!c) return NULL;
    c->n = n;
    c->keys_cap = cap;
    return c;
}

const char *sl__store_call_key(sl_store_call *c, const void *key, size_t len) {
    if (c->keys_cap - c->keys_len < len + 1) return NULL;
    char *p = c->keys + c->keys_len;
    memcpy(p, key, len);
    p[len] = '\0';
    c->keys_len += len + 1;
    return p;
}

static void state_free(sl_store_call *c) {
    call_state *st = c->state;
    if (st) free(st->rkeys);
    free(st);
    c->state = NULL;
}

void sl__store_call_free(sl_store_call *c) {
    if (!c) return;
    state_free(c);
    free(c);
}

/* ---- deny cache ------------------------------------------------------------------- */

static deny_entry *deny_slot(sl_store_worker *sw, const char *rkey, size_t len, uint64_t *h1,
                             uint64_t *h2) {
    *h1 = sl__hash(rkey, len, sw->seed1);
    *h2 = sl__hash(rkey, len, sw->seed2);
    return &sw->deny[*h1 & sw->deny_mask];
}

static int64_t limit_of(const sl_params *p) {
    bool bucket = p->algorithm == SL_TOKEN_BUCKET || p->algorithm == SL_GCRA ||
                  p->algorithm == SL_LEAKY_QUEUE;
    return bucket ? p->burst : p->rate.limit;
}

/* ---- fail modes --------------------------------------------------------------------- */

static void decide_without_redis(sl_store_worker *sw, sl_store_call *c) {
    for (size_t i = 0; i < c->n; i++) c->items[i].decided = false;
    /* closed: the first enforced limit that fails closed refuses the request */
    for (size_t i = 0; i < c->n; i++) {
        sl_store_item *it = &c->items[i];
        if (it->group != 0 || it->on_failure != SL_FAIL_CLOSED) continue;
        uint64_t at = sl__redis_retry_at(sw->redis, 0);
        uint64_t now = uv_now(sw->loop);
        int64_t retry = at > now ? (int64_t)(at - now) * 1000000 : sw->cfg->breaker_cooldown;
        if (retry < 1000000) retry = 1000000;
        it->decision = (sl_decision){.allowed = false,
                                     .limit = limit_of(it->params),
                                     .remaining = 0,
                                     .retry_after = retry,
                                     .reset_after = retry};
        it->decided = true;
        c->from = SL_FROM_CLOSED;
        c->retry_closed = retry;
        return;
    }
    /* local: the fallback tables decide their limits together; open: allowed */
    sl_check checks[SL_STORE_MAX_ITEMS];
    size_t idx[SL_STORE_MAX_ITEMS], nl = 0;
    c->from = SL_FROM_OPEN;
    for (size_t i = 0; i < c->n; i++) {
        sl_store_item *it = &c->items[i];
        if (it->group != 0) continue;
        if (it->on_failure == SL_FAIL_LOCAL && it->local) {
            checks[nl] = (sl_check){
                .table = it->local, .key = it->key, .keylen = it->keylen, .cost = it->cost};
            idx[nl++] = i;
            c->from = SL_FROM_LOCAL;
        } else {
            int64_t l = limit_of(it->params);
            it->decision = (sl_decision){.allowed = true, .limit = l, .remaining = l};
            it->decided = true;
        }
    }
    if (nl == 0) return;
    size_t r = nl;
    int rc = sl_table_check_all(checks, nl, c->now, &r);
    for (size_t k = 0; k < nl; k++) {
        sl_store_item *it = &c->items[idx[k]];
        it->decision = checks[k].decision;
        it->decided = rc == SL_OK || k == r;
        if (rc != SL_OK && k == r) {
            it->decision.allowed = false;
            it->decision.retry_after = -1;
        }
    }
}

/* ---- script calls -------------------------------------------------------------------- */

static void on_script(void *arg, const redisReply *reply, int status);

static void complete(sl_store_call *c) {
    sl_store_worker *sw = c->sw;
    call_state *st = c->state;
    if (c->failed) {
        decide_without_redis(sw, c);
    } else {
        c->from = SL_FROM_REDIS;
        /* Redis's refusals go to the deny cache */
        for (size_t i = 0; sw->deny && i < c->n; i++) {
            sl_store_item *it = &c->items[i];
            if (it->group != 0 || !it->decided || it->decision.allowed ||
                it->decision.retry_after <= 0 || it->cost <= 0 ||
                (it->params->flags & SL_COUNT_REJECTED))
                continue;
            uint64_t h1, h2;
            deny_entry *e = deny_slot(sw, st->rkey[i], st->rkeylen[i], &h1, &h2);
            *e = (deny_entry){.h1 = h1,
                              .h2 = h2,
                              .until = c->now + it->decision.retry_after,
                              .reset_until = c->now + it->decision.reset_after,
                              .limit = it->decision.limit,
                              .cost = it->cost};
            add(&sw->stats->deny_inserts, 1);
        }
    }
    state_free(c);
    c->done(c);
}

static void script_items(const sl_store_call *c, const part *pt, sl_script_item *si) {
    const call_state *st = c->state;
    for (size_t k = 0; k < pt->n; k++) {
        const sl_store_item *it = &c->items[pt->idx[k]];
        si[k] = (sl_script_item){.params = it->params,
                                 .calendar_month = it->calendar_month,
                                 .rkey = st->rkey[pt->idx[k]],
                                 .rkeylen = st->rkeylen[pt->idx[k]],
                                 .cost = it->cost,
                                 .group = it->group};
    }
}

static void send_part(sl_store_worker *sw, part *pt) {
    sl_script_item si[SL_STORE_MAX_ITEMS];
    script_items(pt->c, pt, si);
    sl__buf_reset(&sw->cmd);
    sl__redis_script_format(&sw->cmd, pt->with_source, si, pt->n, 0);
    if (sw->cmd.failed) {
        sl__buf_free(&sw->cmd);
        sl__buf_init(&sw->cmd);
        on_script(pt, NULL, SL_REDIS_EIO);
        return;
    }
    sl__redis_call(sw->redis, pt->slot, sw->cmd.data, sw->cmd.len, on_script, pt);
}

static void on_script(void *arg, const redisReply *reply, int status) {
    part *pt = arg;
    sl_store_call *c = pt->c;
    sl_store_worker *sw = c->sw;
    if (status == SL_REDIS_OK && reply->type == REDIS_REPLY_ERROR && !pt->with_source &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        /* Redis lost the script (restart, SCRIPT FLUSH, failover): EVAL loads it again */
        add(&sw->stats->noscript_reloads, 1);
        pt->with_source = true;
        send_part(sw, pt);
        return;
    }
    if (status != SL_REDIS_OK) {
        c->failed = true;
    } else {
        sl_script_item si[SL_STORE_MAX_ITEMS];
        char err[160];
        script_items(c, pt, si);
        if (sl__redis_script_parse(reply, si, pt->n, err, sizeof err) != 0) {
            static _Thread_local uint64_t logged;
            if (logged++ % 10000 == 0) sl__log_warn("redis: script answer: %s", err);
            add(&sw->stats->script_errors, 1);
            c->failed = true;
        } else {
            for (size_t k = 0; k < pt->n; k++) {
                sl_store_item *it = &c->items[pt->idx[k]];
                it->decision = si[k].decision;
                it->decided = si[k].decided;
            }
        }
    }
    if (--c->parts_left == 0) complete(c);
}

void sl__store_decide(sl_store_worker *sw, sl_store_call *c) {
    c->sw = sw;
    c->failed = false;
    c->from = SL_FROM_REDIS;
    call_state *st = calloc(1, sizeof *st);
    size_t total = 0, plen = strlen(sw->cfg->prefix);
    for (size_t i = 0; i < c->n; i++)
        total += plen + c->items[i].keylen + strlen(c->items[i].policy) + 4;
    char *rk = st ? malloc(total ? total : 1) : NULL;
    if (!rk) {
        free(st);
        c->failed = true;
        decide_without_redis(sw, c);
        c->done(c);
        return;
    }
    st->rkeys = rk;
    c->state = st;
    sl_buf kb;
    sl__buf_init(&kb);
    size_t off = 0;
    for (size_t i = 0; i < c->n; i++) {
        sl_store_item *it = &c->items[i];
        it->decided = false;
        sl__buf_reset(&kb);
        sl__redis_key(&kb, sw->cfg->prefix, it->policy, it->key, it->keylen);
        size_t len = kb.len <= total - off ? kb.len : total - off;
        memcpy(rk + off, kb.data, len);
        st->rkey[i] = rk + off;
        st->rkeylen[i] = len;
        off += len;
    }
    sl__buf_free(&kb);

    /* the deny cache: an enforced limit that Redis refused until later */
    for (size_t i = 0; sw->deny && i < c->n; i++) {
        sl_store_item *it = &c->items[i];
        if (it->group != 0 || it->cost <= 0) continue;
        uint64_t h1, h2;
        deny_entry *e = deny_slot(sw, st->rkey[i], st->rkeylen[i], &h1, &h2);
        /* a smaller cost may pass sooner; one above the limit never passes (Redis says so) */
        if (e->h1 != h1 || e->h2 != h2 || e->until <= c->now || it->cost < e->cost ||
            it->cost > e->limit)
            continue;
        add(&sw->stats->deny_hits, 1);
        int64_t retry = e->until - c->now;
        int64_t reset = e->reset_until - c->now;
        it->decision = (sl_decision){.allowed = false,
                                     .limit = e->limit,
                                     .remaining = 0,
                                     .retry_after = retry,
                                     .reset_after = reset > retry ? reset : retry};
        it->decided = true;
        c->from = SL_FROM_DENY_CACHE;
        state_free(c);
        c->done(c);
        return;
    }

    /* one script call per cluster slot (a single node: one call) */
    size_t np = 0;
    for (size_t i = 0; i < c->n; i++) {
        unsigned slot = sw->cfg->cluster ? sl__cluster_keyslot(st->rkey[i], st->rkeylen[i]) : 0;
        size_t p = 0;
        while (p < np && st->parts[p].slot != slot) p++;
        if (p == np) st->parts[np++] = (part){.c = c, .slot = slot};
        st->parts[p].idx[st->parts[p].n++] = (uint8_t)i;
    }
    /* one extra count while sending: a part can finish before send_part
     * returns (breaker open), and the call must outlive this loop */
    c->parts_left = (int)np + 1;
    for (size_t p = 0; p < np; p++) send_part(sw, &st->parts[p]);
    if (--c->parts_left == 0) complete(c);
}
