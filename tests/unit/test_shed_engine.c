/* test_shed_engine.c: load shedding through the decision engine
 * (sl__decide_call_shed), the fleet's capacity against the process's, on a
 * fake clock. The same random requests (one or two limits, random keys,
 * costs and priorities, at times that never go back) are decided by the
 * engine twice:
 * - on the memory store, with `shedding:` of scope process: the engine's
 *   own shedder (sl_shed, the reference), given back when a limit refuses;
 * - on the Redis store (a real redis-server, redis_fixture.h, its wall
 *   clock frozen by frozen_clock.c; store.redis.script_now sends the fake
 *   clock), with scope fleet: the capacity as the first item of the
 *   request's group in decide.lua; once through the script (module: off)
 *   and once on a store with module: require, whose calls with a capacity
 *   still go as the script.
 * Both must answer alike: shed or not, shed_retry, and when not shed the
 * limits' rc, refused item and decisions field by field. A capacity that
 * refills slowly, reserves of 2 and 3: every priority is shed at times. */
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
#include <uv.h>

#include "policy/config.h"
#include "policy/decide.h"
#include "policy/policy.h"
#include "sluice/sluice.h"
#include "store/redis_store.h"
#include "store/store.h"
#include "util/log.h"

#include "redis_fixture.h"

#define US    INT64_C(1000)
#define T0_US INT64_C(1700000000000000)

static const char *const POLICIES = "policies:\n"
                                    "  - {name: tb, algorithm: token_bucket, rate: 5/s, burst: 4}\n"
                                    "  - {name: fw, algorithm: fixed_window, rate: 6/s}\n"
                                    "shedding:\n"
                                    "  rate: 10/s\n"
                                    "  burst: 10\n"
                                    "  reserve_critical: 2\n"
                                    "  reserve_default: 3\n";

static uv_loop_t loop;
static sl__store_stats sstats, mstats;
static sl__store *redis, *module;

typedef struct side {
    sl__config *cfg;
    sl__policy_set *set;
} side;

