/* module.c: sluice-redis.so, a Redis module with one command,
 *   SLUICE.DECIDE <n> <key_1..key_n> <now_us> <m> <7 x m set args> <3 x n item args>
 *   SLUICE.DECIDE <n> <key_1..key_n> <now_us> <m> <7 x m set args> <packed items>
 * The first form: decide.lua's arguments after its sha, its reply, its
 * error texts (without the " script: <sha>, on @user_script:..." that
 * Redis appends to a script's), its state strings and TTL rule, decided
 * natively (decide_us.c): a fleet where some sluiced call the script and
 * others the module decides exactly the same. The packed form (what
 * sluiced sends, src/store/redis_script.h): the items in one argument of
 * PACKED_ITEM bytes each, the reply one string of PACKED_REPLY bytes per
 * item; told apart by the argument count (2 + 7m + 1 against 2 + 7m + 3n).
 *
 * Differences from the script, all on input sluiced never sends: numbers
 * are plain decimal integers (the script's tonumber also takes "1e3",
 * " 5", "0x10", which are errors here, reported with the same text as any
 * other bad value); at most SL__MOD_MAX_ITEMS (512, SL__SCRIPT_MAX_ITEMS)
 * items; a sliding log element that is no decimal reads as 0.
 *
 * Redis: keys through the getkeys-api (positions 2..n+1: Cluster routes
 * and checks slots; COMMAND GETKEYS), flags "write deny-oom". One scratch
 * block and one clock read per call. Each key is opened once
 * (RedisModule_OpenKey), its string state read in place (StringDMA), a
 * changed state overwritten in place when its length is the same (else
 * StringSet) and given an absolute expiry (SetAbsExpire: the script's PX
 * in ms from Redis's clock). The effects are replicated, never the
 * command (a replica or an AOF replay deciding again at its own time
 * would diverge): the string states as one EVAL per call, a sliding log's
 * as DEL, LTRIM, RPUSH, PEXPIREAT, nothing while nothing listens
 * (replicate.c). Arguments are all checked before any state is read: an
 * error changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redis_module/decide_us.h"
#include "redis_module/module_api.h"
#include "redis_module/replicate.h"
#include "util/units.h"

#define SL__MOD_MAX_ITEMS  512 /* SL__SCRIPT_MAX_ITEMS */
#define SL__MOD_MAX_GROUPS 512 /* groups 2r + g, r < 256 */
#define SL__MOD_CMAX       INT64_MAX
#define PUSH_CHUNK         1000 /* RPUSH arguments per replicated command */
#define PACKED_ITEM        12   /* SL__SCRIPT_PACKED_ITEM: set u16, group u16, cost u64 */
#define PACKED_REPLY       48   /* SL__SCRIPT_PACKED_REPLY: 6 x int64 */

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

/* One call's working set: every array in one scratch block, allocated once
 * per call (call_alloc) and freed at its end; nothing is allocated per
 * item (a sliding log's runs excepted). */
typedef struct call {
    RedisModuleCtx *ctx;
    RedisModuleString **argv;
    int n;       /* items = keys */
    int nsets;   /* parameter sets */
    int64_t now; /* us */
    sl__mod_set *sets;
    int *ips;      /* item -> set (0-based) */
    int64_t *cost; /* per item */
    int *group;    /* per item */
    int *kidx;     /* item -> distinct key index */
    int nkeys;     /* distinct keys */
    int nopen;     /* keys opened and their states read: keys[], st[] below this */
    int *first;    /* distinct key -> its first item */
    RedisModuleKey **keys;
    sl__mod_state *st; /* per distinct key */
    int64_t *out;      /* 6 per item */
    bool oom;
    bool packed;          /* items in one argument, the reply one string */
    char *reply;          /* packed: the reply's bytes */
    void *scratch;        /* the one block all arrays point into */
    int *table;           /* distinct keys by hash: open addressing, at most half full */
    size_t tmask;         /* the table's size - 1 (a power of two >= 2n) */
    int *cnt, *fill;      /* per group: its first item in list; filling */
    bool *seen;           /* per request */
    int *list, *order;    /* items by group; requests in order */
    int *saved_k;         /* run_group: the keys whose states are saved */
    sl__mod_state *saved; /* and those states */
    sl__mod_effects fx;   /* what is replicated */
    RedisModuleString **fx_keys;
    char *fx_buf;
} call;

