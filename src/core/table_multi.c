/* table_multi.c: multi-key checks (sl_table_check_all, and the store
 * contract's groups of core/table_any.h): all or nothing across tables, with
 * an undo log of the states a refused request touched. Multi-key checks lock
 * their shards in address order (no deadlock) and pin their entries so that
 * inserting one key cannot evict another of the same request. */
#include "core/table_any.h"
#include "core/table_slots.h"

typedef struct held {
    shard *s;
    const sl_table *t;
    uint8_t *e;
} held;

static int cmp_shard(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (shard *const *)a, y = (uintptr_t) * (shard *const *)b;
    return (x > y) - (x < y);
}

/* How check_all decides: sl_table_check_all's way, or the store contract's
 * (sl__table_check_group: a time per check, the others of a cost that can
 * never pass looked at, count_rejected charges reported). */
typedef struct check_opts {
    const sl__plan *const *plans; /* NULL, or per check (NULL: its table's plan) */
    const int64_t *nows;          /* NULL, or per check: its time */
    bool contract;
} check_opts;

/* A look at check i: its decision at its cost with nothing charged; when
 * allowed, its remaining gets the cost back (remaining is the floor of what
 * is left and costs are whole: exact), so that it says what the limit has. */
static void look(const sl__plan *plan, void *st, sl_check *c, int64_t now) {
    sl__decide(plan, st, c->cost, now, SL__PEEK, &c->decision);
    if (c->decision.allowed && c->decision.remaining <= INT64_MAX - c->cost)
        c->decision.remaining += c->cost;
}

