/* sim_race.c: `sluice sim race`, the algorithm race of seed section 05: the
 * engine (every algorithm on one trace), its table/CSV/JSON summary, the
 * per-request CSV log and the SVG chart (one row per algorithm on a shared
 * time axis, like the seed's figure). */
#include "cli/sim_race.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/error.h"
#include "cli/output.h"
#include "cli/sim.h"
#include "cli/svg.h"

/* The chart draws at most this many requests (a bigger one would not read). */
#define RACE_SVG_MAX_REQUESTS 20000

static const sl_algorithm all_algorithms[6] = {SL_FIXED_WINDOW, SL_SLIDING_LOG, SL_SLIDING_WINDOW,
                                               SL_TOKEN_BUCKET, SL_GCRA,        SL_LEAKY_QUEUE};

/* ---- engine ----------------------------------------------------------------- */

int64_t sl__cli_busiest_interval(const int64_t *times, const int64_t *weights, size_t n,
                                 int64_t period, int64_t *start) {
    int64_t best = 0, best_at = n ? times[0] : 0, sum = 0;
    size_t j = 0;
    /* For each event i as the interval's start, [times[i], times[i] + period)
     * holds events i..j-1. Every maximal interval can be moved right until it
     * starts at an event, so these starts suffice. */
    for (size_t i = 0; i < n; i++) {
        if (j < i) j = i, sum = 0;
        while (j < n && times[j] - times[i] < period) sum += weights[j++];
        if (sum > best) best = sum, best_at = times[i];
        sum -= weights[i];
    }
    if (start) *start = best_at;
    return best;
}

typedef struct timed {
    int64_t t, w;
    uint32_t key;
} timed;

static int cmp_time(const void *a, const void *b) {
    const timed *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->w > y->w) - (x->w < y->w);
}

static int cmp_key_time(const void *a, const void *b) {
    const timed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return cmp_time(a, b);
}

/* busiest over the requests that reached the server (allowed ones, at
 * arrival + delay): all keys together, and the most for any one key. */
static int compute_busiest(const sl__cli_trace *t, sl__cli_race_result *r, int64_t period) {
    size_t cap = t->n ? t->n : 1;
    timed *ev = malloc(cap * sizeof *ev);
    int64_t *times = malloc(cap * sizeof *times);
    int64_t *weights = malloc(cap * sizeof *weights);
    if (!ev || !times || !weights) {
        free(ev), free(times), free(weights);
        return SL_ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < t->n; i++)
        if (r->ok[i])
            ev[m++] = (timed){t->reqs[i].t + r->delay[i], t->reqs[i].cost, t->reqs[i].key};
    qsort(ev, m, sizeof *ev, cmp_time);
    for (size_t i = 0; i < m; i++) times[i] = ev[i].t, weights[i] = ev[i].w;
    r->busiest = sl__cli_busiest_interval(times, weights, m, period, &r->busiest_at);
    r->busiest_key = 0;
    if (t->nkeys > 1) {
        qsort(ev, m, sizeof *ev, cmp_key_time);
        for (size_t i = 0; i < m;) {
            size_t j = i;
            for (; j < m && ev[j].key == ev[i].key; j++)
                times[j - i] = ev[j].t, weights[j - i] = ev[j].w;
            int64_t b = sl__cli_busiest_interval(times, weights, j - i, period, NULL);
            if (b > r->busiest_key) r->busiest_key = b;
            i = j;
        }
    } else {
        r->busiest_key = r->busiest;
    }
    free(ev), free(times), free(weights);
    return 0;
}

void sl__cli_race_results_free(sl__cli_race_result *results, int n) {
    for (int i = 0; i < n; i++) {
        free(results[i].ok);
        free(results[i].delay);
        results[i].ok = NULL;
        results[i].delay = NULL;
    }
}

/* One algorithm over the trace into r (r->alg set, the rest zero); r's
 * arrays are the caller's to free, whatever is returned. */
