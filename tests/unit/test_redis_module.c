/* test_redis_module.c: sluice-redis.so's SLUICE.DECIDE against the decision
 * script it replaces, on one real redis-server (redis_fixture.h, with the
 * module loaded and frozen_clock preloaded: Redis's wall clock stands
 * still, so TTLs compare exactly and nothing expires on its own):
 *
 * - mixed: random call sequences (every algorithm, start empty, count
 *   rejected, calendar months, any rate, a leaky queue's delay_after, a
 *   token bucket's step refill, the same key twice, shadow groups,
 *   several requests per call, costs beyond the limit) decided four ways
 *   under four key prefixes: by the script alone, by the module alone
 *   (packed items and reply, what sluiced sends), alternately by script
 *   and module on the same keys, and by the module with the script's
 *   arguments per item (an older sluiced). Every reply is
 *   the same, and at the end every key holds the same value (string or
 *   list) with the same TTL: a fleet in a rollout, some sluiced on the
 *   script and others on the module, stays exact.
 * - packed: the packed items and reply (what sluiced sends) answer what the
 *   arguments per item answer; a bad packed item is an error that writes
 *   nothing.
 * - errors: each bad argument gets the script's error text (the part
 *   before the " script: ..." Redis appends to a script's), and nothing
 *   is changed; the module's own bound (512 items).
 * - keys: COMMAND GETKEYS names positions 2..n+1 (the getkeys-api that
 *   Cluster routes by), COMMAND INFO shows write and denyoom.
 * - log_runs: decide_us.c linked in alone (no Redis): a sliding log's runs
 *   grow before a charge that drops them all (once a heap overflow).
 *
 * MOD_SEED / MOD_COUNT pick the sequences (default 1 / 400). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis_module/decide_us.h"
#include "sluice/sluice.h"
#include "store/redis_script.h"
#include "util/buf.h"

#include "redis_fixture.h"

#define NPS      6  /* parameter sets of a sequence */
#define NK       3  /* keys per parameter set */
#define NCALLS   40 /* calls per sequence */
#define MAXITEMS 6

typedef struct gset {
    sl_params p;
    bool cal, any;
} gset;

/* A parameter set that the script decides exactly (sl__redis_script_check). */
static gset gen_set(void) {
    gset g;
    for (;;) {
        memset(&g, 0, sizeof g);
        g.p.algorithm = (sl_algorithm)(1 + below(6));
        g.p.rate.limit = 1 + below(below(4) == 0 ? 1000 : 8);
        int64_t us = 1 + below(below(3) == 0 ? 100000000 : 5000);
        if (below(4) == 0) us = g.p.rate.limit * (1 + below(1000)); /* a whole-us interval */
        g.p.rate.period = us * 1000;
        g.p.burst = 1 + below(10);
        if (below(4) == 0) g.p.flags |= SL_START_EMPTY;
        if (below(3) == 0) g.p.flags |= SL_COUNT_REJECTED;
        g.p.origin = (INT64_C(1700000000000000) - below(INT64_C(100000000))) * 1000;
        if (g.p.algorithm == SL_FIXED_WINDOW && below(5) == 0) g.cal = true;
        if (g.p.algorithm == SL_GCRA && below(4) == 0) {
            g.any = true;
            g.p.flags = 0;
        }
        if (g.p.algorithm == SL_LEAKY_QUEUE && below(2) == 0) g.p.delay_after = below(g.p.burst);
        if (g.p.algorithm == SL_TOKEN_BUCKET && below(2) == 0) g.p.flags |= SL_STEP_REFILL;
        if (sl__redis_script_check(&g.p, g.cal) == 0) return g;
    }
}

typedef struct gcall {
    int64_t now_us;
    size_t n;
    int set[MAXITEMS], key[MAXITEMS];
    int64_t cost[MAXITEMS];
    unsigned group[MAXITEMS];
} gcall;

typedef struct gseq {
    gset sets[NPS];
    gcall calls[NCALLS];
} gseq;

