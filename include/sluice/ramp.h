/* sluice/ramp.h: ramp-up after recovery. After an outage every client
 * retries at once, and buckets that start full let all of them burst at the
 * moment the caches are coldest. A ramp scales what a key may take, its
 * burst (or a window's limit) and its rate together, from a fraction `from`
 * of the configured limit up to the whole limit over `duration`, starting
 * at a moment the caller chooses (server start, the store's recovery, an
 * operator's call).
 *
 * The factor, in parts per million (SL_RAMP_ONE = the whole limit), as a
 * function of the ramp's start s and the time t, in integers:
 *
 *     factor(t) = from                                        t <  s
 *     factor(t) = from + floor((ONE - from) * (t - s) / d)    s <= t < s + d
 *     factor(t) = ONE                                         t >= s + d
 *
 * non-decreasing in t, from <= factor <= ONE, exactly ONE from s + d on (a
 * clock before the start gives the lowest factor: it never credits).
 *
 * How a limit is scaled without reinterpreting any key's state: a ramped
 * limit keeps its state in units of 1/SL_RAMP_UNIT of a request
 * (sl_ramp_params: the limit, burst and delay_after times SL_RAMP_UNIT, the
 * period unchanged), and a request of cost c is charged
 *
 *     charge(c) = min(floor(c * UNIT * ONE / factor), C)    when c * UNIT <= L
 *     charge(c) = c * UNIT                                  otherwise (never passes)
 *
 * units (sl_ramp_cost), L being the unit limit's size (burst or limit, in
 * units) and C the most a request is charged: L, or a smaller cap the caller
 * gives (a share of L: one server's local fallback) when c * UNIT fits it. Charging c/factor
 * against the full limit is the same as charging c against a limit scaled by factor, for every
 * algorithm that counts (fixed and sliding window, token bucket, GCRA, leaky queue), and so:
 * - a fresh key admits factor x burst (a window factor x limit) requests of
 *   cost 1 at once, and refills (or a window admits) at factor x rate;
 * - a key that holds more than the scaled burst (its state was filled
 *   before the ramp started) keeps its state: it is read at the ramp's
 *   rate: it admits factor x what it holds, never more than the scaled
 *   burst (a full key of burst 100 at a quarter admits 25, and is empty);
 * - the ramp never lets more through than the limit without it: every
 *   charge is at least c * UNIT, the unramped charge, so the requests a
 *   ramped key admits are a sequence the unramped limit would admit by
 *   itself (over any interval, at most burst + rate x interval);
 * - a request that could pass without the ramp can pass with it (charge is
 *   capped at C): at the lowest factor a lone request may take the whole
 *   limit (or the cap), so "at least one" holds for small limits;
 * - rounding: the charge is rounded down (it stays at least c * UNIT, so
 *   the bound above holds; a key may admit up to 1/UNIT more than factor x
 *   its limit, never more than without the ramp), the limit and remaining
 *   that sl_ramp_decision reports are rounded down.
 * The sliding log stores one time per unit, so it cannot be ramped this way
 * (sl_ramp_params refuses it). All functions are pure and thread-safe. */
#ifndef SLUICE_RAMP_H
#define SLUICE_RAMP_H

#include <stdint.h>

#include "sluice/export.h"
#include "sluice/limit.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_RAMP_ONE          INT64_C(1000000) /* a factor of 1: parts per million */
#define SL_RAMP_UNIT         INT64_C(1000)    /* state units per request of a ramped limit */
#define SL_RAMP_DURATION_MAX (INT64_C(86400) * 1000000000) /* 24 h */

/* A ramp: `from` (parts per million, 1..SL_RAMP_ONE) of the limit at the
 * start, the whole limit `duration` ns later (1 ns..SL_RAMP_DURATION_MAX). */
typedef struct sl_ramp {
    int64_t duration;
    int64_t from;
} sl_ramp;

/* Checks r against the bounds above. Returns 0 or SL_EINVAL. */
SL_API int sl_ramp_validate(const sl_ramp *r);

/* The factor (parts per million) of a ramp started at `start`, at `now`, as
 * the formula above. r must be valid (sl_ramp_validate). */
SL_API int64_t sl_ramp_factor(const sl_ramp *r, int64_t start, int64_t now);

/* The unit parameters of p (limit, burst and delay_after times
 * SL_RAMP_UNIT; algorithm, period, flags and origin as p's) into *out: the
 * limit a table or store keeps a ramped key's state under. Returns 0, or
 * SL_EALGORITHM for the sliding log, or sl_params_validate()'s error of the
 * result (p's limit or burst too large to be counted in units). */
SL_API int sl_ramp_params(const sl_params *p, sl_params *out);

/* The units to charge for a request of `cost` (>= 0) at `factor` to the unit
 * parameters `unit` (from sl_ramp_params): charge(cost) above, with C the
 * cap when 0 < cost * UNIT <= cap, else L (cap 0: no cap); 0 for cost 0,
 * INT64_MAX for a cost whose units overflow (it never passes). */
SL_API int64_t sl_ramp_cost(const sl_params *unit, int64_t cost, int64_t factor, int64_t cap);

/* The size of the ramped limit at `factor` in requests: what a fresh key
 * admits at once (floor(L / charge(1)), at least 1); sl_params_limit(p) at
 * SL_RAMP_ONE, never more. `unit` as for sl_ramp_cost. */
SL_API int64_t sl_ramp_limit(const sl_params *unit, int64_t factor);

/* Turns a decision of the unit limit `unit` (made with a charge from
 * sl_ramp_cost at `factor` and `cap`) into one in requests: limit as sl_ramp_limit
 * (of the decision's own limit in units when it has one: a smaller table
 * standing in for the limit, such as a local fallback's share),
 * remaining the number of cost-1 requests that would pass now
 * (floor(units / charge(1)), at most limit); allowed and the durations
 * (retry_after, reset_after, delay) are kept as they are. */
SL_API void sl_ramp_decision(const sl_params *unit, int64_t factor, int64_t cap, sl_decision *d);

#ifdef __cplusplus
}
#endif

#endif