/* ---- argument parsing ---- */

/* A plain decimal integer ("-"? digits, no more than fits in int64). */
static bool parse_int(const RedisModuleString *s, int64_t *out) {
    size_t len;
    const char *p = RedisModule_StringPtrLen(s, &len);
    const char *end = p + len;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    if (p == end || end - p > 19) return false;
    uint64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v > (uint64_t)INT64_MAX) return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* Lua 5.1's %q of s into out (bounded, NUL-terminated). */
static void quote(const RedisModuleString *s, char *out, size_t size) {
    size_t len, o = 0;
    const char *p = RedisModule_StringPtrLen(s, &len);
    if (size < 8) return;
    out[o++] = '"';
    for (size_t k = 0; k < len && o + 6 < size; k++) {
        char c = p[k];
        if (c == '"' || c == '\\' || c == '\n') {
            out[o++] = '\\';
            out[o++] = c;
        } else if (c == '\r') {
            out[o++] = '\\';
            out[o++] = 'r';
        } else if (c == '\0') {
            memcpy(out + o, "\\000", 4);
            o += 4;
        } else {
            out[o++] = c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
}

static int reply_error(RedisModuleCtx *ctx, const char *msg) {
    char buf[600];
    snprintf(buf, sizeof buf, "ERR sluice: %s", msg);
    return RedisModule_ReplyWithError(ctx, buf);
}

/* decide.lua's int(i, lo, hi, what, whose): true with the value, or false
 * with the error text in err; whose is "<kind> <index>" (formatted only
 * for an error: a snprintf per item costs as much as its decision). */
static bool arg_int(const RedisModuleString *s, int64_t lo, int64_t hi, const char *what,
                    const char *kind, int index, int64_t *v, char *err, size_t errlen) {
    if (parse_int(s, v) && *v >= lo && *v <= hi) return true;
    char q[300];
    quote(s, q, sizeof q);
    if (kind)
        snprintf(err, errlen, "%s %d: bad %s %s", kind, index, what, q);
    else
        snprintf(err, errlen, "call: bad %s %s", what, q);
    return false;
}

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)p[k]) * UINT64_C(1099511628211);
    return h;
}

/* The next n x size bytes of a block at *off (16-byte aligned). */
static void *carve(char *base, size_t *off, size_t n, size_t size) {
    size_t at = (*off + 15) & ~(size_t)15;
    *off = at + n * size;
    return base ? base + at : NULL;
}

/* Lays out (base NULL: measures) every array of a call of n items and m
 * sets; the first `*zeroed` bytes must start zero. Returns the size. */
