/* identity.c: addresses, CIDR blocks, prefixes and the forwarded-header walk
 * (see identity.h). Written by hand rather than with inet_pton: the parsers
 * must be bounded by an explicit length (header values are not
 * NUL-terminated), strict about forms that mean different things to
 * different parsers (leading zeros in IPv4), and cheap on the hot path. */
#include "policy/identity.h"

#include "sluice/error.h"
#include "util/units.h"

#include <string.h>

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool sl__addr_is_v4(const sl__addr *a) {
    return memcmp(a->b, v4_mapped_prefix, 12) == 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four decimal parts 0-255, one to three digits, no leading zeros. */
static int parse_v4(const char *s, size_t n, uint8_t out[4]) {
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        if (part > 0) {
            if (i >= n || s[i] != '.') return SL_EPARSE;
            i++;
        }
        size_t start = i;
        unsigned v = 0;
        /* s[0..n) is written (ring entries, push) */
        // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
        while (i < n && i - start < 4 && s[i] >= '0' && s[i] <= '9')
            v = v * 10 + (unsigned)(s[i++] - '0');
        size_t digits = i - start;
        if (digits == 0 || digits > 3 || v > 255 || (digits > 1 && s[start] == '0'))
            return SL_EPARSE;
        out[part] = (uint8_t)v;
    }
    return i == n ? 0 : SL_EPARSE;
}

static bool zone_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

/* RFC 4291 section 2.2 text forms. */
static int parse_v6(const char *s, size_t n, uint8_t out[16]) {
    const char *pct = memchr(s, '%', n);
    if (pct) {
        size_t zl = n - (size_t)(pct - s) - 1;
        if (zl == 0 || zl > 32) return SL_EPARSE;
        for (size_t k = 0; k < zl; k++)
            if (!zone_char(pct[1 + k])) return SL_EPARSE;
        n = (size_t)(pct - s);
    }
    if (n < 2 || n > 45) return SL_EPARSE;
    uint16_t w[8] = {0};
    int nw = 0, gap = -1;
    size_t i = 0;
    /* s[0..n) is written (ring entries, push) */
    // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
    if (s[0] == ':') {
        /* s[0..n) is written (ring entries, push) */
        // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
        if (s[1] != ':') return SL_EPARSE;
        gap = 0;
        i = 2;
    }
    while (i < n) {
        size_t j = i;
        bool dot = false;
        /* s[0..n) is written (ring entries, push) */
        // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
        while (j < n && s[j] != ':') dot |= s[j++] == '.';
        if (j == i) return SL_EPARSE; /* an empty group: ":::" or a second "::" */
        if (dot) {
            uint8_t v4[4];
            if (j != n || nw > 6 || parse_v4(s + i, j - i, v4) != 0) return SL_EPARSE;
            w[nw++] = (uint16_t)(v4[0] << 8 | v4[1]);
            w[nw++] = (uint16_t)(v4[2] << 8 | v4[3]);
            break;
        }
        if (j - i > 4 || nw == 8) return SL_EPARSE;
        unsigned v = 0;
        for (size_t k = i; k < j; k++) {
            int h = hexval(s[k]);
            if (h < 0) return SL_EPARSE;
            v = v << 4 | (unsigned)h;
        }
        w[nw++] = (uint16_t)v;
        i = j;
        if (i == n) break;
        i++; /* the ':' */
        if (i < n && s[i] == ':') {
            if (gap >= 0) return SL_EPARSE;
            gap = nw;
            i++;
        } else if (i == n) {
            return SL_EPARSE; /* a trailing single ':' */
        }
    }
    if (gap < 0 && nw != 8) return SL_EPARSE;
    if (gap >= 0 && nw > 7) return SL_EPARSE;
    uint16_t full[8] = {0};
    if (gap < 0) {
        memcpy(full, w, sizeof full);
    } else {
        for (int k = 0; k < gap; k++) full[k] = w[k];
        int tail = nw - gap;
        for (int k = 0; k < tail; k++) full[8 - tail + k] = w[gap + k];
    }
    for (int k = 0; k < 8; k++) {
        out[2 * k] = (uint8_t)(full[k] >> 8);
        out[2 * k + 1] = (uint8_t)full[k];
    }
    return 0;
}