static void gen_seq(gseq *s, uint64_t seed) {
    rng = seed;
    for (int j = 0; j < NPS; j++) s->sets[j] = gen_set();
    int64_t t = INT64_C(1700000000000000) + below(INT64_C(1000000000));
    for (int c = 0; c < NCALLS; c++) {
        gcall *k = &s->calls[c];
        int64_t step[] = {0,
                          1,
                          below(1000),
                          below(1000000),
                          below(INT64_C(100000000)),
                          below(INT64_C(86400000000) * 40)};
        t += step[below(6)];
        k->now_us = t;
        k->n = 1 + (size_t)below(MAXITEMS);
        for (size_t i = 0; i < k->n; i++) {
            int j = (int)below(NPS);
            k->set[i] = j;
            k->key[i] = (int)below(NK);
            int64_t lim = s->sets[j].p.rate.limit;
            if (s->sets[j].p.algorithm >= SL_TOKEN_BUCKET) lim = s->sets[j].p.burst;
            k->cost[i] = below(8) == 0 ? lim + 1 : below(lim + 1);
            unsigned r = below(3) == 0 ? 1 : 0;
            k->group[i] = 2 * r + (below(4) == 0);
        }
    }
}

/* Any-rate keys (CL.THROTTLE) are shared by every any-rate set; every
 * other key belongs to its set. */
static void key_of(char *out, size_t size, const char *prefix, const gseq *s, int set, int key) {
    if (s->sets[set].any)
        snprintf(out, size, "%s{c%d}", prefix, key);
    else
        snprintf(out, size, "%s{k%d.%d}", prefix, set, key);
}

/* One call: its reply (freed by the caller). */
static redisReply *send_call(const gseq *s, const gcall *k, const char *prefix,
                             sl__script_command how) {
    char keys[MAXITEMS][48];
    sl__script_item it[MAXITEMS];
    for (size_t i = 0; i < k->n; i++) {
        key_of(keys[i], sizeof keys[i], prefix, s, k->set[i], k->key[i]);
        it[i] = (sl__script_item){.params = &s->sets[k->set[i]].p,
                                  .calendar_month = s->sets[k->set[i]].cal,
                                  .any_rate = s->sets[k->set[i]].any,
                                  .rkey = keys[i],
                                  .rkeylen = strlen(keys[i]),
                                  .cost = k->cost[i],
                                  .group = k->group[i]};
    }
    sl__buf b;
    sl__buf_init(&b);
    sl__redis_script_format_as(&b, how, it, k->n, k->now_us);
    return redis_fixture_send(&b);
}

/* The module's packed reply (one string of 64-bit little-endian integers,
 * redis_script.h) against the script's array of integers: the same
 * numbers. */
static bool same_packed(const redisReply *a, const redisReply *b) {
    if (a->type != REDIS_REPLY_ARRAY || b->len != a->elements * 8) return false;
    for (size_t i = 0; i < a->elements; i++) {
        uint64_t v = 0;
        for (int k = 7; k >= 0; k--) v = v << 8 | (unsigned char)b->str[i * 8 + k];
        if (a->element[i]->type != REDIS_REPLY_INTEGER || a->element[i]->integer != (long long)v)
            return false;
    }
    return true;
}

static bool same_reply(const redisReply *a, const redisReply *b) {
    if (a->type != b->type) return false;
    if (a->type == REDIS_REPLY_INTEGER) return a->integer == b->integer;
    if (a->type == REDIS_REPLY_ERROR || a->type == REDIS_REPLY_STRING) {
        /* an error of the script carries " script: <sha>, on @user_script:..." */
        size_t la = a->len, lb = b->len;
        const char *sa = strstr(a->str, " script: "), *sb = strstr(b->str, " script: ");
        if (sa) la = (size_t)(sa - a->str);
        if (sb) lb = (size_t)(sb - b->str);
        return la == lb && memcmp(a->str, b->str, la) == 0;
    }
    if (a->type == REDIS_REPLY_ARRAY) {
        if (a->elements != b->elements) return false;
        for (size_t i = 0; i < a->elements; i++)
            if (!same_reply(a->element[i], b->element[i])) return false;
        return true;
    }
    return a->type == REDIS_REPLY_NIL;
}

