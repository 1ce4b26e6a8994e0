/* lock_handover.c: how often two threads on one hot key hand the shard lock
 * over, what a hand-over costs, and the time per decision without the
 * preemptions of a loaded machine, for sluice and for the hand-rolled peer
 * in the same run (docs/BENCHMARKS.md, "Two threads on one hot key").
 *
 * One, then two threads, pinned to CPUs 0 and 1, each make N token-bucket
 * decisions on the key "user:42" at one fixed time and stamp each with the
 * TSC after it returns. Merged in time order, a stamp of the other thread
 * than the one before is a switch: the lock changed hands. Printed per run:
 * switches and decisions per switch; the median gap between two decisions
 * of one stretch and at a switch; ns per decision per thread as bench_decide
 * counts it (wall * threads / decisions), and the same with every gap of
 * the merged timeline over 100 us left out (no decision completed anywhere
 * for that long: both threads were off their CPUs, or one waited on the
 * other while it was). The last is what the lock decides; on a quiet machine
 * the two agree. x86-64 only (rdtsc). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sluice/sluice.h"

#if defined(__x86_64__)
#include <x86intrin.h>

#include "peer_handrolled.h"

#define N         2000000L
#define LONG_GAPS 100000.0 /* ns: a gap this long is a preemption, not the lock */

static sl_table *table;
static peer_table *peer;
static int use_peer;
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
    const int64_t now = 1000 * SL_NS_PER_SEC;
    for (long i = 0; i < N; i++) {
        if (use_peer)
            peer_allow(peer, "user:42", now);
        else
            sl_table_check(table, "user:42", 7, 1, now, &d);
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

static uint64_t *all, *in, *at;

/* One run of `threads` threads on the subject; prints one line and returns
 * the active ns per decision per thread. */
static double measure(const char *name, int threads) {
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    pthread_t th[2];
    uint64_t tsc0 = __rdtsc();
    double t0 = now_ns();
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, run, (void *)(intptr_t)i);
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    double wall = now_ns() - t0;
    double ns_per_tick = wall / (double)(__rdtsc() - tsc0);
    pthread_barrier_destroy(&barrier);
    long n = threads * N;
    /* the thread in the low bit: one tick of error in the order, no more */
    for (long i = 0; i < N; i++) {
        all[i] = stamps[0][i] & ~UINT64_C(1);
        if (threads == 2) all[N + i] = stamps[1][i] | 1;
    }
    qsort(all, (size_t)n, sizeof *all, cmp_u64);
    long nin = 0, nat = 0;
    double active = 0;
    for (long i = 1; i < n; i++) {
        uint64_t gap = (all[i] & ~UINT64_C(1)) - (all[i - 1] & ~UINT64_C(1));
        if (gap * ns_per_tick < LONG_GAPS) active += gap * ns_per_tick;
        if ((all[i] ^ all[i - 1]) & 1)
            at[nat++] = gap;
        else
            in[nin++] = gap;
    }
    qsort(in, (size_t)nin, sizeof *in, cmp_u64);
    qsort(at, (size_t)nat, sizeof *at, cmp_u64);
    uint64_t med_in = nin ? in[nin / 2] : 0, med_at = nat ? at[nat / 2] : 0;
    double per_thread = active * threads / (double)n;
    printf("%-12s %d thr: switches %7ld (one per %8.0f decisions); median gap in a stretch %4llu "
           "ticks (%5.1f ns), at a switch %6llu (%7.1f ns); ns per decision per thread: wall "
           "%6.1f, without gaps over 100 us %6.1f\n",
           name, threads, nat, nat ? (double)n / nat : 0.0, (unsigned long long)med_in,
           med_in * ns_per_tick, (unsigned long long)med_at, med_at * ns_per_tick,
           wall * threads / (double)n, per_thread);
    return per_thread;
}

int main(void) {
    sl_table_options o = {
        .params = {.algorithm = SL_TOKEN_BUCKET, .rate = {100, 60 * SL_NS_PER_SEC}, .burst = 100}};
    all = malloc(2 * N * sizeof *all);
    in = malloc(2 * N * sizeof *in);
    at = malloc(2 * N * sizeof *at);
    stamps[0] = malloc(N * sizeof *stamps[0]);
    stamps[1] = malloc(N * sizeof *stamps[1]);
    peer = peer_create(100.0 / 60.0, 100);
    if (!all || !in || !at || !stamps[0] || !stamps[1] || !peer || sl_table_create(&o, &table))
        return 1;
    double s1 = measure("token_bucket", 1), s2 = measure("token_bucket", 2);
    use_peer = 1;
    double p1 = measure("peer", 1), p2 = measure("peer", 2);
    printf("sluice / peer, without long gaps: 1 thread %.2f, 2 threads %.2f\n", s1 / p1, s2 / p2);
    sl_table_destroy(table);
    peer_destroy(peer);
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "lock_handover: x86-64 only\n");
    return 0;
}
#endif
