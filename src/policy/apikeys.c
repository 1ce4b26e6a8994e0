/* apikeys.c: the API key table (apikeys.h). The file's text is kept as the
 * arena the keys point into (separators become NULs), and an open-addressing
 * index of 32-bit slots (linear probing, at most half full) finds a key with
 * one hash and, almost always, one comparison. The hash is seeded at random
 * per table: the keys looked up are chosen by clients. */
#include "policy/apikeys.h"

#include "sluice/error.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "util/file_read.h"

#define EMPTY UINT32_MAX

struct sl__apikeys {
    atomic_int refs;
    char *text; /* the arena: the file's bytes, separators replaced by NUL */
    sl__apikey *keys;
    uint64_t *hashes; /* of each key, to skip most comparisons */
    size_t n;
    uint32_t *slots; /* key index or EMPTY */
    size_t mask;     /* slots - 1 (a power of two minus one) */
    uint64_t seed;
};

typedef struct loader {
    sl__apikeys_error_fn err;
    void *err_ctx;
    size_t errors;
} loader;

__attribute__((format(printf, 3, 4))) static void report(loader *l, int line, const char *fmt,
                                                         ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    l->errors++;
    if (l->err) l->err(l->err_ctx, line, msg);
}

static bool key_byte(unsigned char c) {
    return c > 0x20 && c < 0x7f && c != '#';
}

static bool org_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

static const sl__apikey *find(const sl__apikeys *k, const char *key, size_t len, uint64_t h) {
    for (size_t i = h & k->mask;; i = (i + 1) & k->mask) {
        uint32_t s = k->slots[i];
        if (s == EMPTY) return NULL;
        const sl__apikey *e = &k->keys[s];
        if (k->hashes[s] == h && e->keylen == len && memcmp(e->key, key, len) == 0) return e;
    }
}

void sl__apikeys_retain(sl__apikeys *k) {
    if (k) atomic_fetch_add(&k->refs, 1);
}

void sl__apikeys_release(sl__apikeys *k) {
    if (!k || atomic_fetch_sub(&k->refs, 1) != 1) return;
    free(k->text);
    free(k->keys);
    free(k->hashes);
    free(k->slots);
    free(k);
}

/* Splits a line into at most 4 fields (the 4th only to report it). */
static size_t fields(char *s, size_t n, char **f, size_t *fl) {
    size_t nf = 0, i = 0;
    while (i < n && nf < 4) {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i == n || s[i] == '#') break; /* a comment runs to the end */
        f[nf] = s + i;
        while (i < n && s[i] != ' ' && s[i] != '\t') i++;
        fl[nf] = (size_t)(s + i - f[nf]);
        nf++;
    }
    return nf;
}

/* A line's fields (f, fl: nf of them, 1 to 3; s is the line) checked: the
 * key's length and bytes, the tier (by `tier`: *t, or -1 for none or "-"),
 * the organisation. Each fault is reported at `line`; returns whether there
 * was none. */
