/* store.h: the store interface: one way to decide a group of limits, one
 * completion contract, whatever keeps the state.
 *
 * A store decides a call: n items, each one configured limit (an
 * sl__store_limit, bound when its policy set, domain set or CL.THROTTLE
 * table is built) used with a key and a cost, in group 0 (enforced) or 1
 * (shadow). The contract, the same for every store:
 * - sl__store_decide calls c->done exactly once, either before it returns
 *   or later from a callback of the worker's loop (the memory store and
 *   batched mode always before; the Redis store before only when its deny
 *   cache answers, or its fail modes for lack of memory). The one rule, for
 *   every operation (decide, forget, lease, and a try the engine starts
 *   from a done): an operation completes no call but its own. A done never
 *   runs inside another call's operation, so a protocol handler may write
 *   its own answer when done runs inline and never meets another request's
 *   answer being written, released or freed under it. The Redis store keeps
 *   it where a call to Redis fails before it is sent (no connection, the
 *   breaker open, a full script call sent from inside the request that does
 *   not fit, the module required and missing): a script call carries other
 *   requests, so it is answered from the loop (redis_store.c, on_idle); a
 *   forget's DELs and a lease's script call carry only their own call, and
 *   answer it inline then;
 * - group 0 is all-or-nothing, its items decided in the order given (each
 *   sees the charges of the items before it; the same key twice adds up;
 *   calendar-month quotas like any other limit): it passes only if every
 *   item passes, and then every item is charged; if one refuses, that
 *   first refusing item is the group's refusal and nothing is charged,
 *   count_rejected items excepted: they are charged as a rejection (never
 *   beyond empty), in order;
 * - if group 0 passed, group 1 is decided as its own all-or-nothing group,
 *   the same way; its count_rejected items are charged as a rejection when
 *   it refuses too (shadow mode is a dry run of enforcement: the limit
 *   counts what it would count if enforced, docs/semantics.md); if group 0
 *   refused, group 1 is only looked at (cost 0, nothing charged);
 * - when a group refuses, the refusing item reports why (given the items
 *   before it); every other item reports what its limit says at its cost
 *   with nothing charged (a look: an allowed one has its cost given back in
 *   remaining, its durations as after the charge); a count_rejected item
 *   the decision of its charge instead (the state it is left in);
 * - a cost that can never pass (above the limit of a window, the burst of
 *   a bucket) refuses its group with nothing charged at all (count_rejected
 *   neither): that item's decision is allowed 0, remaining 0, retry_after
 *   -1, reset_after 0 (the first such item is the refusal); every other
 *   item is a look as above;
 * - c->from says where the decision came from (the memory store: always
 *   SL__FROM_REDIS, "the store itself"); c->rc is 0, or a table error
 *   (SL_EKEY, SL_ENOMEM, SL_EINVAL) of item c->rc_item, nothing charged.
 * redis_script.h states the same groups for the script; test_differential.c
 * checks that both stores answer alike, field by field.
 *
 * The stores (each behind sl__store_ops, built by the engine only,
 * policy/decide.h):
 * - memory.h: the limits' own tables, decided inline;
 * - redis_store.h: Redis (exact mode), with the deny cache, fail modes,
 *   breaker and per-slot flights;
 * - batch.h: batched mode, the memory store plus the records of what this
 *   server charged and owes the fleet. */
#ifndef SLUICE_STORE_STORE_H
#define SLUICE_STORE_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/shed.h"
#include "sluice/table.h"
#include "store/redis_client.h"
#include "store/redis_config.h"

#define SL__STORE_MAX_ITEMS 16 /* = SL_CHECK_MAX */
#define SL__STORE_STRIPES   64 /* key stripes of a calendar quota (memory store) */

