/* test_fairq.c: the weighted fair queue (sluice/fairq.h):
 * - worked examples of the order of service: equal weights, weights 3:1,
 *   costs against a quantum (the classic DRR picture), a tenant arriving
 *   late, rounds nobody can use skipped at once;
 * - removals (middle, head, the last item of a tenant, stale ids) and the
 *   deficit reset of a tenant whose queue empties;
 * - the bounds (items, per tenant, tenants, cost, key length, options):
 *   a refused push changes nothing;
 * - random operation sequences against a reference model (a slow, obvious
 *   DRR written here: arrays, linear scans, one visit at a time);
 * - the header's fairness inequality on random traces, for every pair of
 *   tenants and every stretch of pops where both stay backlogged;
 * - threads pushing and popping together lose and duplicate nothing (also
 *   under TSan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

static sl_fairq *make(size_t items, size_t tenants, size_t per, int64_t max_cost, int64_t quantum) {
    sl_fairq_options o = {.max_items = items,
                          .max_tenants = tenants,
                          .max_per_tenant = per,
                          .max_cost = max_cost,
                          .quantum = quantum};
    sl_fairq *q = NULL;
    assert_int_equal(sl_fairq_create(&o, &q), SL_OK);
    return q;
}

/* Items are tagged with a small string "a1", "b3", ...: the pointer is the
 * tag itself (static storage), so the order of service reads as a word. */
static void push(sl_fairq *q, const char *tenant, int64_t cost, const char *tag) {
    assert_int_equal(sl_fairq_push(q, tenant, strlen(tenant), cost, (void *)tag, NULL), SL_OK);
}

static uint64_t push_id(sl_fairq *q, const char *tenant, int64_t cost, const char *tag) {
    uint64_t id = 0;
    assert_int_equal(sl_fairq_push(q, tenant, strlen(tenant), cost, (void *)tag, &id), SL_OK);
    assert_true(id != 0);
    return id;
}

/* Pops n items and writes their tags, space-separated, into buf. */
static const char *pops(sl_fairq *q, int n, char *buf, size_t size) {
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        sl_fairq_item it;
        if (!sl_fairq_pop(q, &it)) break;
        if (buf[0]) strncat(buf, " ", size - strlen(buf) - 1);
        strncat(buf, (const char *)it.ptr, size - strlen(buf) - 1);
    }
    return buf;
}

static const char *const A[] = {"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10"};
static const char *const B[] = {"b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10"};

static void equal_weights_take_turns(void **state) {
    (void)state;
    sl_fairq *q = make(100, 10, 0, 1, 1);
    push(q, "a", 1, "a1");
    push(q, "a", 1, "a2");
    push(q, "a", 1, "a3");
    push(q, "b", 1, "b1");
    char buf[256];
    assert_string_equal(pops(q, 10, buf, sizeof buf), "a1 b1 a2 a3");
    sl_fairq_item it;
    assert_false(sl_fairq_pop(q, &it));
    assert_null(it.ptr);
    sl_fairq_counts c;
    sl_fairq_counts_get(q, &c);
    assert_int_equal(c.items, 0);
    assert_int_equal(c.backlogged, 0);
    assert_int_equal(c.tenants, 0); /* idle tenants of weight 1 are forgotten */
    sl_fairq_destroy(q);
}

static void weights_three_to_one(void **state) {
    (void)state;
    sl_fairq *q = make(100, 10, 0, 1, 1);
    assert_int_equal(sl_fairq_set_weight(q, "a", 1, 3), SL_OK);
    assert_int_equal(sl_fairq_weight(q, "a", 1), 3);
    assert_int_equal(sl_fairq_weight(q, "b", 1), 1);
    for (int i = 0; i < 8; i++) push(q, "a", 1, A[i]);
    for (int i = 0; i < 8; i++) push(q, "b", 1, B[i]);
    char buf[256];
    assert_string_equal(pops(q, 100, buf, sizeof buf),
                        "a1 a2 a3 b1 a4 a5 a6 b2 a7 a8 b3 b4 b5 b6 b7 b8");
    sl_fairq_counts c;
    sl_fairq_counts_get(q, &c);
    assert_int_equal(c.tenants, 1); /* "a" is idle but keeps its weight */
    assert_int_equal(sl_fairq_set_weight(q, "a", 1, 1), SL_OK);
    sl_fairq_counts_get(q, &c);
    assert_int_equal(c.tenants, 0);
    sl_fairq_destroy(q);
}

