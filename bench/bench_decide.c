/* bench_decide.c: nanoseconds per decision of sl_table_check, for each of
 * the six algorithms, on one hot key and on N random keys (default 1M), with
 * 1 and 2 threads, next to the hand-rolled peer (peer_handrolled.c) measured
 * in the same run, round-robin, so that the ratio sees the same machine.
 *
 * Method (see docs/BENCHMARKS.md):
 *   - every table (one per algorithm, plus the peer's map) is created first
 *     and pre-populated with the N keys "user:0" .. "user:N-1", inserted in a
 *     random order, so lookups in the timed loops hit (a note is printed if
 *     a table's key count or eviction count moved during a configuration);
 *   - a decision is one call with cost 1 and a key "user:%u", %u drawn from
 *     a splitmix64 PRNG and formatted in the loop (no snprintf), or the fixed
 *     hot key "user:42";
 *   - the random key is written with one 16-byte store (bench_key_wide())
 *     32 decisions before its own, into a ring of 64 (enum key_mode below);
 *     --fresh-keys writes it just before the call, --byte-keys the same byte
 *     by byte: both measure the store-forwarding stall a key written just
 *     before its hash costs (docs/BENCHMARKS.md);
 *   - `now` is read from CLOCK_MONOTONIC once per batch of 64 decisions (a
 *     server reads its clock once per loop tick), which also ends the run;
 *   - back to back by default: the CPU may overlap the cache misses of
 *     successive decisions, as in any tight loop. --serial puts a barrier
 *     (lfence) after every decision: each one then pays its full latency,
 *     which is what a lone request in a server sees;
 *   - each configuration is run R times (default 5 x 0.3 s) after one
 *     warm-up round; the subjects take turns within each round; the median
 *     is reported, with min and max;
 *   - "harness" is the same loop with no decision at all: the cost of the
 *     key generation and the clock, included in every other figure.
 *
 * --instr: for callgrind. One thread, the hot key (or random keys with
 * --workload random), a fake clock advancing --fake-step ns per decision
 * (default 1000), exactly --ops decisions per subject, inside functions
 * named loop_*; run.sh divides callgrind's instruction count by --ops. The
 * keys are populated at the fake clock's first instant, so that their
 * states are as old at their next use as in a timed run at that pace (a
 * populate on the real clock, 2^50 ns before the fake one, left every state
 * fresh: at the cap the callgrind run then measured idle sweeps instead of
 * eviction). */
#include <errno.h>
#include <stdatomic.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_common.h"
#include "peer_handrolled.h"
#include "sluice/sluice.h"

#define BATCH       64
#define FAKE_START  (INT64_C(1) << 50) /* --instr: the fake clock's first instant */
#define HOT_KEY     42u
#define MAX_THREADS 8
#define MAX_RUNS    64

enum kind { K_SLUICE, K_PEER, K_HARNESS, K_MEMLAT };
enum workload { W_HOT, W_RANDOM };

typedef struct subject {
    const char *name;
    enum kind kind;
    sl_algorithm algo;
    sl_table *table;
    peer_table *peer;
    void **chase; /* K_MEMLAT: one random cycle of pointers, one per 64-byte line */
    size_t chase_lines;
    double ns[2][MAX_THREADS + 1][MAX_RUNS]; /* [workload][threads][run] */
    double mops[2][MAX_THREADS + 1][MAX_RUNS];
    double allowed[2][MAX_THREADS + 1][MAX_RUNS];
} subject;

/* When a random key is formatted: KEYS_AHEAD (default) writes each key
 * KEY_AHEAD decisions before its own, into a ring of KEY_RING buffers, so
 * that its stores have long retired when the decision reads it, as a
 * server's key sits in a request buffer written well before. KEYS_WIDE and
 * KEYS_BYTES write it just before the call (one 16-byte store, or byte by
 * byte): the key's loads then wait on stores that cannot be forwarded, and
 * those stores on the previous decision's miss (docs/BENCHMARKS.md, "the
 * harness's key stores"). */
enum key_mode { KEYS_AHEAD, KEYS_WIDE, KEYS_BYTES };
#define KEY_RING  64
#define KEY_AHEAD 32

