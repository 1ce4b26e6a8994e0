/* graphql/lex.h: the lexer of GraphQL documents (lex.c), one token at a
 * time for the parser (parse.c). The lexical grammar is the spec's, as
 * graphql-js 17 reads it; errors carry graphql-js's texts and offsets. */
#ifndef SLUICE_GRAPHQL_LEX_H
#define SLUICE_GRAPHQL_LEX_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/graphql.h"

typedef enum sl__gql_tok {
    SL__GQL_T_EOF = 0,
    SL__GQL_T_BANG,
    SL__GQL_T_DOLLAR,
    SL__GQL_T_AMP,
    SL__GQL_T_PAREN_L,
    SL__GQL_T_PAREN_R,
    SL__GQL_T_SPREAD,
    SL__GQL_T_COLON,
    SL__GQL_T_EQUALS,
    SL__GQL_T_AT,
    SL__GQL_T_BRACKET_L,
    SL__GQL_T_BRACKET_R,
    SL__GQL_T_BRACE_L,
    SL__GQL_T_PIPE,
    SL__GQL_T_BRACE_R,
    SL__GQL_T_NAME,
    SL__GQL_T_INT,
    SL__GQL_T_FLOAT,
    SL__GQL_T_STRING,
    SL__GQL_T_BLOCK_STRING
} sl__gql_tok;

/* The lexer over s[0..len) (the caller's, which outlives it). pos starts
 * at 0; after sl__gql_lex_next, tok is the token at s[start..end) and pos
 * is past it. err (may be NULL) receives the first syntax error. */
typedef struct sl__gql_lexer {
    const char *s;
    size_t len;
    size_t pos;        /* after the current token */
    sl__gql_tok tok;   /* current token */
    size_t start, end; /* its bytes */
    sl_gql_error *err;
} sl__gql_lexer;

/* Reads the next token, skipping ignored ones (white space, commas,
 * comments, BOMs), into tok / start / end; at the end of the text,
 * SL__GQL_T_EOF with start = end = len. Returns 0, or SL_EPARSE after a syntax
 * error (err: SL_GQL_ESYNTAX at the offending byte). */
int sl__gql_lex_next(sl__gql_lexer *p);

/* Fills err with SL_GQL_ESYNTAX at off, "Syntax Error: " + msg. Returns SL_EPARSE. */
int sl__gql_syntax(sl__gql_lexer *p, size_t off, const char *msg);

/* A token's name as graphql-js writes it in messages ("Name", "\"{\"", ...). */
const char *sl__gql_tok_name(sl__gql_tok t);

#endif
