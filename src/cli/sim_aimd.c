/* sim_aimd.c: `sluice sim aimd`, the adaptive client of seed section 10:
 * the simulation (a paced client, a limited server, integer rates), the rate
 * over time as table/CSV/JSON (one row per second) and the sawtooth as an
 * SVG line chart. */
#include "cli/sim_aimd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/error.h"
#include "cli/output.h"
#include "cli/sim.h"
#include "cli/svg.h"
#include "util/units.h"

/* ---- engine ----------------------------------------------------------------- */

#define MILLI_PERIOD (1000 * SL_NS_PER_SEC) /* rate r milli-req/s = r per 1000 s */

/* A rate in milli-requests per second as short text: "0.5", "20", "21.437". */
static char *short_milli(int64_t v, char *buf, size_t size) {
    return sl__cli_fmt_seconds(v * 1000000, 0, buf, size);
}

int64_t sl__cli_aimd_step(const sl__cli_aimd_config *cfg, int64_t rate, bool got_429) {
    int64_t next;
    if (got_429) {
        next = rate * cfg->decrease_ppm / 1000000; /* rounded down */
        if (next < cfg->floor) next = cfg->floor;
    } else {
        next = rate + cfg->increase;
        if (next > cfg->cap) next = cfg->cap;
    }
    return next;
}

void sl__cli_aimd_result_free(sl__cli_aimd_result *r) {
    free(r->pts);
    r->pts = NULL;
    r->n = 0;
}

int sl__cli_aimd_run(const sl__cli_aimd_config *cfg, sl__cli_aimd_result *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    sl_params p = {.algorithm = cfg->alg, .rate = cfg->rate, .burst = cfg->burst};
    sl_table *server;
    int rc = sl__cli_sim_table_create(&p, &server, err, errlen);
    if (rc < 0) return rc;
    int64_t base = sl__cli_sim_time_base(cfg->rate.period, cfg->duration);
    sl_limiter *client;
    int64_t rate = cfg->start;
    rc = sl_limiter_create((sl_rate){rate, MILLI_PERIOD}, 1, 0, base, &client);
    if (rc != SL_OK) {
        sl_table_destroy(server);
        return sl__cli_fail(rc, err, errlen, "client limiter: %s", sl_strerror(rc));
    }
    size_t cap = 0;
    int64_t now = base;
    rc = 0;
    for (;;) {
        /* the client sends as soon as its own limiter lets it */
        sl_reservation res;
        int c = sl_limiter_reserve(client, 1, now, -1, &res);
        if (c != SL_OK) {
            rc = sl__cli_fail(c, err, errlen, "client limiter: %s", sl_strerror(c));
            break;
        }
        now = res.time_to_act;
        if (now - base >= cfg->duration) break;
        if (out->n == AIMD_MAX_REQUESTS) {
            rc =
                sl__cli_fail(SL_ETOOMANY, err, errlen,
                             "more than %d requests: lower --cap or --duration", AIMD_MAX_REQUESTS);
            break;
        }
        sl_decision d;
        c = sl_table_check(server, "client", 6, 1, now, &d);
        if (c != SL_OK) {
            rc = sl__cli_fail(c, err, errlen, "server: %s", sl_strerror(c));
            break;
        }
        rate = sl__cli_aimd_step(cfg, rate, !d.allowed);
        c = sl_limiter_set_rate(client, (sl_rate){rate, MILLI_PERIOD}, now);
        if (c != SL_OK) {
            rc = sl__cli_fail(c, err, errlen, "client limiter: %s", sl_strerror(c));
            break;
        }
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            sl__cli_aimd_point *np = realloc(out->pts, ncap * sizeof *np);
            if (!np) {
                rc = sl__cli_fail(SL_ENOMEM, err, errlen, "out of memory");
                break;
            }
            out->pts = np;
            cap = ncap;
        }
        out->pts[out->n++] = (sl__cli_aimd_point){now - base, rate, d.allowed};
        if (d.allowed)
            out->served++;
        else
            out->rejected++;
    }
    sl_limiter_destroy(client);
    sl_table_destroy(server);
    if (rc < 0) sl__cli_aimd_result_free(out);
    return rc;
}

/* ---- output ----------------------------------------------------------------- */

static const char *const aimd_columns[] = {"second", "rate",   "min_rate", "max_rate",
                                           "sent",   "served", "rejected"};

