/* buf.c: the growable byte buffer (see buf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/units.h"

void sl__buf_init(sl__buf *b) {
    memset(b, 0, sizeof *b);
}

void sl__buf_free(sl__buf *b) {
    free(b->data);
    sl__buf_init(b);
}

char *sl__buf_reserve(sl__buf *b, size_t n) {
    if (b->failed) return NULL;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return NULL;
            }
            cap *= 2;
        }
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return NULL;
        }
        b->data = d;
        b->cap = cap;
    }
    return b->data + b->len;
}

void sl__buf_commit(sl__buf *b, size_t n) {
    b->len += n;
}

void sl__buf_append(sl__buf *b, const void *p, size_t n) {
    char *dst = sl__buf_reserve(b, n);
    if (!dst) return;
    if (n) memcpy(dst, p, n);
    b->len += n;
}

void sl__buf_puts(sl__buf *b, const char *s) {
    sl__buf_append(b, s, strlen(s));
}

void sl__buf_bulk(sl__buf *b, const void *p, size_t n) {
    sl__buf_printf(b, "$%zu\r\n", n);
    sl__buf_append(b, p, n);
    sl__buf_puts(b, "\r\n");
}

void sl__buf_bulk_i64(sl__buf *b, int64_t v) {
    char t[SL__DECIMAL_MAX];
    sl__buf_bulk(b, t, sl__decimal_i64(t, v));
}

void sl__buf_printf(sl__buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof tmp) {
        sl__buf_append(b, tmp, (size_t)n);
        return;
    }
    char *dst = sl__buf_reserve(b, (size_t)n + 1);
    if (!dst) return;
    va_start(ap, fmt);
    vsnprintf(dst, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sl__buf_i64(sl__buf *b, int64_t v) {
    char *p = sl__buf_reserve(b, SL__DECIMAL_MAX);
    if (p) sl__buf_commit(b, sl__decimal_i64(p, v));
}

void sl__buf_consume(sl__buf *b, size_t n) {
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void sl__buf_reset(sl__buf *b) {
    b->len = 0;
    b->failed = false;
}
