/* sim_herd.c: `sluice sim herd`, the thundering herd of seed section 09:
 * the event simulation (a binary heap of next request times, ties broken by
 * worker number), its summary as table/CSV/JSON and a bar chart of requests
 * per 100 ms, served vs rejected. */
#include "cli/sim_herd.h"

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
#include "util/units.h"

/* ---- engine ----------------------------------------------------------------- */

typedef struct event {
    int64_t t;
    int64_t worker;
} event;

static bool before(const event *a, const event *b) {
    return a->t != b->t ? a->t < b->t : a->worker < b->worker;
}

static void heap_push(event *h, size_t *n, event e) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&e, &h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = e;
}

static event heap_pop(event *h, size_t *n) {
    event top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && before(&h[c + 1], &h[c])) c++;
        if (!before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

void sl__cli_herd_result_free(sl__cli_herd_result *r) {
    free(r->served_bin);
    free(r->rejected_bin);
    r->served_bin = r->rejected_bin = NULL;
}

/* The run's events: every worker at t = 0, each refusal a retry at its
 * hint plus jitter, until cfg->duration; counts into out. `unit` is the
 * table's params (a ramp's in units), `base` the absolute time of t = 0.
 * Returns 0, or SL_ETOOMANY (over HERD_MAX_SENT) or sl_table_check's code,
 * with a message in err. */
static int herd_events(const sl__cli_herd_config *cfg, const sl_params *unit, int64_t base,
                       sl_table *tab, event *heap, sl__cli_herd_result *out, char *err,
                       size_t errlen) {
    bool ramped = cfg->ramp.duration > 0;
    sl__prng rng;
    sl__prng_seed(&rng, cfg->seed);
    size_t n = 0;
    for (int64_t w = 0; w < cfg->workers; w++) heap_push(heap, &n, (event){0, w});
    while (n > 0) {
        event e = heap_pop(heap, &n);
        if (e.t >= cfg->duration) break; /* every other event is as late */
        if (out->sent == HERD_MAX_SENT)
            return sl__cli_fail(
                SL_ETOOMANY, err, errlen,
                "more than %d requests: use fewer --workers, a shorter --duration or "
                "a longer --retry-after",
                HERD_MAX_SENT);
        out->sent++;
        sl_decision d;
        int64_t cost = ramped ? sl_ramp_cost(unit, 1, sl_ramp_factor(&cfg->ramp, 0, e.t), 0) : 1;
        int c = sl_table_check(tab, "shared-key", 10, cost, base + e.t, &d);
        if (c != SL_OK)
            return sl__cli_fail(c, err, errlen, "%s: %s", sl_algorithm_name(cfg->alg),
                                sl_strerror(c));
        size_t bin = (size_t)(e.t / HERD_BIN);
        if (d.allowed) {
            out->served++;
            out->served_bin[bin]++;
            int64_t at = e.t + d.delay;
            if (at > out->last_served_at) out->last_served_at = at;
        } else {
            out->rejected_bin[bin]++;
            int64_t extra = cfg->jitter ? (int64_t)sl__prng_upto(&rng, (uint64_t)cfg->jitter) : 0;
            heap_push(heap, &n, (event){e.t + cfg->retry_after + extra, e.worker});
        }
    }
    return 0;
}

int sl__cli_herd_run(const sl__cli_herd_config *cfg, sl__cli_herd_result *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    out->last_served_at = out->all_served_at = -1;
    out->nbins = (size_t)((cfg->duration + HERD_BIN - 1) / HERD_BIN);
    out->served_bin = calloc(out->nbins ? out->nbins : 1, sizeof *out->served_bin);
    out->rejected_bin = calloc(out->nbins ? out->nbins : 1, sizeof *out->rejected_bin);
    event *heap = malloc((size_t)cfg->workers * sizeof *heap);
    if (!out->served_bin || !out->rejected_bin || !heap) {
        free(heap);
        sl__cli_herd_result_free(out);
        return sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
    }
    int64_t base = sl__cli_sim_time_base(cfg->rate.period, cfg->duration);
    sl_params p = {.algorithm = cfg->alg,
                   .rate = cfg->rate,
                   .burst = cfg->burst,
                   .flags = cfg->start_empty ? SL_START_EMPTY : 0,
                   .origin = base};
    sl_params unit = p; /* a ramp keeps the state in units (sluice/ramp.h) */
    if (cfg->ramp.duration > 0 && sl_ramp_params(&p, &unit) != SL_OK) {
        free(heap);
        sl__cli_herd_result_free(out);
        return sl__cli_fail(SL_EINVAL, err, errlen,
                            "--ramp-up: %s cannot be ramped with this --rate/--burst",
                            sl_algorithm_name(cfg->alg));
    }
    sl_table *tab;
    int rc = sl__cli_sim_table_create(&unit, &tab, err, errlen);
    if (rc < 0) {
        free(heap);
        sl__cli_herd_result_free(out);
        return rc;
    }
    rc = herd_events(cfg, &unit, base, tab, heap, out, err, errlen);
    free(heap);
    sl_table_destroy(tab);
    if (rc < 0) {
        sl__cli_herd_result_free(out);
        return rc;
    }
    out->unserved = cfg->workers - out->served;
    out->retries = out->sent > cfg->workers ? out->sent - cfg->workers : 0;
    if (out->unserved == 0) out->all_served_at = out->last_served_at;
    return 0;
}

/* ---- output ----------------------------------------------------------------- */

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const summary_columns[] = {
    "workers",     "algorithm", "rate",     "burst",          "start_empty",
    "retry_after", "jitter",    "duration", "seed",           "sent",
    "retries",     "served",    "unserved", "last_served_at", "all_served_at"};
static const char *const second_columns[] = {"second", "sent", "served", "rejected", "waiting"};
/* with a ramp: the same and the ramp's factor (%) and the herd without the ramp */
static const char *const ramp_summary_columns[] = {"ramp_up", "ramp_from", "served_without_ramp",
                                                   "unserved_without_ramp"};
static const char *const ramp_second_columns[] = {
    "second", "ramp", "sent", "served", "rejected", "waiting", "served_without_ramp"};

/* The ramp's factor at t as a percentage with 1 decimal ("10.0", "55.3"). */
static const char *ramp_pct(const sl__cli_herd_config *cfg, int64_t t, char *b, size_t n) {
    int64_t f = sl_ramp_factor(&cfg->ramp, 0, t) / 1000; /* tenths of a percent, floored */
    snprintf(b, n, "%lld.%lld", (long long)(f / 10), (long long)(f % 10));
    return b;
}

/* Served per second of r from bin s0 on. */
static int64_t served_second(const sl__cli_herd_result *r, size_t s0, size_t per_s) {
    int64_t ok = 0;
    for (size_t b = s0; b < s0 + per_s && b < r->nbins; b++) ok += r->served_bin[b];
    return ok;
}

static void add_seconds(sl__cli_out_table *t, int64_t ns) {
    char b[40];
    if (ns < 0)
        sl__cli_out_table_add(t, CELL_NULL, "-");
    else
        sl__cli_out_table_add(t, CELL_NUM, "%s", sl__cli_fmt_seconds(ns, 3, b, sizeof b));
}

/* The one row of totals (and, with base, the ramp's and the herd's without it). */
static void herd_summary_row(sl__cli_out_table *sum, const sl__cli_herd_config *cfg,
                             const sl__cli_herd_result *r, const char *rate_text,
                             const sl__cli_herd_result *base) {
    char b1[40];
    sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)cfg->workers);
    sl__cli_out_table_add(sum, CELL_STR, "%s", sl_algorithm_name(cfg->alg));
    sl__cli_out_table_add(sum, CELL_STR, "%s", rate_text);
    sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)cfg->burst);
    sl__cli_out_table_add(sum, CELL_NUM, "%s", cfg->start_empty ? "true" : "false");
    sl__cli_out_table_add(sum, CELL_NUM, "%s",
                          sl__cli_fmt_seconds(cfg->retry_after, 0, b1, sizeof b1));
    sl__cli_out_table_add(sum, CELL_NUM, "%s", sl__cli_fmt_seconds(cfg->jitter, 0, b1, sizeof b1));
    sl__cli_out_table_add(sum, CELL_NUM, "%s",
                          sl__cli_fmt_seconds(cfg->duration, 0, b1, sizeof b1));
    sl__cli_out_table_add(sum, CELL_NUM, "%llu", (unsigned long long)cfg->seed);
    sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)r->sent);
    sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)r->retries);
    sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)r->served);
    sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)r->unserved);
    add_seconds(sum, r->last_served_at);
    add_seconds(sum, r->all_served_at);
    if (base) {
        sl__cli_out_table_add(sum, CELL_NUM, "%s",
                              sl__cli_fmt_seconds(cfg->ramp.duration, 0, b1, sizeof b1));
        sl__cli_out_table_add(sum, CELL_NUM, "%s", ramp_pct(cfg, 0, b1, sizeof b1));
        sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)base->served);
        sl__cli_out_table_add(sum, CELL_NUM, "%lld", (long long)base->unserved);
    }
}

