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

/* Decides the checks c[0..n) as one all-or-nothing group the way the
 * store contract says (src/store/store.h; the Redis script decides the
 * same), each with plans[i] (as sl__table_check_all_with) at its own time
 * nows[i] (a calendar quota's clock next to the real one). It differs from
 * sl_table_check_all when the group refuses:
 * - a cost that can never pass (above the limit, the burst): that check
 *   (and any other such) is denied (allowed 0, remaining 0, retry_after -1,
 *   reset_after 0), nothing at all is charged (count_rejected neither),
 *   every other check is looked at; returns SL_ECOST, *refused the first
 *   such check;
 * - a look (an allowed check that is not charged) says what its limit has
 *   now: its decision at its cost, remaining with the cost given back;
 * - a count_rejected check is charged as a rejection (as in
 *   sl_table_check_all) and reports the decision of that charge: the state
 *   it is left in, as sl_table_check says for one check alone.
 * Other errors as sl_table_check_all (everything denied, nothing charged). */
int sl__table_check_group(sl_check *c, const sl__plan *const *plans, const int64_t *nows, size_t n,
                          size_t *refused);

#endif
