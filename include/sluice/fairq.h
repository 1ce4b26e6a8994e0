/* sluice/fairq.h: a weighted fair queue across tenants (seed section 11,
 * "make queueing fair, not just admission"). Each tenant (a byte string,
 * as a table key) has its own FIFO queue; the queues are served by deficit
 * round robin (Shreedhar and Varghese, 1995), so a tenant that dumps 10,000
 * jobs only delays its own jobs and a small tenant's single job is served
 * in the next round.
 *
 * Deficit round robin. The tenants with items form a ring in the order
 * they became backlogged (a newcomer joins at the end). A visit to the
 * tenant at the head of the ring credits its deficit with
 *
 *     credit(i) = weight(i) x quantum
 *
 * then serves its items, oldest first, while the oldest one's cost is at
 * most the deficit (each served item takes its cost off the deficit). The
 * visit ends when the oldest item costs more than the deficit is worth (the
 * tenant goes to the end of the ring and keeps the rest of its deficit,
 * less than one item's cost) or when the tenant's queue is empty (it leaves
 * the ring and its deficit is reset to 0: an idle tenant saves no credit).
 * A round is one visit to every tenant in the ring.
 *
 * Fairness guarantee. Let M be the largest item cost (options.max_cost) and
 * Q the quantum. After every visit a tenant's deficit lies in [0, M), so k
 * consecutive visits to tenant i serve it S with
 *
 *     k w_i Q - M  <  S  <  k w_i Q + M.
 *
 * So over k rounds in which tenant i stays backlogged it is served more than
 * k w_i Q - M, its weight's worth of every round minus one largest item,
 * however much the others queue, and no tenant is served more than
 * k w_j Q + M in k rounds.
 *
 * While tenants i and j both stay backlogged, their visits alternate. Hence
 * over any stretch of pops during which both stay backlogged (and their
 * weights do not change), the service (sum of costs) they get satisfies
 *
 *     S_i / w_i  >=  S_j / w_j - (Q + M / w_i + M / w_j)
 *
 * i.e. each gets at least its weight share of what the other gets, minus
 * one quantum and one largest item of each: a backlogged tenant is never
 * more than a round and an item behind its share, however much anyone else
 * queues. test_fairq checks this inequality on random traces.
 *
 * Cost of a pop. With quantum >= max_cost (the default, quantum 0) every
 * visit serves at least one item, so a pop is O(1): it finishes the head's
 * visit or starts the next one. With a smaller quantum a visit may serve
 * nothing; after one whole round that served nothing, the rounds nobody
 * could use are skipped at once (every deficit credited r - 1 rounds, r the
 * fewest visits any tenant needs), so a pop costs at most about two passes
 * over the ring, and the order is exactly the visit-by-visit one. Push,
 * remove and the counts are O(1), amortized over the growth of the arrays
 * (one hash lookup of the tenant).
 *
 * Bounds. Nothing grows without a bound: at most max_items items in all,
 * max_per_tenant per tenant, and max_tenants known tenants (a tenant is
 * known while it has items or a weight other than 1). A push beyond any of
 * them is refused (SL_ETOOMANY) and changes nothing. Memory grows with use,
 * in doubling steps, up to these bounds; it is not shrunk, and is given back
 * at destroy.
 *
 * No clock: the queue orders items, the caller decides when to pop (a
 * worker that is free, a release time that has come). Thread-safe: one lock
 * per queue, held for one operation. */
#ifndef SLUICE_FAIRQ_H
#define SLUICE_FAIRQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_FAIRQ_WEIGHT_MAX  (1u << 20)          /* largest tenant weight */
#define SL_FAIRQ_QUANTUM_MAX (INT64_C(1) << 40)  /* largest quantum */
#define SL_FAIRQ_COST_MAX    (INT64_C(1) << 61)  /* largest max_cost */
#define SL_FAIRQ_ITEMS_MAX   (UINT32_C(1) << 31) /* largest max_items and max_tenants */

