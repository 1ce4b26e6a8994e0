/* test_redis_script.c: the Redis store's decision script (src/store/decide.lua
 * and redis_script.c) against a real redis-server that the test starts on a
 * unix socket in a temporary directory (and stops at the end; the test fails
 * if it cannot start it). The script and libsluice's sl_table decide the
 * same random traces side by side at the same times, for every algorithm
 * with and without burst, costs, start empty and count rejected, as single
 * limits and as layered groups (enforced and shadow, the same key twice);
 * TTLs are checked after every write; EVALSHA with the embedded SHA; the
 * calendar month against sl__calendar_month; the RESP formatter and the
 * reply parser on hand-made replies.
 *
 * Simulated time and Redis's clock: traces pass explicit times, while key
 * TTLs run on Redis's real clock. Each call of a trace reads the TTLs the
 * script set and PERSISTs the keys in the same MULTI/EXEC (run_persist;
 * run_sim where the TTLs are not checked: the batched and by-hand cases), so
 * that a key whose simulated reset lies later than a few real milliseconds
 * cannot vanish in the middle of a trace. Expiry itself is tested in real time with
 * now = Redis TIME (test_ttl_real_time). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "policy/policy.h"
#include "sluice/sluice.h"
#include "store/redis_script.h"
#include "util/buf.h"

#include "redis_fixture.h"
#include "helpers.h"

#define US    INT64_C(1000) /* ns per us */
#define MS_US INT64_C(1000)
#define S_US  INT64_C(1000000)
/* A realistic Unix time in us (2023-11-14); traces start near it. */
#define T0_US INT64_C(1700000000000000)

/* ---- the redis-server of this test (redis_fixture.h) ------------------------- */

static void cmd_ok(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    if (!r) fail_msg("redis: %s", rc->errstr);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("redis error: %s", r->str);
    freeReplyObject(r);
}

/* ---- calling the script ------------------------------------------------------- */

static const char *rkey(const char *policy, const char *key) {
    static char ring[64][96];
    static unsigned next;
    char *out = ring[next++ % 64];
    sl__buf b;
    sl__buf_init(&b);
    sl__buf_puts(&b, "t:");
    sl__redis_key(&b, "", policy, key, strlen(key));
    assert_true(b.len < 96);
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    sl__buf_free(&b);
    return out;
}

static sl__script_item item(const sl_params *p, const char *rk, int64_t cost, unsigned group) {
    return (sl__script_item){
        .params = p, .rkey = rk, .rkeylen = strlen(rk), .cost = cost, .group = group};
}

/* ---- comparing decisions --------------------------------------------------------- */

/* Durations: the script rounds up to whole us where the C core rounds to ns;
 * with `tolerant` parameters (an emission interval that is not a whole us)
 * the script's value may be up to 999 ns later, never earlier. */
static void same_duration(const char *ctx, const char *field, int64_t mem, int64_t red,
                          bool tolerant) {
    if (mem == red) return;
    if (tolerant && mem >= 0 && red > mem && red - mem < US) return;
    fail_msg("%s: %s memory %lld, redis %lld", ctx, field, (long long)mem, (long long)red);
}

static void same_decision(const char *ctx, const sl_decision *m, const sl_decision *r,
                          bool tolerant) {
    if (m->allowed != r->allowed || m->limit != r->limit || m->remaining != r->remaining)
        fail_msg("%s: memory {allowed %d limit %lld remaining %lld retry %lld reset %lld} redis "
                 "{allowed %d limit %lld remaining %lld retry %lld reset %lld}",
                 ctx, m->allowed, (long long)m->limit, (long long)m->remaining,
                 (long long)m->retry_after, (long long)m->reset_after, r->allowed,
                 (long long)r->limit, (long long)r->remaining, (long long)r->retry_after,
                 (long long)r->reset_after);
    same_duration(ctx, "retry_after", m->retry_after, r->retry_after, tolerant);
    same_duration(ctx, "reset_after", m->reset_after, r->reset_after, tolerant);
    same_duration(ctx, "delay", m->delay, r->delay, tolerant);
}

/* ---- TTLs ------------------------------------------------------------------------ */

/* The script sets PEXPIRE ceil(ttl_us / 1000) where ttl_us is the time until
 * the key's state is fresh. Redis answers PTTL on its real clock, `elapsed`
 * ms after the call started, rounded down, so ttl_ms - elapsed - 1 <= PTTL <=
 * ttl_ms (a 1 ms TTL may read 0: the key is there, expiring within the ms). */
static void check_pttl(const char *ctx, long long pttl, int64_t ttl_us, int64_t elapsed_ms) {
    int64_t want = (ttl_us + 999) / 1000;
    if (pttl < 0 || pttl > want || pttl < want - elapsed_ms - 1)
        fail_msg("%s: PTTL %lld, want %lld ms (ttl %lld us, %lld ms elapsed)", ctx, pttl,
                 (long long)want, (long long)ttl_us, (long long)elapsed_ms);
}

/* run() for simulated time: the script and a PERSIST of every key it names,
 * in one MULTI/EXEC (run_persist), so that a stall of the test between two
 * calls cannot expire a key on Redis's real clock. The script must be
 * loaded. */
static void run_sim(sl__script_item *items, size_t n, int64_t now_us) {
    const char *keys[64];
    long long pttl[64];
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < nk && strcmp(keys[j], items[i].rkey) != 0) j++;
        if (j == nk) {
            assert_true(nk < 64);
            keys[nk++] = items[i].rkey;
        }
    }
    run_persist(items, n, now_us, keys, nk, pttl);
}

/* What a cost-0 item of p on rk sees left at now_us (run_sim: nothing charged). */
static int64_t remaining_of(const sl_params *p, const char *rk, int64_t now_us) {
    sl__script_item look = item(p, rk, 0, 0);
    run_sim(&look, 1, now_us);
    return look.decision.remaining;
}

/* ---- single limits: random traces ------------------------------------------------ */

typedef struct pset {
    const char *name;
    sl_algorithm a;
    int64_t limit, period_us, burst;
    unsigned flags;
    bool tolerant;       /* emission interval not a whole us: durations within 1 us */
    int64_t maxc;        /* random costs 1..maxc (0: 3) */
    int64_t delay_after; /* leaky queue: nginx's delay=D */
} pset;

#define SE SL_START_EMPTY
#define CR SL_COUNT_REJECTED
#define ST SL_STEP_REFILL

/* Periods of the windows are multiples of lcm(1..limit) us, so that the
 * sliding window's "first instant it passes" is a whole us too. Periods are
 * long enough (>= 1 s) that a key's real TTL cannot run out during a trace
 * step (and keys are persisted after each call anyway). */
