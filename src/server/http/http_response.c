/* http_response.c: the response side of sluiced's HTTP/1.1 (see http.h):
 * status line and headers, the rate-limit fields (IETF
 * draft-ietf-httpapi-ratelimit-headers-10 RateLimit-Policy and RateLimit,
 * the X-RateLimit-* triplet, Retry-After) and the JSON bodies.
 *
 * Everything is appended to an sl__buf with fixed strings and integer
 * formatting only (no printf, no allocation beyond the buffer's growth): this
 * runs once per answered request.
 *
 * Roundings (the exact meaning of every field is in docs/http-api.md):
 * - seconds in headers are rounded up (a client waiting that long is never
 *   early), Retry-After is at least 1;
 * - milliseconds in JSON are rounded up too;
 * - Structured Field integers are capped at 999,999,999,999,999 (RFC 9651
 *   3.3.1 allows at most 15 digits). */
#include <http_parser.h>
#include <string.h>

#include "server/http/http.h"
#include "util/units.h"

#define SF_INT_MAX INT64_C(999999999999999)

/* ---- writing ------------------------------------------------------------------ */

/* The writers reserve an upper bound of what they write once, then fill it
 * with these (no per-piece bounds checks, no printf). */
static char *w_mem(char *p, const char *s, size_t n) {
    memcpy(p, s, n);
    return p + n;
}
#define W_LIT(p, lit)  w_mem((p), (lit), sizeof(lit) - 1)
#define U64_MAX_DIGITS SL__DECIMAL_MAX

static char *w_u64(char *p, uint64_t v) {
    return p + sl__decimal_u64(p, v);
}

static char *w_i64(char *p, int64_t v) {
    return p + sl__decimal_i64(p, v);
}

/* ---- status line and framing ------------------------------------------------ */

const char *sl__http_reason(int status) {
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 413:
        return "Content Too Large"; /* RFC 9110 15.5.14 (was Payload Too Large) */
    case 415:
        return "Unsupported Media Type";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default: {
        const char *s = http_status_str((enum http_status)status);
        return strcmp(s, "<unknown>") == 0 ? "Unknown" : s;
    }
    }
}

void sl__http_begin(sl__buf *out, int status) {
    /* the status lines of decisions, whole */
    static const char ok[] = "HTTP/1.1 200 OK\r\nServer: sluiced\r\n",
                      limited[] = "HTTP/1.1 429 Too Many Requests\r\nServer: sluiced\r\n";
    if (status == 200) {
        sl__buf_append(out, ok, sizeof ok - 1);
        return;
    }
    if (status == 429) {
        sl__buf_append(out, limited, sizeof limited - 1);
        return;
    }
    if (status < 100 || status > 599) status = 500;
    const char *reason = sl__http_reason(status);
    size_t rl = strlen(reason);
    char *p = sl__buf_reserve(out, 13 + rl + 19);
    if (!p) return;
    char *s = W_LIT(p, "HTTP/1.1 ");
    *s++ = (char)('0' + status / 100);
    *s++ = (char)('0' + status / 10 % 10);
    *s++ = (char)('0' + status % 10);
    *s++ = ' ';
    s = w_mem(s, reason, rl);
    s = W_LIT(s, "\r\nServer: sluiced\r\n");
    sl__buf_commit(out, (size_t)(s - p));
}

void sl__http_continue(sl__buf *out) {
    static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";
    sl__buf_append(out, line, sizeof line - 1);
}

/* Writes s (length n), replacing CR and LF (which would end or split the
 * field line) with spaces: a header line can never be injected through a
 * name or a value. */
static char *w_field_text(char *p, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (char)(s[i] == '\r' || s[i] == '\n' ? ' ' : s[i]);
    return p + n;
}

void sl__http_header_line(sl__buf *out, const char *name, const char *value) {
    size_t nl = strlen(name), vl = strlen(value);
    char *p = sl__buf_reserve(out, nl + vl + 4);
    if (!p) return;
    char *s = w_field_text(p, name, nl);
    s = W_LIT(s, ": ");
    s = w_field_text(s, value, vl);
    s = W_LIT(s, "\r\n");
    sl__buf_commit(out, (size_t)(s - p));
}

/* Content-Type (ct: NULL for none; ct_plain: written as it is, a literal of
 * ours), Content-Length, Connection, the blank line and the body. */
