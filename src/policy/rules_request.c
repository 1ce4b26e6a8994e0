/* rules_request.c: the parts of a request the rules read (rules.h): the
 * proxy's headers, the path normalized and its query, the API key (header,
 * bearer, query parameter) and the client behind trusted proxies. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/rules_internal.h"

#define MAX_FWD_LINES 16 /* forwarded header lines looked at */

const sl__req_header *sl__rules_header(const sl__req_header *h, size_t n, const char *name) {
    size_t len = strlen(name);
    if (len == 0) return NULL;
    for (size_t i = 0; i < n; i++)
        if (h[i].name_len == len && strncasecmp(h[i].name, name, len) == 0) return &h[i];
    return NULL;
}

/* Whether the header `found` (the first named `name`) has a second one. */
static bool repeated(const sl__req_header *h, size_t n, const char *name,
                     const sl__req_header *found) {
    return found && sl__rules_header(found + 1, n - (size_t)(found + 1 - h), name) != NULL;
}

void sl__rules_from_proxy(const sl__rules *r, const sl__req_header *h, size_t n, sl__request *req) {
    memset(req, 0, sizeof *req);
    req->headers = h;
    req->nheaders = n;
    const sl__req_header *m = sl__rules_header(h, n, r->method_header);
    const sl__req_header *u = sl__rules_header(h, n, r->uri_header);
    const sl__req_header *c = sl__rules_header(h, n, r->client_ip_header);
    if (m) req->method = m->value, req->method_len = m->value_len;
    if (u) req->uri = u->value, req->uri_len = u->value_len;
    if (c) req->client = c->value, req->client_len = c->value_len;
    /* Two of one: which one the proxy set is not knowable (nginx's
     * proxy_set_header replaces the client's own, so a proxy sends one). */
    req->repeated = (repeated(h, n, r->method_header, m) ? SL__REQ_METHOD : 0u) |
                    (repeated(h, n, r->uri_header, u) ? SL__REQ_URI : 0u) |
                    (repeated(h, n, r->client_ip_header, c) ? SL__REQ_CLIENT : 0u);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

long sl__rules_normalize_path(const char *uri, size_t n, char *out, size_t size, const char **query,
                              size_t *qlen) {
    *query = "";
    *qlen = 0;
    if (!uri || size < 2) return -1;
    size_t i = 0;
    /* absolute form: scheme "://" authority, then the path (or none) */
    if (n >= 7 &&
        (strncasecmp(uri, "http://", 7) == 0 || (n >= 8 && strncasecmp(uri, "https://", 8) == 0))) {
        i = uri[4] == ':' ? 7 : 8;
        while (i < n && uri[i] != '/' && uri[i] != '?' && uri[i] != '#') i++;
    } else if (n == 0 || uri[0] != '/') {
        return -1;
    }
    size_t end = i;
    while (end < n && uri[end] != '?' && uri[end] != '#') end++;
    if (end < n && uri[end] == '?') {
        size_t qe = end + 1;
        while (qe < n && uri[qe] != '#') qe++;
        *query = uri + end + 1;
        *qlen = qe - end - 1;
    }
    /* Decode into `out`, resolving each segment as it completes. out is "/"
     * followed by complete segments, each ending in "/"; the end of the
     * path acts as a last separator that adds no "/". */
    size_t o = 0;
    out[o++] = '/';
    size_t seg = o;
    for (size_t k = i; k <= end; k++) {
        int c;
        bool last = k == end;
        if (last) {
            c = '/';
        } else if (uri[k] == '%') {
            if (end - k < 3 || hexval(uri[k + 1]) < 0 || hexval(uri[k + 2]) < 0) return -1;
            c = hexval(uri[k + 1]) << 4 | hexval(uri[k + 2]);
            k += 2;
            if (c < 0x20 || c == 0x7f) return -1;
        } else {
            c = (unsigned char)uri[k];
            if (c <= 0x20 || c == 0x7f) return -1;
        }
        if (c != '/') {
            if (o + 2 >= size) return -1;
            out[o++] = (char)c;
            continue;
        }
        size_t len = o - seg;
        if (len == 0) {
            /* "//" is "/" */
        } else if (len == 1 && out[seg] == '.') {
            o = seg;
        } else if (len == 2 && out[seg] == '.' && out[seg + 1] == '.') {
            o = seg > 1 ? seg - 1 : 1; /* back over the previous segment, never above "/" */
            while (o > 1 && out[o - 1] != '/') o--;
        } else if (!last) {
            out[o++] = '/';
        }
        seg = o;
    }
    out[o] = '\0';
    return (long)o;
}

const char *sl__rules_bearer(const char *v, size_t n, size_t *len) {
    if (n < 8 || strncasecmp(v, "bearer ", 7) != 0) return NULL;
    size_t i = 7;
    while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
    size_t e = n;
    while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (e == i) return NULL;
    for (size_t k = i; k < e; k++)
        if (v[k] == ' ' || v[k] == '\t') return NULL;
    *len = e - i;
    return v + i;
}

/* A query parameter, percent-decoded ('+' is a space) into buf. Returns the
 * length, -1 when absent, -2 when malformed or longer than size - 1. */
static long query_param(const char *q, size_t qn, const char *name, char *buf, size_t size) {
    size_t nl = strlen(name);
    const char *s = q, *end = q + qn;
    while (s < end) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        if (!amp) amp = end;
        const char *eq = memchr(s, '=', (size_t)(amp - s));
        const char *ne = eq ? eq : amp;
        if ((size_t)(ne - s) == nl && memcmp(s, name, nl) == 0) {
            size_t o = 0;
            for (const char *v = eq ? eq + 1 : amp; v < amp; v++) {
                int c = (unsigned char)*v;
                if (c == '+') {
                    c = ' ';
                } else if (c == '%') {
                    if (amp - v < 3 || hexval(v[1]) < 0 || hexval(v[2]) < 0) return -2;
                    c = hexval(v[1]) << 4 | hexval(v[2]);
                    v += 2;
                }
                if (o + 1 >= size) return -2;
                buf[o++] = (char)c;
            }
            buf[o] = '\0';
            return (long)o;
        }
        s = amp + 1;
    }
    return -1;
}

