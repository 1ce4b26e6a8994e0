/* decide.h: the one decision engine. Every protocol's decision (/v1/check,
 * SL.CHECK, /v1/auth rules, Envoy descriptors over gRPC and POST /json,
 * CL.THROTTLE) is "decide these limits, all or nothing, shadow limits as
 * their own group": a call of items, sl__engine_decide, and the caller's done.
 *
 * The engine is written once for every store (store/store.h): it groups
 * the items (an item is shadow if its use says so or its limit is in
 * shadow mode), hands them to the worker's store, and when the store has
 * decided it counts (allowed / limited / shadow_limited per limit, the
 * `from` counters of fail modes, the near-limit histogram), feeds the
 * rejected-keys and near-limit sketches (with the call's labels), writes
 * the shadow log, and sets rc / refused. A shadow
 * limit that refused is reported allowed with retry_after 0 (shadowed).
 *
 * Process-wide, sl__engine_new builds what the config's store needs
 * (batched mode's records, the Redis settings, the counters); per worker,
 * sl__engine_worker_new gives the worker its decider (its store: the
 * memory store, its Redis store, or its batched store). Nothing above this
 * header knows which store it is. */
#ifndef SLUICE_POLICY_DECIDE_H
#define SLUICE_POLICY_DECIDE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/topk.h"
#include "policy/config.h"
#include "sluice/table.h"
#include "store/store.h"

#define SL__ENGINE_MAX_WORKERS 256

/* The near-limit histogram (sluice_decision_remaining_ratio): a decision
 * falls in bucket b, the first whose bound k/100 it does not exceed
 * (remaining * 100 <= limit * k, in integers), k in SL__RATIO_BOUNDS; one more
 * bucket for anything above 1 (none today: remaining never exceeds limit). */
#define SL__RATIO_BUCKETS 7
#define SL__RATIO_BOUNDS                                                                           \
    { 0, 1, 5, 10, 25, 50, 100 }
/* An allowed decision is "near" its limit when it left at most a tenth of it
 * (remaining * SL__NEAR_DIVISOR <= limit): the keys of /v1/top?by=near. */
#define SL__NEAR_DIVISOR 10

/* A limit as the engine sees it: what the stores see, and its counters. */
typedef struct sl__decide_limit {
    sl__store_limit store; /* first */
    atomic_uint_fast64_t allowed, limited, shadow_limited;
    atomic_bool shadow; /* every use of it is a dry run (may change without new state) */
    sl__topk *top;      /* the rejected keys (labels), or NULL */
    sl__topk *near;     /* the keys allowed near their limit (labels), or NULL */
    /* remaining / limit after each decision: counts per bucket (not
       cumulative; the last is above 1) and the sum in millionths */
    atomic_uint_fast64_t ratio[SL__RATIO_BUCKETS + 1];
    atomic_uint_fast64_t ratio_sum;
    /* the shadow log's line for a refusal it would have made (label: as in
       the sketch); NULL: "shadow: policy <name> would have refused <label>" */
    void (*log_shadow)(const struct sl__decide_limit *l, const char *label, size_t len,
                       const sl_decision *d, int64_t now);
    /* ramp_up (sluice/ramp.h, policy/ramp.h), or NULL: store.params are then
       the unit params, each use is charged sl_ramp_cost at the factor of the
       server's ramp (its start: sl__ramp_started) and its decision turned
       back into requests (sl_ramp_decision) before anything reads it */
    const sl_ramp *ramp;
    /* with ramp: the most one request is charged when it fits (units; 0: the
       whole limit): a local fallback's share, so that a lone request passes
       there too at the lowest factors */
    int64_t ramp_cap;
} sl__decide_limit;

/* Zeroes l's counters and flags (the store part is the owner's to fill). */
void sl__decide_limit_init(sl__decide_limit *l, bool shadow);

/* One limit of a call. */
typedef struct sl__decide_item {
    /* in */
    sl__decide_limit *limit;
    const void *key; /* copied into the call by sl__decide_call_new */
    size_t keylen;
    int64_t cost;
    bool shadow;                 /* a dry run for this use (a shadow rule), besides the limit's */
    const sl_params *params;     /* any-rate limits: this call's parameters */
    const struct sl__plan *plan; /* ... compiled */
    uint8_t any_group;           /* 0: required; k > 0: in "any" group k (see below) */
    /* out */
    sl_decision decision;
    bool decided;        /* decision is meaningful */
    bool shadowed;       /* refused, but allowed because shadow */
    bool shadow_group;   /* decided in the shadow group */
    bool dropped;        /* its "any" group refused and was left out: not charged */
    int64_t ramp_factor; /* internal: the factor a ramped limit was decided at */
} sl__decide_item;