static void costs_against_the_quantum(void **state) {
    (void)state;
    /* quantum 500: "a" sends two jobs of 1000, "b" ten of 100. "a" needs two
     * visits per job; "b" spends its 500 on five jobs per visit. */
    sl_fairq *q = make(100, 10, 0, 1000, 500);
    push(q, "a", 1000, "A1");
    push(q, "a", 1000, "A2");
    for (int i = 0; i < 10; i++) push(q, "b", 100, B[i]);
    char buf[256];
    assert_string_equal(pops(q, 100, buf, sizeof buf), "b1 b2 b3 b4 b5 A1 b6 b7 b8 b9 b10 A2");
    /* the default quantum is max_cost: every visit serves at least one item */
    sl_fairq_destroy(q);
    q = make(100, 10, 0, 1000, 0);
    push(q, "a", 1000, "A1");
    push(q, "a", 1000, "A2");
    for (int i = 0; i < 10; i++) push(q, "b", 100, B[i]);
    assert_string_equal(pops(q, 100, buf, sizeof buf), "A1 b1 b2 b3 b4 b5 b6 b7 b8 b9 b10 A2");
    sl_fairq_destroy(q);
}

static void a_late_tenant_is_served_next_round(void **state) {
    (void)state;
    /* quantum 1: the newcomer is served right after the visit in progress */
    sl_fairq *q = make(100, 10, 0, 1, 1);
    for (int i = 0; i < 5; i++) push(q, "big", 1, A[i]);
    char buf[256];
    assert_string_equal(pops(q, 2, buf, sizeof buf), "a1 a2");
    push(q, "small", 1, "s1");
    assert_string_equal(pops(q, 100, buf, sizeof buf), "s1 a3 a4 a5");
    sl_fairq_destroy(q);

    /* quantum 3: the visit in progress (3 jobs) finishes first */
    q = make(100, 10, 0, 1, 3);
    for (int i = 0; i < 8; i++) push(q, "big", 1, A[i]);
    assert_string_equal(pops(q, 1, buf, sizeof buf), "a1");
    push(q, "small", 1, "s1");
    push(q, "tiny", 1, "t1");
    assert_string_equal(pops(q, 100, buf, sizeof buf), "a2 a3 s1 t1 a4 a5 a6 a7 a8");
    sl_fairq_destroy(q);
}

static void idle_rounds_are_skipped(void **state) {
    (void)state;
    /* a quantum of 1 against costs of 2^40: a visit-by-visit pop would take
     * 2^40 rounds; the skip makes it one pass, with the same order */
    int64_t big = INT64_C(1) << 40;
    sl_fairq *q = make(100, 10, 0, SL_FAIRQ_COST_MAX, 1);
    push(q, "a", big, "a1");
    assert_int_equal(sl_fairq_set_weight(q, "b", 1, 2), SL_OK);
    push(q, "b", big, "b1"); /* weight 2: half the rounds */
    push(q, "c", big - 1, "c1");
    push(q, "a", 1, "a2");
    char buf[256];
    /* b needs 2^39 visits, c 2^40 - 1, a 2^40 */
    assert_string_equal(pops(q, 100, buf, sizeof buf), "b1 c1 a1 a2");
    /* the largest cost with the smallest quantum */
    push(q, "z", SL_FAIRQ_COST_MAX, "z1");
    assert_string_equal(pops(q, 100, buf, sizeof buf), "z1");
    sl_fairq_destroy(q);
}

