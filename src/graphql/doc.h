/* graphql/doc.h: the parsed form of a GraphQL document, shared by the parser
 * (parse.c, which builds it; resolve.c, which links its fragments) and the
 * cost walk (cost.c, which only reads it).
 * Only what costing needs is kept: definitions, and per selection its kind,
 * field name, first/last arguments and children. Indexes are 1-based; 0 is
 * "none". Names are offsets into the document's own copy of the text. */
#ifndef SLUICE_GRAPHQL_DOC_H
#define SLUICE_GRAPHQL_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/graphql.h"

enum { SL__GQL_FIELD = 1, SL__GQL_SPREAD, SL__GQL_INLINE };
enum { SL__GQL_OP = 1, SL__GQL_FRAGMENT };
/* what a first/last argument holds */
enum { SL__GQL_PAGE_INT = 1, SL__GQL_PAGE_VAR, SL__GQL_PAGE_NULL, SL__GQL_PAGE_BAD };

typedef struct sl__gql_page {
    uint8_t kind;     /* SL__GQL_PAGE_* */
    bool negative;    /* an Int literal below zero */
    uint32_t off;     /* where the value starts */
    uint32_t var_off; /* SL__GQL_PAGE_VAR: the name, without '$' */
    uint32_t var_len;
    uint64_t value; /* SL__GQL_PAGE_INT: the magnitude, saturated */
} sl__gql_page;

typedef struct sl__gql_node {
    uint8_t kind;                /* SL__GQL_FIELD, _SPREAD, _INLINE */
    uint8_t npage;               /* first/last arguments kept in page[] */
    uint32_t off;                /* byte offset of the selection */
    uint32_t name_off, name_len; /* field name, or the spread's fragment name */
    uint32_t child;              /* first selection of its selection set */
    uint32_t next;               /* next selection in the same set */
    uint32_t target;             /* spread: the fragment definition it names */
    sl__gql_page page[2];
} sl__gql_node;

typedef struct sl__gql_vardef {
    uint32_t name_off, name_len;
    sl__gql_page def; /* kind 0: no default value */
} sl__gql_vardef;

typedef struct sl__gql_def {
    uint8_t kind;   /* SL__GQL_OP or SL__GQL_FRAGMENT */
    bool cyclic;    /* fragment on a spread cycle */
    bool duplicate; /* fragment whose name an earlier fragment has */
    uint32_t off;
    uint32_t name_off, name_len;    /* name_len 0: anonymous operation */
    uint32_t sel;                   /* first selection */
    uint32_t var_first, nvars;      /* operations: variable definitions */
    uint32_t node_first, node_last; /* its nodes (contiguous) */
} sl__gql_def;

struct sl_gql_doc {
    char *text;
    size_t len;
    sl_gql_limits lim;
    sl__gql_node *nodes; /* nodes[0] unused */
    uint32_t nnodes, cap_nodes;
    sl__gql_def *defs; /* defs[0] unused */
    uint32_t ndefs, cap_defs;
    sl__gql_vardef *vars;
    uint32_t nvardefs, cap_vars;
    uint32_t nops;
};

/* Fills err (may be NULL) with kind, offset and a printf-style message. */
void sl__gql_fail(sl_gql_error *err, sl_gql_errkind kind, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* After parsing d (every definition, its nodes node_first..node_last):
 * resolves each spread's target (0: unknown; a duplicated name: the first
 * fragment of that name), marks later fragments of a duplicated name
 * (duplicate), and marks fragments on a spread cycle (cyclic: an iterative
 * DFS with colours, a spread to a fragment still on the path closes a cycle
 * through it). O(n log n) in the fragments plus the nodes. Returns 0, or -2
 * when out of memory (d unchanged but for targets). */
int sl__gql_resolve(sl_gql_doc *d);

#endif
