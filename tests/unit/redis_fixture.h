/* redis_fixture.h: a private redis-server for the unit tests that run the
 * decision script against a real Redis (test_redis_script, test_cell).
 * Included by one test file each (static functions, one server per test
 * executable): redis_fixture_start / redis_fixture_stop are cmocka group
 * setup and teardown; the server listens only on a Unix socket in a fresh
 * temporary directory, which teardown removes. `rc` is the connection.
 * redis_fixture_preload (set before the start, NULL by default) is a
 * library the server runs with in LD_PRELOAD (test_differential: a frozen
 * wall clock). redis_fixture_module (likewise) is a module the server loads
 * (--loadmodule: sluice-redis.so). */
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

/* One call of the decision script for items[0..n) (EVALSHA, or EVAL with
 * the source); the raw reply, freed by the caller. */
static redisReply *eval_raw(sl__script_item *items, size_t n, int64_t now_us, bool with_source) {
    sl__buf b;
    sl__buf_init(&b);
    sl__redis_script_format(&b, with_source, items, n, now_us);
    assert_false(b.failed);
    if (redisAppendFormattedCommand(rc, b.data, b.len) != REDIS_OK) fail_msg("append");
    sl__buf_free(&b);
    void *reply = NULL;
    if (redisGetReply(rc, &reply) != REDIS_OK) fail_msg("redis: %s", rc->errstr);
    return reply;
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

#endif