static int run_into(const sl__cli_trace *t, const sl__cli_race_config *cfg, sl_algorithm alg,
                    int64_t base, sl__cli_race_result *r, char *err, size_t errlen) {
    r->ok = calloc(t->n ? t->n : 1, sizeof *r->ok);
    r->delay = calloc(t->n ? t->n : 1, sizeof *r->delay);
    if (!r->ok || !r->delay) return sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
    sl_params p = {.algorithm = alg, .rate = cfg->rate, .burst = cfg->burst};
    sl_table *tab;
    int rc = sl__cli_sim_table_create(&p, &tab, err, errlen);
    if (rc < 0) return rc;
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        const sl__cli_trace_req *q = &t->reqs[i];
        const char *key = t->keys[q->key];
        sl_decision d;
        int c = sl_table_check(tab, key, strlen(key), q->cost, base + q->t, &d);
        if (c != SL_OK && c != SL_ECOST) {
            /* SL_ECOST: a cost that can never pass is simply refused */
            rc = sl__cli_fail(c, err, errlen, "%s: request %zu: %s", sl_algorithm_name(alg), i + 1,
                              sl_strerror(c));
            break;
        }
        r->ok[i] = c == SL_OK && d.allowed;
        r->delay[i] = r->ok[i] ? d.delay : 0;
        if (r->ok[i])
            r->allowed++;
        else
            r->rejected++;
        if (r->delay[i] > r->max_delay) r->max_delay = r->delay[i];
    }
    if (rc == 0) rc = sl__cli_sim_table_check_evictions(tab, err, errlen);
    sl_table_destroy(tab);
    if (rc == 0 && compute_busiest(t, r, cfg->rate.period) < 0)
        rc = sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
    return rc;
}

/* run_into on a fresh result, copied to *out: the caller's array is written
 * once, whole (clang's analyzer lost the arrays of the results before when
 * this one was cleared in place). */
static int run_one(const sl__cli_trace *t, const sl__cli_race_config *cfg, sl_algorithm alg,
                   int64_t base, sl__cli_race_result *out, char *err, size_t errlen) {
    sl__cli_race_result r = {.alg = alg};
    int rc = run_into(t, cfg, alg, base, &r, err, errlen);
    *out = r;
    return rc;
}

int sl__cli_race_run(const sl__cli_trace *t, const sl__cli_race_config *cfg,
                     sl__cli_race_result *results, char *err, size_t errlen) {
    int64_t span = t->n ? t->reqs[t->n - 1].t : 0;
    int64_t base = sl__cli_sim_time_base(cfg->rate.period, span);
    for (int i = 0; i < cfg->nalgs; i++) {
        int rc = run_one(t, cfg, cfg->algs[i], base, &results[i], err, errlen);
        if (rc < 0) {
            sl__cli_race_results_free(results, i + 1);
            return rc;
        }
    }
    return 0;
}

/* ---- output ----------------------------------------------------------------- */

static const char *const race_columns[] = {"algorithm",  "allowed",   "rejected",   "busiest",
                                           "busiest_at", "max_delay", "busiest_key"};

/* What the race's view->cfg points to: the race's input. */
typedef struct race_input {
    const sl__cli_trace *t;
    const sl__cli_race_config *cfg;
    uint64_t seed;
} race_input;

