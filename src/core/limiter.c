/* limiter.c: one token bucket with the x/time/rate verbs (see
 * sluice/limiter.h). Tokens are scaled by p (rate = n tokens per p ns,
 * reduced), may go negative while reservations are outstanding (debt), and
 * are refilled exactly. The debt is bounded so every wait fits 100 years.
 * Tokens are known at `last` (the latest time seen): a reservation made at
 * an earlier `now` takes what is there, and a wait it books counts from
 * `last` (its slot is max(now, last) + debt / rate), so threads with clock
 * readings a little apart never book a slot before its tokens exist. */
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
    int64_t full;   /* burst * p */
    int64_t tokens; /* scaled by p; negative = debt */
    int64_t last;
    int64_t last_event; /* latest time_to_act booked */
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
static int64_t advance(const sl_limiter *l, int64_t now) {
    if (now <= l->last || l->tokens >= l->full) return l->tokens;
    sl__i128 t = (sl__i128)l->tokens + (sl__i128)(now - l->last) * l->n;
    return t >= l->full ? l->full : (int64_t)t;
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

int sl_limiter_reserve(sl_limiter *l, int64_t n, int64_t now, int64_t max_wait,
                       sl_reservation *out) {
    out->ok = false;
    out->tokens = n;
    out->time_to_act = now;
    out->delay = 0;
    if (bad_time(now)) return SL_EINVAL;
    pthread_mutex_lock(&l->mu);
    if (n < 0 || n > l->burst) {
        pthread_mutex_unlock(&l->mu);
        return SL_ECOST;
    }
    sl__i128 after = (sl__i128)advance(l, now) - (sl__i128)n * l->p;
    int64_t wait = 0;
    if (after < 0) {
        /* The debt is paid from `last` on, not from an earlier `now` (a
         * thread whose clock reading is older than another's): counted from
         * now, the slot would come before its tokens exist. */
        sl__i128 w = (-after + l->n - 1) / l->n + (now < l->last ? l->last - now : 0);
        if (after < -MAX_SCALED || w > MAX_WAIT) {
            pthread_mutex_unlock(&l->mu);
            return SL_EOVERFLOW;
        }
        wait = (int64_t)w;
    }
    if (max_wait >= 0 && wait > max_wait) {
        pthread_mutex_unlock(&l->mu);
        return SL_EDEADLINE;
    }
    l->tokens = (int64_t)after;
    l->last = sl__max64(l->last, now);
    l->last_event = sl__max64(l->last_event, now + wait);
    pthread_mutex_unlock(&l->mu);
    out->ok = true;
    out->time_to_act = now + wait;
    out->delay = wait;
    return SL_OK;
}

bool sl_limiter_allow(sl_limiter *l, int64_t n, int64_t now) {
    if (n == 0) return true;
    sl_reservation r;
    return sl_limiter_reserve(l, n, now, 0, &r) == SL_OK && r.ok;
}

void sl_limiter_cancel(sl_limiter *l, sl_reservation *r, int64_t now) {
    if (!r || !r->ok || r->tokens <= 0 || bad_time(now)) return;
    pthread_mutex_lock(&l->mu);
    r->ok = false;
    if (r->time_to_act > now) {
        /* Tokens that reservations made after r already count on stay spent. */
        sl__i128 restore =
            (sl__i128)r->tokens * l->p - (sl__i128)(l->last_event - r->time_to_act) * l->n;
        if (restore > 0) {
            sl__i128 t = (sl__i128)advance(l, now) + restore;
            l->tokens = t > l->full ? l->full : (int64_t)t;
            l->last = sl__max64(l->last, now);
            if (r->time_to_act == l->last_event) {
                int64_t prev = r->time_to_act - (int64_t)((sl__i128)r->tokens * l->p / l->n);
                if (prev >= now) l->last_event = prev;
            }
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
        int64_t t = advance(l, now);
        /* rescale to the new unit, rounding toward minus infinity */
        sl__i128 num = (sl__i128)t * p;
        sl__i128 q = num / l->p;
        if (num % l->p != 0 && num < 0) q--;
        int64_t full = l->burst * p;
        l->tokens = q > full ? full : (q < -MAX_SCALED ? -MAX_SCALED : (int64_t)q);
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
        int64_t t = advance(l, now);
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
    int64_t t = sl__floor_div(advance(l, now), l->p);
    pthread_mutex_unlock(&l->mu);
    return t;
}
