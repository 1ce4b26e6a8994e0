/* redis_cluster.c: Redis Cluster routing for the Redis store: the key slot
 * (CRC16/XMODEM of the hash tag, mod 16384), the slot -> master map read from
 * a CLUSTER SLOTS reply, and the parsing of MOVED / ASK redirections.
 *
 * Written by hand (DESIGN.md section 5): hiredis 0.14, the packaged client,
 * has no cluster support and no packaged cluster client exists, so the CRC16
 * and the slot routing are here. Pure: no sockets, no allocation that
 * outlives a call, nothing global but a constant table. Everything read from
 * the network is validated before it is used. */
#include "store/redis_cluster.h"

#include "sluice/error.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- key slot ------------------------------------------------------------------ */

/* CRC16/XMODEM (polynomial 0x1021, initial value 0, no reflection, no final
 * xor): the CRC Redis Cluster uses. CRC16("123456789") = 0x31c3. */
static const uint16_t crc16_table[256] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7, 0x8108, 0x9129, 0xa14a, 0xb16b,
    0xc18c, 0xd1ad, 0xe1ce, 0xf1ef, 0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6,
    0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de, 0x2462, 0x3443, 0x0420, 0x1401,
    0x64e6, 0x74c7, 0x44a4, 0x5485, 0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee, 0xf5cf, 0xc5ac, 0xd58d,
    0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695, 0x46b4, 0xb75b, 0xa77a, 0x9719, 0x8738,
    0xf7df, 0xe7fe, 0xd79d, 0xc7bc, 0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b, 0x5af5, 0x4ad4, 0x7ab7, 0x6a96,
    0x1a71, 0x0a50, 0x3a33, 0x2a12, 0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a,
    0x6ca6, 0x7c87, 0x4ce4, 0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41, 0xedae, 0xfd8f, 0xcdec, 0xddcd,
    0xad2a, 0xbd0b, 0x8d68, 0x9d49, 0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70,
    0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78, 0x9188, 0x81a9, 0xb1ca, 0xa1eb,
    0xd10c, 0xc12d, 0xf14e, 0xe16f, 0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e, 0x02b1, 0x1290, 0x22f3, 0x32d2,
    0x4235, 0x5214, 0x6277, 0x7256, 0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d,
    0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405, 0xa7db, 0xb7fa, 0x8799, 0x97b8,
    0xe75f, 0xf77e, 0xc71d, 0xd73c, 0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657, 0x7676, 0x4615, 0x5634,
    0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9, 0xb98a, 0xa9ab, 0x5844, 0x4865, 0x7806, 0x6827,
    0x18c0, 0x08e1, 0x3882, 0x28a3, 0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
    0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92, 0xfd2e, 0xed0f, 0xdd6c, 0xcd4d,
    0xbdaa, 0xad8b, 0x9de8, 0x8dc9, 0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1,
    0xef1f, 0xff3e, 0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8, 0x6e17, 0x7e36, 0x4e55, 0x5e74,
    0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};

static uint16_t crc16(const unsigned char *p, size_t len) {
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
    return crc;
}

unsigned sl__cluster_keyslot(const void *key, size_t len) {
    const unsigned char *k = key;
    /* Redis's keyHashSlot: the first '{', then the first '}' after it; an
     * empty tag ("{}") or a missing '}' means the whole key. */
    const unsigned char *open = len ? memchr(k, '{', len) : NULL;
    if (open) {
        size_t s = (size_t)(open - k) + 1;
        const unsigned char *close = memchr(k + s, '}', len - s);
        if (close && close > k + s) return crc16(k + s, (size_t)(close - (k + s))) & 0x3fff;
    }
    return crc16(k, len) & 0x3fff;
}

/* ---- node table ------------------------------------------------------------------ */

/* A host as Redis announces it: an IPv4 or IPv6 address (IPv6 possibly with a
 * %zone) or a DNS name. Anything else ("?" for an unset hostname, spaces,
 * control bytes, NULs) cannot be connected to and is refused. */
static bool host_char(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
           c == '-' || c == '_' || c == ':' || c == '%';
}

static bool host_ok(const char *host, size_t len) {
    if (len == 0 || len >= SL__CLUSTER_HOST_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!host_char((unsigned char)host[i])) return false;
    return true;
}

