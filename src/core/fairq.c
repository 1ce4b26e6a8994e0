/* fairq.c: the weighted fair queue of sluice/fairq.h, deficit round robin.
 *
 * Items and tenants live in two slot arrays that grow by doubling up to
 * their bounds and are linked by 32-bit slot numbers (so growing never
 * invalidates a link): each tenant's FIFO is a doubly linked list of item
 * slots (removal of any item is O(1)), the ring of backlogged tenants a
 * circular doubly linked list whose head is the tenant being visited, and
 * free slots are chained through `next`. Tenants are found by a seeded hash
 * of their bytes in an open-addressing index (linear probing, backward-shift
 * deletion, at most half full). An item id is (generation << 32) | slot, so
 * an id of a popped or removed item is recognised as stale. One mutex. */
#include "sluice/fairq.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "sluice/error.h"
#include "sluice/table.h"

#define NIL UINT32_MAX

typedef struct item {
    void *ptr;
    int64_t cost;
    uint32_t tenant; /* the owner's slot; NIL while the slot is free */
    uint32_t prev, next;
    uint32_t gen;
} item;

typedef struct tenant {
    char *key; /* NULL while the slot is free */
    size_t len;
    uint64_t hash;
    int64_t deficit;
    uint32_t weight;
    uint32_t head, tail; /* oldest and newest item, NIL when none */
    uint32_t count;
    uint32_t prev, next; /* in the ring while count > 0; next links free slots */
} tenant;

struct sl_fairq {
    pthread_mutex_t lock;
    size_t max_items, max_tenants, max_per_tenant;
    int64_t max_cost, quantum;
    uint64_t seed;

    item *items;
    uint32_t items_cap, items_used, items_free; /* used: slots ever handed out */
    size_t nitems;

    tenant *tenants;
    uint32_t tenants_cap, tenants_used, tenants_free;
    size_t ntenants;

    uint32_t *index; /* tenant slot or NIL; mask + 1 slots */
    size_t mask;

    uint32_t ring; /* the head of the ring (being visited next or now), NIL when empty */
    size_t nring;
    bool visiting; /* the head's visit has started: its credit is in */
};

int sl_fairq_create(const sl_fairq_options *o, sl_fairq **out) {
    if (!o || !out) return SL_EINVAL;
    *out = NULL;
    if (o->max_items < 1 || o->max_items > SL_FAIRQ_ITEMS_MAX || o->max_tenants < 1 ||
        o->max_tenants > SL_FAIRQ_ITEMS_MAX || o->max_per_tenant > o->max_items ||
        o->max_cost < 0 || o->max_cost > SL_FAIRQ_COST_MAX || o->quantum < 0 ||
        o->quantum > SL_FAIRQ_QUANTUM_MAX)
        return SL_EINVAL;
    sl_fairq *q = calloc(1, sizeof *q);
    if (!q) return SL_ENOMEM;
    q->max_items = o->max_items;
    q->max_tenants = o->max_tenants;
    q->max_per_tenant = o->max_per_tenant ? o->max_per_tenant : o->max_items;
    q->max_cost = o->max_cost ? o->max_cost : 1;
    q->quantum = o->quantum                           ? o->quantum
                 : q->max_cost < SL_FAIRQ_QUANTUM_MAX ? q->max_cost
                                                      : SL_FAIRQ_QUANTUM_MAX;
    q->seed = sl__random_seed();
    q->items_free = q->tenants_free = NIL;
    q->ring = NIL;
    q->mask = 15;
    q->index = malloc((q->mask + 1) * sizeof *q->index);
    if (!q->index) {
        free(q);
        return SL_ENOMEM;
    }
    memset(q->index, 0xff, (q->mask + 1) * sizeof *q->index);
    pthread_mutex_init(&q->lock, NULL);
    *out = q;
    return SL_OK;
}

