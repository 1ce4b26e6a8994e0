/* peer_handrolled.c: THE PEER, not sluice. It stands for what a team writes
 * by hand when it needs a per-client limiter inside a C program, i.e. the
 * seed's "A per-client limiter as HTTP middleware" (rate-limiting.txt §06)
 * translated to C: one global mutex around a map from client key to a token
 * bucket. Written the straightforward way on purpose, K&R §6.6 style:
 *
 *   - a chained hash map (FNV-1a, power-of-two buckets, doubled when the
 *     keys outnumber the buckets), one malloc'd node per key, the key copied
 *     with strdup, compared with strcmp;
 *   - the bucket is x/time/rate's: double-precision {tokens, last}, refilled
 *     by elapsed * rate and capped at burst, starting full;
 *   - one pthread mutex for the whole map (the Go code's `mu sync.Mutex`).
 *
 * Eviction of quiet clients (the seed's evictLoop) runs once a minute and is
 * not on the decision path, so it is left out; it would not change the
 * per-decision cost or the bytes per key measured here.
 *
 * It is used only by the benchmarks, to report sluice's figures as a ratio to
 * this peer measured in the same run (DESIGN.md section 7). */
#include "peer_handrolled.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct node {
    struct node *next;
    char *key;     /* strdup'ed */
    double tokens; /* as in golang.org/x/time/rate.Limiter */
    double last;   /* seconds */
};

struct peer_table {
    pthread_mutex_t mu;
    struct node **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
    double rate, burst;
};

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

peer_table *peer_create(double rate, double burst) {
    peer_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->nbuckets = 16;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    if (!t->buckets) {
        free(t);
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    t->rate = rate;
    t->burst = burst;
    return t;
}

void peer_destroy(peer_table *t) {
    if (!t) return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        struct node *n = t->buckets[i];
        while (n) {
            struct node *next = n->next;
            free(n->key);
            free(n);
            n = next;
        }
    }
    free(t->buckets);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void grow(peer_table *t) {
    size_t nb = t->nbuckets * 2;
    struct node **b = calloc(nb, sizeof *b);
    if (!b) return; /* keep the longer chains */
    for (size_t i = 0; i < t->nbuckets; i++) {
        struct node *n = t->buckets[i];
        while (n) {
            struct node *next = n->next;
            size_t j = fnv1a(n->key) & (nb - 1);
            n->next = b[j];
            b[j] = n;
            n = next;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = nb;
}

/* The limiter for key, created full on first sight. Caller holds mu. */
static struct node *get(peer_table *t, const char *key, double now) {
    size_t i = fnv1a(key) & (t->nbuckets - 1);
    for (struct node *n = t->buckets[i]; n; n = n->next)
        if (strcmp(n->key, key) == 0) return n;
    struct node *n = malloc(sizeof *n);
    if (!n) return NULL;
    n->key = strdup(key);
    if (!n->key) {
        free(n);
        return NULL;
    }
    n->tokens = t->burst;
    n->last = now;
    n->next = t->buckets[i];
    t->buckets[i] = n;
    if (++t->count > t->nbuckets) grow(t);
    return n;
}

/* On a cache line of its own, as sluice's checks are (SL__HOT): placed
 * after libsluice's code, its identical code ran a hot decision in 15.2 or
 * 13.5 ns depending on where the library's size put it (32 or 48 bytes into
 * a line; session 21), and the sluice / peer ratios moved with it. Aligned,
 * it runs at 13.6: its faster time. */
__attribute__((aligned(64))) bool peer_allow(peer_table *t, const char *key, int64_t now_ns) {
    double now = (double)now_ns * 1e-9;
    bool ok = false;
    pthread_mutex_lock(&t->mu);
    struct node *n = get(t, key, now);
    if (n) {
        double elapsed = now - n->last;
        if (elapsed < 0) elapsed = 0;
        double tokens = n->tokens + elapsed * t->rate;
        if (tokens > t->burst) tokens = t->burst;
        n->last = now > n->last ? now : n->last;
        if (tokens >= 1) {
            tokens -= 1;
            ok = true;
        }
        n->tokens = tokens;
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

size_t peer_count(peer_table *t) {
    pthread_mutex_lock(&t->mu);
    size_t n = t->count;
    pthread_mutex_unlock(&t->mu);
    return n;
}
