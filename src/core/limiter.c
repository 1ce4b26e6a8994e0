/* limiter.c: one token bucket with the x/time/rate verbs (see
 * sluice/limiter.h). Tokens are scaled by p (rate = n tokens per p ns,
 * reduced), may go negative while reservations are outstanding (debt), and
 * are refilled exactly. The debt is bounded by time only: paying it back
 * takes at most 100 years at the current rate (so it is kept in 128 bits).
 * Tokens are known at `last` (the latest time seen): a reservation made at
 * an earlier `now` takes what is there and is timed as of `last` (its slot
 * is max(now, last) + debt / rate), so threads with clock readings a little
 * apart never book a slot before its tokens exist. */
#include <pthread.h>
#include <stdlib.h>

#include "core/algorithm.h"
#include "sluice/error.h"
#include "sluice/limiter.h"

#define MAX_SCALED (INT64_C(1) << 61)
#define MAX_WAIT   (INT64_C(100) * 366 * 86400 * SL_NS_PER_SEC)

struct sl_limiter {
    pthread_mutex_t mu;
    sl_rate rate;
    int64_t n, p; /* rate reduced */
    int64_t burst;
    int64_t full;    /* burst * p <= 2^61 */
    sl__i128 tokens; /* scaled by p; negative = debt, >= -MAX_WAIT * n */
    int64_t last;
    int64_t last_event; /* time_to_act of the most recent reservation */
};

static bool bad_time(int64_t t) {
    return t > SL_TIME_MAX || t < 0;
}

static int reduce(sl_rate rate, int64_t burst, int64_t *n, int64_t *p) {
    if (rate.limit <= 0 || rate.period <= 0) return SL_ERATE;
    if (burst <= 0) return SL_EBURST;
    int64_t g = sl__gcd64(rate.limit, rate.period);
    *n = rate.limit / g;
    *p = rate.period / g;
    if (burst > MAX_SCALED / *p) return SL_EOVERFLOW;
    return SL_OK;
}

/* Tokens at now, exact, capped at full; a clock going back adds nothing. */
static sl__i128 advance(const sl_limiter *l, int64_t now) {
    if (now <= l->last || l->tokens >= l->full) return l->tokens;
    sl__i128 t = l->tokens + (sl__i128)(now - l->last) * l->n;
    return t >= l->full ? l->full : t;
}