static void removals(void **state) {
    (void)state;
    sl_fairq *q = make(100, 10, 0, 1, 1);
    uint64_t a1 = push_id(q, "a", 1, "a1");
    uint64_t a2 = push_id(q, "a", 1, "a2");
    uint64_t a3 = push_id(q, "a", 1, "a3");
    uint64_t b1 = push_id(q, "b", 1, "b1");
    void *p = NULL;
    assert_int_equal(sl_fairq_remove(q, a2, &p), SL_OK); /* the middle */
    assert_string_equal((const char *)p, "a2");
    assert_int_equal(sl_fairq_remove(q, a2, &p), SL_EINVAL); /* twice */
    assert_int_equal(sl_fairq_remove(q, 0, NULL), SL_EINVAL);
    assert_int_equal(sl_fairq_remove(q, (uint64_t)7 << 32 | 1000, NULL), SL_EINVAL);
    assert_int_equal(sl_fairq_tenant_items(q, "a", 1), 2);
    sl_fairq_item it;
    assert_true(sl_fairq_pop(q, &it));
    assert_string_equal((const char *)it.ptr, "a1");
    assert_int_equal(it.id, a1);
    assert_int_equal(sl_fairq_remove(q, a1, NULL), SL_EINVAL); /* popped */
    assert_int_equal(sl_fairq_remove(q, b1, NULL), SL_OK);     /* b leaves the ring */
    sl_fairq_counts c;
    sl_fairq_counts_get(q, &c);
    assert_int_equal(c.items, 1);
    assert_int_equal(c.backlogged, 1);
    assert_int_equal(c.tenants, 1);
    /* a slot reused by a new item gets a new id: the old one stays stale */
    uint64_t b2 = push_id(q, "b", 1, "b2");
    assert_true(b2 != b1);
    assert_int_equal(sl_fairq_remove(q, b1, NULL), SL_EINVAL);
    char buf[256];
    /* b2 joined behind a, whose visit was in progress: it ends at a3 */
    assert_string_equal(pops(q, 100, buf, sizeof buf), "b2 a3");
    assert_int_equal(sl_fairq_remove(q, a3, NULL), SL_EINVAL);
    sl_fairq_destroy(q);

    /* the head's last item removed in the middle of its visit */
    q = make(100, 10, 0, 1, 2);
    push(q, "a", 1, "a1");
    uint64_t x = push_id(q, "a", 1, "a2");
    push(q, "b", 1, "b1");
    assert_string_equal(pops(q, 1, buf, sizeof buf), "a1");
    assert_int_equal(sl_fairq_remove(q, x, NULL), SL_OK);
    push(q, "a", 1, "a3"); /* a rejoins behind b */
    assert_string_equal(pops(q, 100, buf, sizeof buf), "b1 a3");
    sl_fairq_destroy(q);
}

static void an_emptied_tenant_loses_its_deficit(void **state) {
    (void)state;
    /* quantum 1, a weighs 2 (so it stays known when idle) and its item costs
     * 3: its first visit leaves a deficit of 2 */
    sl_fairq *q = make(100, 10, 0, 3, 1);
    assert_int_equal(sl_fairq_set_weight(q, "a", 1, 2), SL_OK);
    uint64_t a = push_id(q, "a", 3, "a1");
    push(q, "b", 1, "b1");
    char buf[256];
    assert_string_equal(pops(q, 1, buf, sizeof buf), "b1");
    assert_int_equal(sl_fairq_remove(q, a, NULL), SL_OK); /* deficit back to 0 */
    push(q, "a", 3, "a2");
    push(q, "c", 1, "c1");
    /* with its 2 kept, a would be served first (2 + 2 >= 3); from 0 it is not */
    assert_string_equal(pops(q, 100, buf, sizeof buf), "c1 a2");
    sl_fairq_destroy(q);
}