void sl_fairq_destroy(sl_fairq *q) {
    if (!q) return;
    for (uint32_t i = 0; i < q->tenants_used; i++) free(q->tenants[i].key);
    free(q->tenants);
    free(q->items);
    free(q->index);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* ---- tenants: the index -------------------------------------------------------- */

/* The index slot holding the tenant, or the empty slot where it would go. */
static size_t probe(const sl_fairq *q, uint64_t h, const char *key, size_t len) {
    for (size_t i = h & q->mask;; i = (i + 1) & q->mask) {
        uint32_t s = q->index[i];
        if (s == NIL) return i;
        const tenant *t = &q->tenants[s];
        if (t->hash == h && t->len == len && memcmp(t->key, key, len) == 0) return i;
    }
}

static uint32_t find(const sl_fairq *q, const char *key, size_t len) {
    return q->index[probe(q, sl__hash(key, len, q->seed), key, len)];
}

/* Doubles the index (lock held). Returns 0 or SL_ENOMEM (nothing changed). */
static int index_grow(sl_fairq *q) {
    size_t size = (q->mask + 1) * 2;
    uint32_t *ix = malloc(size * sizeof *ix);
    if (!ix) return SL_ENOMEM;
    memset(ix, 0xff, size * sizeof *ix);
    for (uint32_t s = 0; s < q->tenants_used; s++) {
        if (!q->tenants[s].key) continue;
        size_t i = q->tenants[s].hash & (size - 1);
        while (ix[i] != NIL) i = (i + 1) & (size - 1);
        ix[i] = s;
    }
    free(q->index);
    q->index = ix;
    q->mask = size - 1;
    return SL_OK;
}

/* Makes a new tenant of weight 1 (lock held; the caller checked the bound
 * and that it is unknown). Returns its slot, or NIL when out of memory
 * (nothing changed that anyone can see). */
static uint32_t tenant_new(sl_fairq *q, const char *key, size_t len) {
    if ((q->ntenants + 1) * 2 > q->mask + 1 && index_grow(q) != SL_OK) return NIL;
    if (q->tenants_free == NIL && q->tenants_used == q->tenants_cap) {
        size_t cap = q->tenants_cap ? (size_t)q->tenants_cap * 2 : 8;
        if (cap > q->max_tenants) cap = q->max_tenants;
        tenant *t = realloc(q->tenants, cap * sizeof *t);
        if (!t) return NIL;
        q->tenants = t;
        q->tenants_cap = (uint32_t)cap;
    }
    char *copy = malloc(len ? len : 1);
    if (!copy) return NIL;
    memcpy(copy, key, len);
    uint32_t s;
    if (q->tenants_free != NIL) {
        s = q->tenants_free;
        q->tenants_free = q->tenants[s].next;
    } else {
        s = q->tenants_used++;
    }
    uint64_t h = sl__hash(key, len, q->seed);
    q->tenants[s] = (tenant){.key = copy,
                             .len = len,
                             .hash = h,
                             .weight = 1,
                             .head = NIL,
                             .tail = NIL,
                             .prev = NIL,
                             .next = NIL};
    q->index[probe(q, h, key, len)] = s;
    q->ntenants++;
    return s;
}

/* Forgets an idle tenant of weight 1 (lock held). */
static void tenant_forget(sl_fairq *q, uint32_t s) {
    tenant *t = &q->tenants[s];
    size_t i = probe(q, t->hash, t->key, t->len);
    /* backward-shift deletion: pull later entries of the run into the hole */
    for (size_t j = (i + 1) & q->mask; q->index[j] != NIL; j = (j + 1) & q->mask) {
        size_t home = q->tenants[q->index[j]].hash & q->mask;
        /* the entry at j may move to i iff its home is not in (i, j] cyclically */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            q->index[i] = q->index[j];
            i = j;
        }
    }
    q->index[i] = NIL;
    free(t->key);
    t->key = NULL;
    t->next = q->tenants_free;
    q->tenants_free = s;
    q->ntenants--;
}

/* ---- the ring ---------------------------------------------------------------- */

/* A tenant that just got its first item joins at the end of the ring. */
static void ring_join(sl_fairq *q, uint32_t s) {
    tenant *t = &q->tenants[s];
    if (q->ring == NIL) {
        t->prev = t->next = s;
        q->ring = s;
    } else {
        uint32_t last = q->tenants[q->ring].prev;
        t->prev = last;
        t->next = q->ring;
        q->tenants[last].next = s;
        q->tenants[q->ring].prev = s;
    }
    q->nring++;
}