/* Writes a human label for item i's key (the sketch's key; no API key in
 * clear) into buf (size bytes) and returns its length. */
typedef size_t (*sl__decide_label_fn)(void *ctx, size_t i, char *buf, size_t size);

typedef struct sl__decide_call sl__decide_call;
typedef void (*sl__decide_fn)(sl__decide_call *c);

/* The server's load-shedding capacity (sluice/shed.h, the config's
 * shedding:), built with the policy set (sl__policy_set_shed). */
typedef sl__store_capacity sl__decide_capacity;

/* "Any" groups (Envoy's quota_mode, docs/envoy.md): the enforced items
 * with any_group 0 are required; those with any_group k > 0 form group k.
 * The call passes when every required item passes and, if there are any
 * groups, at least one whole group passes. The engine decides it on the
 * store's own all-or-nothing contract, so every store is exact alike: it
 * asks for everything; when the refusal is an item of an "any" group while
 * another group is left, that group is dropped (its items marked dropped,
 * their decisions those of that try: nothing of it is charged) and the rest
 * is asked again, at most once per group. So a call that passes charges the
 * required items and every group that still passed given the charges
 * before it; a call that refuses charges nothing (count_rejected excepted:
 * each try that refuses charges them, so the domains refuse quota_mode
 * with charge_refused_hits). Shadow items ignore any_group.
 *
 * A decision in progress. Outcome (valid in done):
 * - rc 0: decided; refused is the index of the enforced item that refused
 *   (the first), or n when the request passes;
 * - rc SL_ECOST: item `refused`'s cost can never pass; other rc: a table
 *   error of item `refused` (or n); nothing was charged, nothing counted;
 * - from / retry_closed: where the decision came from (store.h). */
struct sl__decide_call {
    sl__decide_item items[SL_CHECK_MAX];
    size_t n;
    int rc;
    size_t refused;
    sl__store_from from;
    int64_t retry_closed;
    /* load shedding (sl__decide_call_shed): shed when the capacity refused
       the call (rc 0, refused n: no item decided, charged or counted), and
       shed_retry ns until its priority would pass */
    bool shed;
    int64_t shed_retry;
    sl__decide_fn done; /* set by the caller before sl__engine_decide */
    void *arg;
    /* internal */
    sl__store_call sc;
    sl__store *store;           /* the store deciding it (tries of "any" groups) */
    uint8_t map[SL_CHECK_MAX];  /* store item -> call item (the items not dropped) */
    size_t cap;                 /* bytes allocated */
    struct sl__policy_set *set; /* sl__decide_call_hold: held once the call outlives its start */
    bool set_held;
    bool *inline_mark; /* while starting: set when done ran inline */
    void (*on_free)(void *arg);
    void *on_free_arg;
    char *labels[SL_CHECK_MAX];
    uint16_t label_len[SL_CHECK_MAX];
    sl__decide_label_fn later; /* sl__decide_call_label_later: until sl__engine_decide returns */
    void *later_ctx;
    char *later_labels; /* where they were copied when the call went on (heap) */
    void *user;
    sl__decide_capacity *capacity; /* sl__decide_call_shed */
    sl_priority priority;
    bool cap_local; /* a token of capacity->local was taken (given back if refused) */
};

/* A call for items[0..n) (n at most SL_CHECK_MAX): copies them, their keys
 * and (label given) their labels, and reserves `user_bytes` for the
 * caller (sl__decide_call_user, aligned for any type, zeroed). One
 * allocation. NULL: out of memory, or n too large. */
sl__decide_call *sl__decide_call_new(const sl__decide_item *items, size_t n,
                                     sl__decide_label_fn label, void *ctx, size_t user_bytes);
/* The same, except that the first `own` of the user_bytes are not zeroed:
 * the caller writes what it reads of them at once (a domain call's state,
 * about 10 KiB of which a request uses a few hundred bytes). */
sl__decide_call *sl__decide_call_new_own(const sl__decide_item *items, size_t n,
                                         sl__decide_label_fn label, void *ctx, size_t user_bytes,
                                         size_t own);
void *sl__decide_call_user(sl__decide_call *c);
/* Labels formatted only when needed, instead of eagerly by sl__decide_call_new:
 * fn(ctx, i, ...) runs for item i when a refusal of it is counted while the
 * call completes inside sl__engine_decide (the memory store: most calls), or
 * for every item just before sl__engine_decide returns when the call goes on
 * without it (the Redis store; the labels are then copied into the call). So
 * ctx must live until sl__engine_decide returns, no longer. A label is only
 * needed on a refusal. Without labels (given neither way) the key is used. */