static void bounds(void **state) {
    (void)state;
    sl_fairq *q = make(5, 2, 3, 10, 10);
    sl_fairq_counts c;
    push(q, "a", 1, "a1");
    push(q, "a", 1, "a2");
    push(q, "a", 1, "a3");
    assert_int_equal(sl_fairq_push(q, "a", 1, 1, NULL, NULL), SL_ETOOMANY); /* per tenant */
    push(q, "b", 1, "b1");
    assert_int_equal(sl_fairq_push(q, "c", 1, 1, NULL, NULL), SL_ETOOMANY); /* tenants */
    assert_int_equal(sl_fairq_set_weight(q, "c", 1, 2), SL_ETOOMANY);
    assert_int_equal(sl_fairq_set_weight(q, "c", 1, 1), SL_OK); /* the default: nothing to keep */
    push(q, "b", 1, "b2");
    assert_int_equal(sl_fairq_push(q, "b", 1, 1, NULL, NULL), SL_ETOOMANY); /* items */
    sl_fairq_counts_get(q, &c);
    assert_int_equal(c.items, 5);
    assert_int_equal(c.tenants, 2);
    assert_int_equal(sl_fairq_tenant_items(q, "a", 1), 3);
    assert_int_equal(sl_fairq_tenant_items(q, "b", 1), 2);
    assert_int_equal(sl_fairq_tenant_items(q, "c", 1), 0);
    char buf[256];
    assert_string_equal(pops(q, 100, buf, sizeof buf), "a1 a2 a3 b1 b2");
    /* both forgotten: room for others */
    push(q, "c", 1, "c1");
    assert_int_equal(sl_fairq_set_weight(q, "d", 1, 5), SL_OK);
    assert_int_equal(sl_fairq_push(q, "e", 1, 1, NULL, NULL), SL_ETOOMANY);
    push(q, "d", 1, "d1");
    assert_string_equal(pops(q, 100, buf, sizeof buf), "c1 d1");
    sl_fairq_counts_get(q, &c);
    assert_int_equal(c.tenants, 1); /* d keeps its weight */
    assert_int_equal(sl_fairq_set_weight(q, "d", 1, 1), SL_OK);

    /* costs and keys */
    assert_int_equal(sl_fairq_push(q, "a", 1, 11, NULL, NULL), SL_ECOST);
    assert_int_equal(sl_fairq_push(q, "a", 1, -1, NULL, NULL), SL_ECOST);
    push(q, "a", 0, "free");
    push(q, "", 10, "empty key");
    assert_string_equal(pops(q, 100, buf, sizeof buf), "free empty key");
    char *longkey = malloc(SL_KEY_MAX + 1);
    memset(longkey, 'k', SL_KEY_MAX + 1);
    assert_int_equal(sl_fairq_push(q, longkey, SL_KEY_MAX + 1, 1, NULL, NULL), SL_EKEY);
    assert_int_equal(sl_fairq_set_weight(q, longkey, SL_KEY_MAX + 1, 2), SL_EKEY);
    assert_int_equal(sl_fairq_push(q, longkey, SL_KEY_MAX, 1, "long", NULL), SL_OK);
    assert_string_equal(pops(q, 100, buf, sizeof buf), "long");
    free(longkey);
    assert_int_equal(sl_fairq_set_weight(q, "a", 1, 0), SL_EINVAL);
    assert_int_equal(sl_fairq_set_weight(q, "a", 1, SL_FAIRQ_WEIGHT_MAX + 1), SL_EINVAL);
    assert_int_equal(sl_fairq_set_weight(q, "a", 1, SL_FAIRQ_WEIGHT_MAX), SL_OK);
    sl_fairq_destroy(q);

    /* options */
    sl_fairq *bad = (sl_fairq *)1;
    sl_fairq_options o = {.max_items = 0, .max_tenants = 1};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_EINVAL);
    assert_null(bad);
    o = (sl_fairq_options){.max_items = 1, .max_tenants = 0};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_EINVAL);
    o = (sl_fairq_options){.max_items = 2, .max_tenants = 1, .max_per_tenant = 3};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_EINVAL);
    o = (sl_fairq_options){.max_items = 2, .max_tenants = 1, .max_cost = SL_FAIRQ_COST_MAX + 1};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_EINVAL);
    o = (sl_fairq_options){.max_items = 2, .max_tenants = 1, .quantum = -1};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_EINVAL);
    o = (sl_fairq_options){.max_items = 2, .max_tenants = 1, .quantum = SL_FAIRQ_QUANTUM_MAX + 1};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_EINVAL);
    o = (sl_fairq_options){.max_items = (size_t)SL_FAIRQ_ITEMS_MAX + 1, .max_tenants = 1};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_EINVAL);
    assert_int_equal(sl_fairq_create(NULL, &bad), SL_EINVAL);
    sl_fairq_destroy(NULL);
    /* max_cost 0 means 1 */
    o = (sl_fairq_options){.max_items = 2, .max_tenants = 1};
    assert_int_equal(sl_fairq_create(&o, &bad), SL_OK);
    assert_int_equal(sl_fairq_push(bad, "a", 1, 2, NULL, NULL), SL_ECOST);
    assert_int_equal(sl_fairq_push(bad, "a", 1, 1, NULL, NULL), SL_OK);
    sl_fairq_destroy(bad); /* with an item still queued */
}

/* ---- the reference model -------------------------------------------------------- */

#define RT     6   /* tenants */
#define RITEMS 256 /* items ever pushed in one sequence, at most */