static const pset psets[] = {
    {"fixed 5/s", SL_FIXED_WINDOW, 5, 1 * S_US, 0, 0, false, 0, 0},
    {"fixed 10/2.52s costs", SL_FIXED_WINDOW, 10, 2520000, 0, 0, false, 0, 0},
    {"fixed 3/2s start empty", SL_FIXED_WINDOW, 3, 2 * S_US, 0, SE, false, 0, 0},
    {"fixed 4/s count rejected", SL_FIXED_WINDOW, 4, 1 * S_US, 0, CR, false, 0, 0},
    {"fixed 4/s both", SL_FIXED_WINDOW, 4, 1 * S_US, 0, SE | CR, false, 0, 0},
    {"log 5/1.2s", SL_SLIDING_LOG, 5, 1200000, 0, 0, false, 0, 0},
    {"log 8/2s costs", SL_SLIDING_LOG, 8, 2 * S_US, 0, 0, false, 0, 0},
    {"log 4/s start empty", SL_SLIDING_LOG, 4, 1 * S_US, 0, SE, false, 0, 0},
    {"log 6/s count rejected", SL_SLIDING_LOG, 6, 1 * S_US, 0, CR, false, 0, 0},
    {"log 3/s both", SL_SLIDING_LOG, 3, 1 * S_US, 0, SE | CR, false, 0, 0},
    {"sliding 5/1.2s", SL_SLIDING_WINDOW, 5, 1200000, 0, 0, false, 0, 0},
    {"sliding 10/2.52s costs", SL_SLIDING_WINDOW, 10, 2520000, 0, 0, false, 0, 0},
    {"sliding 6/1.2s start empty", SL_SLIDING_WINDOW, 6, 1200000, 0, SE, false, 0, 0},
    {"sliding 4/1.2s count rejected", SL_SLIDING_WINDOW, 4, 1200000, 0, CR, false, 0, 0},
    {"sliding 7/s (not whole us)", SL_SLIDING_WINDOW, 7, 1 * S_US, 0, CR, true, 0, 0},
    {"token 5/s burst 1", SL_TOKEN_BUCKET, 5, 1 * S_US, 1, 0, false, 0, 0},
    {"token 2/s burst 3", SL_TOKEN_BUCKET, 2, 1 * S_US, 3, 0, false, 0, 0},
    {"token 4/s burst 10 costs", SL_TOKEN_BUCKET, 4, 1 * S_US, 10, 0, false, 0, 0},
    {"token 10/s burst 21 start empty", SL_TOKEN_BUCKET, 10, 1 * S_US, 21, SE, false, 0, 0},
    {"token 8/s burst 4 count rejected", SL_TOKEN_BUCKET, 8, 1 * S_US, 4, CR, false, 0, 0},
    {"token 3/s burst 2 (not whole us)", SL_TOKEN_BUCKET, 3, 1 * S_US, 2, SE | CR, true, 0, 0},
    /* refill: steps (Envoy's local rate limit: N tokens at every multiple of P) */
    {"token 5/s burst 8 steps", SL_TOKEN_BUCKET, 5, 1 * S_US, 8, ST, false, 0, 0},
    {"token 3/2s burst 3 steps costs", SL_TOKEN_BUCKET, 3, 2 * S_US, 3, ST | CR, false, 3, 0},
    {"token 4/s burst 2 steps start empty", SL_TOKEN_BUCKET, 4, 1 * S_US, 2, ST | SE, false, 0, 0},
    {"token 3/s burst 5 steps (not whole us)", SL_TOKEN_BUCKET, 3, 1 * S_US, 5, ST, true, 0, 0},
    {"gcra 5/s burst 5", SL_GCRA, 5, 1 * S_US, 5, 0, false, 0, 0},
    {"gcra 4/s burst 10 costs", SL_GCRA, 4, 1 * S_US, 10, 0, false, 0, 0},
    {"gcra 10/s burst 3 start empty", SL_GCRA, 10, 1 * S_US, 3, SE, false, 0, 0},
    {"gcra 8/s burst 4 count rejected", SL_GCRA, 8, 1 * S_US, 4, CR, false, 0, 0},
    {"gcra 3/s burst 2 (not whole us)", SL_GCRA, 3, 1 * S_US, 2, SE | CR, true, 0, 0},
    {"queue 5/s room 5", SL_LEAKY_QUEUE, 5, 1 * S_US, 5, 0, false, 0, 0},
    {"queue 4/s room 8 costs", SL_LEAKY_QUEUE, 4, 1 * S_US, 8, 0, false, 0, 0},
    {"queue 2/s room 3 start empty", SL_LEAKY_QUEUE, 2, 1 * S_US, 3, SE, false, 0, 0},
    {"queue 8/s room 4 count rejected", SL_LEAKY_QUEUE, 8, 1 * S_US, 4, CR, false, 0, 0},
    {"queue 7/s room 3 (not whole us)", SL_LEAKY_QUEUE, 7, 1 * S_US, 3, CR, true, 0, 0},
    /* delay_after (nginx's burst=B delay=D: room B+1, delay_after D) */
    {"queue 10/s room 21 delay_after 8", SL_LEAKY_QUEUE, 10, 1 * S_US, 21, 0, false, 0, 8},
    {"queue 5/s room 6 delay_after 5", SL_LEAKY_QUEUE, 5, 1 * S_US, 6, CR, false, 0, 5},
    {"queue 4/s room 8 delay_after 2 costs", SL_LEAKY_QUEUE, 4, 1 * S_US, 8, SE, false, 4, 2},
    {"queue 7/s room 4 delay_after 1 (not whole us)", SL_LEAKY_QUEUE, 7, 1 * S_US, 4, 0, true, 0,
     1},
    /* long logs: read a chunk at a time, expiry found by galloping */
    {"log 100/s", SL_SLIDING_LOG, 100, 1 * S_US, 0, 0, false, 7, 0},
    {"log 1000/10s count rejected", SL_SLIDING_LOG, 1000, 10 * S_US, 0, CR, false, 60, 0},
    {"log 500/5s start empty", SL_SLIDING_LOG, 500, 5 * S_US, 0, SE | CR, false, 40, 0},
    /* big numbers: products beyond 2^53 (sliding window), scaled buckets */
    {"sliding 10^6/day", SL_SLIDING_WINDOW, 1000000, 86400 * S_US, 0, CR, true, 250000, 0},
    {"sliding 999999/31d", SL_SLIDING_WINDOW, 999999, 31 * 86400 * S_US, 0, 0, true, 90000, 0},
    {"token 7/day burst 10000", SL_TOKEN_BUCKET, 7, 86400 * S_US, 10000, CR, true, 3000, 0},
    {"gcra 7/day burst 10000", SL_GCRA, 7, 86400 * S_US, 10000, SE, true, 3000, 0},
    {"queue 1000/h room 10^6", SL_LEAKY_QUEUE, 1000, 3600 * S_US, 1000000, 0, true, 90000, 0},
};
#define N_PSETS (sizeof psets / sizeof psets[0])

