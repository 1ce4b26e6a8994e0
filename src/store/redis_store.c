/* redis_store.c: the Redis store of one worker (see redis_store.h) behind
 * the store interface (store.h): the deny cache in front, one script call
 * per request (per cluster slot when a request's keys fall in several),
 * and the fail modes behind. A call goes as SLUICE.DECIDE where the node
 * has sluice-redis.so (store.redis.module, redis_config.h), else as
 * EVALSHA: the same arguments, the same answer.
 *
 * A fleet shedding capacity (store.h: sl__store_call.cap) is one more script
 * item in front of the request's: a token bucket with the floor of the
 * request's priority (decide.lua), in its enforced group, so the capacity
 * and the request's limits are one all-or-nothing decision. The module
 * does not know floors: a script call that carries a capacity goes as
 * EVALSHA, whatever store.redis.module says. When Redis fails the
 * capacity's own fail mode decides it first (cap_fallback). */
#include "store/redis_store.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/table_any.h"
#include "sluice/error.h"
#include "store/lease.h"
#include "store/retry.h"
#include "store/redis_cluster.h"
#include "store/redis_script.h"
#include "util/buf.h"
#include "util/counter.h"
#include "util/log.h"

#define MAX_OPEN        16  /* script calls being filled at once (cluster: one per slot) */
#define FLIGHT_REQUESTS 128 /* requests in one script call (decide.lua allows 256) */
#define FLIGHT_ITEMS    SL__SCRIPT_MAX_ITEMS /* limits in one script call */
#define MODULE_RETRY_MS 5000 /* auto: the script this long after the module went away */

typedef struct deny_entry {
    uint64_t h1, h2; /* the Redis key's fingerprint (two seeded hashes) */
    int64_t until;   /* refused until (worker clock, ns) */
    int64_t reset_until;
    int64_t limit;
    int64_t cost; /* the refused cost: a smaller one may pass sooner, so it is not refused here */
} deny_entry;

typedef struct sl__store_worker {
    sl__store base; /* first: the store interface */
    uv_loop_t *loop;
    const sl__redis_config *cfg;
    sl__redis *redis;
    sl__redis_stats *rstats;
    sl__store_stats *stats;
    deny_entry *deny;
    size_t deny_mask;
    uint64_t seed1, seed2;
    sl__buf cmd; /* scratch: the command being formatted */
    /* the script calls being filled during this loop iteration, one per
       slot, sent when it ends (uv_check) or when full */
    struct flight *open[MAX_OPEN];
    size_t nopen;
    uv_check_t check;
    bool check_on;
    /* script calls that failed before reaching Redis, answered from the loop
       (on_idle), never inside the store operation that sent them (store.h);
       while there is one, what comes after it waits behind it, in order */
    sl__redis_queued *later, **later_tail;
    uv_idle_t idle;
    bool idle_on;
    int open_handles; /* check and idle, until closed */
    /* sent before the open calls, in order (sl__redis_store_after) */
    sl__redis_queued *fifo, **fifo_tail;
    uint64_t no_module_until; /* uv_now ms: the module answered "unknown command" */
} sl__store_worker;

/* A call's items of one cluster slot: one request of a script call. */
typedef struct part {
    sl__store_call *c;
    unsigned slot;
    size_t n;
    uint8_t idx[SL__STORE_MAX_ITEMS];
    bool cap; /* its first script item is the call's capacity (then n + 1 items) */
} part;

/* One script call: every request a worker has for one slot in one loop
 * iteration (decide.lua: group 2r + g). */
typedef struct flight {
    sl__redis_queued q; /* first: queued behind a forget (sl__redis_store_after) */
    sl__store_worker *sw;
    bool sending;    /* inside sl__redis_call: an answer now is a failure to defer */
    bool failed_now; /* ... and it came */
    unsigned slot;
    bool with_source;
    bool no_module; /* auto: the module answered "unknown command": the script */
    bool via_module;
    size_t nparts, nitems;
    part *parts[FLIGHT_REQUESTS];
} flight;

