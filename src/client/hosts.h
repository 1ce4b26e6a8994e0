/* hosts.h: what the client remembers per host (scheme, host and port): its
 * AIMD rate and the limiter that paces requests at that rate, and the
 * earliest time the next request may go when the server's RateLimit fields
 * asked to slow down. A small table, least recently used first out. */
#ifndef SLUICE_CLIENT_HOSTS_H
#define SLUICE_CLIENT_HOSTS_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/client.h"
#include "sluice/limiter.h"

#define SL__MAX_HOSTS 256

typedef struct sl__host {
    char *key;          /* "http://example.com:80" */
    sl_limiter *pacer;  /* AIMD: burst 1 at rate/1000 per second; NULL without AIMD */
    int64_t rate;       /* AIMD rate, milli-requests per second; 0 without AIMD */
    int64_t not_before; /* SL_CLIENT_PACE: no request before this time (client's clock) */
    uint64_t used;      /* last use, for eviction */
} sl__host;

typedef struct sl__hosts {
    sl__host v[SL__MAX_HOSTS];
    size_t n;
    uint64_t tick;
} sl__hosts;

/* The host for `key`, created (not_before INT64_MIN, no pacer) when new,
 * evicting the least recently used one when the table is full. NULL when
 * out of memory. create false: NULL when absent. */
sl__host *sl__hosts_get(sl__hosts *h, const char *key, bool create);

void sl__hosts_free(sl__hosts *h);

/* One AIMD step: the rate after an answer with `status`. 429 and 503 cut it
 * (rate * decrease_ppm / 10^6, rounded down, not below floor); 2xx and 3xx
 * raise it by `increase` (not above cap); anything else leaves it. */
int64_t sl__aimd_next(const sl_client_aimd *a, int64_t rate, int status);

#endif