/* One row per second (with base, the ramp's factor and the herd without it). */
static void herd_second_rows(sl__cli_out_table *sec, const sl__cli_herd_config *cfg,
                             const sl__cli_herd_result *r, const sl__cli_herd_result *base) {
    char b1[40];
    size_t per_s = (size_t)(SL_NS_PER_SEC / HERD_BIN);
    int64_t served_so_far = 0;
    for (size_t s0 = 0; s0 < r->nbins; s0 += per_s) {
        int64_t ok = 0, no = 0;
        for (size_t b = s0; b < s0 + per_s && b < r->nbins; b++)
            ok += r->served_bin[b], no += r->rejected_bin[b];
        served_so_far += ok;
        sl__cli_out_table_add(sec, CELL_NUM, "%zu", s0 / per_s);
        if (base)
            sl__cli_out_table_add(sec, CELL_NUM, "%s",
                                  ramp_pct(cfg, (int64_t)s0 * HERD_BIN, b1, sizeof b1));
        sl__cli_out_table_add(sec, CELL_NUM, "%lld", (long long)ok + no);
        sl__cli_out_table_add(sec, CELL_NUM, "%lld", (long long)ok);
        sl__cli_out_table_add(sec, CELL_NUM, "%lld", (long long)no);
        sl__cli_out_table_add(sec, CELL_NUM, "%lld", (long long)(cfg->workers - served_so_far));
        if (base)
            sl__cli_out_table_add(sec, CELL_NUM, "%lld", (long long)served_second(base, s0, per_s));
    }
}