typedef struct call_state {
    part parts[SL__STORE_MAX_ITEMS];
    const char *rkey[SL__STORE_MAX_ITEMS];
    size_t rkeylen[SL__STORE_MAX_ITEMS];
    char *rkeys;    /* their bytes */
    size_t cap_off; /* the capacity's Redis key: rkeys[cap_off..cap_end) */
    size_t cap_end;
} call_state;

/* ---- worker ------------------------------------------------------------------ */

void sl__store_preamble(sl__redis *r) {
    const char *src = sl__redis_script_source();
    size_t n = strlen(src);
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_printf(&b, "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$%zu\r\n", n);
    sl__buf_append(&b, src, n);
    sl__buf_puts(&b, "\r\n");
    if (!b.failed) sl__redis_set_preamble(r, b.data, b.len);
    sl__buf_free(&b);
}

static void redis_decide(sl__store *s, sl__store_call *c);
static void redis_free(sl__store *s);
static const sl__store_ops redis_ops = {.decide = redis_decide,
                                        .free = redis_free,
                                        .lease = sl__redis_lease,
                                        .forget = sl__redis_forget,
                                        .retry = sl__redis_retry,
                                        .capacity = true};

void sl__redis_store_parts(sl__store *s, uv_loop_t **loop, const sl__redis_config **cfg,
                           sl__redis **redis) {
    sl__store_worker *sw = (sl__store_worker *)s;
    *loop = sw->loop;
    *cfg = sw->cfg;
    *redis = sw->redis;
}

sl__store *sl__redis_store_new(uv_loop_t *loop, const sl__redis_config *cfg,
                               sl__store_stats *stats) {
    sl__store_worker *sw = calloc(1, sizeof *sw);
    if (!sw) return NULL;
    sw->base.ops = &redis_ops;
    sw->stats = stats;
    sw->rstats = &stats->redis;
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
    if (cfg->module != SL__REDIS_MODULE_OFF)
        sl__redis_probe_command(sw->redis, SL__SCRIPT_MODULE_COMMAND);
    uv_check_init(loop, &sw->check);
    uv_idle_init(loop, &sw->idle);
    sw->check.data = sw->idle.data = sw;
    sw->open_handles = 2;
    return &sw->base;
}

static void flight_fail(flight *f);

static void on_handle_closed(uv_handle_t *h) {
    sl__store_worker *sw = h->data;
    if (--sw->open_handles) return;
    sl__buf_free(&sw->cmd);
    free(sw->deny);
    free(sw);
}

static void redis_free(sl__store *s) {
    sl__store_worker *sw = (sl__store_worker *)s;
    /* requests not sent yet, in order, then those in flight: their fail modes answer */
    while (sw->later) {
        sl__redis_queued *q = sw->later;
        sw->later = q->next;
        q->run(q, false);
    }
    while (sw->fifo) {
        sl__redis_queued *q = sw->fifo;
        sw->fifo = q->next;
        q->run(q, false);
    }
    while (sw->nopen) flight_fail(sw->open[--sw->nopen]);
    sl__redis_free(sw->redis);
    uv_close((uv_handle_t *)&sw->check, on_handle_closed);
    uv_close((uv_handle_t *)&sw->idle, on_handle_closed);
}

/* ---- calls -------------------------------------------------------------------- */

static void state_free(sl__store_call *c) {
    call_state *st = c->state;
    if (st) free(st->rkeys);
    free(st);
    c->state = NULL;
}

/* ---- deny cache ------------------------------------------------------------------- */

static deny_entry *deny_slot(sl__store_worker *sw, const char *rkey, size_t len, uint64_t *h1,
                             uint64_t *h2) {
    *h1 = sl__hash(rkey, len, sw->seed1);
    *h2 = sl__hash(rkey, len, sw->seed2);
    return &sw->deny[*h1 & sw->deny_mask];
}

/* ---- fail modes --------------------------------------------------------------------- */

/* Fail mode closed: ns until Redis is tried again (the breaker of the key's
 * node says when), at least 1 s. */
static int64_t closed_retry(sl__store_worker *sw, const sl__store_call *c) {
    const call_state *st = c->state;
    uint64_t at = sl__redis_retry_at(sw->redis, st ? st->parts[0].slot : 0);
    uint64_t now = uv_now(sw->loop);
    int64_t retry = at > now ? (int64_t)(at - now) * 1000000 : sw->cfg->breaker_cooldown;
    return retry < 1000000 ? 1000000 : retry;
}

