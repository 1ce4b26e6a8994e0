/* lease_set.h: the running concurrency limits (config: policies with
 * algorithm: concurrency; docs/protection.md). A set is built with each
 * policy set (policy.h) and reuses the limits of the previous one by name,
 * so a reload keeps every lease held (a new limit or lease time applies
 * from the reload on; held leases keep their expiry). And the one way a
 * protocol starts a lease operation: through the decider's store
 * (sl__lease_start), never knowing which store it is. */
#ifndef SLUICE_POLICY_LEASE_SET_H
#define SLUICE_POLICY_LEASE_SET_H

#include <stddef.h>

#include "policy/config.h"
#include "policy/decide.h"
#include "store/lease.h"

typedef struct sl__lease_set sl__lease_set;

/* Builds the set for cfg->leases, reusing the limits of prev (may be NULL)
 * with the same names (their limit, lease and fail mode updated). Each
 * limit's memory is capped at cfg->max_memory; a new adaptive limit's
 * first window starts at now (the workers' clock). Returns 0 and *out (free
 * with sl__lease_set_free), or a negative SL_E* code (SL_ENOMEM, SL_EINVAL)
 * with a message in err. */
int sl__lease_set_create(const sl__config *cfg, const sl__lease_set *prev, int64_t now,
                         sl__lease_set **out, char *err, size_t errlen);
/* Frees s; a limit lives on while another set holds it. NULL is fine. */
void sl__lease_set_free(sl__lease_set *s);

/* The limit named `name` (len bytes), or NULL; lives as long as s. */
sl__lease_limit *sl__lease_set_find(const sl__lease_set *s, const char *name, size_t len);
size_t sl__lease_set_count(const sl__lease_set *s);
sl__lease_limit *sl__lease_set_at(const sl__lease_set *s, size_t i);

/* Starts c (its op, limit, key, id, now, done and arg set by the caller)
 * on d's store (NULL: the memory store); done runs exactly once, maybe
 * before this returns. The caller keeps the set that holds c->limit alive
 * until done (a reference to its policy set). */
void sl__lease_start(sl__decider *d, sl__lease_call *c);
/* In done: counts c's outcome in its limit's counters; a release that
 * says its latency moves an adaptive limit (sluice/adaptive.h). */
void sl__lease_count(const sl__lease_call *c);

/* A lease id as the protocols take it: 1 to 16 hex digits (either case),
 * not 0 (lease ids are never 0). False for anything else. */
bool sl__lease_id_parse(const char *s, size_t n, uint64_t *out);

#endif