void sl__cluster_map_init(sl__cluster_map *m) {
    m->nnodes = 0;
    memset(m->nodes, 0, sizeof m->nodes);
    for (size_t i = 0; i < SL__CLUSTER_SLOTS; i++) m->node[i] = -1;
}

int sl__cluster_map_node(sl__cluster_map *m, const char *host, size_t hostlen, uint16_t port) {
    if (!host || port == 0 || !host_ok(host, hostlen)) return SL_EINVAL;
    for (size_t i = 0; i < m->nnodes; i++) {
        const sl__cluster_node *n = &m->nodes[i];
        if (n->port == port && strlen(n->host) == hostlen && memcmp(n->host, host, hostlen) == 0)
            return (int)i;
    }
    if (m->nnodes >= SL__CLUSTER_MAX_NODES) return SL_EINVAL;
    sl__cluster_node *n = &m->nodes[m->nnodes];
    memcpy(n->host, host, hostlen);
    n->host[hostlen] = '\0';
    n->port = port;
    return (int)m->nnodes++;
}

/* ---- CLUSTER SLOTS ---------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return SL_EINVAL;
}

/* Checks one node of a slot range: [host, port, id?, metadata?, ...].
 * Sets host, hostlen (fallback_host for an empty or nil host) and port.
 * Redis 7 adds a map of other endpoints (an array in RESP2) after the id;
 * later fields are ignored so that a newer server still parses. */
static int check_node(const redisReply *n, const char *fallback_host, const char **host,
                      size_t *hostlen, uint16_t *port, char *err, size_t errlen, size_t range,
                      size_t which) {
    if (!n || n->type != REDIS_REPLY_ARRAY || n->elements < 2 || !n->element)
        return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu is not an array [host, port]",
                    range, which);
    const redisReply *h = n->element[0], *p = n->element[1];
    if (!h || !p)
        return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu is incomplete", range, which);
    if (h->type == REDIS_REPLY_NIL || (h->type == REDIS_REPLY_STRING && h->len == 0)) {
        /* "the address you asked" (unknown endpoint, or a node that does not
         * know its own address yet) */
        if (!fallback_host || !fallback_host[0])
            return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu has no host", range, which);
        *host = fallback_host;
        *hostlen = strlen(fallback_host);
    } else if (h->type == REDIS_REPLY_STRING && h->str) {
        *host = h->str;
        *hostlen = h->len;
    } else {
        return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu host is not a string", range,
                    which);
    }
    if (!host_ok(*host, *hostlen))
        return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu has a bad host", range, which);
    if (p->type != REDIS_REPLY_INTEGER || p->integer < 1 || p->integer > 65535)
        return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu has a bad port", range, which);
    *port = (uint16_t)p->integer;
    if (n->elements >= 3) {
        const redisReply *id = n->element[2];
        if (!id || id->type != REDIS_REPLY_STRING)
            return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu id is not a string", range,
                        which);
    }
    for (size_t i = 3; i < n->elements; i++)
        if (!n->element[i])
            return fail(err, errlen, "CLUSTER SLOTS: range %zu node %zu is incomplete", range,
                        which);
    return 0;
}

