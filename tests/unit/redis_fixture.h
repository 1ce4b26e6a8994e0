/* redis_fixture.h: a private redis-server for the unit tests that run
 * against a real Redis (test_redis_script, test_cell, test_differential,
 * test_redis_module, test_shed_engine, test_shed_redis, test_lease_redis,
 * test_retry_redis). Included by one test file each (static functions, one
 * server per test executable): redis_fixture_start / redis_fixture_stop are
 * cmocka group setup and teardown; the server listens only on a Unix socket
 * in a fresh temporary directory, which teardown removes. `rc` is the
 * connection. redis_fixture_preload (set before the start, NULL by default)
 * is a library the server runs with in LD_PRELOAD (test_differential: a
 * frozen wall clock). redis_fixture_module (likewise) is a module the server
 * loads (--loadmodule: sluice-redis.so). Also what those tests share: one
 * formatted command sent and its reply (redis_fixture_send), the decision
 * script loaded, run and run_persist (the script and PTTL + PERSIST of its
 * keys in one MULTI/EXEC), a seeded generator (rng, rnd, below: splitmix64)
 * and, after store/redis_store.h, the script and module Redis stores
 * (redis_fixture_stores). */
#ifndef SLUICE_TESTS_REDIS_FIXTURE_H
#define SLUICE_TESTS_REDIS_FIXTURE_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/redis_script.h"
#include "util/buf.h"

static pid_t redis_pid = -1;
static char tmpdir[64];
static char sock_path[128];
static char log_path[160];
static redisContext *rc;
static const char *redis_fixture_preload;
static const char *redis_fixture_module;

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void print_redis_log(void) {
    FILE *f = fopen(log_path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) fprintf(stderr, "redis: %s", line);
    fclose(f);
}

/* Starts redis-server and connects; -1 (with the reason on stderr) when it
 * does not answer PING within 10 s. */
static int redis_fixture_start(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sl-redis-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    snprintf(sock_path, sizeof sock_path, "%s/r.sock", tmpdir);
    snprintf(log_path, sizeof log_path, "%s/redis.log", tmpdir);
    redis_pid = fork();
    if (redis_pid < 0) return -1;
    if (redis_pid == 0) {
        if (redis_fixture_preload) setenv("LD_PRELOAD", redis_fixture_preload, 1);
        const char *lm = redis_fixture_module ? "--loadmodule" : NULL;
        execl("/usr/bin/redis-server", "redis-server", "--port", "0", "--unixsocket", sock_path,
              "--save", "", "--appendonly", "no", "--dir", tmpdir, "--logfile", log_path, lm,
              redis_fixture_module, (char *)NULL);
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock_path, "--save",
               "", "--appendonly", "no", "--dir", tmpdir, "--logfile", log_path, lm,
               redis_fixture_module, (char *)NULL);
        _exit(127);
    }
    int64_t deadline = mono_ms() + 10000;
    while (mono_ms() < deadline) {
        int status;
        if (waitpid(redis_pid, &status, WNOHANG) == redis_pid) {
            fprintf(stderr, "redis-server exited (status %d) before listening\n", status);
            redis_pid = -1;
            print_redis_log();
            return -1;
        }
        struct timeval tv = {1, 0};
        redisContext *c = redisConnectUnixWithTimeout(sock_path, tv);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            bool ok = r && r->type == REDIS_REPLY_STATUS;
            if (r) freeReplyObject(r);
            if (ok) {
                rc = c;
                return 0;
            }
        }
        if (c) redisFree(c);
        usleep(20000);
    }
    fprintf(stderr, "redis-server did not answer on %s within 10 s\n", sock_path);
    print_redis_log();
    return -1;
}

static int redis_fixture_stop(void **state) {
    (void)state;
    if (rc) redisFree(rc);
    rc = NULL;
    if (redis_pid > 0) {
        kill(redis_pid, SIGTERM);
        int status;
        waitpid(redis_pid, &status, 0);
        redis_pid = -1;
    }
    unlink(log_path);
    unlink(sock_path);
    rmdir(tmpdir);
    return 0;
}

/* A command's reply (the caller frees it); fails the test when Redis is gone. */
static redisReply *cmd(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    if (!r) fail_msg("redis: %s", rc->errstr);
    return r;
}

/* The command formatted in b sent (b freed); its raw reply, freed by the caller. */
static inline redisReply *redis_fixture_send(sl__buf *b) {
    assert_false(b->failed);
    if (redisAppendFormattedCommand(rc, b->data, b->len) != REDIS_OK) fail_msg("append");
    sl__buf_free(b);
    void *reply = NULL;
    if (redisGetReply(rc, &reply) != REDIS_OK) fail_msg("redis: %s", rc->errstr);
    return reply;
}

/* One call of the decision script for items[0..n) (EVALSHA, or EVAL with
 * the source); the raw reply, freed by the caller. */
static inline redisReply *eval_raw(sl__script_item *items, size_t n, int64_t now_us,
                                   bool with_source) {
    sl__buf b;
    sl__buf_init(&b);
    sl__redis_script_format(&b, with_source, items, n, now_us);
    return redis_fixture_send(&b);
}

/* Runs the script on items[0..n) at now_us (EVALSHA; loads it once when
 * Redis says NOSCRIPT); every item must be decided. */