typedef struct ref {
    int64_t quantum;
    size_t max_items, max_tenants, max_per_tenant;
    int64_t max_cost;
    int queue[RT][RITEMS]; /* item numbers, oldest first */
    int qlen[RT];
    int64_t cost[RITEMS];
    int owner[RITEMS];
    int64_t deficit[RT];
    uint32_t weight[RT];
    int ring[RT]; /* tenants with items, ring[0] the head */
    int nring;
    int visiting;
} ref;

static int ref_known(const ref *r) {
    int n = 0;
    for (int t = 0; t < RT; t++) n += r->qlen[t] > 0 || r->weight[t] != 1;
    return n;
}

static int ref_items(const ref *r) {
    int n = 0;
    for (int t = 0; t < RT; t++) n += r->qlen[t];
    return n;
}

static int ref_push(ref *r, int t, int64_t cost, int item) {
    if (cost < 0 || cost > r->max_cost) return SL_ECOST;
    if ((size_t)ref_items(r) >= r->max_items || (size_t)r->qlen[t] >= r->max_per_tenant)
        return SL_ETOOMANY;
    if (r->qlen[t] == 0 && r->weight[t] == 1 && (size_t)ref_known(r) >= r->max_tenants)
        return SL_ETOOMANY;
    r->queue[t][r->qlen[t]++] = item;
    r->cost[item] = cost;
    r->owner[item] = t;
    if (r->qlen[t] == 1) r->ring[r->nring++] = t;
    return SL_OK;
}

static void ref_ring_drop(ref *r, int t) {
    for (int k = 0; k < r->nring; k++)
        if (r->ring[k] == t) {
            if (k == 0) r->visiting = 0;
            memmove(&r->ring[k], &r->ring[k + 1], (size_t)(r->nring - k - 1) * sizeof r->ring[0]);
            r->nring--;
            break;
        }
    r->deficit[t] = 0;
}

/* One visit at a time, exactly as the header tells it. */
static int ref_pop(ref *r) {
    while (r->nring > 0) {
        int t = r->ring[0];
        if (!r->visiting) {
            r->deficit[t] += (int64_t)r->weight[t] * r->quantum;
            r->visiting = 1;
        }
        int item = r->queue[t][0];
        if (r->cost[item] <= r->deficit[t]) {
            r->deficit[t] -= r->cost[item];
            memmove(&r->queue[t][0], &r->queue[t][1], (size_t)(r->qlen[t] - 1) * sizeof(int));
            if (--r->qlen[t] == 0) ref_ring_drop(r, t);
            return item;
        }
        r->visiting = 0;
        memmove(&r->ring[0], &r->ring[1], (size_t)(r->nring - 1) * sizeof r->ring[0]);
        r->ring[r->nring - 1] = t;
    }
    return -1;
}

static int ref_remove(ref *r, int item) {
    if (item < 0) return SL_EINVAL;
    int t = r->owner[item];
    for (int k = 0; k < r->qlen[t]; k++)
        if (r->queue[t][k] == item) {
            memmove(&r->queue[t][k], &r->queue[t][k + 1],
                    (size_t)(r->qlen[t] - k - 1) * sizeof(int));
            if (--r->qlen[t] == 0) ref_ring_drop(r, t);
            return SL_OK;
        }
    return SL_EINVAL;
}

static int ref_set_weight(ref *r, int t, uint32_t w) {
    if (w < 1 || w > SL_FAIRQ_WEIGHT_MAX) return SL_EINVAL;
    if (r->qlen[t] == 0 && r->weight[t] == 1 && w != 1 && (size_t)ref_known(r) >= r->max_tenants)
        return SL_ETOOMANY;
    r->weight[t] = w;
    return SL_OK;
}

static uint64_t rnd_state;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rnd_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}
static int64_t upto(int64_t n) { /* [0, n], bias irrelevant here */
    return (int64_t)(rnd() % (uint64_t)(n + 1));
}

static const char *const names[RT] = {"t0", "tenant-1", "", "t\0x", "t3", "tenant-five"};
static const size_t name_len[RT] = {2, 8, 0, 3, 2, 11};