/* --format table: the story above the per-second table and the totals below. */
static int print_herd_text(FILE *fp, const sl__cli_herd_config *cfg, const sl__cli_herd_result *r,
                           const char *rate_text, const sl__cli_herd_result *base,
                           const sl__cli_out_table *sec) {
    char b1[40], b2[40], b3[40];
    size_t per_s = (size_t)(SL_NS_PER_SEC / HERD_BIN);
    fprintf(fp,
            "herd: %lld workers share one key limited to %s, burst %lld (%s%s); all start "
            "at 0 s.\nEach 429 says Retry-After %s s; a worker waits that plus up to %s s of "
            "jitter. %s s, seed %llu.\n\n",
            (long long)cfg->workers, rate_text, (long long)cfg->burst, sl_algorithm_name(cfg->alg),
            cfg->start_empty ? ", exhausted at 0 s" : "",
            sl__cli_fmt_seconds(cfg->retry_after, 0, b1, sizeof b1),
            sl__cli_fmt_seconds(cfg->jitter, 0, b2, sizeof b2),
            sl__cli_fmt_seconds(cfg->duration, 0, b3, sizeof b3), (unsigned long long)cfg->seed);
    if (base)
        fprintf(fp,
                "0 s is the store's recovery: ramp_up lets %s%% of the burst and rate "
                "through, all of it after %s s;\nserved_without_ramp is the same herd "
                "against the whole limit from 0 s.\n\n",
                ramp_pct(cfg, 0, b1, sizeof b1),
                sl__cli_fmt_seconds(cfg->ramp.duration, 0, b2, sizeof b2));
    int rc = sl__cli_out_table_print(sec, fp, OUT_TABLE, 0);
    fprintf(fp, "\nsent %lld (%lld retries), served %lld, unserved %lld after %s s; ",
            (long long)r->sent, (long long)r->retries, (long long)r->served, (long long)r->unserved,
            sl__cli_fmt_seconds(cfg->duration, 0, b1, sizeof b1));
    if (r->last_served_at < 0)
        fputs("nobody was served\n", fp);
    else if (r->unserved == 0)
        fprintf(fp, "everyone was served by %s s\n",
                sl__cli_fmt_seconds(r->last_served_at, 3, b1, sizeof b1));
    else
        fprintf(fp, "the last worker to get through was served at %s s\n",
                sl__cli_fmt_seconds(r->last_served_at, 3, b1, sizeof b1));
    if (base)
        fprintf(fp,
                "without ramp_up: served %lld, unserved %lld; in the first second %lld "
                "were served, %lld with the ramp\n",
                (long long)base->served, (long long)base->unserved,
                (long long)served_second(base, 0, per_s), (long long)served_second(r, 0, per_s));
    return rc;
}