void sl__decide_call_label_later(sl__decide_call *c, sl__decide_label_fn fn, void *ctx);
/* The call keeps set (its policies) alive until freed: set must be alive
 * when sl__engine_decide starts the call, and a reference is taken only if
 * the call does not complete inline. */
void sl__decide_call_hold(sl__decide_call *c, struct sl__policy_set *set);
/* c will be started after its caller's frame is gone (a retry budget that
 * answers later, store/retry.h): its labels are made now and its set (given
 * to sl__decide_call_hold) is held until it is freed. */
void sl__decide_call_detach(sl__decide_call *c);
/* Load shedding: the call first takes one token of cap (the set's, which
 * the call must hold: sl__decide_call_hold) at priority p, all or nothing
 * with its enforced items: a call the capacity refuses is shed (c->shed,
 * nothing else decided); a call its items refuse leaves the capacity as it
 * was. Scope process: this server's shedder, decided here; fleet: the store
 * decides it for the fleet (store.h), with the capacity's fail mode when
 * Redis fails. NULL cap: none. */
void sl__decide_call_shed(sl__decide_call *c, sl__decide_capacity *cap, sl_priority p);
/* fn(arg) runs when the call is freed (a domain call releases its set). */
void sl__decide_call_on_free(sl__decide_call *c, void (*fn)(void *arg), void *arg);
void sl__decide_call_free(sl__decide_call *c);

typedef struct sl__decider sl__decider;
typedef struct sl__engine sl__engine;

/* Decides c on d's store (NULL: the memory store) and calls c->done
 * exactly once, maybe before it returns (always, on the memory store).
 * `now`: the worker's clock. */
void sl__engine_decide(sl__decider *d, sl__decide_call *c, int64_t now);
/* The same on a given store (what sl__engine_decide does with d's; for
 * tests that drive a store of their own). */
void sl__engine_decide_on(sl__store *store, sl__decide_call *c, int64_t now);

/* Forgets the state of each item's (limit, key) on d's store (NULL: the
 * memory store), as if never used (store.h: forget): in done,
 * items[i].decided says whether the store held one; rc 0, or a table error
 * of item `refused`; from: SL__FROM_OPEN when Redis failed (nothing known).
 * Nothing is counted. c->done exactly once, maybe before it returns. */
void sl__engine_forget(sl__decider *d, sl__decide_call *c, int64_t now);

/* A decider on the memory store, for whoever has no worker (tests, tools):
 * shared, never freed. */
sl__decider *sl__decider_memory(void);

/* The process-wide engine for cfg's store (copies what it needs of cfg).
 * NULL: out of memory. */
sl__engine *sl__engine_new(const sl__config *cfg);
/* After every decider is freed (and their loops ran). */
void sl__engine_free(sl__engine *e);
/* Worker `id`'s decider (id < SL__ENGINE_MAX_WORKERS), on its loop.
 * *policies is the worker's current policy set, read on that loop (batched
 * mode's syncs charge the fleet's use to it). NULL: out of memory or a
 * connection that could not be set up. */
sl__decider *sl__engine_worker_new(sl__engine *e, uv_loop_t *loop, unsigned id,
                                   struct sl__policy_set *const *policies);
/* Calls in flight are answered first (fail modes); the loop must run
 * afterwards for what it closes. NULL is fine. */
void sl__decider_free(sl__decider *d);
/* True once each time d's store recovered: its health (sl__engine_report.up,
 * this worker's part) went from down to up after it had been up. d's loop
 * only (the worker's tick); always false for the memory store. */
bool sl__decider_recovered(sl__decider *d);

/* d's store, for the operations that are not decisions (concurrency
 * leases: policy/lease_set.h; retry budgets: policy/retry_stage.h). Only
 * the policy layer calls it: no file under src/server/ does (the protocols
 * go through those two headers; tests/names.cmake, server_layering). */
sl__store *sl__decider_store(sl__decider *d);

/* What /metrics, /readyz and INFO print of the store (summed over workers). */
typedef struct sl__engine_report {
    bool redis, batched; /* store.type redis; sync: batched */
    int up;              /* 1: every worker reaches Redis (always 1 in memory) */
    int breakers_open;
    uint64_t ok, errors, timeouts, rejected_open, latency_sum_us;
    uint64_t moved, ask, reconnects, slot_refreshes;
    uint64_t noscript_reloads, script_errors, deny_hits, deny_inserts;
    uint64_t module_calls, script_calls; /* decision calls by command */
    int module_missing;                  /* workers refused by module: require */
    int module_workers, workers; /* workers whose latest call went as SLUICE.DECIDE, of all */
    uint64_t syncs, keys_synced, failed_syncs; /* batched mode */
} sl__engine_report;
void sl__engine_stats(const sl__engine *e, unsigned nworkers, sl__engine_report *out);

#endif
