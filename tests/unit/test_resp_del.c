/* test_resp_del.c: DEL for CL.THROTTLE's state (server/resp/resp_del.c,
 * docs/resp.md) on the memory store, with a fixed clock: a key refused by
 * CL.THROTTLE is back to its full burst after DEL; Redis's integer answer
 * (keys that had state, a key named twice counted once, unknown keys 0);
 * the bounded argument count and the other errors; COMMAND INFO and
 * GETKEYS as Redis describes DEL. And sl_table_forget itself: inline and
 * out-of-line keys, the bytes given back, SL_EKEY. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cell.h"
#include "server/resp/resp.h"
#include "sluice/sluice.h"
#include "util/buf.h"

#include "helpers.h"

#define T0 (INT64_C(1700000000) * SEC)

/* The reply to one inline command line (no CRLF needed), as a C string in
 * a static buffer. */
static const char *reply(const sl__resp_context *ctx, const char *line) {
    static char got[4096];
    char in[2048];
    int n = snprintf(in, sizeof in, "%s\r\n", line);
    sl__resp_command cmd;
    assert_int_equal(sl__resp_parse(in, (size_t)n, 1 << 16, &cmd, NULL, 0), n);
    sl__buf out;
    sl__buf_init(&out);
    sl__resp_execute(ctx, &cmd, &out);
    snprintf(got, sizeof got, "%.*s", (int)out.len, out.data ? out.data : "");
    sl__buf_free(&out);
    return got;
}

static void test_del_resets_a_key(void **state) {
    (void)state;
    sl__cell *cell = NULL;
    assert_int_equal(sl__cell_create(1 << 20, &cell), 0);
    sl__resp_context ctx = {.cell = cell, .now = T0};
    const char *allowed = "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60\r\n";
    assert_string_equal(reply(&ctx, "CL.THROTTLE k 0 1 60"), allowed);
    assert_string_equal(reply(&ctx, "CL.THROTTLE k 0 1 60"),
                        "*5\r\n:1\r\n:1\r\n:0\r\n:60\r\n:60\r\n");
    assert_string_equal(reply(&ctx, "DEL k"), ":1\r\n");
    assert_string_equal(reply(&ctx, "CL.THROTTLE k 0 1 60"), allowed); /* as new */
    /* a key named twice counts once; unknown keys count nothing */
    assert_string_equal(reply(&ctx, "CL.THROTTLE j 0 1 60"), allowed);
    assert_string_equal(reply(&ctx, "del k nosuch k j"), ":2\r\n");
    assert_string_equal(reply(&ctx, "DEL k j"), ":0\r\n");
    uint64_t keys;
    sl__cell_stats(cell, &keys, NULL, NULL);
    assert_int_equal(keys, 0);
    /* another key's state is left alone */
    assert_string_equal(reply(&ctx, "CL.THROTTLE a 0 1 60"), allowed);
    assert_string_equal(reply(&ctx, "CL.THROTTLE b 0 1 60"), allowed);
    assert_string_equal(reply(&ctx, "DEL a"), ":1\r\n");
    assert_string_equal(reply(&ctx, "CL.THROTTLE b 0 1 60"),
                        "*5\r\n:1\r\n:1\r\n:0\r\n:60\r\n:60\r\n");
    sl__cell_destroy(cell);
}

static void test_del_errors(void **state) {
    (void)state;
    sl__cell *cell = NULL;
    assert_int_equal(sl__cell_create(1 << 20, &cell), 0);
    sl__resp_context ctx = {.cell = cell, .now = T0};
    assert_string_equal(reply(&ctx, "DEL"), "-ERR wrong number of arguments for 'del' command\r\n");
    char line[512] = "DEL";
    for (int i = 0; i < 16; i++) snprintf(line + strlen(line), 16, " k%d", i);
    assert_string_equal(reply(&ctx, line), ":0\r\n"); /* 16 keys: the most */
    strcat(line, " k16");
    assert_string_equal(reply(&ctx, line),
                        "-ERR DEL takes at most 16 keys here (CL.THROTTLE state)\r\n");
    sl__resp_context none = {.now = T0};
    assert_string_equal(reply(&none, "DEL k"),
                        "-ERR CL.THROTTLE is not enabled on this server\r\n");
    sl__cell_destroy(cell);
}

