/* http_fast.c: the request parser's fast path (see http_fast.h): the
 * request almost every client sends, whole in one read, recognised in one
 * pass over its bytes with a byte-class table, where libhttp-parser would
 * make a state-machine step and a callback per part.
 *
 * It only ever accepts: a request it takes is one that libhttp-parser
 * (2.9, built non-strict) accepts too, with the same method, target,
 * fields, body, version and keep-alive; everything else it declines, and
 * the slow path then gives the answer it always gave (400, 413, 431, 501,
 * 505 or a request). So each rule below is narrower than libhttp-parser's:
 * - the method is GET, POST or HEAD, followed by exactly one space;
 * - the target is origin-form: '/' then 0x21-0x7e except '#' (no fragment,
 *   no byte libhttp-parser would take only when not strict);
 * - the version is exactly "HTTP/1.1", every line ends in CRLF (no bare LF);
 * - a field name is one or more tchar (RFC 9110 5.6.2) right before ':';
 *   its value is SP, HTAB and 0x21-0x7e (no obs-text, no control
 *   character); a line starting with SP or HTAB (obs-fold) declines;
 * - Transfer-Encoding (and any name it starts), Upgrade, Expect and
 *   Proxy-Connection decline (each changes framing or what the caller must
 *   do); Connection must be exactly
 *   "close" or "keep-alive" (any case), Content-Length 1 to 9 digits and
 *   only one of it;
 * - at most SL__HTTP_MAX_HEADERS fields, the head within max_header and
 *   FAST_MAX_HEAD bytes, the body within max_body and already read.
 * Every loop stops at the end of the bytes given (or before). */
#include <http_parser.h>
#include <string.h>

#include "server/http/http.h"
#include "server/http/http_fast.h"

/* Heads larger than this are rare and left to libhttp-parser (its own
 * bound, 80 KiB, is then its to apply). */
#define FAST_MAX_HEAD 8192
/* Content-Length below 10^9: no overflow; longer ones decline. */
#define FAST_MAX_LENGTH_DIGITS 9

enum { C_URL = 1, C_TOKEN = 2, C_VALUE = 4 };
#define C_ALL (C_URL | C_TOKEN | C_VALUE)
#define C_UV  (C_URL | C_VALUE)

/* Every byte's classes: in an origin-form target, in a field name (tchar),
 * in a field value. Not listed: none. */
static const unsigned char byte_class[256] = {
    ['\t'] = C_VALUE,
    [' '] = C_VALUE,
    ['!'] = C_ALL,
    ['"'] = C_UV,
    ['#'] = C_TOKEN | C_VALUE,
    ['$' ... '\''] = C_ALL,
    ['(' ... ')'] = C_UV,
    ['*' ... '+'] = C_ALL,
    [','] = C_UV,
    ['-' ... '.'] = C_ALL,
    ['/'] = C_UV,
    ['0' ... '9'] = C_ALL,
    [':' ... '@'] = C_UV,
    ['A' ... 'Z'] = C_ALL,
    ['[' ... ']'] = C_UV,
    ['^' ... '`'] = C_ALL,
    ['a' ... 'z'] = C_ALL,
    ['{'] = C_UV,
    ['|'] = C_ALL,
    ['}'] = C_UV,
    ['~'] = C_ALL,
};

static size_t skip_class(const char *d, size_t i, size_t end, unsigned char cls) {
    while (i < end && (byte_class[(unsigned char)d[i]] & cls)) i++;
    return i;
}

static bool crlf_at(const char *d, size_t i, size_t end) {
    return end - i >= 2 && d[i] == '\r' && d[i + 1] == '\n';
}

/* s (n bytes of tchar or of a value) equals lower, which is lower-case
 * letters and '-', in any case: only 'A'-'Z' | 0x20 gives a lower-case
 * letter, and only '-' itself gives '-' among those bytes. */
static bool caseeq_lower(const char *s, const char *lower, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] | 0x20) != (unsigned char)lower[i]) return false;
    return true;
}

/* The method and its space: their length, or 0. */
static size_t scan_method(const char *d, size_t end, int *method) {
    if (end >= 4 && memcmp(d, "GET ", 4) == 0) {
        *method = HTTP_GET;
        return 4;
    }
    if (end >= 5 && memcmp(d, "POST ", 5) == 0) {
        *method = HTTP_POST;
        return 5;
    }
    if (end >= 5 && memcmp(d, "HEAD ", 5) == 0) {
        *method = HTTP_HEAD;
        return 5;
    }
    return 0;
}