static int check_all(sl_check *c, const check_opts *o, size_t n, int64_t now, size_t *refused) {
    size_t dummy;
    if (!refused) refused = &dummy;
    *refused = n;
    if (n > SL_CHECK_MAX) return SL_ETOOMANY;
    if (n == 0) return SL_OK;

    held h[SL_CHECK_MAX];
    const sl__plan *pl[SL_CHECK_MAX]; /* the plan each check is decided with */
    int64_t at[SL_CHECK_MAX];         /* and its time */
    for (size_t i = 0; i < n; i++) {
        pl[i] = o->plans && o->plans[i] ? o->plans[i] : &c[i].table->plan;
        at[i] = o->nows ? o->nows[i] : now;
        if (!plan_fits(c[i].table, pl[i])) {
            for (size_t j = 0; j < n; j++) deny(&c[j].decision, &c[j].table->plan);
            *refused = i;
            return SL_EINVAL;
        }
    }
    shard *order[SL_CHECK_MAX];
    probe pr[SL_CHECK_MAX];
    size_t save_bytes = 0;
    size_t never = n; /* contract: the first check whose cost can never pass */
    bool bad[SL_CHECK_MAX] = {0};
    for (size_t i = 0; i < n; i++) {
        int rc = check_args(pl[i], c[i].keylen, c[i].cost, at[i]);
        if (rc == SL_ECOST && o->contract) {
            bad[i] = true;
            if (never == n) never = i;
        } else if (rc) {
            for (size_t j = 0; j < n; j++) deny(&c[j].decision, pl[j]);
            *refused = i;
            return rc;
        }
        make_probe(c[i].table, c[i].key, c[i].keylen,
                   sl__hash(c[i].key, c[i].keylen, c[i].table->seed), &pr[i]);
        h[i].t = c[i].table;
        h[i].s = order[i] = shard_for(c[i].table, pr[i].h);
        save_bytes += pl[i]->state_size;
    }

    /* Undo log: each state as it was before this request touched it. */
    _Alignas(16) uint8_t small[SL_CHECK_MAX * 24];
    uint8_t *saved = small;
    if (save_bytes > sizeof small) {
        saved = malloc(save_bytes);
        if (!saved) return SL_ENOMEM;
    }

    qsort(order, n, sizeof order[0], cmp_shard);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || order[i] != order[i - 1]) shard_lock(order[i]);

    int rc = SL_OK;
    size_t pinned = 0;
    bool inserted = false;
    for (; pinned < n; pinned++) {
        size_t i = pinned;
        uint8_t *e = find(h[i].t, h[i].s, &pr[i]);
        uint32_t used = META_REF;
        if (!e) {
            rc = sl__table_insert(h[i].t, h[i].s, &pr[i], at[i], &e);
            used = 0;
            inserted = true;
        }
        if (rc) {
            *refused = i;
            break;
        }
        meta_set(e, META_PIN | used);
        h[i].e = e;
    }
    /* an insert may have grown a shard and moved the entries found before */
    for (size_t i = 0; inserted && i < pinned; i++) h[i].e = find(h[i].t, h[i].s, &pr[i]);

    if (rc == SL_OK && never < n) {
        /* contract: a cost that can never pass refuses the group, nothing
           charged; every other check is looked at */
        for (size_t i = 0; i < n; i++) {
            if (bad[i])
                deny(&c[i].decision, pl[i]);
            else
                look(pl[i], state_of(h[i].t, h[i].e), &c[i], at[i]);
        }
        *refused = never;
        rc = SL_ECOST;
    } else if (rc == SL_OK) {
        size_t off = 0, first = n;
        size_t offs[SL_CHECK_MAX];
        for (size_t i = 0; i < n; i++) {
            const sl__plan *plan = pl[i];
            offs[i] = off;
            memcpy(saved + off, state_of(h[i].t, h[i].e), plan->state_size);
            off += plan->state_size;
            /* record only if allowed; rejections are charged below, once */
            sl__plan strict = *plan;
            strict.count_rejected = false;
            sl__decide(&strict, state_of(h[i].t, h[i].e), c[i].cost, at[i], SL__APPLY,
                       &c[i].decision);
            if (!c[i].decision.allowed) {
                first = i;
                break;
            }
        }
        if (first < n) {
            for (size_t i = first + 1; i-- > 0;)
                memcpy(state_of(h[i].t, h[i].e), saved + offs[i], pl[i]->state_size);
            for (size_t i = 0; i < n; i++) {
                if (i == first) continue;
                if (o->contract)
                    look(pl[i], state_of(h[i].t, h[i].e), &c[i], at[i]);
                else
                    sl__decide(pl[i], state_of(h[i].t, h[i].e), c[i].cost, at[i], SL__PEEK,
                               &c[i].decision);
            }
            for (size_t i = 0; i < n; i++) {
                if (!pl[i]->count_rejected) continue;
                sl_decision charged;
                sl__decide(pl[i], state_of(h[i].t, h[i].e), c[i].cost, at[i], SL__CHARGE, &charged);
                if (o->contract) c[i].decision = charged; /* the state it is left in */
            }
            *refused = first;
        }
    } else {
        for (size_t j = 0; j < n; j++) deny(&c[j].decision, pl[j]);
    }

    for (size_t i = 0; i < pinned; i++) meta_clear(h[i].e, META_PIN);
    for (size_t i = n; i-- > 0;)
        if (i == 0 || order[i] != order[i - 1]) shard_unlock(order[i]);
    if (saved != small) free(saved);
    return rc;
}

int sl_table_check_all(sl_check *c, size_t n, int64_t now, size_t *refused) {
    return check_all(c, &(check_opts){0}, n, now, refused);
}

int sl__table_check_all_with(sl_check *c, const sl__plan *const *plans, size_t n, int64_t now,
                             size_t *refused) {
    return check_all(c, &(check_opts){.plans = plans}, n, now, refused);
}

int sl__table_check_group(sl_check *c, const sl__plan *const *plans, const int64_t *nows, size_t n,
                          size_t *refused) {
    return check_all(c, &(check_opts){.plans = plans, .nows = nows, .contract = true}, n,
                     nows && n ? nows[0] : 0, refused);
}