/* A module reply b (packed or not) says what the script's a says. */
static bool same_decisions(const redisReply *a, const redisReply *b) {
    return b->type == REDIS_REPLY_STRING ? same_packed(a, b) : same_reply(a, b);
}

/* Key `name`'s value (GET or LRANGE) and PTTL. */
static void key_state(const char *name, redisReply **val, long long *pttl) {
    redisReply *ty = cmd("TYPE %s", name);
    bool list = strcmp(ty->str, "list") == 0;
    freeReplyObject(ty);
    *val = list ? cmd("LRANGE %s 0 -1", name) : cmd("GET %s", name);
    redisReply *t = cmd("PTTL %s", name);
    *pttl = t->integer;
    freeReplyObject(t);
}

static void print_seq(const gseq *s, size_t upto) {
    for (int j = 0; j < NPS; j++) {
        const gset *g = &s->sets[j];
        print_message("  set %d: alg %d %" PRId64 "/%" PRId64 "ns burst %" PRId64
                      " flags %u delay_after %" PRId64 " origin %" PRId64 "%s%s\n",
                      j, (int)g->p.algorithm, g->p.rate.limit, g->p.rate.period, g->p.burst,
                      g->p.flags, g->p.delay_after, g->p.origin, g->cal ? " calendar" : "",
                      g->any ? " any" : "");
    }
    for (size_t c = 0; c <= upto && c < NCALLS; c++) {
        const gcall *k = &s->calls[c];
        print_message("  call %zu at %" PRId64 ":", c, k->now_us);
        for (size_t i = 0; i < k->n; i++)
            print_message(" [set %d key %d cost %" PRId64 " group %u]", k->set[i], k->key[i],
                          k->cost[i], k->group[i]);
        print_message("\n");
    }
}

/* A call's reply, one item (6 integers) a line. */
static void print_reply(const char *who, const redisReply *r) {
    if (r->type == REDIS_REPLY_STRING && r->len % 8 == 0) { /* packed */
        for (size_t i = 0; i < r->len / 8; i++) {
            uint64_t v = 0;
            for (int k = 7; k >= 0; k--) v = v << 8 | (unsigned char)r->str[i * 8 + k];
            print_message("%s%lld", i % 6 ? " " : "\n    ", (long long)v);
        }
        print_message("\n  (%s, packed)\n", who);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        print_message("  %s: %s\n", who, r->type == REDIS_REPLY_ERROR ? r->str : "(not an array)");
        return;
    }
    for (size_t i = 0; i < r->elements; i++)
        print_message("%s%lld%s",
                      i % 6 ? " "
                      : i   ? "\n    "
                            : "  ",
                      r->element[i]->integer, i + 1 == r->elements ? "\n" : "");
    print_message("  (%s)\n", who);
}

static uint64_t env_u64(const char *name, uint64_t def) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : def;
}