static int print_aimd(FILE *fp, sl__cli_out_format f, const sl__cli_sim_view *view) {
    const sl__cli_aimd_config *cfg = view->cfg;
    const sl__cli_aimd_result *r = view->result;
    const char *rate_text = view->rate_text;
    sl__cli_out_table *tab = sl__cli_out_table_new(7, aimd_columns);
    if (!tab) return SL_ENOMEM;
    char b1[40], b2[40], b3[40], b4[40], b5[40];
    int64_t secs = sl__ceil_s(cfg->duration);
    int64_t rate = cfg->start;
    size_t i = 0;
    for (int64_t s = 0; s < secs; s++) {
        int64_t lo = rate, hi = rate, sent = 0, ok = 0;
        for (; i < r->n && r->pts[i].t < (s + 1) * SL_NS_PER_SEC; i++) {
            rate = r->pts[i].rate;
            if (rate < lo) lo = rate;
            if (rate > hi) hi = rate;
            sent++;
            ok += r->pts[i].ok;
        }
        sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)s);
        sl__cli_out_table_add(tab, CELL_NUM, "%s", sl__cli_fmt_milli(rate, b1, sizeof b1));
        sl__cli_out_table_add(tab, CELL_NUM, "%s", sl__cli_fmt_milli(lo, b1, sizeof b1));
        sl__cli_out_table_add(tab, CELL_NUM, "%s", sl__cli_fmt_milli(hi, b1, sizeof b1));
        sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)sent);
        sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)ok);
        sl__cli_out_table_add(tab, CELL_NUM, "%lld", (long long)(sent - ok));
    }
    char dur[40], dec[40];
    sl__cli_fmt_seconds(cfg->duration, 0, dur, sizeof dur);
    sl__cli_fmt_seconds(cfg->decrease_ppm * 1000, 0, dec, sizeof dec); /* millionths as "0.5" */
    int rc = 0;
    if (f == OUT_TABLE) {
        fprintf(fp,
                "aimd: the client starts at %s/s, adds %s/s per success, multiplies by %s per "
                "429,\nstays within %s/s .. %s/s; the server allows %s, burst %lld (%s); %s s.\n"
                "rate = the client's rate at the end of the second (requests per second)\n\n",
                short_milli(cfg->start, b1, sizeof b1), short_milli(cfg->increase, b2, sizeof b2),
                dec, short_milli(cfg->floor, b3, sizeof b3), short_milli(cfg->cap, b4, sizeof b4),
                rate_text, (long long)cfg->burst, sl_algorithm_name(cfg->alg), dur);
        rc = sl__cli_out_table_print(tab, fp, f, 0);
        sl__cli_fmt_milli((r->served * 1000 * SL_NS_PER_SEC) / cfg->duration, b5, sizeof b5);
        fprintf(fp, "\nsent %zu, served %lld, rejected %lld: %s served per second on average\n",
                r->n, (long long)r->served, (long long)r->rejected, b5);
    } else if (f == OUT_CSV) {
        rc = sl__cli_out_table_print(tab, fp, f, 0);
    } else {
        fprintf(fp, "{\n  \"start\": %s,\n", sl__cli_fmt_milli(cfg->start, b1, sizeof b1));
        fprintf(fp, "  \"increase\": %s,\n", sl__cli_fmt_milli(cfg->increase, b1, sizeof b1));
        fprintf(fp, "  \"decrease\": %s,\n", dec);
        fprintf(fp, "  \"floor\": %s,\n", sl__cli_fmt_milli(cfg->floor, b1, sizeof b1));
        fprintf(fp, "  \"cap\": %s,\n", sl__cli_fmt_milli(cfg->cap, b1, sizeof b1));
        fprintf(fp, "  \"algorithm\": \"%s\",\n  \"rate\": ", sl_algorithm_name(cfg->alg));
        sl__cli_out_json_string(fp, rate_text);
        fprintf(fp, ",\n  \"burst\": %lld,\n  \"duration\": %s,\n", (long long)cfg->burst, dur);
        fprintf(fp, "  \"sent\": %zu,\n  \"served\": %lld,\n  \"rejected\": %lld,\n", r->n,
                (long long)r->served, (long long)r->rejected);
        fputs("  \"per_second\": ", fp);
        rc = sl__cli_out_table_print(tab, fp, f, 2);
        fputs("\n}\n", fp);
    }
    sl__cli_out_table_free(tab);
    return rc;
}

/* ---- chart ------------------------------------------------------------------ */

static const char aimd_css[] =
    ".title{font-size:18px;font-weight:600;fill:#1f2933}\n"
    ".sub{font-size:12.5px;fill:#52606d}\n"
    ".tick{font-size:11px;fill:#52606d}\n"
    ".legend{font-size:12px;fill:#323f4b}\n"
    ".grid{stroke:#e4e7eb;stroke-width:1}\n"
    ".axis{stroke:#616e7c;stroke-width:1}\n"
    ".rate{fill:none;stroke:#2f80ed;stroke-width:1.8;stroke-linejoin:round}\n"
    ".limit{stroke:#1f2933;stroke-width:1.2;stroke-dasharray:5 4}\n"
    ".hit{fill:#e12d39}";