static sl_params params_of(const pset *ps, int64_t origin_us) {
    return (sl_params){.algorithm = ps->a,
                       .rate = {ps->limit, ps->period_us * US},
                       .burst = ps->burst,
                       .flags = ps->flags,
                       .origin = ps->flags & SE ? origin_us * US : 0,
                       .delay_after = ps->delay_after};
}

static sl_table *make_table(const sl_params *p) {
    return table_ok((sl_table_options){.params = *p, .seed = 42});
}

/* The time (us) from which a brand-new key of p is fresh (start empty). */
static int64_t empty_until_us(const sl_params *p) {
    if (!(p->flags & SE)) return 0;
    sl_table *t = make_table(p);
    sl_decision d;
    assert_int_equal(sl_table_check(t, "x", 1, 0, p->origin, &d), 0);
    sl_table_destroy(t);
    return (p->origin + d.reset_after + US - 1) / US;
}

static int64_t max_cost(const sl_params *p) {
    return p->algorithm >= SL_TOKEN_BUCKET ? p->burst : p->rate.limit;
}

/* A random step: mostly within two emission intervals, sometimes none,
 * sometimes beyond a whole period (a key that went idle). */
static int64_t random_step(const pset *ps) {
    int64_t t = ps->period_us / ps->limit;
    switch (below(10)) {
    case 0:
        return 0;
    case 1:
        return below(3 * ps->period_us);
    case 2:
        return below(4) * t; /* exactly on the schedule */
    default:
        return below(2 * t) + 1;
    }
}

static void trace_one(const pset *ps, int steps, uint64_t seed) {
    rng = seed;
    int64_t now = T0_US + below(10 * S_US);
    int64_t origin = now - below(ps->period_us / 2);
    sl_params p = params_of(ps, origin);
    sl_table *t = make_table(&p);
    int64_t eu = empty_until_us(&p);
    int64_t mc = max_cost(&p);
    char keyname[64];
    snprintf(keyname, sizeof keyname, "trace-%llx", (unsigned long long)seed);
    const char *rk = rkey(ps->name, keyname);
    cmd_ok("DEL %s", rk);
    for (int s = 0; s < steps; s++) {
        now += random_step(ps);
        int64_t cost;
        int64_t roll = below(40);
        if (roll == 0)
            cost = mc + 1 + below(3); /* can never pass */
        else if (roll < 4)
            cost = 0;
        else
            cost = 1 + below(ps->maxc ? ps->maxc : mc < 3 ? mc : 3);
        sl_decision dm;
        int rcm = sl_table_check(t, keyname, strlen(keyname), cost, now * US, &dm);
        assert_true(rcm == 0 || rcm == SL_ECOST);
        sl__script_item it = item(&p, rk, cost, 0);
        int64_t t0 = mono_ms();
        long long pttl;
        run_persist(&it, 1, now, &rk, 1, &pttl);
        int64_t elapsed = mono_ms() - t0;

        char ctx[200];
        snprintf(ctx, sizeof ctx, "%s seed %llx step %d (t+%lld us, cost %lld)", ps->name,
                 (unsigned long long)seed, s, (long long)(now - T0_US), (long long)cost);
        same_decision(ctx, &dm, &it.decision, ps->tolerant);

        bool possible = cost > 0 && cost <= mc;
        bool charged = possible && dm.allowed;
        bool maybe = possible && !dm.allowed && (p.flags & CR);
        if (charged || (maybe && pttl >= 0)) {
            int64_t ttl = it.decision.reset_after / US;
            if (eu - now > ttl) ttl = eu - now;
            check_pttl(ctx, pttl, ttl, elapsed);
        } else if (!maybe && pttl >= 0) {
            fail_msg("%s: a decision that charged nothing wrote the key (PTTL %lld)", ctx, pttl);
        }
    }
    sl_table_destroy(t);
}

/* Traces per parameter set (groups: seeds) and the first seed; longer runs
 * with SLUICE_REDIS_TRACES=200, a failure again with SLUICE_REDIS_SEED. */
static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    uint64_t x = strtoull(v, &end, 0);
    return *end ? dflt : x;
}

static void test_traces_single(void **state) {
    (void)state;
    load_script();
    uint64_t n = env_u64("SLUICE_REDIS_TRACES", 4), seed = env_u64("SLUICE_REDIS_SEED", 0);
    for (size_t i = 0; i < N_PSETS; i++)
        for (uint64_t k = 0; k < n; k++)
            trace_one(&psets[i], 150, seed ? seed : ((uint64_t)i << 32) + 0x5100 + k);
}

/* ---- groups: the reference is sl__policy_check_all's logic on sl_tables ------ */

typedef struct pool_entry {
    const pset *ps;
    sl_params p;
    sl_table *t;
    char key[32];
    const char *rk;
} pool_entry;

typedef struct gitem {
    int e; /* pool index */
    int64_t cost;
    unsigned group;
} gitem;

/* sl_table_check_all plus copy_decisions (policy.c). Returns true if passed. */
static bool ref_group(pool_entry *pool, const gitem *g, const size_t *idx, size_t n, int64_t now,
                      sl_decision *out) {
    sl_check c[SL_CHECK_MAX];
    for (size_t k = 0; k < n; k++) {
        pool_entry *e = &pool[g[idx[k]].e];
        c[k] = (sl_check){
            .table = e->t, .key = e->key, .keylen = strlen(e->key), .cost = g[idx[k]].cost};
    }
    size_t r;
    assert_int_equal(sl_table_check_all(c, n, now * US, &r), 0);
    for (size_t k = 0; k < n; k++) {
        out[idx[k]] = c[k].decision;
        if (r < n && c[k].decision.allowed) out[idx[k]].remaining += g[idx[k]].cost;
    }
    return r == n;
}

static void ref_policy(pool_entry *pool, const gitem *g, size_t n, int64_t now, sl_decision *out,
                       bool refused_group[2]) {
    size_t idx[2][SL_CHECK_MAX], cnt[2] = {0, 0};
    for (size_t i = 0; i < n; i++) idx[g[i].group][cnt[g[i].group]++] = i;
    refused_group[0] = refused_group[1] = false;
    if (ref_group(pool, g, idx[0], cnt[0], now, out)) {
        refused_group[1] = !ref_group(pool, g, idx[1], cnt[1], now, out);
        return;
    }
    refused_group[0] = true;
    for (size_t k = 0; k < cnt[1]; k++) {
        pool_entry *e = &pool[g[idx[1][k]].e];
        assert_int_equal(sl_table_check(e->t, e->key, strlen(e->key), 0, now * US, &out[idx[1][k]]),
                         0);
    }
}

/* Random layered requests over a pool of limits (two keys each), compared
 * with the reference. Items counting rejections in a refused group report
 * the charge they got (see redis_script.h); the reference (check_all) says
 * what they had before it, so for those only `allowed` is compared, and the
 * charge itself through a look (cost 0) at the memory table afterwards. */
