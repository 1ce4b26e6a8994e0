/* sim_adaptive.c: `sluice sim adaptive` (issue 16 item 2, docs/sim.md): a
 * backend that slows down, behind a fixed rate limit and behind an adaptive
 * concurrency limit, on the same arrivals. The rate limit keeps saying yes
 * while requests pile up and latency explodes; the adaptive limit
 * (sluice/adaptive.h driving an sl_concurrency) sheds the excess and keeps
 * latency near the backend's own.
 *
 * The model, deterministic and integer (1 ms steps, time in ns):
 * - arrivals: --rate per second, evenly spaced (request k at k * 1 s / rate);
 * - the backend: --workers cores shared by every request in flight
 *   (processor sharing: with n > workers in flight each advances
 *   workers / n ms of work per ms, rounded down to the ns); a request needs
 *   --service ms of work, --slow ms from --slow-at seconds on;
 * - "rate limit": a token bucket of --limit-rate per second (burst: a tenth
 *   of it), set above the arrivals, as a rate limit sized for the healthy
 *   backend would be;
 * - "adaptive": one key of an sl_concurrency whose limit an sl_adaptive sets
 *   from the latency of every finished request (--min-limit, --max-limit,
 *   starting at --min-limit; its lowest latency measured afresh every
 *   --min-rtt-window seconds).
 * Printed per second: admitted, shed (refused), in flight at the second's
 * end, and the mean latency of the requests finished in it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/sim.h"

#define MS SL_NS_PER_MS
#define T0 (INT64_C(1000) * SL_NS_PER_SEC) /* library time of simulation time 0 */

typedef struct req {
    int64_t start, left; /* ns: admitted at; work left */
    uint64_t lease;
} req;

typedef struct backend {
    req *r;
    size_t n, cap;
} backend;

typedef struct second {
    int64_t admitted, shed, in_flight, done, latency_sum, limit;
} second;

typedef struct adaptive_cfg {
    int64_t rate, workers, service_ms, slow_ms, slow_at_s, limit_rate, min_limit, max_limit;
    int64_t duration_s, min_rtt_s;
} adaptive_cfg;

/* Appends r to the requests in flight. Returns 0 or SL_ENOMEM. */
static int push(backend *b, req r) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        req *nr = realloc(b->r, cap * sizeof *nr);
        if (!nr) return SL_ENOMEM;
        b->r = nr;
        b->cap = cap;
    }
    b->r[b->n++] = r;
    return 0;
}

/* One ms of the backend at t (ns): finished requests call done(arg, r, t). */
static void tick(backend *b, int64_t workers, int64_t t, void (*done)(void *, const req *, int64_t),
                 void *arg) {
    if (!b->n) return;
    int64_t step = (int64_t)b->n <= workers ? MS : MS * workers / (int64_t)b->n;
    size_t j = 0;
    for (size_t i = 0; i < b->n; i++) {
        b->r[i].left -= step;
        if (b->r[i].left <= 0)
            done(arg, &b->r[i], t);
        else
            b->r[j++] = b->r[i];
    }
    b->n = j;
}

typedef struct side {
    backend be;
    second *sec;
    sl_limiter *bucket;    /* rate limit */
    sl_concurrency *conc;  /* adaptive */
    sl_adaptive *adaptive; /* adaptive */
} side;

static void finished(void *arg, const req *r, int64_t t) {
    side *s = arg;
    second *x = &s->sec[t / SL_NS_PER_SEC];
    x->done++;
    x->latency_sum += t - r->start;
    if (s->conc) {
        sl_concurrency_release(s->conc, "b", 1, r->lease, T0 + t, NULL);
        sl_concurrency_set_limit(s->conc, sl_adaptive_sample(s->adaptive, t - r->start, T0 + t));
    }
}

/* Runs both sides for c->duration_s seconds, filling their per-second
 * counts. Returns 0 or SL_ENOMEM. */
