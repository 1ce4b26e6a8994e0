/* algorithm.h (internal): the compiled form of sl_params (a "plan") and the
 * interface every algorithm module implements. Pure functions: state in,
 * state out, no I/O, no globals, no floating point.
 *
 * Exactness: a rate limit/period is reduced to n/p (gcd removed). Buckets
 * keep tokens scaled by p (token bucket) or a time plus a remainder in units
 * of 1/n ns (GCRA), so every refill and comparison is an exact integer
 * operation.
 *
 * The hot path avoids 128-bit arithmetic and divisions by the plan's
 * constants: GCRA times are (whole ns, fraction in 1/n ns) pairs, compared
 * lexicographically against B*T = f_whole + f_frac/n, precomputed here
 * (a pair (w, f) with 0 <= f < n is the value w*n + f: the order of pairs is
 * the order of values). Window indexes are found from the stored window by
 * comparison (sl__window_at), the division only when the clock moved two
 * windows or more. Products that may pass 2^63 are taken in 64 bits when
 * __builtin_mul_overflow says they fit, in 128 bits otherwise. */
#ifndef SLUICE_CORE_ALGORITHM_H
#define SLUICE_CORE_ALGORITHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/limit.h"

typedef __int128 sl__i128;

/* On the functions a decision runs through (the keyed table's checks, the
 * sliding log's decide): each starts on a cache line, so that its speed
 * does not move with the size of code linked before it. In bench_decide the
 * peer's identical code ran 15.2 or 13.5 ns per hot decision by where it
 * landed (docs/BENCHMARKS.md, session 21); these measured level or 3 %
 * faster aligned. */
#define SL__HOT __attribute__((aligned(64)))

/* What a decide call may do to the state. */
typedef enum sl__mode {
    SL__APPLY, /* record the request if allowed (or charge it if the plan counts rejections) */
    SL__PEEK,  /* decide only; the state is left as it was */
    SL__CHARGE /* record it as a counted rejection, whatever the decision */
} sl__mode;

typedef struct sl__plan {
    sl_params params;
    int64_t limit;   /* N */
    int64_t period;  /* P, ns */
    int64_t burst;   /* B (buckets) */
    int64_t n, p;    /* N/P reduced: n events per p ns */
    int64_t full;    /* token bucket: B * p, the full bucket in scaled units */
    int64_t t_whole; /* buckets: p / n and p % n, the emission interval of one */
    int64_t t_frac;  /*   request (GCRA's step for a cost of 1, without a division) */
    int64_t f_whole; /* buckets: B*T = full / n and full % n, the most a GCRA */
    int64_t f_frac;  /*   tat may be ahead of now (compared as a pair, no product) */
    int64_t r_whole; /* buckets: (B-1)*T, the most a tat may be ahead of now for a */
    int64_t r_frac;  /*   request of cost 1 to pass (GCRA, without a division) */
    int64_t q_whole; /* leaky queue: delay_after * T as whole ns and 1/n ns */
    int64_t q_frac;
    int64_t w_full1; /* sliding window: P - floor((N - 1) * P / N), when a request of 1
                        passes in the next window after a full one (no division) */
    /* reciprocals (sl__recip) of p and n (buckets) and of P (sliding window),
     * so the answer's divisions by them are multiplications */
    uint64_t p_inv, n_inv, period_inv;
    int64_t max_cost;  /* largest cost that can ever pass (N or B) */
    size_t state_size; /* bytes of one state, multiple of 8 */
    bool start_empty;
    bool count_rejected;
    /* GCRA only (sl__plan_any_rate): the state also records the n its frac is
     * counted in, so one key may be judged with another rate at every call
     * (redis-cell's model: one TAT per key whatever the parameters). */
    bool any_rate;
    int64_t empty_until; /* start_empty: from here on a new state equals a fresh one */
} sl__plan;

/* Validates `params` and fills `plan`. Returns 0 or an SL_E* code. */
int sl__plan_init(sl__plan *plan, const sl_params *params);

