/* redis_script.c: the C side of the Redis store's decision script (see
 * redis_script.h and src/store/decide.lua): formats its EVALSHA / EVAL
 * commands straight into RESP, reads its replies back into decisions, and
 * says which parameters the script can decide exactly. Pure: no sockets. */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "sluice/error.h"
#include "store/redis_client.h"
#include "store/redis_script.h"
#include "util/units.h"

extern const char sl__decide_lua_text[], sl__decide_lua_text_sha1[];

#define NS_PER_US       INT64_C(1000)
#define SCRIPT_MAX      (INT64_C(1) << 52) /* counts and scaled sizes in the script */
#define SCRIPT_LOG_MAX  100000
#define INT_FIELD_BYTES 28 /* "$20\r\n" + 20 digits + "\r\n", with room */

const char *sl__redis_script_source(void) {
    return sl__decide_lua_text;
}

const char *sl__redis_script_sha(void) {
    return sl__decide_lua_text_sha1;
}

/* ---- formatting -------------------------------------------------------------- */

/* "<c><v>\r\n" */
static char *put_line(char *p, char c, int64_t v) {
    *p++ = c;
    p += sl__decimal_i64(p, v);
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* A bulk string "$<len>\r\n<bytes>\r\n". */
static char *put_bulk(char *p, const void *s, size_t n) {
    p = put_line(p, '$', (int64_t)n);
    if (n) memcpy(p, s, n);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* An integer argument as a bulk string. */
/* v as `bytes` bytes, little-endian. */
static char *put_le(char *p, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; k++) *p++ = (char)(v >> (8 * k));
    return p;
}

static char *put_int(char *p, int64_t v) {
    char tmp[SL__DECIMAL_MAX];
    return put_bulk(p, tmp, sl__decimal_i64(tmp, v));
}

/* ns -> us, rounded up: a period or an origin is never made shorter or
 * earlier (both would admit more than configured). */
static int64_t us_up(int64_t ns) {
    return sl__ceil_units(ns, NS_PER_US);
}

/* The script's flags for an item: the options, then delay_after (or a
 * token bucket's floor) from SL__SCRIPT_DELAY_AFTER up (below 2^52:
 * sl__redis_script_check; a floor is below the burst). */
static int64_t item_flags(const sl__script_item *it) {
    unsigned flags = it->params->flags & (SL_START_EMPTY | SL_COUNT_REJECTED | SL_STEP_REFILL);
    if (it->calendar_month) flags |= SL__SCRIPT_CALENDAR_MONTH;
    if (it->any_rate) flags |= SL__SCRIPT_ANY_RATE;
    int64_t high = it->params->algorithm == SL_TOKEN_BUCKET ? it->floor : it->params->delay_after;
    return (int64_t)flags + high * SL__SCRIPT_DELAY_AFTER;
}

/* A parameter set as the script reads it (decide.lua). */
typedef struct pset {
    int64_t
        v[SL__SCRIPT_ARGS_PER_SET - 1]; /* algorithm, limit, period_us, burst, flags, origin_us */
    uint32_t tag;
} pset;

static void pset_of(const sl__script_item *it, pset *s) {
    const sl_params *pa = it->params;
    int64_t flags = item_flags(it);
    s->v[0] = (int64_t)pa->algorithm;
    s->v[1] = pa->rate.limit;
    s->v[2] = us_up(pa->rate.period);
    s->v[3] = pa->burst;
    s->v[4] = flags;
    s->v[5] = flags & SL_START_EMPTY ? us_up(pa->origin) : 0;
    /* the state's tag: FNV-1a of what the state's meaning depends on (not
       the flags start-empty, count-rejected and step refill, nor the
       delay_after or the origin: a token bucket's tokens and a queue's tat
       mean the same under them) */
    uint32_t h = 2166136261u;
    int64_t parts[5] = {s->v[0], s->v[1], s->v[2], s->v[3], it->calendar_month};
    for (size_t k = 0; k < 5; k++) {
        uint64_t u = (uint64_t)parts[k];
        for (size_t b = 0; b < 8; b++) {
            h ^= (uint32_t)(u >> (8 * b)) & 0xffu;
            h *= 16777619u;
        }
    }
    s->tag = h;
}

/* The tag in lower-case hex, into p (at least 8 bytes); returns its length. */
static size_t tag_hex(char *p, uint32_t tag) {
    static const char hex[] = "0123456789abcdef";
    char tmp[8];
    size_t n = 0;
    do {
        tmp[n++] = hex[tag & 0xfu];
        tag >>= 4;
    } while (tag);
    for (size_t k = 0; k < n; k++) p[k] = tmp[n - 1 - k];
    return n;
}

#define SET_TABLE (2 * SL__SCRIPT_MAX_ITEMS) /* open addressing, at most half full */

/* Finds or adds item i's parameter set; returns its index (0-based). */
static size_t pset_index(pset *sets, size_t *nsets, uint16_t *table, const pset *s) {
    uint64_t h = s->tag;
    for (size_t k = 0; k < 6; k++) h = (h ^ (uint64_t)s->v[k]) * UINT64_C(0x100000001b3);
    size_t j = (size_t)(h ^ (h >> 29)) & (SET_TABLE - 1);
    for (;; j = (j + 1) & (SET_TABLE - 1)) {
        if (table[j] == 0) {
            sets[*nsets] = *s;
            table[j] = (uint16_t)(++*nsets);
            return *nsets - 1;
        }
        const pset *o = &sets[table[j] - 1];
        if (o->tag == s->tag && memcmp(o->v, s->v, sizeof s->v) == 0) return table[j] - 1u;
    }
}

void sl__redis_script_format(sl__buf *out, bool with_source, const sl__script_item *items, size_t n,
                             int64_t now_us) {
    sl__redis_script_format_as(out, with_source ? SL__SCRIPT_EVAL : SL__SCRIPT_EVALSHA, items, n,
                               now_us);
}

void sl__redis_script_format_as(sl__buf *out, sl__script_command how, const sl__script_item *items,
                                size_t n, int64_t now_us) {
    if (n > SL__SCRIPT_MAX_ITEMS) {
        out->failed = true;
        return;
    }
    pset *sets = malloc((n ? n : 1) * sizeof *sets);
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    uint16_t *table = calloc(SET_TABLE, sizeof *table);
    if (!sets || !idx || !table) {
        free(sets);
        free(idx);
        free(table);
        out->failed = true;
        return;
    }
    size_t nsets = 0;
    for (size_t i = 0; i < n; i++) {
        pset s;
        pset_of(&items[i], &s);
        idx[i] = (uint32_t)pset_index(sets, &nsets, table, &s);
    }
    free(table);

    bool module = how == SL__SCRIPT_MODULE || how == SL__SCRIPT_MODULE_ARGS;
    bool packed = how == SL__SCRIPT_MODULE;
    const char *body = how == SL__SCRIPT_EVAL ? sl__decide_lua_text : sl__decide_lua_text_sha1;
    size_t body_len = module ? 0 : strlen(body);
    size_t argc = (module ? 2 : 3) + n + 2 + nsets * SL__SCRIPT_ARGS_PER_SET +
                  (packed ? 1 : n * SL__SCRIPT_ARGS_PER_ITEM);
    size_t need =
        INT_FIELD_BYTES * (6 + nsets * SL__SCRIPT_ARGS_PER_SET + n * SL__SCRIPT_ARGS_PER_ITEM) +
        body_len;
    for (size_t i = 0; i < n; i++) need += INT_FIELD_BYTES + items[i].rkeylen;
    if (packed) need += INT_FIELD_BYTES + n * SL__SCRIPT_PACKED_ITEM;
    char *start = sl__buf_reserve(out, need);
    if (!start) {
        free(sets);
        free(idx);
        return;
    }

    char *p = put_line(start, '*', (int64_t)argc);
    if (module) {
        p = put_bulk(p, SL__SCRIPT_MODULE_COMMAND, sizeof SL__SCRIPT_MODULE_COMMAND - 1);
    } else {
        p = how == SL__SCRIPT_EVAL ? put_bulk(p, "EVAL", 4) : put_bulk(p, "EVALSHA", 7);
        p = put_bulk(p, body, body_len);
    }
    p = put_int(p, (int64_t)n);
    for (size_t i = 0; i < n; i++) p = put_bulk(p, items[i].rkey, items[i].rkeylen);
    p = put_int(p, now_us);
    p = put_int(p, (int64_t)nsets);
    for (size_t j = 0; j < nsets; j++) {
        for (size_t k = 0; k < SL__SCRIPT_ARGS_PER_SET - 1; k++) p = put_int(p, sets[j].v[k]);
        char tag[8];
        p = put_bulk(p, tag, tag_hex(tag, sets[j].tag));
    }
    if (packed) {
        p = put_line(p, '$', (int64_t)(n * SL__SCRIPT_PACKED_ITEM));
        for (size_t i = 0; i < n; i++) {
            p = put_le(p, idx[i] + 1u, 2);
            p = put_le(p, items[i].group, 2);
            p = put_le(p, (uint64_t)items[i].cost, 8);
        }
        *p++ = '\r';
        *p++ = '\n';
    } else {
        for (size_t i = 0; i < n; i++) {
            p = put_int(p, (int64_t)idx[i] + 1);
            p = put_int(p, items[i].cost);
            p = put_int(p, (int64_t)items[i].group);
        }
    }
    sl__buf_commit(out, (size_t)(p - start));
    free(sets);
    free(idx);
}

void sl__redis_key(sl__buf *out, const char *prefix, const char *policy, const void *key,
                   size_t keylen) {
    size_t plen = strlen(prefix), nlen = strlen(policy);
    char *start = sl__buf_reserve(out, plen + keylen + nlen + 3);
    if (!start) return;
    char *p = start;
    /* key bytes, no C string */
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
    memcpy(p, prefix, plen);
    p += plen;
    *p++ = '{';
    if (keylen) memcpy(p, key, keylen);
    p += keylen;
    *p++ = '}';
    *p++ = ':';
    /* key bytes, no C string */
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
    memcpy(p, policy, nlen);
    p += nlen;
    sl__buf_commit(out, (size_t)(p - start));
}

/* ---- what the script can do exactly ---------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int sl__redis_script_check(const sl_params *p, bool calendar_month) {
    int rc = sl_params_validate(p);
    if (rc) return rc;
    if (p->rate.period % NS_PER_US != 0) return SL_EINVAL;
    if (calendar_month && p->algorithm != SL_FIXED_WINDOW) return SL_EINVAL;
    int64_t period_us = p->rate.period / NS_PER_US;
    if (p->rate.limit > SCRIPT_MAX) return SL_EOVERFLOW;
    if (p->algorithm == SL_SLIDING_LOG && p->rate.limit > SCRIPT_LOG_MAX) return SL_EINVAL;
    if (sl_algorithm_is_bucket(p->algorithm)) {
        int64_t pu = period_us / gcd64(p->rate.limit, period_us);
        /* validated: limit and period >= 1, so pu >= 1 */
        // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
        if (p->burst > SCRIPT_MAX / pu) return SL_EOVERFLOW;
    }
    if (p->delay_after >= SCRIPT_MAX / SL__SCRIPT_DELAY_AFTER) return SL_EOVERFLOW; /* in flags */
    return SL_OK;
}