/* "METHOD SP /target SP HTTP/1.1 CRLF": the offset after it, or 0. */
static size_t scan_request_line(const char *d, size_t end, sl__http_fast_request *out) {
    static const char version[] = " HTTP/1.1\r\n";
    size_t i = scan_method(d, end, &out->method);
    if (!i || i == end || d[i] != '/') return 0;
    size_t start = i;
    i = skip_class(d, i, end, C_URL);
    if (end - i < sizeof version - 1 || memcmp(d + i, version, sizeof version - 1) != 0) return 0;
    out->url = (sl__http_span){start, i - start};
    return i + sizeof version - 1;
}

/* One "name: value CRLF" at i: the offset after it, or 0. */
static size_t scan_field(const char *d, size_t i, size_t end, sl__http_span *name,
                         sl__http_span *value) {
    size_t start = i;
    i = skip_class(d, i, end, C_TOKEN);
    if (i == start || i == end || d[i] != ':') return 0;
    *name = (sl__http_span){start, i - start};
    i++;
    while (i < end && (d[i] == ' ' || d[i] == '\t')) i++;
    start = i;
    i = skip_class(d, i, end, C_VALUE);
    if (!crlf_at(d, i, end)) return 0;
    *value = (sl__http_span){start, i - start};
    return i + 2;
}

typedef enum field_kind { FIELD_PLAIN, FIELD_LENGTH, FIELD_CONNECTION, FIELD_DECLINE } field_kind;

/* The fields libhttp-parser reads for itself (and Expect, which is ours).
 * Debian's 2.9.4 takes every name that starts with "Transfer-Encoding"
 * ("Transfer-Encodings", "Transfer-Encoding-X") for that field; the other
 * names only when they are the whole name. */
static field_kind kind_of(const char *name, size_t len) {
    if (len >= 17 && caseeq_lower(name, "transfer-encoding", 17)) return FIELD_DECLINE;
    switch (len) {
    case 6:
        return caseeq_lower(name, "expect", 6) ? FIELD_DECLINE : FIELD_PLAIN;
    case 7:
        return caseeq_lower(name, "upgrade", 7) ? FIELD_DECLINE : FIELD_PLAIN;
    case 10:
        return caseeq_lower(name, "connection", 10) ? FIELD_CONNECTION : FIELD_PLAIN;
    case 14:
        return caseeq_lower(name, "content-length", 14) ? FIELD_LENGTH : FIELD_PLAIN;
    case 16:
        return caseeq_lower(name, "proxy-connection", 16) ? FIELD_DECLINE : FIELD_PLAIN;
    default:
        return FIELD_PLAIN;
    }
}

static bool parse_length(const char *v, size_t n, size_t *length) {
    if (n == 0 || n > FAST_MAX_LENGTH_DIGITS) return false;
    size_t x = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned digit = (unsigned)((unsigned char)v[i] - '0');
        if (digit > 9) return false;
        x = x * 10 + digit;
    }
    *length = x;
    return true;
}

static bool parse_connection(const char *v, size_t n, bool *close) {
    if (n == 5 && caseeq_lower(v, "close", 5)) {
        *close = true;
        return true;
    }
    return n == 10 && caseeq_lower(v, "keep-alive", 10);
}

/* What the field at names/values[nheaders] means for framing and
 * keep-alive: false to decline. */
static bool take_field(const char *d, sl__http_fast_request *out, bool *has_length) {
    const sl__http_span *name = &out->names[out->nheaders], *value = &out->values[out->nheaders];
    const char *v = d + value->off;
    switch (kind_of(d + name->off, name->len)) {
    case FIELD_PLAIN:
        return true;
    case FIELD_LENGTH:
        if (*has_length) return false;
        *has_length = true;
        return parse_length(v, value->len, &out->body_len);
    case FIELD_CONNECTION:
        return parse_connection(v, value->len, &out->close);
    default:
        return false;
    }
}

bool sl__http_fast_scan(const char *data, size_t len, size_t max_header, size_t max_body,
                        sl__http_fast_request *out) {
    size_t end = len < max_header ? len : max_header;
    if (end > FAST_MAX_HEAD) end = FAST_MAX_HEAD;
    size_t i = scan_request_line(data, end, out);
    if (!i) return false;
    out->nheaders = 0;
    out->body_len = 0;
    out->close = false;
    bool has_length = false;
    while (!crlf_at(data, i, end)) {
        if (out->nheaders == SL__HTTP_MAX_HEADERS) return false;
        i = scan_field(data, i, end, &out->names[out->nheaders], &out->values[out->nheaders]);
        if (!i || !take_field(data, out, &has_length)) return false;
        out->nheaders++;
    }
    out->head_len = i + 2;
    return out->body_len <= max_body && out->body_len <= len - out->head_len;
}
