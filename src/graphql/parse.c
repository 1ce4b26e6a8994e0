/* graphql/parse.c: a bounded parser of executable GraphQL documents.
 *
 * Hand-written because no Debian package provides a GraphQL parser in C
 * (libgraphqlparser is not packaged). It follows the GraphQL spec's lexical
 * grammar (names, ints, floats, strings with escapes, block strings, comments,
 * commas and BOMs as ignored tokens, punctuators) and its executable grammar
 * (operations, variables, fields, aliases, arguments, fragments, inline
 * fragments, directives, descriptions) as graphql-js 17's parse() reads them
 * with allowEmptySelectionSets: false; tests/integration/graphql_diff.sh holds
 * the two to the same accept/reject. Type-system definitions (SDL) are
 * refused: a query is never one. Pure: no I/O, bounded by sl_gql_limits,
 * recursion no deeper than max_depth. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphql/doc.h"

enum tok {
    T_EOF = 0,
    T_BANG,
    T_DOLLAR,
    T_AMP,
    T_PAREN_L,
    T_PAREN_R,
    T_SPREAD,
    T_COLON,
    T_EQUALS,
    T_AT,
    T_BRACKET_L,
    T_BRACKET_R,
    T_BRACE_L,
    T_PIPE,
    T_BRACE_R,
    T_NAME,
    T_INT,
    T_FLOAT,
    T_STRING,
    T_BLOCK_STRING
};

typedef struct parser {
    const char *s;
    size_t len;
    size_t pos;        /* lexer position: after the current token */
    enum tok tok;      /* current token */
    size_t start, end; /* its bytes */
    uint32_t nodes;    /* nodes counted against max_nodes */
    sl_gql_doc *doc;
    sl_gql_error *err;
} parser;

