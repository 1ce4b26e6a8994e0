/* resp_args.h: what the RESP command files share (resp_commands.c,
 * resp_check.c): case-insensitive names, Redis's error texts, redis-cell's
 * integers. Static inline: the hot path (SL.CHECK, CL.THROTTLE) calls them
 * once per argument. */
#ifndef SLUICE_SERVER_RESP_ARGS_H
#define SLUICE_SERVER_RESP_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/resp/resp.h"
#include "util/buf.h"

/* Arguments echoed in error messages are cut to this many bytes, as Redis does. */
#define ECHO_MAX 128

static inline unsigned char lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* a[0..n) equals the lower-case ASCII literal s (of length n), ignoring
 * ASCII case. Eight bytes at a time: in each byte of s that is a letter
 * ('a'..'z': the sums below set bit 7 from 'a' up and from '{' up, without
 * carries between ASCII bytes) the byte of a may differ by bit 5 only, so
 * a | (0x20 there) == s is exact: it takes the letter in either case and
 * nothing else; elsewhere the bytes must be equal. */
static inline bool ieq(const char *a, size_t n, const char *s, size_t sn) {
    if (n != sn) return false;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, s + i, 8);
        uint64_t letters = (y + UINT64_C(0x1f1f1f1f1f1f1f1f)) &
                           ~(y + UINT64_C(0x0505050505050505)) & UINT64_C(0x8080808080808080);
        if ((x | letters >> 2) != y) return false;
    }
    for (; i < n; i++)
        if (lower((unsigned char)a[i]) != (unsigned char)s[i]) return false;
    return true;
}

#define IEQ(a, n, lit) ieq((a), (n), (lit), sizeof(lit) - 1)

void sl__resp_errorf(sl__buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline int echo_len(size_t n) {
    return (int)(n < ECHO_MAX ? n : ECHO_MAX);
}

static inline void wrong_args(sl__buf *out, const char *name) {
    sl__resp_errorf(out, "ERR wrong number of arguments for '%s' command", name);
}

/* An integer as Rust's i64::from_str takes it (redis-cell parses its
 * arguments so): an optional sign, then one or more digits, within int64. */
static inline bool parse_i64(const char *s, size_t n, int64_t *out) {
    size_t i = 0;
    bool neg = false;
    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n) return false;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9) return false;
        if (v > (limit - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

#endif
