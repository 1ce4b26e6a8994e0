/* cap_quality.c: what the table's memory cap keeps. The table at its cap
 * evicts with CLOCK (sluice/table.h); this program measures how close that
 * comes to an exact least-recently-used cache holding as many keys, on the
 * same sequence of keys, for three workloads:
 *
 *   uniform   keys drawn uniformly from 2M (twice what the cap holds)
 *   zipf      Zipf(0.9) over 10M keys (rank r drawn with weight r^-0.9)
 *   hotscan   a fifth of the decisions go to 10k hot keys (uniform among
 *             them), the rest to a scan of keys never used again: the
 *             pattern that flushes a plain LRU's working set
 *
 * Method. Token bucket, 100 per hour, burst 100; keys "user:<id>" (inline in
 * the slot); a fake clock advancing 1 us per decision, so over the whole run
 * (under 36 s of fake time) no used key refills a whole token: a key used
 * before answers remaining = 99 after a cost-1 check only if its state was
 * lost (evicted) since. That is how a "kept" use is told from a "lost" one,
 * through the public API only. The table runs `warm` decisions, then
 * `ops` measured ones; the LRU then replays the same sequence with the
 * capacity the table held at the end of the warm-up. Reported per workload:
 * hits (uses of a key seen before whose state was kept) as a share of the
 * measured decisions, for both; for hotscan, the hot keys' uses that found
 * their state lost. Deterministic (fixed seeds): the same figures every run.
 *
 * Usage: cap_quality [--workload uniform|zipf|hotscan|all] [--cap MIB]
 *                    [--warm N] [--ops N] */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "sluice/sluice.h"

#define HOUR_NS  (3600LL * 1000000000LL)
#define STEP_NS  1000LL /* fake clock per decision */
#define BURST    100
#define HOT_KEYS 10000u
#define NONE     UINT32_MAX

enum workload { W_UNIFORM, W_ZIPF, W_HOTSCAN, W_COUNT };
static const char *const workload_names[W_COUNT] = {"uniform", "zipf", "hotscan"};

typedef struct draws {
    uint32_t *id;    /* the key of each decision */
    uint32_t n;      /* decisions */
    uint32_t max_id; /* ids are below this */
} draws;

/* Zipf(s) over n ranks by inversion of the cumulative weights (binary
 * search in a table of n doubles). */
typedef struct zipf {
    double *cdf;
    uint32_t n;
} zipf;

static int zipf_init(zipf *z, uint32_t n, double s) {
    z->cdf = malloc((size_t)n * sizeof *z->cdf);
    if (!z->cdf) return -1;
    double sum = 0;
    for (uint32_t r = 0; r < n; r++) z->cdf[r] = sum += pow((double)r + 1, -s);
    for (uint32_t r = 0; r < n; r++) z->cdf[r] /= sum;
    z->n = n;
    return 0;
}

static uint32_t zipf_draw(const zipf *z, uint64_t *rng) {
    double u = (double)(bench_rand(rng) >> 11) * 0x1p-53;
    uint32_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The key sequence of workload w. -1 when out of memory. */
static int make_draws(enum workload w, uint32_t n, draws *d) {
    uint64_t rng = 0x5eed0000u + (uint64_t)w;
    d->n = n;
    d->id = malloc((size_t)n * sizeof *d->id);
    if (!d->id) return -1;
    if (w == W_UNIFORM) {
        d->max_id = 2000000;
        for (uint32_t i = 0; i < n; i++) d->id[i] = bench_below(bench_rand(&rng), d->max_id);
    } else if (w == W_ZIPF) {
        zipf z;
        if (zipf_init(&z, 10000000, 0.9)) return -1;
        d->max_id = z.n;
        for (uint32_t i = 0; i < n; i++) d->id[i] = zipf_draw(&z, &rng);
        free(z.cdf);
    } else {
        uint32_t next_scan = HOT_KEYS;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t r = bench_rand(&rng);
            d->id[i] = bench_below(r, 5) == 0 ? bench_below(r << 32, HOT_KEYS) : next_scan++;
        }
        d->max_id = next_scan;
    }
    return 0;
}

