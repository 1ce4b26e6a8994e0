/* resp_writer.c: RESP2 reply writers (see resp.h). Each reply is written with
 * one reservation in the output buffer and no formatting library on the hot
 * path (integers are converted by hand). A failed allocation marks the
 * buffer failed (sl__buf's contract) and the connection is closed by its
 * owner. */
#include <string.h>

#include "server/resp/resp.h"
#include "util/units.h"

/* <type><decimal>\r\n */
static void typed_number(sl__buf *out, char type, int64_t v) {
    char *p = sl__buf_reserve(out, 24);
    if (!p) return;
    p[0] = type;
    size_t n = 1 + sl__decimal_i64(p + 1, v);
    p[n++] = '\r';
    p[n++] = '\n';
    sl__buf_commit(out, n);
}

void sl__resp_simple(sl__buf *out, const char *s) {
    size_t n = strlen(s);
    char *p = sl__buf_reserve(out, n + 3);
    if (!p) return;
    p[0] = '+';
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result): RESP bytes, no C string
    memcpy(p + 1, s, n);
    p[n + 1] = '\r';
    p[n + 2] = '\n';
    sl__buf_commit(out, n + 3);
}

void sl__resp_error(sl__buf *out, const char *msg) {
    size_t n = strlen(msg);
    char *p = sl__buf_reserve(out, n + 3);
    if (!p) return;
    p[0] = '-';
    /* a CR or LF inside an error would end it early: Redis turns them into spaces too */
    for (size_t i = 0; i < n; i++)
        p[i + 1] = (char)(msg[i] == '\r' || msg[i] == '\n' ? ' ' : msg[i]);
    p[n + 1] = '\r';
    p[n + 2] = '\n';
    sl__buf_commit(out, n + 3);
}

void sl__resp_int(sl__buf *out, int64_t v) {
    typed_number(out, ':', v);
}

void sl__resp_bulk(sl__buf *out, const void *data, size_t n) {
    char *p = sl__buf_reserve(out, n + 26);
    if (!p) return;
    p[0] = '$';
    size_t h = 1 + sl__decimal_i64(p + 1, (int64_t)n);
    p[h++] = '\r';
    p[h++] = '\n';
    if (n) memcpy(p + h, data, n);
    p[h + n] = '\r';
    p[h + n + 1] = '\n';
    sl__buf_commit(out, h + n + 2);
}

void sl__resp_null(sl__buf *out) {
    sl__buf_append(out, "$-1\r\n", 5);
}

void sl__resp_array(sl__buf *out, size_t n) {
    typed_number(out, '*', (int64_t)n);
}

void sl__resp_ints(sl__buf *out, const int64_t *v, size_t n) {
    /* "*n\r\n" plus n times ":v\r\n" (at most 23 bytes each) */
    char *p = sl__buf_reserve(out, 24 + 23 * n);
    if (!p) return;
    size_t k = 0;
    p[k++] = '*';
    k += sl__decimal_i64(p + k, (int64_t)n);
    p[k++] = '\r';
    p[k++] = '\n';
    for (size_t i = 0; i < n; i++) {
        p[k++] = ':';
        k += sl__decimal_i64(p + k, v[i]);
        p[k++] = '\r';
        p[k++] = '\n';
    }
    sl__buf_commit(out, k);
}