void sl__gql_fail(sl_gql_error *err, sl_gql_errkind kind, size_t off, const char *fmt, ...) {
    if (!err) return;
    err->kind = kind;
    err->offset = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

void sl_gql_limits_init(sl_gql_limits *lim) {
    if (!lim) return;
    lim->max_bytes = 65536;
    lim->max_depth = 64;
    lim->max_nodes = 10000;
    lim->max_expanded = 100000;
}

/* ---- lexer ------------------------------------------------------------------------ */

static const char *tok_name(enum tok t) {
    static const char *const names[] = {"<EOF>", "\"!\"",   "\"$\"", "\"&\"",  "\"(\"",
                                        "\")\"", "\"...\"", "\":\"", "\"=\"",  "\"@\"",
                                        "\"[\"", "\"]\"",   "\"{\"", "\"|\"",  "\"}\"",
                                        "Name",  "Int",     "Float", "String", "BlockString"};
    return names[t];
}

static int syntax(parser *p, size_t off, const char *msg) {
    sl__gql_fail(p->err, SL_GQL_ESYNTAX, off, "Syntax Error: %s", msg);
    return -1;
}

/* Character classes of the lexer, one table lookup per byte. */
enum { C_IGNORED = 1, C_NAME_START = 2, C_NAME = 4, C_DIGIT = 8 };
// NOLINTNEXTLINE(bugprone-macro-parentheses): a designator, [c] =
#define NAMES_(c) [c] = C_NAME_START | C_NAME
static const uint8_t cls[256] = {
    [' '] = C_IGNORED,
    ['\t'] = C_IGNORED,
    [','] = C_IGNORED,
    ['\n'] = C_IGNORED,
    ['\r'] = C_IGNORED,
    ['_'] = C_NAME_START | C_NAME,
    ['0'] = C_NAME | C_DIGIT,
    ['1'] = C_NAME | C_DIGIT,
    ['2'] = C_NAME | C_DIGIT,
    ['3'] = C_NAME | C_DIGIT,
    ['4'] = C_NAME | C_DIGIT,
    ['5'] = C_NAME | C_DIGIT,
    ['6'] = C_NAME | C_DIGIT,
    ['7'] = C_NAME | C_DIGIT,
    ['8'] = C_NAME | C_DIGIT,
    ['9'] = C_NAME | C_DIGIT,
    NAMES_('a'),
    NAMES_('b'),
    NAMES_('c'),
    NAMES_('d'),
    NAMES_('e'),
    NAMES_('f'),
    NAMES_('g'),
    NAMES_('h'),
    NAMES_('i'),
    NAMES_('j'),
    NAMES_('k'),
    NAMES_('l'),
    NAMES_('m'),
    NAMES_('n'),
    NAMES_('o'),
    NAMES_('p'),
    NAMES_('q'),
    NAMES_('r'),
    NAMES_('s'),
    NAMES_('t'),
    NAMES_('u'),
    NAMES_('v'),
    NAMES_('w'),
    NAMES_('x'),
    NAMES_('y'),
    NAMES_('z'),
    NAMES_('A'),
    NAMES_('B'),
    NAMES_('C'),
    NAMES_('D'),
    NAMES_('E'),
    NAMES_('F'),
    NAMES_('G'),
    NAMES_('H'),
    NAMES_('I'),
    NAMES_('J'),
    NAMES_('K'),
    NAMES_('L'),
    NAMES_('M'),
    NAMES_('N'),
    NAMES_('O'),
    NAMES_('P'),
    NAMES_('Q'),
    NAMES_('R'),
    NAMES_('S'),
    NAMES_('T'),
    NAMES_('U'),
    NAMES_('V'),
    NAMES_('W'),
    NAMES_('X'),
    NAMES_('Y'),
    NAMES_('Z'),
};
#undef NAMES_

/* c is a byte (0..255) or -1 past the end */
static bool is_digit(int c) {
    return c >= 0 && (cls[c] & C_DIGIT);
}
static bool is_name_start(int c) {
    return c >= 0 && (cls[c] & C_NAME_START);
}

static int at(const parser *p, size_t i) {
    return i < p->len ? (unsigned char)p->s[i] : -1;
}

/* Length of the valid UTF-8 scalar value at i (1-4), 0 if invalid
 * (overlong, surrogate, above U+10FFFF, truncated). */
static size_t utf8_len(const parser *p, size_t i) {
    int c = at(p, i);
    if (c < 0) return 0;
    if (c < 0x80) return 1;
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = (uint32_t)c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = (uint32_t)c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = (uint32_t)c & 0x07;
    else
        return 0;
    for (size_t k = 1; k < n; k++) {
        int d = at(p, i + k);
        if (d < 0x80 || d > 0xBF) return 0;
        cp = (cp << 6) | ((uint32_t)d & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    return n;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(const parser *p, size_t i) {
    int v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hexval(at(p, i + k));
        if (h < 0) return -1;
        v = (v << 4) | h;
    }
    return v;
}

/* An escape at i (p->s[i] == '\\'); returns its length or 0 if invalid. */
static size_t escape_len(const parser *p, size_t i) {
    int c = at(p, i + 1);
    switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        return 2;
    case 'u':
        break;
    default:
        return 0;
    }
    if (at(p, i + 2) == '{') { /* \u{X...}: 1 to 8 hex digits, a scalar value */
        uint32_t cp = 0;
        size_t k = i + 3;
        for (; k < i + 12; k++) {
            int d = at(p, k);
            if (d == '}') {
                if (k == i + 3 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
                return k + 1 - i;
            }
            int h = hexval(d);
            if (h < 0 || cp > 0x0FFFFFFF) return 0;
            cp = (cp << 4) | (uint32_t)h;
            if (cp > 0x7FFFFFFF) return 0;
        }
        return 0;
    }
    int v = hex4(p, i + 2);
    if (v < 0) return 0;
    if (v < 0xD800 || v > 0xDFFF) return 6;
    if (v <= 0xDBFF && at(p, i + 6) == '\\' && at(p, i + 7) == 'u') {
        int t = hex4(p, i + 8);
        if (t >= 0xDC00 && t <= 0xDFFF) return 12;
    }
    return 0;
}

static int read_digits(parser *p, size_t *i) {
    if (!is_digit(at(p, *i))) return syntax(p, *i, "Invalid number, expected digit.");
    while (is_digit(at(p, *i))) (*i)++;
    return 0;
}

static int read_number(parser *p, size_t i) {
    size_t b = i;
    bool is_float = false;
    if (at(p, i) == '-') i++;
    if (at(p, i) == '0') {
        i++;
        if (is_digit(at(p, i))) return syntax(p, i, "Invalid number, unexpected digit after 0.");
    } else if (read_digits(p, &i) < 0) {
        return -1;
    }
    if (at(p, i) == '.') {
        is_float = true;
        i++;
        if (read_digits(p, &i) < 0) return -1;
    }
    if (at(p, i) == 'e' || at(p, i) == 'E') {
        is_float = true;
        i++;
        if (at(p, i) == '+' || at(p, i) == '-') i++;
        if (read_digits(p, &i) < 0) return -1;
    }
    if (at(p, i) == '.' || is_name_start(at(p, i)))
        return syntax(p, i, "Invalid number, expected digit.");
    p->tok = is_float ? T_FLOAT : T_INT;
    p->start = b;
    p->end = p->pos = i;
    return 0;
}

static int read_string(parser *p, size_t i) {
    size_t b = i++;
    for (;;) {
        int c = at(p, i);
        if (c < 0 || c == '\n' || c == '\r') return syntax(p, i, "Unterminated string.");
        if (c == '"') break;
        if (c == '\\') {
            size_t n = escape_len(p, i);
            if (!n) return syntax(p, i, "Invalid escape sequence in string.");
            i += n;
            continue;
        }
        size_t n = utf8_len(p, i);
        if (!n) return syntax(p, i, "Invalid UTF-8 within String.");
        i += n;
    }
    p->tok = T_STRING;
    p->start = b;
    p->end = p->pos = i + 1;
    return 0;
}

static bool three_quotes(const parser *p, size_t i) {
    return at(p, i) == '"' && at(p, i + 1) == '"' && at(p, i + 2) == '"';
}

static int read_block_string(parser *p, size_t i) {
    size_t b = i;
    i += 3;
    for (;;) {
        if (i >= p->len) return syntax(p, i, "Unterminated string.");
        if (three_quotes(p, i)) break;
        if (at(p, i) == '\\' && three_quotes(p, i + 1)) {
            i += 4;
            continue;
        }
        size_t n = utf8_len(p, i);
        if (!n) return syntax(p, i, "Invalid UTF-8 within String.");
        i += n;
    }
    p->tok = T_BLOCK_STRING;
    p->start = b;
    p->end = p->pos = i + 3;
    return 0;
}

/* Reads the next token into p->tok / start / end. */
static int next(parser *p) {
    size_t i = p->pos;
    for (;;) {
        int c = at(p, i);
        if (c < 0) {
            p->tok = T_EOF;
            p->start = p->end = p->pos = p->len;
            return 0;
        }
        if (cls[c] & C_IGNORED) {
            i++;
            continue;
        }
        if (c == 0xEF && at(p, i + 1) == 0xBB && at(p, i + 2) == 0xBF) { /* U+FEFF */
            i += 3;
            continue;
        }
        if (c == '#') {
            i++;
            while (at(p, i) >= 0 && at(p, i) != '\n' && at(p, i) != '\r') {
                size_t n = utf8_len(p, i);
                if (!n) return syntax(p, i, "Invalid UTF-8 in comment.");
                i += n;
            }
            continue;
        }
        break;
    }
    int c = at(p, i);
    enum tok t;
    switch (c) {
    case '!':
        t = T_BANG;
        break;
    case '$':
        t = T_DOLLAR;
        break;
    case '&':
        t = T_AMP;
        break;
    case '(':
        t = T_PAREN_L;
        break;
    case ')':
        t = T_PAREN_R;
        break;
    case ':':
        t = T_COLON;
        break;
    case '=':
        t = T_EQUALS;
        break;
    case '@':
        t = T_AT;
        break;
    case '[':
        t = T_BRACKET_L;
        break;
    case ']':
        t = T_BRACKET_R;
        break;
    case '{':
        t = T_BRACE_L;
        break;
    case '|':
        t = T_PIPE;
        break;
    case '}':
        t = T_BRACE_R;
        break;
    case '.':
        if (at(p, i + 1) == '.' && at(p, i + 2) == '.') {
            p->tok = T_SPREAD;
            p->start = i;
            p->end = p->pos = i + 3;
            return 0;
        }
        return syntax(p, i, "Unexpected character \".\".");
    case '"':
        return three_quotes(p, i) ? read_block_string(p, i) : read_string(p, i);
    default:
        if (is_digit(c) || c == '-') return read_number(p, i);
        if (is_name_start(c)) {
            size_t b = i++;
            const unsigned char *u = (const unsigned char *)p->s;
            while (i < p->len && (cls[u[i]] & C_NAME)) i++;
            p->tok = T_NAME;
            p->start = b;
            p->end = p->pos = i;
            return 0;
        }
        if (c >= 0x20 && c < 0x7F) {
            char msg[40];
            snprintf(msg, sizeof msg, "Unexpected character \"%c\".", c);
            return syntax(p, i, msg);
        }
        return syntax(p, i, "Unexpected character.");
    }
    p->tok = t;
    p->start = i;
    p->end = p->pos = i + 1;
    return 0;
}

/* ---- parser helpers ----------------------------------------------------------------- */

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((x) < 0) return -1;                                                                    \
    } while (0)

static int unexpected(parser *p) {
    char msg[80];
    if (p->tok == T_NAME || p->tok == T_INT || p->tok == T_FLOAT) {
        int n = (int)(p->end - p->start);
        snprintf(msg, sizeof msg, "Unexpected %s \"%.*s\".", tok_name(p->tok), n > 24 ? 24 : n,
                 p->s + p->start);
    } else {
        snprintf(msg, sizeof msg, "Unexpected %s.", tok_name(p->tok));
    }
    return syntax(p, p->start, msg);
}

static int expect(parser *p, enum tok t) {
    if (p->tok != t) {
        char msg[80];
        snprintf(msg, sizeof msg, "Expected %s, found %s.", tok_name(t), tok_name(p->tok));
        return syntax(p, p->start, msg);
    }
    return next(p);
}

static bool peek_kw(const parser *p, const char *kw) {
    size_t n = strlen(kw);
    return p->tok == T_NAME && p->end - p->start == n && memcmp(p->s + p->start, kw, n) == 0;
}

static int count(parser *p) {
    if (++p->nodes > p->doc->lim.max_nodes) {
        sl__gql_fail(p->err, SL_GQL_ENODES, p->start, "The document has more than %u nodes.",
                     (unsigned)p->doc->lim.max_nodes);
        return -1;
    }
    return 0;
}

static int deeper(parser *p, uint32_t depth) {
    if (depth > p->doc->lim.max_depth) {
        sl__gql_fail(p->err, SL_GQL_EDEPTH, p->start, "The document nests deeper than %u.",
                     (unsigned)p->doc->lim.max_depth);
        return -1;
    }
    return 0;
}

static int nomem(parser *p) {
    sl__gql_fail(p->err, SL_GQL_ENODES, p->start, "Out of memory.");
    return -2;
}

/* Grows an array of `size`-byte items to hold n + 1; 0 or -2 (no memory). */
static int grow(void **arr, uint32_t *cap, uint32_t n, size_t size) {
    if (n + 1 < *cap) return 0;
    uint32_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*arr, (size_t)nc * size);
    if (!q) return -2;
    *arr = q;
    *cap = nc;
    return 0;
}

/* ---- values, types, directives -------------------------------------------------- */

/* Parses a Value; with `page` it also says what the value is for first/last. */
static int value(parser *p, bool is_const, uint32_t depth, sl__gql_page *page) {
    TRY(count(p));
    TRY(deeper(p, depth));
    if (page) {
        memset(page, 0, sizeof *page);
        page->kind = SL__GQL_PAGE_BAD;
        page->off = (uint32_t)p->start;
    }
    switch (p->tok) {
    case T_BRACKET_L:
        TRY(next(p));
        while (p->tok != T_BRACKET_R) TRY(value(p, is_const, depth + 1, NULL));
        return next(p);
    case T_BRACE_L:
        TRY(next(p));
        while (p->tok != T_BRACE_R) {
            TRY(expect(p, T_NAME));
            TRY(expect(p, T_COLON));
            TRY(value(p, is_const, depth + 1, NULL));
        }
        return next(p);
    case T_INT:
        if (page) {
            page->kind = SL__GQL_PAGE_INT;
            size_t i = p->start;
            if (p->s[i] == '-') page->negative = true, i++;
            uint64_t v = 0;
            for (; i < p->end; i++) {
                uint64_t d = (uint64_t)(p->s[i] - '0');
                v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
            }
            page->value = v;
            if (v == 0) page->negative = false;
        }
        return next(p);
    case T_NAME:
        if (page && p->end - p->start == 4 && memcmp(p->s + p->start, "null", 4) == 0)
            page->kind = SL__GQL_PAGE_NULL;
        return next(p);
    case T_FLOAT:
    case T_STRING:
    case T_BLOCK_STRING:
        return next(p);
    case T_DOLLAR: {
        size_t off = p->start;
        TRY(next(p));
        if (is_const) {
            if (p->tok == T_NAME) return syntax(p, off, "Unexpected variable in constant value.");
            return syntax(p, off, "Unexpected \"$\"."); /* graphql-js: at the "$" */
        }
        if (p->tok != T_NAME) return expect(p, T_NAME);
        if (page) {
            page->kind = SL__GQL_PAGE_VAR;
            page->var_off = (uint32_t)p->start;
            page->var_len = (uint32_t)(p->end - p->start);
        }
        return next(p);
    }
    default:
        return unexpected(p);
    }
}

static int directives(parser *p, bool is_const, uint32_t depth) {
    while (p->tok == T_AT) {
        TRY(count(p));
        TRY(next(p));
        TRY(expect(p, T_NAME));
        if (p->tok == T_PAREN_L) {
            TRY(next(p));
            do {
                TRY(count(p));
                TRY(expect(p, T_NAME));
                TRY(expect(p, T_COLON));
                TRY(value(p, is_const, depth + 1, NULL));
            } while (p->tok != T_PAREN_R);
            TRY(next(p));
        }
    }
    return 0;
}

static int type_ref(parser *p, uint32_t depth) {
    TRY(deeper(p, depth));
    if (p->tok == T_BRACKET_L) {
        TRY(next(p));
        TRY(type_ref(p, depth + 1));
        TRY(expect(p, T_BRACKET_R));
    } else {
        TRY(expect(p, T_NAME));
    }
    if (p->tok == T_BANG) TRY(next(p));
    return 0;
}

/* ---- selections ------------------------------------------------------------------ */

static uint32_t new_node(parser *p, uint8_t kind) {
    sl_gql_doc *d = p->doc;
    if (grow((void **)&d->nodes, &d->cap_nodes, d->nnodes + 1, sizeof *d->nodes) < 0) return 0;
    uint32_t i = ++d->nnodes;
    memset(&d->nodes[i], 0, sizeof d->nodes[i]);
    d->nodes[i].kind = kind;
    d->nodes[i].off = (uint32_t)p->start;
    return i;
}

static int selection_set(parser *p, uint32_t depth, uint32_t *first);

static bool name_is(const parser *p, size_t off, size_t len, const char *s) {
    return strlen(s) == len && memcmp(p->s + off, s, len) == 0;
}

static int field(parser *p, uint32_t depth, uint32_t *out) {
    TRY(count(p));
    uint32_t n = new_node(p, SL__GQL_FIELD);
    if (!n) return nomem(p);
    *out = n;
    if (p->tok != T_NAME) return expect(p, T_NAME);
    p->doc->nodes[n].name_off = (uint32_t)p->start;
    p->doc->nodes[n].name_len = (uint32_t)(p->end - p->start);
    TRY(next(p));
    if (p->tok == T_COLON) { /* that was the alias */
        TRY(next(p));
        if (p->tok != T_NAME) return expect(p, T_NAME);
        p->doc->nodes[n].name_off = (uint32_t)p->start;
        p->doc->nodes[n].name_len = (uint32_t)(p->end - p->start);
        TRY(next(p));
    }
    if (p->tok == T_PAREN_L) {
        TRY(next(p));
        do {
            TRY(count(p));
            if (p->tok != T_NAME) return expect(p, T_NAME);
            size_t aoff = p->start, alen = p->end - p->start;
            TRY(next(p));
            TRY(expect(p, T_COLON));
            sl__gql_page pg;
            TRY(value(p, false, depth + 1, &pg));
            sl__gql_node *nd = &p->doc->nodes[n];
            if ((name_is(p, aoff, alen, "first") || name_is(p, aoff, alen, "last")) &&
                nd->npage < 2)
                nd->page[nd->npage++] = pg;
        } while (p->tok != T_PAREN_R);
        TRY(next(p));
    }
    TRY(directives(p, false, depth));
    if (p->tok == T_BRACE_L) {
        uint32_t first = 0;
        TRY(selection_set(p, depth + 1, &first));
        p->doc->nodes[n].child = first;
    }
    return 0;
}

static int fragment_sel(parser *p, uint32_t depth, uint32_t *out) {
    TRY(count(p));
    size_t off = p->start;
    TRY(next(p)); /* the "..." */
    bool on = peek_kw(p, "on");
    if (on) TRY(next(p));
    if (!on && p->tok == T_NAME) {
        uint32_t n = new_node(p, SL__GQL_SPREAD);
        if (!n) return nomem(p);
        *out = n;
        p->doc->nodes[n].off = (uint32_t)off;
        p->doc->nodes[n].name_off = (uint32_t)p->start;
        p->doc->nodes[n].name_len = (uint32_t)(p->end - p->start);
        TRY(next(p));
        return directives(p, false, depth);
    }
    uint32_t n = new_node(p, SL__GQL_INLINE);
    if (!n) return nomem(p);
    *out = n;
    p->doc->nodes[n].off = (uint32_t)off;
    if (on) TRY(expect(p, T_NAME));
    TRY(directives(p, false, depth));
    uint32_t first = 0;
    TRY(selection_set(p, depth + 1, &first));
    p->doc->nodes[n].child = first;
    return 0;
}

/* Parses `{ Selection+ }`; *first is its first selection. */
static int selection_set(parser *p, uint32_t depth, uint32_t *first) {
    TRY(deeper(p, depth));
    TRY(expect(p, T_BRACE_L));
    uint32_t last = 0;
    do {
        uint32_t n = 0;
        if (p->tok == T_SPREAD)
            TRY(fragment_sel(p, depth, &n));
        else
            TRY(field(p, depth, &n));
        if (last)
            p->doc->nodes[last].next = n;
        else
            *first = n;
        last = n;
    } while (p->tok != T_BRACE_R);
    return next(p);
}

/* ---- definitions ------------------------------------------------------------------ */

static uint32_t new_def(parser *p, uint8_t kind, size_t off) {
    sl_gql_doc *d = p->doc;
    if (grow((void **)&d->defs, &d->cap_defs, d->ndefs + 1, sizeof *d->defs) < 0) return 0;
    uint32_t i = ++d->ndefs;
    memset(&d->defs[i], 0, sizeof d->defs[i]);
    d->defs[i].kind = kind;
    d->defs[i].off = (uint32_t)off;
    return i;
}

static int variable_definitions(parser *p, uint32_t di) {
    sl_gql_doc *d = p->doc;
    d->defs[di].var_first = d->nvardefs;
    TRY(next(p)); /* "(" */
    do {
        TRY(count(p));
        if (p->tok == T_STRING || p->tok == T_BLOCK_STRING) TRY(next(p)); /* description */
        TRY(expect(p, T_DOLLAR));
        if (p->tok != T_NAME) return expect(p, T_NAME);
        if (grow((void **)&d->vars, &d->cap_vars, d->nvardefs, sizeof *d->vars) < 0)
            return nomem(p);
        sl__gql_vardef *v = &d->vars[d->nvardefs++];
        memset(v, 0, sizeof *v);
        v->name_off = (uint32_t)p->start;
        v->name_len = (uint32_t)(p->end - p->start);
        d->defs[di].nvars++;
        TRY(next(p));
        TRY(expect(p, T_COLON));
        TRY(type_ref(p, 1));
        if (p->tok == T_EQUALS) {
            TRY(next(p));
            sl__gql_page pg;
            TRY(value(p, true, 1, &pg));
            d->vars[d->nvardefs - 1].def = pg;
        }
        TRY(directives(p, true, 1));
    } while (p->tok != T_PAREN_R);
    return next(p);
}

static int definition(parser *p) {
    TRY(count(p));
    size_t off = p->start;
    if (p->tok == T_BRACE_L) { /* the query shorthand */
        uint32_t di = new_def(p, SL__GQL_OP, off);
        if (!di) return nomem(p);
        p->doc->nops++;
        uint32_t first = 0;
        TRY(selection_set(p, 1, &first));
        p->doc->defs[di].sel = first;
        return 0;
    }
    if (p->tok == T_STRING || p->tok == T_BLOCK_STRING) {
        TRY(next(p));
        if (p->tok == T_BRACE_L)
            return syntax(p, off,
                          "Unexpected description, descriptions are not supported on "
                          "shorthand queries.");
    }
    bool op = peek_kw(p, "query") || peek_kw(p, "mutation") || peek_kw(p, "subscription");
    bool frag = peek_kw(p, "fragment");
    if (!op && !frag) {
        if (p->tok == T_NAME) {
            static const char *const sdl[] = {"schema", "scalar", "type",      "interface", "union",
                                              "enum",   "input",  "directive", "extend"};
            for (size_t k = 0; k < sizeof sdl / sizeof *sdl; k++)
                if (peek_kw(p, sdl[k]))
                    return syntax(p, p->start, "Type system definitions are not queries.");
            if (p->start != off) /* as graphql-js: at the description */
                return syntax(p, off,
                              "Unexpected description, only GraphQL definitions "
                              "support descriptions.");
        }
        return unexpected(p);
    }
    uint32_t di = new_def(p, op ? SL__GQL_OP : SL__GQL_FRAGMENT, off);
    if (!di) return nomem(p);
    TRY(next(p));
    sl_gql_doc *d = p->doc;
    if (op) {
        d->nops++;
        if (p->tok == T_NAME) {
            d->defs[di].name_off = (uint32_t)p->start;
            d->defs[di].name_len = (uint32_t)(p->end - p->start);
            TRY(next(p));
        }
        if (p->tok == T_PAREN_L) TRY(variable_definitions(p, di));
    } else {
        if (peek_kw(p, "on")) return unexpected(p);
        if (p->tok != T_NAME) return expect(p, T_NAME);
        d->defs[di].name_off = (uint32_t)p->start;
        d->defs[di].name_len = (uint32_t)(p->end - p->start);
        TRY(next(p));
        if (!peek_kw(p, "on")) return syntax(p, p->start, "Expected \"on\".");
        TRY(next(p));
        TRY(expect(p, T_NAME));
    }
    TRY(directives(p, false, 1));
    uint32_t first = 0;
    TRY(selection_set(p, 1, &first));
    d->defs[di].sel = first;
    return 0;
}

/* ---- after parsing: resolve spreads, find fragment cycles ------------------------------ */

static int cmp_name(const sl_gql_doc *d, uint32_t a_off, uint32_t a_len, uint32_t b_off,
                    uint32_t b_len) {
    uint32_t n = a_len < b_len ? a_len : b_len;
    int c = memcmp(d->text + a_off, d->text + b_off, n);
    if (c) return c;
    return a_len < b_len ? -1 : a_len > b_len;
}

/* The first fragment named (off, len) in `frags` (sorted by name, then by
 * position; n items); 0 if none. */
static uint32_t find_frag(const sl_gql_doc *d, const uint32_t *frags, uint32_t n, uint32_t off,
                          uint32_t len) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const sl__gql_def *f = &d->defs[frags[mid]];
        if (cmp_name(d, f->name_off, f->name_len, off, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n) return 0;
    const sl__gql_def *f = &d->defs[frags[lo]];
    return cmp_name(d, f->name_off, f->name_len, off, len) == 0 ? frags[lo] : 0;
}

/* Sorts fragment indexes by name, then position: a bottom-up merge sort
 * through tmp, O(n log n), stable, no global state. */
static void sort_frags(const sl_gql_doc *d, uint32_t *a, uint32_t *tmp, uint32_t n) {
    for (uint32_t w = 1; w<n; w = w> UINT32_MAX / 2 ? n : w * 2) {
        for (uint32_t lo = 0; lo < n; lo += (n - lo > 2 * w ? 2 * w : n - lo)) {
            uint32_t mid = n - lo > w ? lo + w : n;
            uint32_t hi = n - lo > 2 * w ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                const sl__gql_def *x = &d->defs[a[i]], *y = &d->defs[a[j]];
                int c = cmp_name(d, x->name_off, x->name_len, y->name_off, y->name_len);
                tmp[k++] = c <= 0 ? a[i++] : a[j++];
            }
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

/* Resolves each spread's target (0: unknown; a duplicated name: the first
 * fragment of that name), marks later fragments of a duplicated name, and
 * marks fragments on a spread cycle (iterative DFS with colours: a spread to
 * a fragment still on the path closes a cycle through it). 0 or -2 (no memory). */
static int resolve(sl_gql_doc *d) {
    uint32_t nf = 0;
    for (uint32_t i = 1; i <= d->ndefs; i++) nf += d->defs[i].kind == SL__GQL_FRAGMENT;
    size_t nd = (size_t)d->ndefs + 1;
    uint32_t *frags = calloc((size_t)nf + 1, sizeof *frags);
    uint32_t *tmp = calloc((size_t)nf + 1, sizeof *tmp);
    uint8_t *colour = calloc(nd, 1);
    uint32_t *stack = calloc(nd, sizeof *stack);
    uint32_t *iter = calloc(nd, sizeof *iter);
    int rc = 0;
    if (!frags || !tmp || !colour || !stack || !iter) {
        rc = -2;
        goto out;
    }
    nf = 0;
    for (uint32_t i = 1; i <= d->ndefs; i++)
        if (d->defs[i].kind == SL__GQL_FRAGMENT) frags[nf++] = i;
    sort_frags(d, frags, tmp, nf);
    for (uint32_t k = 1; k < nf; k++) {
        const sl__gql_def *x = &d->defs[frags[k - 1]];
        sl__gql_def *y = &d->defs[frags[k]];
        if (cmp_name(d, x->name_off, x->name_len, y->name_off, y->name_len) == 0)
            y->duplicate = true;
    }
    for (uint32_t i = 1; i <= d->nnodes; i++) {
        sl__gql_node *n = &d->nodes[i];
        if (n->kind == SL__GQL_SPREAD)
            n->target = find_frag(d, frags, nf, n->name_off, n->name_len);
    }
    for (uint32_t k = 0; k < nf; k++) {
        uint32_t root = frags[k];
        if (colour[root]) continue;
        uint32_t sp = 0;
        stack[sp++] = root;
        colour[root] = 1;
        iter[root] = d->defs[root].node_first;
        while (sp) {
            uint32_t top = stack[sp - 1];
            const sl__gql_def *t = &d->defs[top];
            uint32_t to = 0;
            while (iter[top] && iter[top] <= t->node_last) {
                const sl__gql_node *n = &d->nodes[iter[top]++];
                if (n->kind == SL__GQL_SPREAD && n->target) {
                    to = n->target;
                    break;
                }
            }
            if (!to) {
                colour[top] = 2;
                sp--;
            } else if (colour[to] == 1) {
                d->defs[to].cyclic = true;
            } else if (colour[to] == 0) {
                colour[to] = 1;
                iter[to] = d->defs[to].node_first;
                stack[sp++] = to;
            }
        }
    }
out:
    free(frags);
    free(tmp);
    free(colour);
    free(stack);
    free(iter);
    return rc;
}

/* ---- entry points ----------------------------------------------------------------- */

int sl_gql_parse(const char *text, size_t len, const sl_gql_limits *lim, sl_gql_doc **out,
                 sl_gql_error *err) {
    if (err) memset(err, 0, sizeof *err);
    if (!out || (!text && len > 0)) return SL_EINVAL;
    *out = NULL;
    sl_gql_limits l;
    sl_gql_limits_init(&l);
    if (lim) l = *lim;
    if (!l.max_bytes || !l.max_depth || !l.max_nodes || !l.max_expanded ||
        l.max_depth > SL_GQL_DEPTH_MAX || l.max_nodes > SL_GQL_NODES_MAX)
        return SL_EINVAL;
    if (len > l.max_bytes || len > UINT32_MAX - 16) {
        sl__gql_fail(err, SL_GQL_ESIZE, l.max_bytes, "The document is longer than %zu bytes.",
                     l.max_bytes);
        return SL_EPARSE;
    }
    sl_gql_doc *d = calloc(1, sizeof *d);
    if (!d) return SL_ENOMEM;
    d->lim = l;
    d->len = len;
    d->text = malloc(len + 1);
    if (!d->text) {
        free(d);
        return SL_ENOMEM;
    }
    if (len) memcpy(d->text, text, len);
    d->text[len] = '\0';
    parser p = {.s = d->text, .len = len, .doc = d, .err = err};
    int rc = next(&p);
    if (rc == 0 && p.tok == T_EOF) rc = syntax(&p, p.start, "Unexpected <EOF>.");
    while (rc == 0 && p.tok != T_EOF) {
        uint32_t first_node = d->nnodes + 1;
        rc = definition(&p);
        if (rc == 0) {
            d->defs[d->ndefs].node_first = first_node;
            d->defs[d->ndefs].node_last = d->nnodes;
        }
    }
    if (rc == 0) rc = resolve(d);
    if (rc < 0) {
        sl_gql_free(d);
        return rc == -2 ? SL_ENOMEM : SL_EPARSE;
    }
    *out = d;
    return SL_OK;
}

void sl_gql_free(sl_gql_doc *doc) {
    if (!doc) return;
    free(doc->text);
    free(doc->nodes);
    free(doc->defs);
    free(doc->vars);
    free(doc);
}

size_t sl_gql_operation_count(const sl_gql_doc *doc) {
    return doc ? doc->nops : 0;
}
