/* table_multi.c: multi-key checks (sl_table_check_all, and the store
 * contract's groups of core/table_any.h): all or nothing across tables, with
 * an undo log of the states a refused request touched. Multi-key checks lock
 * their shards in address order (no deadlock), ask for every key's home line
 * before the first lookup (the misses of a request's keys overlap), and pin
 * their entries so that inserting one key cannot evict another of the same
 * request. */
#include "core/table_any.h"
#include "core/table_slots.h"

typedef struct held {
    shard *s;
    const sl_table *t;
    uint8_t *e;
} held;

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

/* One multi-key check in progress: the plan and time each check is decided
 * with, their probes, shards and entries. */
typedef struct group {
    sl_check *c;
    const check_opts *o;
    size_t n;
    size_t never;      /* contract: the first check whose cost can never pass */
    size_t pinned;     /* h[0..pinned) hold pinned entries */
    size_t save_bytes; /* all the states: the undo log's size */
    held h[SL_CHECK_MAX];
    const sl__plan *pl[SL_CHECK_MAX]; /* the plan each check is decided with */
    int64_t at[SL_CHECK_MAX];         /* and its time */
    shard *order[SL_CHECK_MAX];       /* the shards, sorted to be locked */
    probe pr[SL_CHECK_MAX];
    bool bad[SL_CHECK_MAX]; /* contract: its cost can never pass */
} group;

/* Each check's plan, time, arguments, probe and shard. SL_OK, or an error
 * with every decision denied and *refused the check at fault. */
static int prepare(group *g, int64_t now, size_t *refused) {
    sl_check *c = g->c;
    const check_opts *o = g->o;
    size_t n = g->n;
    held *h = g->h;
    const sl__plan **pl = g->pl;
    int64_t *at = g->at;
    for (size_t i = 0; i < n; i++) {
        pl[i] = o->plans && o->plans[i] ? o->plans[i] : &c[i].table->plan;
        at[i] = o->nows ? o->nows[i] : now;
        if (!plan_fits(c[i].table, pl[i])) {
            for (size_t j = 0; j < n; j++) deny(&c[j].decision, &c[j].table->plan);
            *refused = i;
            return SL_EINVAL;
        }
    }
    g->save_bytes = 0;
    g->never = n;
    memset(g->bad, 0, sizeof g->bad);
    for (size_t i = 0; i < n; i++) {
        int rc = check_args(pl[i], c[i].keylen, c[i].cost, at[i]);
        if (rc == SL_ECOST && o->contract) {
            g->bad[i] = true;
            if (g->never == n) g->never = i;
        } else if (rc) {
            for (size_t j = 0; j < n; j++) deny(&c[j].decision, pl[j]);
            *refused = i;
            return rc;
        }
        make_probe(c[i].table, c[i].key, c[i].keylen,
                   sl__hash(c[i].key, c[i].keylen, c[i].table->seed), &g->pr[i]);
        h[i].t = c[i].table;
        h[i].s = g->order[i] = shard_for(c[i].table, g->pr[i].h);
        g->save_bytes += pl[i]->state_size;
    }
    return SL_OK;
}

/* Sorts the n <= SL_CHECK_MAX shards by address: an insertion sort, inline
 * (libc's qsort cost about 100 instructions per check through its
 * comparison calls, as much as a lookup). */
static void sort_shards(shard **order, size_t n) {
    for (size_t i = 1; i < n; i++) {
        shard *x = order[i];
        size_t j = i;
        for (; j > 0 && (uintptr_t)order[j - 1] > (uintptr_t)x; j--) order[j] = order[j - 1];
        order[j] = x;
    }
}

/* Takes every shard lock once, in address order. */
static void lock_shards(group *g) {
    shard **order = g->order;
    size_t n = g->n;
    sort_shards(order, n);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || order[i] != order[i - 1]) shard_lock(order[i]);
}

/* Unpins the entries, then gives the locks back. */
static void unlock_shards(group *g) {
    shard **order = g->order;
    for (size_t i = 0; i < g->pinned; i++) meta_clear(g->h[i].e, META_PIN);
    for (size_t i = g->n; i-- > 0;)
        if (i == 0 || order[i] != order[i - 1]) shard_unlock(order[i]);
}

/* Finds or inserts each check's entry and pins it, then finds them again if
 * an insert moved entries. SL_OK, or an insert's error with *refused its
 * check (g->pinned says which stay pinned). */
