/* bench_group.c: nanoseconds per request of a request that checks several
 * limits at once, on random keys of a large table: one sl_table_check_all()
 * of n checks (all or nothing, the path of sluiced's requests with several
 * limits or Envoy descriptors: sl__table_check_group) against n calls of
 * sl_table_check() for the same keys, measured in the same run, round-robin.
 *
 * Method (see docs/BENCHMARKS.md, "Requests of several limits"):
 *   - one token-bucket table (100/min, burst 100; --algo for another)
 *     populated with the keys "user:0" .. "user:N-1" in a random order, a
 *     cap far above what they need (nothing is evicted);
 *   - a request is n keys, each drawn uniformly from the N on its own, so
 *     its checks touch n unrelated lines of the table (two checks of one key
 *     in a request are allowed, and rare at 1M keys);
 *   - the keys of a request are written two requests ahead into a ring, one
 *     16-byte store each (bench_key_wide: see bench_decide.c's note on the
 *     harness's key stores), so their loads never wait for their stores;
 *   - `now` advances 1 us per request (the limit is never reached: the
 *     answers are all "allowed", and both subjects do the same work);
 *   - back to back by default; --serial puts an lfence after every request
 *     (a lone request in a server);
 *   - R rounds (default 7 x 0.3 s) after one warm-up; in each round every
 *     group size runs both subjects in turn; the median is reported.
 *
 * Printed per group size: ns per request for both, per check, and the ratio
 * check_all / singles (< 1: the request of n limits costs less than n lone
 * checks).
 *
 * Usage: bench_group [--keys N] [--sizes LIST] [--runs R] [--time SEC]
 *                    [--serial] [--algo NAME] [--quick] */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "sluice/sluice.h"

#define MAX_RUNS  64
#define MAX_SIZES 8
#define AHEAD     2 /* requests ahead that a request's keys are written */
#define RING      4 /* requests' key buffers (> AHEAD) */
#define PERIOD_NS (60 * SL_NS_PER_SEC)

typedef struct keyring {
    char key[RING][SL_CHECK_MAX][16];
    size_t len[RING][SL_CHECK_MAX];
    uint64_t rng;
    uint32_t nkeys;
} keyring;

/* Writes the n keys of ring slot r. */
static inline void draw(keyring *k, unsigned r, size_t n) {
    for (size_t j = 0; j < n; j++)
        k->len[r][j] = bench_key_wide(k->key[r][j], bench_below(bench_rand(&k->rng), k->nkeys));
}

/* The timed loop of one subject: `all` says which. Returns ns per request;
 * adds the checks made to *checked and those that passed to *allowed. */
static __attribute__((noinline)) double loop(sl_table *t, keyring *k, size_t n, bool all,
                                             bool serial, int64_t duration, uint64_t *allowed,
                                             uint64_t *checked) {
    int64_t now = INT64_C(1) << 50, start = bench_wall_ns(), end = start + duration, elapsed;
    uint64_t reqs = 0, ok = 0;
    for (unsigned r = 0; r < RING; r++) draw(k, r, n);
    for (;;) {
        for (unsigned b = 0; b < 64; b++, reqs++) {
            unsigned r = (unsigned)(reqs % RING);
            if (all) {
                sl_check c[SL_CHECK_MAX];
                for (size_t j = 0; j < n; j++)
                    c[j] = (sl_check){
                        .table = t, .key = k->key[r][j], .keylen = k->len[r][j], .cost = 1};
                size_t refused;
                sl_table_check_all(c, n, now, &refused);
                ok += refused == n ? n : 0;
            } else {
                for (size_t j = 0; j < n; j++) {
                    sl_decision d;
                    sl_table_check(t, k->key[r][j], k->len[r][j], 1, now, &d);
                    ok += d.allowed;
                }
            }
            draw(k, (unsigned)((reqs + AHEAD) % RING), n);
            now += 1000;
            if (serial) bench_serialize();
        }
        elapsed = bench_wall_ns() - start;
        if (start + elapsed >= end) break;
    }
    *allowed += ok;
    *checked += reqs * n;
    return (double)elapsed / (double)reqs;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_group [--keys N] [--sizes LIST] [--runs R] [--time SEC]\n"
            "                   [--serial] [--algo NAME] [--quick]\n"
            "  --keys N      keys in the table, drawn uniformly (default 1000000)\n"
            "  --sizes LIST  comma list of checks per request, 1..%d (default 1,2,4,8)\n"
            "  --runs R      measured rounds, median reported (default 7, at most %d)\n"
            "  --time SEC    seconds per subject and round (default 0.3)\n"
            "  --serial      an lfence after every request (no overlap between requests)\n"
            "  --algo NAME   token_bucket (default), gcra, fixed_window, sliding_window,\n"
            "                leaky_queue, sliding_log\n"
            "  --quick       3 rounds x 0.1 s (bench/run.sh --quick)\n",
            SL_CHECK_MAX, MAX_RUNS);
}