static void test_mixed(void **state) {
    (void)state;
    uint64_t seed = env_u64("MOD_SEED", 1), count = env_u64("MOD_COUNT", 400);
    static gseq s;
    unsigned long calls = 0;
    for (uint64_t q = 0; q < count; q++) {
        gen_seq(&s, seed + q);
        freeReplyObject(cmd("FLUSHALL"));
        for (size_t c = 0; c < NCALLS; c++) {
            redisReply *a = send_call(&s, &s.calls[c], "s:", SL__SCRIPT_EVAL);
            redisReply *b = send_call(&s, &s.calls[c], "m:", SL__SCRIPT_MODULE);
            redisReply *x =
                send_call(&s, &s.calls[c], "x:", c % 2 ? SL__SCRIPT_MODULE : SL__SCRIPT_EVAL);
            redisReply *y = send_call(&s, &s.calls[c], "y:", SL__SCRIPT_MODULE_ARGS);
            if (a->type == REDIS_REPLY_ERROR) fail_msg("script: %s", a->str);
            if (!same_decisions(a, b) || !same_decisions(a, x) || !same_decisions(a, y)) {
                print_seq(&s, c);
                print_reply("script", a);
                print_reply("module", b);
                print_reply("alternating", x);
                print_reply("module, arguments per item", y);
                fail_msg("seed %" PRIu64 " (MOD_SEED=%" PRIu64
                         " MOD_COUNT=1) call %zu: script, module and alternating differ",
                         seed + q, seed + q, c);
            }
            freeReplyObject(a);
            freeReplyObject(b);
            freeReplyObject(x);
            freeReplyObject(y);
            calls++;
        }
        /* the same states under the three prefixes */
        redisReply *ks = cmd("KEYS s:*");
        redisReply *km = cmd("KEYS m:*");
        redisReply *kx = cmd("KEYS x:*");
        redisReply *ky = cmd("KEYS y:*");
        assert_int_equal(ks->elements, km->elements);
        assert_int_equal(ks->elements, kx->elements);
        assert_int_equal(ks->elements, ky->elements);
        for (size_t i = 0; i < ks->elements; i++) {
            const char *k = ks->element[i]->str + 2;
            char nm[64], nx[64], ny[64];
            snprintf(nm, sizeof nm, "m:%s", k);
            snprintf(nx, sizeof nx, "x:%s", k);
            snprintf(ny, sizeof ny, "y:%s", k);
            redisReply *v[4];
            long long t[4];
            key_state(ks->element[i]->str, &v[0], &t[0]);
            key_state(nm, &v[1], &t[1]);
            key_state(nx, &v[2], &t[2]);
            key_state(ny, &v[3], &t[3]);
            if (!same_reply(v[0], v[1]) || !same_reply(v[0], v[2]) || !same_reply(v[0], v[3]) ||
                t[0] != t[1] || t[0] != t[2] || t[0] != t[3]) {
                print_seq(&s, NCALLS);
                fail_msg("seed %" PRIu64 ": key %s: script %s (pttl %lld), module %s (pttl %lld), "
                         "alternating %s (pttl %lld)",
                         seed + q, k, v[0]->type == REDIS_REPLY_STRING ? v[0]->str : "(list)", t[0],
                         v[1]->type == REDIS_REPLY_STRING ? v[1]->str : "(list)", t[1],
                         v[2]->type == REDIS_REPLY_STRING ? v[2]->str : "(list)", t[2]);
            }
            for (int j = 0; j < 4; j++) freeReplyObject(v[j]);
        }
        freeReplyObject(ks);
        freeReplyObject(km);
        freeReplyObject(kx);
        freeReplyObject(ky);
    }
    print_message("mixed: %" PRIu64 " sequences, %lu calls each four ways\n", count, calls);
}

/* ---- errors --------------------------------------------------------------------- */

/* Sends argv (after the command and the script's source) as EVAL and as
 * SLUICE.DECIDE; both must be errors with the same text, and change nothing. */
static void same_error(const char *what, int argc, const char **argv) {
    const char *av[64];
    size_t lens[64];
    assert_true(argc + 2 <= 64);
    freeReplyObject(cmd("FLUSHALL"));
    freeReplyObject(cmd("SET other:key before"));
    av[0] = "EVAL";
    av[1] = sl__redis_script_source();
    for (int i = 0; i < argc; i++) av[2 + i] = argv[i];
    for (int i = 0; i < argc + 2; i++) lens[i] = strlen(av[i]);
    redisReply *a = redisCommandArgv(rc, argc + 2, av, lens);
    av[1] = "SLUICE.DECIDE";
    lens[1] = strlen(av[1]);
    redisReply *b = redisCommandArgv(rc, argc + 1, av + 1, lens + 1);
    if (!a || !b) fail_msg("%s: no reply", what);
    if (a->type != REDIS_REPLY_ERROR || b->type != REDIS_REPLY_ERROR || !same_reply(a, b))
        fail_msg("%s: script %s, module %s", what, a->type == REDIS_REPLY_ERROR ? a->str : "ok",
                 b->type == REDIS_REPLY_ERROR ? b->str : "ok");
    freeReplyObject(a);
    freeReplyObject(b);
    redisReply *n = cmd("DBSIZE");
    assert_int_equal(n->integer, 1);
    freeReplyObject(n);
}

#define SAME_ERROR(what, ...)                                                                      \
    do {                                                                                           \
        const char *args_[] = {__VA_ARGS__};                                                       \
        same_error(what, (int)(sizeof args_ / sizeof *args_), args_);                              \
    } while (0)

