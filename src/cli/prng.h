/* prng.h: the simulator's deterministic random numbers: splitmix64, seeded
 * by --seed, so the same seed gives the same run on every machine. Integers
 * only (durations are drawn in whole nanoseconds). */
#ifndef SLUICE_CLI_PRNG_H
#define SLUICE_CLI_PRNG_H

#include <stdint.h>

typedef struct prng {
    uint64_t state;
} prng;

void prng_seed(prng *r, uint64_t seed);

/* The next 64 random bits. */
uint64_t prng_next(prng *r);

/* A uniform integer in [0, n] (inclusive), without modulo bias. */
uint64_t prng_upto(prng *r, uint64_t n);

#endif