typedef struct worker {
    subject *s;
    enum workload wl;
    uint32_t nkeys;
    uint64_t rng;
    int cpu;
    int64_t duration;  /* ns; real clock mode */
    uint64_t max_ops;  /* fake clock mode (--instr) */
    int64_t fake_step; /* fake clock mode: ns per decision */
    bool fake;
    bool serial;        /* barrier after every decision */
    enum key_mode keys; /* when and how random keys are formatted */
    pthread_barrier_t *barrier;
    void **pos; /* K_MEMLAT: where this thread's chase is */
    /* out */
    uint64_t ops, allowed;
    int64_t elapsed;
} worker;

/* The timed loop, one copy per kind so that no indirect call is measured.
 * DECIDE(key, len, now) must evaluate to true when the request is allowed. */
#define DEFINE_LOOP(fname, DECIDE)                                                                 \
    static __attribute__((noinline)) void fname(worker *w) {                                       \
        char hot_key[32], ring[KEY_RING][16];                                                      \
        size_t ring_len[KEY_RING];                                                                 \
        const bool hot = w->wl == W_HOT, ahead = w->keys == KEYS_AHEAD;                            \
        const uint32_t nkeys = w->nkeys;                                                           \
        uint64_t rng = w->rng, ops = 0, allowed = 0;                                               \
        char *key = hot_key;                                                                       \
        size_t len = bench_key(hot_key, HOT_KEY);                                                  \
        for (unsigned i = 0; i < KEY_RING; i++)                                                    \
            ring_len[i] = bench_key_wide(ring[i], bench_below(bench_rand(&rng), nkeys));           \
        int64_t start = bench_wall_ns(), deadline = start + w->duration;                           \
        int64_t fake_now = FAKE_START;                                                             \
        for (;;) {                                                                                 \
            int64_t now;                                                                           \
            if (w->fake) {                                                                         \
                if (ops >= w->max_ops) break;                                                      \
                now = fake_now;                                                                    \
                fake_now += BATCH * w->fake_step;                                                  \
            } else {                                                                               \
                now = sl_now_monotonic();                                                          \
                if (now >= deadline) break;                                                        \
            }                                                                                      \
            for (int b = 0; b < BATCH; b++) {                                                      \
                if (!hot && ahead) {                                                               \
                    unsigned r = (unsigned)(ops + (uint64_t)b) % KEY_RING;                         \
                    key = ring[r];                                                                 \
                    len = ring_len[r];                                                             \
                } else if (!hot) {                                                                 \
                    uint32_t u = bench_below(bench_rand(&rng), nkeys);                             \
                    len = w->keys == KEYS_BYTES ? bench_key(key, u) : bench_key_wide(key, u);      \
                }                                                                                  \
                allowed += (DECIDE) ? 1 : 0;                                                       \
                if (!hot && ahead) {                                                               \
                    unsigned r = (unsigned)(ops + (uint64_t)b + KEY_AHEAD) % KEY_RING;             \
                    ring_len[r] = bench_key_wide(ring[r], bench_below(bench_rand(&rng), nkeys));   \
                }                                                                                  \
                if (w->serial) bench_serialize();                                                  \
            }                                                                                      \
            ops += BATCH;                                                                          \
        }                                                                                          \
        w->elapsed = bench_wall_ns() - start;                                                      \
        w->ops = ops;                                                                              \
        w->allowed = allowed;                                                                      \
        w->rng = rng;                                                                              \
    }

static inline bool decide_sluice(sl_table *t, const char *key, size_t len, int64_t now) {
    sl_decision d;
    sl_table_check(t, key, len, 1, now, &d);
    return d.allowed;
}

/* The harness: the same loop without a decision. The asm keeps the key
 * bytes "used" so the compiler cannot drop their formatting. */
static inline bool decide_none(const char *key, size_t len) {
    __asm__ __volatile__("" : : "r"(key), "r"(len) : "memory");
    return true;
}

