/* table_any.h (internal): keyed tables whose GCRA states are judged with the
 * rate and burst of each call instead of one fixed limit. This is
 * redis-cell's model for CL.THROTTLE (src/policy/cell.c): one state per key
 * (its theoretical arrival time) whatever the parameters, so any number of
 * parameter sets share one table and one memory cap. Everything else
 * (sharding, the cap, idle and live eviction, stats) is sluice/table.h's. */
#ifndef SLUICE_CORE_TABLE_ANY_H
#define SLUICE_CORE_TABLE_ANY_H

#include "core/algorithm.h"
#include "sluice/table.h"

/* sl_table_create for an any-rate table: opts->params must be SL_GCRA
 * without flags (its rate and burst are only a default; sl_table_check uses
 * them). Returns as sl_table_create. */
int sl__table_create_any_rate(const sl_table_options *opts, sl_table **out);

/* sl_table_check deciding with `plan` (from sl__plan_any_rate, read only
 * during the call) on an any-rate table t. A key's state is kept across
 * calls with different plans: a call with another rate first moves the
 * state's remainder to its own rate, rounded up (at most 1/n ns later, never
 * a credit). Returns as sl_table_check, or SL_EINVAL when t or plan is not
 * any-rate. */
int sl__table_check_with(sl_table *t, const sl__plan *plan, const void *key, size_t keylen,
                         int64_t cost, int64_t now, sl_decision *out);

/* sl_table_check_all with plans[i] (NULL: check i's table's own plan) for
 * check i; a plan other than its table's needs both to be any-rate (else
 * SL_EINVAL with *refused = i). */
int sl__table_check_all_with(sl_check *c, const sl__plan *const *plans, size_t n, int64_t now,
                             size_t *refused);

#endif
