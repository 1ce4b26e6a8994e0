/* hash.c: a multiply-mix hash in the style of wyhash (written here, not
 * copied): 16 bytes per round, one 64x64->128 multiply per round, full
 * avalanche at the end. Quality matters less than speed and seeding: the
 * table compares whole keys, and the seed is secret. */
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/hash.h"

static inline uint64_t mix(uint64_t a, uint64_t b) {
    unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t read64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t read32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

#define K0 0xa0761d6478bd642fULL
#define K1 0xe7037ed1a0b428dbULL
#define K2 0x8ebc6af09c88c6e3ULL

uint64_t sl__hash(const void *key, size_t len, uint64_t seed) {
    const uint8_t *p = key;
    uint64_t h = seed ^ K0;
    uint64_t a, b;
    size_t left = len;
    while (left > 16) {
        h = mix(read64(p) ^ K1, read64(p + 8) ^ h);
        p += 16;
        left -= 16;
    }
    if (left >= 8) {
        a = read64(p);
        b = read64(p + left - 8);
    } else if (left >= 4) {
        a = read32(p);
        b = read32(p + left - 4);
    } else if (left > 0) {
        a = ((uint64_t)p[0] << 16) | ((uint64_t)p[left >> 1] << 8) | p[left - 1];
        b = 0;
    } else {
        a = b = 0;
    }
    h = mix(a ^ K1, b ^ h ^ K2);
    return mix(h ^ K0, (uint64_t)len ^ K1);
}

uint64_t sl__random_seed(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) {
        struct timespec ts; /* no entropy source: still differs per process */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = mix((uint64_t)ts.tv_nsec ^ K2, (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&s);
    }
    return s | 1;
}
