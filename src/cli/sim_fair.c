/* sim_fair.c: `sluice sim fair`, noisy neighbours (seed section 11): the
 * simulation (one server draining a queue, FIFO or weighted fair queuing
 * with libsluice's sl_fairq), the small tenants' waits as table/CSV/JSON,
 * and a scatter chart of each small job's wait against its arrival time.
 *
 * The server is busy from the first job on: in a busy period that began at
 * B, the k-th job served (from 0) starts at B + floor(k P / N) for a rate of
 * N jobs per P ns, so the rate is exact however N divides P. A job that
 * arrives at the very time a service starts is in the queue for it. */
#include "cli/sim_fair.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/error.h"
#include "cli/output.h"
#include "client/prng.h"
#include "cli/sim.h"
#include "cli/svg.h"

/* ---- engine ----------------------------------------------------------------- */

static const char *const discipline_names[FAIR_DISCIPLINES] = {"fifo", "wfq"};

const char *sl__cli_fair_discipline_name(int d) {
    return d >= 0 && d < FAIR_DISCIPLINES ? discipline_names[d] : NULL;
}

void sl__cli_fair_result_free(sl__cli_fair_result *r) {
    free(r->arrival);
    for (int d = 0; d < FAIR_DISCIPLINES; d++) free(r->wait[d]);
    memset(r, 0, sizeof *r);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentiles of n >= 1 values (sorts them). */
static sl__cli_fair_stats stats_of(int64_t *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_i64);
    return (sl__cli_fair_stats){
        .p50 = v[(n + 1) / 2 - 1], .p99 = v[(99 * n + 99) / 100 - 1], .max = v[n - 1]};
}

/* Small tenants in order of arrival (ties: lower number first). */
typedef struct arrival_of {
    int64_t t, tenant;
} arrival_of;

static int cmp_arrival(const void *a, const void *b) {
    const arrival_of *x = a, *y = b;
    return x->t != y->t ? (x->t > y->t) - (x->t < y->t)
                        : (x->tenant > y->tenant) - (x->tenant < y->tenant);
}

/* The queue under test: FIFO (an array) or sl_fairq. Jobs are numbered
 * 0..jobs-1 (the dump) then jobs + i (small tenant i). */
typedef struct queue {
    int discipline;
    int64_t *fifo;
    size_t head, tail;
    sl_fairq *fq;
    const sl__cli_fair_config *cfg;
} queue;

static int queue_push(queue *q, int64_t job) {
    if (q->discipline == FAIR_FIFO) {
        q->fifo[q->tail++] = job;
        return SL_OK;
    }
    char name[32];
    int len;
    uint32_t w;
    if (job < q->cfg->jobs) {
        len = snprintf(name, sizeof name, "big");
        w = q->cfg->weight_big;
    } else {
        len = snprintf(name, sizeof name, "small-%lld", (long long)(job - q->cfg->jobs));
        w = q->cfg->weight_small;
    }
    if (w != 1 && sl_fairq_weight(q->fq, name, (size_t)len) != w) {
        int rc = sl_fairq_set_weight(q->fq, name, (size_t)len, w);
        if (rc != SL_OK) return rc;
    }
    return sl_fairq_push(q->fq, name, (size_t)len, 1, (void *)(uintptr_t)(job + 1), NULL);
}

static bool queue_pop(queue *q, int64_t *job) {
    if (q->discipline == FAIR_FIFO) {
        if (q->head == q->tail) return false;
        *job = q->fifo[q->head++];
        return true;
    }
    sl_fairq_item it;
    if (!sl_fairq_pop(q->fq, &it)) return false;
    *job = (int64_t)(uintptr_t)it.ptr - 1;
    return true;
}