static size_t call_layout(call *c, char *base, int n, int m, size_t *zeroed) {
    size_t off = 0, un = (size_t)n, tsize = 16;
    while (tsize < 2 * un) tsize *= 2;
    c->tmask = tsize - 1;
    c->table = carve(base, &off, tsize, sizeof *c->table);
    c->cnt = carve(base, &off, SL__MOD_MAX_GROUPS + 1, sizeof *c->cnt);
    c->seen = carve(base, &off, SL__MOD_MAX_GROUPS / 2, sizeof *c->seen);
    *zeroed = off;
    /* an array of pointers */
    // NOLINTNEXTLINE(bugprone-sizeof-expression)
    c->keys = carve(base, &off, un, sizeof *c->keys); /* set as opened (nopen) */
    c->st = carve(base, &off, un, sizeof *c->st);
    c->sets = carve(base, &off, (size_t)m, sizeof *c->sets);
    c->fill = carve(base, &off, SL__MOD_MAX_GROUPS, sizeof *c->fill);
    c->ips = carve(base, &off, un, sizeof *c->ips);
    c->cost = carve(base, &off, un, sizeof *c->cost);
    c->group = carve(base, &off, un, sizeof *c->group);
    c->kidx = carve(base, &off, un, sizeof *c->kidx);
    c->first = carve(base, &off, un, sizeof *c->first);
    c->list = carve(base, &off, un, sizeof *c->list);
    c->order = carve(base, &off, un, sizeof *c->order);
    c->saved_k = carve(base, &off, un, sizeof *c->saved_k);
    c->saved = carve(base, &off, un, sizeof *c->saved);
    c->out = carve(base, &off, 6 * un, sizeof *c->out);
    /* an array of pointers */
    // NOLINTNEXTLINE(bugprone-sizeof-expression)
    c->fx_keys = carve(base, &off, un, sizeof *c->fx_keys);
    c->fx_buf = carve(base, &off, un, SL__MOD_EFFECT_MAX);
    c->reply = carve(base, &off, un, PACKED_REPLY);
    return off + 1;
}

/* The scratch block for n items and m sets; false: out of memory. */
static bool call_alloc(call *c, int n, int m) {
    size_t zeroed;
    size_t size = call_layout(c, NULL, n, m, &zeroed);
    c->scratch = RedisModule_Alloc(size);
    if (!c->scratch) return false;
    memset(c->scratch, 0, zeroed);
    call_layout(c, c->scratch, n, m, &zeroed);
    return true;
}

/* ---- states ---- */

/* Element j of a stored sliding log (a decimal time in us). */
static int64_t list_at(void *list, int64_t j) {
    RedisModuleString *e = RedisModule_ListGet((RedisModuleKey *)list, (long)j);
    if (!e) return 0;
    int64_t v;
    if (!parse_int(e, &v)) v = 0;
    RedisModule_FreeString(NULL, e);
    return v;
}

static void read_state(call *c, int k) {
    int i = c->first[k];
    const sl__mod_set *ps = &c->sets[c->ips[i]];
    RedisModuleKey *key = c->keys[k];
    sl__mod_state *s = &c->st[k];
    int type = RedisModule_KeyType(key);
    if (ps->alg == SL__MOD_SLOG) {
        memset(s, 0, sizeof *s);
        s->is_log = true;
        s->log.at = list_at;
        s->log.list = key;
        if (type == REDISMODULE_KEYTYPE_LIST) {
            s->log.blen = (int64_t)RedisModule_ValueLength(key);
            s->log.exists = s->log.blen > 0;
        } else if (type != REDISMODULE_KEYTYPE_EMPTY) {
            s->log.exists = s->log.wrong = true; /* another type: a fresh log replaces it */
        }
        if (s->log.blen == 0 && ps->empty) {
            s->log.has_vt = true;
            s->log.vt = ps->origin;
            s->log.blen = ps->N;
        }
        return;
    }
    s->log.runs = NULL; /* not a log: nothing to free */
    if (type == REDISMODULE_KEYTYPE_STRING) {
        size_t len;
        const char *v = RedisModule_StringDMA(key, &len, REDISMODULE_READ);
        if (v && sl__mod_parse(ps, v, len, s)) return;
    }
    sl__mod_init(ps, s, c->now);
}

/* ---- groups (decide.lua's deny, look, run_one, run_group) ---- */

static void decide_item(call *c, int i, int64_t cost, sl__mod_mode mode, bool cr, int64_t *o) {
    if (!sl__mod_decide(&c->sets[c->ips[i]], &c->st[c->kidx[i]], cost, mode, cr, c->now, o))
        c->oom = true;
}

static void deny(call *c, int i) {
    int64_t *o = &c->out[6 * i];
    o[0] = 0;
    o[1] = c->sets[c->ips[i]].limit;
    o[2] = 0;
    o[3] = -1;
    o[4] = 0;
    o[5] = 0;
}

