/* test_redis_cluster.c: the Redis Cluster routing pieces (src/store/redis_cluster):
 * the key slot against values from Redis's documentation and from a real
 * redis-server 7.0 (CLUSTER KEYSLOT), hash tags, and an independent bitwise
 * CRC16 on random keys; the node table; the slot map from CLUSTER SLOTS
 * replies read by hiredis's own reader from raw RESP bytes (Redis 7 and
 * older shapes, fallback hosts, every malformation, the map unchanged on
 * error); MOVED / ASK parsing with IPv4, IPv6 and bracketed hosts and bad
 * input, on buffers of exactly the given length so ASan sees over-reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/redis_cluster.h"
#include "sluice/error.h"

/* ---- helpers ------------------------------------------------------------------- */

/* Reads one whole reply from raw RESP bytes with hiredis's reader. The
 * caller frees it with freeReplyObject. */
static redisReply *reply_from(const char *resp, size_t len) {
    redisReader *rd = redisReaderCreate();
    assert_non_null(rd);
    assert_int_equal(redisReaderFeed(rd, resp, len), REDIS_OK);
    void *reply = NULL;
    assert_int_equal(redisReaderGetReply(rd, &reply), REDIS_OK);
    if (!reply) fail_msg("incomplete RESP: %.*s", (int)len, resp);
    redisReaderFree(rd);
    return reply;
}

static redisReply *reply_s(const char *resp) {
    return reply_from(resp, strlen(resp));
}

/* A small builder for CLUSTER SLOTS replies, so that the malformed cases
 * below are readable. */
typedef struct {
    char b[8192];
    size_t n;
} resp_buf;

static void put(resp_buf *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(r->b + r->n, sizeof r->b - r->n, fmt, ap);
    va_end(ap);
    assert_true(w >= 0 && (size_t)w < sizeof r->b - r->n);
    r->n += (size_t)w;
}

static void put_bulk(resp_buf *r, const char *s) {
    put(r, "$%zu\r\n%s\r\n", strlen(s), s);
}

/* A node as Redis 7 writes it: [ip, port, id, {}] (the map is an array in RESP2). */
static void put_node7(resp_buf *r, const char *host, int port, const char *id) {
    put(r, "*4\r\n");
    put_bulk(r, host);
    put(r, ":%d\r\n", port);
    put_bulk(r, id);
    put(r, "*0\r\n");
}

#define ID_A "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
#define ID_B "b1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
#define ID_C "c1b2c3d4e5f60718293a4b5c6d7e8f9012345678"

/* The independent reference: CRC16/XMODEM bit by bit. */
static unsigned ref_crc16(const unsigned char *p, size_t len) {
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)p[i] << 8;
        for (int b = 0; b < 8; b++) crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) : (crc << 1);
        crc &= 0xffff;
    }
    return crc;
}

static unsigned slot_s(const char *key) {
    return sl__cluster_keyslot(key, strlen(key));
}

/* ---- key slot ---------------------------------------------------------------------- */

static void test_keyslot_known(void **state) {
    (void)state;
    /* Redis Cluster specification: CRC16("123456789") = 0x31C3 (< 16384, so
     * also the slot) */
    assert_int_equal(ref_crc16((const unsigned char *)"123456789", 9), 0x31C3);
    assert_int_equal(slot_s("123456789"), 0x31C3);
    /* redis.io CLUSTER KEYSLOT examples */
    assert_int_equal(slot_s("foo"), 12182);
    assert_int_equal(slot_s("bar"), 5061);
    /* the rest checked against redis-server 7.0.15's CLUSTER KEYSLOT */
    assert_int_equal(slot_s("{user1000}.following"), 3443);
    assert_int_equal(slot_s("{user1000}.followers"), 3443);
    assert_int_equal(slot_s("user1000"), 3443);
    assert_int_equal(slot_s(""), 0);
    assert_int_equal(slot_s("{"), 4092);
    assert_int_equal(slot_s("}"), 12090);
    assert_int_equal(slot_s("{}"), 15257);
    assert_int_equal(slot_s("{a"), 10276);
    assert_int_equal(slot_s("a}"), 5921);
    assert_int_equal(slot_s("}{a}"), 15495);
    assert_int_equal(slot_s("{}a"), 10875);
    assert_int_equal(slot_s("a{b}c{d}"), 3300);
    assert_int_equal(sl__cluster_keyslot("a\0b", 3), 8383); /* binary keys: length, not NUL */
}