typedef struct aimd_chart {
    double left, top, pw, ph;
    int64_t duration; /* ns */
    double ymax;      /* requests per second at the top */
} aimd_chart;

static double ax(const aimd_chart *c, int64_t t) {
    return c->left + c->pw * ((double)t / (double)c->duration);
}

static double ay(const aimd_chart *c, int64_t milli) {
    return c->top + c->ph - c->ph * ((double)milli / 1000.0 / c->ymax);
}

/* A step line through every rate change, with at most four points per half
 * pixel column (entering, lowest, highest, leaving), so long runs stay small. */
static void rate_line(sl__cli_svg *s, const aimd_chart *c, const sl__cli_aimd_config *cfg,
                      const sl__cli_aimd_result *r) {
    sl__cli_svg_polyline_begin(s, "rate");
    sl__cli_svg_polyline_point(s, ax(c, 0), ay(c, cfg->start));
    int64_t prev = cfg->start;
    size_t i = 0;
    while (i < r->n) {
        long col = (long)(ax(c, r->pts[i].t) * 2);
        double x = (double)col / 2;
        int64_t enter = prev, lo = prev, hi = prev;
        for (; i < r->n && (long)(ax(c, r->pts[i].t) * 2) == col; i++) {
            prev = r->pts[i].rate;
            if (prev < lo) lo = prev;
            if (prev > hi) hi = prev;
        }
        sl__cli_svg_polyline_point(s, x, ay(c, enter));
        if (lo != enter) sl__cli_svg_polyline_point(s, x, ay(c, lo));
        if (hi != lo) sl__cli_svg_polyline_point(s, x, ay(c, hi));
        if (prev != hi) sl__cli_svg_polyline_point(s, x, ay(c, prev));
    }
    sl__cli_svg_polyline_point(s, ax(c, c->duration), ay(c, prev));
    sl__cli_svg_polyline_end(s);
}

static int64_t nice_up(double v) {
    int64_t step = 1;
    for (;;) {
        if ((double)step * 6 >= v) return step;
        if ((double)step * 12 >= v) return step * 2;
        if ((double)step * 30 >= v) return step * 5;
        step *= 10;
    }
}

/* The 429s: a mark where each cut the rate, at most one per pixel column. */
static void hit_marks(sl__cli_svg *s, const aimd_chart *c, const sl__cli_aimd_config *cfg,
                      const sl__cli_aimd_result *r) {
    char b1[40], b2[40], b3[40];
    long last_col = -1;
    int64_t before = cfg->start;
    for (size_t i = 0; i < r->n; i++) {
        long col = (long)ax(c, r->pts[i].t);
        if (!r->pts[i].ok && col != last_col) {
            char tip[120];
            snprintf(tip, sizeof tip, "429 at %s s: %s/s cut to %s/s",
                     sl__cli_fmt_seconds(r->pts[i].t, 3, b1, sizeof b1),
                     sl__cli_fmt_milli(before, b2, sizeof b2),
                     sl__cli_fmt_milli(r->pts[i].rate, b3, sizeof b3));
            sl__cli_svg_circle(s, ax(c, r->pts[i].t), ay(c, before), 3.2, "hit", tip);
            last_col = col;
        }
        before = r->pts[i].rate;
    }
}

static void aimd_legend(sl__cli_svg *s, const char *rate_text) {
    double ly = 74;
    sl__cli_svg_line(s, 16, ly - 5, 46, ly - 5, "rate", NULL);
    sl__cli_svg_text(s, 52, ly, "legend", "start", "client's rate (requests per second)");
    sl__cli_svg_circle(s, 290, ly - 5, 3.2, "hit", NULL);
    sl__cli_svg_text(s, 298, ly, "legend", "start", "a 429: the rate is cut");
    sl__cli_svg_line(s, 460, ly - 5, 490, ly - 5, "limit", NULL);
    sl__cli_svg_textf(s, 496, ly, "legend", "start", "the server's limit (%s)", rate_text);
}