/* What item i's limit says at its cost with nothing charged. */
static void look(call *c, int i) {
    const sl__mod_set *ps = &c->sets[c->ips[i]];
    int64_t *o = &c->out[6 * i];
    decide_item(c, i, c->cost[i], SL__MOD_PEEK, ps->cr, o);
    if (o[0] == 1) o[2] += c->cost[i];
}

/* Decides item i alone; true if it passed. */
static bool run_one(call *c, int i) {
    const sl__mod_set *ps = &c->sets[c->ips[i]];
    int64_t *o = &c->out[6 * i];
    if (c->cost[i] > ps->maxcost) {
        deny(c, i);
        return false;
    }
    decide_item(c, i, c->cost[i], SL__MOD_APPLY, false, o);
    if (o[0] == 1) return true;
    if (ps->cr) decide_item(c, i, c->cost[i], SL__MOD_CHARGE, true, o);
    return false;
}

/* Decides the items list[0..nl) as one all-or-nothing group; true if it
 * passed (and was charged). */
static bool run_group(call *c, const int *list, int nl) {
    if (nl == 0) return true;
    if (nl == 1) return run_one(c, list[0]);
    bool impossible = false;
    for (int m = 0; m < nl; m++)
        if (c->cost[list[m]] > c->sets[c->ips[list[m]]].maxcost) impossible = true;
    if (impossible) {
        for (int m = 0; m < nl; m++) {
            int i = list[m];
            if (c->cost[i] > c->sets[c->ips[i]].maxcost)
                deny(c, i);
            else
                look(c, i);
        }
        return false;
    }
    /* the states as they were, to undo a refused group */
    int *saved_k = c->saved_k;
    sl__mod_state *saved = c->saved;
    int ns = 0;
    for (int m = 0; m < nl; m++) {
        int k = c->kidx[list[m]];
        bool have = false;
        for (int x = 0; x < ns; x++) have |= saved_k[x] == k;
        if (have) continue;
        if (!sl__mod_state_copy(&saved[ns], &c->st[k])) {
            c->oom = true;
            continue;
        }
        saved_k[ns++] = k;
    }
    int refused = -1;
    for (int m = 0; m < nl; m++) {
        int i = list[m];
        int64_t *o = &c->out[6 * i];
        decide_item(c, i, c->cost[i], SL__MOD_APPLY, false, o);
        if (o[0] == 0) {
            refused = i;
            break;
        }
    }
    if (refused < 0) {
        for (int x = 0; x < ns; x++) sl__mod_state_free(&saved[x]);
        return true;
    }
    for (int x = 0; x < ns; x++) {
        sl__mod_state_free(&c->st[saved_k[x]]);
        c->st[saved_k[x]] = saved[x];
    }
    for (int m = 0; m < nl; m++)
        if (list[m] != refused) look(c, list[m]);
    for (int m = 0; m < nl; m++) {
        int i = list[m];
        if (c->sets[c->ips[i]].cr)
            decide_item(c, i, c->cost[i], SL__MOD_CHARGE, true, &c->out[6 * i]);
    }
    return false;
}

/* The requests, in the order of their first items: each its enforced group
 * (2r), then, if that passed, its shadow group (2r + 1), else only a look at
 * the shadow items. */
