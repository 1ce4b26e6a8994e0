/* memory.c: the memory store (see memory.h): a group is
 * sl__table_check_group over the limits' tables (the group contract of
 * store.h, as the Redis script decides it), with the calendar quotas' clock;
 * the shadow group after the enforced one, a look at it when that refuses. */
#include "store/memory.h"

#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/table_any.h"
#include "sluice/error.h"
#include "store/lease.h"
#include "store/retry.h"

#define NS_DAY       (86400 * SL_NS_PER_SEC)
#define MONTH_PERIOD (31 * NS_DAY) /* the calendar clock's month (config.c makes the tables) */
#define STRIPE_SEED  UINT64_C(0x736c7569636571)
#define NONE         SIZE_MAX

int sl__store_limit_stripes(sl__store_limit *l) {
    l->stripes = malloc(SL__STORE_STRIPES * sizeof *l->stripes);
    if (!l->stripes) return SL_ENOMEM;
    for (int i = 0; i < SL__STORE_STRIPES; i++) pthread_mutex_init(&l->stripes[i], NULL);
    return SL_OK;
}

void sl__store_limit_stripes_free(sl__store_limit *l) {
    if (!l->stripes) return;
    for (int i = 0; i < SL__STORE_STRIPES; i++) pthread_mutex_destroy(&l->stripes[i]);
    free(l->stripes);
    l->stripes = NULL;
}

/* ---- calendar months -------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's
 * algorithms, integer only). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void sl__calendar_month(int64_t now, int64_t *index, int64_t *start, int64_t *length) {
    int64_t days = now >= 0 ? now / NS_DAY : -1 - (-(now + 1) / NS_DAY); /* floor */
    int64_t y;
    unsigned m;
    civil_from_days(days, &y, &m);
    int64_t first = days_from_civil(y, m, 1);
    int64_t next = m == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, m + 1, 1);
    *index = (y - 1970) * 12 + (int64_t)m - 1;
    *start = first * NS_DAY;
    *length = (next - first) * NS_DAY;
}

/* The calendar clock at `now`, and the days it skips at the end of this
 * month (31 days minus its length). */
static int64_t calendar_now(int64_t now, int64_t *slack) {
    int64_t index, start, length;
    sl__calendar_month(now, &index, &start, &length);
    *slack = MONTH_PERIOD - length;
    if (index < 0) return -1; /* before 1970: refused by the table as SL_EINVAL */
    return index * MONTH_PERIOD + (now - start);
}

/* Turns durations on the calendar clock into real ones: the end of a
 * window is `slack` nearer in real time. */
static void calendar_fix(sl_decision *d, int64_t slack) {
    if (d->retry_after > slack) d->retry_after -= slack;
    if (d->reset_after > slack) d->reset_after -= slack;
}

static pthread_mutex_t *stripe(const sl__store_limit *l, const void *key, size_t keylen) {
    return &l->stripes[sl__hash(key, keylen, STRIPE_SEED) & (SL__STORE_STRIPES - 1)];
}

/* sl_table_check (with the item's plan, any-rate) and the calendar clock
 * for calendar quotas. */
static int table_check(sl__store_limit *l, const struct sl__plan *plan, const void *key,
                       size_t keylen, int64_t cost, int64_t now, sl_decision *d) {
    if (plan) return sl__table_check_with(l->table, plan, key, keylen, cost, now, d);
    if (!l->stripes) return sl_table_check(l->table, key, keylen, cost, now, d);
    pthread_mutex_t *m = stripe(l, key, keylen);
    int64_t slack;
    int64_t cnow = calendar_now(now, &slack);
    pthread_mutex_lock(m);
    int rc = sl_table_check(l->table, key, keylen, cost, cnow, d);
    pthread_mutex_unlock(m);
    calendar_fix(d, slack);
    return rc;
}

int sl__memory_peek(sl__store_limit *l, const void *key, size_t keylen, int64_t now,
                    sl_decision *d) {
    return table_check(l, NULL, key, keylen, 0, now, d);
}

/* ---- groups ------------------------------------------------------------------- */

static void peek_all(sl__store_item *items, const size_t *idx, size_t n, int64_t now) {
    for (size_t k = 0; k < n; k++) {
        sl__store_item *it = &items[idx[k]];
        it->decided =
            table_check(it->limit, it->plan, it->key, it->keylen, 0, now, &it->decision) == SL_OK;
    }
}

/* Decides the items idx[0..n) as one all-or-nothing group, the contract of
 * store.h, in the order given (sl__table_check_group: every table's shards
 * locked together, calendar quotas on their clock). *refused gets the item
 * index of the refusal (of a cost that can never pass, with SL_ECOST; of a
 * table error), or NONE. Returns 0 or the table error. */
