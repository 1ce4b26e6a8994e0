/* http_request.c: the bounded, incremental HTTP/1.x request parser of
 * sluiced (see http.h), on libhttp-parser 2.9, with a fast path.
 *
 * Fast path (http_fast.c): at the first byte of a request, a read that
 * starts with a whole request of the common shape (GET/POST/HEAD, origin
 * form, HTTP/1.1, plain fields, a Content-Length body within the limits)
 * is scanned once, copied to the arena in one memcpy and turned into the
 * same sl__http_request the callbacks below would build from those bytes
 * (take_fast; build_request is shared). It only accepts: anything else
 * (a partial request, another method or version, chunked, Expect,
 * Upgrade, a limit reached, any byte it is not sure of) goes to
 * libhttp-parser with nothing changed, so every error status stays its.
 * sl__http_parser_set_fast turns it off, for tests that compare the two.
 *
 * Slow path: bytes go through http_parser_execute() untouched (no per-byte work of our
 * own); its callbacks copy the URL, header names and values and the body
 * into one arena owned by the parser and reused from request to request, so
 * a connection allocates nothing per request once its arena has grown to
 * the size of its requests. Fragments of one item (a header split across
 * reads) land next to each other in the arena, so concatenating them is
 * free. Items are recorded as offsets while the arena may still move, and
 * turned into pointers once the request is complete.
 *
 * Pipelining: on_message_complete pauses the parser, so http_parser_execute
 * returns right after the last byte of the request and *consumed says
 * exactly where the next request starts (the fast path consumes its
 * request's head and body, exactly).
 *
 * Bounds (the fast path keeps within them or declines), each checked
 * before the bytes it protects are stored:
 * - request line + header section <= max_header bytes (431): the bytes
 *   handed to http_parser while the header section is incomplete are capped
 *   at what is left of max_header, so the limit is exact to the byte
 *   (libhttp-parser's own 80 KiB limit, HTTP_MAX_HEADER_SIZE, also applies);
 * - at most SL__HTTP_MAX_HEADERS header fields (431);
 * - body <= max_body (413): decided from Content-Length when the header
 *   section ends, before any of the body is read, and from each chunk size
 *   before the chunk is read;
 * - chunked framing (chunk-size lines, extensions, trailers) is bounded too:
 *   trailers count against max_header (431), and a whole request never
 *   spans more than max_header + 2 * max_body + 16 KiB bytes (413).
 *
 * Where libhttp-parser (built non-strict, as Debian ships it) is lenient in
 * ways that matter, the callbacks check: whitespace in a header name (400,
 * RFC 9112 5.1) and a control character as the first byte of a value (the
 * one byte it does not check; a NUL there would break the C strings). */
#include <http_parser.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http.h"
#include "server/http/http_fast.h"

#define ARENA_INITIAL 2048
/* An arena grown beyond this for one large request is released after it, so
 * idle keep-alive connections do not pin large buffers. */
#define ARENA_KEEP    (64 * 1024)
#define FRAMING_SLACK (16 * 1024)

enum { ITEM_NONE, ITEM_URL, ITEM_FIELD, ITEM_VALUE };

typedef sl__http_span span;

struct sl__http_parser {
    http_parser hp;
    size_t max_header, max_body, max_total, max_arena;

    char *arena;
    size_t alen, acap;

    span url, body;
    span names[SL__HTTP_MAX_HEADERS], values[SL__HTTP_MAX_HEADERS];
    size_t nheaders;
    int item; /* the item the latest data callback appended to */

    size_t header_bytes;  /* bytes fed while the header section was incomplete */
    size_t total_bytes;   /* bytes of this request so far */
    size_t trailer_bytes; /* chunked trailers (counted, not stored) */
    bool headers_done, started, continue_pending;
    bool fast_on;    /* try the fast path (http_fast.c) first: on but in tests */
    bool fast_taken; /* the request READY came from the fast path */