static void test_keyslot_hash_tags(void **state) {
    (void)state;
    /* the examples of the Redis Cluster specification */
    assert_int_equal(slot_s("{user1000}.following"), slot_s("{user1000}.followers"));
    /* "{}" is empty: the whole key is hashed */
    assert_int_equal(slot_s("foo{}{bar}"),
                     ref_crc16((const unsigned char *)"foo{}{bar}", 10) & 0x3fff);
    assert_int_equal(slot_s("foo{}{bar}"), 8363);
    /* the first '{' then the first '}' after it: "{bar" */
    assert_int_equal(slot_s("foo{{bar}}zap"), slot_s("{bar"));
    assert_int_equal(slot_s("foo{{bar}}zap"), 4015);
    /* only the first tag counts */
    assert_int_equal(slot_s("foo{bar}{zap}"), slot_s("bar"));
    assert_int_equal(slot_s("foo{bar}{zap}"), 5061);
    /* a '}' before the '{' does not close it */
    assert_int_equal(slot_s("}{a}"), slot_s("a"));
    /* no closing brace: whole key */
    assert_int_equal(slot_s("x{abc"), ref_crc16((const unsigned char *)"x{abc", 5) & 0x3fff);
    /* sluice's own key shape: every policy of one client key shares a slot */
    assert_int_equal(slot_s("sl:{alice}:api"), slot_s("sl:{alice}:login"));
    assert_int_equal(slot_s("sl:{alice}:api"), slot_s("alice"));
    /* the tag is bounded by len: a '}' past the end does not count */
    const char k[] = "{ab}";
    assert_int_equal(sl__cluster_keyslot(k, 3),
                     ref_crc16((const unsigned char *)"{ab", 3) & 0x3fff);
    assert_int_equal(sl__cluster_keyslot(NULL, 0), 0);
}

static void test_keyslot_random(void **state) {
    (void)state;
    /* random binary keys, braces frequent, against the bitwise reference
     * applied with the hash-tag rule written out independently */
    unsigned seed = 12345;
    for (int n = 0; n < 20000; n++) {
        unsigned char key[40];
        seed = seed * 1103515245u + 12345u;
        size_t len = (seed >> 16) % sizeof key;
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = (seed >> 16) & 0xff;
            key[i] = r < 40 ? '{' : r < 80 ? '}' : (unsigned char)r;
        }
        size_t start = 0, end = len;
        for (size_t i = 0; i < len; i++)
            if (key[i] == '{') {
                for (size_t j = i + 1; j < len; j++)
                    if (key[j] == '}') {
                        if (j > i + 1) start = i + 1, end = j;
                        break;
                    }
                break;
            }
        unsigned want = ref_crc16(key + start, end - start) & 0x3fff;
        /* an exact-size heap copy: ASan catches reads past len */
        unsigned char *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        memcpy(copy, key, len);
        assert_int_equal(sl__cluster_keyslot(copy, len), want);
        free(copy);
    }
}

/* ---- node table -------------------------------------------------------------------- */

