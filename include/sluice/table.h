/* sluice/table.h: the keyed table. One limit (sl_params), one state per key,
 * safe to use from many threads at once, bounded memory.
 *
 * - Lossless idle eviction: a state that has decayed back to fresh is
 *   dropped (on insert, a little at a time, and by sl_table_sweep()); a key
 *   that comes back gets a fresh state, which decides exactly as the dropped
 *   one would have. No timers per key. A state is only dropped once it was
 *   already fresh `clock_tolerance` before `now`, so this holds as long as no
 *   caller passes a time more than that behind the latest one it passed.
 * - Hard memory cap: when a new key does not fit, an old live state is
 *   evicted (CLOCK, an approximation of least-recently-used: a state used
 *   since the clock hand last passed is spared; slots next to the new key's
 *   own are tried first) and counted in sl_table_stats.evicted_live.
 * - The table is split into independently locked shards by key hash; a hot
 *   key holds only its shard's short lock, never the whole table, and locks
 *   are plain blocking locks (no compare-and-swap retry loops).
 * - Multi-limit checks (sl_table_check_all) are all-or-nothing.
 * - Pages: the 2 MiB pages inside each shard's slot array are advised for
 *   transparent huge pages (madvise(MADV_HUGEPAGE), Linux; an array under
 *   2 MiB has none); it is zeroed whole when allocated, so this adds no
 *   memory. The kernel's own setting (/sys/kernel/mm/transparent_hugepage/
 *   enabled: "never") wins. */
#ifndef SLUICE_TABLE_H
#define SLUICE_TABLE_H

#include "sluice/limit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_table sl_table;

#define SL_KEY_MAX   65535 /* longest key in bytes */
#define SL_CHECK_MAX 16    /* most checks in one sl_table_check_all() */

typedef struct sl_table_options {
    sl_params params;
    size_t max_memory;       /* hard cap in bytes for states, keys and index; 0 = 64 MiB */
    unsigned shards;         /* power of two, 1..1024; 0 = 64 (fewer if max_memory is tiny) */
    uint64_t seed;           /* hash seed; 0 = random (defends against chosen-collision keys) */
    int64_t clock_tolerance; /* ns the callers' `now` may step back (threads reading the clock
                                at different moments); 0 = 1 s. See idle eviction above. */
} sl_table_options;

/* Creates a table. `now` is only used as nothing-before-this for the clock;
 * SL_START_EMPTY uses params.origin. Returns 0 and *out (free with
 * sl_table_destroy), or an sl_params_validate() error, SL_EINVAL (bad
 * options, or max_memory too small to hold one state), SL_ENOMEM. */
SL_API int sl_table_create(const sl_table_options *opts, sl_table **out);

/* Frees the table and every state in it. No call may be running on it. */
SL_API void sl_table_destroy(sl_table *t);

/* The parameters the table was created with. */
SL_API const sl_params *sl_table_params(const sl_table *t);

/* Decides one request of `cost` for `key` at `now` and records it when
 * allowed (or when the table counts rejections). cost 0 is a peek: allowed,
 * nothing recorded (a key the table does not hold is not stored). The key
 * bytes are copied; the caller keeps ownership.
 * Returns 0 with *out filled, or SL_ECOST (negative cost, or a cost that can
 * never pass: out->allowed is false and retry_after is -1), SL_EKEY, SL_EINVAL
 * (now outside 0..SL_TIME_MAX), SL_ENOMEM (no state could be created; *out says
 * not allowed). */
SL_API int sl_table_check(sl_table *t, const void *key, size_t keylen, int64_t cost, int64_t now,
                          sl_decision *out);

/* One item of a multi-limit check. */
typedef struct sl_check {
    sl_table *table;
    const void *key;
    size_t keylen;
    int64_t cost;
    sl_decision decision; /* out: what this limit said */
} sl_check;

/* Decides n checks (possibly on different tables, possibly the same key
 * twice) as one request: it passes only if every check passes, and then all
 * are recorded; if any refuses, nothing is consumed (except by tables that
 * count rejections, which are charged as a rejection). Evaluation is in
 * order. When all pass, each decision says what its limit answered given the
 * checks before it. When one refuses, its decision says why (given the
 * checks before it), and every other decision is what that limit says with
 * nothing consumed. *refused (may be NULL) is the index of the first refusing
 * check, or n.
 * Returns 0, SL_ETOOMANY (n > SL_CHECK_MAX), or a per-check error (with
 * *refused set to its index and nothing consumed). */
SL_API int sl_table_check_all(sl_check *checks, size_t n, int64_t now, size_t *refused);

/* Removes key's state, if the table holds one: the key is back to a full
 * allowance (a reset, as redis-cell's `DEL key`). Returns 1 when a state was
 * removed, 0 when there was none, or SL_EKEY (a key longer than SL_KEY_MAX).
 * Safe with concurrent checks of the same table. */
SL_API int sl_table_forget(sl_table *t, const void *key, size_t keylen);

/* Visits at most `max_visits` slots (spread over the shards) and drops the
 * idle (fresh) states among them. Returns the number dropped. Never changes
 * a decision. */
SL_API size_t sl_table_sweep(sl_table *t, int64_t now, size_t max_visits);

typedef struct sl_table_stats {
    uint64_t keys;         /* states held */
    uint64_t bytes;        /* bytes held for states, keys and index */
    uint64_t max_bytes;    /* the cap */
    uint64_t evicted_idle; /* fresh states dropped (lossless) */
    uint64_t evicted_live; /* live states evicted because the cap was reached */
    uint64_t entry_bytes;  /* bytes of one slot: key (up to 15 bytes inline) and state */
} sl_table_stats;

/* A consistent-enough snapshot (each shard read under its lock). */
SL_API void sl_table_stats_get(sl_table *t, sl_table_stats *out);

#ifdef __cplusplus
}
#endif
#endif
