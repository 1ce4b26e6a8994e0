/* layout_proto.c: issue 18's two candidate layouts for the keyed table, side
 * by side on the same random keys, in one run (docs/BENCHMARKS.md, "The
 * table's layout"):
 *   tags   the prototype of the candidate not taken: buckets of one 64-byte
 *          line holding 8 slot numbers and 8 16-bit tags (a lookup rejects
 *          other keys on the tags, without reading their entries), in front
 *          of the old layout's 48-byte entries (24-byte inline key, 16-byte
 *          state) in one array; a lookup reads the bucket line, then the
 *          entry. Lookup and a token-bucket step only: no eviction, no lock.
 *   inline the library's table (sl_table_check, token bucket): open
 *          addressing, key and state in a 32-byte slot, one line.
 *   memlat one dependent load over as many bytes as the inline table holds.
 * Serialized (lfence after each decision), one thread, N keys (default 1M)
 * "user:%u" drawn at random, 5 rounds, the subjects taking turns; the median.
 * Usage: layout_proto [--keys N] [--runs R] */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "sluice/sluice.h"

#define BUCKET_SLOTS 8
#define EMPTY        UINT32_MAX

typedef struct bucket { /* one cache line */
    _Alignas(64) uint32_t slot[BUCKET_SLOTS];
    uint16_t tag[BUCKET_SLOTS];
    uint32_t count;
} bucket;

typedef struct entry48 { /* the old layout's entry: key inline, token-bucket state */
    uint32_t next, meta;
    uint8_t key[24];
    int64_t tokens, last;
} entry48;

typedef struct tags_table {
    bucket *b;
    uint32_t bmask;
    entry48 *e;
    uint32_t n;
} tags_table;

static uint64_t hash(const void *k, size_t len) {
    /* the same cost class as sl__hash: one multiply-mix per 8 bytes */
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ len, w;
    const uint8_t *p = k;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        unsigned __int128 r = (unsigned __int128)(h ^ w) * 0xe7037ed1a0b428dbULL;
        h = (uint64_t)r ^ (uint64_t)(r >> 64);
    }
    w = 0;
    memcpy(&w, p, len);
    unsigned __int128 r = (unsigned __int128)(h ^ w) * 0x8ebc6af09c88c6e3ULL;
    h = (uint64_t)r ^ (uint64_t)(r >> 64);
    r = (unsigned __int128)h * 0xa0761d6478bd642fULL;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static entry48 *tags_find(tags_table *t, const char *key, size_t len, uint64_t h, bool add) {
    uint16_t tag = (uint16_t)(h >> 48);
    for (uint32_t i = (uint32_t)h & t->bmask;; i = (i + 1) & t->bmask) {
        bucket *b = &t->b[i];
        for (uint32_t j = 0; j < b->count; j++) {
            if (b->tag[j] != tag) continue;
            entry48 *e = &t->e[b->slot[j]];
            if (e->meta == len && memcmp(e->key, key, len) == 0) return e;
        }
        if (b->count < BUCKET_SLOTS) {
            if (!add) return NULL;
            entry48 *e = &t->e[t->n];
            memset(e, 0, sizeof *e);
            memcpy(e->key, key, len);
            e->meta = (uint32_t)len;
            b->tag[b->count] = tag;
            b->slot[b->count++] = t->n++;
            return e;
        }
    }
}

static bool tags_decide(tags_table *t, const char *key, size_t len, int64_t now) {
    entry48 *e = tags_find(t, key, len, hash(key, len), false);
    if (!e) return false;
    /* 100 per minute = 1 per 0.6 s, burst 100: tokens scaled by p (as sluice) */
    const int64_t n = 1, p = 600000000, full = 100 * p, need = p;
    int64_t tok = e->tokens;
    if (now > e->last && tok < full) {
        __int128 x = (__int128)tok + (__int128)(now - e->last) * n;
        tok = x > full ? full : (int64_t)x;
    }
    bool ok = tok >= need;
    e->tokens = ok ? tok - need : tok;
    e->last = now > e->last ? now : e->last;
    return ok;
}

enum { S_TAGS, S_INLINE, S_MEMLAT, NS };
static const char *const names[NS] = {"tags (index line + 48-byte entry)",
                                      "inline (sl_table, 32-byte slots)",
                                      "memlat (one dependent load)"};

