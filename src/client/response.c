/* response.c: the answer object: bounded header storage, the in-memory
 * body, and the accessors of sluice/client.h. */
#include "client/response.h"

#include "sluice/error.h"

#include <stdlib.h>
#include <string.h>

sl_response *sl__response_new(void) {
    sl_response *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->body = malloc(1);
    if (!r->body) return free(r), NULL;
    r->body[0] = '\0';
    r->body_cap = 1;
    return r;
}

void sl__response_reset(sl_response *r) {
    r->status = 0;
    memset(&r->info, 0, sizeof r->info);
    r->fields_len = 0;
    r->nfields = 0;
    r->body_len = 0;
    r->body[0] = '\0';
}

static int lower(int c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static bool is_ows(char c) {
    return c == ' ' || c == '\t';
}

/* "HTTP/1.1 429 Too Many Requests", "HTTP/2 200": the three-digit code. */
static int status_of(const char *line, size_t len) {
    size_t i = 5;
    while (i < len && line[i] != ' ') i++;
    while (i < len && line[i] == ' ') i++;
    if (i + 3 > len) return -1;
    int code = 0;
    for (int k = 0; k < 3; k++) {
        char c = line[i + (size_t)k];
        if (c < '0' || c > '9') return -1;
        code = code * 10 + (c - '0');
    }
    return code;
}

static int add_field(sl_response *r, const char *name, size_t nlen, const char *value,
                     size_t vlen) {
    size_t need = nlen + vlen + 2;
    if (r->nfields >= SL__MAX_FIELDS || r->fields_len + need > SL__MAX_FIELD_BYTES) return 0;
    if (r->fields_len + need > r->fields_cap) {
        size_t cap = r->fields_cap ? r->fields_cap * 2 : 1024;
        while (cap < r->fields_len + need) cap *= 2;
        char *f = realloc(r->fields, cap);
        if (!f) return SL_ENOMEM;
        r->fields = f;
        r->fields_cap = cap;
    }
    char *p = r->fields + r->fields_len;
    memcpy(p, name, nlen);
    p[nlen] = '\0';
    memcpy(p + nlen + 1, value, vlen);
    p[nlen + 1 + vlen] = '\0';
    r->fields_len += need;
    r->nfields++;
    return 0;
}

int sl__response_header_line(sl_response *r, const char *line, size_t len) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
    if (memchr(line, '\0', len)) return 0; /* cannot be stored as text: dropped */
    if (len == 0) return r->status >= 200 ? 1 : 0;
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        r->status = status_of(line, len);
        r->fields_len = 0;
        r->nfields = 0;
        return 0;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line) return 0; /* not a field (obsolete folding): ignored */
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1, *end = line + len;
    while (v < end && is_ows(*v)) v++;
    while (end > v && is_ows(end[-1])) end--;
    return add_field(r, line, nlen, v, (size_t)(end - v));
}

int sl__response_append(sl_response *r, const void *data, size_t len, size_t max) {
    if (len > max || r->body_len > max - len) return SL_EINVAL;
    if (r->body_len + len + 1 > r->body_cap) {
        size_t cap = r->body_cap * 2;
        while (cap < r->body_len + len + 1) cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b) return SL_ENOMEM;
        r->body = b;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return 0;
}

void sl_response_info_get(const sl_response *r, sl_response_info *out) {
    *out = r->info;
}

int sl_response_status(const sl_response *r) {
    return r->status;
}

const char *sl_response_header(const sl_response *r, const char *name) {
    if (!r || !name || !r->fields) return NULL;
    size_t nlen = strlen(name);
    const char *p = r->fields, *end = r->fields + r->fields_len;
    while (p < end) {
        size_t flen = strlen(p);
        const char *value = p + flen + 1;
        if (flen == nlen) {
            size_t k = 0;
            while (k < nlen && lower((unsigned char)p[k]) == lower((unsigned char)name[k])) k++;
            if (k == nlen) return value;
        }
        p = value + strlen(value) + 1;
    }
    return NULL;
}

const char *sl_response_body(const sl_response *r, size_t *len) {
    if (len) *len = r->body_len;
    return r->body;
}

void sl_response_free(sl_response *r) {
    if (!r) return;
    free(r->fields);
    free(r->body);
    free(r);
}