static int check_group(sl__store_item *items, const size_t *idx, size_t n, int64_t now,
                       size_t *refused) {
    *refused = NONE;
    if (n == 1 && !items[idx[0]].limit->stripes) { /* the common case: one limit, no undo log */
        sl__store_item *it = &items[idx[0]];
        int rc =
            table_check(it->limit, it->plan, it->key, it->keylen, it->cost, now, &it->decision);
        it->decided = true;
        if (rc != SL_OK || !it->decision.allowed) *refused = idx[0];
        return rc;
    }
    sl_check checks[SL__STORE_MAX_ITEMS];
    const struct sl__plan *plans[SL__STORE_MAX_ITEMS] = {0};
    int64_t nows[SL__STORE_MAX_ITEMS] = {0};
    int64_t slack = 0, cnow = 0;
    bool calendar = false;
    for (size_t k = 0; k < n; k++) {
        const sl__store_item *it = &items[idx[k]];
        checks[k] = (sl_check){
            .table = it->limit->table, .key = it->key, .keylen = it->keylen, .cost = it->cost};
        plans[k] = it->plan;
        nows[k] = now;
        if (it->limit->stripes) { /* a calendar quota: its table runs on the calendar clock */
            if (!calendar) cnow = calendar_now(now, &slack);
            calendar = true;
            nows[k] = cnow;
        }
    }
    size_t r = n;
    int rc = sl__table_check_group(checks, plans, nows, n, &r);
    for (size_t k = 0; k < n; k++) {
        sl__store_item *it = &items[idx[k]];
        it->decision = checks[k].decision;
        it->decided = true;
        if (it->limit->stripes) calendar_fix(&it->decision, slack);
    }
    if (r < n) *refused = idx[r];
    return rc;
}

/* Item r has a cost that can never pass: the table denied it (allowed 0,
 * remaining 0, retry_after -1, reset_after 0: store.h), the others of its
 * group were looked at. An any-rate item (CL.THROTTLE) describes its key as
 * it is instead, as redis-cell does. */
static void never(sl__store_item *it, int64_t now) {
    sl_decision d;
    if (it->limit->any_rate &&
        table_check(it->limit, it->plan, it->key, it->keylen, 0, now, &d) == SL_OK) {
        it->decision = d;
        it->decision.allowed = false;
        it->decision.retry_after = -1;
    }
    it->decided = true;
}

void sl__memory_decide(sl__store_call *c) {
    size_t g0[SL__STORE_MAX_ITEMS], g1[SL__STORE_MAX_ITEMS], n0 = 0, n1 = 0;
    c->from = SL__FROM_REDIS;
    c->rc = SL_OK;
    c->rc_item = c->n;
    for (size_t i = 0; i < c->n; i++) {
        c->items[i].decided = false;
        if (c->items[i].group)
            g1[n1++] = i;
        else
            g0[n0++] = i;
    }
    size_t r;
    int rc = check_group(c->items, g0, n0, c->now, &r);
    if (rc == SL_ECOST && r != NONE) {
        never(&c->items[r], c->now);
        rc = SL_OK;
    }
    if (rc != SL_OK) {
        c->rc = rc;
        c->rc_item = r == NONE ? c->n : r;
    } else if (r != NONE) {
        peek_all(c->items, g1, n1, c->now);
    } else if (n1) {
        rc = check_group(c->items, g1, n1, c->now, &r);
        if (rc == SL_ECOST && r != NONE)
            never(&c->items[r], c->now);
        else if (rc != SL_OK) /* a table error in the shadow group: it is only looked at */
            peek_all(c->items, g1, n1, c->now);
    }
    c->done(c);
}

void sl__memory_forget(sl__store_call *c, bool fallback) {
    c->from = SL__FROM_REDIS;
    c->rc = SL_OK;
    c->rc_item = c->n;
    for (size_t i = 0; i < c->n; i++) {
        sl__store_item *it = &c->items[i];
        sl_table *t = atomic_load_explicit(&it->limit->table, memory_order_acquire);
        sl_table *fb =
            fallback ? atomic_load_explicit(&it->limit->fallback, memory_order_acquire) : NULL;
        int rc = t && !it->limit->stripes ? sl_table_forget(t, it->key, it->keylen) : 0;
        if (fb && rc >= 0) sl_table_forget(fb, it->key, it->keylen);
        if (rc < 0 && c->rc == SL_OK) {
            c->rc = rc;
            c->rc_item = i;
        }
        it->decided = rc == 1;
    }
    c->done(c);
}

static void memory_forget(sl__store *s, sl__store_call *c) {
    (void)s;
    sl__memory_forget(c, false);
}

static void memory_decide(sl__store *s, sl__store_call *c) {
    (void)s;
    sl__memory_decide(c);
}

static void memory_free(sl__store *s) {
    (void)s;
}

static const sl__store_ops memory_ops = {.decide = memory_decide,
                                         .free = memory_free,
                                         .lease = sl__memory_lease,
                                         .forget = memory_forget,
                                         .retry = sl__memory_retry};
static sl__store memory_store = {.ops = &memory_ops};

sl__store *sl__memory_store(void) {
    return &memory_store;
}

int64_t sl__memory_charge_shared(sl__store_limit *l, const void *key, size_t keylen, int64_t n,
                                 int64_t now, unsigned others) {
    sl_decision d;
    if (n <= 0 || table_check(l, NULL, key, keylen, 0, now, &d) != SL_OK) return 0;
    int64_t take = n < d.remaining ? n : d.remaining;
    if (take > 0 && table_check(l, NULL, key, keylen, take, now, &d) == SL_OK && !d.allowed)
        take = 0;
    int64_t left = n - take;
    int64_t limit = d.limit > 0 ? d.limit : 1;
    int64_t cap =
        limit > INT64_MAX / (others ? others : 1) ? INT64_MAX : limit * (others ? others : 1);
    return left < cap ? left : cap;
}