/* One discipline: every job's wait into big_wait (dump) and small_wait. */
static int run_one(const sl__cli_fair_config *cfg, int discipline, const int64_t *arrival,
                   const arrival_of *order, int64_t *big_wait, int64_t *small_wait,
                   int64_t *done_at, char *err, size_t errlen) {
    size_t total = (size_t)(cfg->jobs + cfg->tenants);
    queue q = {.discipline = discipline, .cfg = cfg};
    if (discipline == FAIR_FIFO) {
        q.fifo = malloc(total * sizeof *q.fifo);
        if (!q.fifo) return sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
    } else {
        sl_fairq_options o = {.max_items = total,
                              .max_tenants = (size_t)cfg->tenants + 1,
                              .max_cost = 1,
                              .quantum = 1};
        int rc = sl_fairq_create(&o, &q.fq);
        if (rc != SL_OK) return sl__cli_fail(rc, err, errlen, "fair queue: %s", sl_strerror(rc));
    }
    int rc = 0;
    for (int64_t j = 0; j < cfg->jobs && rc == 0; j++) rc = queue_push(&q, j);
    int64_t busy_from = 0, k = 0, start = 0;
    int64_t next = 0; /* the next small tenant to arrive, in order[] */
    for (size_t served = 0; served < total && rc == 0; served++) {
        start = busy_from + (int64_t)((__int128)k * cfg->rate.period / cfg->rate.limit);
        int64_t job;
        bool empty = discipline == FAIR_FIFO ? q.head == q.tail : false;
        if (discipline == FAIR_WFQ) {
            sl_fairq_counts c;
            sl_fairq_counts_get(q.fq, &c);
            empty = c.items == 0;
        }
        if (empty && next < cfg->tenants &&
            order[next].t > start) { /* idle until the next arrival */
            busy_from = start = order[next].t;
            k = 0;
        }
        while (next < cfg->tenants && order[next].t <= start && rc == 0)
            rc = queue_push(&q, cfg->jobs + order[next++].tenant);
        if (rc < 0 || !queue_pop(&q, &job)) {
            if (rc == 0) rc = SL_EINVAL; /* cannot happen: something arrived */
            break;
        }
        if (job < cfg->jobs)
            big_wait[job] = start;
        else
            small_wait[job - cfg->jobs] = start - arrival[job - cfg->jobs];
        k++;
    }
    *done_at = start;
    free(q.fifo);
    sl_fairq_destroy(q.fq);
    if (rc < 0)
        return sl__cli_fail(rc, err, errlen, "%s: %s", discipline_names[discipline],
                            sl_strerror(rc));
    return 0;
}

int sl__cli_fair_run(const sl__cli_fair_config *cfg, sl__cli_fair_result *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    if (cfg->jobs < 0 || cfg->jobs > FAIR_MAX_JOBS || cfg->tenants < 1 ||
        cfg->tenants > FAIR_MAX_TENANTS || cfg->spread < 0 || cfg->rate.limit < 1 ||
        cfg->rate.period < 1 || cfg->weight_big < 1 || cfg->weight_big > SL_FAIRQ_WEIGHT_MAX ||
        cfg->weight_small < 1 || cfg->weight_small > SL_FAIRQ_WEIGHT_MAX)
        return sl__cli_fail(SL_EINVAL, err, errlen, "parameters out of range");
    /* the last service starts before spread + total P / N */
    __int128 end = (__int128)cfg->spread +
                   (__int128)(cfg->jobs + cfg->tenants) * cfg->rate.period / cfg->rate.limit + 1;
    if (end > INT64_MAX / 2)
        return sl__cli_fail(SL_EOVERFLOW, err, errlen,
                            "the run would outlast the time domain: a faster --rate");
    out->service = cfg->rate.period / cfg->rate.limit;
    size_t n = (size_t)cfg->tenants, nbig = (size_t)cfg->jobs;
    out->arrival = malloc(n * sizeof *out->arrival);
    arrival_of *order = malloc(n * sizeof *order);
    int64_t *big = malloc((nbig ? nbig : 1) * sizeof *big);
    int64_t *sorted = malloc(n * sizeof *sorted);
    for (int d = 0; d < FAIR_DISCIPLINES; d++) out->wait[d] = malloc(n * sizeof *out->wait[d]);
    int rc = 0;
    if (!out->arrival || !order || !big || !sorted || !out->wait[0] || !out->wait[1]) {
        rc = sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
        goto done;
    }
    sl__prng rng;
    sl__prng_seed(&rng, cfg->seed);
    for (size_t i = 0; i < n; i++) {
        out->arrival[i] = (int64_t)sl__prng_upto(&rng, (uint64_t)cfg->spread);
        order[i] = (arrival_of){out->arrival[i], (int64_t)i};
    }
    qsort(order, n, sizeof *order, cmp_arrival);
    for (int d = 0; d < FAIR_DISCIPLINES && rc == 0; d++) {
        int64_t done_at =
            0; /* a local: a pointer into *out would let the analyzer forget its arrays */
        rc = run_one(cfg, d, out->arrival, order, big, out->wait[d], &done_at, err, errlen);
        out->done_at[d] = done_at;
        if (rc < 0) break;
        memcpy(sorted, out->wait[d], n * sizeof *sorted);
        out->small[d] = stats_of(sorted, n);
        if (nbig) out->big[d] = stats_of(big, nbig);
    }
done:
    free(order);
    free(big);
    free(sorted);
    if (rc < 0) sl__cli_fair_result_free(out);
    return rc;
}

