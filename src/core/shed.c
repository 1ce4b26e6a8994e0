/* shed.c: load shedding by priority (sluice/shed.h). A token bucket of
 * rate n/p (reduced) and size B, tokens scaled by p as in token_bucket.c
 * (one token = p units, full = B p <= 2^61), so refill is the exact integer
 * (now - last) n and a floor of f tokens is f p units. A request of cost c
 * and priority floor f passes iff tokens - c p >= f p; when it does not, it
 * waits ceil((f p + c p - tokens) / n) ns. One mutex per shedder. */
#include "sluice/shed.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/algorithm.h"
#include "sluice/error.h"

struct sl_shed {
    pthread_mutex_t lock;
    sl__plan plan;                /* a token bucket's: n, p, full */
    int64_t floor[SL_PRIORITIES]; /* scaled units */
    int64_t tokens;               /* scaled, <= full */
    int64_t last;                 /* the latest time seen */
};

static const char *const names[SL_PRIORITIES] = {"critical", "default", "sheddable"};

int sl_shed_create(const sl_shed_options *o, int64_t now, sl_shed **out) {
    if (!o || !out || now < 0 || now > SL_TIME_MAX) return SL_EINVAL;
    *out = NULL;
    sl_params params = {.algorithm = SL_TOKEN_BUCKET, .rate = o->rate, .burst = o->burst};
    sl__plan plan;
    int rc = sl__plan_init(&plan, &params);
    if (rc != SL_OK) return rc;
    if (o->reserve_critical < 0 || o->reserve_default < 0 || o->reserve_critical >= o->burst ||
        o->reserve_default >= o->burst - o->reserve_critical)
        return SL_EINVAL;
    sl_shed *s = calloc(1, sizeof *s);
    if (!s) return SL_ENOMEM;
    pthread_mutex_init(&s->lock, NULL);
    s->plan = plan;
    s->floor[SL_PRIORITY_CRITICAL] = 0;
    s->floor[SL_PRIORITY_DEFAULT] = o->reserve_critical * plan.p;
    s->floor[SL_PRIORITY_SHEDDABLE] = (o->reserve_critical + o->reserve_default) * plan.p;
    s->tokens = plan.full;
    s->last = now;
    *out = s;
    return SL_OK;
}

void sl_shed_destroy(sl_shed *s) {
    if (!s) return;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Brings the bucket to now (lock held). The clock going back credits
 * nothing; the bucket is then judged as of `last`. */
static void refill(sl_shed *s, int64_t now) {
    if (now <= s->last) return;
    if (s->tokens < s->plan.full) {
        sl__i128 t = (sl__i128)s->tokens + (sl__i128)(now - s->last) * s->plan.n;
        s->tokens = t >= s->plan.full ? s->plan.full : (int64_t)t;
    }
    s->last = now;
}

int sl_shed_admit(sl_shed *s, sl_priority p, int64_t cost, int64_t now, sl_shed_decision *out) {
    *out = (sl_shed_decision){0};
    if ((unsigned)p >= SL_PRIORITIES || now < 0 || now > SL_TIME_MAX) return SL_EINVAL;
    int64_t room = s->plan.full - s->floor[p]; /* the most priority p can ever take, scaled */
    if (cost < 0 || cost > room / s->plan.p) {
        out->retry_after = -1;
        return SL_ECOST;
    }
    int64_t need = cost * s->plan.p;
    pthread_mutex_lock(&s->lock);
    refill(s, now);
    int64_t behind = s->last - now; /* >= 0: judged as of last */
    int64_t above = s->tokens - s->floor[p];
    out->admitted = above >= need;
    if (out->admitted) {
        s->tokens -= need;
        above -= need;
    } else {
        out->retry_after = behind + sl__ceil_div128(need - above, s->plan.n);
    }
    pthread_mutex_unlock(&s->lock);
    out->available = above > 0 ? above / s->plan.p : 0;
    return SL_OK;
}

void sl_shed_refund(sl_shed *s, int64_t cost, int64_t now) {
    if (cost <= 0 || now < 0 || now > SL_TIME_MAX) return;
    int64_t give = cost > s->plan.burst ? s->plan.full : cost * s->plan.p;
    pthread_mutex_lock(&s->lock);
    refill(s, now);
    s->tokens = give >= s->plan.full - s->tokens ? s->plan.full : s->tokens + give;
    pthread_mutex_unlock(&s->lock);
}

int64_t sl_shed_tokens(sl_shed *s, int64_t now) {
    pthread_mutex_lock(&s->lock);
    if (now >= 0 && now <= SL_TIME_MAX) refill(s, now);
    int64_t t = s->tokens / s->plan.p;
    pthread_mutex_unlock(&s->lock);
    return t;
}

const char *sl_priority_name(sl_priority p) {
    return (unsigned)p < SL_PRIORITIES ? names[p] : NULL;
}

int sl_priority_parse(const char *name, size_t len, sl_priority *out) {
    for (int i = 0; i < SL_PRIORITIES; i++)
        if (strlen(names[i]) == len && strncasecmp(names[i], name, len) == 0) {
            *out = (sl_priority)i;
            return SL_OK;
        }
    return SL_EPARSE;
}
