/* policy.h: the running policies. A policy set is built from a config; a
 * reload builds a new set that reuses the policy objects (and so the table
 * state) of every policy whose parameters did not change. Sets and policies
 * are reference counted so a worker can finish a request on the old set
 * while a reload swaps in the new one. */
#ifndef SLUICE_POLICY_POLICY_H
#define SLUICE_POLICY_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/topk.h"
#include "policy/config.h"
#include "sluice/table.h"

typedef struct sl_policy {
    sl_policy_config cfg;
    sl_table *table;
    sl__topk *top; /* heavy hitters among rejected keys */
    atomic_uint_fast64_t allowed, limited, shadow_limited;
    atomic_bool shadow; /* cfg.shadow as of the latest reload (may change without a new table) */
    atomic_int refs;
} sl_policy;

typedef struct sl_policy_set sl_policy_set;

/* Builds the set for cfg; reuses policies of `prev` (may be NULL) with the
 * same name and parameters. New tables of `start: empty` policies start
 * empty at `now`. Returns 0, or -1 with a message in err. */
int sl__policy_set_create(const sl_config *cfg, sl_policy_set *prev, int64_t now,
                          sl_policy_set **out, char *err, size_t errlen);
void sl__policy_set_retain(sl_policy_set *s);
void sl__policy_set_release(sl_policy_set *s);

size_t sl__policy_set_count(const sl_policy_set *s);
sl_policy *sl__policy_set_at(const sl_policy_set *s, size_t i);
sl_policy *sl__policy_find(const sl_policy_set *s, const char *name, size_t len);

/* Decides one request: the table's decision, then shadow mode (a limited
 * request of a shadow policy is allowed and *shadowed set), outcome counters
 * and the rejected-keys sketch. Returns sl_table_check's code. */
int sl__policy_check(sl_policy *p, const char *key, size_t keylen, int64_t cost, int64_t now,
                     sl_decision *d, bool *shadowed);

#endif
