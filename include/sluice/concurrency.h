/* sluice/concurrency.h: concurrency limits (in-flight leases). A rate limit
 * counts requests over time; a concurrency limit counts requests that are
 * running now: at most `limit` leases per key are held at once, each taken
 * by an acquire and given back by a release, or dropped by itself when its
 * lease time runs out (a client that crashed mid-request must not hold a
 * slot forever). docs/protection.md says when to use which.
 *
 * The maths. A lease acquired at `now` expires at `now + lease` (renew
 * moves that to max(expires, now' + lease)); it is held while
 * now < expires, and gone from `expires` on. An acquire at `now` passes iff
 * the key holds fewer than `limit` leases at `now`; otherwise it is refused
 * with retry_after = (the earliest expiry among the held leases) - now,
 * which is > 0: the time after which a slot is free even if nobody
 * releases (a release may free one sooner). No floating point, no
 * rounding: every time is an exact nanosecond.
 *
 * Lease ids are 64-bit, never 0, unique per limiter (a bijective mix of a
 * random seed and a counter: no id repeats before 2^64 acquires), so a
 * release or renew with a wrong, stale or repeated id never touches
 * another lease: it is reported as SL_ELEASE. Ids are not secrets: what
 * keeps one client from another's leases is the key.
 *
 * A clock that goes backwards frees nothing early: leases expire only when
 * `now` reaches their expiry.
 *
 * Memory is bounded (max_memory): a key holds at most `limit` leases, and
 * a key's record is freed as soon as it holds none (on release, or when
 * its expired leases are swept: when a full shard needs room, and by
 * sl_concurrency_sweep). Keys are kept in a table of the limiter's own,
 * not in sl_table: a live key may never be evicted (forgetting its leases
 * would let more than `limit` run), and a key's record grows with its
 * leases. When the cap is reached and no key can be swept, an acquire for
 * a new key is refused (SL_ENOMEM, counted in refused_full): fail closed
 * and count, never forget a held lease.
 *
 * Thread-safe: the keys are split over shards, each with its own lock;
 * every call takes one shard's lock for a scan of that key's leases (at
 * most `limit`, SL_CONCURRENCY_MAX). */
#ifndef SLUICE_CONCURRENCY_H
#define SLUICE_CONCURRENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_CONCURRENCY_MAX       65536                         /* most leases per key */
#define SL_CONCURRENCY_LEASE_MAX (INT64_C(86400) * 1000000000) /* a lease is at most 1 day */

typedef struct sl_concurrency sl_concurrency;

typedef struct sl_concurrency_options {
    int64_t limit;     /* leases per key held at once: 1..SL_CONCURRENCY_MAX */
    int64_t lease;     /* ns a lease lives unless renewed: 1..SL_CONCURRENCY_LEASE_MAX */
    size_t max_memory; /* hard cap in bytes for keys, leases and index; 0 = 64 MiB */
    uint64_t seed;     /* hash and lease-id seed; 0 = random */
} sl_concurrency_options;

/* A held lease. */
typedef struct sl_lease {
    uint64_t id;     /* never 0 */
    int64_t expires; /* held while now < expires */
} sl_lease;

/* The answer to an acquire. */
typedef struct sl_acquire {
    bool acquired;
    sl_lease lease;      /* acquired: the new lease; else {0, 0} */
    int64_t limit;       /* the limit now */
    int64_t in_flight;   /* leases the key holds after this call */
    int64_t remaining;   /* limit - in_flight, at least 0 */
    int64_t retry_after; /* refused: ns until the earliest held lease expires (> 0); else 0 */
} sl_acquire;

/* Creates a limiter. Returns 0 and *out (free with sl_concurrency_destroy),
 * or SL_EINVAL (limit or lease out of range, max_memory too small for one
 * key), SL_ENOMEM. */
SL_API int sl_concurrency_create(const sl_concurrency_options *opts, sl_concurrency **out);

/* Frees the limiter and every lease. No call may be running on it. */
SL_API void sl_concurrency_destroy(sl_concurrency *c);

/* Takes a lease for key at now when the key holds fewer than the limit.
 * The key bytes are copied (keylen at most SL_KEY_MAX of sluice/table.h).
 * Returns 0 with *out filled (acquired or refused: out->acquired), or
 * SL_EKEY, SL_EINVAL (now outside 0..SL_TIME_MAX, NULL arguments),
 * SL_ENOMEM (no room for a new key even after sweeping, or an allocation
 * failed: *out says refused, retry_after the time until the earliest lease
 * of the full shard expires, or the lease time if none is known; nothing
 * changed). */
SL_API int sl_concurrency_acquire(sl_concurrency *c, const void *key, size_t keylen, int64_t now,
                                  sl_acquire *out);

/* Gives back lease `id` of key at now. Returns 0 (released: its slot is
 * free from now on), or SL_ELEASE (no such lease held at now: never
 * acquired, already released, or expired; nothing else changes, so
 * releasing twice is harmless), SL_EKEY, SL_EINVAL. in_flight (may be
 * NULL) gets the leases the key holds after the call. */
SL_API int sl_concurrency_release(sl_concurrency *c, const void *key, size_t keylen, uint64_t id,
                                  int64_t now, int64_t *in_flight);

/* Extends lease `id` of key, held at now, to max(expires, now + lease).
 * Returns 0 with *out the lease as extended (may be NULL), or SL_ELEASE
 * (not held at now: an expired lease cannot be revived, its slot may be
 * someone else's), SL_EKEY, SL_EINVAL. */
SL_API int sl_concurrency_renew(sl_concurrency *c, const void *key, size_t keylen, uint64_t id,
                                int64_t now, sl_lease *out);

/* Leases key holds at now (0 for a key never seen), or a negative SL_EKEY /
 * SL_EINVAL. */
SL_API int64_t sl_concurrency_in_flight(sl_concurrency *c, const void *key, size_t keylen,
                                        int64_t now);

/* Changes the limit (1..SL_CONCURRENCY_MAX) or the lease time from now
 * on: leases already held keep their expiry; a key above a lowered limit
 * refuses until enough are released or expire. Returns 0 or SL_EINVAL. */
SL_API int sl_concurrency_set_limit(sl_concurrency *c, int64_t limit);
SL_API int sl_concurrency_set_lease(sl_concurrency *c, int64_t lease);
SL_API int64_t sl_concurrency_limit(const sl_concurrency *c);
SL_API int64_t sl_concurrency_lease(const sl_concurrency *c);

/* Drops every expired lease and frees the keys left with none. Returns the
 * number of keys freed. Never changes a decision. */
SL_API size_t sl_concurrency_sweep(sl_concurrency *c, int64_t now);

typedef struct sl_concurrency_stats {
    uint64_t keys;         /* key records held */
    uint64_t leases;       /* leases recorded (expired ones count until swept) */
    uint64_t bytes;        /* bytes held for keys, leases and index */
    uint64_t max_bytes;    /* the cap */
    uint64_t refused_full; /* acquires refused because the cap was reached */
} sl_concurrency_stats;

/* A snapshot (each shard read under its lock). */
SL_API void sl_concurrency_stats_get(sl_concurrency *c, sl_concurrency_stats *out);

#ifdef __cplusplus
}
#endif
#endif
