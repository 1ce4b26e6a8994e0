/* hash.h (internal): a fast seeded 64-bit hash for short keys (API keys, IP
 * prefixes). Seeded per table so that nobody can choose colliding keys. */
#ifndef SLUICE_CORE_HASH_H
#define SLUICE_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t sl__hash(const void *key, size_t len, uint64_t seed);

/* A random 64-bit value from the kernel (getrandom), for seeds. */
uint64_t sl__random_seed(void);

#endif