/* Redis failed: the capacity's fail mode decides it (open: taken; closed:
 * only critical requests pass; local: this server's share, a token taken).
 * True when it shed the call. */
static bool cap_fallback(sl__store_worker *sw, sl__store_call *c, bool *took) {
    sl__store_capacity *cap = c->cap;
    *took = false;
    c->cap_refused = false;
    c->cap_retry = 0;
    switch (cap->on_failure) {
    case SL__FAIL_OPEN:
        c->cap_from = SL__FROM_OPEN;
        return false;
    case SL__FAIL_CLOSED:
        c->cap_from = SL__FROM_CLOSED;
        if (c->cap_priority == SL_PRIORITY_CRITICAL) return false;
        c->cap_refused = true;
        c->cap_retry = closed_retry(sw, c);
        return true;
    default: {
        c->cap_from = SL__FROM_LOCAL;
        sl_shed_decision d;
        if (sl_shed_admit(cap->local, c->cap_priority, 1, c->now, &d) == SL_OK && d.admitted) {
            *took = true;
            return false;
        }
        c->cap_refused = true;
        c->cap_retry = d.retry_after;
        return true;
    }
    }
}

static void items_without_redis(sl__store_worker *sw, sl__store_call *c);

static void decide_without_redis(sl__store_worker *sw, sl__store_call *c) {
    for (size_t i = 0; i < c->n; i++) c->items[i].decided = false;
    bool took = false;
    if (c->cap && cap_fallback(sw, c, &took)) {
        c->from = c->cap_from;
        return; /* shed: nothing else decided */
    }
    items_without_redis(sw, c);
    bool refused = false;
    for (size_t i = 0; i < c->n; i++)
        refused |= c->items[i].group == 0 && c->items[i].decided && !c->items[i].decision.allowed;
    if (took && refused) sl_shed_refund(c->cap->local, 1, c->now); /* not used after all */
}

static void items_without_redis(sl__store_worker *sw, sl__store_call *c) {
    /* closed: the first enforced limit that fails closed refuses the request */
    for (size_t i = 0; i < c->n; i++) {
        sl__store_item *it = &c->items[i];
        if (it->group != 0 || it->limit->on_failure != SL__FAIL_CLOSED) continue;
        int64_t retry = closed_retry(sw, c);
        it->decision = (sl_decision){.allowed = false,
                                     .limit = sl_params_limit(sl__store_item_params(it)),
                                     .remaining = 0,
                                     .retry_after = retry,
                                     .reset_after = retry};
        it->decided = true;
        c->from = SL__FROM_CLOSED;
        c->retry_closed = retry;
        return;
    }
    /* local: the fallback tables decide their limits together; open: allowed */
    sl_check checks[SL__STORE_MAX_ITEMS];
    const sl__plan *plans[SL__STORE_MAX_ITEMS];
    size_t idx[SL__STORE_MAX_ITEMS], nl = 0;
    c->from = SL__FROM_OPEN;
    for (size_t i = 0; i < c->n; i++) {
        sl__store_item *it = &c->items[i];
        if (it->group != 0) continue;
        if (it->limit->on_failure == SL__FAIL_LOCAL && it->limit->fallback) {
            checks[nl] = (sl_check){.table = it->limit->fallback,
                                    .key = it->key,
                                    .keylen = it->keylen,
                                    .cost = it->cost};
            plans[nl] = it->plan;
            idx[nl++] = i;
            c->from = SL__FROM_LOCAL;
        } else {
            int64_t l = sl_params_limit(sl__store_item_params(it));
            it->decision = (sl_decision){.allowed = true, .limit = l, .remaining = l};
            it->decided = true;
        }
    }
    if (nl == 0) return;
    size_t r = nl;
    int rc = sl__table_check_all_with(checks, plans, nl, c->now, &r);
    for (size_t k = 0; k < nl; k++) {
        sl__store_item *it = &c->items[idx[k]];
        it->decision = checks[k].decision;
        it->decided = rc == SL_OK || k == r;
        if (rc != SL_OK && k == r) {
            it->decision.allowed = false;
            it->decision.retry_after = -1;
        }
    }
}