static void test_traces_groups(void **state) {
    (void)state;
    load_script();
    static const int use[] = {0, 3, 5, 8, 10, 13, 16, 19, 21, 24, 27, 29};
    enum { NP = sizeof use / sizeof use[0] * 2 };
    uint64_t seeds = 3 * env_u64("SLUICE_REDIS_TRACES", 4);
    uint64_t first = env_u64("SLUICE_REDIS_SEED", 1);
    for (uint64_t seed = first; seed < first + seeds; seed++) {
        rng = seed * 7919;
        int64_t now = T0_US + below(S_US);
        pool_entry pool[NP];
        for (int i = 0; i < NP; i++) {
            pool_entry *e = &pool[i];
            e->ps = &psets[use[i / 2]];
            e->p = params_of(e->ps, now - 1000);
            e->t = make_table(&e->p);
            snprintf(e->key, sizeof e->key, "g%llu-%d", (unsigned long long)seed, i % 2);
            e->rk = rkey(e->ps->name, e->key);
            cmd_ok("DEL %s", e->rk);
        }
        const char *keys[NP];
        for (int i = 0; i < NP; i++) keys[i] = pool[i].rk;
        for (int step = 0; step < 120; step++) {
            now += below(150 * MS_US) + (below(8) == 0 ? 2 * S_US : 0);
            gitem g[6];
            size_t n = 1 + (size_t)below(5);
            int base = (int)below(NP);
            for (size_t i = 0; i < n; i++) {
                /* mostly nearby entries, so that the same key comes twice often */
                g[i].e = below(3) == 0 ? (int)below(NP) : (base + (int)below(3)) % NP;
                int64_t mc = max_cost(&pool[g[i].e].p);
                g[i].cost = below(6) == 0 ? 0 : 1 + below(mc < 3 ? mc : 3);
                g[i].group = below(4) == 0;
            }
            sl_decision ref[6];
            bool refused[2];
            ref_policy(pool, g, n, now, ref, refused);

            sl__script_item it[6];
            for (size_t i = 0; i < n; i++)
                it[i] = item(&pool[g[i].e].p, pool[g[i].e].rk, g[i].cost, g[i].group);
            long long pttl[NP];
            run_persist(it, n, now, keys, NP, pttl);

            for (size_t i = 0; i < n; i++) {
                pool_entry *e = &pool[g[i].e];
                char ctx[200];
                snprintf(ctx, sizeof ctx,
                         "groups seed %llu step %d item %zu/%zu (%s, cost %lld, "
                         "group %u)",
                         (unsigned long long)seed, step, i, n, e->ps->name, (long long)g[i].cost,
                         g[i].group);
                size_t uses = 0;
                for (size_t j = 0; j < n; j++) uses += g[j].e == g[i].e;
                if (refused[g[i].group] && (e->p.flags & CR)) {
                    if (uses == 1) {
                        assert_int_equal(ref[i].allowed, it[i].decision.allowed);
                        sl_decision look;
                        assert_int_equal(
                            sl_table_check(e->t, e->key, strlen(e->key), 0, now * US, &look), 0);
                        assert_i64(look.remaining, it[i].decision.remaining);
                        same_duration(ctx, "reset_after", look.reset_after,
                                      it[i].decision.reset_after, e->ps->tolerant);
                    }
                    continue;
                }
                same_decision(ctx, &ref[i], &it[i].decision, e->ps->tolerant);
            }
        }
        for (int i = 0; i < NP; i++) sl_table_destroy(pool[i].t);
    }
}

/* Several requests in one call (group 2r + g, as the store sends a loop
 * iteration's decisions): the same decisions as one call per request at the
 * same time, in order. Two copies of every key (a: one call per request,
 * b: one call for all) so that both see the same history. */
static void test_batched_requests(void **state) {
    (void)state;
    load_script();
    static const int use[] = {0, 3, 8, 13, 19, 24};
    enum { NP = sizeof use / sizeof use[0] };
    uint64_t seeds = env_u64("SLUICE_REDIS_TRACES", 4);
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        rng = seed * 104729;
        int64_t now = T0_US + below(S_US);
        sl_params p[NP];
        const char *ka[NP], *kb[NP];
        for (int i = 0; i < NP; i++) {
            p[i] = params_of(&psets[use[i]], now - 1000);
            char name[32];
            snprintf(name, sizeof name, "ba%llu-%d", (unsigned long long)seed, i);
            ka[i] = rkey(psets[use[i]].name, name);
            snprintf(name, sizeof name, "bb%llu-%d", (unsigned long long)seed, i);
            kb[i] = rkey(psets[use[i]].name, name);
            cmd_ok("DEL %s %s", ka[i], kb[i]);
        }
        for (int step = 0; step < 60; step++) {
            now += below(200 * MS_US);
            size_t nreq = 1 + (size_t)below(6), total = 0;
            sl__script_item one[24], all[24];
            size_t start[7];
            for (size_t r = 0; r < nreq; r++) {
                start[r] = total;
                size_t n = 1 + (size_t)below(3);
                for (size_t j = 0; j < n; j++) {
                    int e = (int)below(NP);
                    int64_t mc = max_cost(&p[e]);
                    int64_t cost = below(5) == 0 ? 0 : 1 + below(mc < 2 ? mc : 2);
                    unsigned g = below(4) == 0;
                    one[total] = item(&p[e], ka[e], cost, g);
                    all[total] = item(&p[e], kb[e], cost, g + 2 * (unsigned)r);
                    total++;
                }
            }
            start[nreq] = total;
            for (size_t r = 0; r < nreq; r++) run_sim(one + start[r], start[r + 1] - start[r], now);
            run_sim(all, total, now);
            for (size_t i = 0; i < total; i++) {
                char ctx[120];
                snprintf(ctx, sizeof ctx, "batched seed %llu step %d item %zu of %zu",
                         (unsigned long long)seed, step, i, total);
                same_decision(ctx, &one[i].decision, &all[i].decision, false);
            }
        }
    }
}

