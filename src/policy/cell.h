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

#include "policy/decide.h"
#include "sluice/table.h"
#include "store/redis_config.h"

typedef struct sl__cell sl__cell;

/* max_memory: the hard cap of the one table (0 = the table default, 64
 * MiB). Returns 0, SL_EINVAL (a cap too small for one state) or SL_ENOMEM.
 * Free with sl__cell_destroy. */
int sl__cell_create(size_t max_memory, sl__cell **out);
void sl__cell_destroy(sl__cell *c);

/* CL.THROTTLE key max_burst count period quantity, for the decision
 * engine (decide.h), the same for every store. sl__cell_prepare validates
 * the arguments and returns the engine call deciding the key (one any-rate
 * item with this call's parameters and plan; the caller sets done, starts
 * it with sl__engine_decide, and frees it after), with user_bytes for the caller
 * (sl__cell_user), in *call, and returns 0; or a negative SL_E* code
 * (SL_ERATE, SL_EBURST, SL_ECOST, SL_EOVERFLOW, SL_EKEY, SL_ENOMEM) with *call
 * NULL and a redis-cell-compatible message in err[0..errlen) (err may be
 * NULL; SL__CELL_ERR_MAX bytes hold every message), ready for sl__resp_error
 * ("Cell error: Zero rates are not supported", ...). In done,
 * sl__cell_finish gives reply[] = {limited, limit, remaining,
 * retry_after_s, reset_after_s} exactly as redis-cell computes them (seconds
 * rounded as redis-cell does), with the key's state judged by this call's
 * parameters, and returns 0; or a negative SL_E* code with its message.
 * quantity 0 is a peek; a quantity above max_burst + 1 is limited with
 * retry_after -1, as in redis-cell. In Redis the state is one key whatever
 * the parameters ("<prefix>{key}:cell:tat", read by decide.lua with each
 * call's parameters), the memory table its local fallback. */
#define SL__CELL_ERR_MAX 96
struct sl__decide_call;
int sl__cell_prepare(sl__cell *c, const char *key, size_t keylen, int64_t max_burst, int64_t count,
                     int64_t period, int64_t quantity, size_t user_bytes,
                     struct sl__decide_call **call, char *err, size_t errlen);
void *sl__cell_user(struct sl__decide_call *call);
int sl__cell_finish(struct sl__decide_call *call, int64_t reply[5], char *err, size_t errlen);

/* DEL key [key ...] for CL.THROTTLE state (redis-cell's state is a Redis
 * key, so DEL resets it): the engine call forgetting keys[0..n) (n from 1 to
 * SL__CELL_DEL_MAX; each key's bytes copied), with user_bytes for the
 * caller (sl__decide_call_user). The caller sets done, starts it with
 * sl__engine_forget and frees it after; in done, sl__cell_forgotten gives
 * Redis's answer, the number of keys that had state (a key named twice
 * counts once, as in Redis), or a negative SL_E* code with its message in
 * err (as sl__cell_finish; SL_EINVAL when the store was not reached). NULL:
 * out of memory, or n out of range. */
#define SL__CELL_DEL_MAX 16
struct sl__decide_call *sl__cell_forget_prepare(sl__cell *c, const char *const *keys,
                                                const size_t *lens, size_t n, size_t user_bytes);
long long sl__cell_forgotten(struct sl__decide_call *call, char *err, size_t errlen);

/* The Redis store's fail mode for CL.THROTTLE (store.redis.on_failure;
 * the memory table is the local fallback). Call before c is shared. */
void sl__cell_set_fail_mode(sl__cell *c, sl__fail_mode on_failure);

/* Keys held, bytes used (never above the cap) and live keys evicted at the
 * cap (for metrics and INFO). */
void sl__cell_stats(sl__cell *c, uint64_t *keys, uint64_t *bytes, uint64_t *evicted_live);

/* Drops idle keys (back to a full allowance under any parameters):
 * sl_table_sweep(now, max_visits). Returns the number dropped. Never
 * changes a decision. */
size_t sl__cell_sweep(sl__cell *c, int64_t now, size_t max_visits);

#endif