static int write_aimd_svg(const char *path, const sl__cli_sim_view *view, char *err,
                          size_t errlen) {
    const sl__cli_aimd_config *cfg = view->cfg;
    const sl__cli_aimd_result *r = view->result;
    const char *rate_text = view->rate_text;
    const double W = 1000, left = 64, right = 24, top = 92, ph = 280;
    double axis_y = top + ph;
    int H = (int)(axis_y + 48);
    char title[200], b1[40], b2[40], b3[40], dec[40];
    sl__cli_fmt_seconds(cfg->decrease_ppm * 1000, 0, dec, sizeof dec);
    snprintf(title, sizeof title,
             "sluice sim aimd: +%s/s per success, x%s per 429, against a server limit of %s",
             short_milli(cfg->increase, b1, sizeof b1), dec, rate_text);
    sl__cli_svg *s = sl__cli_svg_open(path, (int)W, H, title, aimd_css, err, errlen);
    if (!s) return SL_EINVAL;
    sl__cli_svg_text(s, 16, 28, "title", "start", title);
    sl__cli_svg_textf(s, 16, 48, "sub", "start",
                      "client: starts at %s/s, between %s/s and %s/s; server: %s, burst %lld (%s). "
                      "%zu sent, %lld served, %lld refused (429).",
                      short_milli(cfg->start, b1, sizeof b1),
                      short_milli(cfg->floor, b2, sizeof b2), short_milli(cfg->cap, b3, sizeof b3),
                      rate_text, (long long)cfg->burst, sl_algorithm_name(cfg->alg), r->n,
                      (long long)r->served, (long long)r->rejected);

    double limit = (double)cfg->rate.limit * 1e9 / (double)cfg->rate.period; /* per second */
    int64_t hi = cfg->start;
    for (size_t i = 0; i < r->n; i++)
        if (r->pts[i].rate > hi) hi = r->pts[i].rate;
    double vmax = (double)hi / 1000.0;
    if (limit > vmax && limit < 1e12) vmax = limit;
    vmax *= 1.08;
    int64_t ystep = nice_up(vmax);
    double ymax = (double)ystep * (double)(int64_t)(vmax / (double)ystep + 1);
    aimd_chart c = {left, top, W - left - right, ph, cfg->duration, ymax};

    aimd_legend(s, rate_text);

    for (int64_t v = 0; (double)v <= ymax; v += ystep) {
        double y = ay(&c, v * 1000);
        sl__cli_svg_line(s, left, y, W - right, y, "grid", NULL);
        sl__cli_svg_textf(s, left - 6, y + 4, "tick", "end", "%lld", (long long)v);
    }
    if (limit <= ymax) {
        double y = c.top + c.ph - c.ph * (limit / ymax);
        sl__cli_svg_line(s, left, y, W - right, y, "limit", NULL);
    }
    rate_line(s, &c, cfg, r);
    hit_marks(s, &c, cfg, r);

    sl__cli_svg_line(s, left, axis_y, W - right, axis_y, "axis", NULL);
    int64_t secs = sl__ceil_s(cfg->duration);
    int64_t tstep = nice_up((double)secs / 2.0);
    for (int64_t sec = 0; sec * SL_NS_PER_SEC <= cfg->duration; sec += tstep) {
        double x = ax(&c, sec * SL_NS_PER_SEC);
        sl__cli_svg_line(s, x, axis_y, x, axis_y + 5, "axis", NULL);
        sl__cli_svg_textf(s, x, axis_y + 18, "tick", "middle", "%lld", (long long)sec);
    }
    sl__cli_svg_text(s, left + c.pw / 2, axis_y + 38, "tick", "middle", "time (s)");
    return sl__cli_svg_close(s, err, errlen);
}

/* ---- command ---------------------------------------------------------------- */

static const char aimd_help[] =
    "usage: sluice sim aimd [options]\n"
    "\n"
    "A client adapts its sending rate with AIMD (additive increase, multiplicative\n"
    "decrease) against a server's limit: +A per success, times B per 429, within\n"
    "[floor, cap]. It sends as fast as its own rate allows (seed section 10).\n"
    "Rates are requests per second with at most 3 decimals.\n"
    "\n"
    "options:\n"
    "  --start R            the client's first rate (default 1)\n"
    "  --increase A         added per success (default 0.5)\n"
    "  --decrease B         factor per 429, 0 < B < 1, at most 6 decimals (default 0.5)\n"
    "  --floor R            never below (default 1)\n"
    "  --cap R              never above (default 50)\n"
    "  --rate N/P           the server's limit (default 20/s)\n"
    "  --burst B            the server's burst (default 10)\n"
    "  --algorithm A        the server's algorithm (default token_bucket)\n"
    "  --duration S         seconds to simulate (default 30)\n"
    "  --seed N             accepted for symmetry; aimd draws no random numbers\n"
    "  --format FMT         table (default), csv or json: one row per second\n"
    "  --svg FILE           chart the client's rate over time (the sawtooth)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Columns: second; rate, the client's rate at the end of that second; min_rate and\n"
    "max_rate within it; sent, served and rejected requests. See docs/sim.md.\n";