/* view->base: the same herd without the ramp (cfg has one), or NULL. */
static int print_herd(FILE *fp, sl__cli_out_format f, const sl__cli_sim_view *view) {
    const sl__cli_herd_config *cfg = view->cfg;
    const sl__cli_herd_result *r = view->result, *base = view->base;
    const char *sum_cols[19];
    size_t nsum = N_OF(summary_columns);
    memcpy(sum_cols, summary_columns, sizeof summary_columns);
    if (base) memcpy(sum_cols + nsum, ramp_summary_columns, sizeof ramp_summary_columns);
    if (base) nsum += N_OF(ramp_summary_columns);
    sl__cli_out_table *sum = sl__cli_out_table_new(nsum, sum_cols);
    sl__cli_out_table *sec = base ? sl__cli_out_table_new(7, ramp_second_columns)
                                  : sl__cli_out_table_new(5, second_columns);
    if (!sum || !sec) {
        sl__cli_out_table_free(sum);
        sl__cli_out_table_free(sec);
        return SL_ENOMEM;
    }
    herd_summary_row(sum, cfg, r, view->rate_text, base);
    herd_second_rows(sec, cfg, r, base);
    int rc = 0;
    if (f == OUT_TABLE) {
        rc = print_herd_text(fp, cfg, r, view->rate_text, base, sec);
    } else if (f == OUT_CSV) {
        rc = sl__cli_out_table_print(sum, fp, f, 0);
    } else {
        /* the summary's members, then the per-second rows */
        fputs("{\n", fp);
        rc = sl__cli_out_table_print_members(sum, fp, 2);
        fputs("  \"per_second\": ", fp);
        if (rc == 0) rc = sl__cli_out_table_print(sec, fp, f, 2);
        fputs("\n}\n", fp);
    }
    sl__cli_out_table_free(sum);
    sl__cli_out_table_free(sec);
    return rc;
}

/* ---- chart ------------------------------------------------------------------ */

static const char herd_css[] = ".title{font-size:18px;font-weight:600;fill:#1f2933}\n"
                               ".sub{font-size:12.5px;fill:#52606d}\n"
                               ".tick{font-size:11px;fill:#52606d}\n"
                               ".legend{font-size:12px;fill:#323f4b}\n"
                               ".grid{stroke:#e4e7eb;stroke-width:1}\n"
                               ".axis{stroke:#616e7c;stroke-width:1}\n"
                               ".ok{fill:#1f9d55}\n"
                               ".no{fill:#e12d39}\n"
                               ".limit{stroke:#1f2933;stroke-width:1.2;stroke-dasharray:5 4}";
/* with a ramp, appended: its limit as a step line, and the herd without it */
static const char herd_ramp_css[] = ".ramp{stroke:#1f2933;stroke-width:1.2;stroke-dasharray:5 4;"
                                    "fill:none}\n"
                                    ".base{stroke:#3f51b5;stroke-width:1.6;fill:none}";

/* The ramp's limit per bin (a step per bin) and the herd without the ramp
 * (base: its served per bin), over the bars. */
