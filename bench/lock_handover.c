/* lock_handover.c: how often two threads on one hot key hand the shard lock
 * over, and what a hand-over costs, from medians that the machine's load
 * hardly moves (docs/BENCHMARKS.md, "Two threads on one hot key").
 *
 * Two threads, pinned to CPUs 0 and 1, each make N token-bucket decisions
 * on the key "user:42" at one fixed time and stamp each with the TSC after
 * it returns. Merged in time order, a stamp of the other thread than the
 * one before is a switch: the lock changed hands. Printed: switches, and
 * decisions per switch; the median gap between two decisions of one stretch
 * and the median gap at a switch (TSC ticks and ns); the share of the run's
 * ticks spent in gaps at switches; wall ns per decision per thread (as
 * bench_decide reports it, which preemption on a loaded machine moves most).
 * x86-64 only (rdtsc). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sluice/sluice.h"

#if defined(__x86_64__)
#include <x86intrin.h>

#define N 2000000L

static sl_table *table;
static uint64_t *stamps[2];
static pthread_barrier_t barrier;

static void *run(void *arg) {
    int id = (int)(intptr_t)arg;
    cpu_set_t c;
    CPU_ZERO(&c);
    CPU_SET(id, &c);
    pthread_setaffinity_np(pthread_self(), sizeof c, &c);
    pthread_barrier_wait(&barrier);
    sl_decision d;
    for (long i = 0; i < N; i++) {
        sl_table_check(table, "user:42", 7, 1, 1000 * SL_NS_PER_SEC, &d);
        stamps[id][i] = __rdtsc();
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void) {
    sl_table_options o = {
        .params = {.algorithm = SL_TOKEN_BUCKET, .rate = {100, 60 * SL_NS_PER_SEC}, .burst = 100}};
    uint64_t *all = malloc(2 * N * sizeof *all), *in = malloc(2 * N * sizeof *in),
             *at = malloc(2 * N * sizeof *at);
    stamps[0] = malloc(N * sizeof *stamps[0]);
    stamps[1] = malloc(N * sizeof *stamps[1]);
    if (!all || !in || !at || !stamps[0] || !stamps[1] || sl_table_create(&o, &table)) return 1;
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t th[2];
    uint64_t tsc0 = __rdtsc();
    double t0 = now_ns();
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run, (void *)(intptr_t)i);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    double wall = now_ns() - t0;
    double ns_per_tick = wall / (double)(__rdtsc() - tsc0);
    /* the thread in the low bit: one tick of error in the order, no more */
    for (long i = 0; i < N; i++) {
        all[i] = stamps[0][i] & ~UINT64_C(1);
        all[N + i] = stamps[1][i] | 1;
    }
    qsort(all, 2 * N, sizeof *all, cmp_u64);
    long nin = 0, nat = 0;
    uint64_t sum_in = 0, sum_at = 0;
    for (long i = 1; i < 2 * N; i++) {
        uint64_t gap = (all[i] & ~UINT64_C(1)) - (all[i - 1] & ~UINT64_C(1));
        if ((all[i] ^ all[i - 1]) & 1) {
            at[nat++] = gap;
            sum_at += gap;
        } else {
            in[nin++] = gap;
            sum_in += gap;
        }
    }
    qsort(in, (size_t)nin, sizeof *in, cmp_u64);
    qsort(at, (size_t)nat, sizeof *at, cmp_u64);
    uint64_t med_in = nin ? in[nin / 2] : 0, med_at = nat ? at[nat / 2] : 0;
    printf("switches %ld (one per %.0f decisions); median gap in a stretch %llu ticks (%.1f ns), "
           "at a switch %llu ticks (%.1f ns); switches' share of the time %.1f%%; "
           "%.1f ns per decision per thread\n",
           nat, nat ? 2.0 * N / nat : 0.0, (unsigned long long)med_in, med_in * ns_per_tick,
           (unsigned long long)med_at, med_at * ns_per_tick,
           100.0 * (double)sum_at / (double)(sum_in + sum_at), wall * 2 / (2.0 * N));
    sl_table_destroy(table);
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "lock_handover: x86-64 only\n");
    return 0;
}
#endif