/* The cases of the brief, by hand. */
static void test_groups_by_hand(void **state) {
    (void)state;
    load_script();
    int64_t now = T0_US;
    sl_params tb = {.algorithm = SL_TOKEN_BUCKET, .rate = {5, SL_NS_PER_SEC}, .burst = 5};
    sl_params one = {.algorithm = SL_FIXED_WINDOW, .rate = {1, 10 * SL_NS_PER_SEC}};
    sl_params two_cr = {
        .algorithm = SL_FIXED_WINDOW, .rate = {2, 10 * SL_NS_PER_SEC}, .flags = SL_COUNT_REJECTED};
    const char *a = rkey("hand-tb", "k"), *b = rkey("hand-one", "k"), *c = rkey("hand-c", "k"),
               *d = rkey("hand-cr", "k");
    cmd_ok("DEL %s %s %s %s", a, b, c, d);

    /* 1. a pair that passes: both charged */
    sl__script_item g[3] = {item(&tb, a, 1, 0), item(&one, b, 1, 0)};
    run_sim(g, 2, now);
    assert_true(g[0].decision.allowed && g[1].decision.allowed);
    assert_i64(g[0].decision.remaining, 4);
    assert_i64(g[1].decision.remaining, 0);

    /* 2. the second refuses: nothing charged; the first says what it has */
    g[0] = item(&tb, a, 2, 0);
    g[1] = item(&one, b, 1, 0);
    run_sim(g, 2, now);
    assert_true(g[0].decision.allowed);
    assert_false(g[1].decision.allowed);
    assert_i64(g[0].decision.remaining, 4);
    assert_i64(g[1].decision.retry_after, 10 * SL_NS_PER_SEC);
    assert_i64(remaining_of(&tb, a, now), 4);

    /* 3. shadow group refused after the enforced one passed: the enforced
     * limit is charged, the shadow one is not */
    sl_params shadow = {.algorithm = SL_FIXED_WINDOW, .rate = {3, 10 * SL_NS_PER_SEC}};
    g[0] = item(&tb, a, 1, 0);
    g[1] = item(&shadow, c, 2, 1);
    g[2] = item(&one, b, 0, 1);
    run_sim(g, 3, now);
    assert_true(g[0].decision.allowed && g[1].decision.allowed);
    assert_i64(g[0].decision.remaining, 3);
    assert_i64(g[1].decision.remaining, 1);
    g[1] = item(&shadow, c, 2, 1);
    g[2] = item(&one, b, 1, 1); /* refuses: the shadow group is not charged */
    run_sim(g, 3, now);
    assert_true(g[0].decision.allowed);
    assert_i64(g[0].decision.remaining, 2);
    assert_false(g[1].decision.allowed); /* 2 + 2 > 3 */
    assert_false(g[2].decision.allowed);
    assert_i64(remaining_of(&shadow, c, now), 1);

    /* 4. the enforced group refuses: shadow limits are only looked at */
    g[0] = item(&one, b, 1, 0);
    g[1] = item(&tb, a, 2, 1);
    run_sim(g, 2, now);
    assert_false(g[0].decision.allowed);
    assert_true(g[1].decision.allowed);
    assert_i64(g[1].decision.remaining, 2);
    assert_i64(remaining_of(&tb, a, now), 2);

    /* 5. the same key twice: costs add up; refused, nothing charged */
    g[0] = item(&tb, a, 1, 0);
    g[1] = item(&tb, a, 1, 0);
    run_sim(g, 2, now);
    assert_true(g[0].decision.allowed && g[1].decision.allowed);
    assert_i64(g[1].decision.remaining, 0);
    g[0] = item(&tb, a, 0, 0);
    run_sim(g, 1, now + 200 * MS_US);
    assert_i64(g[0].decision.remaining, 1);
    g[0] = item(&tb, a, 1, 0);
    g[1] = item(&tb, a, 1, 0);
    run_sim(g, 2, now + 200 * MS_US);
    assert_true(g[0].decision.allowed);
    assert_false(g[1].decision.allowed);
    assert_i64(g[1].decision.retry_after, 200 * SL_NS_PER_MS);
    assert_i64(g[0].decision.remaining, 1);

    /* 6. a cost that can never pass: nothing charged at all, retry -1 */
    g[0] = item(&two_cr, d, 1, 0);
    g[1] = item(&tb, a, 6, 0);
    run_sim(g, 2, now + 200 * MS_US);
    assert_true(g[0].decision.allowed);
    assert_false(g[1].decision.allowed);
    assert_i64(g[1].decision.retry_after, -1);
    assert_i64(g[1].decision.limit, 5);
    assert_i64(remaining_of(&two_cr, d, now + 200 * MS_US), 2);

    /* 7. count rejected in a refused group: charged, and says so */
    g[0] = item(&two_cr, d, 1, 0);
    g[1] = item(&one, b, 1, 0);
    run_sim(g, 2, now + 200 * MS_US);
    assert_true(g[0].decision.allowed);
    assert_i64(g[0].decision.remaining, 1);
    assert_false(g[1].decision.allowed);
    assert_i64(remaining_of(&two_cr, d, now + 200 * MS_US), 1);
}

/* ---- EVALSHA and NOSCRIPT ---------------------------------------------------------- */

static void test_evalsha(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_GCRA, .rate = {5, SL_NS_PER_SEC}, .burst = 5};
    const char *k = rkey("sha", "k");
    sl__script_item it = item(&p, k, 1, 0);
    cmd_ok("SCRIPT FLUSH");
    redisReply *r = eval_raw(&it, 1, T0_US, false);
    char err[256];
    assert_int_equal(sl__redis_script_parse(r, &it, 1, err, sizeof err), SL_EPARSE);
    assert_true(strncmp(err, "NOSCRIPT", 8) == 0);
    assert_false(it.decided);
    freeReplyObject(r);

    const char *src = sl__redis_script_source();
    r = cmd("SCRIPT LOAD %b", src, strlen(src));
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, sl__redis_script_sha());
    assert_int_equal(strlen(sl__redis_script_sha()), 40);
    freeReplyObject(r);

    r = eval_raw(&it, 1, T0_US, false);
    assert_int_equal(sl__redis_script_parse(r, &it, 1, err, sizeof err), 0);
    freeReplyObject(r);
    assert_true(it.decided && it.decision.allowed);
    assert_i64(it.decision.remaining, 4);

    /* EVAL with the source gives the same script */
    r = eval_raw(&it, 1, T0_US, true);
    assert_int_equal(sl__redis_script_parse(r, &it, 1, err, sizeof err), 0);
    freeReplyObject(r);
    assert_i64(it.decision.remaining, 3);
}

/* ---- bad arguments: an error reply, nothing changed ------------------------------ */