static void test_errors(void **state) {
    (void)state;
    /* a good call: 1 key, now, 1 set (gcra 5/1s burst 5), 1 item */
#define SET "5", "5", "1000000", "5", "0", "0", "abc"
    SAME_ERROR("arguments", "1", "k", "0");
    SAME_ERROR("arguments", "1", "k", "0", "1", SET, "1", "1");
    SAME_ERROR("m above n", "1", "k", "0", "2", SET, SET, "1", "1", "0");
    SAME_ERROR("numkeys", "x", "k");
    SAME_ERROR("numkeys", "5", "k");
    SAME_ERROR("numkeys", "-1", "k");
    SAME_ERROR("now", "1", "k", "-1", "1", SET, "1", "1", "0");
    SAME_ERROR("now", "1", "k", "x\"\\\n", "1", SET, "1", "1", "0");
    SAME_ERROR("now", "1", "k", "4611686018427388", "1", SET, "1", "1", "0");
    SAME_ERROR("algorithm", "1", "k", "0", "1", "7", "5", "1000000", "5", "0", "0", "abc", "1", "1",
               "0");
    SAME_ERROR("limit", "1", "k", "0", "1", "5", "0", "1000000", "5", "0", "0", "abc", "1", "1",
               "0");
    SAME_ERROR("limit", "1", "k", "0", "1", "5", "4503599627370497", "1000000", "5", "0", "0",
               "abc", "1", "1", "0");
    SAME_ERROR("period", "1", "k", "0", "1", "5", "5", "0", "5", "0", "0", "abc", "1", "1", "0");
    SAME_ERROR("period", "1", "k", "0", "1", "5", "5", "3162240000000001", "5", "0", "0", "abc",
               "1", "1", "0");
    SAME_ERROR("burst", "1", "k", "0", "1", "5", "5", "1000000", "-1", "0", "0", "abc", "1", "1",
               "0");
    SAME_ERROR("burst 0", "1", "k", "0", "1", "5", "5", "1000000", "0", "0", "0", "abc", "1", "1",
               "0");
    SAME_ERROR("burst too big", "1", "k", "0", "1", "4", "1", "3162240000000000",
               "4503599627370496", "0", "0", "abc", "1", "1", "0");
    SAME_ERROR("flags low", "1", "k", "0", "1", "5", "5", "1000000", "5", "8", "0", "abc", "1", "1",
               "0");
    SAME_ERROR("flags 2^52", "1", "k", "0", "1", "6", "5", "1000000", "5", "4503599627370496", "0",
               "abc", "1", "1", "0");
    SAME_ERROR("steps on a gcra", "1", "k", "0", "1", "5", "5", "1000000", "5", "4", "0", "abc",
               "1", "1", "0");
    SAME_ERROR("delay_after on a gcra", "1", "k", "0", "1", "5", "5", "1000000", "5", "1024", "0",
               "abc", "1", "1", "0");
    SAME_ERROR("delay_after = burst", "1", "k", "0", "1", "6", "5", "1000000", "5", "5120", "0",
               "abc", "1", "1", "0");
    SAME_ERROR("tag empty", "1", "k", "0", "1", "5", "5", "1000000", "5", "0", "0", "", "1", "1",
               "0");
    SAME_ERROR("tag long", "1", "k", "0", "1", "5", "5", "1000000", "5", "0", "0",
               "0123456789abcdef0", "1", "1", "0");
    SAME_ERROR("origin", "1", "k", "0", "1", "5", "5", "1000000", "5", "1", "-5", "abc", "1", "1",
               "0");
    SAME_ERROR("sliding log limit", "1", "k", "0", "1", "2", "100001", "1000000", "0", "0", "0",
               "abc", "1", "1", "0");
    SAME_ERROR("calendar", "1", "k", "0", "1", "3", "5", "1000000", "0", "256", "0", "abc", "1",
               "1", "0");
    SAME_ERROR("any rate", "1", "k", "0", "1", "4", "5", "1000000", "5", "512", "0", "abc", "1",
               "1", "0");
    SAME_ERROR("any rate flags", "1", "k", "0", "1", "5", "5", "1000000", "5", "513", "0", "abc",
               "1", "1", "0");
    SAME_ERROR("item set", "1", "k", "0", "1", SET, "2", "1", "0");
    SAME_ERROR("item set 0", "1", "k", "0", "1", SET, "0", "1", "0");
    SAME_ERROR("item cost", "1", "k", "0", "1", SET, "1", "-1", "0");
    SAME_ERROR("item group", "1", "k", "0", "1", SET, "1", "1", "512");
    SAME_ERROR("two limits", "2", "k", "k", "0", "2", SET, "5", "5", "2000000", "5", "0", "0",
               "abd", "1", "1", "0", "2", "1", "0");
    /* the second item is bad: nothing of the first is written either */
    SAME_ERROR("second item", "2", "k", "j", "0", "1", SET, "1", "1", "0", "1", "1", "x");
#undef SET
    /* the module's own bound: at most SL__SCRIPT_MAX_ITEMS items */
    redisReply *r = cmd("SLUICE.DECIDE 513");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    {
        int n = SL__SCRIPT_MAX_ITEMS + 1, argc = 2 + n + 2 + 7 + 3 * n;
        const char **av = calloc((size_t)argc, sizeof *av);
        char(*keys)[16] = calloc((size_t)n, sizeof *keys);
        assert_non_null(av);
        assert_non_null(keys);
        int a = 0;
        av[a++] = "SLUICE.DECIDE";
        char nbuf[16];
        snprintf(nbuf, sizeof nbuf, "%d", n);
        av[a++] = nbuf;
        for (int i = 0; i < n; i++) {
            snprintf(keys[i], sizeof keys[i], "k%d", i);
            av[a++] = keys[i];
        }
        const char *rest[] = {"0", "1", "5", "5", "1000000", "5", "0", "0", "abc"};
        for (size_t i = 0; i < 9; i++) av[a++] = rest[i];
        for (int i = 0; i < n; i++) {
            av[a++] = "1";
            av[a++] = "1";
            av[a++] = "0";
        }
        r = redisCommandArgv(rc, argc, av, NULL);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        assert_string_equal(r->str, "ERR sluice: more than 512 items in one call");
        freeReplyObject(r);
        free(av);
        free(keys);
    }
}

