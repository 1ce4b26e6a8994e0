/* hold.c: answers held until their release time, fairly across tenants
 * (hold.h). A min-heap of release times, each naming its group; a chained
 * index of the groups by key (seeded hash); per group a fair queue of its
 * held answers (sluice/fairq.h). When the heap's earliest time comes, it is
 * taken off and the group's next answer in fair order is released. */
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "server/hold.h"
#include "sluice/clock.h"
#include "sluice/error.h"
#include "sluice/fairq.h"
#include "sluice/limit.h"

typedef struct hold_group {
    struct hold_group *next; /* in its index bucket */
    sl_fairq *q;             /* its held answers */
    size_t items;            /* answers held (in q) */
    size_t times;            /* release times in the heap naming it */
    uint64_t hash;
    size_t len;
    char key[];
} hold_group;

struct sl__hold_item {
    hold_group *g;
    uint64_t id; /* in g->q */
    sl__hold_fn fn;
    void *arg;
};

typedef struct hold_time {
    int64_t t;
    hold_group *g;
} hold_time;

struct sl__hold {
    size_t max_held;
    size_t held;
    hold_group **index;
    size_t mask; /* index size - 1 */
    uint64_t seed;
    hold_time *heap;
    size_t nheap, capheap;
    uv_timer_t timer;
    bool timer_on; /* a loop was given: the timer is initialized */
    bool closing;
    int64_t armed; /* the release time the timer is set for, INT64_MAX: none */
};

/* ---- the heap of release times ------------------------------------------- */

static void heap_push(sl__hold *h, hold_time e) {
    size_t i = h->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->heap[p].t <= e.t) break;
        h->heap[i] = h->heap[p];
        i = p;
    }
    h->heap[i] = e;
}

static hold_time heap_pop(sl__hold *h) {
    hold_time top = h->heap[0], last = h->heap[--h->nheap];
    size_t i = 0, n = h->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h->heap[c + 1].t < h->heap[c].t) c++;
        if (last.t <= h->heap[c].t) break;
        h->heap[i] = h->heap[c];
        i = c;
    }
    if (n) h->heap[i] = last;
    return top;
}

/* ---- the groups ------------------------------------------------------------ */

static hold_group *group_find(sl__hold *h, const char *key, size_t len, uint64_t hash) {
    for (hold_group *g = h->index[hash & h->mask]; g; g = g->next)
        if (g->hash == hash && g->len == len && memcmp(g->key, key, len) == 0) return g;
    return NULL;
}

static hold_group *group_get(sl__hold *h, const char *key, size_t len, size_t per_tenant) {
    uint64_t hash = sl__hash(key, len, h->seed);
    hold_group *g = group_find(h, key, len, hash);
    if (g) return g;
    g = calloc(1, sizeof *g + len);
    if (!g) return NULL;
    sl_fairq_options o = {.max_items = h->max_held,
                          .max_tenants = h->max_held,
                          .max_per_tenant =
                              per_tenant && per_tenant < h->max_held ? per_tenant : h->max_held};
    if (sl_fairq_create(&o, &g->q) != 0) {
        free(g);
        return NULL;
    }
    g->hash = hash;
    g->len = len;
    memcpy(g->key, key, len);
    g->next = h->index[hash & h->mask];
    h->index[hash & h->mask] = g;
    return g;
}

/* Frees g once nothing names it (no answer held, no time pending). */
static void group_drop(sl__hold *h, hold_group *g) {
    if (g->items || g->times) return;
    hold_group **p = &h->index[g->hash & h->mask];
    while (*p != g) p = &(*p)->next;
    *p = g->next;
    sl_fairq_destroy(g->q);
    free(g);
}

/* ---- the timer ------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

/* Sets the timer for the earliest pending time (or stops it). */
static void arm(sl__hold *h) {
    if (!h->timer_on || h->closing) return;
    int64_t next = sl__hold_next(h);
    if (next == h->armed) return;
    h->armed = next;
    if (next == INT64_MAX) {
        uv_timer_stop(&h->timer);
        return;
    }
    int64_t wait = next - sl_now();
    uint64_t ms = wait <= 0 ? 0 : (uint64_t)((wait + SL_NS_PER_MS - 1) / SL_NS_PER_MS);
    uv_timer_start(&h->timer, on_timer, ms, 0);
}