static void test_map_nodes(void **state) {
    (void)state;
    sl__cluster_map *m = malloc(sizeof *m);
    assert_non_null(m);
    sl__cluster_map_init(m);
    assert_int_equal(m->nnodes, 0);
    for (size_t i = 0; i < SL__CLUSTER_SLOTS; i++) assert_int_equal(m->node[i], -1);

    assert_int_equal(sl__cluster_map_node(m, "127.0.0.1", 9, 7000), 0);
    assert_int_equal(sl__cluster_map_node(m, "127.0.0.1", 9, 7001), 1);
    assert_int_equal(sl__cluster_map_node(m, "127.0.0.1", 9, 7000), 0);    /* found again */
    assert_int_equal(sl__cluster_map_node(m, "127.0.0.1xyz", 9, 7000), 0); /* hostlen counts */
    assert_int_equal(sl__cluster_map_node(m, "127.0.0.10", 10, 7000), 2);
    assert_int_equal(sl__cluster_map_node(m, "::1", 3, 7000), 3);
    assert_int_equal(sl__cluster_map_node(m, "redis-0.example", 15, 6379), 4);
    assert_string_equal(m->nodes[0].host, "127.0.0.1");
    assert_int_equal(m->nodes[1].port, 7001);
    assert_string_equal(m->nodes[3].host, "::1");
    assert_int_equal(m->nnodes, 5);

    /* refused: empty, port 0, bad bytes, too long (63 bytes is the longest) */
    assert_int_equal(sl__cluster_map_node(m, "", 0, 7000), SL_EINVAL);
    assert_int_equal(sl__cluster_map_node(m, NULL, 0, 7000), SL_EINVAL);
    assert_int_equal(sl__cluster_map_node(m, "127.0.0.1", 9, 0), SL_EINVAL);
    assert_int_equal(sl__cluster_map_node(m, "a b", 3, 1), SL_EINVAL);
    assert_int_equal(sl__cluster_map_node(m, "a\0b", 3, 1), SL_EINVAL);
    assert_int_equal(sl__cluster_map_node(m, "?", 1, 1), SL_EINVAL);
    char longhost[SL__CLUSTER_HOST_MAX + 1];
    memset(longhost, 'h', sizeof longhost);
    assert_int_equal(sl__cluster_map_node(m, longhost, SL__CLUSTER_HOST_MAX, 1), SL_EINVAL);
    assert_int_equal(sl__cluster_map_node(m, longhost, SL__CLUSTER_HOST_MAX - 1, 1), 5);
    assert_int_equal(strlen(m->nodes[5].host), SL__CLUSTER_HOST_MAX - 1);
    assert_int_equal(m->nnodes, 6);

    /* full table */
    for (uint16_t p = 1; m->nnodes < SL__CLUSTER_MAX_NODES; p++)
        assert_true(sl__cluster_map_node(m, "10.0.0.1", 8, p) >= 0);
    assert_int_equal(sl__cluster_map_node(m, "10.0.0.2", 8, 1), SL_EINVAL);
    assert_int_equal(sl__cluster_map_node(m, "127.0.0.1", 9, 7001), 1); /* existing still found */
    assert_int_equal(m->nnodes, SL__CLUSTER_MAX_NODES);
    free(m);
}

/* ---- CLUSTER SLOTS ------------------------------------------------------------------ */

/* The shape redis-server 7.0 answers for a 3-master, 3-replica cluster once
 * the replicas have data: [start, end, master, replica], each node
 * [ip, port, id, {}]. */
static void build_redis7_reply(resp_buf *r) {
    r->n = 0;
    put(r, "*3\r\n");
    put(r, "*4\r\n:0\r\n:5460\r\n");
    put_node7(r, "127.0.0.1", 30001, ID_A);
    put_node7(r, "127.0.0.1", 30005, ID_B);
    put(r, "*4\r\n:5461\r\n:10922\r\n");
    put_node7(r, "127.0.0.1", 30002, ID_B);
    put_node7(r, "127.0.0.1", 30006, ID_C);
    put(r, "*4\r\n:10923\r\n:16383\r\n");
    put_node7(r, "127.0.0.1", 30003, ID_C);
    put_node7(r, "127.0.0.1", 30004, ID_A);
}

static sl__cluster_map *new_map(void) {
    sl__cluster_map *m = malloc(sizeof *m);
    assert_non_null(m);
    sl__cluster_map_init(m);
    return m;
}

