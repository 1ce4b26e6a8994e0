/* units.h: the integer primitives every answer writer shares: a
 * duration in nanoseconds rounded up to a coarser unit (milliseconds in
 * RESP and JSON, seconds in HTTP headers and Envoy's reset, ms timeouts
 * for libuv and curl), and an integer written in decimal by hand (no printf
 * on the hot paths); and a hex number read (lease ids, the module's
 * tags). Header-only, so libsluice-client and the CLI use the
 * same code as the server without linking it. Integers only. */
#ifndef SLUICE_UTIL_UNITS_H
#define SLUICE_UTIL_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ceil(ns / unit) for ns > 0; 0 for ns <= 0 (a negative duration counts as
 * none). unit > 0. Never overflows. */
static inline int64_t sl__ceil_units(int64_t ns, int64_t unit) {
    return ns <= 0 ? 0 : ns / unit + (ns % unit != 0);
}

/* Whole milliseconds and seconds, rounded up (sl__ceil_units). */
static inline int64_t sl__ceil_ms(int64_t ns) {
    return sl__ceil_units(ns, INT64_C(1000000));
}
static inline int64_t sl__ceil_s(int64_t ns) {
    return sl__ceil_units(ns, INT64_C(1000000000));
}

/* The most bytes sl__decimal_u64 / sl__decimal_i64 write ("-" and 19 digits,
 * or 20 digits). No NUL is written. */
#define SL__DECIMAL_MAX 20

/* Writes v in decimal at p (room for SL__DECIMAL_MAX bytes); returns the
 * bytes written. The length first (the bit length's log10 estimate, one
 * compare), then two digits per division from the back: this writes every
 * integer of every answer. */
static inline size_t sl__decimal_u64(char *p, uint64_t v) {
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    static const uint64_t pow10[SL__DECIMAL_MAX] = {
        UINT64_C(1),
        UINT64_C(10),
        UINT64_C(100),
        UINT64_C(1000),
        UINT64_C(10000),
        UINT64_C(100000),
        UINT64_C(1000000),
        UINT64_C(10000000),
        UINT64_C(100000000),
        UINT64_C(1000000000),
        UINT64_C(10000000000),
        UINT64_C(100000000000),
        UINT64_C(1000000000000),
        UINT64_C(10000000000000),
        UINT64_C(100000000000000),
        UINT64_C(1000000000000000),
        UINT64_C(10000000000000000),
        UINT64_C(100000000000000000),
        UINT64_C(1000000000000000000),
        UINT64_C(10000000000000000000),
    };
    /* v has t or t + 1 digits, t = bits * 1233 >> 12 (1233 / 4096 ~ log10 2) */
    unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233u >> 12;
    size_t n = t + 1 - ((v | 1) < pow10[t]); /* v | 1: 0 has one digit */
    char *e = p + n;
    while (v >= 100) {
        uint64_t q = v / 100;
        e -= 2;
        memcpy(e, pairs + 2 * (v - q * 100), 2);
        v = q;
    }
    if (v >= 10)
        memcpy(e - 2, pairs + 2 * v, 2);
    else
        e[-1] = (char)('0' + v);
    return n;
}

/* The same for a signed value (INT64_MIN included). */
static inline size_t sl__decimal_i64(char *p, int64_t v) {
    if (v >= 0) return sl__decimal_u64(p, (uint64_t)v);
    *p = '-';
    return 1 + sl__decimal_u64(p + 1, (uint64_t)0 - (uint64_t)v);
}

/* The hex number of s[0..n) (digits 0-9, a-f, A-F), 1 to 16 of them, into
 * *out: true, or false (out untouched) for no digits, more than 16 or
 * another byte. */
static inline bool sl__hex_u64(const char *s, size_t n, uint64_t *out) {
    if (n < 1 || n > 16) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

#endif