static void test_del_command_info(void **state) {
    (void)state;
    sl__resp_context ctx = {.now = T0};
    const char *info = reply(&ctx, "COMMAND INFO del");
    assert_memory_equal(
        info, "*1\r\n*10\r\n$3\r\ndel\r\n:-2\r\n*1\r\n+write\r\n:1\r\n:-1\r\n:1\r\n",
        strlen("*1\r\n*10\r\n$3\r\ndel\r\n:-2\r\n*1\r\n+write\r\n:1\r\n:-1\r\n:1\r\n"));
    assert_non_null(strstr(info, "$7\r\nlastkey\r\n:-1\r\n$7\r\nkeystep\r\n:1\r\n"));
    assert_string_equal(reply(&ctx, "COMMAND GETKEYS del a b c"),
                        "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    assert_string_equal(reply(&ctx, "COMMAND GETKEYS cl.throttle k 1 2 3"), "*1\r\n$1\r\nk\r\n");
}

static void test_table_forget(void **state) {
    (void)state;
    sl_table *t = NULL;
    sl_table_options o = {
        .params = {.algorithm = SL_TOKEN_BUCKET, .rate = {.limit = 2, .period = SEC}, .burst = 2},
        .max_memory = 1 << 20};
    assert_int_equal(sl_table_create(&o, &t), 0);
    char longkey[300];
    memset(longkey, 'x', sizeof longkey);
    const struct {
        const char *k;
        size_t n;
    } keys[] = {{"a", 1}, {"", 0}, {"exactly-15bytes", 15}, {longkey, sizeof longkey}};
    sl_table_stats before, after;
    sl_table_stats_get(t, &before);
    for (size_t i = 0; i < COUNT(keys); i++) {
        sl_decision d;
        assert_int_equal(sl_table_check(t, keys[i].k, keys[i].n, 2, T0, &d), 0);
        assert_true(d.allowed);
        assert_int_equal(sl_table_check(t, keys[i].k, keys[i].n, 1, T0, &d), 0);
        assert_false(d.allowed);
    }
    sl_table_stats_get(t, &after);
    assert_int_equal(after.keys, COUNT(keys));
    for (size_t i = 0; i < COUNT(keys); i++) {
        assert_int_equal(sl_table_forget(t, keys[i].k, keys[i].n), 1);
        assert_int_equal(sl_table_forget(t, keys[i].k, keys[i].n), 0);
        sl_decision d;
        assert_int_equal(sl_table_check(t, keys[i].k, keys[i].n, 2, T0, &d), 0);
        assert_true(d.allowed); /* a full bucket again */
        assert_int_equal(sl_table_forget(t, keys[i].k, keys[i].n), 1);
    }
    sl_table_stats_get(t, &after);
    assert_int_equal(after.keys, 0);
    assert_int_equal(after.bytes, before.bytes); /* the long key's bytes given back */
    assert_int_equal(sl_table_forget(t, longkey, SL_KEY_MAX + 1), SL_EKEY);
    sl_table_destroy(t);
}

/* Threads forgetting keys while others check them one by one and in
 * multi-key checks (whose entries are pinned under their shards' locks):
 * no race (TSan), and every state ends consistent (a final check of each
 * key passes or refuses as its own table says, never a crash). */
typedef struct hammer {
    sl_table *t;
    int id;
} hammer;

static void *hammer_run(void *arg) {
    hammer *h = arg;
    char k[4][8];
    for (int i = 0; i < 4; i++) snprintf(k[i], sizeof k[i], "k%d", i);
    for (int n = 0; n < 20000; n++) {
        int i = n % 4;
        sl_decision d;
        if (h->id == 0) {
            assert_true(sl_table_forget(h->t, k[i], 2) >= 0);
        } else if (h->id == 1) {
            assert_int_equal(sl_table_check(h->t, k[i], 2, 1, T0 + n, &d), 0);
        } else {
            sl_check c[3] = {{.table = h->t, .key = k[i], .keylen = 2, .cost = 1},
                             {.table = h->t, .key = k[(i + 1) % 4], .keylen = 2, .cost = 1},
                             {.table = h->t, .key = k[i], .keylen = 2, .cost = 1}};
            assert_int_equal(sl_table_check_all(c, 3, T0 + n, NULL), 0);
        }
    }
    return NULL;
}

static void test_forget_concurrent(void **state) {
    (void)state;
    sl_table *t = NULL;
    sl_table_options o = {
        .params = {.algorithm = SL_TOKEN_BUCKET, .rate = {.limit = 5, .period = SEC}, .burst = 5},
        .max_memory = 1 << 20};
    assert_int_equal(sl_table_create(&o, &t), 0);
    pthread_t th[3];
    hammer h[3];
    for (int i = 0; i < 3; i++) {
        h[i] = (hammer){.t = t, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, hammer_run, &h[i]), 0);
    }
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    sl_table_stats st;
    sl_table_stats_get(t, &st);
    assert_true(st.keys <= 4);
    sl_table_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_del_resets_a_key),  cmocka_unit_test(test_del_errors),
        cmocka_unit_test(test_del_command_info),  cmocka_unit_test(test_table_forget),
        cmocka_unit_test(test_forget_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