/* sl__plan_init for an any-rate GCRA (see sl__plan.any_rate): params must be
 * SL_GCRA without flags (else SL_EINVAL). Its states are 24 bytes, and a
 * table made with one such plan may decide each call with another
 * (sl__table_check_with, core/table_any.h). */
int sl__plan_any_rate(sl__plan *plan, const sl_params *params);

/* Initializes a brand-new state for a key first seen at `now`: fresh, or,
 * with start_empty, exhausted at params.origin. */
void sl__state_init(const sl__plan *plan, void *state, int64_t now);

/* Decides a request of cost (0 <= cost <= max_cost, checked by the caller)
 * at now; fills *d and updates the state according to mode. */
void sl__decide(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                sl_decision *d);

/* An algorithm's test: true if the state is fresh at now (as init would
 * make it: forgetting it changes no later decision, start_empty aside). */
typedef bool sl__fresh_fn(const sl__plan *plan, const void *state, int64_t now);

/* The fresh test of algorithm a (NULL for a value outside the enum). */
sl__fresh_fn *sl__fresh_of(sl_algorithm a);

/* True if forgetting the state cannot change any later decision: fresh at
 * now, and with start_empty also now >= empty_until. fresh is
 * sl__fresh_of(plan's algorithm), looked up once by the caller (the table
 * keeps it: eviction at the cap asks several times per insert). */
static inline bool sl__state_forgettable(const sl__plan *plan, sl__fresh_fn *fresh,
                                         const void *state, int64_t now) {
    if (plan->start_empty && now < plan->empty_until) return false;
    return fresh(plan, state, now);
}

/* A decision in two halves, for a caller that holds a lock over the state
 * (the table, core/table.c): X_step does everything that reads or writes the
 * state and keeps in *o what the answer needs; X_answer then fills *d from
 * *o alone (remaining, retry_after, reset_after and their divisions), after
 * the lock is released. X_decide is exactly X_step then X_answer, with the
 * same arguments (a cost of 0 as sl__decide's caller gives it). The fields'
 * meaning is each algorithm's own. The sliding log has no split: its answer
 * reads the log. */
typedef struct sl__outcome {
    bool allowed;
    int64_t cost, now;
    int64_t a, b, c, d, e, f, g;
    sl__i128 x;
} sl__outcome;

/* Per-algorithm entry points (one module each). */
#define SL__ALGO_DECLARE(name)                                                                     \
    void sl__##name##_init(const sl__plan *plan, void *state, int64_t now);                        \
    void sl__##name##_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,         \
                             sl__mode mode, sl_decision *d);                                       \
    bool sl__##name##_fresh(const sl__plan *plan, const void *state, int64_t now)
#define SL__ALGO_DECLARE_SPLIT(name)                                                               \
    void sl__##name##_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,           \
                           sl__mode mode, sl__outcome *o);                                         \
    void sl__##name##_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d)

SL__ALGO_DECLARE(fixed_window);
SL__ALGO_DECLARE(sliding_log);
SL__ALGO_DECLARE(sliding_window);
SL__ALGO_DECLARE(token_bucket);
SL__ALGO_DECLARE(gcra);
SL__ALGO_DECLARE(leaky_queue);
SL__ALGO_DECLARE_SPLIT(fixed_window);
SL__ALGO_DECLARE_SPLIT(sliding_window);
SL__ALGO_DECLARE_SPLIT(token_bucket);
SL__ALGO_DECLARE_SPLIT(token_bucket_steps); /* a token bucket with SL_STEP_REFILL */
SL__ALGO_DECLARE_SPLIT(gcra);
SL__ALGO_DECLARE_SPLIT(leaky_queue);

/* Small exact helpers shared by the modules. */
static inline int64_t sl__floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
/* Division by a constant d >= 1 as a multiplication by inv = sl__recip(d) =
 * floor((2^64 - 1) / d), exact for every 0 <= x < 2^63:
 *   inv >= ((2^64 - 1) - (d - 1)) / d = 2^64/d - 1 and inv < 2^64/d, so
 *   v = x * inv / 2^64 lies in (x/d - x/2^64, x/d), i.e. in (x/d - 1, x/d):
 *   q = floor(v) is floor(x/d) or one less, and r = x - q*d < 2d tells which.
 * A 64-bit division takes 14-46 cycles on Zen 2 (three of them were a third
 * of a hot token bucket decision there, docs/BENCHMARKS.md); this takes a
 * multiply, a multiply-low and a compare. */
