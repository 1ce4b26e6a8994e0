/* output.c: aligned text tables, CSV (RFC 4180 quoting when a cell needs
 * it) and JSON arrays of objects, for the simulations' results. */
#include "cli/output.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct cell {
    sl__cli_cell_kind kind;
    char *text;
} cell;

struct sl__cli_out_table {
    size_t ncols;
    const char *const *names;
    cell *cells;
    size_t n, cap;
    bool failed;
};

int sl__cli_out_format_parse(const char *s, sl__cli_out_format *f) {
    if (strcmp(s, "table") == 0) return *f = OUT_TABLE, 0;
    if (strcmp(s, "csv") == 0) return *f = OUT_CSV, 0;
    if (strcmp(s, "json") == 0) return *f = OUT_JSON, 0;
    return SL_EPARSE;
}

sl__cli_out_table *sl__cli_out_table_new(size_t ncols, const char *const *names) {
    sl__cli_out_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->ncols = ncols;
    t->names = names;
    return t;
}

void sl__cli_out_table_free(sl__cli_out_table *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) free(t->cells[i].text);
    free(t->cells);
    free(t);
}

void sl__cli_out_table_add(sl__cli_out_table *t, sl__cli_cell_kind kind, const char *fmt, ...) {
    if (t->failed) return;
    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        cell *nc = realloc(t->cells, ncap * sizeof *nc);
        if (!nc) {
            t->failed = true;
            return;
        }
        t->cells = nc;
        t->cap = ncap;
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!text) {
        t->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(text, (size_t)len + 1, fmt, ap);
    va_end(ap);
    t->cells[t->n++] = (cell){kind, text};
}

void sl__cli_out_json_string(FILE *fp, const char *s) {
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", fp);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

static void json_value(FILE *fp, const cell *cl) {
    if (cl->kind == CELL_STR)
        sl__cli_out_json_string(fp, cl->text);
    else if (cl->kind == CELL_NULL)
        fputs("null", fp);
    else
        fputs(cl->text, fp);
}

int sl__cli_out_table_print_members(const sl__cli_out_table *t, FILE *fp, int indent) {
    if (t->failed) return SL_ENOMEM;
    if (t->n < t->ncols) return SL_EINVAL;
    for (size_t c = 0; c < t->ncols; c++) {
        fprintf(fp, "%*s", indent, "");
        sl__cli_out_json_string(fp, t->names[c]);
        fputs(": ", fp);
        json_value(fp, &t->cells[c]);
        fputs(",\n", fp);
    }
    return 0;
}

static void csv_cell(FILE *fp, const cell *c) {
    if (c->kind == CELL_NULL) return;
    if (!strpbrk(c->text, ",\"\r\n")) {
        fputs(c->text, fp);
        return;
    }
    fputc('"', fp);
    for (const char *p = c->text; *p; p++) {
        if (*p == '"') fputc('"', fp);
        fputc(*p, fp);
    }
    fputc('"', fp);
}

static const char *shown(const cell *c) {
    return c->kind == CELL_NULL ? "-" : c->text;
}

int sl__cli_out_table_print(const sl__cli_out_table *t, FILE *fp, sl__cli_out_format f,
                            int indent) {
    if (t->failed) return SL_ENOMEM;
    size_t rows = t->n / t->ncols;
    switch (f) {
    case OUT_TABLE: {
        size_t width[32] = {0};
        size_t nc = t->ncols < 32 ? t->ncols : 32;
        for (size_t c = 0; c < nc; c++) width[c] = strlen(t->names[c]);
        for (size_t i = 0; i < rows * t->ncols; i++) {
            size_t c = i % t->ncols, w = strlen(shown(&t->cells[i]));
            if (c < nc && w > width[c]) width[c] = w;
        }
        /* a column is right-aligned when its cells are numbers */
        bool right[32] = {false};
        for (size_t c = 0; c < nc; c++) {
            right[c] = rows > 0;
            for (size_t r = 0; r < rows; r++)
                if (t->cells[r * t->ncols + c].kind == CELL_STR) right[c] = false;
        }
        for (size_t r = 0; r <= rows; r++) {
            for (size_t c = 0; c < nc; c++) {
                const char *s = r == 0 ? t->names[c] : shown(&t->cells[(r - 1) * t->ncols + c]);
                int w = (int)width[c];
                bool last = c + 1 == nc;
                if (c) fputs("  ", fp);
                if (right[c])
                    fprintf(fp, "%*s", w, s);
                else if (last)
                    fputs(s, fp);
                else
                    fprintf(fp, "%-*s", w, s);
            }
            fputc('\n', fp);
        }
        break;
    }
    case OUT_CSV:
        for (size_t c = 0; c < t->ncols; c++) fprintf(fp, "%s%s", c ? "," : "", t->names[c]);
        fputc('\n', fp);
        for (size_t r = 0; r < rows; r++) {
            for (size_t c = 0; c < t->ncols; c++) {
                if (c) fputc(',', fp);
                csv_cell(fp, &t->cells[r * t->ncols + c]);
            }
            fputc('\n', fp);
        }
        break;
    case OUT_JSON:
        fputs("[", fp);
        for (size_t r = 0; r < rows; r++) {
            fprintf(fp, "%s\n%*s{", r ? "," : "", indent + 2, "");
            for (size_t c = 0; c < t->ncols; c++) {
                const cell *cl = &t->cells[r * t->ncols + c];
                if (c) fputs(", ", fp);
                sl__cli_out_json_string(fp, t->names[c]);
                fputs(": ", fp);
                json_value(fp, cl);
            }
            fputc('}', fp);
        }
        if (rows) fprintf(fp, "\n%*s", indent, "");
        fputs("]", fp);
        break;
    }
    return 0;
}