int sl__addr_parse(const char *s, size_t n, sl__addr *out) {
    if (!s || n == 0 || n > SL__ADDR_TEXT_MAX) return SL_EPARSE;
    if (memchr(s, ':', n)) return parse_v6(s, n, out->b);
    uint8_t v4[4];
    if (parse_v4(s, n, v4) != 0) return SL_EPARSE;
    memcpy(out->b, v4_mapped_prefix, 12);
    memcpy(out->b + 12, v4, 4);
    return 0;
}

static bool parse_port(const char *s, size_t n) {
    if (n == 0 || n > 5) return false;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v <= 65535;
}

int sl__addr_parse_node(const char *s, size_t n, sl__addr *out) {
    if (!s) return SL_EPARSE;
    while (n && (s[0] == ' ' || s[0] == '\t')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (n == 0 || n > SL__ADDR_TEXT_MAX) return SL_EPARSE;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) return SL_EPARSE;
        size_t in = (size_t)(close - s - 1), rest = n - in - 2;
        if (!memchr(s + 1, ':', in) || parse_v6(s + 1, in, out->b) != 0) return SL_EPARSE;
        if (rest == 0) return 0;
        return close[1] == ':' && parse_port(close + 2, rest - 1) ? 0 : SL_EPARSE;
    }
    const char *colon = memchr(s, ':', n);
    if (colon && !memchr(colon + 1, ':', n - (size_t)(colon - s) - 1)) {
        /* exactly one ':': an IPv4 address with a port */
        size_t an = (size_t)(colon - s);
        if (!parse_port(colon + 1, n - an - 1)) return SL_EPARSE;
        uint8_t v4[4];
        if (parse_v4(s, an, v4) != 0) return SL_EPARSE;
        memcpy(out->b, v4_mapped_prefix, 12);
        memcpy(out->b + 12, v4, 4);
        return 0;
    }
    return sl__addr_parse(s, n, out);
}

static char *put_u(char *p, unsigned v) {
    return p + sl__decimal_u64(p, v);
}

size_t sl__addr_format(const sl__addr *a, char *buf) {
    static const char hex[] = "0123456789abcdef";
    char *p = buf;
    if (sl__addr_is_v4(a)) {
        for (int k = 12; k < 16; k++) {
            if (k > 12) *p++ = '.';
            p = put_u(p, a->b[k]);
        }
        *p = '\0';
        return (size_t)(p - buf);
    }
    uint16_t w[8];
    for (int k = 0; k < 8; k++) w[k] = (uint16_t)(a->b[2 * k] << 8 | a->b[2 * k + 1]);
    /* RFC 5952 4.2: the first longest run of two or more zero groups is "::" */
    int best = -1, best_len = 1;
    for (int k = 0; k < 8;) {
        if (w[k]) {
            k++;
            continue;
        }
        int e = k;
        while (e < 8 && !w[e]) e++;
        if (e - k > best_len) best = k, best_len = e - k;
        k = e;
    }
    for (int k = 0; k < 8; k++) {
        if (k == best) {
            *p++ = ':';
            *p++ = ':';
            k += best_len - 1;
            continue;
        }
        if (k > 0 && k != best + best_len) *p++ = ':';
        bool lead = true;
        for (int sh = 12; sh >= 0; sh -= 4) {
            unsigned d = (w[k] >> sh) & 15u;
            if (d == 0 && lead && sh > 0) continue;
            lead = false;
            *p++ = hex[d];
        }
    }
    *p = '\0';
    return (size_t)(p - buf);
}

void sl__addr_mask(sl__addr *a, unsigned bits) {
    if (bits >= 128) return;
    unsigned full = bits / 8, rem = bits % 8;
    if (rem) a->b[full++] &= (uint8_t)(0xff00u >> rem);
    memset(a->b + full, 0, 16 - full);
}

