/* prng.h: sluice's one source of deterministic random numbers: splitmix64
 * (Steele, Lea, Flood 2014), small, fast, good enough for jitter and for the
 * simulator, and the same sequence on every machine for a given seed. Used
 * by libsluice-client (retry jitter) and the `sluice` CLI (sim, traces).
 * Integers only. */
#ifndef SLUICE_CLIENT_PRNG_H
#define SLUICE_CLIENT_PRNG_H

#include <stdint.h>

typedef struct sl__prng {
    uint64_t state;
} sl__prng;

/* Any seed, 0 included, gives a valid sequence. */
void sl__prng_seed(sl__prng *r, uint64_t seed);

/* The next 64 random bits. */
uint64_t sl__prng_next(sl__prng *r);

/* A uniform integer in [0, n] (inclusive, n up to UINT64_MAX), without
 * modulo bias. */
uint64_t sl__prng_upto(sl__prng *r, uint64_t n);

/* A uniform integer in [0, n), without modulo bias; 0 when n <= 0. The same
 * draw as sl__prng_upto(r, n - 1). */
int64_t sl__prng_below(sl__prng *r, int64_t n);

/* A seed from the operating system (getrandom), never 0. */
uint64_t sl__jitter_seed(void);

#endif