/* ---- script calls -------------------------------------------------------------------- */

static void complete(sl__store_call *c) {
    sl__store_worker *sw = (sl__store_worker *)c->store;
    call_state *st = c->state;
    if (c->failed) {
        decide_without_redis(sw, c);
    } else {
        c->from = SL__FROM_REDIS;
        /* Redis's refusals go to the deny cache */
        for (size_t i = 0; sw->deny && i < c->n; i++) {
            sl__store_item *it = &c->items[i];
            /* an any-rate key (CL.THROTTLE) may be charged meanwhile under
             * other parameters, and be allowed under others: never cached */
            if (it->group != 0 || !it->decided || it->decision.allowed ||
                it->decision.retry_after <= 0 || it->cost <= 0 || it->limit->any_rate ||
                (sl__store_item_params(it)->flags & SL_COUNT_REJECTED))
                continue;
            uint64_t h1, h2;
            deny_entry *e = deny_slot(sw, st->rkey[i], st->rkeylen[i], &h1, &h2);
            *e = (deny_entry){.h1 = h1,
                              .h2 = h2,
                              .until = c->now + it->decision.retry_after,
                              .reset_until = c->now + it->decision.reset_after,
                              .limit = it->decision.limit,
                              .cost = it->cost};
            sl__counter_add(&sw->stats->deny_inserts, 1);
        }
    }
    state_free(c);
    c->done(c);
}

/* The script items of a request's part: the capacity first when it has it,
 * then its items; returns how many (pt->n, or pt->n + 1). */
static size_t script_items(const sl__store_call *c, const part *pt, sl__script_item *si) {
    const call_state *st = c->state;
    if (pt->cap) {
        const sl__store_capacity *cap = c->cap;
        *si++ = (sl__script_item){.params = &cap->params,
                                  .rkey = st->rkeys + st->cap_off,
                                  .rkeylen = st->cap_end - st->cap_off,
                                  .cost = 1,
                                  .floor = cap->floor[c->cap_priority],
                                  .group = 0};
    }
    for (size_t k = 0; k < pt->n; k++) {
        const sl__store_item *it = &c->items[pt->idx[k]];
        si[k] = (sl__script_item){.params = sl__store_item_params(it),
                                  .calendar_month = it->limit->calendar_month,
                                  .any_rate = it->limit->any_rate,
                                  .rkey = st->rkey[pt->idx[k]],
                                  .rkeylen = st->rkeylen[pt->idx[k]],
                                  .cost = it->cost,
                                  .group = it->group};
    }
    return pt->n + pt->cap;
}

/* A request's script call is over: ok, or failed (its fail modes decide). */
static void part_done(part *pt, bool ok) {
    sl__store_call *c = pt->c;
    if (!ok) c->failed = true;
    if (--c->parts_left == 0) complete(c);
}

static void flight_fail(flight *f) {
    for (size_t k = 0; k < f->nparts; k++) part_done(f->parts[k], false);
    free(f);
}

static void enqueue(sl__redis_queued **head, sl__redis_queued ***tail, sl__redis_queued *q) {
    q->next = NULL;
    if (!*head) *tail = head;
    **tail = q;
    *tail = &q->next;
}

/* What waits behind a failed script call runs now, in order, from the
 * loop: the failed calls' requests are answered by their fail modes, the
 * rest is sent. Answering a failed call where it failed would run other
 * requests' done inside the operation that sent it (a full call goes out
 * from inside the decision of the request that does not fit: its protocol
 * handler is still running, and the connection would write, release and
 * free answers under it). A call that fails again here joins the end of
 * the line, behind nothing but what this turn's dones started. */
static void on_idle(uv_idle_t *h) {
    sl__store_worker *sw = h->data;
    uv_idle_stop(&sw->idle);
    sw->idle_on = false;
    while (sw->later) {
        sl__redis_queued *q = sw->later;
        sw->later = q->next;
        q->run(q, true);
    }
}