/* ---- output ----------------------------------------------------------------- */

static const char *const result_columns[] = {"discipline", "small_p50", "small_p99", "small_max",
                                             "big_p50",    "big_max",   "done_at"};
static const char *const tenant_columns[] = {"tenant", "arrival", "fifo_wait", "wfq_wait"};
static const char *const option_columns[] = {"jobs",       "tenants",      "spread", "rate",
                                             "weight_big", "weight_small", "seed"};

static void add_seconds(sl__cli_out_table *t, int64_t ns) {
    char b[40];
    sl__cli_out_table_add(t, CELL_NUM, "%s", sl__cli_fmt_seconds(ns, 3, b, sizeof b));
}

static int print_fair(FILE *fp, sl__cli_out_format f, const sl__cli_sim_view *view) {
    const sl__cli_fair_config *cfg = view->cfg;
    const sl__cli_fair_result *r = view->result;
    const char *rate_text = view->rate_text;
    char b1[40], b2[40], b3[40];
    sl__cli_out_table *res = sl__cli_out_table_new(7, result_columns);
    sl__cli_out_table *opt = sl__cli_out_table_new(7, option_columns);
    sl__cli_out_table *per = f == OUT_JSON ? sl__cli_out_table_new(4, tenant_columns) : NULL;
    if (!res || !opt || (f == OUT_JSON && !per)) {
        sl__cli_out_table_free(res);
        sl__cli_out_table_free(opt);
        sl__cli_out_table_free(per);
        return SL_ENOMEM;
    }
    for (int d = 0; d < FAIR_DISCIPLINES; d++) {
        sl__cli_out_table_add(res, CELL_STR, "%s", discipline_names[d]);
        add_seconds(res, r->small[d].p50);
        add_seconds(res, r->small[d].p99);
        add_seconds(res, r->small[d].max);
        add_seconds(res, r->big[d].p50);
        add_seconds(res, r->big[d].max);
        add_seconds(res, r->done_at[d]);
    }
    sl__cli_out_table_add(opt, CELL_NUM, "%lld", (long long)cfg->jobs);
    sl__cli_out_table_add(opt, CELL_NUM, "%lld", (long long)cfg->tenants);
    sl__cli_out_table_add(opt, CELL_NUM, "%s", sl__cli_fmt_seconds(cfg->spread, 0, b1, sizeof b1));
    sl__cli_out_table_add(opt, CELL_STR, "%s", rate_text);
    sl__cli_out_table_add(opt, CELL_NUM, "%u", cfg->weight_big);
    sl__cli_out_table_add(opt, CELL_NUM, "%u", cfg->weight_small);
    sl__cli_out_table_add(opt, CELL_NUM, "%llu", (unsigned long long)cfg->seed);
    if (per)
        for (int64_t i = 0; i < cfg->tenants; i++) {
            sl__cli_out_table_add(per, CELL_STR, "small-%lld", (long long)i);
            add_seconds(per, r->arrival[i]);
            add_seconds(per, r->wait[FAIR_FIFO][i]);
            add_seconds(per, r->wait[FAIR_WFQ][i]);
        }

    int rc = 0;
    if (f == OUT_TABLE) {
        fprintf(fp,
                "fair: tenant \"big\" dumps %lld jobs at 0 s; %lld small tenants send one job "
                "each at a\nuniform random time in [0, %s] s. One server serves %s, one job at "
                "a time (%s s each);\nfair queuing weights: big %u, small %u. Seed %llu. Waits "
                "in seconds, until a job's service starts.\n\n",
                (long long)cfg->jobs, (long long)cfg->tenants,
                sl__cli_fmt_seconds(cfg->spread, 0, b1, sizeof b1), rate_text,
                sl__cli_fmt_seconds(r->service, 0, b2, sizeof b2), cfg->weight_big,
                cfg->weight_small, (unsigned long long)cfg->seed);
        rc = sl__cli_out_table_print(res, fp, f, 0);
        fprintf(fp,
                "\na small tenant's worst wait: %s s first come first served,\n%s s with "
                "weighted fair queuing; the last job starts at %s s either way.\n",
                sl__cli_fmt_seconds(r->small[FAIR_FIFO].max, 3, b1, sizeof b1),
                sl__cli_fmt_seconds(r->small[FAIR_WFQ].max, 3, b2, sizeof b2),
                sl__cli_fmt_seconds(r->done_at[FAIR_WFQ], 3, b3, sizeof b3));
    } else if (f == OUT_CSV) {
        rc = sl__cli_out_table_print(res, fp, f, 0);
    } else {
        fputs("{\n", fp);
        rc = sl__cli_out_table_print_members(opt, fp, 2);
        fputs("  \"results\": ", fp);
        if (rc == 0) rc = sl__cli_out_table_print(res, fp, f, 2);
        fputs(",\n  \"small_tenants\": ", fp);
        if (rc == 0) rc = sl__cli_out_table_print(per, fp, f, 2);
        fputs("\n}\n", fp);
    }
    sl__cli_out_table_free(res);
    sl__cli_out_table_free(opt);
    sl__cli_out_table_free(per);
    return rc;
}