/* Fills t (already initialised) from r; returns 0 or -1 with err set. */
static int fill_map(sl__cluster_map *t, const redisReply *r, const char *fallback_host, char *err,
                    size_t errlen) {
    if (!r) return fail(err, errlen, "CLUSTER SLOTS: no reply");
    if (r->type == REDIS_REPLY_ERROR)
        return fail(err, errlen, "CLUSTER SLOTS: %.*s",
                    r->str ? (int)(r->len > 200 ? 200 : r->len) : 0, r->str ? r->str : "");
    if (r->type != REDIS_REPLY_ARRAY)
        return fail(err, errlen, "CLUSTER SLOTS: reply is not an array");
    if (r->elements && !r->element) return fail(err, errlen, "CLUSTER SLOTS: reply is incomplete");
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 3 || !e->element)
            return fail(err, errlen, "CLUSTER SLOTS: range %zu is not [start, end, master, ...]",
                        i);
        const redisReply *s = e->element[0], *en = e->element[1];
        if (!s || !en || s->type != REDIS_REPLY_INTEGER || en->type != REDIS_REPLY_INTEGER)
            return fail(err, errlen, "CLUSTER SLOTS: range %zu bounds are not integers", i);
        if (s->integer < 0 || en->integer < s->integer || en->integer >= SL__CLUSTER_SLOTS)
            return fail(err, errlen, "CLUSTER SLOTS: range %zu is %lld-%lld, not within 0-%d", i,
                        s->integer, en->integer, SL__CLUSTER_SLOTS - 1);
        /* every node (master first, then its replicas) must be well-formed;
         * only the master is routed to */
        int idx = -1;
        for (size_t j = 2; j < e->elements; j++) {
            const char *host = NULL;
            size_t hostlen = 0;
            uint16_t port = 0;
            if (check_node(e->element[j], fallback_host, &host, &hostlen, &port, err, errlen, i,
                           j - 2) != 0)
                return SL_EINVAL;
            if (j == 2 && (idx = sl__cluster_map_node(t, host, hostlen, port)) < 0)
                return fail(err, errlen, "CLUSTER SLOTS: more than %d masters",
                            SL__CLUSTER_MAX_NODES);
        }
        for (long long slot = s->integer; slot <= en->integer; slot++) {
            if (t->node[slot] != -1)
                return fail(err, errlen, "CLUSTER SLOTS: slot %lld is in two ranges", slot);
            t->node[slot] = (int16_t)idx;
        }
    }
    return 0;
}

int sl__cluster_map_from_slots(sl__cluster_map *m, const struct redisReply *r,
                               const char *fallback_host, char *err, size_t errlen) {
    /* built aside and copied on success, so that m is unchanged on error */
    sl__cluster_map *t = malloc(sizeof *t);
    if (!t) return fail(err, errlen, "CLUSTER SLOTS: out of memory");
    sl__cluster_map_init(t);
    int rc = fill_map(t, r, fallback_host, err, errlen);
    if (rc == 0) memcpy(m, t, sizeof *t);
    free(t);
    return rc;
}

/* ---- MOVED / ASK --------------------------------------------------------------------- */

/* Reads 1..maxdigits decimal digits at s[*i..len) into *v. */
static bool read_uint(const char *s, size_t len, size_t *i, size_t maxdigits, unsigned long *v) {
    size_t start = *i;
    unsigned long x = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
        if (*i - start >= maxdigits) return false;
        x = x * 10 + (unsigned long)(s[*i] - '0');
        (*i)++;
    }
    if (*i == start) return false;
    *v = x;
    return true;
}

int sl__cluster_redirect(const char *str, size_t len, unsigned *slot, char *host, size_t hostsize,
                         uint16_t *port) {
    if (!str || !host || hostsize == 0) return 0;
    int kind;
    size_t i;
    if (len > 6 && memcmp(str, "MOVED ", 6) == 0) {
        kind = 1;
        i = 6;
    } else if (len > 4 && memcmp(str, "ASK ", 4) == 0) {
        kind = 2;
        i = 4;
    } else {
        return 0;
    }
    unsigned long s;
    if (!read_uint(str, len, &i, 5, &s) || s >= SL__CLUSTER_SLOTS) return 0;
    if (i >= len || str[i] != ' ') return 0;
    i++;
    /* the rest is "<host>:<port>"; the last ':' separates the port so that an
     * IPv6 host needs no brackets (but may have them) */
    const char *rest = str + i, *colon = NULL;
    size_t restlen = len - i;
    for (size_t k = restlen; k > 0; k--)
        if (rest[k - 1] == ':') {
            colon = rest + k - 1;
            break;
        }
    if (!colon) return 0;
    size_t pi = (size_t)(colon - str) + 1;
    unsigned long p;
    if (!read_uint(str, len, &pi, 5, &p) || pi != len || p < 1 || p > 65535) return 0;
    const char *h = rest;
    size_t hl = (size_t)(colon - rest);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
        if (hl == 0) return 0;
    }
    /* An empty host (Redis 7's "unknown-endpoint": the node you asked) is
     * refused like any other host one cannot connect to: the header promises
     * a usable host, and the caller has no address to substitute here. */
    if (hl >= hostsize || !host_ok(h, hl)) return 0;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (slot) *slot = (unsigned)s;
    if (port) *port = (uint16_t)p;
    return kind;
}
