/* identity.h: who a request comes from, as far as the network can tell.
 * IPv4 and IPv6 addresses (one 16-byte form: IPv4 as ::ffff:a.b.c.d), CIDR
 * blocks and sets of them, the prefix a client is counted by (/64 for IPv6
 * by default), and the walk through X-Forwarded-For or RFC 7239 Forwarded
 * that finds the client behind trusted proxies.
 *
 * Every parser here is pure and bounded: it reads at most the bytes it is
 * given, never allocates, and answers "valid" or "not" (tests/fuzz/
 * fuzz_identity.c feeds it arbitrary bytes). docs/identity.md is the user's
 * side of these rules. */
#ifndef SLUICE_POLICY_IDENTITY_H
#define SLUICE_POLICY_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An IP address. IPv4 is kept IPv4-mapped (::ffff:0:0/96), so that one CIDR
 * test covers both families and "::ffff:192.0.2.1" is the same client as
 * "192.0.2.1". */
typedef struct sl__addr {
    uint8_t b[16];
} sl__addr;

/* A CIDR block on the 128-bit form: an IPv4 /8 is stored as /104. */
typedef struct sl__cidr {
    sl__addr addr; /* host bits are zero */
    uint8_t bits;  /* 0..128 */
} sl__cidr;

#define SL__ADDR_TEXT_MAX   64 /* longest text accepted for one address or node */
#define SL__ADDR_FORMAT_MAX 48 /* buffer for sl__addr_format (with a "/bits" suffix) */
#define SL__FWD_MAX_HOPS    32 /* entries kept from the right of a forwarded header */

bool sl__addr_is_v4(const sl__addr *a);

/* A bare address: dotted-quad IPv4 (four decimal parts 0-255, no leading
 * zeros: "010" could mean octal) or IPv6 (RFC 4291 text, "::" once, an
 * embedded IPv4 tail, an optional "%zone" that is ignored). Returns 0, or
 * SL_EPARSE for anything else (including surrounding spaces). */
int sl__addr_parse(const char *s, size_t n, sl__addr *out);

/* A node as proxies write it in X-Forwarded-For: a bare address, or
 * "a.b.c.d:port", "[v6]" or "[v6]:port". Leading and trailing spaces and
 * tabs are ignored. Returns 0 or SL_EPARSE. */
int sl__addr_parse_node(const char *s, size_t n, sl__addr *out);

/* Canonical text (RFC 5952 for IPv6, dotted quad for IPv4) into buf (at
 * least SL__ADDR_FORMAT_MAX bytes), NUL-terminated. Returns the length. */
size_t sl__addr_format(const sl__addr *a, char *buf);

/* "10.0.0.0/8", "2001:db8::/32", or a bare address (a /32 or /128). Returns 0,
 * or SL_EPARSE with a static reason in *why (host bits set, bad prefix length...). */
int sl__cidr_parse(const char *s, size_t n, sl__cidr *out, const char **why);

/* The prefix length as the user wrote it (IPv4 blocks: 0..32). */
unsigned sl__cidr_user_bits(const sl__cidr *c);

bool sl__cidr_contains(const sl__cidr *c, const sl__addr *a);
bool sl__cidr_set_contains(const sl__cidr *set, size_t n, const sl__addr *a);

/* Clears every bit after the first `bits` (0..128). */
void sl__addr_mask(sl__addr *a, unsigned bits);

/* The block a client is counted by: an IPv4 address masked to v4_bits
 * (1..32), an IPv6 address to v6_bits (1..128). *bits gets the prefix
 * length on the 128-bit form. */
void sl__addr_prefix(const sl__addr *a, unsigned v4_bits, unsigned v6_bits, sl__addr *out,
                     unsigned *bits);

/* Which header carries the proxy chain. */
typedef enum sl__fwd_kind {
    SL__FWD_XFF = 0,      /* X-Forwarded-For: 203.0.113.7, 10.0.0.2 */
    SL__FWD_FORWARDED = 1 /* RFC 7239 Forwarded: for=203.0.113.7;proto=https, for="[2001:db8::1]" */
} sl__fwd_kind;

typedef struct sl__fwd_result {
    sl__addr client; /* who the request is counted as */
    unsigned hops;   /* entries taken from the header (0: the peer itself) */
    bool bad_entry;  /* the walk stopped at an entry that is not an address
                        ("unknown", garbage): client is the last trusted hop */
    bool truncated;  /* more than SL__FWD_MAX_HOPS trusted hops: client is the
                        last trusted hop that was kept */
} sl__fwd_result;

/* Finds the client of a request that reached us from `peer`, given the
 * header's field lines in order (values[i], lens[i]; several lines form one
 * list). Walks from the right: while the current address is in `trusted`,
 * the next entry to the left becomes the current address. The first address
 * that is not trusted is the client; a trusted proxy's entries are believed,
 * nothing the client wrote further left ever is. With no trusted CIDRs the
 * header is ignored and the peer is the client. Work is linear in the
 * header's length, with no allocation. */
void sl__forwarded_client(sl__fwd_kind kind, const sl__addr *peer, const sl__cidr *trusted,
                          size_t ntrusted, const char *const *values, const size_t *lens,
                          size_t nvalues, sl__fwd_result *out);

#endif