static void run_requests(call *c) {
    int *cnt = c->cnt, *list = c->list, *order = c->order;
    bool *seen = c->seen;
    int nreq = 0;
    for (int i = 0; i < c->n; i++) {
        cnt[c->group[i] + 1]++;
        int r = c->group[i] / 2;
        if (!seen[r]) {
            seen[r] = true;
            order[nreq++] = r;
        }
    }
    for (int g = 0; g < SL__MOD_MAX_GROUPS; g++) cnt[g + 1] += cnt[g]; /* cnt[g]: start of g */
    int *fill = c->fill;
    memcpy(fill, cnt, SL__MOD_MAX_GROUPS * sizeof *fill);
    for (int i = 0; i < c->n; i++) list[fill[c->group[i]]++] = i;
    for (int q = 0; q < nreq; q++) {
        int g0 = 2 * order[q], g1 = g0 + 1;
        int *l0 = list + cnt[g0], n0 = cnt[g0 + 1] - cnt[g0];
        int *l1 = list + cnt[g1], n1 = cnt[g1 + 1] - cnt[g1];
        if (run_group(c, l0, n0)) {
            if (n1) run_group(c, l1, n1);
        } else {
            for (int x = 0; x < n1; x++)
                decide_item(c, l1[x], 0, SL__MOD_PEEK, false, &c->out[6 * l1[x]]);
        }
    }
}

/* ---- write back what changed, with its TTL ---- */

static void del_key(call *c, int k) {
    RedisModule_DeleteKey(c->keys[k]);
    c->fx.changed++;
    if (c->fx.listen) RedisModule_Replicate(c->ctx, "DEL", "s", c->argv[2 + c->first[k]]);
}

/* Appends count entries t to key k's list (RPUSH, in chunks). */
static void push(call *c, int k, int64_t t, int64_t count) {
    char buf[SL__DECIMAL_MAX];
    size_t len = sl__decimal_i64(buf, t);
    RedisModuleString *v = RedisModule_CreateString(c->ctx, buf, len);
    RedisModuleString **args =
        // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
        RedisModule_Alloc((size_t)(count < PUSH_CHUNK ? count : PUSH_CHUNK) * sizeof *args);
    if (!v || !args) {
        c->oom = true;
        if (v) RedisModule_FreeString(c->ctx, v);
        RedisModule_Free(args);
        return;
    }
    c->fx.changed++;
    while (count > 0) {
        int64_t m = count < PUSH_CHUNK ? count : PUSH_CHUNK;
        for (int64_t x = 0; x < m; x++) {
            RedisModule_ListPush(c->keys[k], REDISMODULE_LIST_TAIL, v);
            args[x] = v;
        }
        if (c->fx.listen)
            RedisModule_Replicate(c->ctx, "RPUSH", "sv", c->argv[2 + c->first[k]], args, (size_t)m);
        count -= m;
    }
    RedisModule_Free(args);
    RedisModule_FreeString(c->ctx, v);
}

/* Overwrites a string value of the same length in place (StringDMA for
 * writing: no key lookup, no allocation; the first write of a value Redis
 * keeps embedded or as an integer makes it a plain string of the same size,
 * once). False when the key holds no string of that length: the caller
 * sets a new value. */
static bool write_in_place(RedisModuleKey *key, const char *v, size_t len) {
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_STRING ||
        RedisModule_ValueLength(key) != len)
        return false;
    size_t cur;
    char *p = RedisModule_StringDMA(key, &cur, REDISMODULE_WRITE);
    if (!p || cur != len) return false;
    memcpy(p, v, len);
    return true;
}

/* A string state: in place or set, its expiry at `at` (ms), recorded for
 * the one replicated EVAL. */
static void write_string(call *c, int k, long long at) {
    const sl__mod_set *ps = &c->sets[c->ips[c->first[k]]];
    char buf[SL__MOD_STATE_MAX];
    size_t len = sl__mod_format(ps, &c->st[k], buf);
    if (!write_in_place(c->keys[k], buf, len)) {
        RedisModuleString *v = RedisModule_CreateString(c->ctx, buf, len);
        if (!v) {
            c->oom = true;
            return;
        }
        RedisModule_StringSet(c->keys[k], v);
        RedisModule_FreeString(c->ctx, v);
    }
    RedisModule_SetAbsExpire(c->keys[k], at);
    sl__mod_effects_set(&c->fx, c->argv[2 + c->first[k]], buf, len, at);
}