/* ---- replies ------------------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *msg, size_t msglen) {
    if (errlen) {
        if (msglen >= errlen) msglen = errlen - 1;
        memcpy(err, msg, msglen);
        err[msglen] = '\0';
    }
    return SL_EPARSE;
}

#define FAIL(text) fail(err, errlen, (text), sizeof(text) - 1)

/* us -> ns, bounded: a duration the script cannot mean is a bad reply. */
static bool to_ns(long long us, bool never_ok, int64_t *out) {
    if (never_ok && us == -1) {
        *out = -1;
        return true;
    }
    if (us < 0 || us > INT64_MAX / NS_PER_US) return false;
    *out = (int64_t)us * NS_PER_US;
    return true;
}

static uint64_t get_le64(const char *p) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | (unsigned char)p[k];
    return v;
}

int sl__redis_script_parse(const struct redisReply *r, sl__script_item *items, size_t n, char *err,
                           size_t errlen) {
    for (size_t i = 0; i < n; i++) items[i].decided = false;
    if (!r) return FAIL("no reply from Redis");
    if (r->type == REDIS_REPLY_ERROR) {
        if (!r->str) return FAIL("error reply from Redis");
        return fail(err, errlen, r->str, r->len);
    }
    bool packed = r->type == REDIS_REPLY_STRING;
    if (packed && r->len != n * SL__SCRIPT_PACKED_REPLY)
        return FAIL("module reply has the wrong length");
    if (!packed && r->type != REDIS_REPLY_ARRAY) return FAIL("script reply is not an array");
    if (!packed && r->elements != n * SL__SCRIPT_REPLY_FIELDS)
        return FAIL("script reply has the wrong number of fields");
    for (size_t i = 0; i < n; i++) {
        long long v[SL__SCRIPT_REPLY_FIELDS];
        for (size_t k = 0; k < SL__SCRIPT_REPLY_FIELDS; k++) {
            if (packed) {
                v[k] = (long long)get_le64(r->str + (i * SL__SCRIPT_REPLY_FIELDS + k) * 8);
                continue;
            }
            const redisReply *x = r->element[i * SL__SCRIPT_REPLY_FIELDS + k];
            if (!x || x->type != REDIS_REPLY_INTEGER)
                return FAIL("script reply field is not an integer");
            v[k] = x->integer;
        }
        sl_decision d;
        if (v[0] != 0 && v[0] != 1) return FAIL("script reply: allowed is not 0 or 1");
        d.allowed = v[0] == 1;
        if (v[1] < 1 || v[2] < 0) return FAIL("script reply: bad limit or remaining");
        d.limit = (int64_t)v[1];
        d.remaining = (int64_t)v[2];
        if (!to_ns(v[3], !d.allowed, &d.retry_after) || !to_ns(v[4], false, &d.reset_after) ||
            !to_ns(v[5], false, &d.delay) || (d.allowed && d.retry_after != 0))
            return FAIL("script reply: bad duration");
        items[i].decision = d;
    }
    for (size_t i = 0; i < n; i++) items[i].decided = true;
    return 0;
}

bool sl__redis_reply_ints(const redisReply *r, int status, long long *v, size_t n) {
    if (status != SL__REDIS_OK || !r || r->type != REDIS_REPLY_ARRAY || r->elements < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) return false;
        v[i] = r->element[i]->integer;
    }
    return true;
}

void sl__redis_small_script_head(sl__buf *b, int nargs, bool with_source, const char *source,
                                 const char *sha1) {
    sl__buf_printf(b, "*%d\r\n", nargs);
    if (with_source) {
        sl__buf_bulk(b, "EVAL", 4);
        sl__buf_bulk(b, source, strlen(source));
    } else {
        sl__buf_bulk(b, "EVALSHA", 7);
        sl__buf_bulk(b, sha1, 40);
    }
}

bool sl__redis_reply_noscript(const redisReply *r, int status) {
    return status == SL__REDIS_OK && r && r->type == REDIS_REPLY_ERROR &&
           strncmp(r->str, "NOSCRIPT", 8) == 0;
}
