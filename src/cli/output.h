/* output.h: how the simulations print their results: an aligned text
 * table for people, CSV and JSON for programs. A subcommand fills an
 * out_table row by row and prints it in the chosen format; the JSON helpers
 * write the object around it. Cells are text, tagged with their JSON kind. */
#ifndef SLUICE_CLI_OUTPUT_H
#define SLUICE_CLI_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "sluice/error.h"

typedef enum sl__cli_out_format { OUT_TABLE, OUT_CSV, OUT_JSON } sl__cli_out_format;

/* "table", "csv" or "json". Returns 0 or SL_EPARSE. */
int sl__cli_out_format_parse(const char *s, sl__cli_out_format *f);

typedef enum sl__cli_cell_kind {
    CELL_STR,  /* quoted in JSON, left-aligned in tables */
    CELL_NUM,  /* written as is (must be a valid JSON number), right-aligned */
    CELL_NULL, /* "-" in tables, empty in CSV, null in JSON */
} sl__cli_cell_kind;

typedef struct sl__cli_out_table sl__cli_out_table;

/* A table with `ncols` columns named by `names` (static strings, used as CSV
 * header and JSON member names). Returns NULL when out of memory. */
sl__cli_out_table *sl__cli_out_table_new(size_t ncols, const char *const *names);
void sl__cli_out_table_free(sl__cli_out_table *t);

/* Appends the next cell, row by row (a row ends after ncols cells). The text
 * is copied. printf-style. Allocation failures are remembered and reported
 * by sl__cli_out_table_print. */
void sl__cli_out_table_add(sl__cli_out_table *t, sl__cli_cell_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints the table: OUT_TABLE aligned columns with a header line, OUT_CSV a
 * header and one line per row, OUT_JSON an array of objects, one per line,
 * each line indented by `indent` spaces (the closing bracket too). Returns 0,
 * or SL_ENOMEM if a cell could not be stored. */
int sl__cli_out_table_print(const sl__cli_out_table *t, FILE *fp, sl__cli_out_format f, int indent);

/* Writes the first row as JSON object members, one per line: `indent`
 * spaces, "name": value, then ",\n" (the caller writes the members after
 * them and the braces). Returns 0, SL_ENOMEM if a cell could not be stored,
 * or SL_EINVAL if the table is empty. */
int sl__cli_out_table_print_members(const sl__cli_out_table *t, FILE *fp, int indent);

/* Writes s as a JSON string literal (quotes and escapes included). */
void sl__cli_out_json_string(FILE *fp, const char *s);

#endif