static void draw_ramp(sl__cli_svg *s, const sl__cli_herd_config *cfg,
                      const sl__cli_herd_result *base, double left, double bw, double axis_y,
                      double plot_h, int64_t ytop, double limit_per_bin) {
    sl__cli_svg_polyline_begin(s, "base");
    for (size_t b = 0; b < base->nbins; b++) {
        double y = axis_y - plot_h * (double)base->served_bin[b] / (double)ytop;
        sl__cli_svg_polyline_point(s, left + bw * (double)b, y);
        sl__cli_svg_polyline_point(s, left + bw * (double)(b + 1), y);
    }
    sl__cli_svg_polyline_end(s);
    sl__cli_svg_polyline_begin(s, "ramp");
    for (size_t b = 0; b < base->nbins; b++) {
        double f =
            (double)sl_ramp_factor(&cfg->ramp, 0, (int64_t)b * HERD_BIN) / (double)SL_RAMP_ONE;
        double v = limit_per_bin * f;
        if (v > (double)ytop) v = (double)ytop;
        double y = axis_y - plot_h * v / (double)ytop;
        sl__cli_svg_polyline_point(s, left + bw * (double)b, y);
        sl__cli_svg_polyline_point(s, left + bw * (double)(b + 1), y);
    }
    sl__cli_svg_polyline_end(s);
}

/* The chart's geometry: the plot's left edge and width, a bin's width, the
 * x axis's y, the plot's height, the y axis's top value and the limit per
 * bin (a fraction of requests, presentation only). */
typedef struct herd_chart {
    sl__cli_svg *s;
    double left, pw, bw, axis_y, plot_h;
    int64_t ytop, ystep;
    double limit_per_bin;
} herd_chart;

/* The y axis: the tallest bar (or the herd without the ramp, or the limit)
 * with headroom, rounded up to a whole step. */
static void herd_scale(herd_chart *c, const sl__cli_herd_config *cfg, const sl__cli_herd_result *r,
                       const sl__cli_herd_result *base) {
    c->limit_per_bin = (double)cfg->rate.limit * (double)HERD_BIN / (double)cfg->rate.period;
    int64_t ymax = 1;
    for (size_t b = 0; b < r->nbins; b++)
        if (r->served_bin[b] + r->rejected_bin[b] > ymax)
            ymax = r->served_bin[b] + r->rejected_bin[b];
    for (size_t b = 0; base && b < base->nbins; b++)
        if (base->served_bin[b] > ymax) ymax = base->served_bin[b];
    if (c->limit_per_bin > (double)ymax && c->limit_per_bin < 1e15)
        ymax = (int64_t)c->limit_per_bin + 1;
    ymax += ymax / 20 + 1; /* headroom above the tallest bar */
    c->ystep = sl__cli_svg_round_step(ymax);
    c->ytop = (ymax + c->ystep - 1) / c->ystep * c->ystep;
    c->bw = c->pw / (double)(r->nbins ? r->nbins : 1);
}

static void herd_legend(const herd_chart *c, const char *rate_text, bool ramped) {
    sl__cli_svg *s = c->s;
    double ly = 74;
    sl__cli_svg_rect(s, 16, ly - 11, 12, 12, "ok", NULL);
    sl__cli_svg_text(s, 34, ly, "legend", "start", "served (200)");
    sl__cli_svg_rect(s, 130, ly - 11, 12, 12, "no", NULL);
    sl__cli_svg_text(s, 148, ly, "legend", "start", "rejected (429)");
    sl__cli_svg_line(s, 260, ly - 5, 290, ly - 5, "limit", NULL);
    char per_bin[48];
    double lpb = c->limit_per_bin;
    if (lpb < 1e15 && !(lpb > (double)(int64_t)lpb))
        snprintf(per_bin, sizeof per_bin, "%lld", (long long)lpb);
    else
        snprintf(per_bin, sizeof per_bin, "about %.1f", lpb);
    sl__cli_svg_textf(s, 298, ly, "legend", "start", "the limit, %s: %s per 100 ms on average%s",
                      rate_text, per_bin, ramped ? " (ramped up)" : "");
    if (ramped) {
        sl__cli_svg_line(s, 700, ly - 5, 730, ly - 5, "base", NULL);
        sl__cli_svg_text(s, 738, ly, "legend", "start", "served without ramp_up");
    }
}