static void test_slots_redis7(void **state) {
    (void)state;
    resp_buf b;
    build_redis7_reply(&b);
    redisReply *r = reply_from(b.b, b.n);
    sl__cluster_map *m = new_map();
    char err[128] = "";
    assert_int_equal(sl__cluster_map_from_slots(m, r, "127.0.0.1", err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(m->nnodes, 3); /* masters only */
    assert_string_equal(m->nodes[0].host, "127.0.0.1");
    assert_int_equal(m->nodes[0].port, 30001);
    assert_int_equal(m->nodes[1].port, 30002);
    assert_int_equal(m->nodes[2].port, 30003);
    assert_int_equal(m->node[0], 0);
    assert_int_equal(m->node[5460], 0);
    assert_int_equal(m->node[5461], 1);
    assert_int_equal(m->node[10922], 1);
    assert_int_equal(m->node[10923], 2);
    assert_int_equal(m->node[16383], 2);
    for (size_t i = 0; i < SL__CLUSTER_SLOTS; i++) assert_true(m->node[i] >= 0 && m->node[i] < 3);
    /* "foo" (12182) is on the third master */
    assert_int_equal(m->nodes[m->node[slot_s("foo")]].port, 30003);

    /* a refresh replaces the table: a new topology, nodes in reply order */
    sl__cluster_map *before = new_map();
    memcpy(before, m, sizeof *m);
    redisReply *r2 = reply_s("*1\r\n*3\r\n:100\r\n:100\r\n*2\r\n$9\r\n127.0.0.1\r\n:30009\r\n");
    assert_int_equal(sl__cluster_map_from_slots(m, r2, NULL, err, sizeof err), 0);
    assert_int_equal(m->nnodes, 1);
    assert_int_equal(m->nodes[0].port, 30009);
    assert_int_equal(m->node[100], 0);
    assert_int_equal(m->node[99], -1);
    assert_int_equal(m->node[101], -1);
    freeReplyObject(r2);
    freeReplyObject(r);
    free(before);
    free(m);
}

/* Byte for byte what redis-server 7.0.15 answered to CLUSTER SLOTS on a fresh
 * 3+3 cluster from tests/integration/redis_cluster.py (replicas are listed
 * only once they have a replication offset, so none here). */
static const char captured[] =
    "*3\r\n*3\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:35995\r\n$40\r\n"
    "8f425781d9bf210804c957e00a4fb74d51f6ba78\r\n*0\r\n*3\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n"
    "127.0.0.1\r\n:41823\r\n$40\r\nce5deefd1c5d210fb90e52497d67a86526bd2678\r\n*0\r\n*3\r\n:"
    "10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:42821\r\n$40\r\n"
    "1cfcb1e8f96673f04cf06bbf254b84183a4888a1\r\n*0\r\n";

static void test_slots_captured(void **state) {
    (void)state;
    redisReply *r = reply_from(captured, sizeof captured - 1);
    sl__cluster_map *m = new_map();
    char err[128] = "";
    assert_int_equal(sl__cluster_map_from_slots(m, r, NULL, err, sizeof err), 0);
    assert_int_equal(m->nnodes, 3);
    assert_int_equal(m->nodes[m->node[0]].port, 35995);
    assert_int_equal(m->nodes[m->node[5461]].port, 41823);
    assert_int_equal(m->nodes[m->node[16383]].port, 42821);
    /* and the MOVED that cluster sent for GET foo on a wrong node */
    redisReply *e = reply_s("-MOVED 12182 127.0.0.1:42821\r\n");
    assert_int_equal(e->type, REDIS_REPLY_ERROR);
    unsigned slot;
    char host[SL__CLUSTER_HOST_MAX];
    uint16_t port;
    assert_int_equal(sl__cluster_redirect(e->str, e->len, &slot, host, sizeof host, &port), 1);
    assert_int_equal(slot, slot_s("foo"));
    assert_int_equal(m->nodes[m->node[slot]].port, port);
    assert_string_equal(host, "127.0.0.1");
    freeReplyObject(e);
    freeReplyObject(r);
    free(m);
}

static void test_slots_shapes(void **state) {
    (void)state;
    sl__cluster_map *m = new_map();
    char err[128];

    /* Redis 3-6: [ip, port, id]; several ranges of one master share its
     * index; uncovered slots stay unknown; an empty array is a valid answer */
    redisReply *r = reply_s("*3\r\n"
                            "*3\r\n:0\r\n:99\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
                            "*3\r\n:200\r\n:299\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n"
                            "*3\r\n:300\r\n:300\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n");
    assert_int_equal(sl__cluster_map_from_slots(m, r, NULL, err, sizeof err), 0);
    assert_int_equal(m->nnodes, 2);
    assert_int_equal(m->node[0], 0);
    assert_int_equal(m->node[99], 0);
    assert_int_equal(m->node[100], -1);
    assert_int_equal(m->node[199], -1);
    assert_int_equal(m->node[200], 1);
    assert_int_equal(m->node[300], 0);
    assert_int_equal(m->node[301], -1);
    freeReplyObject(r);

    /* an empty host and a nil host (Redis 7 "unknown-endpoint") mean the
     * address asked: the fallback */
    r = reply_s("*2\r\n"
                "*3\r\n:0\r\n:0\r\n*2\r\n$0\r\n\r\n:7000\r\n"
                "*3\r\n:1\r\n:1\r\n*4\r\n$-1\r\n:7001\r\n$2\r\nid\r\n*2\r\n$8\r\nhostname\r\n$"
                "1\r\nx\r\n");
    assert_int_equal(sl__cluster_map_from_slots(m, r, "::1", err, sizeof err), 0);
    assert_string_equal(m->nodes[m->node[0]].host, "::1");
    assert_int_equal(m->nodes[m->node[0]].port, 7000);
    assert_string_equal(m->nodes[m->node[1]].host, "::1");
    assert_int_equal(m->nodes[m->node[1]].port, 7001);
    /* ... and without a fallback that is an error */
    sl__cluster_map *keep = new_map();
    memcpy(keep, m, sizeof *m);
    strcpy(err, "");
    assert_int_equal(sl__cluster_map_from_slots(m, r, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "no host"));
    assert_int_equal(sl__cluster_map_from_slots(m, r, "", err, sizeof err), SL_EINVAL);
    assert_memory_equal(m, keep, sizeof *m);
    freeReplyObject(r);

    r = reply_s("*0\r\n");
    assert_int_equal(sl__cluster_map_from_slots(m, r, NULL, err, sizeof err), 0);
    assert_int_equal(m->nnodes, 0);
    for (size_t i = 0; i < SL__CLUSTER_SLOTS; i++) assert_int_equal(m->node[i], -1);
    freeReplyObject(r);

    /* err may be NULL or tiny */
    r = reply_s("+OK\r\n");
    assert_int_equal(sl__cluster_map_from_slots(m, r, NULL, NULL, 0), SL_EINVAL);
    char tiny[4] = "xxx";
    assert_int_equal(sl__cluster_map_from_slots(m, r, NULL, tiny, sizeof tiny), SL_EINVAL);
    assert_int_equal(strlen(tiny), 3);
    freeReplyObject(r);
    assert_int_equal(sl__cluster_map_from_slots(m, NULL, NULL, err, sizeof err), SL_EINVAL);
    free(keep);
    free(m);
}

/* Each malformed reply: -1, a message, and the map exactly as it was. */
static void expect_bad(const char *resp, size_t len, const char *want_in_err) {
    redisReply *r = reply_from(resp, len);
    sl__cluster_map *m = new_map(), *before = new_map();
    /* a non-trivial map to compare with */
    resp_buf b;
    build_redis7_reply(&b);
    redisReply *good = reply_from(b.b, b.n);
    assert_int_equal(sl__cluster_map_from_slots(m, good, NULL, NULL, 0), 0);
    freeReplyObject(good);
    memcpy(before, m, sizeof *m);
    char err[256] = "";
    int rc = sl__cluster_map_from_slots(m, r, "127.0.0.1", err, sizeof err);
    if (rc != -1) fail_msg("accepted: %.*s", (int)len, resp);
    if (!err[0]) fail_msg("no message for: %.*s", (int)len, resp);
    if (want_in_err && !strstr(err, want_in_err))
        fail_msg("message '%s' lacks '%s'", err, want_in_err);
    assert_memory_equal(m, before, sizeof *m);
    freeReplyObject(r);
    free(m);
    free(before);
}

#define BAD(s, w) expect_bad(s, sizeof(s) - 1, w)
#define NODE      "*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n"

static void test_slots_malformed(void **state) {
    (void)state;
    /* the reply itself */
    BAD("-ERR This instance has cluster support disabled\r\n", "cluster support disabled");
    BAD("+OK\r\n", "not an array");
    BAD(":3\r\n", "not an array");
    BAD("$3\r\nabc\r\n", "not an array");
    BAD("$-1\r\n", "not an array");
    BAD("*-1\r\n", "not an array");
    /* a range */
    BAD("*1\r\n:1\r\n", "range 0");
    BAD("*1\r\n*-1\r\n", "range 0");
    BAD("*1\r\n*2\r\n:0\r\n:1\r\n", "range 0");
    BAD("*1\r\n*0\r\n", "range 0");
    BAD("*2\r\n*3\r\n:0\r\n:0\r\n" NODE "*1\r\n:5\r\n", "range 1");
    /* bounds */
    BAD("*1\r\n*3\r\n$1\r\n0\r\n:1\r\n" NODE, "integers");
    BAD("*1\r\n*3\r\n:0\r\n$-1\r\n" NODE, "integers");
    BAD("*1\r\n*3\r\n:0\r\n+1\r\n" NODE, "integers");
    BAD("*1\r\n*3\r\n:5\r\n:4\r\n" NODE, "within");
    BAD("*1\r\n*3\r\n:-1\r\n:4\r\n" NODE, "within");
    BAD("*1\r\n*3\r\n:0\r\n:16384\r\n" NODE, "within");
    BAD("*1\r\n*3\r\n:16384\r\n:16384\r\n" NODE, "within");
    BAD("*1\r\n*3\r\n:0\r\n:9223372036854775807\r\n" NODE, "within");
    BAD("*1\r\n*3\r\n:-9223372036854775808\r\n:0\r\n" NODE, "within");
    /* overlapping ranges */
    BAD("*2\r\n*3\r\n:0\r\n:10\r\n" NODE "*3\r\n:10\r\n:20\r\n" NODE, "two ranges");
    BAD("*2\r\n*3\r\n:5\r\n:5\r\n" NODE "*3\r\n:0\r\n:16383\r\n" NODE, "two ranges");
    /* the master node */
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n$9\r\n127.0.0.1\r\n", "node 0");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$9\r\n127.0.0.1\r\n", "node 0");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*0\r\n", "node 0");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*-1\r\n", "node 0");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n:127\r\n:7000\r\n", "host");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n*0\r\n:7000\r\n", "host");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n-ERR\r\n:7000\r\n", "host");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\n?\r\n:7000\r\n", "bad host");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$3\r\na b\r\n:7000\r\n", "bad host");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$3\r\na\0b\r\n:7000\r\n", "bad host");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$64\r\n"
        "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh\r\n:7000\r\n",
        "bad host");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$9\r\n127.0.0.1\r\n:0\r\n", "port");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$9\r\n127.0.0.1\r\n:-1\r\n", "port");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$9\r\n127.0.0.1\r\n:65536\r\n", "port");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$9\r\n127.0.0.1\r\n:4294967297\r\n", "port");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$9\r\n127.0.0.1\r\n$4\r\n7000\r\n", "port");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$9\r\n127.0.0.1\r\n$-1\r\n", "port");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n:5\r\n", "id");
    BAD("*1\r\n*3\r\n:0\r\n:1\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$-1\r\n", "id");
    /* a replica is validated too, though not routed to */
    BAD("*1\r\n*4\r\n:0\r\n:1\r\n" NODE ":5\r\n", "node 1");
    BAD("*1\r\n*4\r\n:0\r\n:1\r\n" NODE "*2\r\n$9\r\n127.0.0.1\r\n:99999\r\n", "node 1");
    BAD("*1\r\n*5\r\n:0\r\n:1\r\n" NODE NODE "*1\r\n:1\r\n", "node 2");
    /* a bad node in a later range, after good ones (the empty host takes the
     * fallback, the port 0 is refused) */
    BAD("*3\r\n*3\r\n:0\r\n:0\r\n" NODE "*3\r\n:1\r\n:1\r\n" NODE
        "*3\r\n:2\r\n:2\r\n*2\r\n$0\r\n\r\n:"
        "0\r\n",
        "range 2");
}