static int print_summary(FILE *fp, sl__cli_out_format f, const sl__cli_sim_view *view) {
    const race_input *in = view->cfg;
    const sl__cli_trace *t = in->t;
    const sl__cli_race_config *cfg = in->cfg;
    const sl__cli_race_result *res = view->result;
    const char *rate_text = view->rate_text;
    uint64_t seed = in->seed;
    /* the text table shows busiest_key only when there are several keys;
     * CSV and JSON always have it, so their shape does not depend on the trace */
    sl__cli_out_table *tab =
        sl__cli_out_table_new(f == OUT_TABLE && t->nkeys == 1 ? 6 : 7, race_columns);
    if (!tab) return SL_ENOMEM;
    char b1[40];
    for (int i = 0; i < cfg->nalgs; i++) {
        const sl__cli_race_result *r = &res[i];
        sl__cli_out_table_add(tab, CELL_STR, "%s", sl_algorithm_name(r->alg));
        sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)r->allowed);
        sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)r->rejected);
        sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)r->busiest);
        sl__cli_out_table_add(tab, CELL_NUM, "%s",
                              sl__cli_fmt_seconds(r->busiest_at, 3, b1, sizeof b1));
        if (r->alg == SL_LEAKY_QUEUE)
            sl__cli_out_table_add(tab, CELL_NUM, "%s",
                                  sl__cli_fmt_seconds(r->max_delay, 3, b1, sizeof b1));
        else
            sl__cli_out_table_add(tab, CELL_NULL, "-");
        if (f != OUT_TABLE || t->nkeys > 1)
            sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)r->busiest_key);
    }
    char period[40];
    sl__cli_fmt_seconds(cfg->rate.period, 0, period, sizeof period);
    int64_t first = t->reqs[0].t, last = t->reqs[t->n - 1].t;
    int rc = 0;
    if (f == OUT_TABLE) {
        char b2[40];
        fprintf(fp, "trace %s: %zu requests from %s s to %s s, %zu key%s\n", t->name, t->n,
                sl__cli_fmt_seconds(first, 3, b1, sizeof b1),
                sl__cli_fmt_seconds(last, 3, b2, sizeof b2), t->nkeys, t->nkeys == 1 ? "" : "s");
        fprintf(fp,
                "limit %s: windows allow %lld per %s s, buckets refill %s with burst %lld;\n"
                "busiest = most requests reaching the server in any %s s (queue: at release)%s\n\n",
                rate_text, (long long)cfg->rate.limit, period, rate_text, (long long)cfg->burst,
                period, t->nkeys > 1 ? ";\nbusiest_key = the same for the busiest single key" : "");
        rc = sl__cli_out_table_print(tab, fp, f, 0);
    } else if (f == OUT_CSV) {
        rc = sl__cli_out_table_print(tab, fp, f, 0);
    } else {
        fputs("{\n  \"trace\": ", fp);
        sl__cli_out_json_string(fp, t->name);
        fprintf(fp, ",\n  \"requests\": %zu,\n  \"keys\": %zu,\n  \"rate\": ", t->n, t->nkeys);
        sl__cli_out_json_string(fp, rate_text);
        fprintf(fp, ",\n  \"period\": %s,\n  \"burst\": %lld,\n  \"seed\": %llu,\n", period,
                (long long)cfg->burst, (unsigned long long)seed);
        fputs("  \"results\": ", fp);
        rc = sl__cli_out_table_print(tab, fp, f, 2);
        fputs("\n}\n", fp);
    }
    sl__cli_out_table_free(tab);
    return rc;
}

/* --log: every decision as CSV. Returns 0, or SL_EINVAL with "path: cannot
 * write: ..." / "path: write error: ..." in err. */
static int write_log(const char *path, const sl__cli_trace *t, const sl__cli_race_config *cfg,
                     const sl__cli_race_result *res, char *err, size_t errlen) {
    FILE *fp = fopen(path, "w");
    if (!fp)
        return sl__cli_fail(SL_EINVAL, err, errlen, "%s: cannot write: %s", path, strerror(errno));
    fputs("algorithm,time,key,cost,allowed,delay\n", fp);
    char tb[40], db[40];
    for (int a = 0; a < cfg->nalgs; a++) {
        const char *name = sl_algorithm_name(res[a].alg);
        for (size_t i = 0; i < t->n; i++) {
            const sl__cli_trace_req *q = &t->reqs[i];
            fprintf(fp, "%s,%s,%s,%lld,%d,%s\n", name, sl__cli_trace_time_text(q, tb, sizeof tb),
                    t->keys[q->key], (long long)q->cost, res[a].ok[i] ? 1 : 0,
                    sl__cli_fmt_seconds(res[a].delay[i], 3, db, sizeof db));
        }
    }
    int bad = ferror(fp);
    if (fclose(fp) != 0) bad = 1;
    if (bad)
        return sl__cli_fail(SL_EINVAL, err, errlen, "%s: write error: %s", path, strerror(errno));
    return 0;
}

