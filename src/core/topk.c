/* topk.c: the space-saving heavy-hitters sketch (Metwally et al.). k
 * counters; a new key when all are taken replaces the smallest, inheriting
 * its count as error. Lookup through a small open-addressing index (linear
 * probing, backward-shift deletion); finding the minimum is a scan of k
 * counters, done only when a new key replaces one. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/topk.h"
#include "sluice/error.h"

#define EMPTY UINT32_MAX

struct sl__topk {
    pthread_mutex_t mu;
    size_t cap, n;
    sl__topk_item *items;
    uint64_t *hashes;
    uint32_t *index; /* item number or EMPTY; size mask + 1 >= 2 * cap */
    size_t mask;
    uint64_t seed;
};

int sl__topk_create(size_t capacity, sl__topk **out) {
    if (capacity == 0 || capacity > (1u << 20)) return SL_EINVAL;
    sl__topk *t = calloc(1, sizeof *t);
    if (!t) return SL_ENOMEM;
    pthread_mutex_init(&t->mu, NULL);
    size_t slots = 4;
    while (slots < 2 * capacity) slots *= 2;
    t->items = calloc(capacity, sizeof *t->items);
    t->hashes = calloc(capacity, sizeof *t->hashes);
    t->index = malloc(slots * sizeof *t->index);
    if (!t->items || !t->hashes || !t->index) {
        sl__topk_destroy(t);
        return SL_ENOMEM;
    }
    memset(t->index, 0xff, slots * sizeof *t->index);
    t->cap = capacity;
    t->mask = slots - 1;
    t->seed = sl__random_seed();
    *out = t;
    return 0;
}

void sl__topk_destroy(sl__topk *t) {
    if (!t) return;
    pthread_mutex_destroy(&t->mu);
    free(t->items);
    free(t->hashes);
    free(t->index);
    free(t);
}

/* Slot in the index holding key, or the empty slot where it would go. */
static size_t probe(const sl__topk *t, uint64_t h, const char *key, size_t len) {
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint32_t it = t->index[i];
        if (it == EMPTY) return i;
        const sl__topk_item *x = &t->items[it];
        if (t->hashes[it] == h && x->keylen == len && memcmp(x->key, key, len) == 0) return i;
    }
}

static void index_remove(sl__topk *t, size_t slot) {
    t->index[slot] = EMPTY;
    for (size_t j = (slot + 1) & t->mask; t->index[j] != EMPTY; j = (j + 1) & t->mask) {
        uint32_t it = t->index[j];
        size_t home = t->hashes[it] & t->mask;
        /* move it back if its home is not within (slot, j] cyclically */
        if (((j - home) & t->mask) >= ((j - slot) & t->mask)) {
            t->index[slot] = it;
            t->index[j] = EMPTY;
            slot = j;
        }
    }
}

void sl__topk_add(sl__topk *t, const char *key, size_t keylen, uint64_t weight) {
    if (keylen > SL__TOPK_KEY_MAX) keylen = SL__TOPK_KEY_MAX;
    uint64_t h = sl__hash(key, keylen, t->seed);
    pthread_mutex_lock(&t->mu);
    size_t slot = probe(t, h, key, keylen);
    if (t->index[slot] != EMPTY) {
        t->items[t->index[slot]].count += weight;
    } else {
        uint32_t it;
        uint64_t base = 0;
        if (t->n < t->cap) {
            it = (uint32_t)t->n++;
        } else { /* replace the smallest counter */
            it = 0;
            for (uint32_t i = 1; i < t->cap; i++)
                if (t->items[i].count < t->items[it].count) it = i;
            base = t->items[it].count;
            index_remove(t, probe(t, t->hashes[it], t->items[it].key, t->items[it].keylen));
            slot = probe(t, h, key, keylen);
        }
        sl__topk_item *x = &t->items[it];
        memcpy(x->key, key, keylen);
        x->keylen = keylen;
        x->count = base + weight;
        x->error = base;
        t->hashes[it] = h;
        t->index[slot] = it;
    }
    pthread_mutex_unlock(&t->mu);
}

static int heavier_first(const void *a, const void *b) {
    const sl__topk_item *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->keylen > y->keylen) - (x->keylen < y->keylen);
}

size_t sl__topk_list(sl__topk *t, sl__topk_item *items, size_t max) {
    pthread_mutex_lock(&t->mu);
    sl__topk_item *all = malloc((t->n ? t->n : 1) * sizeof *all);
    size_t n = 0;
    if (all) {
        memcpy(all, t->items, t->n * sizeof *all);
        n = t->n;
    }
    pthread_mutex_unlock(&t->mu);
    if (!all) return 0;
    qsort(all, n, sizeof *all, heavier_first);
    if (n > max) n = max;
    memcpy(items, all, n * sizeof *items);
    free(all);
    return n;
}
