/* adaptive.c: the adaptive concurrency limit (see sluice/adaptive.h for
 * the maths). One lock, a few integers per window; no floating point. */
#include <pthread.h>
#include <stdlib.h>

#include "core/algorithm.h"
#include "sluice/adaptive.h"
#include "sluice/concurrency.h"
#include "sluice/error.h"
#include "sluice/limit.h"

#define DEFAULT_WINDOW    SL_NS_PER_SEC
#define DEFAULT_MIN_RTT_W (60 * SL_NS_PER_SEC)
#define DEFAULT_TOLERANCE 150u
#define MAX_WINDOW        (INT64_C(3600) * SL_NS_PER_SEC)

struct sl_adaptive {
    pthread_mutex_t mu;
    int64_t limit, min_limit, max_limit;
    int64_t window, min_rtt_window;
    unsigned tol;
    int64_t win_start; /* the current window: [win_start, win_start + window) */
    sl__i128 win_sum;
    int64_t win_count, win_min;
    int64_t min_rtt, min_rtt_start; /* 0: none yet */
};

static bool bad_time(int64_t t) {
    return t < 0 || t > SL_TIME_MAX;
}

int sl_adaptive_create(const sl_adaptive_options *o, int64_t now, sl_adaptive **out) {
    if (!o || !out || bad_time(now)) return SL_EINVAL;
    int64_t window = o->window ? o->window : DEFAULT_WINDOW;
    int64_t mw = o->min_rtt_window ? o->min_rtt_window : DEFAULT_MIN_RTT_W;
    unsigned tol = o->tolerance_pct ? o->tolerance_pct : DEFAULT_TOLERANCE;
    int64_t init = o->initial_limit ? o->initial_limit : o->min_limit;
    if (o->min_limit < 1 || o->max_limit < o->min_limit || o->max_limit > SL_CONCURRENCY_MAX ||
        init < o->min_limit || init > o->max_limit || window < SL_NS_PER_MS ||
        window > MAX_WINDOW || mw < window || mw > SL_TIME_MAX || tol < 100 || tol > 1000)
        return SL_EINVAL;
    sl_adaptive *a = calloc(1, sizeof *a);
    if (!a) return SL_ENOMEM;
    pthread_mutex_init(&a->mu, NULL);
    a->limit = init;
    a->min_limit = o->min_limit;
    a->max_limit = o->max_limit;
    a->window = window;
    a->min_rtt_window = mw;
    a->tol = tol;
    a->win_start = now;
    a->win_min = INT64_MAX;
    *out = a;
    return SL_OK;
}

void sl_adaptive_destroy(sl_adaptive *a) {
    if (!a) return;
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static int64_t isqrt(int64_t n) {
    if (n < 2) return n;
    int64_t x = n, y = (x + 1) / 2;
    while (y < x) {
        x = y;
        y = (x + n / x) / 2;
    }
    return x;
}

/* The window [win_start, win_start + window) ended: recompute the limit
 * from its samples. */
static void end_window(sl_adaptive *a) {
    if (a->win_count == 0) return;
    if (a->min_rtt == 0 || a->win_start - a->min_rtt_start >= a->min_rtt_window) {
        a->min_rtt = a->win_min;
        a->min_rtt_start = a->win_start;
    } else if (a->win_min < a->min_rtt) {
        a->min_rtt = a->win_min;
    }
    sl__i128 avg = a->win_sum / a->win_count;
    sl__i128 num = (sl__i128)a->min_rtt * a->tol, den = avg * 100;
    int64_t lim_g;
    if (num >= den)
        lim_g = a->limit; /* gradient 1 */
    else if (2 * num <= den)
        lim_g = a->limit / 2; /* gradient 1/2 */
    else
        lim_g = (int64_t)((sl__i128)a->limit * num / den);
    int64_t target = lim_g + isqrt(a->limit);
    int64_t next = (a->limit + target + 1) / 2;
    if (next < a->min_limit) next = a->min_limit;
    if (next > a->max_limit) next = a->max_limit;
    a->limit = next;
}

int64_t sl_adaptive_sample(sl_adaptive *a, int64_t latency, int64_t now) {
    if (!a || latency <= 0 || bad_time(now)) return SL_EINVAL;
    pthread_mutex_lock(&a->mu);
    if (now - a->win_start >= a->window) {
        end_window(a);
        a->win_start += (now - a->win_start) / a->window * a->window;
        a->win_sum = 0;
        a->win_count = 0;
        a->win_min = INT64_MAX;
    }
    a->win_sum += latency;
    a->win_count++;
    if (latency < a->win_min) a->win_min = latency;
    int64_t l = a->limit;
    pthread_mutex_unlock(&a->mu);
    return l;
}

int64_t sl_adaptive_limit(sl_adaptive *a) {
    pthread_mutex_lock(&a->mu);
    int64_t l = a->limit;
    pthread_mutex_unlock(&a->mu);
    return l;
}

int64_t sl_adaptive_min_rtt(sl_adaptive *a) {
    pthread_mutex_lock(&a->mu);
    int64_t m = a->min_rtt;
    pthread_mutex_unlock(&a->mu);
    return m;
}