/* ---- chart ------------------------------------------------------------------ */

static const char race_css[] =
    ".title{font-size:18px;font-weight:600;fill:#1f2933}\n"
    ".sub{font-size:12.5px;fill:#52606d}\n"
    ".alg{font-size:14px;font-weight:600;fill:#1f2933}\n"
    ".stat{font-size:11.5px;fill:#52606d}\n"
    ".tick{font-size:11px;fill:#52606d}\n"
    ".legend{font-size:12px;fill:#323f4b}\n"
    ".band{fill:#f5f7fa}\n"
    ".base{stroke:#cbd2d9;stroke-width:1}\n"
    ".edge{stroke:#9aa5b1;stroke-width:1;stroke-dasharray:3 3}\n"
    ".axis{stroke:#616e7c;stroke-width:1}\n"
    ".busy{fill:#2f80ed;fill-opacity:0.13;stroke:#2f80ed;stroke-opacity:0.5;stroke-width:1}\n"
    ".ok{fill:#1f9d55}\n"
    ".no{fill:#e12d39}\n"
    ".wait{fill:#f0a202}\n"
    ".rel{fill:#1f9d55}\n"
    ".link{stroke:#f0a202;stroke-width:1;stroke-opacity:0.8}";

/* The smallest 1, 2 or 5 times a power of ten (in ns) that cuts span into
 * at most `parts` steps. */
static int64_t nice_step(int64_t span, int64_t parts) {
    int64_t step = 1;
    for (;;) {
        for (int m = 1; m <= 5; m += (m == 1 ? 1 : 3)) {
            if (step * m * parts >= span) return step * m;
        }
        if (step > INT64_MAX / 100) return step * 10;
        step *= 10;
    }
}

#define RACE_SVG_W     1000.0 /* the chart's width */
#define RACE_SVG_RIGHT 24.0   /* the margin right of the plot */

typedef struct race_chart {
    sl__cli_svg *s;
    double left, width;
    int64_t start, end; /* ns at the left and right edges */
} race_chart;

static double xt(const race_chart *c, int64_t t) {
    return c->left + c->width * ((double)(t - c->start) / (double)(c->end - c->start));
}

static void legend_item(sl__cli_svg *s, double *x, double y, const char *cls, const char *label,
                        double label_w) {
    if (cls) sl__cli_svg_rect(s, *x, y - 11, 2.5, 13, cls, NULL);
    sl__cli_svg_text(s, *x + 8, y, "legend", "start", label);
    *x += label_w;
}

/* The legend line under the title. */
static void race_legend(sl__cli_svg *s, const char *period_s) {
    double lx = 16, ly = 76;
    legend_item(s, &lx, ly, "ok", "allowed", 84);
    legend_item(s, &lx, ly, "no", "rejected", 92);
    sl__cli_svg_rect(s, lx, ly - 11, 2.5, 13, "wait", NULL);
    sl__cli_svg_line(s, lx + 1.25, ly - 11, lx + 15.25, ly - 6, "link", NULL);
    sl__cli_svg_rect(s, lx + 14, ly - 6, 2.5, 8, "rel", NULL);
    sl__cli_svg_text(s, lx + 24, ly, "legend", "start", "queued, line to its release");
    lx += 206;
    sl__cli_svg_rect(s, lx, ly - 12, 22, 14, "busy", NULL);
    sl__cli_svg_textf(s, lx + 28, ly, "legend", "start", "busiest %s s (most reaching the server)",
                      period_s);
    lx += 290;
    sl__cli_svg_line(s, lx, ly - 13, lx, ly + 2, "edge", NULL);
    sl__cli_svg_text(s, lx + 8, ly, "legend", "start", "window edge");
}