static __attribute__((noinline)) double run(int which, tags_table *tt, sl_table *st, void ***pos,
                                            uint32_t nkeys, uint64_t *rng, double secs) {
    char key[32];
    uint64_t ops = 0, sink = 0;
    int64_t start = bench_wall_ns(), end = start + (int64_t)(secs * 1e9);
    for (;;) {
        int64_t now = sl_now_monotonic();
        if (now >= end) break;
        for (int b = 0; b < 64; b++) {
            size_t len = bench_key_wide(key, bench_below(bench_rand(rng), nkeys));
            if (which == S_TAGS) {
                sink += tags_decide(tt, key, len, now);
            } else if (which == S_INLINE) {
                sl_decision d;
                sl_table_check(st, key, len, 1, now, &d);
                sink += d.allowed;
            } else {
                __asm__ __volatile__("" : : "r"(key), "r"(len) : "memory");
                *pos = **pos;
                sink += *pos != NULL;
            }
            bench_serialize();
        }
        ops += 64;
    }
    __asm__ __volatile__("" : : "r"(sink));
    return (double)(bench_wall_ns() - start) / (double)ops;
}

int main(int argc, char **argv) {
    long keys = 1000000;
    int runs = 5;
    static const struct option opts[] = {
        {"keys", required_argument, 0, 'k'}, {"runs", required_argument, 0, 'r'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'k')
            keys = atol(optarg);
        else if (c == 'r')
            runs = atoi(optarg);
        else
            return 2;
    }
    if (keys < 1000 || keys > 100000000 || runs < 1 || runs > 64) return 2;
    uint32_t nkeys = (uint32_t)keys;
    bench_pin(0);

    tags_table tt = {0};
    uint32_t nb = 1;
    while (nb * 6 < nkeys) nb <<= 1; /* load <= 6/8 per bucket */
    tt.b = aligned_alloc(64, (size_t)nb * sizeof(bucket));
    tt.e = malloc((size_t)nkeys * sizeof(entry48));
    if (!tt.b || !tt.e) return 1;
    memset(tt.b, 0, (size_t)nb * sizeof(bucket));
    tt.bmask = nb - 1;

    sl_table_options o = {
        .params = {.algorithm = SL_TOKEN_BUCKET, .rate = {100, 60 * SL_NS_PER_SEC}, .burst = 100},
        .max_memory = (size_t)4 << 30,
        .seed = 0x9e3779b97f4a7c15ULL};
    sl_table *st;
    if (sl_table_create(&o, &st)) return 1;

    /* keys in a random order, as bench_decide */
    uint32_t *order = malloc((size_t)nkeys * sizeof *order);
    if (!order) return 1;
    uint64_t rng = 0x0dde7ULL;
    for (uint32_t u = 0; u < nkeys; u++) order[u] = u;
    for (uint32_t u = nkeys - 1; u > 0; u--) {
        uint32_t j = bench_below(bench_rand(&rng), u + 1), x = order[u];
        order[u] = order[j];
        order[j] = x;
    }
    char key[32];
    int64_t now = sl_now_monotonic();
    for (uint32_t k = 0; k < nkeys; k++) {
        size_t len = bench_key(key, order[k]);
        entry48 *e = tags_find(&tt, key, len, hash(key, len), true);
        e->tokens = 100 * INT64_C(600000000);
        e->last = now;
        sl_decision d;
        sl_table_check(st, key, len, 1, now, &d);
    }
    free(order);
    sl_table_stats ss;
    sl_table_stats_get(st, &ss);
    size_t tags_bytes = (size_t)nb * sizeof(bucket) + (size_t)nkeys * sizeof(entry48);

    size_t lines = ss.bytes / 64;
    void **chase = aligned_alloc(64, lines * 64);
    if (!chase || bench_chase_link(chase, lines, &rng)) return 1;
    void **pos = chase;

    double v[NS][64];
    uint64_t r2 = 0x5eedULL;
    for (int w = 0; w < NS; w++) run(w, &tt, st, &pos, nkeys, &r2, 0.1); /* warm-up */
    for (int r = 0; r < runs; r++)
        for (int w = 0; w < NS; w++) v[w][r] = run(w, &tt, st, &pos, nkeys, &r2, 0.3);
    printf("# layout_proto: %u random keys, serialized, %d runs x 0.3 s (median)\n", nkeys, runs);
    printf("# bytes per key: tags %.1f, inline %.1f (sl_table_stats)\n", (double)tags_bytes / nkeys,
           (double)ss.bytes / (double)ss.keys);
    double ml = bench_median(v[S_MEMLAT], runs);
    for (int w = 0; w < NS; w++) {
        double m = bench_median(v[w], runs);
        printf("%-36s %8.1f ns  %5.2fx memlat\n", names[w], m, m / ml);
    }
    sl_table_destroy(st);
    free(tt.b);
    free(tt.e);
    free(chase);
    return 0;
}