DEFINE_LOOP(loop_sluice, decide_sluice(w->s->table, key, len, now))
DEFINE_LOOP(loop_peer, ((void)len, peer_allow(w->s->peer, key, now)))
DEFINE_LOOP(loop_harness, decide_none(key, len))
/* memlat: one dependent load of a random line per "decision", in the same
 * loop (key generation, clock, barrier) as every other subject. */
DEFINE_LOOP(loop_memlat, (decide_none(key, len), (w->pos = *w->pos) != NULL))

static bool pin = true, serial = false;
static enum key_mode key_mode = KEYS_AHEAD;

static void *worker_main(void *arg) {
    worker *w = arg;
    if (pin) bench_pin(w->cpu);
    pthread_barrier_wait(w->barrier);
    switch (w->s->kind) {
    case K_SLUICE:
        loop_sluice(w);
        break;
    case K_PEER:
        loop_peer(w);
        break;
    case K_HARNESS:
        loop_harness(w);
        break;
    case K_MEMLAT:
        loop_memlat(w);
        break;
    }
    return NULL;
}

typedef struct result {
    double ns_per_decision; /* per thread: wall * threads / decisions */
    double mops;            /* all threads: decisions per microsecond */
    double allowed_pct;
} result;

static uint64_t seed_counter = 1;
static int64_t fake_step = 1000; /* --fake-step */

static result run_once(subject *s, enum workload wl, int threads, uint32_t nkeys, double secs,
                       bool fake, uint64_t max_ops) {
    pthread_t tid[MAX_THREADS];
    worker w[MAX_THREADS];
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){.s = s,
                        .wl = wl,
                        .nkeys = nkeys,
                        .rng = 0x5eed0000ULL + seed_counter++ * 0x1234567ULL,
                        .cpu = i,
                        .duration = (int64_t)(secs * 1e9),
                        .max_ops = max_ops,
                        .fake_step = fake_step,
                        .fake = fake,
                        .serial = serial,
                        .keys = key_mode,
                        .barrier = &barrier,
                        /* each thread starts elsewhere in the cycle (inside it: a hot-key
                         * table's 64 KiB hold fewer than 4099 lines) */
                        .pos = s->chase ? &s->chase[(size_t)i * 4099 % s->chase_lines * 8] : NULL};
        if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0) {
            perror("pthread_create");
            exit(1);
        }
    }
    uint64_t ops = 0, allowed = 0;
    int64_t wall = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        ops += w[i].ops;
        allowed += w[i].allowed;
        if (w[i].elapsed > wall) wall = w[i].elapsed;
    }
    pthread_barrier_destroy(&barrier);
    result r;
    r.ns_per_decision = ops ? (double)wall * threads / (double)ops : 0;
    r.mops = wall ? (double)ops / ((double)wall / 1e3) : 0;
    r.allowed_pct = ops ? 100.0 * (double)allowed / (double)ops : 0;
    return r;
}

/* ---- subjects -------------------------------------------------------------- */

/* The limit every subject enforces: 100 per minute, burst 100 (an API limit
 * per user). Random keys are hit a few times a second at most, so they are
 * allowed; the hot key is hammered far beyond it, so it is mostly refused.
 * --limit N sets N per minute and a burst of N (a large N: a hot key that is
 * allowed; the sliding log keeps N times per key, so leave it out then). */
static long long bench_limit = 100, bench_burst = 100;
#define PERIOD_NS (60 * SL_NS_PER_SEC)

static const struct {
    const char *name;
    sl_algorithm algo;
} algos[] = {
    {"fixed_window", SL_FIXED_WINDOW},
    {"sliding_log", SL_SLIDING_LOG},
    {"sliding_window", SL_SLIDING_WINDOW},
    {"token_bucket", SL_TOKEN_BUCKET},
    {"gcra", SL_GCRA},
    {"leaky_queue", SL_LEAKY_QUEUE},
};
#define NALGOS (sizeof algos / sizeof algos[0])