int sl__cidr_parse(const char *s, size_t n, sl__cidr *out, const char **why) {
    const char *dummy;
    if (!why) why = &dummy;
    if (!s || n == 0 || n > SL__ADDR_TEXT_MAX + 4)
        return *why = "not an IP address or CIDR block", SL_EPARSE;
    const char *slash = memchr(s, '/', n);
    size_t an = slash ? (size_t)(slash - s) : n;
    bool v6_text = memchr(s, ':', an) != NULL;
    if (sl__addr_parse(s, an, &out->addr) != 0)
        return *why = "not an IP address or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)",
               SL_EPARSE;
    unsigned max = v6_text ? 128 : 32, bits = max;
    if (slash) {
        const char *d = slash + 1;
        size_t dn = n - an - 1;
        if (dn == 0 || dn > 3 || (dn > 1 && d[0] == '0'))
            return *why = "bad prefix length", SL_EPARSE;
        bits = 0;
        for (size_t i = 0; i < dn; i++) {
            if (d[i] < '0' || d[i] > '9') return *why = "bad prefix length", SL_EPARSE;
            bits = bits * 10 + (unsigned)(d[i] - '0');
        }
        if (bits > max)
            return *why = v6_text ? "the prefix length of an IPv6 block is 0 to 128"
                                  : "the prefix length of an IPv4 block is 0 to 32",
                   SL_EPARSE;
    }
    if (!v6_text) bits += 96;
    sl__addr masked = out->addr;
    sl__addr_mask(&masked, bits);
    if (memcmp(&masked, &out->addr, sizeof masked) != 0)
        return *why = "host bits are set (write the network address, such as 10.0.0.0/8)",
               SL_EPARSE;
    out->bits = (uint8_t)bits;
    return 0;
}

unsigned sl__cidr_user_bits(const sl__cidr *c) {
    return sl__addr_is_v4(&c->addr) && c->bits >= 96 ? c->bits - 96u : c->bits;
}

bool sl__cidr_contains(const sl__cidr *c, const sl__addr *a) {
    unsigned full = c->bits / 8, rem = c->bits % 8;
    if (memcmp(c->addr.b, a->b, full) != 0) return false;
    if (!rem) return true;
    uint8_t m = (uint8_t)(0xff00u >> rem);
    return (a->b[full] & m) == c->addr.b[full];
}

bool sl__cidr_set_contains(const sl__cidr *set, size_t n, const sl__addr *a) {
    for (size_t i = 0; i < n; i++)
        if (sl__cidr_contains(&set[i], a)) return true;
    return false;
}

void sl__addr_prefix(const sl__addr *a, unsigned v4_bits, unsigned v6_bits, sl__addr *out,
                     unsigned *bits) {
    *out = *a;
    unsigned b =
        sl__addr_is_v4(a) ? 96 + (v4_bits > 32 ? 32 : v4_bits) : (v6_bits > 128 ? 128 : v6_bits);
    sl__addr_mask(out, b);
    *bits = b;
}

/* ---- the forwarded-header walk ---------------------------------------------- */

typedef struct entry {
    const char *p;
    size_t n;
    uint8_t kind; /* ENTRY_NODE, ENTRY_QUOTED (unescape first) or ENTRY_BAD */
} entry;

enum { ENTRY_NODE, ENTRY_QUOTED, ENTRY_BAD };

/* The last SL__FWD_MAX_HOPS entries of the list, in a ring. */
typedef struct ring {
    entry e[SL__FWD_MAX_HOPS];
    size_t total;
} ring;

static void push(ring *r, const char *p, size_t n, uint8_t kind) {
    r->e[r->total % SL__FWD_MAX_HOPS] = (entry){p, n, kind};
    r->total++;
}

static bool ows(char c) {
    return c == ' ' || c == '\t';
}

static void split_xff(ring *r, const char *s, size_t n) {
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',') j++;
        size_t a = i, b = j;
        while (a < b && ows(s[a])) a++;
        while (b > a && ows(s[b - 1])) b--;
        if (b > a) push(r, s + a, b - a, ENTRY_NODE); /* empty list elements are skipped */
        i = j + 1;
    }
}

/* Index just after the quoted-string starting at s[i] == '"', or n + 1 when
 * it is not terminated. */
static size_t skip_quoted(const char *s, size_t n, size_t i) {
    for (i++; i < n; i++) {
        if (s[i] == '\\') {
            i++;
            continue;
        }
        if (s[i] == '"') return i + 1;
    }
    return n + 1;
}

/* RFC 7239 section 4: Forwarded = 1#forwarded-element, each element a list
 * of name=value pairs separated by ';'. Each element gives one entry: its
 * `for` value, or a bad entry when it has none or is malformed. Parsing
 * is lenient about spaces around ';' and ',' and about unquoted values (a
 * trusted proxy wrote them); an unterminated quote ends the list. */