static void test_slots_too_many_masters(void **state) {
    (void)state;
    resp_buf *b = malloc(sizeof *b);
    assert_non_null(b);
    /* 64 masters fit, 65 do not */
    for (int n = SL__CLUSTER_MAX_NODES; n <= SL__CLUSTER_MAX_NODES + 1; n++) {
        b->n = 0;
        put(b, "*%d\r\n", n);
        for (int i = 0; i < n; i++) {
            put(b, "*3\r\n:%d\r\n:%d\r\n", i, i);
            put(b, "*2\r\n");
            put_bulk(b, "127.0.0.1");
            put(b, ":%d\r\n", 10000 + i);
        }
        redisReply *r = reply_from(b->b, b->n);
        sl__cluster_map *m = new_map();
        char err[128] = "";
        int rc = sl__cluster_map_from_slots(m, r, NULL, err, sizeof err);
        if (n == SL__CLUSTER_MAX_NODES) {
            assert_int_equal(rc, 0);
            assert_int_equal(m->nnodes, SL__CLUSTER_MAX_NODES);
            assert_int_equal(m->node[63], 63);
            assert_int_equal(m->nodes[63].port, 10063);
        } else {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err, "masters"));
            assert_int_equal(m->nnodes, 0);
        }
        freeReplyObject(r);
        free(m);
    }
    free(b);
}