/* One algorithm's row: its band, busiest interval, name and figures, at y. */
static void race_row(const race_chart *c, const sl__cli_race_result *r, int a, double y,
                     double row_h, int64_t period, const char *period_s) {
    sl__cli_svg *s = c->s;
    char b1[40];
    if (a % 2 == 0) sl__cli_svg_rect(s, 0, y, RACE_SVG_W, row_h, "band", NULL);
    int64_t busy_end = r->busiest_at + period < c->end ? r->busiest_at + period : c->end;
    sl__cli_svg_rect(s, xt(c, r->busiest_at), y + 3, xt(c, busy_end) - xt(c, r->busiest_at),
                     row_h - 6, "busy", NULL);
    sl__cli_svg_text(s, 16, y + 22, "alg", "start", sl_algorithm_name(r->alg));
    sl__cli_svg_textf(s, 16, y + 39, "stat", "start", "%lld allowed, %lld rejected",
                      (long long)r->allowed, (long long)r->rejected);
    if (r->alg == SL_LEAKY_QUEUE)
        sl__cli_svg_textf(s, 16, y + 55, "stat", "start", "busiest %lld, max delay %s s",
                          (long long)r->busiest,
                          sl__cli_fmt_seconds(r->max_delay, 3, b1, sizeof b1));
    else
        sl__cli_svg_textf(s, 16, y + 55, "stat", "start", "busiest %lld in %s s from %s s",
                          (long long)r->busiest, period_s,
                          sl__cli_fmt_seconds(r->busiest_at, 3, b1, sizeof b1));
    sl__cli_svg_line(s, c->left, y + 41, RACE_SVG_W - RACE_SVG_RIGHT, y + 41, "base", NULL);
}

/* Request i of the trace in r's row at y: a mark for rejected, allowed, or
 * queued with a line to its release; the tooltip says which. */
static void race_request(const race_chart *c, const sl__cli_trace *t, const sl__cli_race_result *r,
                         size_t i, double y) {
    sl__cli_svg *s = c->s;
    char b1[40], b2[40];
    const sl__cli_trace_req *q = &t->reqs[i];
    double x = xt(c, q->t);
    char tip[400];
    int n = snprintf(tip, sizeof tip, "%s: t = %s s", sl_algorithm_name(r->alg),
                     sl__cli_fmt_seconds(q->t, 3, b1, sizeof b1));
    if (t->nkeys > 1 && n > 0 && (size_t)n < sizeof tip)
        n += snprintf(tip + n, sizeof tip - (size_t)n, ", key %s", t->keys[q->key]);
    if (q->cost != 1 && n > 0 && (size_t)n < sizeof tip)
        n += snprintf(tip + n, sizeof tip - (size_t)n, ", cost %lld", (long long)q->cost);
    if (n < 0 || (size_t)n >= sizeof tip) n = (int)strlen(tip);
    if (!r->ok[i]) {
        snprintf(tip + n, sizeof tip - (size_t)n, ": rejected");
        sl__cli_svg_rect(s, x - 1.25, y + 43, 2.5, 11, "no", tip);
    } else if (r->delay[i] == 0) {
        snprintf(tip + n, sizeof tip - (size_t)n, ": allowed");
        if (r->alg == SL_LEAKY_QUEUE) {
            /* the released stream shows every accepted request */
            sl__cli_svg_group_begin(s, NULL, tip);
            sl__cli_svg_rect(s, x - 1.25, y + 26, 2.5, 14, "ok", NULL);
            sl__cli_svg_rect(s, x - 1.25, y + 8, 2.5, 11, "rel", NULL);
            sl__cli_svg_group_end(s);
        } else {
            sl__cli_svg_rect(s, x - 1.25, y + 26, 2.5, 14, "ok", tip);
        }
    } else {
        int64_t rel = q->t + r->delay[i];
        snprintf(tip + n, sizeof tip - (size_t)n, ": queued %s s, released at %s s",
                 sl__cli_fmt_seconds(r->delay[i], 3, b1, sizeof b1),
                 sl__cli_fmt_seconds(rel, 3, b2, sizeof b2));
        double xr = xt(c, rel);
        sl__cli_svg_group_begin(s, NULL, tip);
        sl__cli_svg_rect(s, x - 1.25, y + 26, 2.5, 14, "wait", NULL);
        sl__cli_svg_line(s, x, y + 26, xr, y + 19, "link", NULL);
        sl__cli_svg_rect(s, xr - 1.25, y + 8, 2.5, 11, "rel", NULL);
        sl__cli_svg_group_end(s);
    }
}