/* A sliding log: its list trimmed and appended to, its expiry at `at`. */
static void write_log(call *c, int k, int64_t ttl, long long at) {
    sl__mod_log *l = &c->st[k].log;
    RedisModuleString *name = c->argv[2 + c->first[k]];
    if (ttl <= 0 || sl__mod_log_len(l) == 0) {
        if (l->exists) del_key(c, k);
        return;
    }
    if (l->has_vt || l->wrong) {
        if (l->exists) del_key(c, k);
        if (l->has_vt && l->blen > l->drop) push(c, k, l->vt, l->blen - l->drop);
    } else if (l->drop > 0) {
        for (int64_t x = 0; x < l->drop; x++) {
            RedisModuleString *e = RedisModule_ListPop(c->keys[k], REDISMODULE_LIST_HEAD);
            if (e) RedisModule_FreeString(NULL, e);
        }
        c->fx.changed++;
        if (c->fx.listen)
            RedisModule_Replicate(c->ctx, "LTRIM", "sll", name, (long long)l->drop, -1LL);
    }
    for (size_t r = l->rhead; r < l->rlen; r++) push(c, k, l->runs[r].t, l->runs[r].c);
    RedisModule_SetAbsExpire(c->keys[k], at);
    if (c->fx.listen) RedisModule_Replicate(c->ctx, "PEXPIREAT", "sl", name, at);
}

/* Every changed state with its expiry: base_ms + the TTL rounded up. */
static void write_back(call *c, long long base_ms) {
    for (int k = 0; k < c->nkeys; k++) {
        sl__mod_state *s = &c->st[k];
        if (!s->dirty) continue;
        const sl__mod_set *ps = &c->sets[c->ips[c->first[k]]];
        int64_t ttl = sl__mod_ttl(ps, s, c->now);
        long long at = base_ms + (long long)((ttl + 999) / 1000);
        if (ps->alg == SL__MOD_SLOG) {
            write_log(c, k, ttl, at);
        } else if (ttl > 0) {
            write_string(c, k, at);
        } else if (RedisModule_KeyType(c->keys[k]) != REDISMODULE_KEYTYPE_EMPTY) {
            RedisModule_DeleteKey(c->keys[k]);
            sl__mod_effects_set(&c->fx, c->argv[2 + c->first[k]], NULL, 0, 0);
        }
    }
}

/* ---- the command ---- */

