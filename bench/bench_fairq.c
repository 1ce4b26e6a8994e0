/* bench_fairq.c: nanoseconds per push + pop of the weighted fair queue
 * (sluice/fairq.h) in a steady state: the queue holds `depth` items spread
 * over `tenants` tenants ("user:N" keys, picked at random per push), and
 * every iteration pushes one item and pops one. Cases: one tenant, 100,
 * 10,000 and 100,000 tenants with the default quantum (every visit serves),
 * and 1,000 tenants with costs 1..1000 against a quantum of 1 (visits that
 * serve nothing, idle rounds skipped). Prints the median (and the minimum)
 * over runs of the mean over iterations; one thread.
 * Usage: bench_fairq [--quick] [--runs N] [--iters N] */
#include "bench_common.h"

#include "sluice/error.h"
#include "sluice/fairq.h"

typedef struct bcase {
    const char *name;
    uint32_t tenants;
    size_t depth;
    int64_t max_cost, quantum;
} bcase;

static double run_case(const bcase *c, long iters, uint64_t seed) {
    sl_fairq_options o = {.max_items = c->depth + 1,
                          .max_tenants = c->tenants,
                          .max_cost = c->max_cost,
                          .quantum = c->quantum};
    sl_fairq *q;
    if (sl_fairq_create(&o, &q) != SL_OK) {
        fprintf(stderr, "bench_fairq: create failed\n");
        exit(1);
    }
    /* keys formatted once, as a server's come from a request buffer */
    char(*keys)[16] = malloc((size_t)c->tenants * sizeof *keys);
    size_t *lens = malloc((size_t)c->tenants * sizeof *lens);
    if (!keys || !lens) exit(1);
    for (uint32_t t = 0; t < c->tenants; t++) lens[t] = bench_key(keys[t], t);
    uint64_t s = seed;
    for (size_t i = 0; i < c->depth; i++) {
        uint32_t t = i < c->tenants ? (uint32_t)i : bench_below(bench_rand(&s), c->tenants);
        int64_t cost = c->max_cost > 1 ? 1 + bench_below(bench_rand(&s), (uint32_t)c->max_cost) : 1;
        if (sl_fairq_push(q, keys[t], lens[t], cost, NULL, NULL) != SL_OK) exit(1);
    }
    sl_fairq_item it;
    int64_t t0 = bench_wall_ns();
    for (long i = 0; i < iters; i++) {
        uint64_t r = bench_rand(&s);
        uint32_t t = bench_below(r, c->tenants);
        int64_t cost = c->max_cost > 1 ? 1 + (int64_t)((uint32_t)r % (uint32_t)c->max_cost) : 1;
        if (sl_fairq_push(q, keys[t], lens[t], cost, NULL, NULL) != SL_OK) exit(1);
        if (!sl_fairq_pop(q, &it)) exit(1);
    }
    int64_t t1 = bench_wall_ns();
    sl_fairq_destroy(q);
    free(keys);
    free(lens);
    return (double)(t1 - t0) / (double)iters;
}

int main(int argc, char **argv) {
    int runs = 7;
    long iters = 2000000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            runs = 3;
            iters = 200000;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atol(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_fairq [--quick] [--runs N] [--iters N]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 100 || iters < 1) return 2;
    static const bcase cases[] = {
        {"1 tenant, depth 10000", 1, 10000, 1, 0},
        {"100 tenants, depth 10000", 100, 10000, 1, 0},
        {"10000 tenants, depth 100000", 10000, 100000, 1, 0},
        {"100000 tenants, depth 1000000", 100000, 1000000, 1, 0},
        {"1000 tenants, cost 1..1000, quantum 1", 1000, 10000, 1000, 1},
    };
    bench_pin(0);
    printf("%-40s %12s %12s\n", "case", "ns/push+pop", "min");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double v[100];
        for (int r = 0; r < runs; r++) v[r] = run_case(&cases[c], iters, 1 + (uint64_t)r);
        double lo = v[0];
        for (int r = 1; r < runs; r++)
            if (v[r] < lo) lo = v[r];
        printf("%-40s %12.1f %12.1f\n", cases[c].name, bench_median(v, runs), lo);
    }
    return 0;
}