/* ---- MOVED / ASK ------------------------------------------------------------------- */

/* Parses a heap copy of exactly len bytes (no NUL after it). */
static int redirect_n(const char *s, size_t len, unsigned *slot, char *host, size_t hostsize,
                      uint16_t *port) {
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, s, len);
    int rc = sl__cluster_redirect(copy, len, slot, host, hostsize, port);
    free(copy);
    return rc;
}

static void expect_redirect(const char *s, int kind, unsigned slot, const char *host,
                            uint16_t port) {
    unsigned gs = 99999;
    char gh[SL__CLUSTER_HOST_MAX];
    uint16_t gp = 0;
    int rc = redirect_n(s, strlen(s), &gs, gh, sizeof gh, &gp);
    if (rc != kind) fail_msg("'%s': %d, want %d", s, rc, kind);
    assert_int_equal(gs, slot);
    assert_string_equal(gh, host);
    assert_int_equal(gp, port);
}

static void test_redirect_good(void **state) {
    (void)state;
    expect_redirect("MOVED 3999 127.0.0.1:6381", 1, 3999, "127.0.0.1", 6381);
    expect_redirect("ASK 3999 127.0.0.1:6381", 2, 3999, "127.0.0.1", 6381);
    expect_redirect("MOVED 0 10.0.0.1:1", 1, 0, "10.0.0.1", 1);
    expect_redirect("MOVED 16383 10.0.0.1:65535", 1, 16383, "10.0.0.1", 65535);
    expect_redirect("MOVED 12182 redis-2.cache.internal:7000", 1, 12182, "redis-2.cache.internal",
                    7000);
    /* IPv6 without brackets: the last ':' is the port's */
    expect_redirect("MOVED 1 ::1:6379", 1, 1, "::1", 6379);
    expect_redirect("ASK 5061 2001:db8::7:30001", 2, 5061, "2001:db8::7", 30001);
    expect_redirect("MOVED 7 fe80::1%eth0:7000", 1, 7, "fe80::1%eth0", 7000);
    /* ... and with them */
    expect_redirect("MOVED 1 [::1]:6379", 1, 1, "::1", 6379);
    /* leading zeros, within five digits */
    expect_redirect("MOVED 00042 h:00080", 1, 42, "h", 80);

    /* only the first len bytes are read */
    const char *s = "ASK 12 h:1234567";
    unsigned slot;
    char host[16];
    uint16_t port;
    assert_int_equal(redirect_n(s, 13, &slot, host, sizeof host, &port), 2);
    assert_int_equal(port, 1234);
    /* slot and port may be NULL */
    assert_int_equal(redirect_n("MOVED 5 h:6", 11, NULL, host, sizeof host, NULL), 1);
    assert_string_equal(host, "h");
    /* the host exactly fills hostsize - 1 */
    assert_int_equal(redirect_n("MOVED 5 abcd:6", 14, &slot, host, 5, &port), 1);
    assert_string_equal(host, "abcd");
}