static int64_t wall_us(void) {
    struct timespec ts; /* what Redis TIME reads */
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void call_free(call *c) {
    for (int k = 0; k < c->nopen; k++) {
        if (c->keys[k]) RedisModule_CloseKey(c->keys[k]);
        sl__mod_state_free(&c->st[k]);
    }
    RedisModule_Free(c->scratch);
}

/* The items as the script takes them, 3 arguments each. */
static bool arg_items(call *c, RedisModuleString **it, char *err, size_t errlen) {
    for (int i = 0; i < c->n; i++, it += 3) {
        int64_t j, g;
        if (!arg_int(it[0], 1, c->nsets, "parameter set", "item", i + 1, &j, err, errlen) ||
            !arg_int(it[1], 0, SL__MOD_CMAX, "cost", "item", i + 1, &c->cost[i], err, errlen) ||
            !arg_int(it[2], 0, SL__MOD_MAX_GROUPS - 1, "group", "item", i + 1, &g, err, errlen))
            return false;
        c->ips[i] = (int)j - 1;
        c->group[i] = (int)g;
    }
    return true;
}

static uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

/* The packed items (redis_script.h): PACKED_ITEM bytes each, set and group
 * 16-bit, cost 64-bit, little-endian; the same bounds as arg_items. */
static bool packed_items(call *c, const RedisModuleString *s, char *err, size_t errlen) {
    size_t len;
    const unsigned char *p = (const unsigned char *)RedisModule_StringPtrLen(s, &len);
    if (len != (size_t)c->n * PACKED_ITEM) {
        snprintf(err, errlen, "packed items: expected %d bytes, got %zu", c->n * PACKED_ITEM, len);
        return false;
    }
    for (int i = 0; i < c->n; i++, p += PACKED_ITEM) {
        uint64_t j = get_le(p, 2), g = get_le(p + 2, 2), cost = get_le(p + 4, 8);
        const char *what = j < 1 || j > (uint64_t)c->nsets ? "parameter set"
                           : g >= SL__MOD_MAX_GROUPS       ? "group"
                           : cost > (uint64_t)SL__MOD_CMAX ? "cost"
                                                           : NULL;
        if (what) {
            snprintf(err, errlen, "item %d: bad %s", i + 1, what);
            return false;
        }
        c->ips[i] = (int)j - 1;
        c->group[i] = (int)g;
        c->cost[i] = (int64_t)cost;
    }
    return true;
}

/* Checks every argument (decide.lua's order and texts); NULL or the error. */
static const char *check_args(call *c, int argc, char *err, size_t errlen) {
    RedisModuleString **argv = c->argv;
    int n = c->n;
    RedisModuleString **a = argv + 2 + n; /* ARGV[1..] */
    int na = argc - 2 - n;
    int64_t m;
    bool ok = na >= 2 && parse_int(a[1], &m) && m >= 0 && m <= n;
    c->packed = ok && n > 0 && na == 2 + 7 * m + 1;
    if (!ok || (!c->packed && na != 2 + 7 * m + 3 * (int64_t)n)) {
        snprintf(err, errlen, "expected 2 + 7 x m + 3 x %d arguments after the keys, got %d", n,
                 na);
        return err;
    }
    c->nsets = (int)m;
    if (!arg_int(a[0], 0, SL__MOD_TMAX, "now_us", NULL, 0, &c->now, err, errlen)) return err;
    if (!call_alloc(c, n, c->nsets)) {
        snprintf(err, errlen, "out of memory");
        return err;
    }
    static const int64_t lo[6] = {SL__MOD_FW, 1, 1, 0, 0, 0};
    static const int64_t hi[6] = {SL__MOD_LQ,   SL__MOD_MAXV, SL__MOD_PMAX,
                                  SL__MOD_MAXV, SL__MOD_FMAX, SL__MOD_TMAX};
    static const char *const what[6] = {"algorithm", "limit", "period", "burst", "flags", "origin"};
    for (int j = 0; j < c->nsets; j++) {
        RedisModuleString **b = a + 2 + 7 * j;
        int64_t v[6];
        for (int f = 0; f < 6; f++)
            if (!arg_int(b[f], lo[f], hi[f], what[f], "parameter set", j + 1, &v[f], err, errlen))
                return err;
        size_t taglen;
        const char *tag = RedisModule_StringPtrLen(b[6], &taglen);
        if (sl__mod_set_check(&c->sets[j], j + 1, v, tag, taglen, err, errlen)) return err;
    }
    RedisModuleString **it = a + 2 + 7 * c->nsets;
    if (c->packed) {
        if (!packed_items(c, it[0], err, errlen)) return err;
    } else {
        if (!arg_items(c, it, err, errlen)) return err;
    }
    /* the distinct keys; the same key twice must come with the same tag */
    int *table = c->table;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *k = RedisModule_StringPtrLen(argv[2 + i], &len);
        size_t h = (size_t)hash_bytes(k, len) & c->tmask;
        for (;; h = (h + 1) & c->tmask) {
            if (table[h] == 0) {
                table[h] = c->nkeys + 1;
                c->first[c->nkeys] = i;
                c->kidx[i] = c->nkeys++;
                break;
            }
            int f = c->first[table[h] - 1];
            size_t flen;
            const char *fk = RedisModule_StringPtrLen(argv[2 + f], &flen);
            if (flen != len || memcmp(fk, k, len) != 0) continue;
            const sl__mod_set *a1 = &c->sets[c->ips[f]], *a2 = &c->sets[c->ips[i]];
            if (a1->fplen != a2->fplen || memcmp(a1->fp, a2->fp, a1->fplen) != 0) {
                snprintf(err, errlen, "key %.*s given with two different limits",
                         (int)(len > 400 ? 400 : len), k);
                return err;
            }
            c->kidx[i] = table[h] - 1;
            break;
        }
    }
    return NULL;
}

