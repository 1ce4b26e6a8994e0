/* svg.h: a small writer for self-contained SVG charts (no scripts, no
 * external fonts or files): shapes, escaped text, tooltips (<title>), and a
 * <style> block with the chart's classes. Coordinates are printed with one
 * decimal, so the same chart is the same bytes. */
#ifndef SLUICE_CLI_SVG_H
#define SLUICE_CLI_SVG_H

#include <stddef.h>
#include <stdint.h>

typedef struct sl__cli_svg sl__cli_svg;

/* Opens `path` for writing and writes the document head: the XML
 * declaration, the <svg> element of the given size, the document <title>
 * (escaped), a <style> block with `css` (must not contain "]]>") and a
 * white background. path must outlive s (sl__cli_svg_close names it).
 * Returns NULL on failure, with "path: cannot write: reason" in err (none
 * when errlen is 0) and errno set. */
sl__cli_svg *sl__cli_svg_open(const char *path, int width, int height, const char *title,
                              const char *css, char *err, size_t errlen);

/* Finishes the document and closes the file. Returns 0, or SL_EINVAL if
 * anything could not be written, with "path: write error: reason" in err
 * and errno set. Frees s in any case. */
int sl__cli_svg_close(sl__cli_svg *s, char *err, size_t errlen);

/* Shapes. cls: a CSS class or NULL; tip: a tooltip shown on hover, or NULL. */
void sl__cli_svg_rect(sl__cli_svg *s, double x, double y, double w, double h, const char *cls,
                      const char *tip);
void sl__cli_svg_line(sl__cli_svg *s, double x1, double y1, double x2, double y2, const char *cls,
                      const char *tip);
void sl__cli_svg_circle(sl__cli_svg *s, double cx, double cy, double r, const char *cls,
                        const char *tip);

/* Text at (x, y); anchor "start", "middle" or "end". The text is escaped. */
void sl__cli_svg_text(sl__cli_svg *s, double x, double y, const char *cls, const char *anchor,
                      const char *text);
void sl__cli_svg_textf(sl__cli_svg *s, double x, double y, const char *cls, const char *anchor,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* A polyline: begin, add points, end. */
void sl__cli_svg_polyline_begin(sl__cli_svg *s, const char *cls);
void sl__cli_svg_polyline_point(sl__cli_svg *s, double x, double y);
void sl__cli_svg_polyline_end(sl__cli_svg *s);

/* An axis's step: the smallest 1, 2 or 5 times a power of ten that cuts
 * [0, max] into at most 6 parts (max >= 1; 1 for max <= 6). */
int64_t sl__cli_svg_round_step(int64_t max);

/* Groups, e.g. to give a set of shapes one class or one tooltip. */
void sl__cli_svg_group_begin(sl__cli_svg *s, const char *cls, const char *tip);
void sl__cli_svg_group_end(sl__cli_svg *s);

#endif