static inline uint64_t sl__recip(int64_t d) { /* d >= 1 */
    // NOLINTNEXTLINE(clang-analyzer-core.DivideZero)
    return UINT64_MAX / (uint64_t)d;
}
static inline int64_t sl__div_by(int64_t x, int64_t d, uint64_t inv) { /* x >= 0: floor(x / d) */
    uint64_t q = (uint64_t)(((unsigned __int128)(uint64_t)x * inv) >> 64);
    q += (uint64_t)x - q * (uint64_t)d >= (uint64_t)d;
    return (int64_t)q;
}
static inline int64_t sl__ceil_div_by(int64_t x, int64_t d, uint64_t inv) { /* x >= 0 */
    int64_t q = sl__div_by(x, d, inv);
    return q + (x != q * d);
}
/* floor(x / p) for x >= 0 and the plan's p (a bucket's remaining): nothing
 * to do below p (an empty bucket, every refusal of a hot key), else by the
 * reciprocal. */
static inline int64_t sl__div_p(const sl__plan *plan, int64_t x) {
    return x < plan->p ? 0 : sl__div_by(x, plan->p, plan->p_inv);
}
/* Divisions of a non-negative 128-bit value by a positive int64: one 64-bit
 * division in the common case (libgcc's 128-bit division costs ~50
 * instructions, a quarter of a decision). */
static inline int64_t sl__ceil_div128(sl__i128 a, int64_t b) { /* a >= 0, b > 0 */
    if (a <= INT64_MAX) {
        int64_t x = (int64_t)a;
        /* b > 0, the callers' contract */
        // NOLINTNEXTLINE(clang-analyzer-core.DivideZero)
        return x / b + (x % b != 0);
    }
    /* b > 0, the callers' contract */
    // NOLINTNEXTLINE(clang-analyzer-core.DivideZero)
    return (int64_t)((a + b - 1) / b);
}
static inline int64_t sl__div128(sl__i128 a, int64_t b) { /* a >= 0, b > 0: floor */
    /* b > 0, the callers' contract */
    // NOLINTNEXTLINE(clang-analyzer-core.DivideZero)
    if (a <= INT64_MAX) return (int64_t)a / b;
    /* b > 0, the callers' contract */
    // NOLINTNEXTLINE(clang-analyzer-core.DivideZero)
    return (int64_t)(a / b);
}
/* The window index of now, floor(now / P), and now's offset in it, for a
 * state that stored window `w0` (w0 * P is a time the state has seen, so it
 * does not overflow): by comparison in the common cases (same window, the
 * next one, a clock that went back: then w0 and elapsed 0, never a credit),
 * one division when the clock moved two windows or more. */
static inline int64_t sl__window_at(int64_t w0, int64_t P, int64_t now, int64_t *elapsed) {
    int64_t start = w0 * P;
    if (now < start) { /* clock went back: stay in the stored (later) window */
        *elapsed = 0;
        return w0;
    }
    int64_t e = now - start; /* >= 0; both are within [-SL_TIME_MAX, SL_TIME_MAX] */
    if (e < P) {
        *elapsed = e;
        return w0;
    }
    if (e - P < P) {
        *elapsed = e - P;
        return w0 + 1;
    }
    int64_t w = sl__floor_div(now, P);
    *elapsed = now - w * P;
    return w;
}
/* a * b for a, b >= 0 when it fits in 64 bits (the common case); false
 * when the caller must take the 128-bit path. */
static inline bool sl__mul64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline int64_t sl__gcd64(int64_t a, int64_t b) { /* a, b > 0 */
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}
static inline int64_t sl__max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}
static inline int64_t sl__min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

#endif
