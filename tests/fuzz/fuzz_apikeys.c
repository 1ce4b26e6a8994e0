/* fuzz_apikeys.c: libFuzzer target for the API key file parser
 * (src/policy/apikeys.c), whose input an operator writes but whose keys are
 * secrets and whose lookups are chosen by clients. Arbitrary bytes as a key
 * file, with the tiers "free", "pro" and "team" declared. Nothing may crash,
 * read out of bounds or leak, and:
 *
 * - a file that parses holds exactly the keys of its lines: every KEY is
 *   found, with its TIER and ORG, and a few strings that are not keys are
 *   not found;
 * - a file that does not parse reports at least one problem, each on a line
 *   of the file (or line 0, the file itself), and no message carries a key
 *   of 12 bytes or more of its own line (keys are secrets; the message may
 *   quote the TIER field, so a key repeated there is not counted).
 *
 * The seeds are in tests/fuzz/corpus/apikeys/. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/apikeys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tiers[] = {"free", "pro", "team"};

static int tier_of(void *ctx, const char *name, size_t len, const char **names) {
    (void)ctx;
    for (int k = 0; k < 3; k++)
        if (strlen(tiers[k]) == len && memcmp(tiers[k], name, len) == 0) return k;
    *names = "free, pro, team";
    return -1;
}

/* One line of the input, split as the format says (docs/identity.md). */
typedef struct line {
    const char *f[4];
    size_t fl[4];
    size_t nf;
} line;

static void split(const char *s, size_t n, line *out) {
    if (n && s[n - 1] == '\r') n--;
    size_t i = 0;
    out->nf = 0;
    while (i < n && out->nf < 4) {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i == n || s[i] == '#') break;
        out->f[out->nf] = s + i;
        while (i < n && s[i] != ' ' && s[i] != '\t') i++;
        out->fl[out->nf] = (size_t)(s + i - out->f[out->nf]);
        out->nf++;
    }
}

/* Calls fn(ctx, lineno, line) for every line of the text. */
static size_t each_line(const char *text, size_t len, void (*fn)(void *, size_t, const line *),
                        void *ctx) {
    size_t lineno = 0;
    for (size_t pos = 0; pos < len;) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + 1;
        lineno++;
        line l;
        split(s, n, &l);
        if (fn) fn(ctx, lineno, &l);
    }
    return lineno;
}

typedef struct run {
    const char *text;
    size_t len, lines;
    const sl__apikeys *keys;
    size_t found, errors;
    int reports;
} run;

static void check_found(void *ctx, size_t lineno, const line *l) {
    (void)lineno;
    run *r = ctx;
    if (l->nf == 0) return;
    if (l->nf > 3) abort(); /* the parser refuses such a file */
    const sl__apikey *k = sl__apikeys_find(r->keys, l->f[0], l->fl[0]);
    if (!k || k->keylen != l->fl[0] || memcmp(k->key, l->f[0], l->fl[0]) != 0) abort();
    if (k->key[k->keylen] != '\0') abort();
    int tier = -1;
    if (l->nf > 1 && !(l->fl[1] == 1 && l->f[1][0] == '-')) {
        const char *names;
        tier = tier_of(NULL, l->f[1], l->fl[1], &names);
    }
    if (k->tier != tier) abort();
    if (l->nf > 2) {
        if (!k->org || k->orglen != l->fl[2] || memcmp(k->org, l->f[2], l->fl[2]) != 0) abort();
        if (k->org[k->orglen] != '\0') abort();
    } else if (k->org) {
        abort();
    }
    r->found++;
}

static run *current;

static void check_secret(void *ctx, size_t lineno, const line *l) {
    const char *msg = ctx;
    if (lineno != (size_t)current->reports || l->nf == 0 || l->fl[0] < 12) return;
    char key[SL__APIKEY_MAX + 1];
    size_t n = l->fl[0] > SL__APIKEY_MAX ? SL__APIKEY_MAX : l->fl[0];
    memcpy(key, l->f[0], n);
    key[n] = '\0';
    if (strlen(key) < 12) return; /* a NUL inside: not comparable as text */
    /* the TIER field is quoted as apikeys.c quotes it (40 bytes at most, up to
     * a NUL, other bytes than printable ASCII as '?'): what is in that quote
     * is the operator's own text, not a leak, so the key is looked for on
     * either side of it (a key of '?'s matched a quote of 0xff bytes) */
    char q[41] = "";
    if (l->nf > 1) {
        size_t tl = l->fl[1] > 40 ? 40 : l->fl[1], i = 0;
        for (; i < tl && l->f[1][i]; i++) {
            unsigned char c = (unsigned char)l->f[1][i];
            q[i] = (char)(c < 0x20 || c >= 0x7f ? '?' : c);
        }
        q[i] = '\0';
    }
    const char *at = q[0] ? strstr(msg, q) : NULL;
    if (!at) {
        if (strstr(msg, key)) abort();
        return;
    }
    size_t before = (size_t)(at - msg);
    char head[256];
    if (before >= sizeof head) abort(); /* messages are under 200 bytes */
    memcpy(head, msg, before);
    head[before] = '\0';
    if (strstr(head, key) || strstr(at + strlen(q), key)) abort();
}

static void on_error(void *ctx, int lineno, const char *message) {
    run *r = ctx;
    r->errors++;
    if (lineno < 0 || (size_t)lineno > r->lines || !message || !*message) abort();
    if (strlen(message) >= 200) abort();
    /* find the line and check that its key is not in the message */
    current = r;
    r->reports = lineno;
    each_line(r->text, r->len, check_secret, (void *)message);
    r->reports = -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* an exact-size copy: the parser must honour len */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    run r = {.text = text, .len = size, .reports = -1};
    r.lines = each_line(text, size, NULL, NULL);
    sl__apikeys *keys = NULL;
    int rc = sl__apikeys_parse(text, size, tier_of, NULL, on_error, &r, &keys);
    if (rc == 0) {
        if (!keys) abort();
        r.keys = keys;
        each_line(text, size, check_found, &r);
        if (r.found != sl__apikeys_count(keys)) abort();
        /* not keys: the empty string, a too-long one, a key plus a byte */
        static const char longkey[SL__APIKEY_MAX + 2] = {0};
        if (sl__apikeys_find(keys, "", 0)) abort();
        if (sl__apikeys_find(keys, longkey, sizeof longkey - 1)) abort();
        if (sl__apikeys_find(keys, "#", 1)) abort();
        sl__apikeys_retain(keys);
        sl__apikeys_release(keys);
        sl__apikeys_release(keys);
    } else if (keys || r.errors == 0) {
        abort();
    }
    free(text);
    return 0;
}
