/* cell.c: redis-cell's CL.THROTTLE on libsluice (see cell.h).
 *
 * redis-cell's GCRA, in its terms: emission interval T = period / count,
 * delay variation tolerance tau = T * (max_burst + 1); a request of
 * quantity q is allowed iff max(tat, now) + q*T - now <= tau. That is
 * libsluice's SL_GCRA with rate count/period and burst max_burst + 1, and
 * the reply fields map one to one:
 *   limited     = !allowed
 *   limit       = burst = max_burst + 1
 *   remaining   = floor((tau - ttl) / T)                 (decision.remaining)
 *   retry_after = -1 if allowed, else the time until it would pass
 *   reset_after = ttl: time until the key is fresh again (decision.reset_after)
 * Differences, by design (docs/resp.md): T is the exact fraction
 * period/count, where redis-cell truncates it to whole nanoseconds (so for
 * 3 per second redis-cell's bucket drains a little faster than 3/s); and the
 * clock is sluiced's, read once per loop tick.
 *
 * State, as redis-cell keeps it: one tat per key, whatever the parameters.
 * All keys live in one any-rate table (core/table_any.h) with the server's
 * one memory cap; each call compiles its parameters into a plan and the
 * table judges the key's tat with it. A call with other parameters than the
 * last one sees the key's tat as it is (redis-cell's behaviour when a
 * caller changes limits on the fly), so there is no registry of parameter
 * sets: nothing a client sends can fill one, and memory is bounded by the
 * cap alone. Idle keys (tat <= now: fresh under any parameters) are dropped
 * by the table without changing any answer.
 *
 * A quantity above max_burst + 1 can never pass: like redis-cell, the reply
 * is limited with retry_after -1, and remaining / reset_after describe the
 * key as it is (a peek). */
#include <stdbool.h>
#include <stdlib.h>

#include "core/table_any.h"
#include "policy/cell.h"
#include "sluice/sluice.h"

/* The key of a CL.THROTTLE state in Redis: "<prefix>{key}:cell:tat". The
 * colon keeps it apart from every policy's keys ("<prefix>{key}:<policy>",
 * and policy names have no colon). */
#define REDIS_NAME "cell:tat"

struct sl__cell {
    sl__decide_limit lim; /* the engine's limit: its table is an any-rate GCRA of every key,
                            also the Redis store's local fallback */
};

/* redis-cell's generic errors read "Cell error: Store error: <message>" (its
 * GenericError's text); the other Cell errors are sluiced's own cases. */
static const char ERR_ZERO[] = "Cell error: Store error: Zero rates are not supported";
static const char ERR_NEG_RATE[] = "Cell error: Negative rates are not supported";
static const char ERR_NEG_BURST[] = "Cell error: max_burst must not be negative";
static const char ERR_NEG_QTY[] = "Cell error: quantity must not be negative";
static const char ERR_RANGE[] = "Cell error: Parameters out of range";
static const char ERR_NOMEM[] = "ERR out of memory";
static const char ERR_KEY[] = "ERR key too long";
static const char ERR_CLOCK[] = "ERR clock out of range";
static const char ERR_INTERNAL[] = "ERR internal error";

int sl__cell_create(size_t max_memory, sl__cell **out) {
    if (!out) return SL_EINVAL;
    *out = NULL;
    sl__cell *c = calloc(1, sizeof *c);
    if (!c) return SL_ENOMEM;
    /* the table's own rate is never used: every call brings its own plan */
    sl_table_options o = {
        .params = {.algorithm = SL_GCRA, .rate = {.limit = 1, .period = SL_NS_PER_SEC}, .burst = 1},
        .max_memory = max_memory};
    sl_table *t;
    int rc = sl__table_create_any_rate(&o, &t);
    if (rc != SL_OK) {
        free(c);
        return rc == SL_ENOMEM ? SL_ENOMEM : SL_EINVAL;
    }
    sl__decide_limit_init(&c->lim, false);
    c->lim.store = (sl__store_limit){.name = REDIS_NAME,
                                     .any_rate = true,
                                     .table = t,
                                     .fallback = t,
                                     .on_failure = SL__FAIL_OPEN};
    *out = c;
    return SL_OK;
}

void sl__cell_destroy(sl__cell *c) {
    if (!c) return;
    sl_table_destroy(c->lim.store.table);
    free(c);
}

/* redis-cell's rounding of a duration to seconds: truncate, then +1 if the
 * part below the second has whole milliseconds (0.0005 s rounds to 0). */
static int64_t cell_seconds(int64_t ns) {
    int64_t s = ns / SL_NS_PER_SEC;
    if ((ns % SL_NS_PER_SEC) / SL_NS_PER_MS > 0) s++;
    return s;
}

/* Copies msg into err[0..errlen) (NULL or 0: nowhere) and returns code. */
static int fail(int code, const char *msg, char *err, size_t errlen) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return code;
}

/* Validates the arguments and compiles them into *plan and *params. Returns
 * 0, or a negative SL_E* code with its message in err. */