/* One packed item (redis_script.h): set, group 16-bit, cost 64-bit, LE. */
static void pack_item(char *p, unsigned set, unsigned group, uint64_t cost) {
    p[0] = (char)set;
    p[1] = (char)(set >> 8);
    p[2] = (char)group;
    p[3] = (char)(group >> 8);
    for (int k = 0; k < 8; k++) p[4 + k] = (char)(cost >> (8 * k));
}

/* The packed form: a good call answers what the arguments form answers;
 * every bad item is an error that writes nothing, not even the good item
 * before it. */
static void test_packed(void **state) {
    (void)state;
    char two[2 * SL__SCRIPT_PACKED_ITEM];
    freeReplyObject(cmd("FLUSHALL"));
    pack_item(two, 1, 0, 2);
    pack_item(two + SL__SCRIPT_PACKED_ITEM, 1, 2, 1);
    redisReply *a =
        cmd("SLUICE.DECIDE 2 pk pj 1000000 1 5 5 1000000 5 0 0 abc %b", two, sizeof two);
    freeReplyObject(cmd("FLUSHALL"));
    redisReply *b = cmd("SLUICE.DECIDE 2 pk pj 1000000 1 5 5 1000000 5 0 0 abc 1 2 0 1 1 2");
    assert_int_equal(a->type, REDIS_REPLY_STRING);
    assert_int_equal(a->len, 2 * SL__SCRIPT_PACKED_REPLY);
    assert_true(same_packed(b, a));
    freeReplyObject(a);
    freeReplyObject(b);
    static const struct {
        unsigned set, group;
        uint64_t cost;
        const char *err;
    } bad[] = {{0, 0, 1, "ERR sluice: item 2: bad parameter set"},
               {2, 0, 1, "ERR sluice: item 2: bad parameter set"},
               {1, 512, 1, "ERR sluice: item 2: bad group"},
               {1, 0, UINT64_MAX, "ERR sluice: item 2: bad cost"}};
    for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
        freeReplyObject(cmd("FLUSHALL"));
        pack_item(two, 1, 0, 1);
        pack_item(two + SL__SCRIPT_PACKED_ITEM, bad[t].set, bad[t].group, bad[t].cost);
        redisReply *r = cmd("SLUICE.DECIDE 2 pk pj 0 1 5 5 1000000 5 0 0 abc %b", two, sizeof two);
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        assert_string_equal(r->str, bad[t].err);
        freeReplyObject(r);
        r = cmd("DBSIZE");
        assert_int_equal(r->integer, 0);
        freeReplyObject(r);
    }
    redisReply *r = cmd("SLUICE.DECIDE 2 pk pj 0 1 5 5 1000000 5 0 0 abc %b", two, sizeof two - 1);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "ERR sluice: packed items: expected 24 bytes, got 23");
    freeReplyObject(r);
}

