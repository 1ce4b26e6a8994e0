/* redis_cluster.h: the Redis Cluster pieces no packaged client gives us
 * (hiredis has none): the key slot (CRC16/XMODEM of the hash tag, mod 16384),
 * the slot map read from CLUSTER SLOTS, and the MOVED / ASK redirections.
 * Written by hand as DESIGN.md section 5 allows. Pure: no sockets. */
#ifndef SLUICE_STORE_REDIS_CLUSTER_H
#define SLUICE_STORE_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL__CLUSTER_SLOTS     16384
#define SL__CLUSTER_MAX_NODES 64
#define SL__CLUSTER_HOST_MAX  64

/* The slot of a key: CRC16 of the part between the first '{' and the next
 * '}' when that part is not empty, else of the whole key (as Redis does). */
unsigned sl__cluster_keyslot(const void *key, size_t len);

typedef struct sl__cluster_node {
    char host[SL__CLUSTER_HOST_MAX];
    uint16_t port;
} sl__cluster_node;

/* Which master serves each slot. node[slot] indexes nodes[]; -1 = unknown. */
typedef struct sl__cluster_map {
    sl__cluster_node nodes[SL__CLUSTER_MAX_NODES];
    size_t nnodes;
    int16_t node[SL__CLUSTER_SLOTS];
} sl__cluster_map;

void sl__cluster_map_init(sl__cluster_map *m); /* no nodes, every slot unknown */

/* Finds (host, port) in m->nodes, adding it if new. Returns its index, or
 * SL_EINVAL when the table is full or the host is too long. */
int sl__cluster_map_node(sl__cluster_map *m, const char *host, size_t hostlen, uint16_t port);

struct redisReply;
/* Fills m from a CLUSTER SLOTS reply (masters only: the first node of each
 * range). An empty host in the reply means "the address you asked":
 * fallback_host is used then. Returns 0, or SL_EINVAL with a message in err when
 * the reply is not the expected shape (m is then unchanged). */
int sl__cluster_map_from_slots(sl__cluster_map *m, const struct redisReply *r,
                               const char *fallback_host, char *err, size_t errlen);

/* Parses a redirection error text: "MOVED <slot> <host>:<port>" or
 * "ASK <slot> <host>:<port>" (the host may be an IPv6 address without
 * brackets, the last ':' separates the port). Returns 1 for MOVED, 2 for ASK,
 * 0 when str is neither (or malformed). */
int sl__cluster_redirect(const char *str, size_t len, unsigned *slot, char *host, size_t hostsize,
                         uint16_t *port);

#endif