/* ---- chart ------------------------------------------------------------------ */

static const char fair_css[] = ".title{font-size:18px;font-weight:600;fill:#1f2933}\n"
                               ".sub{font-size:12.5px;fill:#52606d}\n"
                               ".tick{font-size:11px;fill:#52606d}\n"
                               ".legend{font-size:12px;fill:#323f4b}\n"
                               ".grid{stroke:#e4e7eb;stroke-width:1}\n"
                               ".axis{stroke:#616e7c;stroke-width:1}\n"
                               ".fifo{fill:#e12d39;fill-opacity:0.75}\n"
                               ".wfq{fill:#1f9d55;fill-opacity:0.85}";

static int write_fair_svg(const char *path, const sl__cli_sim_view *view, char *err,
                          size_t errlen) {
    const sl__cli_fair_config *cfg = view->cfg;
    const sl__cli_fair_result *r = view->result;
    const char *rate_text = view->rate_text;
    const double W = 1000, left = 64, right = 24, top = 112, plot_h = 280;
    double axis_y = top + plot_h, pw = W - left - right;
    int H = (int)(axis_y + 48);
    char title[200], b1[40], b2[40], b3[40], b4[40];
    snprintf(title, sizeof title,
             "sluice sim fair: a dump of %lld jobs against %lld small tenants, a server of %s",
             (long long)cfg->jobs, (long long)cfg->tenants, rate_text);
    sl__cli_svg *s = sl__cli_svg_open(path, (int)W, H, title, fair_css, err, errlen);
    if (!s) return SL_EINVAL;
    sl__cli_svg_text(s, 16, 28, "title", "start", title);
    sl__cli_svg_textf(
        s, 16, 48, "sub", "start",
        "a small job's wait: first come first served p50 %s s, max %s s; weighted fair "
        "queuing p50 %s s, max %s s",
        sl__cli_fmt_seconds(r->small[FAIR_FIFO].p50, 3, b1, sizeof b1),
        sl__cli_fmt_seconds(r->small[FAIR_FIFO].max, 3, b2, sizeof b2),
        sl__cli_fmt_seconds(r->small[FAIR_WFQ].p50, 3, b3, sizeof b3),
        sl__cli_fmt_seconds(r->small[FAIR_WFQ].max, 3, b4, sizeof b4));

    double ly = 74;
    sl__cli_svg_circle(s, 22, ly - 5, 5, "fifo", NULL);
    sl__cli_svg_text(s, 34, ly, "legend", "start", "first come first served (FIFO)");
    sl__cli_svg_circle(s, 262, ly - 5, 5, "wfq", NULL);
    sl__cli_svg_textf(s, 274, ly, "legend", "start",
                      "weighted fair queuing (sl_fairq, weights big %u, small %u)", cfg->weight_big,
                      cfg->weight_small);

    /* y: wait in ms; x: arrival in ms (presentation only) */
    int64_t ymax_ms = 1, xmax_ms = cfg->spread / SL_NS_PER_MS > 0 ? cfg->spread / SL_NS_PER_MS : 1;
    for (int d = 0; d < FAIR_DISCIPLINES; d++)
        if (r->small[d].max / SL_NS_PER_MS + 1 > ymax_ms)
            ymax_ms = r->small[d].max / SL_NS_PER_MS + 1;
    int64_t ystep = sl__cli_svg_round_step(ymax_ms), xstep = sl__cli_svg_round_step(xmax_ms);
    int64_t ytop = (ymax_ms + ystep - 1) / ystep * ystep;
    int64_t xtop = (xmax_ms + xstep - 1) / xstep * xstep;
    for (int64_t v = 0; v <= ytop; v += ystep) {
        double y = axis_y - plot_h * (double)v / (double)ytop;
        sl__cli_svg_line(s, left, y, W - right, y, "grid", NULL);
        sl__cli_svg_textf(s, left - 6, y + 4, "tick", "end", "%s",
                          sl__cli_fmt_seconds(v * SL_NS_PER_MS, 0, b1, sizeof b1));
    }
    sl__cli_svg_text(s, 16, top - 14, "tick", "start", "wait until service (s)");
    for (int d = 0; d < FAIR_DISCIPLINES; d++) {
        sl__cli_svg_group_begin(s, discipline_names[d], NULL);
        for (int64_t i = 0; i < cfg->tenants; i++) {
            double x = left + pw * ((double)r->arrival[i] / 1e6) / (double)xtop;
            double y = axis_y - plot_h * ((double)r->wait[d][i] / 1e6) / (double)ytop;
            char tip[160];
            snprintf(tip, sizeof tip, "small-%lld (%s): arrived %s s, waited %s s", (long long)i,
                     discipline_names[d], sl__cli_fmt_seconds(r->arrival[i], 3, b1, sizeof b1),
                     sl__cli_fmt_seconds(r->wait[d][i], 3, b2, sizeof b2));
            sl__cli_svg_circle(s, x, y, 3.5, NULL, tip);
        }
        sl__cli_svg_group_end(s);
    }
    sl__cli_svg_line(s, left, axis_y, W - right, axis_y, "axis", NULL);
    for (int64_t v = 0; v <= xtop; v += xstep) {
        double x = left + pw * (double)v / (double)xtop;
        sl__cli_svg_line(s, x, axis_y, x, axis_y + 5, "axis", NULL);
        sl__cli_svg_textf(s, x, axis_y + 18, "tick", "middle", "%s",
                          sl__cli_fmt_seconds(v * SL_NS_PER_MS, 0, b1, sizeof b1));
    }
    sl__cli_svg_text(s, left + pw / 2, axis_y + 38, "tick", "middle",
                     "when the small tenant's job arrived (s)");
    return sl__cli_svg_close(s, err, errlen);
}