/* One stacked bar per bin: served below, rejected above, a tooltip each. */
static void herd_bars(const herd_chart *c, const sl__cli_herd_result *r) {
    char b1[40], b2[40];
    for (size_t b = 0; b < r->nbins; b++) {
        int64_t ok = r->served_bin[b], no = r->rejected_bin[b];
        if (ok + no == 0) continue;
        char tip[160];
        snprintf(tip, sizeof tip, "%s to %s s: %lld served, %lld rejected",
                 sl__cli_fmt_seconds((int64_t)b * HERD_BIN, 1, b1, sizeof b1),
                 sl__cli_fmt_seconds((int64_t)(b + 1) * HERD_BIN, 1, b2, sizeof b2), (long long)ok,
                 (long long)no);
        double x = c->left + c->bw * (double)b;
        double hok = c->plot_h * (double)ok / (double)c->ytop;
        double hno = c->plot_h * (double)no / (double)c->ytop;
        double gap = c->bw > 4 ? 1 : 0;
        sl__cli_svg_group_begin(c->s, NULL, tip);
        if (ok) sl__cli_svg_rect(c->s, x + gap / 2, c->axis_y - hok, c->bw - gap, hok, "ok", NULL);
        if (no)
            sl__cli_svg_rect(c->s, x + gap / 2, c->axis_y - hok - hno, c->bw - gap, hno, "no",
                             NULL);
        sl__cli_svg_group_end(c->s);
    }
}

static int write_herd_svg(const char *path, const sl__cli_sim_view *view, char *err,
                          size_t errlen) {
    const sl__cli_herd_config *cfg = view->cfg;
    const sl__cli_herd_result *r = view->result, *base = view->base;
    const char *rate_text = view->rate_text;
    const double W = 1000, left = 64, right = 24, top = 112, plot_h = 250;
    double axis_y = top + plot_h;
    int H = (int)(axis_y + 48);
    char title[200], b1[40], b2[40];
    snprintf(title, sizeof title,
             "sluice sim herd: %lld workers, %s burst %lld, Retry-After %s s, jitter up to %s s",
             (long long)cfg->workers, rate_text, (long long)cfg->burst,
             sl__cli_fmt_seconds(cfg->retry_after, 0, b1, sizeof b1),
             sl__cli_fmt_seconds(cfg->jitter, 0, b2, sizeof b2));
    char css[sizeof herd_css + sizeof herd_ramp_css + 1];
    snprintf(css, sizeof css, "%s%s%s", herd_css, base ? "\n" : "", base ? herd_ramp_css : "");
    sl__cli_svg *s = sl__cli_svg_open(path, (int)W, H, title, css, err, errlen);
    if (!s) return SL_EINVAL;
    sl__cli_svg_text(s, 16, 28, "title", "start", title);
    if (r->unserved == 0)
        sl__cli_svg_textf(s, 16, 48, "sub", "start",
                          "sent %lld requests for %lld workers; all served, the last at %s s.",
                          (long long)r->sent, (long long)cfg->workers,
                          sl__cli_fmt_seconds(r->last_served_at, 3, b1, sizeof b1));
    else
        sl__cli_svg_textf(
            s, 16, 48, "sub", "start",
            "sent %lld requests for %lld workers; %lld served, %lld still unserved after "
            "%s s.",
            (long long)r->sent, (long long)cfg->workers, (long long)r->served,
            (long long)r->unserved, sl__cli_fmt_seconds(cfg->duration, 0, b1, sizeof b1));

    herd_chart c = {
        .s = s, .left = left, .pw = W - left - right, .axis_y = axis_y, .plot_h = plot_h};
    herd_scale(&c, cfg, r, base);
    int64_t ytop = c.ytop, ystep = c.ystep;
    double pw = c.pw, bw = c.bw, limit_per_bin = c.limit_per_bin;
    herd_legend(&c, rate_text, base != NULL);

    for (int64_t v = 0; v <= ytop; v += ystep) {
        double y = axis_y - plot_h * (double)v / (double)ytop;
        sl__cli_svg_line(s, left, y, W - right, y, "grid", NULL);
        sl__cli_svg_textf(s, left - 6, y + 4, "tick", "end", "%lld", (long long)v);
    }
    sl__cli_svg_text(s, 16, top - 14, "tick", "start", "requests per 100 ms");

    herd_bars(&c, r);
    if (base) {
        draw_ramp(s, cfg, base, left, bw, axis_y, plot_h, ytop, limit_per_bin);
    } else if (limit_per_bin <= (double)ytop) {
        double y = axis_y - plot_h * limit_per_bin / (double)ytop;
        sl__cli_svg_line(s, left, y, W - right, y, "limit", NULL);
    }

    sl__cli_svg_line(s, left, axis_y, W - right, axis_y, "axis", NULL);
    int64_t secs = sl__ceil_s(cfg->duration);
    int64_t tstep = sl__cli_svg_round_step(secs * 6 / 12 + 1);
    for (int64_t sec = 0; sec * SL_NS_PER_SEC <= (int64_t)r->nbins * HERD_BIN; sec += tstep) {
        double x = left + bw * ((double)(sec * SL_NS_PER_SEC) / HERD_BIN); /* whole bins */
        sl__cli_svg_line(s, x, axis_y, x, axis_y + 5, "axis", NULL);
        sl__cli_svg_textf(s, x, axis_y + 18, "tick", "middle", "%lld", (long long)sec);
    }
    sl__cli_svg_text(s, left + pw / 2, axis_y + 38, "tick", "middle", "time (s)");
    return sl__cli_svg_close(s, err, errlen);
}