typedef struct tally {
    uint64_t hits;     /* measured uses of a key seen before, its state kept */
    uint64_t hot_uses; /* hotscan: measured uses of a hot key seen before */
    uint64_t hot_lost; /* ... that found the state lost */
    uint64_t held;     /* keys held at the end of the warm-up */
    uint64_t evicted_live, evicted_idle;
} tally;

/* Seen-before bits, one per id. */
static uint8_t *seen_new(uint32_t max_id) {
    return calloc((size_t)max_id / 8 + 1, 1);
}

static bool seen_test_set(uint8_t *seen, uint32_t id) {
    bool was = seen[id >> 3] & (1u << (id & 7));
    seen[id >> 3] |= (uint8_t)(1u << (id & 7));
    return was;
}

static void count(tally *t, uint32_t id, bool repeat, bool kept, bool measured, bool hotscan) {
    if (!measured || !repeat) return;
    if (kept) t->hits++;
    if (hotscan && id < HOT_KEYS) {
        t->hot_uses++;
        if (!kept) t->hot_lost++;
    }
}

/* The table at its cap over the sequence. -1 on error. */
static int run_table(const draws *d, uint32_t warm, size_t cap, bool hotscan, tally *t) {
    sl_table_options o = {0};
    o.params.algorithm = SL_TOKEN_BUCKET;
    o.params.rate = (sl_rate){100, HOUR_NS};
    o.params.burst = BURST;
    o.max_memory = cap;
    o.seed = 0x0123456789abcdefULL;
    sl_table *tb;
    int rc = sl_table_create(&o, &tb);
    if (rc) {
        fprintf(stderr, "sl_table_create: %s\n", sl_strerror(rc));
        return -1;
    }
    uint8_t *seen = seen_new(d->max_id);
    if (!seen) return -1;
    char key[16];
    for (uint32_t i = 0; i < d->n; i++) {
        if (i == warm) {
            sl_table_stats st;
            sl_table_stats_get(tb, &st);
            t->held = st.keys;
        }
        sl_decision dec;
        size_t len = bench_key_wide(key, d->id[i]);
        rc = sl_table_check(tb, key, len, 1, (int64_t)i * STEP_NS, &dec);
        if (rc) {
            fprintf(stderr, "sl_table_check: %s\n", sl_strerror(rc));
            return -1;
        }
        bool repeat = seen_test_set(seen, d->id[i]);
        count(t, d->id[i], repeat, dec.remaining != BURST - 1, i >= warm, hotscan);
    }
    sl_table_stats st;
    sl_table_stats_get(tb, &st);
    t->evicted_live = st.evicted_live;
    t->evicted_idle = st.evicted_idle;
    free(seen);
    sl_table_destroy(tb);
    return 0;
}

/* An exact LRU of `cap` keys over the sequence (a doubly linked list in
 * arrays indexed by id; head the most recent). -1 when out of memory. */
static int run_lru(const draws *d, uint32_t warm, uint64_t cap, bool hotscan, tally *t) {
    uint32_t *prev = malloc((size_t)d->max_id * sizeof *prev);
    uint32_t *next = malloc((size_t)d->max_id * sizeof *next);
    uint8_t *in = calloc(d->max_id, 1), *seen = seen_new(d->max_id);
    if (!prev || !next || !in || !seen) return -1;
    uint32_t head = NONE, tail = NONE;
    uint64_t size = 0;
    for (uint32_t i = 0; i < d->n; i++) {
        uint32_t id = d->id[i];
        bool kept = in[id];
        if (kept) { /* unlink */
            if (prev[id] != NONE)
                next[prev[id]] = next[id];
            else
                head = next[id];
            if (next[id] != NONE)
                prev[next[id]] = prev[id];
            else
                tail = prev[id];
        } else {
            in[id] = 1;
            size++;
        }
        prev[id] = NONE; /* to the front */
        next[id] = head;
        if (head != NONE) prev[head] = id;
        head = id;
        if (tail == NONE) tail = id;
        if (size > cap) { /* drop the least recent */
            uint32_t old = tail;
            tail = prev[old];
            next[tail] = NONE;
            in[old] = 0;
            size--;
        }
        bool repeat = seen_test_set(seen, id);
        count(t, id, repeat, kept, i >= warm, hotscan);
    }
    free(prev);
    free(next);
    free(in);
    free(seen);
    return 0;
}