/* q goes behind the failed calls (on_idle runs it). */
static void run_later(sl__store_worker *sw, sl__redis_queued *q) {
    enqueue(&sw->later, &sw->later_tail, q);
    if (!sw->idle_on) {
        uv_idle_start(&sw->idle, on_idle);
        sw->idle_on = true;
    }
}

static void flight_failed_run(sl__redis_queued *q, bool send) {
    (void)send;
    flight_fail((flight *)(void *)q);
}

/* f failed before Redis was asked: its requests are answered from the loop. */
static void flight_fail_later(flight *f) {
    f->q.run = flight_failed_run;
    run_later(f->sw, &f->q);
}

/* The script items of every request of f, request k's groups moved to
 * 2k + g. si has room for f->nitems. */
static void flight_items(const flight *f, sl__script_item *si) {
    size_t o = 0;
    for (size_t k = 0; k < f->nparts; k++) {
        const part *pt = f->parts[k];
        size_t m = script_items(pt->c, pt, si + o);
        for (size_t j = 0; j < m; j++) si[o + j].group += 2 * (unsigned)k;
        o += m;
    }
}

static void on_flight(void *arg, const redisReply *reply, int status);

static void flight_send(flight *f) {
    sl__store_worker *sw = f->sw;
    sl__script_item *si = malloc(f->nitems * sizeof *si);
    if (!si) {
        flight_fail_later(f);
        return;
    }
    flight_items(f, si);
    sl__buf_reset(&sw->cmd);
    /* Redis TIME, or (tests: script_now) the clock of the call's first request */
    int64_t now_us = sw->cfg->script_now ? f->parts[0]->c->now / 1000 : 0;
    /* the module where the node has it (unknown before its first connect
       has answered: the script, or with require the module) */
    int has = sl__redis_has_command(sw->redis, f->slot);
    sl__redis_module_mode mode = sw->cfg->module;
    bool cap = false; /* a capacity's floor: only the script knows it */
    for (size_t k = 0; k < f->nparts; k++) cap |= f->parts[k]->cap;
    if (mode == SL__REDIS_MODULE_REQUIRE) {
        atomic_store(&sw->stats->module_missing, has == 0);
        if (has == 0 && !cap) { /* refused: the fail modes answer */
            free(si);
            flight_fail_later(f);
            return;
        }
    }
    f->via_module = !cap && (mode == SL__REDIS_MODULE_REQUIRE ||
                             (mode == SL__REDIS_MODULE_AUTO && has == 1 && !f->no_module &&
                              uv_now(sw->loop) >= sw->no_module_until));
    sl__script_command how = f->via_module    ? SL__SCRIPT_MODULE
                             : f->with_source ? SL__SCRIPT_EVAL
                                              : SL__SCRIPT_EVALSHA;
    sl__counter_add(f->via_module ? &sw->stats->module_calls : &sw->stats->script_calls, 1);
    atomic_store(&sw->stats->module_now, f->via_module);
    sl__redis_script_format_as(&sw->cmd, how, si, f->nitems, now_us);
    free(si);
    if (sw->cmd.failed) {
        sl__buf_free(&sw->cmd);
        sl__buf_init(&sw->cmd);
        flight_fail_later(f);
        return;
    }
    /* the client may fail the call before it returns (no connection, the
       breaker open): on_flight then only marks it */
    f->sending = true;
    f->failed_now = false;
    sl__redis_call(sw->redis, f->slot, sw->cmd.data, sw->cmd.len, on_flight, f);
    f->sending = false;
    if (f->failed_now) flight_fail_later(f);
}

