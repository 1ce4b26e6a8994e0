/* grpc_struct.c: a rule's metadata JSON (util/json.h's JSON, as
 * policy/domains_read.c writes it) as the google.protobuf.Struct of a
 * RateLimitResponse's dynamic_metadata (grpc_service.h). Struct: fields
 * (1: map entry {1 key, 2 Value}); Value: null_value 1, number_value 2
 * (double), string_value 3, bool_value 4, struct_value 5, list_value 6
 * (ListValue: values 1). Nested messages are encoded into a buffer of
 * their own first, for their length (depth is at most the writer's 16). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_service.h"
#include "util/json.h"

static void put_varint(sl__buf *b, uint64_t v) {
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) t[n++] = (uint8_t)(v | 0x80), v >>= 7;
    t[n++] = (uint8_t)v;
    sl__buf_append(b, t, n);
}

static void put_field(sl__buf *b, uint8_t tag, const void *p, size_t n) {
    sl__buf_append(b, &tag, 1);
    put_varint(b, n);
    sl__buf_append(b, p, n);
}

static unsigned hexval(char c) {
    return c >= '0' && c <= '9'   ? (unsigned)(c - '0')
           : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
           : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                  : 0;
}

/* The bytes of JSON string p[0..n) (quotes included), unescaped, as field tag. */
static void put_string(sl__buf *b, uint8_t tag, const char *p, size_t n) {
    sl__buf s;
    sl__buf_init(&s);
    for (size_t i = 1; i + 1 < n; i++) {
        char c = p[i];
        if (c != '\\' || i + 2 >= n) {
            sl__buf_append(&s, &c, 1);
            continue;
        }
        c = p[++i];
        static const char from[] = "bfnrt", to[] = "\b\f\n\r\t";
        const char *k = strchr(from, c);
        if (c == 'u' && i + 4 < n) { /* \uXXXX: a code point of the BMP, as UTF-8 */
            unsigned u = hexval(p[i + 1]) << 12 | hexval(p[i + 2]) << 8 | hexval(p[i + 3]) << 4 |
                         hexval(p[i + 4]);
            i += 4;
            uint8_t o[3];
            size_t on = u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
            if (on == 1) o[0] = (uint8_t)u;
            if (on == 2) o[0] = (uint8_t)(0xc0 | u >> 6), o[1] = (uint8_t)(0x80 | (u & 0x3f));
            if (on == 3)
                o[0] = (uint8_t)(0xe0 | u >> 12), o[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3f)),
                o[2] = (uint8_t)(0x80 | (u & 0x3f));
            sl__buf_append(&s, o, on);
        } else {
            char e = (char)(c && k ? to[k - from] : c);
            sl__buf_append(&s, &e, 1);
        }
    }
    put_field(b, tag, s.data ? s.data : "", s.len);
    sl__buf_free(&s);
}

static void put_value(sl__buf *b, const char *p, size_t n);

/* The members of object p[0..n) as Struct fields. */
static void put_struct_body(sl__buf *b, const char *p, size_t n) {
    const char *s = p + 1, *end = p + n - 1;
    while (s < end && *s == '"') {
        size_t kl = sl__json_skip(s, end);
        size_t vl = kl ? sl__json_skip(s + kl + 1, end) : 0;
        if (!vl) return;
        sl__buf e, v;
        sl__buf_init(&e);
        sl__buf_init(&v);
        put_string(&e, 0x0a, s, kl);
        put_value(&v, s + kl + 1, vl);
        put_field(&e, 0x12, v.data ? v.data : "", v.len);
        put_field(b, 0x0a, e.data ? e.data : "", e.len);
        sl__buf_free(&e);
        sl__buf_free(&v);
        s += kl + 1 + vl + 1;
    }
}

/* The Value message (its body) of the JSON value p[0..n). */
static void put_value(sl__buf *b, const char *p, size_t n) {
    sl__buf in;
    sl__buf_init(&in);
    if (*p == '{') {
        put_struct_body(&in, p, n);
        put_field(b, 0x2a, in.data ? in.data : "", in.len);
    } else if (*p == '[') {
        const char *s = p + 1, *end = p + n - 1;
        while (s < end) {
            size_t vl = sl__json_skip(s, end);
            if (!vl) break;
            sl__buf v;
            sl__buf_init(&v);
            put_value(&v, s, vl);
            put_field(&in, 0x0a, v.data ? v.data : "", v.len);
            sl__buf_free(&v);
            s += vl + 1;
        }
        put_field(b, 0x32, in.data ? in.data : "", in.len);
    } else if (*p == '"') {
        put_string(b, 0x1a, p, n);
    } else if (*p == 't' || *p == 'f') {
        uint8_t t[2] = {0x20, *p == 't'};
        sl__buf_append(b, t, 2);
    } else if (*p == 'n') {
        uint8_t t[2] = {0x08, 0}; /* NULL_VALUE */
        sl__buf_append(b, t, 2);
    } else {
        char small[64], *num = n < sizeof small ? small : malloc(n + 1);
        double d = 0;
        if (num) {
            memcpy(num, p, n);
            num[n] = '\0';
            d = strtod(num, NULL);
            if (num != small) free(num);
        }
        uint64_t bits;
        memcpy(&bits, &d, 8);
        uint8_t t[9] = {0x11};
        for (int i = 0; i < 8; i++) t[1 + i] = (uint8_t)(bits >> (8 * i));
        sl__buf_append(b, t, 9);
    }
    sl__buf_free(&in);
}

int sl__grpc_put_struct(sl__buf *out, const char *json, size_t len) {
    if (len < 2 || json[0] != '{' || sl__json_skip(json, json + len) != len) return -1;
    put_struct_body(out, json, len);
    return out->failed ? -1 : 0;
}