static void against_the_reference_model(void **state) {
    (void)state;
    static int tags[RITEMS];
    for (int i = 0; i < RITEMS; i++) tags[i] = i;
    rnd_state = 16;
    for (int seq = 0; seq < 1500; seq++) {
        ref r;
        memset(&r, 0, sizeof r);
        r.quantum = 1 + upto(5);
        r.max_cost = 1 + upto(12);
        r.max_items = (size_t)(1 + upto(40));
        r.max_tenants = (size_t)(1 + upto(RT));
        r.max_per_tenant = (size_t)upto((int64_t)r.max_items);
        for (int t = 0; t < RT; t++) r.weight[t] = 1;
        sl_fairq_options o = {.max_items = r.max_items,
                              .max_tenants = r.max_tenants,
                              .max_per_tenant = r.max_per_tenant,
                              .max_cost = r.max_cost,
                              .quantum = r.quantum};
        if (r.max_per_tenant == 0) r.max_per_tenant = r.max_items;
        sl_fairq *q;
        assert_int_equal(sl_fairq_create(&o, &q), SL_OK);
        uint64_t ids[RITEMS];
        int pushed = 0;
        for (int op = 0; op < 400 && pushed < RITEMS; op++) {
            int64_t kind = upto(99);
            if (kind < 45) {
                int t = (int)upto(RT - 1);
                int64_t cost = upto(r.max_cost + 1) - (upto(30) == 0); /* out of range at times */
                uint64_t id = 0;
                int want = ref_push(&r, t, cost, pushed);
                int got = sl_fairq_push(q, names[t], name_len[t], cost, &tags[pushed], &id);
                assert_int_equal(got, want);
                ids[pushed] = id;
                if (got == SL_OK) pushed++;
            } else if (kind < 85) {
                int want = ref_pop(&r);
                sl_fairq_item it;
                bool got = sl_fairq_pop(q, &it);
                assert_int_equal(got, want >= 0);
                if (got) {
                    assert_int_equal(*(int *)it.ptr, want);
                    assert_int_equal(it.cost, r.cost[want]);
                    assert_int_equal(it.id, ids[want]);
                }
            } else if (kind < 95) {
                if (pushed == 0) continue;
                int item = (int)upto(pushed - 1);
                void *p = NULL;
                int want = ref_remove(&r, item);
                assert_int_equal(sl_fairq_remove(q, ids[item], &p), want);
                if (want == SL_OK) assert_int_equal(*(int *)p, item);
            } else {
                int t = (int)upto(RT - 1);
                uint32_t w = upto(2) ? (uint32_t)upto(4) : 1;
                assert_int_equal(sl_fairq_set_weight(q, names[t], name_len[t], w),
                                 ref_set_weight(&r, t, w));
            }
            sl_fairq_counts c;
            sl_fairq_counts_get(q, &c);
            assert_int_equal(c.items, ref_items(&r));
            assert_int_equal(c.backlogged, r.nring);
            assert_int_equal(c.tenants, ref_known(&r));
            int t = (int)upto(RT - 1);
            assert_int_equal(sl_fairq_tenant_items(q, names[t], name_len[t]), r.qlen[t]);
            assert_int_equal(sl_fairq_weight(q, names[t], name_len[t]), r.weight[t]);
        }
        sl_fairq_destroy(q);
    }
}

/* ---- the fairness bound ----------------------------------------------------------- */

#define FT    7   /* tenants */
#define FPOPS 500 /* pops per trace */