static int run(const adaptive_cfg *c, side *rl, side *ad) {
    int64_t end = c->duration_s * SL_NS_PER_SEC;
    int64_t next = 0, k = 0;
    for (int64_t t = 0; t < end; t += MS) {
        int64_t work = (t >= c->slow_at_s * SL_NS_PER_SEC ? c->slow_ms : c->service_ms) * MS;
        second *xr = &rl->sec[t / SL_NS_PER_SEC], *xa = &ad->sec[t / SL_NS_PER_SEC];
        while (next <= t) { /* the arrivals of this ms, to both sides */
            if (sl_limiter_allow(rl->bucket, 1, T0 + t)) {
                if (push(&rl->be, (req){.start = t, .left = work}) < 0) return SL_ENOMEM;
                xr->admitted++;
            } else {
                xr->shed++;
            }
            sl_acquire a;
            if (sl_concurrency_acquire(ad->conc, "b", 1, T0 + t, &a) == SL_OK && a.acquired) {
                if (push(&ad->be, (req){.start = t, .left = work, .lease = a.lease.id}) < 0)
                    return SL_ENOMEM;
                xa->admitted++;
            } else {
                xa->shed++;
            }
            k++;
            next = k * SL_NS_PER_SEC / c->rate;
        }
        tick(&rl->be, c->workers, t + MS, finished, rl);
        tick(&ad->be, c->workers, t + MS, finished, ad);
        if ((t + MS) % SL_NS_PER_SEC == 0) {
            xr->in_flight = (int64_t)rl->be.n;
            xa->in_flight = (int64_t)ad->be.n;
            xa->limit = sl_concurrency_limit(ad->conc);
        }
    }
    return 0;
}

static const char help[] =
    "usage: sluice sim adaptive [options]\n"
    "\n"
    "A backend that slows down, behind a fixed rate limit and behind an adaptive\n"
    "concurrency limit, on the same evenly spaced arrivals (docs/sim.md).\n"
    "\n"
    "  --rate N         arrivals per second (default 400)\n"
    "  --workers N      requests the backend serves at full speed at once (default 20)\n"
    "  --service MS     work per request while healthy, ms (default 20)\n"
    "  --slow MS        work per request once slow, ms (default 100)\n"
    "  --slow-at S      when the backend slows down, s (default 10)\n"
    "  --limit-rate N   the fixed rate limit, per second (default 500)\n"
    "  --min-limit N    the adaptive limit's floor and start (default 5)\n"
    "  --max-limit N    its ceiling (default 200)\n"
    "  --min-rtt-window S  how long its lowest latency is remembered, s (default 10)\n"
    "  --duration S     seconds simulated (default 30)\n"
    "  --format F       table or csv (default table)\n"
    "  -h, --help       this help\n";

enum {
    O_RATE,
    O_WORKERS,
    O_SERVICE,
    O_SLOW,
    O_SLOW_AT,
    O_LIMIT_RATE,
    O_MIN,
    O_MAX,
    O_DURATION,
    O_MINRTT,
    O_FORMAT,
    O_HELP
};

static const sl__cli_opt adaptive_opts[] = {
    {"rate", "N"},     {"workers", "N"},        {"service", "MS"},  {"slow", "MS"},
    {"slow-at", "S"},  {"limit-rate", "N"},     {"min-limit", "N"}, {"max-limit", "N"},
    {"duration", "S"}, {"min-rtt-window", "S"}, {"format", "F"},    {"help", NULL},
    {NULL, NULL}};

/* What the options set: the model and --format (table or csv only). */
typedef struct adaptive_args {
    adaptive_cfg c;
    bool csv;
} adaptive_args;

static int adaptive_option(sl__cli_args *a, int idx, const char *v, void *ctx) {
    adaptive_args *x = ctx;
    adaptive_cfg *c = &x->c;
    int64_t *field[] = {&c->rate,       &c->workers,    &c->service_ms, &c->slow_ms,
                        &c->slow_at_s,  &c->limit_rate, &c->min_limit,  &c->max_limit,
                        &c->duration_s, &c->min_rtt_s};
    static const int64_t hi[] = {
        100000, 10000, 60000, 60000, 3600, 1000000, SL_CONCURRENCY_MAX, SL_CONCURRENCY_MAX, 3600};
    if (idx <= O_MINRTT)
        return sl__cli_args_int(a, v, idx == O_SLOW_AT ? 0 : 1, hi[idx], field[idx]);
    /* O_FORMAT */
    if (strcmp(v, "csv") == 0)
        x->csv = true;
    else if (strcmp(v, "table") != 0)
        return sl__cli_args_error(a, "expected table or csv, got '%s'", v);
    return 0;
}