/* The decisions: 6 integers per item, or (packed) one string of their
 * 64-bit little-endian bytes. */
static void reply(call *c) {
    if (!c->packed) {
        RedisModule_ReplyWithArray(c->ctx, 6L * c->n);
        for (int x = 0; x < 6 * c->n; x++) RedisModule_ReplyWithLongLong(c->ctx, c->out[x]);
        return;
    }
    unsigned char *p = (unsigned char *)c->reply;
    for (int x = 0; x < 6 * c->n; x++) {
        uint64_t v = (uint64_t)c->out[x];
        for (int k = 0; k < 8; k++) *p++ = (unsigned char)(v >> (8 * k));
    }
    RedisModule_ReplyWithStringBuffer(c->ctx, c->reply, (size_t)(p - (unsigned char *)c->reply));
}

static int decide_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    int64_t n;
    if (RedisModule_IsKeysPositionRequest(ctx)) {
        if (argc >= 2 && parse_int(argv[1], &n) && n >= 0 && n <= argc - 2)
            for (int k = 0; k < n; k++) RedisModule_KeyAtPos(ctx, 2 + k);
        return REDISMODULE_OK;
    }
    if (argc < 2) return RedisModule_WrongArity(ctx);
    if (!parse_int(argv[1], &n))
        return RedisModule_ReplyWithError(ctx, "ERR value is not an integer or out of range");
    if (n > argc - 2)
        return RedisModule_ReplyWithError(
            ctx, "ERR Number of keys can't be greater than number of args");
    if (n < 0) return RedisModule_ReplyWithError(ctx, "ERR Number of keys can't be negative");
    if (n > SL__MOD_MAX_ITEMS) {
        char msg[64];
        snprintf(msg, sizeof msg, "more than %d items in one call", SL__MOD_MAX_ITEMS);
        return reply_error(ctx, msg);
    }
    call c;
    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    c.argv = argv;
    c.n = (int)n;
    char err[512];
    if (check_args(&c, argc, err, sizeof err)) {
        call_free(&c);
        return reply_error(ctx, err);
    }
    /* one clock read: Redis's TIME and the base of the expiries (mstime()
       is the same clock in ms) */
    long long base_ms;
    if (c.now == 0) {
        c.now = wall_us();
        base_ms = (long long)(c.now / 1000);
    } else {
        base_ms = RedisModule_Milliseconds();
    }
    for (int k = 0; k < c.nkeys; k++) {
        c.keys[k] =
            RedisModule_OpenKey(ctx, argv[2 + c.first[k]], REDISMODULE_READ | REDISMODULE_WRITE);
        read_state(&c, k);
        c.nopen = k + 1;
    }
    run_requests(&c);
    if (c.oom) { /* nothing written */
        call_free(&c);
        return reply_error(ctx, "out of memory");
    }
    sl__mod_effects_begin(&c.fx, ctx, c.fx_keys, c.fx_buf);
    write_back(&c, base_ms);
    sl__mod_effects_end(&c.fx, ctx);
    reply(&c);
    call_free(&c);
    return REDISMODULE_OK;
}

/* The module's entry point: registers SLUICE.DECIDE. */
__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx,
                                                              RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (sl__module_api_init(ctx, "sluice", 1) != REDISMODULE_OK) return REDISMODULE_ERR;
    sl__mod_realloc = RedisModule_Realloc;
    sl__mod_free = RedisModule_Free;
    if (RedisModule_CreateCommand(ctx, "sluice.decide", decide_command,
                                  "write deny-oom getkeys-api", 0, 0, 0) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return sl__mod_listen_init(ctx);
}