static void end_answer(sl__buf *out, bool keep_alive, const char *ct, size_t cl, bool ct_plain,
                       const char *body, size_t body_len) {
    char *p = sl__buf_reserve(out, 16 + cl + 2 + 16 + U64_MAX_DIGITS + 30 + body_len);
    if (!p) return;
    char *s = p;
    if (ct) {
        s = W_LIT(s, "Content-Type: ");
        s = ct_plain ? w_mem(s, ct, cl) : w_field_text(s, ct, cl);
        s = W_LIT(s, "\r\n");
    }
    s = W_LIT(s, "Content-Length: ");
    s = w_u64(s, body_len);
    /* keep-alive is said explicitly, as nginx does: HTTP/1.0 clients that
     * asked for it need to see it. */
    if (keep_alive)
        s = W_LIT(s, "\r\nConnection: keep-alive\r\n\r\n");
    else
        s = W_LIT(s, "\r\nConnection: close\r\n\r\n");
    if (body_len) s = w_mem(s, body, body_len);
    sl__buf_commit(out, (size_t)(s - p));
}

void sl__http_end(sl__buf *out, bool keep_alive, const char *content_type, const char *body,
                  size_t body_len) {
    end_answer(out, keep_alive, content_type, content_type ? strlen(content_type) : 0, false, body,
               body_len);
}

void sl__http_end_json(sl__buf *out, bool keep_alive, const char *body, size_t body_len) {
    static const char json[] = "application/json";
    end_answer(out, keep_alive, json, sizeof json - 1, true, body, body_len);
}

/* ---- rate-limit fields ------------------------------------------------------ */

static uint64_t sf_int(int64_t v) {
    return v < 0 ? 0 : v > SF_INT_MAX ? (uint64_t)SF_INT_MAX : (uint64_t)v;
}

/* An sf-string (RFC 9651 3.3.3): printable ASCII, with '"' and '\' escaped;
 * anything else (not possible for policy names, which the config restricts
 * to [a-z0-9_.-]) becomes '?'. Writes at most 2 * n + 2 bytes. */
static char *w_sf_string(char *p, const char *s, size_t n) {
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') *p++ = '\\';
        *p++ = (char)(c >= 0x20 && c < 0x7f ? c : '?');
    }
    *p++ = '"';
    return p;
}

/* An sf-string of text known to need no escape (sl__http_policy_view.plain),
 * else w_sf_string. */
static char *w_sf_text(char *p, const char *s, size_t n, bool plain) {
    if (!plain) return w_sf_string(p, s, n);
    *p++ = '"';
    p = w_mem(p, s, n);
    *p++ = '"';
    return p;
}

void sl__http_ratelimit_fields(sl__buf *out, const sl__http_policy_view *p, const sl_decision *d) {
    uint64_t q = p->q > (uint64_t)SF_INT_MAX ? (uint64_t)SF_INT_MAX : p->q;
    uint64_t w = p->w > (uint64_t)SF_INT_MAX ? (uint64_t)SF_INT_MAX : p->w;
    const char *name = p->name ? p->name : "", *rate = p->rate ? p->rate : "";
    bool plain = p->plain && p->name && p->rate;
    size_t nl = plain ? p->name_len : strlen(name), rl = plain ? p->rate_len : strlen(rate);

    int64_t reset_s = sl__ceil_s(d->reset_after);
    bool retry = !d->allowed && d->retry_after >= 0;
    int64_t retry_s = sl__ceil_s(d->retry_after);
    if (retry_s < 1) retry_s = 1;
    /* t: when limited, the Retry-After value (draft-10: Retry-After SHOULD
     * NOT be earlier than the reset); when allowed, the reset. */
    int64_t t = retry ? retry_s : reset_s;

    /* literals (< 200 bytes), two names, the rate, ten numbers */
    char *b = sl__buf_reserve(out, 200 + 2 * (2 * nl + 2) + 2 * rl + 2 + 10 * U64_MAX_DIGITS);
    if (!b) return;
    char *s = W_LIT(b, "RateLimit-Policy: ");
    s = w_sf_text(s, name, nl, plain);
    s = W_LIT(s, ";q=");
    s = w_u64(s, q);
    s = W_LIT(s, ";w=");
    s = w_u64(s, w);
    s = W_LIT(s, ";sluice-rate=");
    s = w_sf_text(s, rate, rl, plain);
    s = W_LIT(s, "\r\nRateLimit: ");
    s = w_sf_text(s, name, nl, plain);
    s = W_LIT(s, ";r=");
    s = w_u64(s, sf_int(d->remaining));
    s = W_LIT(s, ";t=");
    s = w_u64(s, sf_int(t));
    s = W_LIT(s, "\r\nX-RateLimit-Limit: ");
    s = w_u64(s, (uint64_t)(d->limit > 0 ? d->limit : 0));
    s = W_LIT(s, "\r\nX-RateLimit-Remaining: ");
    s = w_u64(s, (uint64_t)(d->remaining > 0 ? d->remaining : 0));
    s = W_LIT(s, "\r\nX-RateLimit-Reset: ");
    s = w_u64(s, (uint64_t)reset_s);
    if (retry) {
        s = W_LIT(s, "\r\nRetry-After: ");
        s = w_u64(s, (uint64_t)retry_s);
    }
    s = W_LIT(s, "\r\n");
    sl__buf_commit(out, (size_t)(s - b));
}

