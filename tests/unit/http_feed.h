/* http_feed.h: one read fed to the HTTP request parser (server/http/http.h)
 * the way a connection feeds it, shared by test_http.c and fuzz_http.c: the
 * read is fed until it is used up, each READY request is handed to the
 * caller and the parser moved on (sl__http_parser_next), an error ends it;
 * NEED_MORE must consume the whole read. The includer defines
 * HTTP_FEED_CHECK(cond) first: cmocka's assert_true, or the fuzz target's
 * abort. */
#ifndef SLUICE_TESTS_HTTP_FEED_H
#define SLUICE_TESTS_HTTP_FEED_H

#include <stddef.h>

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

#endif