static void side_open(side *s, bool fleet) {
    char text[1024];
    snprintf(text, sizeof text, "store:\n  type: %s\n%s%s", fleet ? "redis" : "memory", POLICIES,
             fleet ? "  scope: fleet\n" : "");
    static sl__config_errors e;
    if (sl__config_parse(text, strlen(text), "shed.yaml", &s->cfg, &e) != 0) {
        for (size_t i = 0; i < e.n; i++) print_message("%s\n", e.msg[i]);
        fail_msg("config does not load");
    }
    char err[256];
    if (sl__policy_set_create(s->cfg, NULL, T0_US * US, &s->set, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_non_null(sl__policy_set_shed(s->set, NULL));
    assert_int_equal(sl__policy_set_shed(s->set, NULL)->fleet, fleet);
}

static void side_close(side *s) {
    sl__policy_set_release(s->set);
    sl__config_free(s->cfg);
}

typedef struct req {
    int pol[2]; /* 0 tb, 1 fw */
    int key[2];
    int64_t cost[2];
    size_t n;
    sl_priority prio;
} req;

typedef struct answer {
    bool shed;
    int64_t shed_retry;
    int rc;
    size_t refused;
    sl_decision d[2];
} answer;

static void on_done(sl__decide_call *c) {
    answer *a = c->arg;
    a->shed = c->shed;
    a->shed_retry = c->shed_retry;
    a->rc = c->rc;
    a->refused = c->refused;
    for (size_t j = 0; j < c->n; j++) a->d[j] = c->items[j].decision;
    sl__decide_call_free(c);
}

static void decide(sl__store *store, side *s, const req *q, int64_t now_us, answer *a) {
    static const char *const names[] = {"tb", "fw"};
    sl__decide_item items[2];
    char keys[2][8];
    for (size_t j = 0; j < q->n; j++) {
        snprintf(keys[j], sizeof keys[j], "k%d", q->key[j]);
        sl__policy *p = sl__policy_find(s->set, names[q->pol[j]], 2);
        items[j] = sl__policy_use(p, keys[j], strlen(keys[j]), q->cost[j], false);
    }
    sl__decide_call *c = sl__decide_call_new(items, q->n, NULL, NULL, 0);
    assert_non_null(c);
    *a = (answer){.rc = -12345};
    c->done = on_done;
    c->arg = a;
    sl__decide_call_shed(c, sl__policy_set_shed(s->set, NULL), q->prio);
    sl__decide_call_hold(c, s->set);
    if (store) {
        sl__engine_decide_on(store, c, now_us * US);
        uv_run(&loop, UV_RUN_NOWAIT);
        while (a->rc == -12345) uv_run(&loop, UV_RUN_ONCE);
    } else {
        sl__engine_decide(sl__decider_memory(), c, now_us * US);
        assert_true(a->rc != -12345); /* inline */
    }
}

static void same(const char *ctx, const answer *m, const answer *r) {
    if (m->shed != r->shed || m->shed_retry != r->shed_retry)
        fail_msg("%s: shed memory %d (retry %lld), redis %d (retry %lld)", ctx, m->shed,
                 (long long)m->shed_retry, r->shed, (long long)r->shed_retry);
    if (m->shed) return;
    if (m->rc != r->rc || m->refused != r->refused)
        fail_msg("%s: rc %d/%d refused %zu/%zu", ctx, m->rc, r->rc, m->refused, r->refused);
}

static void compare_items(const char *ctx, const answer *m, const answer *r, size_t n) {
    if (m->shed) return;
    for (size_t j = 0; j < n; j++) {
        const sl_decision *x = &m->d[j], *y = &r->d[j];
        if (x->allowed != y->allowed || x->limit != y->limit || x->remaining != y->remaining ||
            x->retry_after != y->retry_after || x->reset_after != y->reset_after)
            fail_msg("%s item %zu: memory {%d %lld %lld %lld %lld} redis {%d %lld %lld %lld %lld}",
                     ctx, j, x->allowed, (long long)x->limit, (long long)x->remaining,
                     (long long)x->retry_after, (long long)x->reset_after, y->allowed,
                     (long long)y->limit, (long long)y->remaining, (long long)y->retry_after,
                     (long long)y->reset_after);
    }
}

static void sequence(sl__store *store, uint64_t seed, int steps, unsigned *shed_seen) {
    rng = seed;
    side mem, red;
    side_open(&mem, false);
    side_open(&red, true);
    redisReply *fl = cmd("FLUSHALL");
    freeReplyObject(fl);
    int64_t now = T0_US;
    for (int s = 0; s < steps; s++) {
        int64_t roll = below(10);
        now += roll < 4 ? 0 : roll < 9 ? 1000 * below(120) : 1000 * below(2000);
        req q = {.n = 1 + (size_t)below(2), .prio = (sl_priority)below(SL_PRIORITIES)};
        for (size_t j = 0; j < q.n; j++) {
            q.pol[j] = (int)below(2);
            q.key[j] = (int)below(3);
            q.cost[j] = below(8) == 0 ? 0 : 1 + below(2);
        }
        if (q.n == 2 && q.pol[0] == q.pol[1] && q.key[0] == q.key[1]) q.key[1] = (q.key[0] + 1) % 3;
        answer m, r;
        decide(NULL, &mem, &q, now, &m);
        decide(store, &red, &q, now, &r);
        char ctx[160];
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 " step %d (t+%lld us, %s, %zu items)", seed, s,
                 (long long)(now - T0_US), sl_priority_name(q.prio), q.n);
        same(ctx, &m, &r);
        compare_items(ctx, &m, &r, q.n);
        shed_seen[q.prio] += m.shed;
    }
    side_close(&mem);
    side_close(&red);
}

static void run_on(sl__store *store, sl__store_stats *st) {
    unsigned shed[SL_PRIORITIES] = {0};
    uint64_t script_before = atomic_load(&st->script_calls);
    for (uint64_t k = 0; k < 12; k++) sequence(store, 0x5ed0 + k, 200, shed);
    for (int p = 0; p < SL_PRIORITIES; p++) assert_true(shed[p] > 0); /* every priority shed */
    assert_true(atomic_load(&st->script_calls) > script_before);
    assert_int_equal(atomic_load(&st->module_calls), 0); /* a capacity: the script, always */
}

static void test_script(void **state) {
    (void)state;
    run_on(redis, &sstats);
}

static void test_module_require(void **state) {
    (void)state;
    run_on(module, &mstats);
}

static int setup(void **state) {
    (void)run;
    redis_fixture_preload = FROZEN_CLOCK_LIB;
    redis_fixture_module = SLUICE_REDIS_MODULE;
    sl__log_set_level(SL__LOG_ERROR);
    if (redis_fixture_start(state) != 0) return -1;
    if (uv_loop_init(&loop) != 0) return -1;
    return redis_fixture_stores(&loop, "s:", "s:", &sstats, &mstats, &redis, &module);
}

static int teardown(void **state) {
    sl__store_free(redis);
    sl__store_free(module);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return redis_fixture_stop(state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_script),
        cmocka_unit_test(test_module_require),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