/* ---- command ---------------------------------------------------------------- */

static const char herd_help[] =
    "usage: sluice sim herd [options]\n"
    "\n"
    "Many workers share one API key. All send at t = 0; each 429 carries Retry-After;\n"
    "a refused worker waits the hint plus a uniform random extra of up to --jitter\n"
    "seconds, and retries until it is served or --duration is over (seed section 09).\n"
    "\n"
    "options:\n"
    "  --workers N          workers sharing the key (default 300)\n"
    "  --rate N/P           the key's limit (default 150/s)\n"
    "  --burst B            its burst (default 30)\n"
    "  --algorithm A        the server's algorithm (default token_bucket)\n"
    "  --retry-after S      the hint in every 429, seconds, up to 3 decimals (default 2)\n"
    "  --jitter S           the most a worker adds to the hint, seconds (default 0):\n"
    "                       a uniform random wait in [0, S], drawn in whole ns\n"
    "  --duration S         how long to simulate, seconds (default 12)\n"
    "  --seed N             seed of the jitter (default 1)\n"
    "  --start-empty        the key is exhausted at t = 0, so every worker is refused\n"
    "                       at first (the seed's telling: 300 workers all told 2 s)\n"
    "  --ramp-up S          t = 0 is the store's recovery and the limit ramps up over S\n"
    "                       seconds (ramp_up:); shown next to the same herd without it\n"
    "  --ramp-from P        the share of the burst and rate at t = 0, percent, up to 4\n"
    "                       decimals (default 10; with --ramp-up)\n"
    "  --format FMT         table (default: per second, then the totals), csv (one row\n"
    "                       of totals) or json (totals and per_second)\n"
    "  --svg FILE           bar chart of requests per 100 ms, served vs rejected\n"
    "  -h, --help           show this help\n"
    "\n"
    "Results: sent (requests), retries (sent minus each worker's first request),\n"
    "served (workers that got a 200), unserved (workers still waiting at the end),\n"
    "last_served_at (when the last worker to get through was served, seconds; null\n"
    "if nobody was) and all_served_at (null unless everyone was served). See docs/sim.md.\n";

