/* cell.h: redis-cell's CL.THROTTLE on libsluice. GCRA with burst
 * max_burst + 1 and rate count/period seconds, and redis-cell's model of
 * state: one theoretical arrival time per key whatever the parameters,
 * judged with the parameters of each call. So every CL.THROTTLE key lives in
 * one keyed table with one memory cap, however many distinct parameter sets
 * clients send, and a key whose limits change on the fly keeps its state.
 * Thread-safe. */
#ifndef SLUICE_POLICY_CELL_H
#define SLUICE_POLICY_CELL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "sluice/table.h"
#include "store/redis_config.h"

typedef struct sl_cell sl_cell;

/* max_memory: the hard cap of the one table (0 = the table default, 64
 * MiB). Returns 0, SL_EINVAL (a cap too small for one state) or SL_ENOMEM.
 * Free with sl__cell_destroy. */
int sl__cell_create(size_t max_memory, sl_cell **out);
void sl__cell_destroy(sl_cell *c);

/* CL.THROTTLE key max_burst count period quantity at now (Unix ns). On
 * success returns 0 and reply[] = {limited, limit, remaining, retry_after_s,
 * reset_after_s} exactly as redis-cell computes them (seconds rounded as
 * redis-cell does), with the key's state judged by this call's parameters.
 * On bad arguments returns -1 with *err a static redis-cell-compatible
 * message, ready for sl__resp_error ("Cell error: Zero rates are not
 * supported", ...). quantity 0 is a peek; a quantity above max_burst + 1 is
 * limited with retry_after -1, as in redis-cell. */
int sl__cell_throttle(sl_cell *c, const char *key, size_t keylen, int64_t max_burst, int64_t count,
                      int64_t period, int64_t quantity, int64_t now, int64_t reply[5],
                      const char **err);

/* CL.THROTTLE decided in the Redis store (store.type: redis): the same
 * validation and reply, the key's state in Redis under one key whatever the
 * parameters ("<prefix>{key}:cell:tat", read by decide.lua with each call's
 * parameters), the memory table as the local fallback. done is called
 * exactly once, maybe before this returns: with the reply, or with err (a
 * reply text as sl__cell_throttle's). */
struct sl_store_worker;
typedef void (*sl_cell_done_fn)(void *arg, const int64_t reply[5], const char *err);
void sl__cell_throttle_store(sl_cell *c, struct sl_store_worker *sw, sl_fail_mode on_failure,
                             const char *key, size_t keylen, int64_t max_burst, int64_t count,
                             int64_t period, int64_t quantity, int64_t now, sl_cell_done_fn done,
                             void *arg);

/* Keys held, bytes used (never above the cap) and live keys evicted at the
 * cap (for metrics and INFO). */
void sl__cell_stats(sl_cell *c, uint64_t *keys, uint64_t *bytes, uint64_t *evicted_live);

/* Drops idle keys (back to a full allowance under any parameters):
 * sl_table_sweep(now, max_visits). Returns the number dropped. Never
 * changes a decision. */
size_t sl__cell_sweep(sl_cell *c, int64_t now, size_t max_visits);

#endif
