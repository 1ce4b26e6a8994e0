/* quota.c: reading RateLimit / X-RateLimit-* fields and pacing from them.
 * The Structured Field parsing is the small subset these fields need (RFC
 * 9651 lists of string or token items with parameters); anything else is
 * skipped, never trusted. */
#include "client/quota.h"

#include <stdio.h>
#include <string.h>

#include "sluice/limit.h"

#define MAX_SECONDS INT64_C(1000000000) /* longest reset believed: ~31 years */

typedef struct sf {
    const char *s;
    size_t i, len;
} sf;

static void ows(sf *p) {
    while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t')) p->i++;
}

/* An item's name: an sf-string (kept with its quotes, escapes as sent) or a
 * token. Returns false on malformed input. */
static bool item(sf *p, const char **name, size_t *nlen) {
    *name = p->s + p->i;
    if (p->i < p->len && p->s[p->i] == '"') {
        p->i++;
        while (p->i < p->len && p->s[p->i] != '"') {
            if (p->s[p->i] == '\\') p->i++;
            p->i++;
        }
        if (p->i >= p->len) return false;
        p->i++;
    } else {
        while (p->i < p->len && !strchr(";, \t", p->s[p->i])) p->i++;
    }
    *nlen = (size_t)(p->s + p->i - *name);
    return *nlen > 0;
}

/* A non-negative sf-integer of at most 15 digits. */
static bool integer(sf *p, int64_t *out) {
    int64_t v = 0;
    int n = 0;
    while (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9' && n < 16)
        v = v * 10 + (p->s[p->i++] - '0'), n++;
    if (n == 0 || n > 15) return false;
    *out = v;
    return true;
}

typedef struct member {
    const char *name;
    size_t nlen;
    int64_t p1, p2; /* the two parameters asked for, -1 when absent */
} member;

/* Parses the next list member, collecting integer parameters k1 and k2.
 * Returns 1 with *m, 0 at the end, -1 on malformed input. */
static int next_member(sf *p, char k1, char k2, member *m) {
    ows(p);
    if (p->i >= p->len) return 0;
    m->p1 = m->p2 = -1;
    if (!item(p, &m->name, &m->nlen)) return -1;
    while (p->i < p->len && p->s[p->i] == ';') {
        p->i++;
        ows(p);
        size_t k = p->i;
        while (p->i < p->len && !strchr("=;, \t", p->s[p->i])) p->i++;
        size_t klen = p->i - k;
        if (klen == 0) return -1;
        int64_t v = -1;
        if (p->i < p->len && p->s[p->i] == '=') {
            p->i++;
            if (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
                if (!integer(p, &v)) return -1;
            } else {
                const char *ign;
                size_t ilen;
                if (!item(p, &ign, &ilen)) return -1;
            }
        }
        if (klen == 1 && p->s[k] == k1) m->p1 = v;
        if (klen == 1 && p->s[k] == k2) m->p2 = v;
    }
    ows(p);
    if (p->i < p->len) {
        if (p->s[p->i] != ',') return -1;
        p->i++;
    }
    return 1;
}

/* A whole field value that is one non-negative integer. */
static bool plain_int(const char *v, int64_t *out) {
    if (!v) return false;
    sf p = {v, 0, strlen(v)};
    ows(&p);
    if (!integer(&p, out)) return false;
    ows(&p);
    return p.i == p.len;
}

static int64_t seconds_ns(int64_t s) {
    return (s > MAX_SECONDS ? MAX_SECONDS : s) * SL_NS_PER_SEC;
}

/* Draft 07+: RateLimit r/t, RateLimit-Policy q. */
static bool read_structured(sl__field_fn get, void *ctx, sl__quota *q) {
    const char *rl = get(ctx, "RateLimit");
    if (!rl) return false;
    sf p = {rl, 0, strlen(rl)};
    member m, best = {0};
    bool found = false;
    int got;
    while ((got = next_member(&p, 'r', 't', &m)) == 1) {
        if (m.p1 < 0) continue;
        if (!found || m.p1 < best.p1 || (m.p1 == best.p1 && m.p2 > best.p2)) best = m;
        found = true;
    }
    if (got < 0 || !found) return false;
    q->known = true;
    q->remaining = best.p1;
    q->reset = best.p2 < 0 ? 0 : seconds_ns(best.p2);
    const char *pol = get(ctx, "RateLimit-Policy");
    if (pol) {
        sf pp = {pol, 0, strlen(pol)};
        while (next_member(&pp, 'q', 'w', &m) == 1) {
            if (m.nlen == best.nlen && memcmp(m.name, best.name, m.nlen) == 0 && m.p1 >= 0) {
                q->limit = m.p1;
                break;
            }
        }
    }
    return true;
}

/* Older drafts and the X- convention: three plain integers. */
static bool read_triplet(sl__field_fn get, void *ctx, const char *prefix, int64_t now_unix_ns,
                         sl__quota *q) {
    char name[40];
    int64_t rem, reset, limit;
    snprintf(name, sizeof name, "%sRemaining", prefix);
    if (!plain_int(get(ctx, name), &rem)) return false;
    snprintf(name, sizeof name, "%sReset", prefix);
    if (!plain_int(get(ctx, name), &reset)) return false;
    if (reset > MAX_SECONDS) {
        /* a Unix timestamp in seconds (GitHub) */
        __int128 d = (__int128)reset * SL_NS_PER_SEC - now_unix_ns;
        q->reset = d < 0 ? 0 : (d > seconds_ns(MAX_SECONDS) ? seconds_ns(MAX_SECONDS) : (int64_t)d);
    } else {
        q->reset = seconds_ns(reset);
    }
    q->known = true;
    q->remaining = rem;
    snprintf(name, sizeof name, "%sLimit", prefix);
    if (plain_int(get(ctx, name), &limit)) q->limit = limit;
    return true;
}

void sl__quota_read(sl__field_fn get, void *ctx, int64_t now_unix_ns, sl__quota *out) {
    *out = (sl__quota){.known = false, .remaining = 0, .reset = 0, .limit = -1};
    if (read_structured(get, ctx, out)) return;
    *out = (sl__quota){.known = false, .remaining = 0, .reset = 0, .limit = -1};
    if (read_triplet(get, ctx, "RateLimit-", now_unix_ns, out)) return;
    *out = (sl__quota){.known = false, .remaining = 0, .reset = 0, .limit = -1};
    if (read_triplet(get, ctx, "X-RateLimit-", now_unix_ns, out)) return;
    *out = (sl__quota){.known = false, .remaining = 0, .reset = 0, .limit = -1};
}

int64_t sl__quota_pace(const sl__quota *q) {
    if (!q->known || q->reset <= 0) return 0;
    if (q->remaining == 0) return q->reset;
    bool near = q->limit >= 0 ? q->remaining <= q->limit / 10 : false;
    if (!near) return 0;
    /* remaining >= 1 here, and reset <= 10^9 s: no overflow */
    return (q->reset + q->remaining) / (q->remaining + 1);
}
