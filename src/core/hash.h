/* hash.h (internal): a fast seeded 64-bit hash for short keys (API keys, IP
 * prefixes). Seeded per table so that nobody can choose colliding keys.
 *
 * A multiply-mix hash in the style of wyhash (written here, not copied): 16
 * bytes per round, one 64x64->128 multiply per round, full avalanche at the
 * end. Quality matters less than speed and seeding: the table compares whole
 * keys, and the seed is secret. Inline: it is a tenth of a decision. */
#ifndef SLUICE_CORE_HASH_H
#define SLUICE_CORE_HASH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t sl__hash_mix(uint64_t a, uint64_t b) {
    unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t sl__hash_read64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t sl__hash_read32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

#define SL__HASH_K0 0xa0761d6478bd642fULL
#define SL__HASH_K1 0xe7037ed1a0b428dbULL
#define SL__HASH_K2 0x8ebc6af09c88c6e3ULL

static inline uint64_t sl__hash(const void *key, size_t len, uint64_t seed) {
    const uint8_t *p = key;
    uint64_t h = seed ^ SL__HASH_K0;
    uint64_t a, b;
    size_t left = len;
    while (left > 16) {
        h = sl__hash_mix(sl__hash_read64(p) ^ SL__HASH_K1, sl__hash_read64(p + 8) ^ h);
        p += 16;
        left -= 16;
    }
    if (left >= 8) {
        a = sl__hash_read64(p);
        b = sl__hash_read64(p + left - 8);
    } else if (left >= 4) {
        a = sl__hash_read32(p);
        b = sl__hash_read32(p + left - 4);
    } else if (left > 0) {
        a = ((uint64_t)p[0] << 16) | ((uint64_t)p[left >> 1] << 8) | p[left - 1];
        b = 0;
    } else {
        a = b = 0;
    }
    h = sl__hash_mix(a ^ SL__HASH_K1, b ^ h ^ SL__HASH_K2);
    return sl__hash_mix(h ^ SL__HASH_K0, (uint64_t)len ^ SL__HASH_K1);
}

/* splitmix64's finalizer: a bijection of 64-bit values. */
static inline uint64_t sl__mix64(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/* A fresh nonzero id: sl__mix64(n + key) for the next value n of *counter.
 * Distinct counter values give distinct ids (a bijection), so ids do not
 * repeat before the counter wraps; the one value that maps to 0 is skipped.
 * Safe from any thread (the counter is atomic, relaxed: only its values
 * matter). */
static inline uint64_t sl__fresh_id(atomic_uint_fast64_t *counter, uint64_t key) {
    for (;;) {
        uint64_t n = atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
        uint64_t id = sl__mix64(n + key);
        if (id) return id;
    }
}

/* A random 64-bit value from the kernel (getrandom), for seeds. */
uint64_t sl__random_seed(void);

#endif