static void split_forwarded(ring *r, const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        const char *fp = NULL;
        size_t fn = 0;
        uint8_t fkind = ENTRY_BAD;
        bool bad = false, any = false;
        for (;;) { /* pairs of one element */
            while (i < n && (ows(s[i]) || s[i] == ';')) i++;
            if (i >= n || s[i] == ',') break;
            size_t name = i;
            while (i < n && s[i] != '=' && s[i] != ';' && s[i] != ',' && !ows(s[i]) && s[i] != '"')
                i++;
            size_t name_len = i - name;
            any = true;
            if (i >= n || s[i] != '=' || name_len == 0) {
                bad = true;
                break;
            }
            i++;
            size_t v = i, vn;
            uint8_t kind = ENTRY_NODE;
            if (i < n && s[i] == '"') {
                size_t e = skip_quoted(s, n, i);
                if (e > n) { /* unterminated: nothing after this can be trusted */
                    push(r, NULL, 0, ENTRY_BAD);
                    return;
                }
                v = i + 1;
                vn = e - i - 2;
                kind = ENTRY_QUOTED;
                i = e;
            } else {
                while (i < n && s[i] != ';' && s[i] != ',' && !ows(s[i])) i++;
                vn = i - v;
            }
            bool is_for = name_len == 3 && (s[name] | 0x20) == 'f' && (s[name + 1] | 0x20) == 'o' &&
                          (s[name + 2] | 0x20) == 'r';
            if (is_for) {
                if (fp || fkind != ENTRY_BAD) bad = true; /* two `for` in one element */
                fp = s + v;
                fn = vn;
                fkind = kind;
            }
            while (i < n && ows(s[i])) i++;
            if (i < n && s[i] != ';' && s[i] != ',') {
                bad = true;
                break;
            }
        }
        if (bad) { /* skip the rest of this element */
            while (i < n && s[i] != ',') i = s[i] == '"' ? skip_quoted(s, n, i) : i + 1;
            if (i > n) {
                push(r, NULL, 0, ENTRY_BAD);
                return;
            }
        }
        if (bad || (any && !fp))
            push(r, NULL, 0, ENTRY_BAD);
        else if (any)
            push(r, fp, fn, fkind);
        if (i < n && s[i] == ',') i++;
    }
}

static int parse_entry(const entry *e, sl__addr *out) {
    if (e->kind == ENTRY_BAD) return SL_EPARSE;
    if (e->kind == ENTRY_NODE) return sl__addr_parse_node(e->p, e->n, out);
    char buf[SL__ADDR_TEXT_MAX];
    size_t k = 0;
    for (size_t i = 0; i < e->n; i++) {
        char c = e->p[i];
        if (c == '\\' && i + 1 < e->n) c = e->p[++i];
        if (k == sizeof buf) return SL_EPARSE;
        buf[k++] = c;
    }
    return sl__addr_parse_node(buf, k, out);
}

void sl__forwarded_client(sl__fwd_kind kind, const sl__addr *peer, const sl__cidr *trusted,
                          size_t ntrusted, const char *const *values, const size_t *lens,
                          size_t nvalues, sl__fwd_result *out) {
    memset(out, 0, sizeof *out);
    sl__addr cur = *peer;
    if (ntrusted == 0 || !sl__cidr_set_contains(trusted, ntrusted, &cur)) {
        out->client = cur;
        return;
    }
    ring r;
    r.total = 0;
    for (size_t v = 0; v < nvalues; v++) {
        if (!values[v]) continue;
        if (kind == SL__FWD_FORWARDED)
            split_forwarded(&r, values[v], lens[v]);
        else
            split_xff(&r, values[v], lens[v]);
    }
    size_t lo = r.total > SL__FWD_MAX_HOPS ? r.total - SL__FWD_MAX_HOPS : 0;
    size_t k = r.total;
    while (k > lo && sl__cidr_set_contains(trusted, ntrusted, &cur)) {
        k--;
        sl__addr next;
        if (parse_entry(&r.e[k % SL__FWD_MAX_HOPS], &next) != 0) {
            out->bad_entry = true;
            break;
        }
        cur = next;
        out->hops++;
    }
    if (k == lo && lo > 0 && !out->bad_entry && sl__cidr_set_contains(trusted, ntrusted, &cur))
        out->truncated = true;
    out->client = cur;
}