static int pin_entries(group *g, size_t *refused) {
    held *h = g->h;
    probe *pr = g->pr;
    int rc = SL_OK;
    size_t pinned = 0;
    bool inserted = false;
    /* every key's home line asked for first: their misses overlap (a
     * request of 4 limits on 1M keys: 0.6-0.7 of the time, docs/BENCHMARKS.md) */
    for (size_t i = 0; i < g->n; i++) prefetch_home(h[i].t, h[i].s, pr[i].h);
    for (; pinned < g->n; pinned++) {
        size_t i = pinned;
        uint8_t *e = find(h[i].t, h[i].s, &pr[i]);
        uint32_t used = META_REF;
        if (!e) {
            rc = sl__table_insert(h[i].t, h[i].s, &pr[i], g->at[i], &e);
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
    g->pinned = pinned;
    /* an insert may have grown a shard and moved the entries found before */
    for (size_t i = 0; inserted && i < pinned; i++) h[i].e = find(h[i].t, h[i].s, &pr[i]);
    return rc;
}

/* The state of check i's entry. */
static inline void *state_at(const group *g, size_t i) {
    return state_of(g->h[i].t, g->h[i].e);
}

/* contract: a cost that can never pass refuses the group, nothing charged;
 * every other check is looked at. */
static int refuse_never(group *g, size_t *refused) {
    sl_check *c = g->c;
    for (size_t i = 0; i < g->n; i++) {
        if (g->bad[i])
            deny(&c[i].decision, g->pl[i]);
        else
            look(g->pl[i], state_at(g, i), &c[i], g->at[i]);
    }
    *refused = g->never;
    return SL_ECOST;
}

/* After check `first` refused: the states of checks 0..first as they were
 * (saved + offs[i]), the others looked at (peeked), count_rejected tables
 * charged as a rejection. */
static void undo(group *g, size_t first, const uint8_t *saved, const size_t *offs) {
    sl_check *c = g->c;
    const sl__plan **pl = g->pl;
    for (size_t i = first + 1; i-- > 0;) memcpy(state_at(g, i), saved + offs[i], pl[i]->state_size);
    for (size_t i = 0; i < g->n; i++) {
        if (i == first) continue;
        if (g->o->contract)
            look(pl[i], state_at(g, i), &c[i], g->at[i]);
        else
            sl__decide(pl[i], state_at(g, i), c[i].cost, g->at[i], SL__PEEK, &c[i].decision);
    }
    for (size_t i = 0; i < g->n; i++) {
        if (!pl[i]->count_rejected) continue;
        sl_decision charged;
        sl__decide(pl[i], state_at(g, i), c[i].cost, g->at[i], SL__CHARGE, &charged);
        if (g->o->contract) c[i].decision = charged; /* the state it is left in */
    }
}

/* Decides the checks in order, each state saved (into saved) before it is
 * charged; at the first refusal undo() and *refused that check. */
static void decide_group(group *g, uint8_t *saved, size_t *refused) {
    sl_check *c = g->c;
    size_t n = g->n;
    size_t off = 0, first = n;
    size_t offs[SL_CHECK_MAX];
    for (size_t i = 0; i < n; i++) {
        const sl__plan *plan = g->pl[i];
        offs[i] = off;
        memcpy(saved + off, state_at(g, i), plan->state_size);
        off += plan->state_size;
        /* record only if allowed; rejections are charged below, once (the
         * plan is copied only when it counts rejections) */
        if (plan->count_rejected) {
            sl__plan strict = *plan;
            strict.count_rejected = false;
            sl__decide(&strict, state_at(g, i), c[i].cost, g->at[i], SL__APPLY, &c[i].decision);
        } else {
            sl__decide(plan, state_at(g, i), c[i].cost, g->at[i], SL__APPLY, &c[i].decision);
        }
        if (!c[i].decision.allowed) {
            first = i;
            break;
        }
    }
    if (first < n) {
        undo(g, first, saved, offs);
        *refused = first;
    }
}

static int check_all(sl_check *c, const check_opts *o, size_t n, int64_t now, size_t *refused) {
    size_t dummy;
    if (!refused) refused = &dummy;
    *refused = n;
    if (n > SL_CHECK_MAX) return SL_ETOOMANY;
    if (n == 0) return SL_OK;

    group g;
    g.c = c;
    g.o = o;
    g.n = n;
    g.pinned = 0;
    int rc = prepare(&g, now, refused);
    if (rc) return rc;

    /* Undo log: each state as it was before this request touched it. */
    _Alignas(16) uint8_t small[SL_CHECK_MAX * 24];
    uint8_t *saved = small;
    if (g.save_bytes > sizeof small) {
        saved = malloc(g.save_bytes);
        if (!saved) return SL_ENOMEM;
    }

    lock_shards(&g);
    rc = pin_entries(&g, refused);
    if (rc == SL_OK && g.never < n)
        rc = refuse_never(&g, refused);
    else if (rc == SL_OK)
        decide_group(&g, saved, refused);
    else
        for (size_t j = 0; j < n; j++) deny(&c[j].decision, g.pl[j]);
    unlock_shards(&g);
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