enum {
    A_START,
    A_INCREASE,
    A_DECREASE,
    A_FLOOR,
    A_CAP,
    A_RATE,
    A_BURST,
    A_ALGORITHM,
    A_DURATION,
    A_SEED,
    A_FORMAT,
    A_SVG,
    A_HELP
};
static const sl__cli_opt aimd_opts[] = {
    [A_START] = {"start", "R"},       [A_INCREASE] = {"increase", "A"},
    [A_DECREASE] = {"decrease", "B"}, [A_FLOOR] = {"floor", "R"},
    [A_CAP] = {"cap", "R"},           [A_RATE] = {"rate", "N/P"},
    [A_BURST] = {"burst", "B"},       [A_ALGORITHM] = {"algorithm", "A"},
    [A_DURATION] = {"duration", "S"}, [A_SEED] = {"seed", "N"},
    [A_FORMAT] = {"format", "FMT"},   [A_SVG] = {"svg", "FILE"},
    [A_HELP] = {"help", NULL},        {NULL, NULL},
};

#define RATE_TEXT "requests per second from 0.001 to 1000 (at most 3 decimals)"

/* sim aimd's own options into the config. */
static int aimd_option(sl__cli_args *a, int idx, const char *v, void *ctx) {
    sl__cli_aimd_config *cfg = ctx;
    uint64_t seed;
    switch (idx) {
    case A_START:
        return sl__cli_args_decimal(a, v, 3, 1, 1000000, RATE_TEXT, &cfg->start);
    case A_INCREASE:
        return sl__cli_args_decimal(a, v, 3, 0, 1000000,
                                    "requests per second from 0 to 1000 (at most 3 decimals)",
                                    &cfg->increase);
    case A_DECREASE:
        return sl__cli_args_decimal(a, v, 6, 1, 999999,
                                    "a factor between 0 and 1 exclusive (at most 6 decimals)",
                                    &cfg->decrease_ppm);
    case A_FLOOR:
        return sl__cli_args_decimal(a, v, 3, 1, 1000000, RATE_TEXT, &cfg->floor);
    case A_CAP:
        return sl__cli_args_decimal(a, v, 3, 1, 1000000, RATE_TEXT, &cfg->cap);
    case A_RATE:
        return sl__cli_args_rate(a, v, &cfg->rate);
    case A_BURST:
        return sl__cli_args_int(a, v, 1, INT64_C(1) << 61, &cfg->burst);
    case A_ALGORITHM:
        return sl__cli_args_algorithm(a, v, &cfg->alg);
    case A_DURATION:
        return sl__cli_args_seconds(a, v, 1, 3600000, "seconds from 0.001 to 3600", &cfg->duration);
    case A_SEED: /* accepted for symmetry: aimd draws no random numbers */
        return sl__cli_args_u64(a, v, &seed);
    default:
        return 0;
    }
}

int sl__cli_sim_aimd_main(const char *cmd, int argc, char **argv, int first) {
    sl__cli_aimd_config cfg = {
        .start = 1000,
        .increase = 500,
        .floor = 1000,
        .cap = 50000,
        .decrease_ppm = 500000,
        .alg = SL_TOKEN_BUCKET,
        .rate = {20, SL_NS_PER_SEC},
        .burst = 10,
        .duration = 30 * SL_NS_PER_SEC,
    };
    sl__cli_sim_opts common;
    int rc =
        sl__cli_sim_parse(cmd, argc, argv, first, aimd_opts, aimd_help, &common, aimd_option, &cfg);
    if (rc != 0) return rc > 0 ? 0 : EXIT_USAGE;
    if (cfg.floor > cfg.cap || cfg.start < cfg.floor || cfg.start > cfg.cap) {
        fprintf(stderr, "%s: need --floor <= --start <= --cap (see %s --help)\n", cmd, cmd);
        return EXIT_USAGE;
    }
    if (sl__cli_sim_params_check(cmd, cfg.alg, cfg.rate, cfg.burst) != SL_OK) return EXIT_USAGE;
    char err[512];
    sl__cli_aimd_result r;
    if (sl__cli_aimd_run(&cfg, &r, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return 1;
    }
    char rate_text[64];
    sl_rate_format(cfg.rate, rate_text, sizeof rate_text);
    sl__cli_sim_show show = {write_aimd_svg, print_aimd, {&cfg, &r, NULL, rate_text}};
    int status = sl__cli_sim_show_result(cmd, &common, &show);
    sl__cli_aimd_result_free(&r);
    return status;
}