/* ---- command ---------------------------------------------------------------- */

static const char fair_help[] =
    "usage: sluice sim fair [options]\n"
    "\n"
    "Noisy neighbours (seed section 11): tenant \"big\" dumps --jobs jobs at t = 0;\n"
    "--tenants small tenants send one job each at a uniform random time in\n"
    "[0, --spread] s. One server does --rate jobs, one at a time, taking them first\n"
    "come first served (fifo) or by weighted fair queuing (wfq: libsluice's sl_fairq,\n"
    "deficit round robin, one queue per tenant). Both run on the same arrivals.\n"
    "\n"
    "options:\n"
    "  --jobs N             the big tenant's dump (default 10000, 0 to 1000000)\n"
    "  --tenants N          small tenants, one job each (default 100, 1 to 100000)\n"
    "  --spread S           small jobs arrive in [0, S] seconds (default 10)\n"
    "  --rate N/P           the server's rate (default 1000/s)\n"
    "  --weights B,S        the fair queue's weights: big, each small (default 1,1)\n"
    "  --seed N             seed of the arrival times (default 1)\n"
    "  --format FMT         table (default) or csv: one row per discipline; json: the\n"
    "                       options, results and every small tenant's arrival and waits\n"
    "  --svg FILE           each small job's wait against its arrival time, both\n"
    "                       disciplines\n"
    "  -h, --help           show this help\n"
    "\n"
    "Results per discipline, in seconds: small_p50, small_p99, small_max (the small\n"
    "tenants' waits until their job's service starts, nearest rank), big_p50 and\n"
    "big_max (the dump's jobs), done_at (when the last job started). See docs/sim.md.\n";