/* The per-second rows of both sides, after the header (table or CSV). */
static void adaptive_print(const adaptive_cfg *c, bool csv, const side *rl, const side *ad) {
    if (csv)
        puts("second,rl_admitted,rl_shed,rl_in_flight,rl_latency_ms,ad_admitted,ad_shed,"
             "ad_limit,ad_in_flight,ad_latency_ms");
    else
        printf("backend: %lld workers, %lld ms a request, %lld ms from %lld s; %lld arrivals/s\n"
               "%6s | %-35s | %s\n%6s | %8s %6s %9s %8s | %8s %6s %6s %9s %8s\n",
               (long long)c->workers, (long long)c->service_ms, (long long)c->slow_ms,
               (long long)c->slow_at_s, (long long)c->rate, "", "rate limit", "adaptive", "second",
               "admitted", "shed", "in flight", "latency", "admitted", "shed", "limit", "in flight",
               "latency");
    for (int64_t s = 0; s < c->duration_s; s++) {
        const second *x = &rl->sec[s], *y = &ad->sec[s];
        long long lx = x->done ? x->latency_sum / x->done / MS : 0;
        long long ly = y->done ? y->latency_sum / y->done / MS : 0;
        printf(csv ? "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n"
                   : "%6lld | %8lld %6lld %9lld %6lldms | %8lld %6lld %6lld %9lld %6lldms\n",
               (long long)s, (long long)x->admitted, (long long)x->shed, (long long)x->in_flight,
               lx, (long long)y->admitted, (long long)y->shed, (long long)y->limit,
               (long long)y->in_flight, ly);
    }
}

int sl__cli_sim_adaptive_main(const char *cmd, int argc, char **argv, int first) {
    adaptive_args args = {.c = {.rate = 400,
                                .workers = 20,
                                .service_ms = 20,
                                .slow_ms = 100,
                                .slow_at_s = 10,
                                .limit_rate = 500,
                                .min_limit = 5,
                                .max_limit = 200,
                                .duration_s = 30,
                                .min_rtt_s = 10},
                          .csv = false};
    int prc = sl__cli_sim_parse(cmd, argc, argv, first, adaptive_opts, help, NULL, adaptive_option,
                                &args);
    if (prc != 0) return prc > 0 ? 0 : EXIT_USAGE;
    const adaptive_cfg c = args.c;
    if (c.min_limit > c.max_limit) {
        fprintf(stderr, "%s: --min-limit must not exceed --max-limit\n", cmd);
        return EXIT_USAGE;
    }
    side rl = {0}, ad = {0};
    rl.sec = calloc((size_t)c.duration_s + 1, sizeof *rl.sec);
    ad.sec = calloc((size_t)c.duration_s + 1, sizeof *ad.sec);
    sl_concurrency_options co = {.limit = c.min_limit, .lease = 3600 * SL_NS_PER_SEC, .seed = 1};
    sl_adaptive_options ao = {.min_limit = c.min_limit,
                              .max_limit = c.max_limit,
                              .min_rtt_window = c.min_rtt_s * SL_NS_PER_SEC};
    int64_t burst = c.limit_rate / 10 ? c.limit_rate / 10 : 1;
    int rc = 1;
    if (rl.sec && ad.sec &&
        sl_limiter_create((sl_rate){c.limit_rate, SL_NS_PER_SEC}, burst, 0, T0, &rl.bucket) == 0 &&
        sl_concurrency_create(&co, &ad.conc) == 0 &&
        sl_adaptive_create(&ao, T0, &ad.adaptive) == 0 && run(&c, &rl, &ad) == 0) {
        adaptive_print(&c, args.csv, &rl, &ad);
        rc = 0;
    } else {
        fprintf(stderr, "%s: out of memory\n", cmd);
    }
    free(rl.be.r);
    free(ad.be.r);
    free(rl.sec);
    free(ad.sec);
    sl_limiter_destroy(rl.bucket);
    sl_concurrency_destroy(ad.conc);
    sl_adaptive_destroy(ad.adaptive);
    return rc;
}