/* Where a decision came from. */
typedef enum sl__store_from {
    SL__FROM_REDIS = 0, /* the store itself (Redis, or the memory tables) */
    SL__FROM_DENY_CACHE,
    SL__FROM_OPEN,   /* Redis failed: allowed (fail open) */
    SL__FROM_CLOSED, /* Redis failed: refused (fail closed) */
    SL__FROM_LOCAL,  /* Redis failed: decided by the local fallback table */
    SL__FROM_COUNT
} sl__store_from;

/* The fail mode that made a decision: "open", "closed" or "local"; NULL
 * when the store itself decided (SL__FROM_REDIS, SL__FROM_DENY_CACHE). The one
 * spelling of answers' fallback fields, headers and metric labels. */
static inline const char *sl__store_fallback_name(sl__store_from from) {
    return from == SL__FROM_OPEN     ? "open"
           : from == SL__FROM_CLOSED ? "closed"
           : from == SL__FROM_LOCAL  ? "local"
                                     : NULL;
}

/* One configured limit as the stores see it. Filled by its owner (a
 * policy, a domain limit, CL.THROTTLE's table), which keeps it alive while
 * calls use it. */
typedef struct sl__store_limit {
    const char *name;        /* the Redis key namespace (a policy's name, "cell:tat", ...) */
    const sl_params *params; /* NULL for an any-rate limit: each item brings its own */
    bool calendar_month;     /* a calendar-month quota (fixed window of 31 days) */
    bool any_rate;           /* GCRA whose state is read under any parameters (CL.THROTTLE) */
    /* the memory store's state: set before the limit's first use (an owner
       may create it then: Envoy rules' tables are made on first use) */
    _Atomic(sl_table *) table;
    pthread_mutex_t
        *stripes; /* calendar quotas: SL__STORE_STRIPES locks (sl__store_limit_stripes) */
    sl__fail_mode on_failure;     /* the Redis store: what to do when Redis fails */
    _Atomic(sl_table *) fallback; /* ... and its local table (fail mode local), or NULL */
    atomic_uint_fast64_t from[SL__FROM_COUNT]; /* decisions of its enforced uses, by origin */
} sl__store_limit;

/* Gives l the stripe locks of a calendar quota. Returns 0 or SL_ENOMEM. */
int sl__store_limit_stripes(sl__store_limit *l);
/* Destroys what sl__store_limit_stripes made (not the tables: their owner's). */
void sl__store_limit_stripes_free(sl__store_limit *l);

/* A load-shedding capacity (sluice/shed.h: a token bucket with a floor per
 * priority), owned by the policy set (policy.c). `local` is this server's
 * shedder: the whole capacity (scope process, decided by the engine), or
 * with `fleet` its share at rate / expected_instances, used when Redis
 * fails (on_failure local). With `fleet` a store whose ops have `capacity`
 * decides it for the whole fleet: one key (`name`) in Redis. */
typedef struct sl__store_capacity {
    bool fleet;
    const char *name;             /* the Redis key's name part (not a policy name) */
    sl_params params;             /* a token bucket: the capacity's rate and burst */
    int64_t floor[SL_PRIORITIES]; /* tokens a take must leave, by priority (the reserves) */
    sl__fail_mode on_failure;     /* fleet: when Redis fails (closed: only critical passes) */
    sl_shed *local;
    atomic_uint_fast64_t from[SL__FROM_COUNT]; /* fleet: its decisions by origin */
} sl__store_capacity;

/* One limit of a call. */
typedef struct sl__store_item {
    /* in */
    sl__store_limit *limit;
    const sl_params *params;     /* any-rate: this call's parameters; else NULL (the limit's) */
    const struct sl__plan *plan; /* any-rate: params compiled (core/table_any.h) */
    const char *key;             /* lives until done */
    size_t keylen;
    int64_t cost;
    unsigned group; /* 0 enforced, 1 shadow */
    /* out */
    sl_decision decision;
    bool decided;
} sl__store_item;

typedef struct sl__store_call sl__store_call;
typedef void (*sl__store_done_fn)(sl__store_call *c);