/* A tenant whose queue is now empty leaves the ring; its deficit is reset
 * and it is forgotten if it has the default weight. */
static void ring_leave(sl_fairq *q, uint32_t s) {
    tenant *t = &q->tenants[s];
    if (q->ring == s) q->visiting = false; /* the head's visit ends with its queue */
    if (t->next == s) {
        q->ring = NIL;
    } else {
        q->tenants[t->prev].next = t->next;
        q->tenants[t->next].prev = t->prev;
        if (q->ring == s) q->ring = t->next;
    }
    t->prev = t->next = NIL;
    t->deficit = 0;
    q->nring--;
    if (t->weight == 1) tenant_forget(q, s);
}

/* ---- items ------------------------------------------------------------------- */

static void item_unlink(sl_fairq *q, uint32_t s) {
    item *it = &q->items[s];
    tenant *t = &q->tenants[it->tenant];
    if (it->prev != NIL)
        q->items[it->prev].next = it->next;
    else
        t->head = it->next;
    if (it->next != NIL)
        q->items[it->next].prev = it->prev;
    else
        t->tail = it->prev;
    uint32_t owner = it->tenant;
    it->tenant = NIL;
    it->ptr = NULL;
    it->next = q->items_free;
    q->items_free = s;
    q->nitems--;
    if (--t->count == 0) ring_leave(q, owner);
}