static bool check_line(loader *l, int line, const char *s, char **f, const size_t *fl, size_t nf,
                       sl__apikeys_tier_fn tier, void *tier_ctx, int16_t *t) {
    bool ok = true;
    if (fl[0] > SL__APIKEY_MAX) {
        report(l, line, "the key is longer than %d bytes", SL__APIKEY_MAX);
        ok = false;
    }
    for (size_t i = 0; ok && i < fl[0]; i++) {
        if (!key_byte((unsigned char)f[0][i])) {
            report(l, line, "the key has a byte that is not printable ASCII at column %zu",
                   (size_t)(f[0] - s) + i + 1);
            ok = false;
        }
    }
    *t = -1;
    if (nf > 1 && !(fl[1] == 1 && f[1][0] == '-')) {
        const char *names = NULL;
        int ti = tier ? tier(tier_ctx, f[1], fl[1], &names) : -1;
        if (ti < 0) {
            char q[48];
            snprintf(q, sizeof q, "%.*s", fl[1] > 40 ? 40 : (int)fl[1], f[1]);
            for (char *c = q; *c; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
            if (names && *names)
                report(l, line, "unknown tier \"%s\" (declared: %s)", q, names);
            else
                report(l, line, "unknown tier \"%s\" (declare tiers under tiers: first)", q);
            ok = false;
        } else {
            *t = (int16_t)ti;
        }
    }
    if (nf > 2) {
        bool good = fl[2] <= SL__APIKEY_ORG_MAX;
        for (size_t i = 0; good && i < fl[2]; i++) good = org_byte((unsigned char)f[2][i]);
        if (!good) {
            report(l, line, "the organisation must be 1 to %d of A-Z a-z 0-9 _ . -",
                   SL__APIKEY_ORG_MAX);
            ok = false;
        }
    }
    return ok;
}

/* Appends the checked key of fields f, fl (nf of them) with tier t to k,
 * and its line to *lines (both grown by doubling *cap). Returns 0, or
 * SL_ENOMEM (k->keys and *lines stay valid to free). */
static int add_key(sl__apikeys *k, size_t *cap, uint32_t **lines, char **f, const size_t *fl,
                   size_t nf, int16_t t, int line) {
    if (k->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        sl__apikey *nk = realloc(k->keys, *cap * sizeof *nk);
        uint32_t *nl2 = nk ? realloc(*lines, *cap * sizeof *nl2) : NULL;
        if (nk) k->keys = nk;
        if (!nk || !nl2) return SL_ENOMEM;
        *lines = nl2;
    }
    /* NUL-terminate the fields in place (the byte after each is a
     * separator, the line end, or the spare byte after the text). */
    f[0][fl[0]] = '\0';
    sl__apikey *e = &k->keys[k->n];
    *e = (sl__apikey){.key = f[0], .keylen = (uint16_t)fl[0], .tier = t};
    if (nf > 2) {
        f[2][fl[2]] = '\0';
        e->org = f[2];
        e->orglen = (uint16_t)fl[2];
    }
    /* lines grows with keys (cap == n at the first) */
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
    (*lines)[k->n] = (uint32_t)line;
    k->n++;
    return 0;
}

/* The index of k's keys (slots, hashes, a new seed); a key seen before is
 * reported at its line (lines: one per key). Returns 0, or SL_ENOMEM
 * (reported). */
static int index_keys(sl__apikeys *k, const uint32_t *lines, loader *l) {
    size_t slots = 64;
    while (slots < 2 * k->n) slots *= 2;
    k->slots = malloc(slots * sizeof *k->slots);
    k->hashes = malloc((k->n ? k->n : 1) * sizeof *k->hashes);
    if (!k->slots || !k->hashes) {
        report(l, 0, "out of memory");
        return SL_ENOMEM;
    }
    memset(k->slots, 0xff, slots * sizeof *k->slots);
    k->mask = slots - 1;
    k->seed = sl__random_seed();
    for (size_t i = 0; i < k->n; i++) {
        sl__apikey *e = &k->keys[i];
        uint64_t h = sl__hash(e->key, e->keylen, k->seed);
        k->hashes[i] = h;
        const sl__apikey *dup = find(k, e->key, e->keylen, h);
        if (dup) {
            /* lines has an entry per key */
            // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
            report(l, (int)lines[i], "duplicate key (first at line %u)",
                   (unsigned)lines[dup - k->keys]);
            continue;
        }
        size_t j = h & k->mask;
        while (k->slots[j] != EMPTY) j = (j + 1) & k->mask;
        k->slots[j] = (uint32_t)i;
    }
    return 0;
}

/* Takes ownership of `text` (malloc'd, len bytes plus one spare byte). */
static int build(char *text, size_t len, sl__apikeys_tier_fn tier, void *tier_ctx, loader *l,
                 sl__apikeys **out) {
    sl__apikeys *k = calloc(1, sizeof *k);
    if (!k) {
        free(text);
        report(l, 0, "out of memory");
        return SL_ENOMEM;
    }
    atomic_init(&k->refs, 1);
    k->text = text;
    size_t cap = 0;
    int line = 0;
    uint32_t *lines = NULL; /* of each key, for duplicate messages */
    for (size_t pos = 0; pos < len;) {
        line++;
        char *s = text + pos;
        char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + 1;
        if (n && s[n - 1] == '\r') n--;
        char *f[4];
        size_t fl[4];
        size_t nf = fields(s, n, f, fl);
        if (nf == 0) continue;
        if (nf > 3) {
            report(l, line, "too many fields (expected KEY [TIER [ORG]])");
            continue;
        }
        int16_t t;
        if (!check_line(l, line, s, f, fl, nf, tier, tier_ctx, &t)) continue;
        if (k->n == SL__APIKEYS_MAX_KEYS) {
            report(l, line, "more than %u keys", SL__APIKEYS_MAX_KEYS);
            break;
        }
        if (add_key(k, &cap, &lines, f, fl, nf, t, line) != 0) {
            report(l, 0, "out of memory");
            free(lines);
            sl__apikeys_release(k);
            return SL_EINVAL;
        }
    }
    if (l->errors || index_keys(k, lines, l) != 0) {
        free(lines);
        sl__apikeys_release(k);
        return SL_EINVAL;
    }
    free(lines);
    if (l->errors) {
        sl__apikeys_release(k);
        return SL_EINVAL;
    }
    *out = k;
    return 0;
}

int sl__apikeys_parse(const char *text, size_t len, sl__apikeys_tier_fn tier, void *tier_ctx,
                      sl__apikeys_error_fn err, void *err_ctx, sl__apikeys **out) {
    loader l = {err, err_ctx, 0};
    *out = NULL;
    if (len > SL__APIKEYS_MAX_BYTES) {
        report(&l, 0, "larger than %u bytes: refused", SL__APIKEYS_MAX_BYTES);
        return SL_EINVAL;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        report(&l, 0, "out of memory");
        return SL_ENOMEM;
    }
    if (len) memcpy(copy, text, len);
    copy[len] = '\0';
    return build(copy, len, tier, tier_ctx, &l, out);
}

int sl__apikeys_load(const char *path, sl__apikeys_tier_fn tier, void *tier_ctx,
                     sl__apikeys_error_fn err, void *err_ctx, sl__apikeys **out) {
    loader l = {err, err_ctx, 0};
    *out = NULL;
    /* SL__FILE_REGULAR: a FIFO named by mistake must not hang a reload. */
    char *buf, msg[160];
    size_t len;
    int err_no = 0;
    int rc = sl__file_read(path, SL__APIKEYS_MAX_BYTES, SL__FILE_REGULAR, &buf, &len, &err_no);
    if (rc != SL__FILE_OK) {
        report(&l, 0, "%s", sl__file_strerror(rc, err_no, SL__APIKEYS_MAX_BYTES, msg, sizeof msg));
        return SL_EINVAL;
    }
    return build(buf, len, tier, tier_ctx, &l, out);
}

const sl__apikey *sl__apikeys_find(const sl__apikeys *k, const char *key, size_t len) {
    if (!k || !key || len == 0 || len > SL__APIKEY_MAX || k->n == 0) return NULL;
    return find(k, key, len, sl__hash(key, len, k->seed));
}

size_t sl__apikeys_count(const sl__apikeys *k) {
    return k ? k->n : 0;
}