static double pct(uint64_t a, uint64_t b) {
    return b ? 100.0 * (double)a / (double)b : 0;
}

int main(int argc, char **argv) {
    int which = -1; /* all */
    unsigned long cap_mib = 48, warm = 4000000, ops = 4000000;
    static const struct option longs[] = {
        {"workload", required_argument, 0, 'w'}, {"cap", required_argument, 0, 'c'},
        {"warm", required_argument, 0, 'W'},     {"ops", required_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case 'w':
            which = -2;
            for (int w = 0; w < W_COUNT; w++)
                if (!strcmp(optarg, workload_names[w])) which = w;
            if (!strcmp(optarg, "all")) which = -1;
            if (which == -2) {
                fprintf(stderr, "cap_quality: unknown workload %s\n", optarg);
                return 2;
            }
            break;
        case 'c':
            cap_mib = strtoul(optarg, NULL, 10);
            break;
        case 'W':
            warm = strtoul(optarg, NULL, 10);
            break;
        case 'n':
            ops = strtoul(optarg, NULL, 10);
            break;
        default:
            fprintf(stderr, "usage: cap_quality [--workload uniform|zipf|hotscan|all] "
                            "[--cap MIB] [--warm N] [--ops N]\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (cap_mib == 0 || warm + ops > 30000000) { /* under 36 s of fake time: see above */
        fprintf(stderr, "cap_quality: --cap must be > 0 and warm + ops at most 30M\n");
        return 2;
    }
    printf("# token bucket 100/hour burst 100, cap %lu MiB, %lu warm + %lu measured "
           "decisions; hits: uses of a key seen before whose state was kept\n",
           cap_mib, warm, ops);
    printf("%-8s %10s %10s %10s %12s %12s %12s %12s\n", "workload", "held", "table_hit%",
           "lru_hit%", "evicted_live", "evicted_idle", "hot_lost", "lru_hot_lost");
    for (int w = 0; w < W_COUNT; w++) {
        if (which >= 0 && w != which) continue;
        draws d;
        if (make_draws((enum workload)w, (uint32_t)(warm + ops), &d)) {
            fprintf(stderr, "cap_quality: out of memory\n");
            return 1;
        }
        tally tt = {0}, lt = {0};
        bool hs = w == W_HOTSCAN;
        if (run_table(&d, (uint32_t)warm, (size_t)cap_mib << 20, hs, &tt) ||
            run_lru(&d, (uint32_t)warm, tt.held, hs, &lt)) {
            fprintf(stderr, "cap_quality: failed\n");
            return 1;
        }
        printf("%-8s %10llu %10.2f %10.2f %12llu %12llu", workload_names[w],
               (unsigned long long)tt.held, pct(tt.hits, ops), pct(lt.hits, ops),
               (unsigned long long)tt.evicted_live, (unsigned long long)tt.evicted_idle);
        if (hs)
            printf(" %5llu/%-6llu %5llu/%-6llu\n", (unsigned long long)tt.hot_lost,
                   (unsigned long long)tt.hot_uses, (unsigned long long)lt.hot_lost,
                   (unsigned long long)lt.hot_uses);
        else
            printf(" %12s %12s\n", "-", "-");
        free(d.id);
    }
    return 0;
}
