/* domains_yaml.h (internal to the rule-file reader, domains_read.c): a
 * rule file as a tree of YAML nodes, and the helpers that read its scalars
 * and report problems as "file:line: field: message" (the messages of
 * envoyproxy/ratelimit's checks keep its words). */
#ifndef SLUICE_POLICY_DOMAINS_YAML_H
#define SLUICE_POLICY_DOMAINS_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/domains.h"
#include "policy/yaml_reader.h" /* sl__errors_add: "file:line: field: message" */

enum { Y_SCALAR, Y_MAP, Y_SEQ };

typedef struct ynode {
    int type, line;
    bool plain; /* plain style, no tag: the only form booleans and numbers take */
    bool null;  /* plain "", "~", "null" */
    char *text; /* scalar bytes, NUL-terminated */
    size_t len;
    struct ynode **kids; /* mapping: key, value, key, value, ... */
    size_t n, cap;
} ynode;

/* Frees a tree (NULL is fine). */
void sl__dy_free(ynode *n);

/* Parses a file's text into a tree (bounded: YAML_MAX_NODES nodes,
 * YAML_MAX_DEPTH levels; aliases and tags are refused). Returns SL_OK and
 * *out (free with sl__dy_free); else *out NULL after reporting into errs:
 * SL_ENOMEM when an allocation failed (libyaml's included), SL_EINVAL for
 * anything else (a YAML error, a cap, a second document, an empty file). */
int sl__dy_tree(const char *text, size_t len, const char *source, sl__config_errors *errs,
                ynode **out);

/* `s` quoted for a message: escaped, ASCII only, shortened, into out. */
void sl__dy_quote(char *out, size_t size, const char *s, size_t len);

/* One file being read. */
typedef struct walker {
    const char *source;
    sl__config_errors *errs;
    sl__domain_rules *rules;
    bool nomem;
} walker;

/* What a node is, for "expected X, got Y". */
void sl__dy_describe(const ynode *n, char *out, size_t size);
/* Reports "expected <what>, got <the node>". */
void sl__dy_expected(walker *w, const ynode *n, const char *field, const char *what);
/* out (FIELD_MAX bytes) = parent.key, truncated. */
void sl__dy_join(char *out, const char *parent, const char *key);
/* A string (any scalar, as yaml.v2 decodes into a string field); null is
 * "". False after reporting. *out is malloc'd (NUL-terminated; the old
 * *out freed), *len its length (len may be NULL). */
bool sl__dy_string(walker *w, const ynode *v, const char *field, char **out, size_t *len);
/* YAML 1.1 booleans, as yaml.v2 reads them. False after reporting. */
bool sl__dy_bool(walker *w, const ynode *v, const char *field, bool *out);
/* An unsigned integer: decimal (underscores allowed, as YAML 1.1) or 0x
 * hex, unquoted, at most max. False after reporting. */
bool sl__dy_uint(walker *w, const ynode *v, const char *field, uint64_t max, uint64_t *out);

#endif