/* floor(a / b) for b > 0. */
static sl__i128 floor_div128(sl__i128 a, sl__i128 b) {
    sl__i128 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

int sl_limiter_create(sl_rate rate, int64_t burst, unsigned flags, int64_t now, sl_limiter **out) {
    if (!out || (flags & ~SL_START_EMPTY) || bad_time(now)) return SL_EINVAL;
    int64_t n, p;
    int rc = reduce(rate, burst, &n, &p);
    if (rc) return rc;
    sl_limiter *l = calloc(1, sizeof *l);
    if (!l) return SL_ENOMEM;
    pthread_mutex_init(&l->mu, NULL);
    l->rate = rate;
    l->n = n;
    l->p = p;
    l->burst = burst;
    l->full = burst * p;
    l->tokens = (flags & SL_START_EMPTY) ? 0 : l->full;
    l->last = now;
    l->last_event = now;
    *out = l;
    return SL_OK;
}

void sl_limiter_destroy(sl_limiter *l) {
    if (!l) return;
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* The reservation of sl_limiter_reserve and sl_limiter_allow, under the
 * lock. Books n tokens if the slot is at most max_wait after now (max_wait
 * < 0: no bound) or, for allow, if it needs no wait as of `last`. */
static int reserve_locked(sl_limiter *l, int64_t n, int64_t now, int64_t max_wait, bool allow,
                          sl_reservation *out) {
    if (n < 0 || n > l->burst) return SL_ECOST;
    sl__i128 after = advance(l, now) - (sl__i128)n * l->p;
    /* Tokens are known as of `last`: a reading older than that is timed
     * from `last` (the step back is added to the delay), so no slot comes
     * before its tokens exist, nor before one booked from a newer reading. */
    int64_t base = sl__max64(now, l->last);
    int64_t time_to_act = base;
    if (after < 0) {
        sl__i128 w = (-after + l->n - 1) / l->n;
        if (w > MAX_WAIT) return SL_EOVERFLOW;
        time_to_act = base + (int64_t)w;
    }
    if (allow ? time_to_act > base : (max_wait >= 0 && time_to_act - now > max_wait))
        return SL_EDEADLINE;
    l->tokens = after;
    l->last = base;
    l->last_event = time_to_act;
    out->ok = true;
    out->time_to_act = time_to_act;
    out->delay = time_to_act - now;
    out->rate = (sl_rate){l->n, l->p};
    return SL_OK;
}

int sl_limiter_reserve(sl_limiter *l, int64_t n, int64_t now, int64_t max_wait,
                       sl_reservation *out) {
    *out = (sl_reservation){.ok = false, .tokens = n, .time_to_act = now};
    if (bad_time(now)) return SL_EINVAL;
    pthread_mutex_lock(&l->mu);
    int rc = reserve_locked(l, n, now, max_wait, false, out);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

bool sl_limiter_allow(sl_limiter *l, int64_t n, int64_t now) {
    if (n == 0) return true;
    if (bad_time(now)) return false;
    sl_reservation r = {.ok = false};
    pthread_mutex_lock(&l->mu);
    int rc = reserve_locked(l, n, now, 0, true, &r);
    pthread_mutex_unlock(&l->mu);
    return rc == SL_OK && r.ok;
}

void sl_limiter_cancel(sl_limiter *l, sl_reservation *r, int64_t now) {
    if (!r || !r->ok || bad_time(now)) return;
    pthread_mutex_lock(&l->mu);
    r->ok = false;
    int64_t nr = r->rate.limit, pr = r->rate.period;
    if (r->tokens <= 0 || r->time_to_act <= now || nr <= 0 || pr <= 0) {
        pthread_mutex_unlock(&l->mu);
        return;
    }
    /* x/time/rate's rule, at the rate r was booked at: r's tokens minus
     * those the reservations after it count on, (last_event - time_to_act)
     * * rate; last_event is the most recent reservation's slot, which may
     * be before r's after a rate change (then more than r's are restored,
     * at most a full bucket). Scaled by pr here. */
    sl__i128 x = (sl__i128)r->tokens * pr - ((sl__i128)l->last_event - r->time_to_act) * nr;
    if (x > 0) {
        sl__i128 t = advance(l, now);
        sl__i128 room = l->full - t; /* >= 0 */
        /* x * p / pr rounded down (never credit a fraction), capped at room */
        sl__i128 q = x / pr, rem = x % pr;
        sl__i128 add = q > room / l->p ? room : q * l->p + rem * l->p / pr;
        l->tokens = t + (add > room ? room : add);
        l->last = sl__max64(l->last, now);
        if (r->time_to_act == l->last_event) {
            int64_t prev = r->time_to_act - (int64_t)((sl__i128)r->tokens * pr / nr);
            if (prev >= now) l->last_event = prev;
        }
    }
    pthread_mutex_unlock(&l->mu);
}

int sl_limiter_wait(sl_limiter *l, int64_t n, int64_t deadline, const sl_clock *clock) {
    if (!clock) clock = sl_clock_monotonic();
    int64_t now = clock->now(clock->ctx);
    int64_t max_wait = -1;
    if (deadline != SL_NO_DEADLINE) {
        if (deadline < now) return SL_EDEADLINE;
        max_wait = deadline - now;
    }
    sl_reservation r;
    int rc = sl_limiter_reserve(l, n, now, max_wait, &r);
    if (rc) return rc;
    if (r.delay > 0) clock->sleep_until(clock->ctx, r.time_to_act);
    return SL_OK;
}

int sl_limiter_set_rate(sl_limiter *l, sl_rate rate, int64_t now) {
    if (bad_time(now)) return SL_EINVAL;
    pthread_mutex_lock(&l->mu);
    int64_t n, p;
    int rc = reduce(rate, l->burst, &n, &p);
    if (rc == SL_OK) {
        sl__i128 t = advance(l, now);
        /* rescale to the new unit, rounding toward minus infinity, keeping
         * the debt within 100 years at the new rate */
        sl__i128 min = -(sl__i128)MAX_WAIT * n;
        sl__i128 whole = floor_div128(t, l->p), rem = t - whole * l->p;
        sl__i128 q = whole < min / p - 1 ? min : whole * p + rem * p / l->p;
        int64_t full = l->burst * p;
        l->tokens = q > full ? full : (q < min ? min : q);
        l->last = sl__max64(l->last, now);
        l->rate = rate;
        l->n = n;
        l->p = p;
        l->full = full;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int sl_limiter_set_burst(sl_limiter *l, int64_t burst, int64_t now) {
    if (bad_time(now)) return SL_EINVAL;
    pthread_mutex_lock(&l->mu);
    int64_t n, p;
    int rc = reduce(l->rate, burst, &n, &p);
    if (rc == SL_OK) {
        sl__i128 t = advance(l, now);
        l->full = burst * l->p;
        l->tokens = t > l->full ? l->full : t;
        l->last = sl__max64(l->last, now);
        l->burst = burst;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

sl_rate sl_limiter_rate(sl_limiter *l) {
    pthread_mutex_lock(&l->mu);
    sl_rate r = l->rate;
    pthread_mutex_unlock(&l->mu);
    return r;
}

int64_t sl_limiter_burst(sl_limiter *l) {
    pthread_mutex_lock(&l->mu);
    int64_t b = l->burst;
    pthread_mutex_unlock(&l->mu);
    return b;
}

int64_t sl_limiter_tokens(sl_limiter *l, int64_t now) {
    now = sl__max64(0, sl__min64(now, SL_TIME_MAX));
    pthread_mutex_lock(&l->mu);
    sl__i128 t = floor_div128(advance(l, now), l->p);
    pthread_mutex_unlock(&l->mu);
    return t < INT64_MIN ? INT64_MIN : (int64_t)t;
}