static int parse_sizes(const char *s, size_t *sizes) {
    int n = 0;
    for (char *end; *s; s = *end == ',' ? end + 1 : end) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > SL_CHECK_MAX || n == MAX_SIZES || (*end && *end != ','))
            return -1;
        sizes[n++] = (size_t)v;
    }
    return n;
}

int main(int argc, char **argv) {
    long keys = 1000000, runs = 7;
    double secs = 0.3;
    bool serial = false;
    size_t sizes[MAX_SIZES] = {1, 2, 4, 8};
    int nsizes = 4;
    sl_algorithm algo = SL_TOKEN_BUCKET;
    static const struct option opts[] = {
        {"keys", required_argument, 0, 'k'},
        {"sizes", required_argument, 0, 'z'},
        {"runs", required_argument, 0, 'r'},
        {"time", required_argument, 0, 't'},
        {"serial", no_argument, 0, 's'},
        {"algo", required_argument, 0, 'a'},
        {"quick", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'k':
            keys = strtol(optarg, NULL, 10);
            break;
        case 'z':
            nsizes = parse_sizes(optarg, sizes);
            break;
        case 'r':
            runs = strtol(optarg, NULL, 10);
            break;
        case 't':
            secs = strtod(optarg, NULL);
            break;
        case 's':
            serial = true;
            break;
        case 'q':
            runs = 3;
            secs = 0.1;
            break;
        case 'a':
            if (sl_algorithm_parse(optarg, &algo) != SL_OK) {
                fprintf(stderr, "bench_group: no algorithm %s\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (keys < 1 || keys > 100000000 || runs < 1 || runs > MAX_RUNS || secs <= 0 || secs > 60 ||
        nsizes < 1 || optind != argc) {
        usage(stderr);
        return 2;
    }

    sl_table_options o = {0};
    o.params.algorithm = algo;
    o.params.rate = (sl_rate){100, PERIOD_NS};
    o.params.burst = 100;
    o.max_memory = (size_t)8 << 30; /* far above the keys' needs: nothing is evicted */
    o.seed = 0x9e3779b97f4a7c15ULL;
    sl_table *t;
    int rc = sl_table_create(&o, &t);
    if (rc) {
        fprintf(stderr, "bench_group: sl_table_create: %s\n", sl_strerror(rc));
        return 1;
    }
    /* the keys in a random order (Fisher-Yates), each checked once */
    uint32_t *order = malloc((size_t)keys * sizeof *order);
    if (!order) {
        perror("malloc");
        return 1;
    }
    uint64_t rng = 42;
    for (uint32_t i = 0; i < (uint32_t)keys; i++) order[i] = i;
    for (uint32_t i = (uint32_t)keys - 1; i > 0; i--) {
        uint32_t j = bench_below(bench_rand(&rng), i + 1), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (uint32_t i = 0; i < (uint32_t)keys; i++) {
        char key[16];
        sl_decision d;
        size_t len = bench_key(key, order[i]);
        sl_table_check(t, key, len, 1, INT64_C(1) << 50, &d);
    }
    free(order);

    printf("# bench_group: %s, %ld random keys, %ld rounds x %.2f s per subject (median), %s\n",
           sl_algorithm_name(algo), keys, runs, secs,
           serial ? "serialized (lfence after every request)" : "back to back");
    keyring *k = calloc(1, sizeof *k);
    if (!k) return 1;
    k->nkeys = (uint32_t)keys;
    k->rng = 7;
    double ns[MAX_SIZES][2][MAX_RUNS];
    uint64_t allowed = 0, checks = 0;
    int64_t duration = (int64_t)(secs * 1e9);
    for (long round = -1; round < runs; round++) /* round -1: warm-up, not kept */
        for (int z = 0; z < nsizes; z++)
            for (int all = 0; all < 2; all++) {
                uint64_t a = 0, c = 0;
                double v = loop(t, k, sizes[z], all, serial, duration, &a, &c);
                if (round < 0) continue;
                ns[z][all][round] = v;
                allowed += a;
                checks += c;
            }
    printf("%-6s %14s %14s %12s %12s %8s\n", "checks", "singles ns", "check_all ns", "singles/chk",
           "all/chk", "ratio");
    for (int z = 0; z < nsizes; z++) {
        double s = bench_median(ns[z][0], (int)runs), a = bench_median(ns[z][1], (int)runs);
        printf("%-6zu %14.1f %14.1f %12.1f %12.1f %8.2f\n", sizes[z], s, a, s / (double)sizes[z],
               a / (double)sizes[z], a / s);
    }
    printf("# allowed: %.1f%% of %llu checks\n",
           checks ? 100.0 * (double)allowed / (double)checks : 0.0, (unsigned long long)checks);
    free(k);
    sl_table_destroy(t);
    return 0;
}