static void expect_not_redirect(const char *s, size_t len) {
    unsigned slot = 77;
    char host[SL__CLUSTER_HOST_MAX] = "untouched";
    uint16_t port = 77;
    int rc = redirect_n(s, len, &slot, host, sizeof host, &port);
    if (rc != 0) fail_msg("'%.*s' accepted as %d", (int)len, s, rc);
    assert_int_equal(slot, 77);
    assert_int_equal(port, 77);
}

#define NOT(s) expect_not_redirect(s, sizeof(s) - 1)

static void test_redirect_bad(void **state) {
    (void)state;
    NOT("");
    NOT("MOVED");
    NOT("MOVED ");
    NOT("ASK");
    NOT("ASK ");
    NOT("ASKING");
    NOT("moved 1 h:1");
    NOT("ERR unknown command");
    NOT("TRYAGAIN Multiple keys request during rehashing of slot");
    NOT("CLUSTERDOWN Hash slot not served");
    NOT("MOVED 1");
    NOT("MOVED 1 ");
    NOT("MOVED 1 h");
    NOT("MOVED 1 h:");
    NOT("MOVED h:1");
    NOT("MOVED  1 h:1");
    NOT("MOVED 1  h:1");
    NOT("MOVED 1 h:1 ");
    NOT("MOVED 1 h:1\r\n");
    NOT(" MOVED 1 h:1");
    NOT("MOVED 1x h:1");
    NOT("MOVED x1 h:1");
    NOT("MOVED -1 h:1");
    NOT("MOVED +1 h:1");
    NOT("MOVED 16384 h:1");
    NOT("MOVED 99999 h:1");
    NOT("MOVED 000001 h:1");
    NOT("MOVED 99999999999999999999999 h:1");
    NOT("MOVED 18446744073709551617 h:1");
    NOT("MOVED 1 h:0");
    NOT("MOVED 1 h:65536");
    NOT("MOVED 1 h:99999");
    NOT("MOVED 1 h:000001");
    NOT("MOVED 1 h:18446744073709551617");
    NOT("MOVED 1 h:-1");
    NOT("MOVED 1 h:+1");
    NOT("MOVED 1 h:1x");
    NOT("MOVED 1 h:0x10");
    NOT("MOVED 1 h b:1");
    NOT("MOVED 1 ?:1");
    NOT("MOVED 1 h/x:1");
    NOT("MOVED 1 []:1");
    NOT("MOVED 3999 :6380"); /* Redis 7 unknown-endpoint: no host to connect to */
    NOT("MOVED 1 [::1:1");
    NOT("MOVED 1 ::1]:1");
    NOT("MOVED 1 [[::1]]:1");
    NOT("MOVED 1 h\0:1");
    NOT("MOVED 1\0h:1");
    NOT("MOVED\0001 h:1");
    /* a host longer than the buffer or the table allows */
    NOT("MOVED 1 hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh:1");
    unsigned slot;
    char host[5];
    uint16_t port;
    assert_int_equal(redirect_n("MOVED 5 abcde:6", 15, &slot, host, sizeof host, &port), 0);
    assert_int_equal(redirect_n("MOVED 5 a:6", 11, &slot, host, 0, &port), 0);
    assert_int_equal(sl__cluster_redirect("MOVED 5 a:6", 11, &slot, NULL, 8, &port), 0);
    assert_int_equal(sl__cluster_redirect(NULL, 11, &slot, host, sizeof host, &port), 0);
    /* the length bounds the parse: a valid string cut short is not valid */
    const char *s = "MOVED 3999 127.0.0.1:6381";
    for (size_t n = 0; n < strlen(s); n++) {
        char h[SL__CLUSTER_HOST_MAX];
        int rc = redirect_n(s, n, &slot, h, sizeof h, &port);
        /* cut inside the port still leaves a shorter valid port */
        if (n >= strlen("MOVED 3999 127.0.0.1:6"))
            assert_int_equal(rc, 1);
        else
            assert_int_equal(rc, 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyslot_known),          cmocka_unit_test(test_keyslot_hash_tags),
        cmocka_unit_test(test_keyslot_random),         cmocka_unit_test(test_map_nodes),
        cmocka_unit_test(test_slots_redis7),           cmocka_unit_test(test_slots_captured),
        cmocka_unit_test(test_slots_shapes),           cmocka_unit_test(test_slots_malformed),
        cmocka_unit_test(test_slots_too_many_masters), cmocka_unit_test(test_redirect_good),
        cmocka_unit_test(test_redirect_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