enum { F_JOBS, F_TENANTS, F_SPREAD, F_RATE, F_WEIGHTS, F_SEED, F_FORMAT, F_SVG, F_HELP };
static const sl__cli_opt fair_opts[] = {
    [F_JOBS] = {"jobs", "N"},         [F_TENANTS] = {"tenants", "N"},
    [F_SPREAD] = {"spread", "S"},     [F_RATE] = {"rate", "N/P"},
    [F_WEIGHTS] = {"weights", "B,S"}, [F_SEED] = {"seed", "N"},
    [F_FORMAT] = {"format", "FMT"},   [F_SVG] = {"svg", "FILE"},
    [F_HELP] = {"help", NULL},        {NULL, NULL},
};

/* "B,S": two weights, 1..SL_FAIRQ_WEIGHT_MAX. */
static int parse_weights(const sl__cli_args *a, const char *v, sl__cli_fair_config *cfg) {
    const char *comma = strchr(v, ',');
    char big[32];
    if (!comma || (size_t)(comma - v) >= sizeof big)
        return sl__cli_args_error(a, "expected two weights B,S such as 4,1, got '%s'", v);
    memcpy(big, v, (size_t)(comma - v));
    big[comma - v] = 0;
    int64_t b, s;
    if (sl__cli_args_int(a, big, 1, SL_FAIRQ_WEIGHT_MAX, &b) < 0 ||
        sl__cli_args_int(a, comma + 1, 1, SL_FAIRQ_WEIGHT_MAX, &s) < 0)
        return SL_EINVAL;
    cfg->weight_big = (uint32_t)b;
    cfg->weight_small = (uint32_t)s;
    return 0;
}

/* sim fair's own options into the config. */
static int fair_option(sl__cli_args *a, int idx, const char *v, void *ctx) {
    sl__cli_fair_config *cfg = ctx;
    switch (idx) {
    case F_JOBS:
        return sl__cli_args_int(a, v, 0, FAIR_MAX_JOBS, &cfg->jobs);
    case F_TENANTS:
        return sl__cli_args_int(a, v, 1, FAIR_MAX_TENANTS, &cfg->tenants);
    case F_SPREAD:
        return sl__cli_args_seconds(a, v, 0, 3600000, "seconds from 0 to 3600", &cfg->spread);
    case F_RATE:
        return sl__cli_args_rate(a, v, &cfg->rate);
    case F_WEIGHTS:
        return parse_weights(a, v, cfg);
    case F_SEED:
        return sl__cli_args_u64(a, v, &cfg->seed);
    default:
        return 0;
    }
}

int sl__cli_sim_fair_main(const char *cmd, int argc, char **argv, int first) {
    sl__cli_fair_config cfg = {
        .jobs = 10000,
        .tenants = 100,
        .spread = 10 * SL_NS_PER_SEC,
        .rate = {1000, SL_NS_PER_SEC},
        .weight_big = 1,
        .weight_small = 1,
        .seed = 1,
    };
    sl__cli_sim_opts common;
    int rc =
        sl__cli_sim_parse(cmd, argc, argv, first, fair_opts, fair_help, &common, fair_option, &cfg);
    if (rc != 0) return rc > 0 ? 0 : EXIT_USAGE;
    char err[512];
    sl__cli_fair_result r;
    if (sl__cli_fair_run(&cfg, &r, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return 1;
    }
    char rate_text[64];
    sl_rate_format(cfg.rate, rate_text, sizeof rate_text);
    sl__cli_sim_show show = {write_fair_svg, print_fair, {&cfg, &r, NULL, rate_text}};
    int status = sl__cli_sim_show_result(cmd, &common, &show);
    sl__cli_fair_result_free(&r);
    return status;
}
