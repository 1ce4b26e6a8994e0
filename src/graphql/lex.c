/* graphql/lex.c: the lexer of GraphQL documents (lex.h), the spec's lexical
 * grammar as graphql-js 17 reads it: ignored tokens (white space, commas,
 * comments, BOMs), punctuators, names, ints and floats, strings with their
 * escapes and block strings, each checked as UTF-8. Pure: no I/O, no
 * allocation. */
#include <stdio.h>
#include <string.h>

#include "graphql/doc.h"
#include "graphql/lex.h"

const char *sl__gql_tok_name(sl__gql_tok t) {
    static const char *const names[] = {"<EOF>", "\"!\"",   "\"$\"", "\"&\"",  "\"(\"",
                                        "\")\"", "\"...\"", "\":\"", "\"=\"",  "\"@\"",
                                        "\"[\"", "\"]\"",   "\"{\"", "\"|\"",  "\"}\"",
                                        "Name",  "Int",     "Float", "String", "BlockString"};
    return names[t];
}

int sl__gql_syntax(sl__gql_lexer *p, size_t off, const char *msg) {
    sl__gql_fail(p->err, SL_GQL_ESYNTAX, off, "Syntax Error: %s", msg);
    return SL_EPARSE;
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

static int at(const sl__gql_lexer *p, size_t i) {
    return i < p->len ? (unsigned char)p->s[i] : -1;
}

/* Length of the valid UTF-8 scalar value at i (1-4), 0 if invalid
 * (overlong, surrogate, above U+10FFFF, truncated). */
static size_t utf8_len(const sl__gql_lexer *p, size_t i) {
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

static int hex4(const sl__gql_lexer *p, size_t i) {
    int v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hexval(at(p, i + k));
        if (h < 0) return -1;
        v = (v << 4) | h;
    }
    return v;
}

/* An escape at i (p->s[i] == '\\'); returns its length or 0 if invalid. */
static size_t escape_len(const sl__gql_lexer *p, size_t i) {
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

/* The current token: t at s[b..e), the lexer after it. Returns 0. */
static int token(sl__gql_lexer *p, sl__gql_tok t, size_t b, size_t e) {
    p->tok = t;
    p->start = b;
    p->end = p->pos = e;
    return 0;
}

/* Steps *i over the UTF-8 scalar value there; SL_EPARSE (msg at *i) if invalid. */
static int skip_utf8(sl__gql_lexer *p, size_t *i, const char *msg) {
    size_t n = utf8_len(p, *i);
    if (!n) return sl__gql_syntax(p, *i, msg);
    *i += n;
    return 0;
}

static int read_digits(sl__gql_lexer *p, size_t *i) {
    if (!is_digit(at(p, *i))) return sl__gql_syntax(p, *i, "Invalid number, expected digit.");
    while (is_digit(at(p, *i))) (*i)++;
    return 0;
}

static int read_number(sl__gql_lexer *p, size_t i) {
    size_t b = i;
    bool is_float = false;
    if (at(p, i) == '-') i++;
    if (at(p, i) == '0') {
        i++;
        if (is_digit(at(p, i)))
            return sl__gql_syntax(p, i, "Invalid number, unexpected digit after 0.");
    } else if (read_digits(p, &i) < 0) {
        return SL_EPARSE;
    }
    if (at(p, i) == '.') {
        is_float = true;
        i++;
        if (read_digits(p, &i) < 0) return SL_EPARSE;
    }
    if (at(p, i) == 'e' || at(p, i) == 'E') {
        is_float = true;
        i++;
        if (at(p, i) == '+' || at(p, i) == '-') i++;
        if (read_digits(p, &i) < 0) return SL_EPARSE;
    }
    if (at(p, i) == '.' || is_name_start(at(p, i)))
        return sl__gql_syntax(p, i, "Invalid number, expected digit.");
    return token(p, is_float ? SL__GQL_T_FLOAT : SL__GQL_T_INT, b, i);
}

static int read_string(sl__gql_lexer *p, size_t i) {
    size_t b = i++;
    for (;;) {
        int c = at(p, i);
        if (c < 0 || c == '\n' || c == '\r') return sl__gql_syntax(p, i, "Unterminated string.");
        if (c == '"') break;
        if (c == '\\') {
            size_t n = escape_len(p, i);
            if (!n) return sl__gql_syntax(p, i, "Invalid escape sequence in string.");
            i += n;
            continue;
        }
        if (skip_utf8(p, &i, "Invalid UTF-8 within String.") < 0) return SL_EPARSE;
    }
    return token(p, SL__GQL_T_STRING, b, i + 1);
}

static bool three_quotes(const sl__gql_lexer *p, size_t i) {
    return at(p, i) == '"' && at(p, i + 1) == '"' && at(p, i + 2) == '"';
}

static int read_block_string(sl__gql_lexer *p, size_t i) {
    size_t b = i;
    i += 3;
    for (;;) {
        if (i >= p->len) return sl__gql_syntax(p, i, "Unterminated string.");
        if (three_quotes(p, i)) break;
        if (at(p, i) == '\\' && three_quotes(p, i + 1)) {
            i += 4;
            continue;
        }
        if (skip_utf8(p, &i, "Invalid UTF-8 within String.") < 0) return SL_EPARSE;
    }
    return token(p, SL__GQL_T_BLOCK_STRING, b, i + 3);
}

static int read_name(sl__gql_lexer *p, size_t i) {
    size_t b = i++;
    const unsigned char *u = (const unsigned char *)p->s;
    while (i < p->len && (cls[u[i]] & C_NAME)) i++;
    return token(p, SL__GQL_T_NAME, b, i);
}

/* Steps *i over ignored tokens: white space, commas, BOMs (U+FEFF) and
 * comments (to the end of the line, valid UTF-8). 0, or SL_EPARSE (syntax). */
static int skip_ignored(sl__gql_lexer *p, size_t *i) {
    for (;;) {
        int c = at(p, *i);
        if (c < 0) return 0;
        if (cls[c] & C_IGNORED) {
            (*i)++;
        } else if (c == 0xEF && at(p, *i + 1) == 0xBB && at(p, *i + 2) == 0xBF) {
            *i += 3;
        } else if (c == '#') {
            (*i)++;
            while (at(p, *i) >= 0 && at(p, *i) != '\n' && at(p, *i) != '\r')
                if (skip_utf8(p, i, "Invalid UTF-8 in comment.") < 0) return SL_EPARSE;
        } else {
            return 0;
        }
    }
}

/* The punctuators of one byte ("..." is read apart); 0 (SL__GQL_T_EOF): none. */
static const uint8_t punct[256] = {
    ['!'] = SL__GQL_T_BANG,      ['$'] = SL__GQL_T_DOLLAR,  ['&'] = SL__GQL_T_AMP,
    ['('] = SL__GQL_T_PAREN_L,   [')'] = SL__GQL_T_PAREN_R, [':'] = SL__GQL_T_COLON,
    ['='] = SL__GQL_T_EQUALS,    ['@'] = SL__GQL_T_AT,      ['['] = SL__GQL_T_BRACKET_L,
    [']'] = SL__GQL_T_BRACKET_R, ['{'] = SL__GQL_T_BRACE_L, ['|'] = SL__GQL_T_PIPE,
    ['}'] = SL__GQL_T_BRACE_R,
};

/* A byte that starts no token, at i. Returns SL_EPARSE. */
static int unexpected_char(sl__gql_lexer *p, size_t i, int c) {
    if (c == '.') return sl__gql_syntax(p, i, "Unexpected character \".\".");
    if (c >= 0x20 && c < 0x7F) {
        char msg[40];
        snprintf(msg, sizeof msg, "Unexpected character \"%c\".", c);
        return sl__gql_syntax(p, i, msg);
    }
    return sl__gql_syntax(p, i, "Unexpected character.");
}

int sl__gql_lex_next(sl__gql_lexer *p) {
    size_t i = p->pos;
    if (skip_ignored(p, &i) < 0) return SL_EPARSE;
    int c = at(p, i);
    if (c < 0) return token(p, SL__GQL_T_EOF, p->len, p->len);
    if (punct[c]) return token(p, (sl__gql_tok)punct[c], i, i + 1);
    if (c == '.' && at(p, i + 1) == '.' && at(p, i + 2) == '.')
        return token(p, SL__GQL_T_SPREAD, i, i + 3);
    if (c == '"') return three_quotes(p, i) ? read_block_string(p, i) : read_string(p, i);
    if (is_digit(c) || c == '-') return read_number(p, i);
    if (is_name_start(c)) return read_name(p, i);
    return unexpected_char(p, i, c);
}
