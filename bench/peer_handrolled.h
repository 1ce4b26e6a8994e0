/* peer_handrolled.h: the benchmark's peer, a hand-rolled per-client limiter
 * (see peer_handrolled.c for what it stands for). Not part of libsluice. */
#ifndef SLUICE_BENCH_PEER_HANDROLLED_H
#define SLUICE_BENCH_PEER_HANDROLLED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct peer_table peer_table;

/* rate: tokens per second; burst: bucket size (starts full). NULL on ENOMEM. */
peer_table *peer_create(double rate, double burst);
void peer_destroy(peer_table *t);

/* Takes one token for the NUL-terminated `key` at now_ns (monotonic ns).
 * Creates the client's bucket the first time the key is seen. */
bool peer_allow(peer_table *t, const char *key, int64_t now_ns);

/* Keys held. */
size_t peer_count(peer_table *t);

#endif
