/* fuzz_cluster.c: libFuzzer target for the Redis Cluster routing pieces
 * (src/store/redis_cluster.c) on arbitrary bytes:
 * - the bytes as a server's answer: read by hiredis's reader, each reply given
 *   to sl__cluster_map_from_slots. On success the map is consistent (every
 *   slot unknown or a node of the table, every node a usable host and port);
 *   on failure it is byte for byte what it was, and there is a message. An
 *   error reply is also parsed as a redirection;
 * - the bytes as a redirection text for sl__cluster_redirect, from an
 *   exact-size copy (ASan sees any over-read), with a host buffer whose size
 *   the input chooses. A result is in range, and written back as Redis would
 *   it parses to the same result;
 * - the bytes as a key: the slot is below 16384 and a non-empty hash tag
 *   hashes like the tag alone.
 *
 * hiredis 0.14's reader has no bound on array lengths ("*2147483647" makes
 * it calloc 16 GiB, a libFuzzer OOM that is no bug of ours): the reader's
 * object functions are wrapped so that arrays above MAX_ELEMENTS fail as
 * out of memory, which the reader reports as an error. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/redis_cluster.h"

#define MAX_ELEMENTS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static redisReplyObjectFunctions bounded_fn;
static void *(*default_create_array)(const redisReadTask *, int);

static void *bounded_create_array(const redisReadTask *task, int elements) {
    if (elements < 0 || elements > MAX_ELEMENTS) return NULL;
    return default_create_array(task, elements);
}

static void check_map(const sl__cluster_map *m) {
    if (m->nnodes > SL__CLUSTER_MAX_NODES) abort();
    for (size_t i = 0; i < m->nnodes; i++) {
        const sl__cluster_node *n = &m->nodes[i];
        size_t hl = strnlen(n->host, sizeof n->host);
        if (hl == 0 || hl >= sizeof n->host || n->port == 0) abort();
    }
    for (size_t s = 0; s < SL__CLUSTER_SLOTS; s++)
        if (m->node[s] < -1 || m->node[s] >= (int)m->nnodes) abort();
}

static void check_redirect(const uint8_t *data, size_t size, size_t hostsize) {
    char *copy = malloc(size ? size : 1);
    char *host = malloc(hostsize ? hostsize : 1);
    if (!copy || !host) abort();
    memcpy(copy, data, size);
    unsigned slot = 0;
    uint16_t port = 0;
    int kind = sl__cluster_redirect(copy, size, &slot, host, hostsize, &port);
    if (kind < 0 || kind > 2) abort();
    if (kind) {
        size_t hl = strnlen(host, hostsize);
        if (hl >= hostsize || slot >= SL__CLUSTER_SLOTS || port == 0) abort();
        /* Redis's own spelling of the same redirection parses the same */
        char again[128], host2[SL__CLUSTER_HOST_MAX + 8];
        int n = snprintf(again, sizeof again, "%s %u %s:%u", kind == 1 ? "MOVED" : "ASK", slot,
                         host, (unsigned)port);
        if (n < 0 || (size_t)n >= sizeof again) abort();
        unsigned slot2;
        uint16_t port2;
        if (sl__cluster_redirect(again, (size_t)n, &slot2, host2, sizeof host2, &port2) != kind)
            abort();
        if (slot2 != slot || port2 != port || strcmp(host2, host) != 0) abort();
    }
    free(host);
    free(copy);
}

static void check_keyslot(const uint8_t *data, size_t size) {
    unsigned slot = sl__cluster_keyslot(data, size);
    if (slot >= SL__CLUSTER_SLOTS) abort();
    const uint8_t *open = memchr(data, '{', size);
    if (!open) return;
    size_t s = (size_t)(open - data) + 1;
    const uint8_t *close = memchr(data + s, '}', size - s);
    if (!close || close == data + s) return;
    /* the tag has no '}', so as a key of its own it is hashed whole */
    if (sl__cluster_keyslot(data + s, (size_t)(close - (data + s))) != slot) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static sl__cluster_map *map, *before;
    if (!map) {
        map = malloc(sizeof *map);
        before = malloc(sizeof *before);
        if (!map || !before) abort();
    }
    /* start from a non-trivial map so that "unchanged" means something */
    sl__cluster_map_init(map);
    if (sl__cluster_map_node(map, "127.0.0.1", 9, 7000) != 0) abort();
    for (size_t s = 0; s < SL__CLUSTER_SLOTS; s += 2) map->node[s] = 0;

    redisReader *rd = redisReaderCreate();
    if (!rd) abort();
    if (!default_create_array) {
        bounded_fn = *rd->fn;
        default_create_array = bounded_fn.createArray;
        bounded_fn.createArray = bounded_create_array;
    }
    rd->fn = &bounded_fn;
    /* fed in two pieces, split where the input says, to exercise the reader
     * on partial data as a socket would deliver it */
    size_t cut = size ? data[0] % (size + 1) : 0;
    if (redisReaderFeed(rd, (const char *)data, cut) != REDIS_OK) abort();
    bool fed_all = false;
    for (int replies = 0; replies < 64; replies++) {
        void *reply = NULL;
        if (redisReaderGetReply(rd, &reply) != REDIS_OK) break;
        if (!reply) {
            if (fed_all) break;
            if (redisReaderFeed(rd, (const char *)data + cut, size - cut) != REDIS_OK) abort();
            fed_all = true;
            continue;
        }
        const redisReply *r = reply;
        memcpy(before, map, sizeof *map);
        char err[128];
        err[0] = '\0';
        int fallback = size & 1; /* both ways, by input length */
        int rc = sl__cluster_map_from_slots(map, r, fallback ? "::1" : NULL, err, sizeof err);
        if (rc == 0) {
            check_map(map);
        } else {
            if (rc != -1 || !err[0] || !memchr(err, '\0', sizeof err)) abort();
            if (memcmp(before, map, sizeof *map) != 0) abort();
        }
        if (r->type == REDIS_REPLY_ERROR && r->str)
            check_redirect((const uint8_t *)r->str, r->len, SL__CLUSTER_HOST_MAX);
        freeReplyObject(reply);
    }
    redisReaderFree(rd);

    check_redirect(data, size, size ? (size_t)data[size - 1] % 80 : 0);
    check_keyslot(data, size);
    return 0;
}