static void on_flight(void *arg, const redisReply *reply, int status) {
    flight *f = arg;
    sl__store_worker *sw = f->sw;
    if (f->sending) { /* failed inside sl__redis_call (never a reply): flight_send defers it */
        f->failed_now = true;
        return;
    }
    if (status == SL__REDIS_OK && reply->type == REDIS_REPLY_ERROR && !f->with_source &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        /* Redis lost the script (restart, SCRIPT FLUSH, failover): EVAL loads it again */
        sl__counter_add(&sw->stats->noscript_reloads, 1);
        f->with_source = true;
        flight_send(f);
        return;
    }
    if (status == SL__REDIS_OK && reply->type == REDIS_REPLY_ERROR && f->via_module &&
        sw->cfg->module == SL__REDIS_MODULE_AUTO &&
        strncmp(reply->str, "ERR unknown command", 19) == 0) {
        /* the module went away (MODULE UNLOAD, a failover to a node without
           it) before the next connect asks again: the script */
        f->no_module = true;
        sw->no_module_until = uv_now(sw->loop) + MODULE_RETRY_MS;
        flight_send(f);
        return;
    }
    sl__script_item *si = status == SL__REDIS_OK ? malloc(f->nitems * sizeof *si) : NULL;
    bool ok = si != NULL;
    if (ok) {
        char err[160];
        flight_items(f, si);
        if (sl__redis_script_parse(reply, si, f->nitems, err, sizeof err) != 0) {
            static _Thread_local uint64_t logged;
            if (logged++ % 10000 == 0) sl__log_warn("redis: script answer: %s", err);
            sl__counter_add(&sw->stats->script_errors, 1);
            ok = false;
        }
    }
    size_t o = 0;
    for (size_t k = 0; k < f->nparts; k++) {
        part *pt = f->parts[k];
        sl__store_call *c = pt->c;
        if (ok && pt->cap) { /* the capacity's decision (decide.lua: its floor) */
            c->cap_refused = !si[o].decision.allowed;
            c->cap_retry = si[o].decision.retry_after;
            c->cap_from = SL__FROM_REDIS;
        }
        o += pt->cap;
        for (size_t j = 0; ok && j < pt->n; j++) {
            sl__store_item *it = &c->items[pt->idx[j]];
            it->decision = si[o + j].decision;
            it->decided = si[o + j].decided;
        }
        o += pt->n;
        part_done(pt, ok);
    }
    free(si);
    free(f);
}

static void flight_run(sl__redis_queued *q, bool send);

/* q goes out now, or behind the failed calls waiting to be answered. */
static void run_in_turn(sl__store_worker *sw, sl__redis_queued *q) {
    if (sw->later)
        run_later(sw, q);
    else
        q->run(q, true);
}

/* The loop iteration is over: every script call being filled goes out. */
static void on_check(uv_check_t *h) {
    sl__store_worker *sw = h->data;
    uv_check_stop(&sw->check);
    sw->check_on = false;
    while (sw->fifo) {
        sl__redis_queued *q = sw->fifo;
        sw->fifo = q->next;
        run_in_turn(sw, q);
    }
    while (sw->nopen) {
        flight *f = sw->open[--sw->nopen];
        f->q.run = flight_run;
        run_in_turn(sw, &f->q);
    }
}

static void flight_run(sl__redis_queued *q, bool send) {
    flight *f = (flight *)(void *)q;
    if (send)
        flight_send(f);
    else
        flight_fail(f);
}

/* A call goes out now, or behind what is queued. */
static void flight_out(sl__store_worker *sw, flight *f) {
    f->q.run = flight_run;
    if (!sw->fifo) {
        run_in_turn(sw, &f->q);
        return;
    }
    enqueue(&sw->fifo, &sw->fifo_tail, &f->q);
}

void sl__redis_store_after(sl__store *s, sl__redis_queued *q) {
    sl__store_worker *sw = (sl__store_worker *)s;
    if (!sw->check_on) { /* nothing waits for the end of the iteration: now, or behind the failed */
        run_in_turn(sw, q);
        return;
    }
    while (sw->nopen) { /* the calls being filled are closed, in front of q */
        flight *f = sw->open[--sw->nopen];
        f->q.run = flight_run;
        enqueue(&sw->fifo, &sw->fifo_tail, &f->q);
    }
    enqueue(&sw->fifo, &sw->fifo_tail, q);
}