/* ---- JSON ------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n > 0 bytes available; RFC
 * 3629: no overlongs, no surrogates, at most U+10FFFF), or 0 if there is
 * none (a sequence cut short by the end of the string is none). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

/* A JSON string (RFC 8259 7) of the len bytes at str: '"' and '\' escaped,
 * control characters (NUL included) as \n, \r, \t, \b, \f or \u00XX, DEL
 * as \u007f; each byte that does not start a valid UTF-8 sequence becomes
 * U+FFFD, so the output is always valid JSON in UTF-8 whatever the input.
 * Writes at most JSON_STRING_MAX(n) bytes. */
#define JSON_STRING_MAX(n) (6 * (n) + 2)
static char *w_json_string(char *p, const char *str, size_t len) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str, *end = s + len;
    *p++ = '"';
    while (s < end) {
        unsigned char c = *s;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x7f) {
            *p++ = (char)c;
            s++;
            continue;
        }
        size_t n = c >= 0x80 ? utf8_len(s, (size_t)(end - s)) : 0;
        if (n) {
            p = w_mem(p, (const char *)s, n);
            s += n;
            continue;
        }
        s++;
        switch (c) {
        case '"':
            p = W_LIT(p, "\\\"");
            break;
        case '\\':
            p = W_LIT(p, "\\\\");
            break;
        case '\n':
            p = W_LIT(p, "\\n");
            break;
        case '\r':
            p = W_LIT(p, "\\r");
            break;
        case '\t':
            p = W_LIT(p, "\\t");
            break;
        case '\b':
            p = W_LIT(p, "\\b");
            break;
        case '\f':
            p = W_LIT(p, "\\f");
            break;
        default:
            if (c < 0x80) {
                p = W_LIT(p, "\\u00");
                *p++ = hex[c >> 4];
                *p++ = hex[c & 15];
            } else {
                p = W_LIT(p, "\\ufffd");
            }
        }
    }
    *p++ = '"';
    return p;
}

void sl__http_json_string(sl__buf *out, const void *s, size_t n) {
    char *b = sl__buf_reserve(out, JSON_STRING_MAX(n));
    if (!b) return;
    sl__buf_commit(out, (size_t)(w_json_string(b, s, n) - b));
}

static int64_t ms_up(int64_t ns) {
    return ns < 0 ? -1 : sl__ceil_ms(ns);
}

size_t sl__http_decision_json_at(char *b, const char *policy, size_t pl, const sl_decision *d,
                                 bool shadowed) {
    char *s = d->allowed ? W_LIT(b, "{\"allowed\":true,\"limit\":")
                         : W_LIT(b, "{\"allowed\":false,\"limit\":");
    s = w_i64(s, d->limit);
    s = W_LIT(s, ",\"remaining\":");
    s = w_i64(s, d->remaining);
    s = W_LIT(s, ",\"retry_after_ms\":");
    s = w_i64(s, ms_up(d->retry_after));
    s = W_LIT(s, ",\"reset_after_ms\":");
    s = w_i64(s, ms_up(d->reset_after));
    if (d->delay > 0) {
        s = W_LIT(s, ",\"delay_ms\":");
        s = w_i64(s, ms_up(d->delay));
    }
    s = W_LIT(s, ",\"policy\":");
    s = w_json_string(s, policy, pl);
    if (shadowed) s = W_LIT(s, ",\"shadow\":true");
    *s++ = '}';
    return (size_t)(s - b);
}

void sl__http_decision_json(sl__buf *out, const char *policy, const sl_decision *d, bool shadowed) {
    if (!policy) policy = "";
    size_t pl = strlen(policy);
    char *b = sl__buf_reserve(out, SL__HTTP_DECISION_JSON_MAX(pl));
    if (!b) return;
    sl__buf_commit(out, sl__http_decision_json_at(b, policy, pl, d, shadowed));
}

void sl__http_error_json(sl__buf *out, const char *code, const char *message) {
    if (!code) code = "error";
    if (!message) message = "";
    size_t cl = strlen(code), ml = strlen(message);
    char *b = sl__buf_reserve(out, 24 + JSON_STRING_MAX(cl) + JSON_STRING_MAX(ml));
    if (!b) return;
    char *s = W_LIT(b, "{\"error\":");
    s = w_json_string(s, code, cl);
    s = W_LIT(s, ",\"message\":");
    s = w_json_string(s, message, ml);
    *s++ = '}';
    sl__buf_commit(out, (size_t)(s - b));
}

void sl__http_error_answer(sl__buf *out, int status, bool keep, const char *code,
                           const char *message) {
    sl__buf body;
    sl__buf_init(&body);
    sl__http_error_json(&body, code, message);
    sl__http_begin(out, status);
    sl__http_end(out, keep, "application/json", body.data, body.len);
    sl__buf_free(&body);
}
