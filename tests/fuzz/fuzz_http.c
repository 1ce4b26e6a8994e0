/* fuzz_http.c: libFuzzer target for the HTTP request parser and what the
 * router does with a parsed request (src/server/http/http.h).
 *
 * The first 3 bytes choose max_header, max_body and how the rest is cut
 * into reads; the rest is fed in those pieces the way a connection does,
 * looping over pipelined requests, to two parsers in lockstep: one with
 * the fast path (http_fast.c), one with libhttp-parser alone. Properties:
 * no crash, leak or overread (ASan); both agree on every feed (status,
 * bytes used, the request field by field, the error and its message:
 * http_feed_both); NEED_MORE consumes the whole piece; every parsed request respects
 * the bounds and its strings are NUL-terminated at their lengths; errors
 * are one of the documented statuses. Each request's query is decoded with
 * several buffer sizes (and, on the raw input, several names in one pass as
 * each alone), headers are looked up, the response writers
 * escape whatever the request carried, and the body goes through the JSON
 * body scan and the JSON string writer (any bytes: printable output). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) abort();                                                                         \
    } while (0)

#define HTTP_FEED_CHECK(c) CHECK(c)
#include "../unit/http_feed.h"

static void exercise(const sl__http_request *r, size_t max_header, size_t max_body, sl__buf *out) {
    CHECK(r->nheaders <= SL__HTTP_MAX_HEADERS);
    CHECK(r->body_len <= max_body);
    CHECK(r->body[r->body_len] == '\0');
    CHECK(strlen(r->path) == r->path_len);
    CHECK(strlen(r->query) == r->query_len);
    CHECK(r->path_len + r->query_len <= max_header);
    CHECK(r->method_name && r->method_name[0]);
    CHECK(r->http_major == 1);
    size_t header_bytes = 0;
    for (size_t i = 0; i < r->nheaders; i++) {
        const sl__http_field *h = &r->headers[i];
        CHECK(strlen(h->name) == h->name_len && h->name_len > 0);
        CHECK(strlen(h->value) == h->value_len);
        header_bytes += h->name_len + h->value_len;
        /* the first header of that name, case-insensitively */
        const sl__http_field *f = sl__http_header(r, h->name);
        CHECK(f && f <= h && f->name_len == h->name_len);
    }
    CHECK(header_bytes <= max_header);
    sl__http_header(r, "content-type");
    sl__http_header(r, "");

    static const char *const names[] = {"policy", "key", "cost", "n", ""};
    static const size_t sizes[] = {0, 1, 2, 8, 1025};
    char buf[1025];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
            long n = sl__http_query_param(r->query, r->query_len, names[i], buf, sizes[j]);
            CHECK(n >= -2);
            if (n >= 0) {
                CHECK((size_t)n < sizes[j] && buf[n] == '\0' && strlen(buf) == (size_t)n);
            }
        }

    /* what the router writes back may carry request bytes: all escaped */
    sl__buf_reset(out);
    sl__http_begin(out, r->method == SL__HTTP_OTHER ? 405 : 404);
    sl__http_header_line(out, "X-Path", r->path);
    sl__http_error_json(out, r->path, r->query);
    sl__http_end(out, r->keep_alive, "application/json", r->body, r->body_len);
    CHECK(!out->failed);

    /* the JSON body checks (http_body.c) and the JSON string writer on the body's bytes */
    const char *t = NULL;
    size_t tl = 0;
    sl__json_scan sc = sl__http_json_scan(r->body, r->body_len, "cost", &t, &tl);
    CHECK(sc >= SL__JSON_OK && sc <= SL__JSON_SYNTAX);
    CHECK(!t || (t >= r->body && tl <= r->body_len && (size_t)(t - r->body) <= r->body_len - tl));
    if (sc == SL__JSON_OK || sc == SL__JSON_TRAILING) CHECK(!memchr(r->body, 0, r->body_len));
    sl__buf_reset(out);
    sl__http_json_string(out, r->body, r->body_len);
    CHECK(!out->failed && out->len >= 2 && out->data[0] == '"' && out->data[out->len - 1] == '"');
    for (size_t i = 0; i < out->len; i++) CHECK((unsigned char)out->data[i] >= 0x20);
}

typedef struct fuzz_ctx {
    size_t max_header, max_body;
    sl__buf *out;
} fuzz_ctx;

static void exercise_one(const sl__http_request *r, void *ctx) {
    const fuzz_ctx *f = ctx;
    exercise(r, f->max_header, f->max_body, f->out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    size_t max_header = 16 + (size_t)data[0] * 8; /* 16 .. 2056 */
    size_t max_body = (size_t)data[1] * 4;        /* 0 .. 1020 */
    bool split = data[2] & 1;                     /* one read, or reads of random sizes */
    uint32_t x = 0x9e3779b9u ^ data[2];
    data += 3;
    size -= 3;

    sl__http_parser *p = sl__http_parser_new(max_header, max_body);
    sl__http_parser *slow = sl__http_parser_new(max_header, max_body);
    CHECK(p && slow);
    sl__http_parser_set_fast(slow, false);
    size_t fast_taken = 0;
    sl__buf out;
    sl__buf_init(&out);
    size_t start = 0;
    bool stop = false;
    while (start < size && !stop) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        size_t piece = split ? 1 + x % 97 : size;
        if (piece > size - start) piece = size - start;
        /* each read in its own exact-size buffer, so an overread is caught */
        char *chunk = malloc(piece);
        CHECK(chunk);
        memcpy(chunk, data + start, piece);
        const char *msg;
        int s = http_feed_both(p, slow, chunk, piece, exercise_one,
                               &(fuzz_ctx){max_header, max_body, &out}, &msg, &fast_taken);
        if (s) {
            CHECK(s == 400 || s == 413 || s == 431 || s == 501 || s == 505);
            stop = true;
        }
        free(chunk);
        start += piece;
    }
    CHECK(sl__http_parser_take_continue(p) == sl__http_parser_take_continue(slow));
    CHECK(sl__http_parser_in_request(p) == sl__http_parser_in_request(slow));
    sl__buf_free(&out);
    sl__http_parser_free(p);
    sl__http_parser_free(slow);

    /* the query decoder on raw bytes, with no NUL behind them */
    char *raw = malloc(size ? size : 1);
    CHECK(raw);
    memcpy(raw, data, size);
    char buf[64];
    long n = sl__http_query_param(raw, size, "key", buf, sizeof buf);
    CHECK(n >= -2 && n < (long)sizeof buf);
    /* several names in one pass: what each finds alone */
    char pb[3][64];
    sl__http_param ps[3] = {
        {"policy", 6, pb[0], 8, 0}, {"key", 3, pb[1], 64, 0}, {"cost", 4, pb[2], 32, 0}};
    sl__http_query_params(raw, size, ps, 3);
    CHECK(ps[1].len == n && (n < 0 || memcmp(pb[1], buf, (size_t)n + 1) == 0));
    for (size_t i = 0; i < 3; i += 2) {
        char alone[64];
        long m = sl__http_query_param(raw, size, ps[i].name, alone, ps[i].size);
        CHECK(ps[i].len == m && (m < 0 || memcmp(pb[i], alone, (size_t)m + 1) == 0));
    }
    free(raw);
    return 0;
}