enum {
    H_WORKERS,
    H_RATE,
    H_BURST,
    H_ALGORITHM,
    H_RETRY,
    H_JITTER,
    H_DURATION,
    H_SEED,
    H_START_EMPTY,
    H_RAMP_UP,
    H_RAMP_FROM,
    H_FORMAT,
    H_SVG,
    H_HELP
};
static const sl__cli_opt herd_opts[] = {
    [H_WORKERS] = {"workers", "N"},
    [H_RATE] = {"rate", "N/P"},
    [H_BURST] = {"burst", "B"},
    [H_ALGORITHM] = {"algorithm", "A"},
    [H_RETRY] = {"retry-after", "S"},
    [H_JITTER] = {"jitter", "S"},
    [H_DURATION] = {"duration", "S"},
    [H_SEED] = {"seed", "N"},
    [H_START_EMPTY] = {"start-empty", NULL},
    [H_RAMP_UP] = {"ramp-up", "S"},
    [H_RAMP_FROM] = {"ramp-from", "P"},
    [H_FORMAT] = {"format", "FMT"},
    [H_SVG] = {"svg", "FILE"},
    [H_HELP] = {"help", NULL},
    {NULL, NULL},
};

/* sim herd's own options into the config. */
static int herd_option(sl__cli_args *a, int idx, const char *v, void *ctx) {
    sl__cli_herd_config *cfg = ctx;
    switch (idx) {
    case H_WORKERS:
        return sl__cli_args_int(a, v, 1, 100000, &cfg->workers);
    case H_RATE:
        return sl__cli_args_rate(a, v, &cfg->rate);
    case H_BURST:
        return sl__cli_args_int(a, v, 1, INT64_C(1) << 61, &cfg->burst);
    case H_ALGORITHM:
        return sl__cli_args_algorithm(a, v, &cfg->alg);
    case H_RETRY:
        return sl__cli_args_seconds(a, v, 1, 3600000, "seconds from 0.001 to 3600",
                                    &cfg->retry_after);
    case H_JITTER:
        return sl__cli_args_seconds(a, v, 0, 3600000, "seconds from 0 to 3600", &cfg->jitter);
    case H_DURATION:
        return sl__cli_args_seconds(a, v, 1, 3600000, "seconds from 0.001 to 3600", &cfg->duration);
    case H_SEED:
        return sl__cli_args_u64(a, v, &cfg->seed);
    case H_START_EMPTY:
        cfg->start_empty = true;
        return 0;
    case H_RAMP_UP:
        return sl__cli_args_seconds(a, v, 1, 86400000, "seconds from 0.001 to 86400",
                                    &cfg->ramp.duration);
    case H_RAMP_FROM:
        return sl__cli_args_decimal(a, v, 4, 1, SL_RAMP_ONE, "a percentage above 0 and at most 100",
                                    &cfg->ramp.from);
    default:
        return 0;
    }
}

int sl__cli_sim_herd_main(const char *cmd, int argc, char **argv, int first) {
    sl__cli_herd_config cfg = {
        .workers = 300,
        .alg = SL_TOKEN_BUCKET,
        .rate = {150, SL_NS_PER_SEC},
        .burst = 30,
        .retry_after = 2 * SL_NS_PER_SEC,
        .jitter = 0,
        .duration = 12 * SL_NS_PER_SEC,
        .seed = 1,
        .ramp = {.duration = 0, .from = SL_RAMP_ONE / 10},
    };
    sl__cli_sim_opts common;
    int rc =
        sl__cli_sim_parse(cmd, argc, argv, first, herd_opts, herd_help, &common, herd_option, &cfg);
    if (rc != 0) return rc > 0 ? 0 : EXIT_USAGE;
    if (sl__cli_sim_params_check(cmd, cfg.alg, cfg.rate, cfg.burst) != SL_OK) return EXIT_USAGE;

    char err[512];
    sl__cli_herd_result r, base = {0};
    sl__cli_herd_config plain = cfg;
    plain.ramp.duration = 0;
    bool ramped = cfg.ramp.duration > 0;
    if (sl__cli_herd_run(&cfg, &r, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return 1;
    }
    if (ramped && sl__cli_herd_run(&plain, &base, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        sl__cli_herd_result_free(&r);
        return 1;
    }
    char rate_text[64];
    sl_rate_format(cfg.rate, rate_text, sizeof rate_text);
    sl__cli_sim_show show = {
        write_herd_svg, print_herd, {&cfg, &r, ramped ? &base : NULL, rate_text}};
    int status = sl__cli_sim_show_result(cmd, &common, &show);
    sl__cli_herd_result_free(&r);
    sl__cli_herd_result_free(&base);
    return status;
}
