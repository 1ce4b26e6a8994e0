/* http_body.c: the checks on a JSON request body that cJSON does not make
 * (see http.h, sl__http_json_scan): cJSON reads strings as C strings, so a
 * "\u0000" or a raw NUL byte would silently end a key or a policy name
 * there, and two requests for different keys would count as one; it stops
 * at the end of the first value and ignores what follows; and it keeps a
 * number only as a double, so "1e2" and "3.0" look like the integers 100
 * and 3. This scan looks at the raw bytes once, without allocating and
 * without recursion (depth is a counter), before cJSON parses them. It is
 * not a validator: it tokenizes as JSON does and leaves the grammar to cJSON;
 * a body both accept is the body sluiced reads. */
#include <string.h>

#include "server/http/http.h"

static bool is_ws(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* The string starting at b[i] == '"'. Returns the index after its closing
 * quote, or 0 when it is not terminated or has a bad \u escape. *nul: it
 * holds U+0000. When name is not NULL, *match says whether the string,
 * unescaped, is exactly name (ASCII). */
static size_t scan_string(const unsigned char *b, size_t len, size_t i, const char *name, bool *nul,
                          bool *match) {
    size_t k = 0, nl = name ? strlen(name) : 0;
    bool same = name != NULL;
    *nul = false;
    for (i++; i < len; i++) {
        unsigned cp = b[i];
        if (cp == '"') {
            if (match) *match = same && k == nl;
            return i + 1;
        }
        if (cp == '\\') {
            if (++i == len) return 0;
            unsigned char e = b[i];
            if (e == 'u') {
                if (len - i < 5) return 0;
                int h[4] = {hexval(b[i + 1]), hexval(b[i + 2]), hexval(b[i + 3]), hexval(b[i + 4])};
                if (h[0] < 0 || h[1] < 0 || h[2] < 0 || h[3] < 0) return 0;
                cp = (unsigned)(h[0] << 12 | h[1] << 8 | h[2] << 4 | h[3]);
                if (cp == 0) *nul = true;
                i += 4;
            } else {
                static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
                const char *f = memchr(from, e, sizeof from - 1);
                cp = f ? (unsigned char)to[f - from] : 0x100; /* cJSON refuses the others */
            }
        }
        if (same) same = k < nl && cp < 0x80 && cp == (unsigned char)name[k];
        k++;
    }
    return 0;
}

/* The end of the number or literal (true, false, null) at b[i]: the index
 * after its last byte of [+-.0-9a-zA-Z]; i when there is none. cJSON
 * judges the word itself. */
static size_t scan_word(const unsigned char *b, size_t len, size_t i) {
    while (i < len && (b[i] == '+' || b[i] == '-' || b[i] == '.' || (b[i] >= '0' && b[i] <= '9') ||
                       ((b[i] | 0x20) >= 'a' && (b[i] | 0x20) <= 'z')))
        i++;
    return i;
}

sl__json_scan sl__http_json_scan(const char *body, size_t len, const char *member,
                                 const char **text, size_t *text_len) {
    const unsigned char *b = (const unsigned char *)body;
    if (text) *text = NULL;
    if (text_len) *text_len = 0;
    if (len && memchr(b, 0, len)) return SL__JSON_NUL;
    /* in the top-level object (depth 1): whether a member name comes next,
       and where the value of the first member named `member` is */
    enum { CAP_NONE, CAP_NAME, CAP_COLON, CAP_VALUE, CAP_DONE } cap = CAP_NONE;
    size_t depth = 0, start = 0, last = 0; /* last: the end of the latest token */
    bool top_object = false, want_name = false, done = false;
    for (size_t i = 0;;) {
        while (i < len && is_ws(b[i])) i++;
        if (i == len) break;
        if (done) return SL__JSON_TRAILING;
        unsigned char c = b[i];
        bool in_top = depth == 1 && top_object;
        if (in_top && cap == CAP_COLON && c != ':' && c != ',' && c != '}' && c != ']') {
            cap = CAP_VALUE;
            start = i;
        }
        if (c == ',' || c == '}' || c == ']') {
            if (in_top && cap == CAP_VALUE) {
                cap = CAP_DONE;
                if (text) *text = body + start;
                if (text_len) *text_len = last - start;
            }
        }
        switch (c) {
        case '{':
        case '[':
            if (depth == 0) top_object = c == '{';
            depth++;
            want_name = depth == 1 && c == '{';
            i++;
            break;
        case '}':
        case ']':
            if (depth == 0) return SL__JSON_SYNTAX;
            done = --depth == 0;
            i++;
            break;
        case ',':
            want_name = in_top;
            i++;
            break;
        case ':':
            if (in_top && cap == CAP_NAME) cap = CAP_COLON;
            i++;
            break;
        case '"': {
            bool nul, match = false;
            bool name = in_top && want_name;
            size_t end = scan_string(b, len, i, name && cap == CAP_NONE ? member : NULL, &nul,
                                     name ? &match : NULL);
            if (!end) return SL__JSON_SYNTAX;
            if (nul) return SL__JSON_NUL;
            if (name) {
                want_name = false;
                if (match) cap = CAP_NAME;
            }
            i = end;
            done = depth == 0;
            break;
        }
        default: { /* a number, true, false, null */
            size_t j = scan_word(b, len, i);
            if (j == i) return SL__JSON_SYNTAX;
            i = j;
            done = depth == 0;
            break;
        }
        }
        last = i;
    }
    return depth == 0 && done ? SL__JSON_OK : SL__JSON_SYNTAX;
}
