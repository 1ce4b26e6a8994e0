/* cell.h: redis-cell's CL.THROTTLE on libsluice. GCRA with burst
 * max_burst + 1 and rate count/period seconds; one keyed table per distinct
 * (max_burst, count, period), at most max_sets of them, each capped at
 * max_memory_per_set bytes. Thread-safe. */
#ifndef SLUICE_SERVER_CELL_H
#define SLUICE_SERVER_CELL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "sluice/table.h"

typedef struct sl_cell sl_cell;

/* max_memory_per_set 0 = the table default (64 MiB); max_sets 0 = 1024 (at
 * most 2^20). Returns 0, SL_EINVAL or SL_ENOMEM. Free with sl__cell_destroy. */
int sl__cell_create(size_t max_memory_per_set, unsigned max_sets, sl_cell **out);
void sl__cell_destroy(sl_cell *c);

/* CL.THROTTLE key max_burst count period quantity at now (Unix ns). On
 * success returns 0 and reply[] = {limited, limit, remaining, retry_after_s,
 * reset_after_s} exactly as redis-cell computes them (seconds rounded as
 * redis-cell does). On bad arguments returns -1 with *err a static
 * redis-cell-compatible message, ready for sl__resp_error ("Cell error: Zero
 * rates are not supported", "ERR too many distinct CL.THROTTLE parameter
 * sets", ...). quantity 0 is a peek; a quantity above max_burst + 1 is
 * limited with retry_after -1, as in redis-cell. */
int sl__cell_throttle(sl_cell *c, const char *key, size_t keylen, int64_t max_burst, int64_t count,
                      int64_t period, int64_t quantity, int64_t now, int64_t reply[5],
                      const char **err);

/* Keys held and bytes used over all sets (for metrics and INFO). */
/* The two halves of sl__cell_throttle, for decisions made elsewhere (the
 * Redis store): the parameter set's table (created on first use; *params
 * gets its GCRA parameters when not NULL), or NULL with *err; and the reply
 * for a decision (never: the quantity can never pass). */
sl_table *sl__cell_table(sl_cell *c, int64_t max_burst, int64_t count, int64_t period,
                         int64_t quantity, sl_params *params, const char **err);
void sl__cell_reply(int64_t max_burst, const sl_decision *d, bool never, int64_t reply[5]);

void sl__cell_stats(sl_cell *c, uint64_t *keys, uint64_t *bytes, uint64_t *evicted_live);

/* Distinct parameter sets created so far. */
unsigned sl__cell_sets(sl_cell *c);

/* Drops idle (fresh) keys: sl_table_sweep(now, max_visits) on every set.
 * Returns the number dropped. Never changes a decision. */
size_t sl__cell_sweep(sl_cell *c, int64_t now, size_t max_visits);

#endif
