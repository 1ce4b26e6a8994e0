/* http.h: the HTTP/1.1 side of sluiced: a bounded incremental request
 * parser (on libhttp-parser), and response writers, including the rate-limit
 * fields (IETF draft-10 RateLimit-Policy / RateLimit, X-RateLimit-*,
 * Retry-After). Pure: bytes in, bytes out; no sockets. */
#ifndef SLUICE_SERVER_HTTP_H
#define SLUICE_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/limit.h"
#include "util/buf.h"
#include "util/units.h"

#define SL__HTTP_MAX_HEADERS 64

typedef enum sl__http_method {
    SL__HTTP_OTHER = 0,
    SL__HTTP_GET,
    SL__HTTP_HEAD,
    SL__HTTP_POST
} sl__http_method;

typedef struct sl__http_field {
    const char *name, *value; /* NUL-terminated, inside the parser's arena */
    size_t name_len, value_len;
} sl__http_field;

/* One parsed request. Pointers live until the next sl__http_parser_next()
 * or sl__http_parser_free(). */
typedef struct sl__http_request {
    sl__http_method method;
    const char *method_name;
    const char *path; /* decoded? no: raw, without the query; NUL-terminated */
    size_t path_len;
    const char *query; /* after '?', raw; "" if none */
    size_t query_len;
    sl__http_field headers[SL__HTTP_MAX_HEADERS];
    size_t nheaders;
    const char *body;
    size_t body_len;
    bool keep_alive;
    int http_major, http_minor;
} sl__http_request;

typedef struct sl__http_parser sl__http_parser;

typedef enum sl__http_status {
    SL__HTTP_NEED_MORE = 0, /* all bytes consumed, request not complete */
    SL__HTTP_READY = 1,     /* a whole request is in sl__http_parser_request() */
    SL__HTTP_ERROR = 2      /* answer sl__http_parser_error_status() and close */
} sl__http_status;

/* Limits: request line + headers <= max_header (431 beyond), body <=
 * max_body (413 as soon as Content-Length or the chunks say so). */
sl__http_parser *sl__http_parser_new(size_t max_header, size_t max_body);
void sl__http_parser_free(sl__http_parser *p);

/* Feeds len bytes; *consumed says how many were used (the rest belong to the
 * next, pipelined request: feed them again after sl__http_parser_next()). */
sl__http_status sl__http_parser_feed(sl__http_parser *p, const char *data, size_t len,
                                     size_t *consumed);
const sl__http_request *sl__http_parser_request(const sl__http_parser *p);
/* After SL__HTTP_ERROR: the status to answer (400, 413, 431, 501, 505; 500
 * when memory ran out) and a short reason (static text). */
int sl__http_parser_error_status(const sl__http_parser *p, const char **message);
/* Forgets the current request, ready for the next one on the connection. */
void sl__http_parser_next(sl__http_parser *p);
/* True while a request has started but is not complete (for 408 on timeout). */
bool sl__http_parser_in_request(const sl__http_parser *p);
/* True once per request when the client sent "Expect: 100-continue" on an
 * HTTP/1.1 request with a body that has not started to arrive (and whose
 * announced length is within max_body): the caller may then write
 * sl__http_continue() so that the client sends the body without waiting. */
bool sl__http_parser_take_continue(sl__http_parser *p);

/* The fast path (http_fast.c) is tried first on each request, and takes
 * the common whole requests; these are for tests and the fuzz target,
 * which compare it with libhttp-parser alone on the same bytes. set_fast
 * (before a request's first byte) turns it off or on; took_fast says
 * whether the request READY came from it. */
void sl__http_parser_set_fast(sl__http_parser *p, bool on);
bool sl__http_parser_took_fast(const sl__http_parser *p);

/* Case-insensitive header lookup; NULL if absent. */
const sl__http_field *sl__http_header(const sl__http_request *r, const char *name);
/* Finds query parameter `name` and percent-decodes its value into buf (NUL-
 * terminated, at most size-1 bytes). Returns the decoded length, or -1 if
 * absent, -2 if malformed or too long. */
long sl__http_query_param(const char *query, size_t query_len, const char *name, char *buf,
                          size_t size);
/* Several parameters in one pass over the query: each one's len is what
 * sl__http_query_param would return for it (the first occurrence of its
 * name decides; names are matched after decoding, as there). */
typedef struct sl__http_param {
    const char *name;
    size_t name_len;
    char *buf;
    size_t size;
    long len; /* out */
} sl__http_param;
void sl__http_query_params(const char *query, size_t query_len, sl__http_param *ps, size_t n);

