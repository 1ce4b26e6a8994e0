/* stats.h: the counters of one worker, written by its loop only (relaxed
 * atomics) and summed by the admin pages (/metrics, INFO). The connection
 * layer counts connections, timeouts and protocol errors; a protocol handler
 * counts through the pointer its request context carries (request.h). */
#ifndef SLUICE_SERVER_STATS_H
#define SLUICE_SERVER_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "server/admin/prom.h"
#include "server/proto.h"
#include "util/counter.h"

typedef struct sl__worker_stats {
    atomic_uint_fast64_t requests[SL__PROTO_COUNT];
    atomic_uint_fast64_t latency[SL__PROTO_COUNT][SL__PROM_LATENCY_BUCKETS + 1];
    atomic_uint_fast64_t latency_sum_ns[SL__PROTO_COUNT];
    atomic_uint_fast64_t accepted, closed, refused_connections;
    atomic_uint_fast64_t protocol_errors, timeouts;
    atomic_uint_fast64_t unknown_keys, missing_keys; /* /v1/auth: API keys refused */
    atomic_uint_fast64_t read_pauses;   /* a connection stopped being read: output over a bound */
    atomic_uint_fast64_t accept_errors; /* accept() failed (no file descriptor left, ...) */
    /* /v1/auth answers held until their release time (server/hold.h): held, then released
       or cancelled (their connection closed); refused at once (hold full, delay past hold:) */
    atomic_uint_fast64_t held, held_released, held_cancelled, held_refused;
} sl__worker_stats;

/* Records n answered requests of protocol p that took ns in all (a
 * pipelined batch is timed once and each of its answers counted at the
 * average). st NULL: nothing (no worker: tests, tools). */
static inline void sl__stats_record(sl__worker_stats *st, sl__proto p, uint64_t n, int64_t ns) {
    if (!st || n == 0) return;
    sl__counter_add(&st->latency[p][sl__prom_latency_bucket(ns / (int64_t)n)], n);
    sl__counter_add(&st->latency_sum_ns[p], (uint64_t)ns);
    sl__counter_add(&st->requests[p], n);
}

#endif