static void test_bad_arguments(void **state) {
    (void)state;
    char err[256];
    /* burst * period / gcd beyond 2^52: exact in the C core, not in the script */
    sl_params big = {.algorithm = SL_TOKEN_BUCKET, .rate = {1000, 7000}, .burst = INT64_C(1) << 50};
    assert_int_equal(sl_params_validate(&big), 0);
    assert_int_equal(sl__redis_script_check(&big, false), SL_EOVERFLOW);
    const char *k = rkey("bad", "k");
    sl__script_item it = item(&big, k, 1, 0);
    redisReply *r = eval_raw(&it, 1, T0_US, true);
    assert_int_equal(sl__redis_script_parse(r, &it, 1, err, sizeof err), SL_EPARSE);
    assert_non_null(strstr(err, "ERR sluice: parameter set 1: burst"));
    freeReplyObject(r);
    r = cmd("EXISTS %s", k);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);

    /* by hand: a bad algorithm, a wrong count of arguments */
    r = cmd("EVAL %s 1 %s 1 1 9 5 1000000 5 0 0 t 1 1 0", sl__redis_script_source(), k);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "parameter set 1: bad algorithm"));
    freeReplyObject(r);
    r = cmd("EVAL %s 1 %s 1 1 4 5 1000000 5 0 0 t 1 1", sl__redis_script_source(), k);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "expected 2 + 7 x m + 3 x 1 arguments"));
    freeReplyObject(r);
    r = cmd("EVAL %s 1 %s 1 1 4 5 1000000 5 0 0 t 2 1 0", sl__redis_script_source(), k);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "item 1: bad parameter set"));
    freeReplyObject(r);
    r = cmd("EVAL %s 1 %s 1 1 4 5 1000000 5 0 0 0123456789abcdefX 1 1 0", sl__redis_script_source(),
            k);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "parameter set 1: bad flags or tag"));
    freeReplyObject(r);

    sl_params ok = {
        .algorithm = SL_TOKEN_BUCKET, .rate = {7, 86400 * SL_NS_PER_SEC}, .burst = 10000};
    assert_int_equal(sl__redis_script_check(&ok, false), 0);
    sl_params sub_us = {.algorithm = SL_FIXED_WINDOW, .rate = {1, 1500}};
    assert_int_equal(sl__redis_script_check(&sub_us, false), SL_EINVAL);
    sl_params cal = {.algorithm = SL_GCRA, .rate = {1, SL_NS_PER_SEC}, .burst = 1};
    assert_int_equal(sl__redis_script_check(&cal, true), SL_EINVAL);
    sl_params huge = {.algorithm = SL_FIXED_WINDOW, .rate = {INT64_C(1) << 60, SL_NS_PER_SEC}};
    assert_int_equal(sl__redis_script_check(&huge, false), SL_EOVERFLOW);
}

/* ---- state the script did not write, or wrote under other parameters ---- */

static void test_foreign_state(void **state) {
    (void)state;
    load_script();
    sl_params tb = {.algorithm = SL_TOKEN_BUCKET, .rate = {5, SL_NS_PER_SEC}, .burst = 5};
    sl_params tb10 = tb;
    tb10.burst = 10;
    sl_params log = {.algorithm = SL_SLIDING_LOG, .rate = {5, SL_NS_PER_SEC}};
    const char *k = rkey("foreign", "k");
    sl__script_item it;

    cmd_ok("SET %s garbage", k); /* a string that is no state: fresh */
    it = item(&tb, k, 2, 0);
    run_sim(&it, 1, T0_US);
    assert_true(it.decision.allowed);
    assert_i64(it.decision.remaining, 3);
    redisReply *r = cmd("GET %s", k);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    /* "<tag>|<tokens*p>:<last_us>" in hex: 600000 and 1700000000000000 us */
    assert_string_equal(r->str, "9a91dc78|927c0:60a24181e4000");
    freeReplyObject(r);

    it = item(&tb10, k, 2, 0); /* the limit changed: a fresh key, as a reload in memory */
    run_sim(&it, 1, T0_US);
    assert_i64(it.decision.remaining, 8);

    it = item(&log, k, 2, 0); /* a string where a log should be: fresh, replaced */
    run_sim(&it, 1, T0_US);
    assert_true(it.decision.allowed);
    assert_i64(it.decision.remaining, 3);
    r = cmd("LRANGE %s 0 -1", k);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, "1700000000000000");
    freeReplyObject(r);

    it = item(&tb, k, 1, 0); /* a list where a string should be: fresh, replaced */
    run_sim(&it, 1, T0_US);
    assert_i64(it.decision.remaining, 4);
    r = cmd("TYPE %s", k);
    assert_string_equal(r->str, "string");
    freeReplyObject(r);

    /* a gcra whose emission interval is a whole us (n = 1) keeps one
     * integer, tat and the tag mod 1000: Redis stores it as a number */
    sl_params g5 = {.algorithm = SL_GCRA, .rate = {5, SL_NS_PER_SEC}, .burst = 5};
    sl_params g10 = g5;
    g10.burst = 10;
    cmd_ok("DEL %s", k);
    it = item(&g5, k, 1, 0);
    run_sim(&it, 1, T0_US);
    assert_i64(it.decision.remaining, 4);
    r = cmd("GET %s", k);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    /* tat = T0 + 200000 us; tag b0c1c2cd = 2965488333: 333 */
    assert_string_equal(r->str, "1700000000200000333");
    freeReplyObject(r);
    r = cmd("OBJECT ENCODING %s", k);
    assert_string_equal(r->str, "int");
    freeReplyObject(r);
    it = item(&g5, k, 1, 0);
    run_sim(&it, 1, T0_US);
    assert_i64(it.decision.remaining, 3); /* read back */
    it = item(&g10, k, 1, 0);             /* tag 70d32a02: 042, another policy: fresh */
    run_sim(&it, 1, T0_US);
    assert_i64(it.decision.remaining, 9);
    cmd_ok("SET %s 12", k); /* too short for tat and tag: fresh */
    it = item(&g5, k, 1, 0);
    run_sim(&it, 1, T0_US);
    assert_i64(it.decision.remaining, 4);

    /* the same key with two different limits in one call is refused */
    sl__script_item two[2] = {item(&tb, k, 1, 0), item(&tb10, k, 1, 0)};
    r = eval_raw(two, 2, T0_US, true);
    char err[128];
    assert_int_equal(sl__redis_script_parse(r, two, 2, err, sizeof err), SL_EPARSE);
    assert_non_null(strstr(err, "two different limits"));
    freeReplyObject(r);
    cmd_ok("DEL %s", k);
}

/* ---- TTLs in real time --------------------------------------------------------- */