/* Response writers. sl__http_begin writes the status line and the fixed
 * headers (Date is not sent; Server: sluiced). Headers are appended with
 * sl__http_header_line (CR and LF in a name or value become spaces);
 * sl__http_end writes Content-Type/Content-Length, Connection: keep-alive or
 * Connection: close, the blank line and the body (last, so a HEAD answer can
 * drop it by shortening out->len). Content-Length is always written: do not
 * use them for 1xx, 204 or 304 answers. */
void sl__http_begin(sl__buf *out, int status);
void sl__http_header_line(sl__buf *out, const char *name, const char *value);
void sl__http_end(sl__buf *out, bool keep_alive, const char *content_type, const char *body,
                  size_t body_len);
/* sl__http_end with Content-Type: application/json. */
void sl__http_end_json(sl__buf *out, bool keep_alive, const char *body, size_t body_len);
const char *sl__http_reason(int status);
/* The interim "HTTP/1.1 100 Continue" response (see sl__http_parser_take_continue). */
void sl__http_continue(sl__buf *out);

/* What a policy looks like from the outside, for the rate-limit fields:
 * its name, and the quota, window and rate text the policy layer gives
 * (sl__policy_quota and the policy's rate_text), so that every endpoint
 * says the same of one policy. */
typedef struct sl__http_policy_view {
    const char *name;
    uint64_t q, w;    /* RateLimit-Policy's q and w (capped at 15 digits here) */
    const char *rate; /* sluice-rate ("5/s", "10000/month"); printable ASCII */
    /* plain: name and rate are name_len and rate_len bytes of 0x20-0x7e
       with no '"' or '\\' (sl__policy.text_plain), copied as they are;
       otherwise each is measured and escaped */
    size_t name_len, rate_len;
    bool plain;
} sl__http_policy_view;

/* Appends RateLimit-Policy, RateLimit, X-RateLimit-Limit, -Remaining, -Reset
 * and, when !d->allowed, Retry-After (whole seconds rounded up, at least 1).
 * Syntax and the meaning of each parameter: docs/http-api.md. */
void sl__http_ratelimit_fields(sl__buf *out, const sl__http_policy_view *p, const sl_decision *d);

/* The JSON body of a decision: {"allowed":..,"limit":..,"remaining":..,
 * "retry_after_ms":..,"reset_after_ms":..} (ms rounded up), plus
 * "policy":"name" and, when shadow, "shadow":true. */
void sl__http_decision_json(sl__buf *out, const char *policy, const sl_decision *d, bool shadowed);
/* The same written at b, which has room for SL__HTTP_DECISION_JSON_MAX(pl)
 * bytes (pl: the policy name's length); returns the bytes written. */
#define SL__HTTP_DECISION_JSON_MAX(pl) (120 + 5 * (SL__DECIMAL_MAX + 1) + 6 * (pl) + 2)
size_t sl__http_decision_json_at(char *b, const char *policy, size_t pl, const sl_decision *d,
                                 bool shadowed);

/* {"error":"code","message":"text"} with JSON escaping. */
void sl__http_error_json(sl__buf *out, const char *code, const char *message);
/* A whole answer with that body (application/json), saying keep-alive or
 * close as keep says. */
void sl__http_error_answer(sl__buf *out, int status, bool keep, const char *code,
                           const char *message);

/* Appends the n bytes at s (any bytes: NUL and invalid UTF-8 included) as a
 * JSON string: quotes, backslashes and control characters escaped (NUL as
 * \u0000), each byte that does not start valid UTF-8 as U+FFFD. The output
 * is valid JSON in UTF-8 whatever s holds. */
void sl__http_json_string(sl__buf *out, const void *s, size_t n);

/* ---- JSON request bodies (http_body.c) ---------------------------------------- */

typedef enum sl__json_scan {
    SL__JSON_OK = 0,
    SL__JSON_NUL,      /* a NUL byte in the body, raw or as \u0000 in a string */
    SL__JSON_TRAILING, /* bytes other than whitespace after the top-level value */
    SL__JSON_SYNTAX    /* not one JSON value (an unterminated string, a bad \u escape...) */
} sl__json_scan;

/* Looks at a JSON body (len bytes) before cJSON parses it, for what cJSON
 * does not say: a NUL (which would cut a cJSON string short), bytes after
 * the value, and the text of a number. When member is not NULL and the body
 * is an object, *text and *text_len get the raw text of the value of its
 * first member whose name, unescaped, is member (the member cJSON's
 * GetObjectItem finds), or NULL and 0; they point into body. Checks the
 * tokens, not the grammar: a body must also parse with cJSON. */
sl__json_scan sl__http_json_scan(const char *body, size_t len, const char *member,
                                 const char **text, size_t *text_len);

#endif
