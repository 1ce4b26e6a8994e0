/* http_fast.h: the request parser's fast path (http_fast.c), internal to
 * http_request.c. One pass over bytes already read recognises the common
 * complete request and says where its parts are; anything it is not sure
 * of is left to libhttp-parser. */
#ifndef SLUICE_SERVER_HTTP_FAST_H
#define SLUICE_SERVER_HTTP_FAST_H

#include <stdbool.h>
#include <stddef.h>

/* A part of the bytes scanned: data + off, len bytes. */
typedef struct sl__http_span {
    size_t off, len;
} sl__http_span;

typedef struct sl__http_fast_request {
    int method;        /* enum http_method of libhttp-parser: HTTP_GET, HTTP_HEAD, HTTP_POST */
    sl__http_span url; /* the origin-form target, without its spaces */
    /* The caller's arrays of SL__HTTP_MAX_HEADERS: each name without its
     * colon, each value after its leading whitespace up to its CR (trailing
     * whitespace included, as libhttp-parser hands it out). */
    sl__http_span *names, *values;
    size_t nheaders;
    size_t head_len; /* request line and header section, blank line included */
    size_t body_len; /* Content-Length, 0 without one */
    bool close;      /* Connection: close */
} sl__http_fast_request;

/* True when data[0..len) starts with a whole request of the shape
 * "GET|POST|HEAD SP /target SP HTTP/1.1 CRLF *(name: value CRLF) CRLF
 * [Content-Length bytes of body]", head within max_header (and 8 KiB) and
 * body within max_body, with nothing in it that libhttp-parser would treat
 * otherwise than this reading: then *out says where everything is (the
 * request is head_len + body_len bytes). False otherwise (a partial
 * request, another method or version, Transfer-Encoding, Expect, Upgrade,
 * a byte outside the narrow classes below, a limit reached...): *out's
 * spans are then unspecified, and the request is libhttp-parser's to read,
 * accept or refuse. Reads no byte at or past data + len. */
bool sl__http_fast_scan(const char *data, size_t len, size_t max_header, size_t max_body,
                        sl__http_fast_request *out);

#endif
