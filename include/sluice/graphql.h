/* sluice/graphql.h: the cost of a GraphQL query, computed before it runs
 * (seed section 08, issue 17). Two steps:
 *
 *   sl_gql_parse   a bounded parser of executable GraphQL documents (the
 *                  lexical and syntactic grammar of the GraphQL spec, as
 *                  graphql-js 17 parses it): no I/O, bounded size, depth and
 *                  number of nodes, an error with its byte offset otherwise;
 *   sl_gql_cost    one operation of a parsed document, fragments expanded
 *                  (cycles and unknown fragments refused), costed by one of
 *                  two schemes: the objects that could come back, or GitHub's
 *                  connection requests. Integer arithmetic, saturating.
 *
 * The seed's example, `query { viewer { repositories(first: 50) { issues(first:
 * 20) { title } } } }`, costs 1 + 50 + 50 x 20 = 1,051 objects and
 * 1 + 50 = 51 connection requests. docs/graphql.md has the rules.
 * Thread-safety: a parsed document is read-only; any number of threads may
 * cost it at once. */
#ifndef SLUICE_GRAPHQL_H
#define SLUICE_GRAPHQL_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a refusal was about (sl_gql_error.kind). */
typedef enum sl_gql_errkind {
    SL_GQL_OK = 0,
    SL_GQL_ESYNTAX,    /* not GraphQL (lexical or syntactic), or not executable (SDL) */
    SL_GQL_ESIZE,      /* the document is longer than max_bytes */
    SL_GQL_EDEPTH,     /* nesting deeper than max_depth */
    SL_GQL_ENODES,     /* more than max_nodes nodes, or max_expanded after fragments */
    SL_GQL_EOPERATION, /* no such operation, or several and no name given */
    SL_GQL_EFRAGMENT,  /* unknown or duplicate fragment name */
    SL_GQL_ECYCLE,     /* a fragment spreads itself, directly or not */
    SL_GQL_EVARIABLE,  /* first/last names a variable the operation does not define */
    SL_GQL_EARGUMENT,  /* first/last is not a non-negative Int */
    SL_GQL_ETOO_COSTLY /* the cost is over max_cost */
} sl_gql_errkind;

/* Why a call failed. `offset` is the byte offset in the document of the
 * token or node at fault (the length for "unexpected end"). `message` is a
 * NUL-terminated English sentence, quoting at most a few bytes of input. */
typedef struct sl_gql_error {
    sl_gql_errkind kind;
    size_t offset;
    char message[160];
} sl_gql_error;

/* Bounds of the parser; sl_gql_limits_init sets the defaults. */
typedef struct sl_gql_limits {
    size_t max_bytes;      /* document length (default 65536) */
    uint32_t max_depth;    /* nesting of selection sets, lists, objects, list
                              types; in sl_gql_cost also fragment spreads (default 64) */
    uint32_t max_nodes;    /* fields, fragments, arguments, values, directives,
                              variable definitions (default 10000) */
    uint32_t max_expanded; /* selections visited by sl_gql_cost once fragments are
                              expanded, plus one per 8 variable names compared
                              (default 100000) */
} sl_gql_limits;

/* Largest accepted max_depth and max_nodes (each level of nesting costs
 * the parser and the cost walk about 100 bytes of stack). */
#define SL_GQL_DEPTH_MAX 1024
#define SL_GQL_NODES_MAX 10000000

SL_API void sl_gql_limits_init(sl_gql_limits *lim);

typedef struct sl_gql_doc sl_gql_doc;

/* Parses `len` bytes of `text` (need not be NUL-terminated; copied, the
 * caller keeps its buffer). `lim` NULL means the defaults. Returns 0 and *out
 * (free with sl_gql_free), SL_EPARSE with *err filled (err may be NULL),
 * SL_EINVAL (NULL text with len > 0, NULL out, a zero limit) or SL_ENOMEM.
 * Accepts exactly the documents graphql-js 17's parse() accepts with
 * allowEmptySelectionSets: false whose definitions are all operations and
 * fragments (descriptions included), and that are valid UTF-8 within bounds. */
SL_API int sl_gql_parse(const char *text, size_t len, const sl_gql_limits *lim, sl_gql_doc **out,
                        sl_gql_error *err);
SL_API void sl_gql_free(sl_gql_doc *doc);

/* Number of operation definitions in a parsed document. */
SL_API size_t sl_gql_operation_count(const sl_gql_doc *doc);

typedef enum sl_gql_scheme {
    SL_GQL_OBJECTS = 0, /* the objects that could come back, / divisor rounded up */
    SL_GQL_GITHUB = 1   /* connection requests, / divisor rounded to nearest, >= 1 */
} sl_gql_scheme;

/* A variable's value from the request (only Int values matter: first/last). */
typedef struct sl_gql_var {
    const char *name; /* without the '$'; NUL-terminated */
    int64_t value;
} sl_gql_var;

typedef struct sl_gql_options {
    sl_gql_scheme scheme;
    uint64_t divisor;      /* raw count -> points; 0 = the scheme's default (1 or 100) */
    uint64_t default_page; /* page size of a connection without first/last (default 100) */
    uint64_t max_cost;     /* points beyond which the query is refused; 0 = no bound */
    const char *operation; /* operation name; NULL: the document's only one */
    const sl_gql_var *vars;
    size_t nvars;
    /* Fields that are connections even without first/last (NULL-terminated
     * list of names, or NULL). Fields whose selection set selects `edges` or
     * `nodes` are connections too. */
    const char *const *connections;
} sl_gql_options;

SL_API void sl_gql_options_init(sl_gql_options *o);

typedef struct sl_gql_cost_result {
    uint64_t objects;  /* objects that could come back (UINT64_MAX: saturated) */
    uint64_t requests; /* connection requests (GitHub's count) */
    uint64_t points;   /* the scheme's points: what to charge */
} sl_gql_cost_result;

/* Costs one operation of `doc`. `o` NULL means the defaults. Returns 0 and
 * *out; SL_ECOST (points over max_cost; *out is filled all the same),
 * SL_EPARSE (operation, fragments, variables, arguments, bounds: *err says
 * which) or SL_EINVAL (NULL doc or out). Allocates nothing. */
SL_API int sl_gql_cost(const sl_gql_doc *doc, const sl_gql_options *o, sl_gql_cost_result *out,
                       sl_gql_error *err);

#ifdef __cplusplus
}
#endif
#endif