int sl_fairq_set_weight(sl_fairq *q, const char *tenant_key, size_t len, uint32_t weight) {
    if (weight < 1 || weight > SL_FAIRQ_WEIGHT_MAX) return SL_EINVAL;
    if (len > SL_KEY_MAX) return SL_EKEY;
    int rc = SL_OK;
    pthread_mutex_lock(&q->lock);
    uint32_t s = find(q, tenant_key, len);
    if (s == NIL && weight != 1) {
        if (q->ntenants >= q->max_tenants)
            rc = SL_ETOOMANY;
        else if ((s = tenant_new(q, tenant_key, len)) == NIL)
            rc = SL_ENOMEM;
    }
    if (s != NIL) {
        q->tenants[s].weight = weight;
        if (weight == 1 && q->tenants[s].count == 0) tenant_forget(q, s);
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

uint32_t sl_fairq_weight(sl_fairq *q, const char *tenant_key, size_t len) {
    if (len > SL_KEY_MAX) return 1;
    pthread_mutex_lock(&q->lock);
    uint32_t s = find(q, tenant_key, len);
    uint32_t w = s == NIL ? 1 : q->tenants[s].weight;
    pthread_mutex_unlock(&q->lock);
    return w;
}

int sl_fairq_push(sl_fairq *q, const char *tenant_key, size_t len, int64_t cost, void *ptr,
                  uint64_t *id) {
    if (cost < 0 || cost > q->max_cost) return SL_ECOST;
    if (len > SL_KEY_MAX) return SL_EKEY;
    int rc = SL_OK;
    pthread_mutex_lock(&q->lock);
    uint32_t s = find(q, tenant_key, len);
    if (q->nitems >= q->max_items || (s == NIL && q->ntenants >= q->max_tenants) ||
        (s != NIL && q->tenants[s].count >= q->max_per_tenant)) {
        rc = SL_ETOOMANY;
        goto out;
    }
    /* room for the item first, so that a tenant is never made for nothing */
    if (q->items_free == NIL && q->items_used == q->items_cap) {
        size_t cap = q->items_cap ? (size_t)q->items_cap * 2 : 16;
        if (cap > q->max_items) cap = q->max_items;
        item *it = realloc(q->items, cap * sizeof *it);
        if (!it) {
            rc = SL_ENOMEM;
            goto out;
        }
        q->items = it;
        q->items_cap = (uint32_t)cap;
    }
    if (s == NIL && (s = tenant_new(q, tenant_key, len)) == NIL) {
        rc = SL_ENOMEM;
        goto out;
    }
    uint32_t slot;
    uint32_t gen = 1;
    if (q->items_free != NIL) {
        slot = q->items_free;
        q->items_free = q->items[slot].next;
        gen = q->items[slot].gen + 1;
        if (gen == 0) gen = 1;
    } else {
        slot = q->items_used++;
    }
    tenant *t = &q->tenants[s];
    q->items[slot] =
        (item){.ptr = ptr, .cost = cost, .tenant = s, .prev = t->tail, .next = NIL, .gen = gen};
    if (t->tail != NIL)
        q->items[t->tail].next = slot;
    else
        t->head = slot;
    t->tail = slot;
    q->nitems++;
    if (t->count++ == 0) ring_join(q, s);
    if (id) *id = (uint64_t)gen << 32 | slot;
out:
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* After a whole round in which nobody was served (no visit in progress):
 * every tenant t needs r_t = ceil((head cost - deficit) / (w_t Q)) more
 * visits before it can serve; the first r - 1 rounds (r the least r_t) serve
 * nobody, so they are credited at once. */
static void skip_idle_rounds(sl_fairq *q) {
    int64_t r = INT64_MAX;
    uint32_t s = q->ring;
    for (size_t n = 0; n < q->nring; n++, s = q->tenants[s].next) {
        const tenant *t = &q->tenants[s];
        int64_t need = q->items[t->head].cost - t->deficit; /* > 0 after a visit */
        int64_t credit = (int64_t)t->weight * q->quantum;
        int64_t rt = need <= 0 ? 0 : (need + credit - 1) / credit;
        if (rt < r) r = rt;
    }
    if (r < 2) return;
    for (size_t n = 0; n < q->nring; n++, s = q->tenants[s].next) {
        tenant *t = &q->tenants[s];
        t->deficit += (r - 1) * (int64_t)t->weight * q->quantum; /* < head cost <= 2^61 */
    }
}

bool sl_fairq_pop(sl_fairq *q, sl_fairq_item *out) {
    *out = (sl_fairq_item){0};
    pthread_mutex_lock(&q->lock);
    bool got = false;
    size_t fruitless = 0; /* visits ended in this call without serving */
    while (q->ring != NIL) {
        uint32_t s = q->ring;
        tenant *t = &q->tenants[s];
        if (!q->visiting) {
            t->deficit += (int64_t)t->weight * q->quantum;
            q->visiting = true;
        }
        uint32_t slot = t->head;
        item *it = &q->items[slot];
        if (it->cost <= t->deficit) {
            t->deficit -= it->cost;
            *out = (sl_fairq_item){
                .ptr = it->ptr, .cost = it->cost, .id = (uint64_t)it->gen << 32 | slot};
            item_unlink(q, slot);
            got = true;
            break;
        }
        /* the visit ends: the tenant goes to the end of the ring */
        q->visiting = false;
        q->ring = t->next;
        if (++fruitless >= q->nring) {
            skip_idle_rounds(q);
            fruitless = 0;
        }
    }
    pthread_mutex_unlock(&q->lock);
    return got;
}

int sl_fairq_remove(sl_fairq *q, uint64_t id, void **ptr) {
    uint32_t slot = (uint32_t)id, gen = (uint32_t)(id >> 32);
    int rc = SL_EINVAL;
    pthread_mutex_lock(&q->lock);
    if (gen != 0 && slot < q->items_used && q->items[slot].tenant != NIL &&
        q->items[slot].gen == gen) {
        if (ptr) *ptr = q->items[slot].ptr;
        item_unlink(q, slot);
        rc = SL_OK;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

void sl_fairq_counts_get(sl_fairq *q, sl_fairq_counts *out) {
    pthread_mutex_lock(&q->lock);
    *out = (sl_fairq_counts){.items = q->nitems, .backlogged = q->nring, .tenants = q->ntenants};
    pthread_mutex_unlock(&q->lock);
}

size_t sl_fairq_tenant_items(sl_fairq *q, const char *tenant_key, size_t len) {
    if (len > SL_KEY_MAX) return 0;
    pthread_mutex_lock(&q->lock);
    uint32_t s = find(q, tenant_key, len);
    size_t n = s == NIL ? 0 : q->tenants[s].count;
    pthread_mutex_unlock(&q->lock);
    return n;
}