/* The time axis at axis_y: ticks every step from the chart's start. */
static void race_axis(const race_chart *c, double axis_y, int64_t step) {
    char b1[40];
    sl__cli_svg_line(c->s, c->left, axis_y, RACE_SVG_W - RACE_SVG_RIGHT, axis_y, "axis", NULL);
    for (int64_t tk = c->start; tk <= c->end; tk += step) {
        double x = xt(c, tk);
        sl__cli_svg_line(c->s, x, axis_y, x, axis_y + 5, "axis", NULL);
        sl__cli_svg_text(c->s, x, axis_y + 18, "tick", "middle",
                         sl__cli_fmt_seconds(tk, 0, b1, sizeof b1));
    }
    sl__cli_svg_text(c->s, c->left + c->width / 2, axis_y + 36, "tick", "middle", "time (s)");
}

static int write_svg(const char *path, const sl__cli_sim_view *view, char *err, size_t errlen) {
    const race_input *in = view->cfg;
    const sl__cli_trace *t = in->t;
    const sl__cli_race_config *cfg = in->cfg;
    const sl__cli_race_result *res = view->result;
    const char *rate_text = view->rate_text;
    if (t->n > RACE_SVG_MAX_REQUESTS)
        return sl__cli_fail(SL_ETOOMANY, err, errlen,
                            "--svg: the chart draws at most %d requests (the trace has %zu)",
                            RACE_SVG_MAX_REQUESTS, t->n);
    const double W = RACE_SVG_W, left = 226, right = RACE_SVG_RIGHT, top = 96, row_h = 66;
    int64_t period = cfg->rate.period;
    /* the axis starts at the window edge before the first request (0 for
     * most traces), and ends a tick after the last arrival or release */
    int64_t start = t->reqs[0].t / period * period;
    int64_t last = t->reqs[t->n - 1].t;
    for (int a = 0; a < cfg->nalgs; a++)
        for (size_t i = 0; i < t->n; i++)
            if (t->reqs[i].t + res[a].delay[i] > last) last = t->reqs[i].t + res[a].delay[i];
    int64_t span = last - start < period ? period : last - start;
    int64_t step = nice_step(span, 12);
    int64_t end = start + (span / step + 1) * step; /* room after the last mark */
    double axis_y = top + row_h * cfg->nalgs + 6;
    int H = (int)(axis_y + 46);

    char title[256], period_s[40];
    sl__cli_fmt_seconds(period, 0, period_s, sizeof period_s);
    snprintf(title, sizeof title, "sluice sim race: %s trace, %s, burst %lld", t->name, rate_text,
             (long long)cfg->burst);
    sl__cli_svg *s = sl__cli_svg_open(path, (int)W, H, title, race_css, err, errlen);
    if (!s) return SL_EINVAL;
    race_chart c = {s, left, W - left - right, start, end};

    sl__cli_svg_text(s, 16, 28, "title", "start", title);
    sl__cli_svg_textf(
        s, 16, 48, "sub", "start",
        "%zu requests, %zu key%s. Windows: at most %lld per %s s, edges aligned to t = 0. "
        "Buckets: %s, room for %lld.",
        t->n, t->nkeys, t->nkeys == 1 ? "" : "s", (long long)cfg->rate.limit, period_s, rate_text,
        (long long)cfg->burst);
    race_legend(s, period_s);
    for (int a = 0; a < cfg->nalgs; a++)
        race_row(&c, &res[a], a, top + row_h * a, row_h, period, period_s);
    /* window edges, when there are few enough to read */
    if ((end - start) / period <= 200)
        for (int64_t e = start + period; e < end; e += period)
            sl__cli_svg_line(s, xt(&c, e), top, xt(&c, e), axis_y - 6, "edge", NULL);
    for (int a = 0; a < cfg->nalgs; a++)
        for (size_t i = 0; i < t->n; i++) race_request(&c, t, &res[a], i, top + row_h * a);
    race_axis(&c, axis_y, step);
    return sl__cli_svg_close(s, err, errlen);
}