static long long pttl_of(const char *k) {
    redisReply *r = cmd("PTTL %s", k);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void test_ttl_real_time(void **state) {
    (void)state;
    /* now = 0: Redis TIME. Each key's TTL is > 0 and <= its reset time. */
    static const sl_params ps[] = {
        {.algorithm = SL_FIXED_WINDOW, .rate = {3, 60 * SL_NS_PER_SEC}},
        {.algorithm = SL_SLIDING_LOG, .rate = {3, 60 * SL_NS_PER_SEC}},
        {.algorithm = SL_SLIDING_WINDOW, .rate = {3, 60 * SL_NS_PER_SEC}},
        {.algorithm = SL_TOKEN_BUCKET, .rate = {1, 60 * SL_NS_PER_SEC}, .burst = 3},
        {.algorithm = SL_GCRA, .rate = {1, 60 * SL_NS_PER_SEC}, .burst = 3},
        {.algorithm = SL_LEAKY_QUEUE, .rate = {1, 60 * SL_NS_PER_SEC}, .burst = 3},
    };
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "ttl-%zu", i);
        const char *k = rkey(name, "k");
        cmd_ok("DEL %s", k);
        sl__script_item it = item(&ps[i], k, 2, 0);
        run(&it, 1, 0);
        assert_true(it.decision.allowed);
        long long t = pttl_of(k);
        assert_true(t > 0);
        assert_true(t <= (it.decision.reset_after + SL_NS_PER_MS - 1) / SL_NS_PER_MS);
        if (ps[i].algorithm != SL_FIXED_WINDOW) assert_true(t > 50 * 1000); /* >= 60 s away */
        /* a look and a refusal write nothing */
        cmd_ok("PERSIST %s", k);
        it = item(&ps[i], k, 0, 0);
        run(&it, 1, 0);
        it = item(&ps[i], k, 3, 0);
        run(&it, 1, 0);
        assert_false(it.decision.allowed);
        assert_true(pttl_of(k) == -1);
    }

    /* idle keys vanish: a 1000/s bucket of 2 is fresh again within 2 ms */
    sl_params fast = {.algorithm = SL_TOKEN_BUCKET, .rate = {1000, SL_NS_PER_SEC}, .burst = 2};
    sl_params fastlog = {.algorithm = SL_SLIDING_LOG, .rate = {2, 5 * SL_NS_PER_MS}};
    const char *k1 = rkey("vanish-tb", "k"), *k2 = rkey("vanish-log", "k");
    sl__script_item two[2] = {item(&fast, k1, 2, 0), item(&fastlog, k2, 2, 0)};
    run(two, 2, 0);
    assert_true(two[0].decision.allowed && two[1].decision.allowed);
    long long t1 = pttl_of(k1), t2 = pttl_of(k2);
    assert_true(t1 != -1 && t1 <= 2); /* -2: already gone (a slow machine) */
    assert_true(t2 != -1 && t2 <= 5);
    usleep(30000);
    redisReply *r = cmd("EXISTS %s %s", k1, k2);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);

    /* start empty, counting rejections, at the origin: the key is already
     * at its limit, so the charge changes nothing and nothing is written */
    r = cmd("TIME");
    int64_t tnow = atoll(r->element[0]->str) * S_US + atoll(r->element[1]->str);
    freeReplyObject(r);
    sl_params se = {.algorithm = SL_FIXED_WINDOW,
                    .rate = {3, 3600 * SL_NS_PER_SEC},
                    .flags = SL_START_EMPTY | SL_COUNT_REJECTED,
                    .origin = tnow * US};
    const char *k3 = rkey("ttl-se", "k");
    cmd_ok("DEL %s", k3);
    sl__script_item it = item(&se, k3, 1, 0);
    run(&it, 1, 0);
    assert_false(it.decision.allowed);
    long long t3 = pttl_of(k3);
    assert_true(t3 == -2);
}

/* ---- calendar months ----------------------------------------------------------------- */

static void test_calendar_month(void **state) {
    (void)state;
    sl_params q = {.algorithm = SL_FIXED_WINDOW, .rate = {3, 31 * 86400 * SL_NS_PER_SEC}};
    const char *k = rkey("month", "k");
    cmd_ok("DEL %s", k);
    /* 2024-02-29 23:59:59.5 UTC, a leap day: the month ends at 2024-03-01 */
    int64_t mar1 = INT64_C(1709251200) * S_US;
    int64_t now = mar1 - 500 * MS_US;
    sl__script_item it = item(&q, k, 1, 0);
    it.calendar_month = true;
    for (int i = 0; i < 3; i++) {
        run(&it, 1, now);
        assert_true(it.decision.allowed);
        assert_i64(it.decision.remaining, 2 - i);
        assert_i64(it.decision.reset_after, 500 * SL_NS_PER_MS);
    }
    long long t = pttl_of(k);
    assert_true(t > 0 && t <= 500);
    cmd_ok("PERSIST %s", k);
    run(&it, 1, now + 499999);
    assert_false(it.decision.allowed);
    assert_i64(it.decision.retry_after, 1 * US);
    assert_i64(it.decision.remaining, 0);
    run(&it, 1, mar1);
    assert_true(it.decision.allowed);
    assert_i64(it.decision.remaining, 2);
    assert_i64(it.decision.reset_after, 31 * 86400 * SL_NS_PER_SEC); /* March: 31 days */
    t = pttl_of(k);
    assert_true(t > 31LL * 86400 * 1000 - 5000 && t <= 31LL * 86400 * 1000);
    cmd_ok("DEL %s", k);

    /* The month of random times from 1970 to 2100, against the C calendar:
     * a first request's reset is the month's end. */
    rng = 77;
    for (int i = 0; i < 400; i++) {
        int64_t tt = i < 4 ? (int64_t[]){0, 1, 31 * 86400 * S_US - 1, 31 * 86400 * S_US}[i]
                           : below(INT64_C(4102444800) * S_US);
        if (i % 7 == 0) { /* the last and first us of a month */
            int64_t idx, start, len;
            sl__calendar_month(tt * US, &idx, &start, &len);
            tt = (start + len) / US - (i % 2);
        }
        run(&it, 1, tt ? tt : 1);
        int64_t at = tt ? tt : 1;
        int64_t idx, start, len;
        sl__calendar_month(at * US, &idx, &start, &len);
        assert_true(it.decision.allowed);
        if (it.decision.reset_after != start + len - at * US)
            fail_msg("month of %lld us: reset %lld, want %lld", (long long)at,
                     (long long)it.decision.reset_after, (long long)(start + len - at * US));
        cmd_ok("DEL %s", k);
    }
}

/* ---- the formatter and the parser, without Redis -------------------------------- */

/* The tag of the token bucket 5 per 2 us, burst 7, calendar month: FNV-1a
 * of (4, 5, 2, 7, 1) as 8-byte little-endian words (redis_script.c). */
#define TAG_TB "a8431f40"