/* Adds a request to the script call of its slot being filled. */
static void send_part(sl__store_worker *sw, part *pt) {
    size_t j = 0;
    while (j < sw->nopen && sw->open[j]->slot != pt->slot) j++;
    size_t m = pt->n + pt->cap;
    if (j < sw->nopen &&
        (sw->open[j]->nparts == FLIGHT_REQUESTS || sw->open[j]->nitems + m > FLIGHT_ITEMS)) {
        flight *full = sw->open[j]; /* full: goes out now */
        sw->open[j] = sw->open[--sw->nopen];
        flight_out(sw, full);
        j = sw->nopen;
    }
    if (j == sw->nopen) {
        while (sw->nopen >= MAX_OPEN) { /* too many slots at once: the oldest goes out */
            flight *old = sw->open[0];
            sw->open[0] = sw->open[--sw->nopen];
            flight_out(sw, old);
        }
        flight *f = calloc(1, sizeof *f);
        if (!f) {
            part_done(pt, false);
            return;
        }
        f->sw = sw;
        f->slot = pt->slot;
        j = sw->nopen;
        sw->open[sw->nopen++] = f;
    }
    flight *f = sw->open[j];
    f->parts[f->nparts++] = pt;
    f->nitems += m;
    if (!sw->check_on) {
        uv_check_start(&sw->check, on_check);
        sw->check_on = true;
    }
}

static void redis_decide(sl__store *s, sl__store_call *c) {
    sl__store_worker *sw = (sl__store_worker *)s;
    c->store = s;
    c->rc = 0;
    c->rc_item = c->n;
    c->failed = false;
    c->from = SL__FROM_REDIS;
    /* the Redis keys, built once into one buffer that the call state owns */
    call_state *st = calloc(1, sizeof *st);
    sl__buf kb;
    sl__buf_init(&kb);
    size_t off[SL__STORE_MAX_ITEMS];
    for (size_t i = 0; st && i < c->n; i++) {
        c->items[i].decided = false;
        off[i] = kb.len;
        sl__redis_key(&kb, sw->cfg->prefix, c->items[i].limit->name, c->items[i].key,
                      c->items[i].keylen);
    }
    size_t cap_off = kb.len;
    if (c->cap) sl__redis_key(&kb, sw->cfg->prefix, c->cap->name, "", 0);
    if (!st || kb.failed || !kb.data) {
        sl__buf_free(&kb);
        free(st);
        c->failed = true;
        decide_without_redis(sw, c);
        c->done(c);
        return;
    }
    st->rkeys = kb.data; /* freed with the state */
    for (size_t i = 0; i < c->n; i++) {
        st->rkey[i] = kb.data + off[i];
        st->rkeylen[i] = (i + 1 < c->n ? off[i + 1] : cap_off) - off[i];
    }
    st->cap_off = cap_off;
    st->cap_end = kb.len;
    c->state = st;

    /* the deny cache: an enforced limit that Redis refused until later */
    for (size_t i = 0; sw->deny && i < c->n; i++) {
        sl__store_item *it = &c->items[i];
        if (it->group != 0 || it->cost <= 0 || it->limit->any_rate) continue;
        uint64_t h1, h2;
        deny_entry *e = deny_slot(sw, st->rkey[i], st->rkeylen[i], &h1, &h2);
        /* a smaller cost may pass sooner; one above the limit never passes (Redis says so) */
        if (e->h1 != h1 || e->h2 != h2 || e->until <= c->now || it->cost < e->cost ||
            it->cost > e->limit)
            continue;
        sl__counter_add(&sw->stats->deny_hits, 1);
        int64_t retry = e->until - c->now;
        int64_t reset = e->reset_until - c->now;
        it->decision = (sl_decision){.allowed = false,
                                     .limit = e->limit,
                                     .remaining = 0,
                                     .retry_after = retry,
                                     .reset_after = reset > retry ? reset : retry};
        it->decided = true;
        c->from = SL__FROM_DENY_CACHE; /* a capacity is not charged (nor asked) */
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
    if (np)
        st->parts[0].cap =
            c->cap != NULL; /* its first part carries it (a single node: the only one) */
    /* one extra count while sending: a part can finish before send_part
     * returns (breaker open), and the call must outlive this loop */
    c->parts_left = (int)np + 1;
    for (size_t p = 0; p < np; p++) send_part(sw, &st->parts[p]);
    if (--c->parts_left == 0) complete(c);
}