bool sl__rules_find_client(const sl__rules *r, const sl__request *req, sl__rules_answer *a) {
    sl__addr peer;
    if (req->repeated & SL__REQ_CLIENT) {
        sl__rules_verdict(
            a, SL__VERDICT_BAD_REQUEST, "bad_client_address",
            "the client address header (X-Real-IP) came more than once: the proxy must set "
            "it, replacing the client's own");
        return false;
    }
    if (req->client) {
        if (sl__addr_parse_node(req->client, req->client_len, &peer) != 0) {
            sl__rules_verdict(a, SL__VERDICT_BAD_REQUEST, "bad_client_address",
                              "the client address header is not an IP address");
            return false;
        }
    } else if (req->peer) {
        peer = *req->peer;
    } else {
        return true; /* unknown: only limits by ip need it */
    }
    const char *vals[MAX_FWD_LINES];
    size_t lens[MAX_FWD_LINES], nv = 0;
    if (r->ntrusted) {
        const char *name = r->forwarded == SL__FWD_FORWARDED ? "Forwarded" : "X-Forwarded-For";
        size_t nl = strlen(name);
        for (size_t i = 0; i < req->nheaders; i++) {
            const sl__req_header *h = &req->headers[i];
            if (h->name_len != nl || strncasecmp(h->name, name, nl) != 0) continue;
            if (nv == MAX_FWD_LINES) { /* keep the rightmost lines */
                memmove(vals, vals + 1, (MAX_FWD_LINES - 1) * sizeof *vals);
                memmove(lens, lens + 1, (MAX_FWD_LINES - 1) * sizeof *lens);
                nv--;
            }
            vals[nv] = h->value;
            lens[nv++] = h->value_len;
        }
    }
    sl__fwd_result fr;
    sl__forwarded_client(r->forwarded, &peer, r->trusted, r->ntrusted, vals, lens, nv, &fr);
    a->client = fr.client;
    a->have_client = true;
    return true;
}

const char *sl__rules_find_key(const sl__rules *r, const sl__request *req, const char *query,
                               size_t qlen, char *buf, size_t size, size_t *len) {
    if (r->key_header[0]) {
        const sl__req_header *h = sl__rules_header(req->headers, req->nheaders, r->key_header);
        if (h && h->value_len) return *len = h->value_len, h->value;
    }
    if (r->key_bearer) {
        const sl__req_header *h = sl__rules_header(req->headers, req->nheaders, "Authorization");
        const char *k = h ? sl__rules_bearer(h->value, h->value_len, len) : NULL;
        if (k) return k;
    }
    if (r->key_query[0]) {
        long n = query_param(query, qlen, r->key_query, buf, size);
        if (n > 0) return *len = (size_t)n, buf;
        if (n == -2) return *len = size, buf; /* too long: unknown */
    }
    return NULL;
}