static int cell_plan(int64_t max_burst, int64_t count, int64_t period, int64_t quantity,
                     sl__plan *plan, sl_params *params, char *err, size_t errlen) {
    if (count == 0 || period == 0) return fail(SL_ERATE, ERR_ZERO, err, errlen);
    if (count < 0 || period < 0) return fail(SL_ERATE, ERR_NEG_RATE, err, errlen);
    if (max_burst < 0) return fail(SL_EBURST, ERR_NEG_BURST, err, errlen);
    if (quantity < 0) return fail(SL_ECOST, ERR_NEG_QTY, err, errlen);
    if (max_burst == INT64_MAX || period > INT64_MAX / SL_NS_PER_SEC)
        return fail(SL_EOVERFLOW, ERR_RANGE, err, errlen);
    *params = (sl_params){.algorithm = SL_GCRA,
                          .rate = {.limit = count, .period = period * SL_NS_PER_SEC},
                          .burst = max_burst + 1};
    if (sl__plan_any_rate(plan, params) != SL_OK) return fail(SL_EOVERFLOW, ERR_RANGE, err, errlen);
    return 0;
}

static void cell_reply(int64_t max_burst, const sl_decision *d, bool never, int64_t reply[5]) {
    bool limited = never || !d->allowed;
    reply[0] = limited;
    reply[1] = max_burst + 1;
    reply[2] = d->remaining;
    reply[3] = limited && !never ? cell_seconds(d->retry_after) : -1;
    reply[4] = cell_seconds(d->reset_after);
}

sl__decide_call *sl__cell_forget_prepare(sl__cell *c, const char *const *keys, const size_t *lens,
                                         size_t n, size_t user_bytes) {
    if (n == 0 || n > SL__CELL_DEL_MAX) return NULL;
    sl__decide_item it[SL__CELL_DEL_MAX];
    for (size_t i = 0; i < n; i++)
        it[i] = (sl__decide_item){.limit = &c->lim, .key = keys[i], .keylen = lens[i]};
    return sl__decide_call_new(it, n, NULL, NULL, user_bytes);
}

long long sl__cell_forgotten(sl__decide_call *call, char *err, size_t errlen) {
    if (call->rc != SL_OK)
        return fail(call->rc,
                    call->rc == SL_EKEY     ? ERR_KEY
                    : call->rc == SL_ENOMEM ? ERR_NOMEM
                                            : ERR_INTERNAL,
                    err, errlen);
    if (call->from != SL__FROM_REDIS) /* a fallback: no store error code says it */
        return fail(SL_EINVAL, "ERR the store could not be reached: nothing is known to be deleted",
                    err, errlen);
    long long removed = 0;
    for (size_t i = 0; i < call->n; i++) removed += call->items[i].decided;
    return removed;
}

void sl__cell_set_fail_mode(sl__cell *c, sl__fail_mode on_failure) {
    c->lim.store.on_failure = on_failure;
}

/* What a CL.THROTTLE call keeps in its engine call: the items point at it. */
typedef struct throttle {
    sl_params params;
    sl__plan plan;
    int64_t max_burst;
} throttle;

#define THROTTLE_BYTES ((sizeof(throttle) + 15) & ~(size_t)15)

int sl__cell_prepare(sl__cell *c, const char *key, size_t keylen, int64_t max_burst, int64_t count,
                     int64_t period, int64_t quantity, size_t user_bytes, sl__decide_call **out,
                     char *err, size_t errlen) {
    throttle t;
    *out = NULL;
    int rc = cell_plan(max_burst, count, period, quantity, &t.plan, &t.params, err, errlen);
    if (rc != 0) return rc;
    if (keylen > SL_KEY_MAX) return fail(SL_EKEY, ERR_KEY, err, errlen);
    t.max_burst = max_burst;
    sl__decide_item it = {.limit = &c->lim, .key = key, .keylen = keylen, .cost = quantity};
    sl__decide_call *call = sl__decide_call_new(&it, 1, NULL, NULL, THROTTLE_BYTES + user_bytes);
    if (!call) return fail(SL_ENOMEM, ERR_NOMEM, err, errlen);
    throttle *u = sl__decide_call_user(call);
    *u = t;
    call->items[0].params = &u->params;
    call->items[0].plan = &u->plan;
    *out = call;
    return 0;
}

void *sl__cell_user(sl__decide_call *call) {
    return (char *)sl__decide_call_user(call) + THROTTLE_BYTES;
}

int sl__cell_finish(sl__decide_call *call, int64_t reply[5], char *err, size_t errlen) {
    const throttle *t = sl__decide_call_user(call);
    const sl__decide_item *it = &call->items[0];
    switch (call->rc) {
    case SL_OK:
    case SL_ECOST: /* quantity > max_burst + 1: the key as it is, limited for good */
        break;
    case SL_EKEY:
        return fail(SL_EKEY, ERR_KEY, err, errlen);
    case SL_EINVAL:
        return fail(SL_EINVAL, ERR_CLOCK, err, errlen);
    case SL_ENOMEM:
        return fail(SL_ENOMEM, ERR_NOMEM, err, errlen);
    default:
        return fail(call->rc < 0 ? call->rc : SL_EINVAL, ERR_INTERNAL, err, errlen);
    }
    if (!it->decided) return fail(SL_EINVAL, ERR_INTERNAL, err, errlen);
    cell_reply(t->max_burst, &it->decision, it->decision.retry_after < 0, reply);
    return 0;
}

void sl__cell_stats(sl__cell *c, uint64_t *keys, uint64_t *bytes, uint64_t *evicted_live) {
    sl_table_stats st;
    sl_table_stats_get(c->lim.store.table, &st);
    if (keys) *keys = st.keys;
    if (bytes) *bytes = st.bytes;
    if (evicted_live) *evicted_live = st.evicted_live;
}

size_t sl__cell_sweep(sl__cell *c, int64_t now, size_t max_visits) {
    return sl_table_sweep(c->lim.store.table, now, max_visits);
}