static void test_format(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_TOKEN_BUCKET,
                   .rate = {5, 1500}, /* 1.5 us: rounded up to 2 */
                   .burst = 7,
                   .flags = SL_START_EMPTY,
                   .origin = 2001};
    sl__script_item it = item(&p, "k{x}:p", 3, 1);
    it.calendar_month = true;
    sl__buf b;
    sl__buf_init(&b);
    sl__redis_script_format(&b, false, &it, 1, 12345);
    char want[1024];
    snprintf(want, sizeof want,
             "*16\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$6\r\nk{x}:p\r\n$5\r\n12345\r\n"
             "$1\r\n1\r\n" /* one parameter set: */
             "$1\r\n4\r\n$1\r\n5\r\n$1\r\n2\r\n$1\r\n7\r\n$3\r\n257\r\n$1\r\n3\r\n"
             "$%zu\r\n%s\r\n"                     /* its tag */
             "$1\r\n1\r\n$1\r\n3\r\n$1\r\n1\r\n", /* the item: set 1, cost 3, group 1 */
             sl__redis_script_sha(), strlen(TAG_TB), TAG_TB);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);

    /* items with the same parameters share a parameter set (flags and
     * origin included); the tag ignores start-empty, count-rejected and the
     * origin (they do not change what a state means) */
    sl_params q = p;
    q.flags = 0;
    q.origin = 0;
    sl__script_item three[3] = {item(&p, "a", 1, 0), item(&q, "b", 2, 2), item(&p, "c", 1, 4)};
    for (size_t i = 0; i < 3; i++) three[i].calendar_month = true;
    sl__buf_reset(&b);
    sl__redis_script_format(&b, false, three, 3, 0);
    redisReader *rd = redisReaderCreate();
    redisReaderFeed(rd, b.data, b.len);
    void *v = NULL;
    assert_int_equal(redisReaderGetReply(rd, &v), REDIS_OK);
    redisReaderFree(rd);
    redisReply *c = v;
    /* EVALSHA sha 3 a b c now 2 (7 x 2) (3 x 3) */
    assert_int_equal(c->elements, 3 + 3 + 2 + 14 + 9);
    assert_string_equal(c->element[7]->str, "2");
    assert_string_equal(c->element[14]->str, c->element[21]->str); /* one tag */
    assert_string_equal(c->element[12]->str, "257");
    assert_string_equal(c->element[19]->str, "256");
    const char *sets[3] = {"1", "2", "1"};
    for (size_t i = 0; i < 3; i++) assert_string_equal(c->element[22 + 3 * i]->str, sets[i]);
    freeReplyObject(c);
    sl__buf_reset(&b);
    sl__redis_key(&b, "sl:", "api", "a\0b", 3);
    assert_int_equal(b.len, 12);
    assert_memory_equal(b.data, "sl:{a\0b}:api", 12);
    sl__buf_free(&b);
}

static redisReply *read_reply(const char *resp) {
    redisReader *rd = redisReaderCreate();
    redisReaderFeed(rd, resp, strlen(resp));
    void *r = NULL;
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    redisReaderFree(rd);
    assert_non_null(r);
    return r;
}

static void test_parse(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_GCRA, .rate = {1, SL_NS_PER_SEC}, .burst = 1};
    sl__script_item it[2] = {item(&p, "a", 1, 0), item(&p, "b", 1, 0)};
    char err[64];
    redisReply *r = read_reply("*12\r\n:1\r\n:5\r\n:4\r\n:0\r\n:200000\r\n:7\r\n"
                               ":0\r\n:5\r\n:0\r\n:-1\r\n:0\r\n:0\r\n");
    assert_int_equal(sl__redis_script_parse(r, it, 2, err, sizeof err), 0);
    assert_true(it[0].decided && it[0].decision.allowed);
    assert_i64(it[0].decision.reset_after, 200000 * US);
    assert_i64(it[0].decision.delay, 7 * US);
    assert_i64(it[1].decision.retry_after, -1);
    assert_int_equal(sl__redis_script_parse(r, it, 1, err, sizeof err), SL_EPARSE); /* count */
    freeReplyObject(r);

    static const char *const bad[] = {
        "-ERR boom\r\n",
        "$3\r\nabc\r\n", /* a string, not the 48 bytes of a packed item */
        "*1\r\n:1\r\n",
        "*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:0\r\n",
        "*1\r\n*6\r\n:1\r\n:5\r\n:4\r\n:0\r\n:0\r\n:0\r\n", /* the old nested shape */
        "*6\r\n:2\r\n:5\r\n:4\r\n:0\r\n:0\r\n:0\r\n",       /* allowed 2 */
        "*6\r\n:1\r\n:5\r\n:-1\r\n:0\r\n:0\r\n:0\r\n",      /* remaining < 0 */
        "*6\r\n:1\r\n:5\r\n:4\r\n:-1\r\n:0\r\n:0\r\n",      /* never, but allowed */
        "*6\r\n:0\r\n:5\r\n:4\r\n:-2\r\n:0\r\n:0\r\n",
        "*6\r\n:0\r\n:5\r\n:4\r\n:9223372036854776\r\n:0\r\n:0\r\n", /* overflows ns */
        "*6\r\n:0\r\n:5\r\n:4\r\n:1\r\n$1\r\n0\r\n:0\r\n",
        "*6\r\n:0\r\n:0\r\n:0\r\n:1\r\n:0\r\n:0\r\n", /* limit 0 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = read_reply(bad[i]);
        if (sl__redis_script_parse(r, it, 1, err, sizeof err) != SL_EPARSE)
            fail_msg("accepted %s", bad[i]);
        assert_false(it[0].decided);
        if (i == 0) assert_string_equal(err, "ERR boom");
        freeReplyObject(r);
    }
    assert_int_equal(sl__redis_script_parse(NULL, it, 1, err, 4), SL_EPARSE);
    assert_int_equal(strlen(err), 3); /* truncated */

    /* the module's packed reply: 6 x int64 little-endian per item, the same checks */
    char wire[64];
    int64_t v[6] = {1, 5, 4, 0, 200000, 7};
    memcpy(wire, "$48\r\n", 5);
    for (int f = 0; f < 6; f++)
        for (int k = 0; k < 8; k++) wire[5 + 8 * f + k] = (char)((uint64_t)v[f] >> (8 * k));
    memcpy(wire + 53, "\r\n", 2);
    redisReader *rd = redisReaderCreate();
    redisReaderFeed(rd, wire, 55);
    void *pr = NULL;
    assert_int_equal(redisReaderGetReply(rd, &pr), REDIS_OK);
    redisReaderFree(rd);
    assert_int_equal(sl__redis_script_parse(pr, it, 1, err, sizeof err), 0);
    assert_true(it[0].decided && it[0].decision.allowed);
    assert_i64(it[0].decision.remaining, 4);
    assert_i64(it[0].decision.reset_after, 200000 * US);
    assert_i64(it[0].decision.delay, 7 * US);
    assert_int_equal(sl__redis_script_parse(pr, it, 2, err, sizeof err), SL_EPARSE); /* length */
    assert_string_equal(err, "module reply has the wrong length");
    freeReplyObject(pr);
    wire[5] = 2; /* allowed 2 */
    rd = redisReaderCreate();
    redisReaderFeed(rd, wire, 55);
    assert_int_equal(redisReaderGetReply(rd, &pr), REDIS_OK);
    redisReaderFree(rd);
    assert_int_equal(sl__redis_script_parse(pr, it, 1, err, sizeof err), SL_EPARSE);
    assert_false(it[0].decided);
    freeReplyObject(pr);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),           cmocka_unit_test(test_parse),
        cmocka_unit_test(test_evalsha),          cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_traces_single),    cmocka_unit_test(test_traces_groups),
        cmocka_unit_test(test_groups_by_hand),   cmocka_unit_test(test_foreign_state),
        cmocka_unit_test(test_batched_requests), cmocka_unit_test(test_ttl_real_time),
        cmocka_unit_test(test_calendar_month),
    };
    return cmocka_run_group_tests(tests, redis_fixture_start, redis_fixture_stop);
}