    sl__http_status status;
    int err_status;
    const char *err_msg;

    sl__http_request req;
};

static size_t add_sat(size_t a, size_t b) {
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Records the first error; callbacks return its result (nonzero) to stop
 * http_parser. */
static int fail(sl__http_parser *p, int status, const char *msg) {
    if (!p->err_status) {
        p->err_status = status;
        p->err_msg = msg;
    }
    p->status = SL__HTTP_ERROR;
    return -1;
}

/* Room for n more bytes in the arena (n within its bound): false when
 * memory ran out, nothing else changed. */
static bool arena_grow(sl__http_parser *p, size_t n) {
    if (p->acap - p->alen >= n) return true;
    size_t cap = p->acap ? p->acap : ARENA_INITIAL;
    while (cap - p->alen < n) cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
    if (cap > p->max_arena) cap = p->max_arena;
    char *a = realloc(p->arena, cap);
    if (!a) return false;
    p->arena = a;
    p->acap = cap;
    return true;
}

static bool arena_reserve(sl__http_parser *p, size_t n) {
    if (p->acap - p->alen >= n) return true;
    if (n > p->max_arena - p->alen)
        return fail(p, 500, "request bookkeeping exceeded its bound"), false;
    if (!arena_grow(p, n)) return fail(p, 500, "out of memory"), false;
    return true;
}

static int append(sl__http_parser *p, const char *at, size_t len) {
    if (!arena_reserve(p, len)) return -1;
    memcpy(p->arena + p->alen, at, len);
    p->alen += len;
    return 0;
}

/* Terminates the item being built (URL, name or value) with a NUL. */
static int close_item(sl__http_parser *p) {
    if (p->item == ITEM_NONE) return 0;
    p->item = ITEM_NONE;
    return append(p, "", 1);
}

static sl__http_parser *parser_of(http_parser *hp) {
    return hp->data;
}

/* ---- callbacks ------------------------------------------------------------ */

static int on_message_begin(http_parser *hp) {
    parser_of(hp)->started = true;
    return 0;
}

static int on_url(http_parser *hp, const char *at, size_t len) {
    sl__http_parser *p = parser_of(hp);
    if (p->item != ITEM_URL) {
        p->item = ITEM_URL;
        p->url.off = p->alen;
        p->url.len = 0;
    }
    p->url.len += len;
    return append(p, at, len);
}

/* Only HTTP/1.x is spoken here; the version is known once the request line
 * is parsed, i.e. by the first header field at the latest. */
static int check_version(sl__http_parser *p) {
    if (p->hp.http_major != 1) return fail(p, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
    return 0;
}

static int trailer_bytes(sl__http_parser *p, size_t len) {
    p->trailer_bytes = add_sat(p->trailer_bytes, len);
    if (p->trailer_bytes > p->max_header) return fail(p, 431, "trailer fields too large");
    return 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len) {
    sl__http_parser *p = parser_of(hp);
    if (p->headers_done) return trailer_bytes(p, len);
    /* libhttp-parser (not built strict) lets spaces into names; RFC 9112 5.1:
     * whitespace before the colon MUST be rejected with 400 (it is a classic
     * request-smuggling device: "Transfer-Encoding : chunked"). */
    if (memchr(at, ' ', len)) return fail(p, 400, "whitespace in a header field name");
    if (p->item != ITEM_FIELD) {
        if (p->item == ITEM_URL && check_version(p)) return -1;
        if (close_item(p)) return -1;
        if (p->nheaders == SL__HTTP_MAX_HEADERS) return fail(p, 431, "too many header fields");
        p->names[p->nheaders] = (span){p->alen, 0};
        p->values[p->nheaders] = (span){p->alen, 0}; /* until a value arrives */
        p->nheaders++;
        p->item = ITEM_FIELD;
    }
    p->names[p->nheaders - 1].len += len;
    return append(p, at, len);
}

static int on_header_value(http_parser *hp, const char *at, size_t len) {
    sl__http_parser *p = parser_of(hp);
    if (p->headers_done) return trailer_bytes(p, len);
    if (p->item != ITEM_VALUE) {
        if (close_item(p)) return -1;
        p->values[p->nheaders - 1] = (span){p->alen, 0};
        p->item = ITEM_VALUE;
    }
    /* libhttp-parser checks every byte of a value against the field-value
     * grammar except the first one: a NUL or another control character
     * there would pass (RFC 9110 5.5: reject them). */
    if (len && p->values[p->nheaders - 1].len == 0) {
        unsigned char c = (unsigned char)at[0];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(p, 400, "control character in a header field value");
    }
    p->values[p->nheaders - 1].len += len;
    return append(p, at, len);
}

static bool ascii_caseeq(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if ((unsigned)(x - 'A') < 26u) x |= 0x20;
        if ((unsigned)(y - 'A') < 26u) y |= 0x20;
        if (x != y) return false;
    }
    return true;
}

/* True if the stored header `name` has the value `value` (both compared
 * case-insensitively, surrounding whitespace ignored). */
static bool header_is(const sl__http_parser *p, const char *name, const char *value) {
    size_t nl = strlen(name), vl = strlen(value);
    for (size_t i = 0; i < p->nheaders; i++) {
        if (p->names[i].len != nl || !ascii_caseeq(p->arena + p->names[i].off, name, nl)) continue;
        const char *v = p->arena + p->values[i].off;
        size_t n = p->values[i].len;
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
        if (n == vl && ascii_caseeq(v, value, vl)) return true;
    }
    return false;
}

static int on_headers_complete(http_parser *hp) {
    sl__http_parser *p = parser_of(hp);
    if (close_item(p)) return -1;
    p->headers_done = true;
    if (check_version(p)) return -1;
    p->req.keep_alive = http_should_keep_alive(hp);
    bool chunked = hp->flags & F_CHUNKED;
    bool has_length = (hp->flags & F_CONTENTLENGTH) && !chunked;
    if (has_length && hp->content_length > p->max_body)
        return fail(p, 413, "request body too large");
    p->body = (span){p->alen, 0};
    /* Room for the whole body (and its NUL) at once when its length is known. */
    if (has_length && !arena_reserve(p, (size_t)hp->content_length + 1)) return -1;
    if ((chunked || (has_length && hp->content_length > 0)) && hp->http_minor >= 1 &&
        header_is(p, "expect", "100-continue"))
        p->continue_pending = true;
    return 0;
}

static int on_chunk_header(http_parser *hp) {
    sl__http_parser *p = parser_of(hp);
    if (hp->content_length > p->max_body - p->body.len)
        return fail(p, 413, "request body too large");
    return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len) {
    sl__http_parser *p = parser_of(hp);
    p->continue_pending = false;
    if (len > p->max_body - p->body.len) return fail(p, 413, "request body too large");
    p->body.len += len;
    return append(p, at, len);
}

static sl__http_method method_of(unsigned m) {
    switch (m) {
    case HTTP_GET:
        return SL__HTTP_GET;
    case HTTP_HEAD:
        return SL__HTTP_HEAD;
    case HTTP_POST:
        return SL__HTTP_POST;
    default:
        return SL__HTTP_OTHER;
    }
}

/* Splits the request-target into path and query, in place: origin-form
 * "/p?q", absolute-form "http://host/p?q" (RFC 9112 3.2.2: a server MUST
 * accept it), asterisk-form "*"; a fragment (never sent by conforming
 * clients) is dropped. */
static void split_target(sl__http_parser *p, sl__http_request *r) {
    char *u = p->arena + p->url.off;
    size_t n = p->url.len;
    char *hash = memchr(u, '#', n);
    if (hash) n = (size_t)(hash - u);
    size_t start = 0;
    bool slash_missing = false;
    size_t skip = n >= 7 && ascii_caseeq(u, "http://", 7)    ? 7
                  : n >= 8 && ascii_caseeq(u, "https://", 8) ? 8
                                                             : 0;
    if (skip) {
        start = skip;
        while (start < n && u[start] != '/' && u[start] != '?') start++;
        slash_missing = start == n || u[start] == '?';
    }
    char *q = memchr(u + start, '?', n - start);
    size_t path_end = q ? (size_t)(q - u) : n;
    if (q) {
        r->query = q + 1;
        r->query_len = n - path_end - 1;
        u[n] = '\0';
    } else {
        r->query = "";
        r->query_len = 0;
    }
    if (slash_missing) {
        r->path = "/";
        r->path_len = 1;
    } else {
        u[path_end] = '\0';
        r->path = u + start;
        r->path_len = path_end - start;
    }
}

/* Turns the recorded offsets into the request handed out. */
static void build_request(sl__http_parser *p, unsigned method, int major, int minor) {
    sl__http_request *r = &p->req;
    r->method = method_of(method);
    r->method_name = http_method_str((enum http_method)method);
    split_target(p, r);
    r->nheaders = p->nheaders;
    for (size_t i = 0; i < p->nheaders; i++) {
        sl__http_field *h = &r->headers[i];
        h->name = p->arena + p->names[i].off;
        h->name_len = p->names[i].len;
        char *v = p->arena + p->values[i].off;
        size_t vl = p->values[i].len;
        /* http_parser strips leading whitespace only; trailing OWS is not
         * part of a field value (RFC 9110 5.5). */
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
        if (p->values[i].len) v[vl] = '\0';
        h->value = p->values[i].len ? v : "";
        h->value_len = vl;
    }
    r->body = p->arena + p->body.off;
    r->body_len = p->body.len;
    r->http_major = major;
    r->http_minor = minor;
}

static int on_message_complete(http_parser *hp) {
    sl__http_parser *p = parser_of(hp);
    if (append(p, "", 1)) return -1; /* NUL after the body */
    p->continue_pending = false;
    build_request(p, hp->method, hp->http_major, hp->http_minor);
    p->status = SL__HTTP_READY;
    /* Stop right after this request: the bytes behind it are the next one's. */
    http_parser_pause(hp, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
    .on_chunk_header = on_chunk_header,
};

/* ---- the parser ----------------------------------------------------------- */

static void reset(sl__http_parser *p) {
    http_parser_init(&p->hp, HTTP_REQUEST);
    p->hp.data = p;
    p->alen = 0;
    p->url = p->body = (span){0, 0};
    p->nheaders = 0;
    p->item = ITEM_NONE;
    p->header_bytes = p->total_bytes = p->trailer_bytes = 0;
    p->headers_done = p->started = p->continue_pending = p->fast_taken = false;
    p->status = SL__HTTP_NEED_MORE;
    p->err_status = 0;
    p->err_msg = NULL;
}

sl__http_parser *sl__http_parser_new(size_t max_header, size_t max_body) {
    sl__http_parser *p = malloc(sizeof *p);
    if (!p) return NULL;
    p->max_header = max_header ? max_header : 1;
    p->max_body = max_body;
    p->max_total = add_sat(add_sat(p->max_header, add_sat(max_body, max_body)), FRAMING_SLACK);
    /* URL, names and values are at most the header bytes, plus their NULs;
     * then the body and its NUL. */
    p->max_arena =
        add_sat(add_sat(p->max_header, 2 * SL__HTTP_MAX_HEADERS + 2), add_sat(max_body, 1));
    p->arena = NULL;
    p->acap = 0;
    p->fast_on = true;
    reset(p);
    return p;
}

void sl__http_parser_free(sl__http_parser *p) {
    if (!p) return;
    free(p->arena);
    free(p);
}

static sl__http_status parse_error(sl__http_parser *p) {
    enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
    if (!p->err_status) {
        switch (e) {
        case HPE_HEADER_OVERFLOW:
            fail(p, 431, "request header fields too large");
            break;
        case HPE_INVALID_TRANSFER_ENCODING:
            fail(p, 501, "unsupported transfer coding (only chunked is)");
            break;
        default:
            fail(p, 400, http_errno_description(e));
            break;
        }
    }
    p->status = SL__HTTP_ERROR;
    return p->status;
}

/* The fast path: when data starts with a whole common request (http_fast.c),
 * the request as the callbacks would have built it from the same bytes:
 * the head and body copied to the arena in one go, NULs put in place, the
 * offsets turned into pointers by build_request. False, with nothing
 * changed but maybe the arena's capacity, to leave data to http_parser. */
static bool take_fast(sl__http_parser *p, const char *data, size_t len, size_t *consumed) {
    sl__http_fast_request f = {.names = p->names, .values = p->values};
    if (!sl__http_fast_scan(data, len, p->max_header, p->max_body, &f)) return false;
    size_t n = f.head_len + f.body_len; /* <= max_header + max_body < max_arena */
    if (!arena_grow(p, n + 1)) return false;
    memcpy(p->arena, data, n);
    p->arena[n] = '\0'; /* after the body */
    p->alen = n + 1;
    for (size_t i = 0; i < f.nheaders; i++) p->arena[f.names[i].off + f.names[i].len] = '\0';
    p->nheaders = f.nheaders;
    p->url = f.url;
    p->body = (span){f.head_len, f.body_len};
    p->req.keep_alive = !f.close;
    build_request(p, (unsigned)f.method, 1, 1);
    p->started = p->headers_done = p->fast_taken = true;
    p->header_bytes = f.head_len;
    p->total_bytes = n;
    p->status = SL__HTTP_READY;
    *consumed = n;
    return true;
}

sl__http_status sl__http_parser_feed(sl__http_parser *p, const char *data, size_t len,
                                     size_t *consumed) {
    if (p->fast_on && p->status == SL__HTTP_NEED_MORE && p->total_bytes == 0 &&
        take_fast(p, data, len, consumed))
        return p->status;
    size_t off = 0;
    while (off < len && p->status == SL__HTTP_NEED_MORE) {
        size_t chunk = len - off;
        bool in_headers = !p->headers_done;
        size_t allow = in_headers ? p->max_header - p->header_bytes : p->max_total - p->total_bytes;
        if (allow == 0) {
            if (in_headers)
                fail(p, 431, "request header fields too large");
            else
                fail(p, 413, "request body framing too large");
            break;
        }
        if (chunk > allow) chunk = allow;
        size_t n = http_parser_execute(&p->hp, &settings, data + off, chunk);
        off += n;
        p->total_bytes += n;
        if (in_headers && !p->headers_done) p->header_bytes += n;
        enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
        if (e == HPE_PAUSED) break; /* a whole request: status is READY */
        if (e != HPE_OK || p->status == SL__HTTP_ERROR) {
            parse_error(p);
            break;
        }
        if (n != chunk) { /* http_parser stopped without saying why */
            fail(p, 400, "malformed request");
            break;
        }
    }
    *consumed = off;
    return p->status;
}

const sl__http_request *sl__http_parser_request(const sl__http_parser *p) {
    return p->status == SL__HTTP_READY ? &p->req : NULL;
}

int sl__http_parser_error_status(const sl__http_parser *p, const char **message) {
    if (message) *message = p->err_msg ? p->err_msg : "bad request";
    return p->err_status ? p->err_status : 400;
}

void sl__http_parser_next(sl__http_parser *p) {
    if (p->acap > ARENA_KEEP) {
        free(p->arena);
        p->arena = NULL;
        p->acap = 0;
    }
    reset(p);
}

void sl__http_parser_set_fast(sl__http_parser *p, bool on) {
    p->fast_on = on;
}

bool sl__http_parser_took_fast(const sl__http_parser *p) {
    return p->status == SL__HTTP_READY && p->fast_taken;
}

bool sl__http_parser_in_request(const sl__http_parser *p) {
    return p->started && p->status == SL__HTTP_NEED_MORE;
}

bool sl__http_parser_take_continue(sl__http_parser *p) {
    bool c = p->continue_pending && p->status == SL__HTTP_NEED_MORE;
    p->continue_pending = false;
    return c;
}

/* ---- lookups -------------------------------------------------------------- */

const sl__http_field *sl__http_header(const sl__http_request *r, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < r->nheaders; i++) {
        const sl__http_field *h = &r->headers[i];
        if (h->name_len == n && ascii_caseeq(h->name, name, n)) return h;
    }
    return NULL;
}

static int hexval(unsigned char c) {
    if ((unsigned)(c - '0') < 10u) return c - '0';
    c |= 0x20;
    if ((unsigned)(c - 'a') < 6u) return c - 'a' + 10;
    return -1;
}

/* Decodes one byte of a form-urlencoded component at *s (< end): '+' is a
 * space, %XY a byte. Returns the byte, or -1 for a malformed escape or an
 * encoded NUL (which would make a C string lie about its length). Inlined
 * into the name and value loops (a call per byte was most of their cost). */
__attribute__((always_inline)) static inline int decode_byte(const char **s, const char *end) {
    const char *c = *s;
    if (*c == '+') {
        *s = c + 1;
        return ' ';
    }
    if (*c != '%') {
        *s = c + 1;
        return (unsigned char)*c;
    }
    if (end - c < 3) return -1;
    int hi = hexval((unsigned char)c[1]), lo = hexval((unsigned char)c[2]);
    if (hi < 0 || lo < 0 || (hi | lo) == 0) return -1;
    *s = c + 3;
    return hi << 4 | lo;
}

/* Does the encoded name [s, end) decode to exactly `name`? Decoding never
 * lengthens, and a first byte that is no escape must be name's own. */
static bool name_matches(const char *s, const char *end, const char *name, size_t name_len) {
    if ((size_t)(end - s) < name_len) return false;
    if (s < end && *s != '%' && *s != '+' && (!name_len || *s != name[0])) return false;
    size_t i = 0;
    while (s < end) {
        int b = decode_byte(&s, end);
        if (b < 0 || i == name_len || (unsigned char)name[i] != b) return false;
        i++;
    }
    return i == name_len;
}

/* The value [v, end) decoded into buf: its length, or -2. */
static long decode_value(const char *v, const char *end, char *buf, size_t size) {
    if (size == 0) return -2;
    size_t n = 0;
    while (v < end) {
        int b = decode_byte(&v, end);
        if (b < 0 || n == size - 1) return -2;
        buf[n++] = (char)b;
    }
    buf[n] = '\0';
    return (long)n;
}

void sl__http_query_params(const char *query, size_t query_len, sl__http_param *ps, size_t n) {
    size_t left = n;
    for (size_t i = 0; i < n; i++) ps[i].len = -1;
    const char *s = query, *end = query + query_len;
    while (s < end && left) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        if (!amp) amp = end;
        const char *eq = memchr(s, '=', (size_t)(amp - s));
        for (size_t i = 0; i < n; i++) {
            sl__http_param *p = &ps[i];
            if (p->len != -1 || !name_matches(s, eq ? eq : amp, p->name, p->name_len)) continue;
            p->len = decode_value(eq ? eq + 1 : amp, amp, p->buf, p->size);
            left--;
            break; /* a segment has one name */
        }
        s = amp + 1;
    }
}

long sl__http_query_param(const char *query, size_t query_len, const char *name, char *buf,
                          size_t size) {
    sl__http_param p = {.name = name, .name_len = strlen(name), .buf = buf, .size = size};
    sl__http_query_params(query, query_len, &p, 1);
    return p.len;
}
