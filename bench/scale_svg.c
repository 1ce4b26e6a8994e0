/* scale_svg.c: draws bench/table_scale.sh's CSV as an SVG (src/cli/svg.c):
 * ns per decision against the number of keys (log scale), one panel for
 * back-to-back decisions and one for serialized ones, a line per subject and
 * thread count. Rows with a cap (the eviction runs) are left out of the
 * chart; the table in docs/BENCHMARKS.md gives them.
 * Usage: bench_scale_svg scale.csv out.svg */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/svg.h"

#define MAX_ROWS 512

typedef struct row {
    double keys;
    int threads;
    int serial;
    char subject[32];
    double ns;
} row;

static row rows[MAX_ROWS];
static int nrows;

static int load(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return -1;
    }
    while (nrows < MAX_ROWS && fgets(line, sizeof line, f)) {
        /* keys,cap,mode,workload,threads,subject,ns,... */
        char mode[32], wl[32], subject[32];
        double keys, cap, ns;
        int threads;
        if (sscanf(line, "%lf,%lf,%31[^,],%31[^,],%d,%31[^,],%lf", &keys, &cap, mode, wl, &threads,
                   subject, &ns) != 7)
            continue;
        if (cap > 0) continue;
        row *r = &rows[nrows++];
        r->keys = keys;
        r->threads = threads;
        r->serial = strcmp(mode, "serial") == 0;
        snprintf(r->subject, sizeof r->subject, "%s", subject);
        r->ns = ns;
    }
    fclose(f);
    return 0;
}

static const char *const subjects[] = {"token_bucket", "gcra", "peer", "memlat"};
#define NSUB 4

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: bench_scale_svg scale.csv out.svg\n");
        return 2;
    }
    if (load(argv[1]) || nrows == 0) {
        fprintf(stderr, "%s: no rows\n", argv[1]);
        return 1;
    }
    double kmin = 1e30, kmax = 0, ymax = 0;
    for (int i = 0; i < nrows; i++) {
        if (rows[i].keys < kmin) kmin = rows[i].keys;
        if (rows[i].keys > kmax) kmax = rows[i].keys;
        if (rows[i].ns > ymax) ymax = rows[i].ns;
    }
    if (kmax <= kmin) kmax = kmin * 10;
    double step = ymax > 2000 ? 500 : ymax > 1000 ? 200 : 100;
    ymax = ceil(ymax / step) * step;
    const int W = 960, H = 420, PW = 400, PH = 300, top = 50, left[2] = {70, 540};
    const char *css = "text{font:12px sans-serif}.t{font:bold 14px sans-serif}"
                      ".ax{stroke:#333}.g{stroke:#ddd}"
                      ".s0{stroke:#1f77b4;fill:none;stroke-width:2}.s1{stroke:#2ca02c;fill:none;"
                      "stroke-width:2}.s2{stroke:#d62728;fill:none;stroke-width:2}"
                      ".s3{stroke:#7f7f7f;fill:none;stroke-width:2;stroke-dasharray:5 3}"
                      ".d0{fill:#1f77b4}.d1{fill:#2ca02c}.d2{fill:#d62728}.d3{fill:#7f7f7f}"
                      ".two{stroke-dasharray:2 3}";
    sl__cli_svg *s = sl__cli_svg_open(
        argv[2], W, H, "sluice keyed table: ns per decision against keys", css, NULL, 0);
    if (!s) {
        perror(argv[2]);
        return 1;
    }
    sl__cli_svg_text(
        s, W / 2.0, 22, "t", "middle",
        "ns per decision against random keys (token bucket, GCRA, the hand-rolled peer, "
        "one memory access)");
    for (int panel = 0; panel < 2; panel++) {
        double x0 = left[panel], y0 = top + PH;
        sl__cli_svg_text(s, x0 + PW / 2.0, top - 8, "t", "middle",
                         panel ? "serialized (lfence after each), 1 thread" : "back to back");
        for (double y = 0; y <= ymax + 0.5; y += step) {
            double py = y0 - y / ymax * PH;
            sl__cli_svg_line(s, x0, py, x0 + PW, py, "g", NULL);
            sl__cli_svg_textf(s, x0 - 6, py + 4, NULL, "end", "%.0f", y);
        }
        for (double k = kmin; k <= kmax * 1.001; k *= 10) {
            double px = x0 + (log10(k) - log10(kmin)) / (log10(kmax) - log10(kmin)) * PW;
            sl__cli_svg_line(s, px, top, px, y0, "g", NULL);
            if (k >= 1e6)
                sl__cli_svg_textf(s, px, y0 + 16, NULL, "middle", "%.0fM", k / 1e6);
            else
                sl__cli_svg_textf(s, px, y0 + 16, NULL, "middle", "%.0fk", k / 1e3);
        }
        sl__cli_svg_line(s, x0, y0, x0 + PW, y0, "ax", NULL);
        sl__cli_svg_line(s, x0, top, x0, y0, "ax", NULL);
        sl__cli_svg_text(s, x0 + PW / 2.0, y0 + 34, NULL, "middle", "keys (log scale)");
        if (panel == 0) sl__cli_svg_text(s, x0 - 50, top - 8, NULL, "start", "ns");
        for (int sub = 0; sub < NSUB; sub++) {
            for (int th = 1; th <= 8; th++) {
                char cls[16];
                snprintf(cls, sizeof cls, "s%d%s", sub, th > 1 ? " two" : "");
                int n = 0;
                for (int i = 0; i < nrows; i++) {
                    row *r = &rows[i];
                    if (r->serial != panel || r->threads != th || strcmp(r->subject, subjects[sub]))
                        continue;
                    if (n++ == 0) sl__cli_svg_polyline_begin(s, cls);
                    double px =
                        x0 + (log10(r->keys) - log10(kmin)) / (log10(kmax) - log10(kmin)) * PW;
                    sl__cli_svg_polyline_point(s, px, y0 - r->ns / ymax * PH);
                }
                if (n) sl__cli_svg_polyline_end(s);
                for (int i = 0; i < nrows; i++) {
                    row *r = &rows[i];
                    if (r->serial != panel || r->threads != th || strcmp(r->subject, subjects[sub]))
                        continue;
                    char tip[96], dcls[8];
                    snprintf(tip, sizeof tip, "%s, %d thread%s, %.0f keys: %.1f ns", r->subject, th,
                             th > 1 ? "s" : "", r->keys, r->ns);
                    snprintf(dcls, sizeof dcls, "d%d", sub);
                    double px =
                        x0 + (log10(r->keys) - log10(kmin)) / (log10(kmax) - log10(kmin)) * PW;
                    sl__cli_svg_circle(s, px, y0 - r->ns / ymax * PH, 3, dcls, tip);
                }
            }
        }
    }
    /* legend */
    double lx = 80, ly = H - 22;
    for (int sub = 0; sub < NSUB; sub++) {
        char cls[8];
        snprintf(cls, sizeof cls, "s%d", sub);
        sl__cli_svg_line(s, lx, ly, lx + 24, ly, cls, NULL);
        sl__cli_svg_text(s, lx + 30, ly + 4, NULL, "start", subjects[sub]);
        lx += 150;
    }
    sl__cli_svg_line(s, lx, ly, lx + 24, ly, "ax two", NULL);
    sl__cli_svg_text(s, lx + 30, ly + 4, NULL, "start", "dotted: 2 threads (ns per thread)");
    return sl__cli_svg_close(s, NULL, 0) < 0 ? 1 : 0;
}