static void fairness_bound_on_random_traces(void **state) {
    (void)state;
    static char tenant_of[FPOPS];
    static int64_t cost_of[FPOPS];
    static int backlogged[FPOPS][FT]; /* stretch number before the pop, -1 when empty */
    static int64_t item_cost[1 << 16];
    static char item_tenant[1 << 16];
    rnd_state = 99;
    int64_t checked = 0, tight = 0;
    for (int trace = 0; trace < 40; trace++) {
        int64_t M = 1 + upto(50), Q = 1 + upto(60);
        uint32_t w[FT];
        for (int t = 0; t < FT; t++) w[t] = (uint32_t)(1 + upto(4));
        sl_fairq_options o = {.max_items = 1 << 16, .max_tenants = FT, .max_cost = M, .quantum = Q};
        sl_fairq *q;
        assert_int_equal(sl_fairq_create(&o, &q), SL_OK);
        static const char *const fnames[FT] = {"noisy", "b", "c", "d", "e", "f", "g"};
        for (int t = 0; t < FT; t++)
            assert_int_equal(sl_fairq_set_weight(q, fnames[t], strlen(fnames[t]), w[t]), SL_OK);
        int count[FT] = {0}, stretch[FT] = {0};
        int npops = 0, nitems = 0;
        /* a noisy tenant (0) keeps a deep queue; the others come and go */
        while (npops < FPOPS) {
            int pushes = (int)upto(3);
            for (int k = 0; k < pushes && nitems < (1 << 16); k++) {
                int t = upto(2) == 0 ? 0 : (int)upto(FT - 1);
                int64_t c = upto(M);
                const char *n = fnames[t];
                size_t l = strlen(n);
                item_cost[nitems] = c;
                item_tenant[nitems] = (char)t;
                assert_int_equal(sl_fairq_push(q, n, l, c, &item_cost[nitems], NULL), SL_OK);
                nitems++;
                count[t]++;
            }
            for (int t = 0; t < FT; t++) backlogged[npops][t] = count[t] > 0 ? stretch[t] : -1;
            sl_fairq_item it;
            if (!sl_fairq_pop(q, &it)) continue;
            int t = item_tenant[(int64_t *)it.ptr - item_cost];
            assert_int_equal(it.cost, *(int64_t *)it.ptr);
            tenant_of[npops] = (char)t;
            cost_of[npops] = it.cost;
            npops++;
            if (--count[t] == 0) stretch[t]++;
        }
        sl_fairq_destroy(q);

        /* every pair, every stretch [a, b] of pops where both stay backlogged */
        for (int i = 0; i < FT; i++)
            for (int j = 0; j < FT; j++) {
                if (i == j) continue;
                int64_t slack = Q * w[i] * w[j] + M * w[j] + M * w[i];
                for (int a = 0; a < FPOPS; a++) {
                    int si = backlogged[a][i], sj = backlogged[a][j];
                    if (si < 0 || sj < 0) continue;
                    int64_t Si = 0, Sj = 0;
                    for (int b = a; b < FPOPS; b++) {
                        if (backlogged[b][i] != si || backlogged[b][j] != sj) break;
                        if (tenant_of[b] == i) Si += cost_of[b];
                        if (tenant_of[b] == j) Sj += cost_of[b];
                        /* S_i / w_i >= S_j / w_j - (Q + M / w_i + M / w_j) */
                        assert_true(Si * w[j] >= Sj * w[i] - slack);
                        checked++;
                        if (Si * w[j] < Sj * w[i] - slack / 2) tight++;
                    }
                }
            }
    }
    /* the traces reach well into the bound (it is not vacuous) */
    assert_true(checked > 100000);
    assert_true(tight > 0);
}

/* ---- threads ---------------------------------------------------------------------- */

#define THREADS 4
#define PER     3000

static sl_fairq *shared_q;
static int taken[THREADS * PER];

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    char name[8] = {'w', (char)('0' + id % 3), 0};
    for (int k = 0; k < PER; k++) {
        int *tag = &taken[id * PER + k];
        while (sl_fairq_push(shared_q, name, 2, 1, tag, NULL) != SL_OK) {
            sl_fairq_item it;
            if (sl_fairq_pop(shared_q, &it)) __atomic_fetch_add((int *)it.ptr, 1, __ATOMIC_RELAXED);
        }
        if (k % 2) {
            sl_fairq_item it;
            if (sl_fairq_pop(shared_q, &it)) __atomic_fetch_add((int *)it.ptr, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void threads_lose_nothing(void **state) {
    (void)state;
    sl_fairq_options o = {.max_items = 64, .max_tenants = 8, .max_cost = 1};
    assert_int_equal(sl_fairq_create(&o, &shared_q), SL_OK);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    sl_fairq_item it;
    while (sl_fairq_pop(shared_q, &it)) (*(int *)it.ptr)++;
    for (int i = 0; i < THREADS * PER; i++) assert_int_equal(taken[i], 1);
    sl_fairq_counts c;
    sl_fairq_counts_get(shared_q, &c);
    assert_int_equal(c.items, 0);
    assert_int_equal(c.tenants, 0);
    sl_fairq_destroy(shared_q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_weights_take_turns),
        cmocka_unit_test(weights_three_to_one),
        cmocka_unit_test(costs_against_the_quantum),
        cmocka_unit_test(a_late_tenant_is_served_next_round),
        cmocka_unit_test(idle_rounds_are_skipped),
        cmocka_unit_test(removals),
        cmocka_unit_test(an_emptied_tenant_loses_its_deficit),
        cmocka_unit_test(bounds),
        cmocka_unit_test(against_the_reference_model),
        cmocka_unit_test(fairness_bound_on_random_traces),
        cmocka_unit_test(threads_lose_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