static void run(sl__script_item *items, size_t n, int64_t now_us) {
    redisReply *r = eval_raw(items, n, now_us, false);
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(r);
        r = eval_raw(items, n, now_us, true);
    }
    char err[256];
    if (sl__redis_script_parse(r, items, n, err, sizeof err) != 0)
        fail_msg("script (%s, now %lld): %s", items[0].rkey, (long long)now_us, err);
    freeReplyObject(r);
}

/* SCRIPT LOAD of the decision script, so that EVALSHA finds it. */
static inline void load_script(void) {
    const char *src = sl__redis_script_source();
    redisReply *r = cmd("SCRIPT LOAD %b", src, strlen(src));
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
}

/* Runs the script, then reads the PTTL of each of keys[0..nk) and PERSISTs
 * them, all in one MULTI/EXEC: no key can expire in real time between the
 * script and the PERSIST. pttl[i] gets -2 (no key), -1 (no TTL: not written
 * since the last PERSIST) or the TTL in ms. The script must be loaded. */
static inline void run_persist(sl__script_item *items, size_t n, int64_t now_us,
                               const char *const *keys, size_t nk, long long *pttl) {
    sl__buf b;
    sl__buf_init(&b);
    sl__redis_script_format(&b, false, items, n, now_us);
    assert_false(b.failed);
    redisAppendCommand(rc, "MULTI");
    redisAppendFormattedCommand(rc, b.data, b.len);
    sl__buf_free(&b);
    for (size_t i = 0; i < nk; i++) redisAppendCommand(rc, "PTTL %s", keys[i]);
    for (size_t i = 0; i < nk; i++) redisAppendCommand(rc, "PERSIST %s", keys[i]);
    redisAppendCommand(rc, "EXEC");
    for (size_t i = 0; i < 2 + 2 * nk; i++) { /* OK, QUEUED... */
        void *v = NULL;
        if (redisGetReply(rc, &v) != REDIS_OK) fail_msg("redis: %s", rc->errstr);
        redisReply *r = v;
        if (r->type != REDIS_REPLY_STATUS) fail_msg("MULTI: %s", r->str ? r->str : "?");
        freeReplyObject(r);
    }
    void *v = NULL;
    if (redisGetReply(rc, &v) != REDIS_OK) fail_msg("redis: %s", rc->errstr);
    redisReply *x = v;
    if (x->type != REDIS_REPLY_ARRAY || x->elements != 1 + 2 * nk) fail_msg("EXEC: bad reply");
    char err[256];
    if (sl__redis_script_parse(x->element[0], items, n, err, sizeof err) != 0)
        fail_msg("script (%s, now %lld): %s", items[0].rkey, (long long)now_us, err);
    for (size_t i = 0; i < nk; i++) {
        if (x->element[1 + i]->type != REDIS_REPLY_INTEGER) fail_msg("PTTL: not an integer");
        pttl[i] = x->element[1 + i]->integer;
    }
    freeReplyObject(x);
}

/* The seeded generator of the random traces (splitmix64: any seed in rng,
 * the same sequence for the same seed; the tests print the seed on failure). */
static uint64_t rng;
static inline uint64_t rnd(void) {
    uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}
/* Uniform enough in [0, n) (0 when n <= 0). */
static inline int64_t below(int64_t n) {
    return n <= 0 ? 0 : (int64_t)(rnd() % (uint64_t)n);
}

#ifdef SLUICE_STORE_REDIS_STORE_H
/* The configs of redis_fixture_stores' stores (a store keeps a pointer to its
 * config: they live as long as the executable). */
static sl__redis_config redis_fixture_rcfg, redis_fixture_mcfg;

/* Two Redis stores on loop over the fixture's server (started): the decision
 * script (module: off) and sluice-redis.so (module: require: the server must
 * load it), their keys under prefix and mprefix, their counters in sstats and
 * mstats; failing open, no deny cache, a breaker that never opens, 30 s
 * timeouts, the script given the caller's clock. 0, or -1 when one is not made. */
static inline int redis_fixture_stores(uv_loop_t *loop, const char *prefix, const char *mprefix,
                                       sl__store_stats *sstats, sl__store_stats *mstats,
                                       sl__store **redis, sl__store **module) {
    sl__redis_config *r = &redis_fixture_rcfg, *m = &redis_fixture_mcfg;
    *r = (sl__redis_config){.timeout = 30 * SL_NS_PER_SEC,
                            .on_failure = SL__FAIL_OPEN,
                            .expected_instances = 1,
                            .breaker_failures = 1000000,
                            .breaker_cooldown = SL_NS_PER_SEC,
                            .breaker_window = SL_NS_PER_SEC,
                            .deny_cache = 0,
                            .module = SL__REDIS_MODULE_OFF,
                            .script_now = true};
    snprintf(r->prefix, sizeof r->prefix, "%s", prefix);
    snprintf(r->unix_path, sizeof r->unix_path, "%s", sock_path);
    *m = *r;
    m->module = SL__REDIS_MODULE_REQUIRE;
    snprintf(m->prefix, sizeof m->prefix, "%s", mprefix);
    *redis = sl__redis_store_new(loop, r, sstats);
    *module = sl__redis_store_new(loop, m, mstats);
    return *redis && *module ? 0 : -1;
}
#endif

#endif