/* COMMAND GETKEYS and COMMAND INFO: the keys are positions 2..n+1. */
static void test_keys(void **state) {
    (void)state;
    redisReply *r =
        cmd("COMMAND GETKEYS SLUICE.DECIDE 2 a b 0 1 5 5 1000000 5 0 0 abc 1 1 0 1 1 0");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, "a");
    assert_string_equal(r->element[1]->str, "b");
    freeReplyObject(r);
    r = cmd("COMMAND INFO sluice.decide");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    const redisReply *c = r->element[0];
    assert_int_equal(c->type, REDIS_REPLY_ARRAY);
    bool write = false, denyoom = false, movable = false;
    for (size_t i = 0; i < c->element[2]->elements; i++) {
        const char *f = c->element[2]->element[i]->str;
        write |= strcmp(f, "write") == 0;
        denyoom |= strcmp(f, "denyoom") == 0;
        movable |= strcmp(f, "movablekeys") == 0;
    }
    assert_true(write && denyoom && movable);
    freeReplyObject(r);
}

/* ---- decide_us.c alone ------------------------------------------------------------ */

/* A sliding log whose state was restored from a copy (a refused group: the
 * copy's runs array is exactly full) and whose next charge drops every run
 * and adds one: the run array must grow first (once a heap overflow, found
 * by test_differential; ASan sees it here every time). */
static void test_log_runs(void **state) {
    (void)state;
    sl__mod_set ps;
    char err[128];
    const int64_t v[6] = {SL__MOD_SLOG, 1, 10, 0, 2 /* count rejected */, 0};
    assert_null(sl__mod_set_check(&ps, 1, v, "t", 1, err, sizeof err));
    sl__mod_state s;
    memset(&s, 0, sizeof s);
    s.is_log = true;
    int64_t out[6];
    assert_true(sl__mod_decide(&ps, &s, 1, SL__MOD_APPLY, false, 100, out));
    assert_int_equal(out[0], 1);
    sl__mod_state copy;
    assert_true(sl__mod_state_copy(&copy, &s));
    assert_int_equal(copy.log.rcap, copy.log.rlen);
    sl__mod_state_free(&s);
    s = copy;
    assert_true(sl__mod_decide(&ps, &s, 1, SL__MOD_CHARGE, true, 100, out));
    assert_int_equal(out[0], 0);
    assert_int_equal(sl__mod_log_len(&s.log), 1);
    assert_int_equal(s.log.runs[s.log.rlen - 1].t, 100);
    assert_int_equal(s.log.runs[s.log.rlen - 1].c, 1);
    sl__mod_state_free(&s);
}

static int setup(void **state) {
    (void)run;
    (void)eval_raw;
    redis_fixture_preload = FROZEN_CLOCK_LIB;
    redis_fixture_module = SLUICE_REDIS_MODULE;
    return redis_fixture_start(state);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_log_runs), cmocka_unit_test(test_keys),
                                       cmocka_unit_test(test_errors), cmocka_unit_test(test_packed),
                                       cmocka_unit_test(test_mixed)};
    return cmocka_run_group_tests(tests, setup, redis_fixture_stop);
}