static bool selected(const char *list, const char *name) {
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && strncmp(p, name, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* Inserts the keys in a random order (clients show up in no particular
 * order; inserting "user:0", "user:1", ... in sequence would give a
 * map whose allocations follow the key numbers an unrealistic locality). */
static void populate(subject *s, uint32_t nkeys, int64_t now) {
    char key[32];
    if (nkeys == 0) return;
    uint32_t *order = malloc((size_t)nkeys * sizeof *order);
    if (!order) {
        perror("malloc");
        exit(1);
    }
    uint64_t rng = 0x0dde7ULL;
    for (uint32_t u = 0; u < nkeys; u++) order[u] = u;
    for (uint32_t u = nkeys - 1; u > 0; u--) {
        uint32_t j = bench_below(bench_rand(&rng), u + 1);
        uint32_t x = order[u];
        order[u] = order[j];
        order[j] = x;
    }
    /* one instant (now): nothing decays while we fill */
    for (uint32_t k = 0; k < nkeys; k++) {
        size_t len = bench_key(key, order[k]);
        if (s->kind == K_SLUICE) {
            sl_decision d;
            int rc = sl_table_check(s->table, key, len, 1, now, &d);
            if (rc) {
                fprintf(stderr, "populate %s: %s\n", s->name, sl_strerror(rc));
                exit(1);
            }
        } else if (s->kind == K_PEER) {
            peer_allow(s->peer, key, now);
        }
    }
    free(order);
}

static void table_state(subject *s, uint64_t *keys, uint64_t *evicted, uint64_t *idle) {
    *keys = *evicted = *idle = 0;
    if (s->kind == K_SLUICE) {
        sl_table_stats st;
        sl_table_stats_get(s->table, &st);
        *keys = st.keys;
        *evicted = st.evicted_idle + st.evicted_live;
        *idle = st.evicted_idle;
    } else if (s->kind == K_PEER) {
        *keys = peer_count(s->peer);
    }
}

/* The memlat subject's working set: as many bytes as the token-bucket table
 * holds (else the first table), one pointer per 64-byte line in a single
 * random cycle (Sattolo), in malloc'd memory like the tables' arrays, and
 * like them advised for 2 MiB pages (core/table_slots.c) unless
 * --memlat-4k. */
static bool memlat_huge = true;
static void build_memlat(subject *subs, int nsubs) {
    subject *m = NULL, *ref = NULL;
    for (int i = 0; i < nsubs; i++) {
        if (subs[i].kind == K_MEMLAT) m = &subs[i];
        if (subs[i].kind == K_SLUICE && (!ref || subs[i].algo == SL_TOKEN_BUCKET)) ref = &subs[i];
    }
    if (!m) return;
    size_t bytes = (size_t)64 << 20;
    if (ref) {
        sl_table_stats st;
        sl_table_stats_get(ref->table, &st);
        bytes = st.bytes > ((size_t)64 << 10) ? st.bytes : (size_t)64 << 10;
    }
    size_t lines = bytes / 64;
    m->chase = aligned_alloc(64, lines * 64);
    m->chase_lines = lines;
    if (m->chase && memlat_huge) {
        const uintptr_t huge = (uintptr_t)2 << 20;
        uintptr_t a = ((uintptr_t)m->chase + huge - 1) & ~(huge - 1);
        uintptr_t b = ((uintptr_t)m->chase + lines * 64) & ~(huge - 1);
        if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
    }
    uint64_t rng = 0xc4a5eULL;
    if (!m->chase || bench_chase_link(m->chase, lines, &rng)) {
        perror("malloc");
        exit(1);
    }
    printf("# memlat subject: dependent loads over %.1f MiB (the %s table's bytes), %s pages\n",
           (double)bytes / (1 << 20), ref ? ref->name : "default", memlat_huge ? "2 MiB" : "4 KiB");
}

/* The process's anonymous memory on 2 MiB pages, in KiB (AnonHugePages of
 * /proc/self/smaps_rollup), or -1 where the kernel does not say: each
 * populate line reports what its table got, since a shard's array of under
 * 2 MiB has no 2 MiB page (64 shards: tables under 128 MiB) while the memlat
 * chase is one mapping. */
static long anon_huge_kib(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return -1;
    char line[128];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_decide [options]\n"
            "  --quick            3 runs of 0.1 s (default: 5 runs of 0.3 s)\n"
            "  --runs N           measured runs per configuration (median reported)\n"
            "  --time SECONDS     length of one run\n"
            "  --keys N           random-key population (default 1000000)\n"
            "  --only LIST        comma list of subjects: fixed_window, sliding_log,\n"
            "                     sliding_window, token_bucket, gcra, leaky_queue,\n"
            "                     peer, harness, memlat (default: all; memlat chases\n"
            "                     pointers over as many bytes as the token-bucket table)\n"
            "  --workload W       hot, random or all (default all)\n"
            "  --threads LIST     comma list of thread counts (default 1,2)\n"
            "  --csv FILE         also write every median as CSV\n"
            "  --serial           a barrier (lfence) after every decision: latency of a\n"
            "                     lone decision instead of back-to-back throughput\n"
            "  --fresh-keys       format each random key just before its decision, with\n"
            "                     one 16-byte store (default: 32 decisions ahead)\n"
            "  --byte-keys        the same, byte by byte (see bench_common.h)\n"
            "  --memlat-4k        memlat on 4 KiB pages (default: advised for 2 MiB\n"
            "                     pages, as the tables' slot arrays are)\n"
            "  --limit N          N per minute, burst N, for every subject (default 100;\n"
            "                     a large N keeps the hot key allowed)\n"
            "  --cap BYTES        each table's max_memory (default 4 GiB: no eviction);\n"
            "                     below what the keys need, decisions evict\n"
            "  --no-pin           do not pin thread i to CPU i\n"
            "  --instr --ops N    callgrind mode: N decisions per subject (the hot key,\n"
            "                     or random keys with --workload random), 1 thread,\n"
            "                     fake clock, no timing output\n"
            "  --fake-step NS     --instr: the fake clock's ns per decision (default 1000;\n"
            "                     a timed run's pace gives its states' ages, e.g. at the cap)\n");
}

int main(int argc, char **argv) {
    int runs = 5;
    double secs = 0.3;
    long keys = 1000000;
    const char *only = NULL, *csv = NULL, *wl_opt = "all", *threads_opt = "1,2";
    bool instr = false;
    long long instr_ops = 1000000;
    bool keys_given = false;
    unsigned long long cap = 0; /* --cap: each table's max_memory (0: 4 GiB, nothing evicted) */

    static const struct option opts[] = {
        {"quick", no_argument, 0, 'q'},           {"runs", required_argument, 0, 'r'},
        {"time", required_argument, 0, 't'},      {"keys", required_argument, 0, 'k'},
        {"only", required_argument, 0, 'o'},      {"workload", required_argument, 0, 'w'},
        {"threads", required_argument, 0, 'T'},   {"csv", required_argument, 0, 'c'},
        {"no-pin", no_argument, 0, 'P'},          {"instr", no_argument, 0, 'i'},
        {"ops", required_argument, 0, 'n'},       {"help", no_argument, 0, 'h'},
        {"serial", no_argument, 0, 'S'},          {"byte-keys", no_argument, 0, 'B'},
        {"fresh-keys", no_argument, 0, 'F'},      {"cap", required_argument, 0, 'C'},
        {"limit", required_argument, 0, 'L'},     {"memlat-4k", no_argument, 0, 'M'},
        {"fake-step", required_argument, 0, 'f'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'M':
            memlat_huge = false;
            break;
        case 'f':
            fake_step = atoll(optarg);
            if (fake_step < 1 || fake_step > 1000000000) {
                fprintf(stderr, "--fake-step: ns per decision, 1..1e9\n");
                return 2;
            }
            break;
        case 'q':
            runs = 3;
            secs = 0.1;
            break;
        case 'r':
            runs = atoi(optarg);
            break;
        case 't':
            secs = atof(optarg);
            break;
        case 'k':
            keys = atol(optarg);
            keys_given = true;
            break;
        case 'o':
            only = optarg;
            break;
        case 'w':
            wl_opt = optarg;
            break;
        case 'T':
            threads_opt = optarg;
            break;
        case 'c':
            csv = optarg;
            break;
        case 'P':
            pin = false;
            break;
        case 'S':
            serial = true;
            break;
        case 'B':
            key_mode = KEYS_BYTES;
            break;
        case 'F':
            key_mode = KEYS_WIDE;
            break;
        case 'C':
            cap = strtoull(optarg, NULL, 10);
            break;
        case 'L':
            bench_limit = bench_burst = atoll(optarg);
            if (bench_limit < 1) {
                fprintf(stderr, "--limit: a positive count per minute\n");
                return 2;
            }
            break;
        case 'i':
            instr = true;
            break;
        case 'n':
            instr_ops = atoll(optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (runs < 1 || runs > MAX_RUNS || secs <= 0 || keys < 0 || keys > 100000000) {
        usage(stderr);
        return 2;
    }
    if (instr && !keys_given && strcmp(wl_opt, "random") != 0)
        keys = 0; /* the hot key alone: fast under valgrind */
    uint32_t nkeys = (uint32_t)keys;

    int thread_counts[8], nthreadc = 0;
    for (const char *p = threads_opt; *p && nthreadc < 8;) {
        int n = atoi(p);
        if (n < 1 || n > MAX_THREADS) {
            fprintf(stderr, "bad --threads\n");
            return 2;
        }
        thread_counts[nthreadc++] = n;
        const char *e = strchr(p, ',');
        if (!e) break;
        p = e + 1;
    }
    bool do_hot = !strcmp(wl_opt, "all") || !strcmp(wl_opt, "hot");
    bool do_random = !strcmp(wl_opt, "all") || !strcmp(wl_opt, "random");
    if (instr && !strcmp(wl_opt, "all")) do_random = false; /* default: the hot key */
    if (do_random && nkeys == 0) {
        fprintf(stderr, "--keys must be > 0 for the random workload\n");
        return 2;
    }

    /* Subjects: the six algorithms, the peer, the harness. */
    static subject subs[NALGOS + 3];
    int nsubs = 0;
    for (size_t i = 0; i < NALGOS; i++) {
        if (!selected(only, algos[i].name)) continue;
        subject *s = &subs[nsubs++];
        s->name = algos[i].name;
        s->kind = K_SLUICE;
        s->algo = algos[i].algo;
        sl_table_options o = {0};
        o.params.algorithm = algos[i].algo;
        o.params.rate = (sl_rate){bench_limit, PERIOD_NS};
        o.params.burst = bench_burst;
        /* a cap far above what the keys need: nothing is evicted (or --cap) */
        o.max_memory = cap ? (size_t)cap : (size_t)4 << 30;
        o.seed = 0x9e3779b97f4a7c15ULL;
        int rc = sl_table_create(&o, &s->table);
        if (rc) {
            fprintf(stderr, "sl_table_create(%s): %s\n", s->name, sl_strerror(rc));
            return 1;
        }
    }
    if (selected(only, "peer")) {
        subject *s = &subs[nsubs++];
        s->name = "peer";
        s->kind = K_PEER;
        s->peer = peer_create((double)bench_limit / ((double)PERIOD_NS / 1e9), bench_burst);
        if (!s->peer) return 1;
    }
    if (selected(only, "harness")) {
        subject *s = &subs[nsubs++];
        s->name = "harness";
        s->kind = K_HARNESS;
    }
    if (selected(only, "memlat") && !instr) {
        subject *s = &subs[nsubs++];
        s->name = "memlat";
        s->kind = K_MEMLAT; /* its chase is built once the tables are populated */
    }
    if (nsubs == 0) {
        fprintf(stderr, "no subject selected\n");
        return 2;
    }

    if (instr) {
        for (int i = 0; i < nsubs; i++) {
            if (nkeys) populate(&subs[i], nkeys, FAKE_START);
            result r = run_once(&subs[i], do_hot ? W_HOT : W_RANDOM, 1, nkeys, 0, true,
                                (uint64_t)instr_ops);
            printf("instr %s ops=%lld allowed=%.3f%%\n", subs[i].name, instr_ops, r.allowed_pct);
        }
        return 0;
    }

    printf("# bench_decide: %d runs x %.2f s per configuration (median), %u random keys, "
           "limit %lld/min burst %lld, cost 1\n# mode: %s; random keys written %s\n",
           runs, secs, nkeys, bench_limit, bench_burst,
           serial ? "serialized (lfence after every decision: latency of one decision)"
                  : "back to back (successive decisions may overlap)",
           key_mode == KEYS_BYTES  ? "byte by byte just before the call"
           : key_mode == KEYS_WIDE ? "with one 16-byte store just before the call"
                                   : "with one 16-byte store, 32 decisions ahead");
    if (do_random) {
        for (int i = 0; i < nsubs; i++) {
            long huge0 = anon_huge_kib();
            int64_t t0 = bench_wall_ns();
            populate(&subs[i], nkeys, sl_now_monotonic());
            double took = (double)(bench_wall_ns() - t0) / 1e9;
            long huge1 = anon_huge_kib();
            uint64_t held, evicted, idle;
            table_state(&subs[i], &held, &evicted, &idle);
            printf("# populated %-14s with %u keys in %.2f s: %llu held, %llu evicted",
                   subs[i].name, nkeys, took, (unsigned long long)held,
                   (unsigned long long)evicted);
            if (huge0 >= 0 && huge1 >= 0)
                printf("; %.1f MiB more on 2 MiB pages", (double)(huge1 - huge0) / 1024);
            printf("\n");
        }
    }
    build_memlat(subs, nsubs);
    fflush(stdout);

    FILE *cf = NULL;
    if (csv) {
        cf = fopen(csv, "w");
        if (!cf) {
            fprintf(stderr, "%s: %s\n", csv, strerror(errno));
            return 1;
        }
        fprintf(cf, "mode,workload,threads,subject,ns_per_decision_median,ns_min,ns_max,"
                    "mdecisions_per_s_median,allowed_pct\n");
    }

    printf("\n%-7s %-3s %-15s %10s %8s %8s %10s %8s\n", "keys", "thr", "subject", "ns/dec", "min",
           "max", "Mdec/s", "allowed");
    for (int wl = W_HOT; wl <= W_RANDOM; wl++) {
        if (wl == W_HOT && !do_hot) continue;
        if (wl == W_RANDOM && !do_random) continue;
        for (int tc = 0; tc < nthreadc; tc++) {
            int th = thread_counts[tc];
            uint64_t keys_before[NALGOS + 3], ev_before[NALGOS + 3], idle_before[NALGOS + 3];
            for (int i = 0; i < nsubs; i++)
                table_state(&subs[i], &keys_before[i], &ev_before[i], &idle_before[i]);
            /* warm-up round, then measured rounds; subjects take turns */
            for (int i = 0; i < nsubs; i++)
                run_once(&subs[i], (enum workload)wl, th, nkeys, secs / 2, false, 0);
            for (int r = 0; r < runs; r++) {
                for (int i = 0; i < nsubs; i++) {
                    result res = run_once(&subs[i], (enum workload)wl, th, nkeys, secs, false, 0);
                    subs[i].ns[wl][th][r] = res.ns_per_decision;
                    subs[i].mops[wl][th][r] = res.mops;
                    subs[i].allowed[wl][th][r] = res.allowed_pct;
                }
            }
            for (int i = 0; i < nsubs; i++) {
                subject *s = &subs[i];
                double v[MAX_RUNS], m[MAX_RUNS], a[MAX_RUNS];
                memcpy(v, s->ns[wl][th], sizeof v);
                memcpy(m, s->mops[wl][th], sizeof m);
                memcpy(a, s->allowed[wl][th], sizeof a);
                double med = bench_median(v, runs);
                double mm = bench_median(m, runs);
                double am = bench_median(a, runs);
                const char *wname = wl == W_HOT ? "hot" : "random";
                printf("%-7s %-3d %-15s %10.1f %8.1f %8.1f %10.2f %7.1f%%\n", wname, th, s->name,
                       med, v[0], v[runs - 1], mm, am);
                if (cf)
                    fprintf(cf, "%s,%s,%d,%s,%.2f,%.2f,%.2f,%.3f,%.2f\n",
                            serial ? "serial" : "back-to-back", wname, th, s->name, med, v[0],
                            v[runs - 1], mm, am);
                uint64_t k, e, idle;
                table_state(s, &k, &e, &idle);
                if (k != keys_before[i] || e != ev_before[i])
                    printf("#   note: %s table went from %llu to %llu keys, %llu evictions, "
                           "%llu of them idle (lookups did not all hit)\n",
                           s->name, (unsigned long long)keys_before[i], (unsigned long long)k,
                           (unsigned long long)(e - ev_before[i]),
                           (unsigned long long)(idle - idle_before[i]));
            }
            fflush(stdout);
        }
    }

    /* Ratios: sluice's bucket algorithms against the peer (also a token bucket). */
    subject *peer = NULL, *harness = NULL;
    for (int i = 0; i < nsubs; i++) {
        if (subs[i].kind == K_PEER) peer = &subs[i];
        if (subs[i].kind == K_HARNESS) harness = &subs[i];
    }
    if (peer) {
        printf("\n# ratio sluice/peer (median ns per decision; < 1 means sluice is faster)%s\n",
               harness ? "; net = minus the harness" : "");
        printf("%-7s %-3s %-15s %10s %10s %8s %10s\n", "keys", "thr", "subject", "sluice", "peer",
               "ratio", "net ratio");
        for (int wl = W_HOT; wl <= W_RANDOM; wl++) {
            if ((wl == W_HOT && !do_hot) || (wl == W_RANDOM && !do_random)) continue;
            for (int tc = 0; tc < nthreadc; tc++) {
                int th = thread_counts[tc];
                double pv[MAX_RUNS], hv[MAX_RUNS];
                memcpy(pv, peer->ns[wl][th], sizeof pv);
                double pm = bench_median(pv, runs), hm = 0;
                if (harness) {
                    memcpy(hv, harness->ns[wl][th], sizeof hv);
                    hm = bench_median(hv, runs);
                }
                for (int i = 0; i < nsubs; i++) {
                    if (subs[i].kind != K_SLUICE) continue;
                    double sv[MAX_RUNS];
                    memcpy(sv, subs[i].ns[wl][th], sizeof sv);
                    double sm = bench_median(sv, runs);
                    printf("%-7s %-3d %-15s %10.1f %10.1f %8.2f", wl == W_HOT ? "hot" : "random",
                           th, subs[i].name, sm, pm, sm / pm);
                    if (harness && pm - hm > 0) printf(" %10.2f", (sm - hm) / (pm - hm));
                    printf("\n");
                }
            }
        }
    }
    /* Ratios against one dependent memory access of the same working set. */
    subject *ml = NULL;
    for (int i = 0; i < nsubs; i++)
        if (subs[i].kind == K_MEMLAT) ml = &subs[i];
    if (ml && do_random) {
        printf("\n# ratio sluice/memlat, random keys (median ns per decision over median ns per "
               "dependent access of as many bytes, same run)\n");
        printf("%-7s %-3s %-15s %10s %10s %8s\n", "keys", "thr", "subject", "sluice", "memlat",
               "ratio");
        for (int tc = 0; tc < nthreadc; tc++) {
            int th = thread_counts[tc];
            double mv[MAX_RUNS];
            memcpy(mv, ml->ns[W_RANDOM][th], sizeof mv);
            double mm = bench_median(mv, runs);
            for (int i = 0; i < nsubs; i++) {
                if (subs[i].kind != K_SLUICE) continue;
                double sv[MAX_RUNS];
                memcpy(sv, subs[i].ns[W_RANDOM][th], sizeof sv);
                double sm = bench_median(sv, runs);
                printf("%-7s %-3d %-15s %10.1f %10.1f %8.2f\n", "random", th, subs[i].name, sm, mm,
                       mm > 0 ? sm / mm : 0);
            }
        }
    }
    if (cf) fclose(cf);

    for (int i = 0; i < nsubs; i++) {
        if (subs[i].table) sl_table_destroy(subs[i].table);
        if (subs[i].peer) peer_destroy(subs[i].peer);
        free(subs[i].chase);
    }
    return 0;
}