static void on_timer(uv_timer_t *t) {
    sl__hold *h = t->data;
    h->armed = INT64_MAX;
    sl__hold_run(h, sl_now());
    arm(h);
}

/* ---- the interface ----------------------------------------------------------- */

sl__hold *sl__hold_new(size_t max_held, uv_loop_t *loop) {
    if (max_held < 1 || max_held > SL_FAIRQ_ITEMS_MAX / 2) return NULL;
    sl__hold *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->max_held = max_held;
    h->capheap = 2 * max_held;
    size_t buckets = 16;
    while (buckets < max_held) buckets *= 2;
    h->mask = buckets - 1;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
    h->index = calloc(buckets, sizeof *h->index);
    h->heap = malloc(h->capheap * sizeof *h->heap);
    if (!h->index || !h->heap) {
        free(h->index);
        free(h->heap);
        free(h);
        return NULL;
    }
    h->seed = (uint64_t)sl_now_monotonic() ^ (uint64_t)(uintptr_t)h ^ SL__HASH_K2;
    h->armed = INT64_MAX;
    if (loop) {
        uv_timer_init(loop, &h->timer);
        h->timer.data = h;
        h->timer_on = true;
    }
    return h;
}

int sl__hold_push(sl__hold *h, const sl__hold_entry *e, sl__hold_item **out) {
    *out = NULL;
    if (h->closing || h->held >= h->max_held || h->nheap >= h->capheap) return SL_ETOOMANY;
    hold_group *g = group_get(h, e->group, e->group_len, e->per_tenant);
    if (!g) return SL_ENOMEM;
    sl__hold_item *it = malloc(sizeof *it);
    int rc = it ? 0 : SL_ENOMEM;
    uint32_t w = e->weight ? e->weight : 1;
    if (rc == 0 && sl_fairq_weight(g->q, e->tenant, e->tenant_len) != w)
        rc = sl_fairq_set_weight(g->q, e->tenant, e->tenant_len, w);
    if (rc == 0) rc = sl_fairq_push(g->q, e->tenant, e->tenant_len, 1, it, &it->id);
    if (rc != 0) {
        free(it);
        group_drop(h, g);
        return rc;
    }
    *it = (sl__hold_item){.g = g, .id = it->id, .fn = e->fn, .arg = e->arg};
    g->items++;
    g->times++;
    h->held++;
    heap_push(h, (hold_time){e->release, g});
    arm(h);
    *out = it;
    return 0;
}

void *sl__hold_cancel(sl__hold *h, sl__hold_item *it) {
    hold_group *g = it->g;
    void *arg = it->arg;
    sl_fairq_remove(g->q, it->id, NULL);
    free(it);
    g->items--;
    h->held--;
    group_drop(h, g); /* kept while its times are pending */
    return arg;
}

size_t sl__hold_run(sl__hold *h, int64_t now) {
    size_t released = 0;
    while (h->nheap && h->heap[0].t <= now) {
        hold_group *g = heap_pop(h).g;
        g->times--;
        sl_fairq_item fi;
        if (!sl_fairq_pop(g->q, &fi)) { /* its answers were cancelled */
            group_drop(h, g);
            continue;
        }
        sl__hold_item *it = fi.ptr;
        sl__hold_fn fn = it->fn;
        void *arg = it->arg;
        free(it);
        g->items--;
        h->held--;
        group_drop(h, g);
        fn(arg); /* may push or cancel: nothing of g is used after */
        released++;
    }
    arm(h);
    return released;
}

int64_t sl__hold_next(const sl__hold *h) {
    return h->nheap ? h->heap[0].t : INT64_MAX;
}

size_t sl__hold_count(const sl__hold *h) {
    return h->held;
}

void sl__hold_close(sl__hold *h) {
    if (!h || h->closing) return;
    h->closing = true;
    if (h->timer_on) uv_close((uv_handle_t *)&h->timer, NULL);
}

void sl__hold_free(sl__hold *h) {
    if (!h) return;
    for (size_t b = 0; b <= h->mask; b++)
        for (hold_group *g = h->index[b], *next; g; g = next) {
            next = g->next;
            sl_fairq_item fi;
            while (sl_fairq_pop(g->q, &fi)) free(fi.ptr);
            sl_fairq_destroy(g->q);
            free(g);
        }
    free(h->index);
    free(h->heap);
    free(h);
}
