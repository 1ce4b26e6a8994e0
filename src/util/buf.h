/* buf.h: a growable byte buffer (connection input and output, Redis
 * commands being formatted). Appends
 * never fail silently: on allocation failure the buffer is marked failed
 * (buf->failed), later appends are no-ops, and the caller closes the
 * connection. */
#ifndef SLUICE_UTIL_BUF_H
#define SLUICE_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl__buf {
    char *data;
    size_t len, cap;
    bool failed;
} sl__buf;

void sl__buf_init(sl__buf *b);
void sl__buf_free(sl__buf *b);
/* Makes room for n more bytes; returns a pointer to write them (then call
 * sl__buf_commit), or NULL on failure. */
char *sl__buf_reserve(sl__buf *b, size_t n);
void sl__buf_commit(sl__buf *b, size_t n);
void sl__buf_append(sl__buf *b, const void *p, size_t n);
void sl__buf_puts(sl__buf *b, const char *s);
void sl__buf_printf(sl__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sl__buf_i64(sl__buf *b, int64_t v); /* decimal */
/* n bytes of p as one RESP bulk string ($n CRLF bytes CRLF): a Redis command's argument. */
void sl__buf_bulk(sl__buf *b, const void *p, size_t n);
/* v in decimal as one RESP bulk string. */
void sl__buf_bulk_i64(sl__buf *b, int64_t v);
/* Drops the first n bytes (consumed input). */
void sl__buf_consume(sl__buf *b, size_t n);
void sl__buf_reset(sl__buf *b);

#endif