typedef struct sl_fairq_options {
    size_t max_items;      /* items held in all, 1..SL_FAIRQ_ITEMS_MAX */
    size_t max_tenants;    /* known tenants, 1..SL_FAIRQ_ITEMS_MAX */
    size_t max_per_tenant; /* items one tenant may hold; 0: max_items */
    int64_t max_cost;      /* largest cost of one item, 1..SL_FAIRQ_COST_MAX; 0: 1 */
    int64_t quantum;       /* credit per round per unit of weight, 1..SL_FAIRQ_QUANTUM_MAX;
                              0: max_cost (capped at SL_FAIRQ_QUANTUM_MAX) */
} sl_fairq_options;

typedef struct sl_fairq sl_fairq;

/* Creates an empty queue. Returns 0 and *out (free with sl_fairq_destroy),
 * SL_EINVAL (a bound out of range, max_per_tenant above max_items), or
 * SL_ENOMEM. */
SL_API int sl_fairq_create(const sl_fairq_options *o, sl_fairq **out);

/* Frees the queue and every item still in it; the items' pointers are the
 * caller's and are not touched. */
SL_API void sl_fairq_destroy(sl_fairq *q);

/* Sets a tenant's weight (its plan), 1..SL_FAIRQ_WEIGHT_MAX; unknown
 * tenants weigh 1. A backlogged tenant's new weight counts from its next
 * visit. Weight 1 on a tenant without items forgets it. Returns 0, SL_EINVAL
 * (weight out of range), SL_EKEY (tenant longer than SL_KEY_MAX bytes),
 * SL_ETOOMANY (a new tenant beyond max_tenants), SL_ENOMEM. The tenant bytes
 * are copied. */
SL_API int sl_fairq_set_weight(sl_fairq *q, const char *tenant, size_t len, uint32_t weight);

/* The tenant's weight (1 when unknown). */
SL_API uint32_t sl_fairq_weight(sl_fairq *q, const char *tenant, size_t len);

/* Appends an item of `cost` (0..max_cost) to the tenant's queue. `ptr` is
 * the caller's, given back by sl_fairq_pop; the queue never reads it. On
 * success *id (if id is not NULL) names the item for sl_fairq_remove until
 * it is popped or removed; ids are never 0. Returns 0, SL_ECOST (cost out of
 * range), SL_EKEY, SL_ETOOMANY (max_items, max_per_tenant or max_tenants
 * reached: nothing changed), SL_ENOMEM (nothing changed). */
SL_API int sl_fairq_push(sl_fairq *q, const char *tenant, size_t len, int64_t cost, void *ptr,
                         uint64_t *id);

/* What sl_fairq_pop hands back. */
typedef struct sl_fairq_item {
    void *ptr;    /* as pushed */
    int64_t cost; /* as pushed */
    uint64_t id;  /* as push returned it; no longer valid */
} sl_fairq_item;

/* Takes the next item in deficit round robin order. Returns true with *out
 * filled, or false (*out zeroed) when the queue is empty. */
SL_API bool sl_fairq_pop(sl_fairq *q, sl_fairq_item *out);

/* Cancels an item still queued (its client went away). Its tenant's
 * deficit is kept unless the queue of the tenant is now empty (then it
 * leaves the ring, as after a pop). Returns 0 with *ptr (if not NULL) set to
 * the item's pointer, or SL_EINVAL: no such item (already popped or removed,
 * or never pushed). */
SL_API int sl_fairq_remove(sl_fairq *q, uint64_t id, void **ptr);

typedef struct sl_fairq_counts {
    size_t items;      /* items queued */
    size_t backlogged; /* tenants with items (the ring) */
    size_t tenants;    /* known tenants: backlogged, or idle with a weight other than 1 */
} sl_fairq_counts;

SL_API void sl_fairq_counts_get(sl_fairq *q, sl_fairq_counts *out);

/* Items the tenant has queued (0 when unknown). */
SL_API size_t sl_fairq_tenant_items(sl_fairq *q, const char *tenant, size_t len);

#ifdef __cplusplus
}
#endif
#endif
