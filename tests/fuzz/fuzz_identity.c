/* fuzz_identity.c: libFuzzer target for the identity parsers
 * (src/policy/identity.c) and the request-target normalizer of the rules
 * (src/policy/rules.c): arbitrary bytes as an address, a node, a CIDR block,
 * an X-Forwarded-For or Forwarded header walked through trusted proxies, a
 * request target and an Authorization header. Nothing may crash, read out of
 * bounds or loop, and the answers must be consistent:
 *
 * - an address that parses formats to text that parses to the same address;
 * - a CIDR block contains its own network address and has at most 128 bits;
 * - the walk never takes more than SL__FWD_MAX_HOPS entries, ignores the
 *   header when nothing is trusted, and answers an address it was given
 *   (the peer or one that parses from the header);
 * - a normalized path starts with "/", has no empty, "." or ".." segment,
 *   and is NUL-terminated within its buffer.
 *
 * Input: the first byte picks the trusted set and the header kind, the rest
 * is the text. The seeds are in tests/fuzz/corpus/identity/. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/identity.h"
#include "policy/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_addr(const char *s, size_t n) {
    sl__addr a, b;
    if (sl__addr_parse(s, n, &a) == 0) {
        char text[SL__ADDR_FORMAT_MAX];
        size_t k = sl__addr_format(&a, text);
        if (k >= sizeof text || text[k] != '\0') abort();
        if (sl__addr_parse(text, k, &b) != 0 || memcmp(&a, &b, sizeof a) != 0) abort();
    }
    if (sl__addr_parse_node(s, n, &a) == 0) {
        char text[SL__ADDR_FORMAT_MAX];
        size_t k = sl__addr_format(&a, text);
        if (sl__addr_parse(text, k, &b) != 0 || memcmp(&a, &b, sizeof a) != 0) abort();
    }
    sl__cidr c;
    const char *why = NULL;
    if (sl__cidr_parse(s, n, &c, &why) == 0) {
        if (c.bits > 128) abort();
        if (!sl__cidr_contains(&c, &c.addr)) abort();
        if (sl__cidr_user_bits(&c) > 128) abort();
    } else if (!why) {
        abort();
    }
}

static void check_walk(uint8_t mode, const char *s, size_t n) {
    static sl__cidr trusted[3];
    static bool init;
    if (!init) {
        const char *t[3] = {"10.0.0.0/8", "2001:db8::/32", "127.0.0.1"};
        for (int i = 0; i < 3; i++)
            if (sl__cidr_parse(t[i], strlen(t[i]), &trusted[i], NULL) != 0) abort();
        init = true;
    }
    size_t ntrusted = mode & 3;
    sl__fwd_kind kind = (mode & 4) ? SL__FWD_FORWARDED : SL__FWD_XFF;
    sl__addr peer;
    if (sl__addr_parse("10.1.2.3", 8, &peer) != 0) abort();
    /* the text as one header line, or split in two at a byte the input picks */
    const char *vals[2] = {s, NULL};
    size_t lens[2] = {n, 0}, nv = 1;
    if ((mode & 8) && n > 1) {
        size_t cut = (size_t)(mode >> 4) % n;
        lens[0] = cut;
        vals[1] = s + cut;
        lens[1] = n - cut;
        nv = 2;
    }
    sl__fwd_result r;
    sl__forwarded_client(kind, &peer, trusted, ntrusted, vals, lens, nv, &r);
    if (r.hops > SL__FWD_MAX_HOPS) abort();
    if (ntrusted == 0 && (r.hops || memcmp(&r.client, &peer, sizeof peer) != 0)) abort();
    if (r.hops == 0 && memcmp(&r.client, &peer, sizeof peer) != 0) abort();
}

static void check_path(const char *s, size_t n) {
    char out[256];
    const char *q;
    size_t ql;
    long k = sl__rules_normalize_path(s, n, out, sizeof out, &q, &ql);
    if (k < 0) return;
    if ((size_t)k >= sizeof out || out[k] != '\0' || out[0] != '/') abort();
    if (strstr(out, "//") || strstr(out, "/./") || strstr(out, "/../")) abort();
    if ((k >= 2 && strcmp(out + k - 2, "/.") == 0) || (k >= 3 && strcmp(out + k - 3, "/..") == 0))
        abort();
    if (ql > n || (ql && (q < s || q + ql > s + n))) abort();
    size_t bl;
    const char *b = sl__rules_bearer(s, n, &bl);
    if (b && (b < s || b + bl > s + n || bl == 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    uint8_t mode = data[0];
    /* a copy of exactly the input's bytes: no NUL after them to lean on */
    size_t n = size - 1;
    char *s = malloc(n ? n : 1);
    if (!s) return 0;
    memcpy(s, data + 1, n);
    check_addr(s, n);
    check_walk(mode, s, n);
    check_path(s, n);
    free(s);
    return 0;
}
