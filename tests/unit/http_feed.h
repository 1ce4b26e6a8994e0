/* http_feed.h: one read fed to the HTTP request parser (server/http/http.h)
 * the way a connection feeds it, shared by test_http.c and fuzz_http.c: the
 * read is fed until it is used up, each READY request is handed to the
 * caller and the parser moved on (sl__http_parser_next), an error ends it;
 * NEED_MORE must consume the whole read. http_feed_both does the same to
 * two parsers in lockstep, one with the fast path and one without, and
 * checks that they agree at every step. The includer defines
 * HTTP_FEED_CHECK(cond) first: cmocka's assert_true, or the fuzz target's
 * abort. */
#ifndef SLUICE_TESTS_HTTP_FEED_H
#define SLUICE_TESTS_HTTP_FEED_H

#include <stddef.h>
#include <string.h>

#include "server/http/http.h"

#ifndef HTTP_FEED_CHECK
#error "define HTTP_FEED_CHECK(cond) before including http_feed.h"
#endif

/* Feeds read[0..n) to p, calling on_request(r, ctx) for each request it
 * completes. 0 when the read is used up; else the error's status (the
 * parser's message in *msg, never NULL). */
static inline int http_feed(sl__http_parser *p, const char *read, size_t n,
                            void (*on_request)(const sl__http_request *r, void *ctx), void *ctx,
                            const char **msg) {
    size_t off = 0;
    while (off < n) {
        size_t used = 12345; /* the parser must set it */
        sl__http_status st = sl__http_parser_feed(p, read + off, n - off, &used);
        HTTP_FEED_CHECK(used <= n - off);
        off += used;
        if (st == SL__HTTP_READY) {
            const sl__http_request *r = sl__http_parser_request(p);
            HTTP_FEED_CHECK(r != NULL);
            HTTP_FEED_CHECK(!sl__http_parser_in_request(p));
            on_request(r, ctx);
            sl__http_parser_next(p);
        } else if (st == SL__HTTP_ERROR) {
            *msg = NULL;
            int status = sl__http_parser_error_status(p, msg);
            HTTP_FEED_CHECK(*msg != NULL);
            return status;
        } else {
            HTTP_FEED_CHECK(off == n);
            HTTP_FEED_CHECK(sl__http_parser_request(p) == NULL);
        }
    }
    return 0;
}

/* n bytes at a and at b are the same, and both are NUL-terminated there. */
static inline int http_feed_same(const char *a, const char *b, size_t n) {
    return a[n] == '\0' && b[n] == '\0' && memcmp(a, b, n) == 0;
}

/* Every field of two parsed requests is the same (pointers aside). */
static inline int http_requests_equal(const sl__http_request *a, const sl__http_request *b) {
    if (a->method != b->method || strcmp(a->method_name, b->method_name) != 0 ||
        a->path_len != b->path_len || !http_feed_same(a->path, b->path, a->path_len) ||
        a->query_len != b->query_len || !http_feed_same(a->query, b->query, a->query_len) ||
        a->nheaders != b->nheaders || a->body_len != b->body_len ||
        !http_feed_same(a->body, b->body, a->body_len) || a->keep_alive != b->keep_alive ||
        a->http_major != b->http_major || a->http_minor != b->http_minor)
        return 0;
    for (size_t i = 0; i < a->nheaders; i++) {
        const sl__http_field *x = &a->headers[i], *y = &b->headers[i];
        if (x->name_len != y->name_len || !http_feed_same(x->name, y->name, x->name_len) ||
            x->value_len != y->value_len || !http_feed_same(x->value, y->value, x->value_len))
            return 0;
    }
    return 1;
}

/* http_feed on fast (fast path on) and slow (off) at once: each feed must
 * give both the same status, the same bytes used, the same request or the
 * same error and message, the same in_request and take_continue answers.
 * on_request sees fast's requests; *fast_taken counts those the fast path
 * took. */
static inline int http_feed_both(sl__http_parser *fast, sl__http_parser *slow, const char *read,
                                 size_t n, void (*on_request)(const sl__http_request *r, void *ctx),
                                 void *ctx, const char **msg, size_t *fast_taken) {
    size_t off = 0;
    while (off < n) {
        size_t used = 12345, used_slow = 54321;
        sl__http_status st = sl__http_parser_feed(fast, read + off, n - off, &used);
        sl__http_status st_slow = sl__http_parser_feed(slow, read + off, n - off, &used_slow);
        HTTP_FEED_CHECK(st == st_slow && used == used_slow && used <= n - off);
        HTTP_FEED_CHECK(!sl__http_parser_took_fast(slow));
        HTTP_FEED_CHECK(sl__http_parser_in_request(fast) == sl__http_parser_in_request(slow));
        off += used;
        if (st == SL__HTTP_READY) {
            const sl__http_request *r = sl__http_parser_request(fast);
            HTTP_FEED_CHECK(r && http_requests_equal(r, sl__http_parser_request(slow)));
            if (sl__http_parser_took_fast(fast)) ++*fast_taken;
            on_request(r, ctx);
            sl__http_parser_next(fast);
            sl__http_parser_next(slow);
        } else if (st == SL__HTTP_ERROR) {
            const char *msg_slow = NULL;
            int status = sl__http_parser_error_status(fast, msg);
            HTTP_FEED_CHECK(status == sl__http_parser_error_status(slow, &msg_slow));
            HTTP_FEED_CHECK(*msg && msg_slow && strcmp(*msg, msg_slow) == 0);
            return status;
        } else {
            HTTP_FEED_CHECK(off == n && !sl__http_parser_took_fast(fast));
            HTTP_FEED_CHECK(sl__http_parser_take_continue(fast) ==
                            sl__http_parser_take_continue(slow));
        }
    }
    return 0;
}

#endif