/* ---- command ---------------------------------------------------------------- */

static const char race_help[] =
    "usage: sluice sim race [options]\n"
    "\n"
    "Runs every rate-limiting algorithm on the same traffic with the same limit and\n"
    "shows what each let through (the seed's \"algorithm race\").\n"
    "\n"
    "options:\n"
    "  --rate N/P           the limit: N per period P, e.g. 5/s, 100/m, 20/10s (default 5/s)\n"
    "  --burst B            bucket size for token_bucket, gcra, leaky_queue (default 5);\n"
    "                       the windows allow N per P and ignore it\n"
    "  --trace NAME|FILE    bursty (default), edge, steady, poisson, or a CSV file of\n"
    "                       time[,key[,cost]] lines (time in seconds, e.g. 0.250)\n"
    "  --algorithms LIST    comma-separated subset, in the order to show them (default all:\n"
    "                       "
    "fixed_window,sliding_log,sliding_window,token_bucket,gcra,leaky_queue)\n"
    "  --mean-rate R        requests per second of the poisson trace (default 6)\n"
    "  --seed N             seed of the random traces (default 1)\n"
    "  --format FMT         table (default), csv or json\n"
    "  --log FILE           write every decision: algorithm,time,key,cost,allowed,delay\n"
    "  --svg FILE           draw the race as an SVG chart\n"
    "  -h, --help           show this help\n"
    "\n"
    "Columns: allowed and rejected requests; busiest, the most requests that reached\n"
    "the server in any interval of one period (for leaky_queue, counted when released),\n"
    "and busiest_at, where that interval starts; max_delay, the longest wait in the\n"
    "queue (leaky_queue only); busiest_key, busiest counted for one key at a time (in\n"
    "the table only when the trace has several keys). See docs/sim.md.\n";

enum {
    O_RATE,
    O_BURST,
    O_TRACE,
    O_ALGORITHMS,
    O_MEAN_RATE,
    O_SEED,
    O_FORMAT,
    O_LOG,
    O_SVG,
    O_HELP
};
static const sl__cli_opt race_opts[] = {
    [O_RATE] = {"rate", "N/P"},
    [O_BURST] = {"burst", "B"},
    [O_TRACE] = {"trace", "NAME|FILE"},
    [O_ALGORITHMS] = {"algorithms", "LIST"},
    [O_MEAN_RATE] = {"mean-rate", "R"},
    [O_SEED] = {"seed", "N"},
    [O_FORMAT] = {"format", "FMT"},
    [O_LOG] = {"log", "FILE"},
    [O_SVG] = {"svg", "FILE"},
    [O_HELP] = {"help", NULL},
    {NULL, NULL},
};

/* What sim race's options set besides the common ones. */
typedef struct race_args {
    sl__cli_race_config cfg;
    const char *trace_arg, *log_path;
    int64_t mean_rate; /* milli-requests per second */
    uint64_t seed;
} race_args;

