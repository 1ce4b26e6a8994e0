/* svg.c: the SVG writer (see svg.h). Writes as it goes; errors are checked
 * once, when the file is closed. */
#include "cli/svg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

struct sl__cli_svg {
    FILE *fp;
    const char *path; /* the caller's, for messages */
    int points;       /* points written in the open polyline */
};

static void esc(FILE *fp, const char *t) {
    for (; *t; t++) {
        switch (*t) {
        case '&':
            fputs("&amp;", fp);
            break;
        case '<':
            fputs("&lt;", fp);
            break;
        case '>':
            fputs("&gt;", fp);
            break;
        case '"':
            fputs("&quot;", fp);
            break;
        default:
            fputc(*t, fp);
            break;
        }
    }
}

/* One decimal, and never "-0.0". */
static void num(FILE *fp, double v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f", v);
    if (strcmp(buf, "-0.0") == 0) strcpy(buf, "0.0");
    size_t n = strlen(buf);
    if (n > 2 && strcmp(buf + n - 2, ".0") == 0) buf[n - 2] = '\0';
    fputs(buf, fp);
}

static void attr_num(FILE *fp, const char *name, double v) {
    fprintf(fp, " %s=\"", name);
    num(fp, v);
    fputc('"', fp);
}

static void cls_attr(FILE *fp, const char *cls) {
    if (cls) {
        fputs(" class=\"", fp);
        esc(fp, cls);
        fputc('"', fp);
    }
}

/* Ends an element: "/>" or a <title> child. */
static void end_elem(FILE *fp, const char *name, const char *tip) {
    if (!tip) {
        fputs("/>\n", fp);
        return;
    }
    fputs("><title>", fp);
    esc(fp, tip);
    fprintf(fp, "</title></%s>\n", name);
}

/* "path: what: strerror(e)" into err (when errlen > 0), errno = e. */
static void io_error(const char *path, const char *what, int e, char *err, size_t errlen) {
    if (errlen > 0) snprintf(err, errlen, "%s: %s: %s", path, what, strerror(e));
    errno = e;
}

sl__cli_svg *sl__cli_svg_open(const char *path, int width, int height, const char *title,
                              const char *css, char *err, size_t errlen) {
    sl__cli_svg *s = calloc(1, sizeof *s);
    if (!s) return io_error(path, "cannot write", errno, err, errlen), NULL;
    s->path = path;
    s->fp = fopen(path, "w");
    if (!s->fp) {
        int e = errno;
        free(s);
        io_error(path, "cannot write", e, err, errlen);
        return NULL;
    }
    FILE *fp = s->fp;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", fp);
    fprintf(fp,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" font-family=\"system-ui, -apple-system, "
            "'Segoe UI', Helvetica, Arial, sans-serif\">\n",
            width, height, width, height);
    fputs("<title>", fp);
    esc(fp, title);
    fputs("</title>\n<style><![CDATA[\n", fp);
    fputs(css, fp);
    fputs("\n]]></style>\n", fp);
    fprintf(fp, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width,
            height);
    return s;
}

int sl__cli_svg_close(sl__cli_svg *s, char *err, size_t errlen) {
    fputs("</svg>\n", s->fp);
    int bad = ferror(s->fp);
    int e = errno;
    if (fclose(s->fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    const char *path = s->path;
    free(s);
    if (bad) {
        io_error(path, "write error", e ? e : EIO, err, errlen);
        return SL_EINVAL;
    }
    return 0;
}

void sl__cli_svg_rect(sl__cli_svg *s, double x, double y, double w, double h, const char *cls,
                      const char *tip) {
    fputs("<rect", s->fp);
    attr_num(s->fp, "x", x);
    attr_num(s->fp, "y", y);
    attr_num(s->fp, "width", w < 0 ? 0 : w);
    attr_num(s->fp, "height", h < 0 ? 0 : h);
    cls_attr(s->fp, cls);
    end_elem(s->fp, "rect", tip);
}

void sl__cli_svg_line(sl__cli_svg *s, double x1, double y1, double x2, double y2, const char *cls,
                      const char *tip) {
    fputs("<line", s->fp);
    attr_num(s->fp, "x1", x1);
    attr_num(s->fp, "y1", y1);
    attr_num(s->fp, "x2", x2);
    attr_num(s->fp, "y2", y2);
    cls_attr(s->fp, cls);
    end_elem(s->fp, "line", tip);
}

void sl__cli_svg_circle(sl__cli_svg *s, double cx, double cy, double r, const char *cls,
                        const char *tip) {
    fputs("<circle", s->fp);
    attr_num(s->fp, "cx", cx);
    attr_num(s->fp, "cy", cy);
    attr_num(s->fp, "r", r);
    cls_attr(s->fp, cls);
    end_elem(s->fp, "circle", tip);
}

void sl__cli_svg_text(sl__cli_svg *s, double x, double y, const char *cls, const char *anchor,
                      const char *text) {
    fputs("<text", s->fp);
    attr_num(s->fp, "x", x);
    attr_num(s->fp, "y", y);
    cls_attr(s->fp, cls);
    if (anchor && strcmp(anchor, "start") != 0) fprintf(s->fp, " text-anchor=\"%s\"", anchor);
    fputc('>', s->fp);
    esc(s->fp, text);
    fputs("</text>\n", s->fp);
}

void sl__cli_svg_textf(sl__cli_svg *s, double x, double y, const char *cls, const char *anchor,
                       const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    /* va_start is the line above */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sl__cli_svg_text(s, x, y, cls, anchor, buf);
}

void sl__cli_svg_polyline_begin(sl__cli_svg *s, const char *cls) {
    fputs("<polyline", s->fp);
    cls_attr(s->fp, cls);
    fputs(" points=\"", s->fp);
    s->points = 0;
}

void sl__cli_svg_polyline_point(sl__cli_svg *s, double x, double y) {
    if (s->points++) fputc(s->points % 8 == 1 ? '\n' : ' ', s->fp);
    num(s->fp, x);
    fputc(',', s->fp);
    num(s->fp, y);
}

void sl__cli_svg_polyline_end(sl__cli_svg *s) {
    fputs("\"/>\n", s->fp);
}

void sl__cli_svg_group_begin(sl__cli_svg *s, const char *cls, const char *tip) {
    fputs("<g", s->fp);
    cls_attr(s->fp, cls);
    fputs(">", s->fp);
    if (tip) {
        fputs("<title>", s->fp);
        esc(s->fp, tip);
        fputs("</title>", s->fp);
    }
    fputc('\n', s->fp);
}

void sl__cli_svg_group_end(sl__cli_svg *s) {
    fputs("</g>\n", s->fp);
}

int64_t sl__cli_svg_round_step(int64_t max) {
    int64_t step = 1;
    for (;;) {
        if (step * 6 >= max) return step;
        if (step * 2 * 6 >= max) return step * 2;
        if (step * 5 * 6 >= max) return step * 5;
        step *= 10;
    }
}