struct sl__store_call {
    sl__store_item items[SL__STORE_MAX_ITEMS];
    size_t n;
    int64_t now;          /* the worker's clock */
    sl__store_from from;  /* out */
    int64_t retry_closed; /* out, SL__FROM_CLOSED: ns until Redis is tried again */
    int rc;               /* out: 0, or a table error of item rc_item (memory store) */
    size_t rc_item;
    /* in: a fleet capacity (sl__store_capacity.fleet; only for a store with
       ops.capacity) the call takes one token of at priority cap_priority,
       as the first item of group 0: if it refuses, group 0 refuses with
       nothing charged (its items are looked at, or not decided); if an
       item of group 0 refuses, it is not charged. NULL: none. */
    sl__store_capacity *cap;
    sl_priority cap_priority;
    /* out: refused by the capacity, and when this priority would pass (ns);
       cap_from: who decided it (Redis, or its fail mode) */
    bool cap_refused;
    int64_t cap_retry;
    sl__store_from cap_from;
    sl__store_done_fn done;
    void *arg;
    /* the store's own, while deciding */
    struct sl__store *store;
    void *state;
    int parts_left;
    bool failed;
};

/* A parameter set's params: the item's own (any-rate), else its limit's. */
static inline const sl_params *sl__store_item_params(const sl__store_item *it) {
    return it->params ? it->params : it->limit->params;
}

/* Counters of one worker's store (written by it, read by /metrics). */
typedef struct sl__store_stats {
    sl__redis_stats redis; /* its Redis client */
    atomic_uint_fast64_t deny_hits, deny_inserts;
    atomic_uint_fast64_t script_errors;
    atomic_uint_fast64_t noscript_reloads;
    /* decision calls sent as SLUICE.DECIDE (sluice-redis.so) and as the script */
    atomic_uint_fast64_t module_calls, script_calls;
    atomic_int module_missing; /* module: require, and the worker's node lacks it */
    atomic_int module_now;     /* its latest decision call went as SLUICE.DECIDE */
} sl__store_stats;

typedef struct sl__store sl__store;
struct sl__lease_call;
struct sl__retry_call;
typedef struct sl__store_ops {
    /* Decides c (the contract above). */
    void (*decide)(sl__store *s, sl__store_call *c);
    /* Frees the store: calls in flight are answered first (fail modes);
     * the loop must run afterwards for what it closes. */
    void (*free)(sl__store *s);
    /* Acquires, releases or renews a lease of a concurrency limit
     * (store/lease.h, the same completion contract); NULL: the store has
     * none (batched mode). */
    void (*lease)(sl__store *s, struct sl__lease_call *c);
    /* Forgets the state of each item's (limit, key), as if never used
     * (CL.THROTTLE's DEL): item.decided says whether there was one (the
     * store's own; the Redis store's local fallback table is emptied of the
     * key too but not counted); c->rc 0, or SL_EKEY / SL_ENOMEM of
     * c->rc_item; c->from as for decide (a Redis that failed: SL__FROM_OPEN,
     * nothing known, only the fallback forgotten); c->done exactly once,
     * maybe before it returns, under decide's rule (an operation completes
     * no call but its own). Calendar quotas are not forgotten. */
    void (*forget)(sl__store *s, sl__store_call *c);
    /* Counts a first attempt or decides a retry of a policy's retry budget
     * (store/retry.h, the same completion contract). */
    void (*retry)(sl__store *s, struct sl__retry_call *c);
    /* decides a fleet capacity (sl__store_call.cap); else the engine takes
       the capacity's local share */
    bool capacity;
} sl__store_ops;

struct sl__store {
    const sl__store_ops *ops;
};

static inline void sl__store_decide(sl__store *s, sl__store_call *c) {
    s->ops->decide(s, c);
}
static inline void sl__store_forget(sl__store *s, sl__store_call *c) {
    s->ops->forget(s, c);
}
static inline void sl__store_free(sl__store *s) {
    if (s) s->ops->free(s);
}

#endif