static int race_option(sl__cli_args *a, int idx, const char *v, void *ctx) {
    race_args *r = ctx;
    switch (idx) {
    case O_RATE:
        return sl__cli_args_rate(a, v, &r->cfg.rate);
    case O_BURST:
        return sl__cli_args_int(a, v, 1, INT64_C(1) << 61, &r->cfg.burst);
    case O_TRACE:
        r->trace_arg = v;
        return 0;
    case O_ALGORITHMS:
        return sl__cli_args_algorithms(a, v, r->cfg.algs, &r->cfg.nalgs);
    case O_MEAN_RATE:
        return sl__cli_args_decimal(a, v, 3, 1, 1000000,
                                    "requests per second from 0.001 to 1000 (at most 3 decimals)",
                                    &r->mean_rate);
    case O_SEED:
        return sl__cli_args_u64(a, v, &r->seed);
    case O_LOG:
        r->log_path = v;
        return 0;
    default:
        return 0;
    }
}

/* The limit must suit every algorithm in the race. Returns SL_OK, or the
 * first SL_E* code after printing why. */
static int race_check_params(const char *cmd, const sl__cli_race_config *cfg) {
    for (int i = 0; i < cfg->nalgs; i++) {
        int rc = sl__cli_sim_params_check(cmd, cfg->algs[i], cfg->rate, cfg->burst);
        if (rc == SL_OK) continue;
        if (cfg->algs[i] == SL_SLIDING_LOG && cfg->rate.limit > SL_SLIDING_LOG_MAX)
            fprintf(stderr,
                    "%s: sliding_log keeps at most %d entries per key; leave it out "
                    "with --algorithms\n",
                    cmd, SL_SLIDING_LOG_MAX);
        return rc;
    }
    return SL_OK;
}

/* The trace of --trace: a built-in one or a file, with at least one
 * request. Returns 0, or 1 (the exit code) after printing why. */
static int race_trace(const char *cmd, const race_args *r, sl__cli_trace *tr) {
    char err[512];
    sl__cli_trace_builtin b = sl__cli_trace_builtin_find(r->trace_arg);
    int rc = b != TRACE_NONE
                 ? sl__cli_trace_builtin_make(b, r->mean_rate, r->seed, tr, err, sizeof err)
                 : sl__cli_trace_load_file(r->trace_arg, tr, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return 1;
    }
    if (tr->n == 0) { /* only a very low --mean-rate can do this */
        fprintf(stderr, "%s: the %s trace has no requests\n", cmd, tr->name);
        sl__cli_trace_free(tr);
        return 1;
    }
    return 0;
}

int sl__cli_sim_race_main(const char *cmd, int argc, char **argv, int first) {
    race_args ra = {.cfg = {.rate = {5, SL_NS_PER_SEC}, .burst = 5, .nalgs = 6},
                    .trace_arg = "bursty",
                    .mean_rate = 6000,
                    .seed = 1};
    memcpy(ra.cfg.algs, all_algorithms, sizeof ra.cfg.algs);
    sl__cli_sim_opts common;
    int rc =
        sl__cli_sim_parse(cmd, argc, argv, first, race_opts, race_help, &common, race_option, &ra);
    if (rc != 0) return rc > 0 ? 0 : EXIT_USAGE;
    const sl__cli_race_config cfg = ra.cfg;
    if (race_check_params(cmd, &cfg) != SL_OK) return EXIT_USAGE;

    sl__cli_trace tr;
    if (race_trace(cmd, &ra, &tr) != 0) return 1;
    char err[512];
    sl__cli_race_result res[6];
    if (sl__cli_race_run(&tr, &cfg, res, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        sl__cli_trace_free(&tr);
        return 1;
    }
    char rate_text[64];
    sl_rate_format(cfg.rate, rate_text, sizeof rate_text);
    race_input in = {&tr, &cfg, ra.seed};
    sl__cli_sim_show show = {write_svg, print_summary, {&in, res, NULL, rate_text}};
    int status;
    if (ra.log_path && write_log(ra.log_path, &tr, &cfg, res, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        status = 1;
    } else {
        status = sl__cli_sim_show_result(cmd, &common, &show);
    }
    sl__cli_race_results_free(res, cfg.nalgs);
    sl__cli_trace_free(&tr);
    return status;
}
