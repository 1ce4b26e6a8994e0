/* grpc_service.c: ShouldRateLimit and Health/Check on one message each
 * (grpc_service.h). A RateLimitRequest of the shape Envoy sends is read by
 * a direct decoder (below, before sl__grpc_rls_decode); anything else, and
 * the health request, by protobuf-c, with an arena allocator so a
 * request costs no malloc once the arena is warm and a hostile message cannot
 * make the decoder allocate more than the arena's cap (a multiple of the
 * message size, itself bounded by limits.max_body_bytes). The health answer
 * is packed by protobuf-c straight into the output buffer behind the 5-byte
 * gRPC message prefix; the RateLimitResponse is written by hand (see
 * sl__grpc_put_rls_response). */
#include "server/grpc/grpc_service.h"
#include "policy/decide.h"

#include <stdlib.h>
#include <string.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"

#define ARENA_FIRST_BLOCK (16 * 1024)
#define ARENA_PER_BYTE    48 /* decoded bytes may take this many times their size */

typedef struct sl__grpc_arena_block {
    struct sl__grpc_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_block;

sl__grpc_method_id sl__grpc_method(const char *path, size_t len) {
    if (len == sizeof SL__GRPC_RLS_PATH - 1 && !memcmp(path, SL__GRPC_RLS_PATH, len))
        return SL__GRPC_M_SHOULD_RATE_LIMIT;
    if (len == sizeof SL__GRPC_HEALTH_PATH - 1 && !memcmp(path, SL__GRPC_HEALTH_PATH, len))
        return SL__GRPC_M_HEALTH_CHECK;
    return SL__GRPC_M_UNKNOWN;
}

/* ---- the arena ------------------------------------------------------------ */

void sl__grpc_arena_reset(sl__grpc_arena *a) {
    arena_block *b = a->first;
    if (b) {
        for (arena_block *x = b->next, *next; x; x = next) {
            next = x->next;
            free(x);
        }
        b->next = NULL;
        b->used = 0;
    }
    a->cur = b;
    a->used = 0;
}

void sl__grpc_arena_free(sl__grpc_arena *a) {
    for (arena_block *x = a->first, *next; x; x = next) {
        next = x->next;
        free(x);
    }
    a->first = a->cur = NULL;
    a->used = 0;
}

static void *arena_alloc(void *data, size_t n) {
    sl__grpc_arena *a = data;
    n = (n + 15) & ~(size_t)15;
    if (n > a->cap || a->used > a->cap - n) return NULL;
    arena_block *cur = a->cur;
    if (!cur || cur->cap - cur->used < n) {
        size_t cap = cur ? 4 * ARENA_FIRST_BLOCK : ARENA_FIRST_BLOCK;
        if (cap < n) cap = n;
        arena_block *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->next = NULL;
        nb->used = 0;
        nb->cap = cap;
        if (cur)
            cur->next = nb;
        else
            a->first = nb;
        a->cur = cur = nb;
    }
    void *p = cur->data + cur->used;
    cur->used += n;
    a->used += n;
    return p;
}

static void arena_nofree(void *data, void *p) {
    (void)data;
    (void)p;
}

static void *zalloc(sl__grpc_arena *a, size_t n) {
    void *p = arena_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

/* ---- framing of the answer ------------------------------------------------------ */

/* Appends the 5-byte prefix and the packed message. */
static int put_message(sl__buf *out, const ProtobufCMessage *m) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *p = (uint8_t *)sl__buf_reserve(out, n + 5);
    if (!p) return -1;
    p[0] = 0;
    p[1] = (uint8_t)(n >> 24);
    p[2] = (uint8_t)(n >> 16);
    p[3] = (uint8_t)(n >> 8);
    p[4] = (uint8_t)n;
    protobuf_c_message_pack(m, p + 5);
    sl__buf_commit(out, n + 5);
    return 0;
}

/* ---- the RateLimitResponse, by hand -------------------------------------------------- */

/* protobuf-c's generic packer walks the descriptors twice (sizes, then
 * bytes) and wants the message built as structs first; the answer to
 * ShouldRateLimit has a fixed shape, so it is written directly, in protobuf-c's
 * field order (by number) with proto3's rules (zero values left out, a
 * present sub-message always written). test_grpc.c checks it byte for byte
 * against protobuf-c's encoding. Field numbers: protocols.md section 1.2. */

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) *p++ = (uint8_t)(v | 0x80), v >>= 7;
    *p++ = (uint8_t)v;
    return p;
}

static size_t limit_len(const sl__rls_status *st, size_t name_len) {
    size_t n = 0;
    if (st->requests_per_unit) n += 1 + varint_len(st->requests_per_unit);
    if (st->unit) n += 1 + varint_len((uint64_t)st->unit);
    if (name_len) n += 1 + varint_len(name_len) + name_len;
    return n;
}

static size_t duration_len(const sl__rls_status *st) {
    return st->reset_seconds ? 1 + varint_len((uint64_t)st->reset_seconds) : 0;
}

static size_t status_len(const sl__rls_status *st, size_t name_len) {
    size_t n = 0;
    if (st->code) n += 1 + varint_len((uint64_t)st->code);
    if (st->has_limit) {
        size_t l = limit_len(st, name_len), d = duration_len(st);
        n += 1 + varint_len(l) + l + 1 + varint_len(d) + d;
    }
    if (st->limit_remaining) n += 1 + varint_len(st->limit_remaining);
    return n;
}

/* dynamic_metadata (field 6), as a Struct's bytes in *meta (empty: none). */
static int metadata_of(const sl__rls_status *st, size_t n, sl__buf *meta) {
    char *json = NULL;
    size_t len = sl__domain_dynamic_metadata(st, n, &json);
    int rc = len ? sl__grpc_put_struct(meta, json, len) : 0;
    free(json);
    return rc;
}

int sl__grpc_put_rls_response(sl__buf *out, int overall, const sl__rls_status *st, size_t n) {
    size_t names[SL__RLS_MAX_DESCRIPTORS], lens[SL__RLS_MAX_DESCRIPTORS];
    if (n > SL__RLS_MAX_DESCRIPTORS) return -1;
    size_t total = overall ? 1 + varint_len((uint64_t)overall) : 0;
    for (size_t i = 0; i < n; i++) {
        names[i] = st[i].has_limit && st[i].name ? strlen(st[i].name) : 0;
        lens[i] = status_len(&st[i], names[i]);
        total += 1 + varint_len(lens[i]) + lens[i];
    }
    sl__buf meta;
    sl__buf_init(&meta);
    if (metadata_of(st, n, &meta) != 0) {
        sl__buf_free(&meta);
        return -1;
    }
    if (meta.len) total += 1 + varint_len(meta.len) + meta.len;
    uint8_t *p = (uint8_t *)sl__buf_reserve(out, total + 5);
    if (!p) {
        sl__buf_free(&meta);
        return -1;
    }
    uint8_t *start = p;
    *p++ = 0;
    *p++ = (uint8_t)(total >> 24);
    *p++ = (uint8_t)(total >> 16);
    *p++ = (uint8_t)(total >> 8);
    *p++ = (uint8_t)total;
    if (overall) *p++ = 0x08, p = put_varint(p, (uint64_t)overall);
    for (size_t i = 0; i < n; i++) {
        const sl__rls_status *x = &st[i];
        *p++ = 0x12;
        p = put_varint(p, lens[i]);
        if (x->code) *p++ = 0x08, p = put_varint(p, (uint64_t)x->code);
        if (x->has_limit) {
            *p++ = 0x12; /* current_limit */
            p = put_varint(p, limit_len(x, names[i]));
            if (x->requests_per_unit) *p++ = 0x08, p = put_varint(p, x->requests_per_unit);
            if (x->unit) *p++ = 0x10, p = put_varint(p, (uint64_t)x->unit);
            if (names[i]) {
                *p++ = 0x1a;
                p = put_varint(p, names[i]);
                memcpy(p, x->name, names[i]);
                p += names[i];
            }
        }
        if (x->limit_remaining) *p++ = 0x18, p = put_varint(p, x->limit_remaining);
        if (x->has_limit) {
            *p++ = 0x22; /* duration_until_reset */
            p = put_varint(p, duration_len(x));
            if (x->reset_seconds) *p++ = 0x08, p = put_varint(p, (uint64_t)x->reset_seconds);
        }
    }
    if (meta.len) { /* dynamic_metadata */
        *p++ = 0x32;
        p = put_varint(p, meta.len);
        memcpy(p, meta.data, meta.len);
        p += meta.len;
    }
    sl__buf_free(&meta);
    sl__buf_commit(out, (size_t)(p - start));
    return (size_t)(p - start) == total + 5 ? 0 : -1;
}

/* ---- ShouldRateLimit --------------------------------------------------------------- */

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest RLRequest;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor RLDescriptor;

/* protobuf-c hands strings over NUL-terminated, without their length: a
 * descriptor value "v\0x" would read as "v" and count as that value. So
 * the wire bytes of the strings that name a limit (the domain, each entry's
 * key and value) are looked at for a NUL, and such a request is refused.
 * Walks message `level` (0 RateLimitRequest, 1 RateLimitDescriptor, 2
 * Entry; field numbers: protocols.md 1.2) in [p, end); true if one of those
 * strings holds a NUL. Runs after protobuf-c accepted the bytes, so a
 * malformed field just ends the walk. */
/* A varint of at most max bytes at *p (10: any 64-bit value; the direct
 * decoder below asks for 5 or 9), *p moved past it; false if it does not
 * end within max bytes or before end. */
#define VARINT_MAX_BYTES 10
static bool read_varint(const uint8_t **p, const uint8_t *end, unsigned max, uint64_t *v) {
    uint64_t x = 0;
    for (unsigned i = 0; i < max && *p < end; i++) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static bool rls_strings_have_nul(const uint8_t *p, const uint8_t *end, int level) {
    while (p < end) {
        uint64_t tag, v;
        if (!read_varint(&p, end, VARINT_MAX_BYTES, &tag)) return false;
        uint64_t field = tag >> 3;
        switch (tag & 7) {
        case 0: /* varint */
            if (!read_varint(&p, end, VARINT_MAX_BYTES, &v)) return false;
            break;
        case 1: /* 64-bit */
            if (end - p < 8) return false;
            p += 8;
            break;
        case 5: /* 32-bit */
            if (end - p < 4) return false;
            p += 4;
            break;
        case 2: { /* length-delimited */
            if (!read_varint(&p, end, VARINT_MAX_BYTES, &v) || v > (uint64_t)(end - p))
                return false;
            const uint8_t *x = p;
            p += v;
            bool text = (level == 0 && field == 1) || (level == 2 && (field == 1 || field == 2));
            bool sub = (level == 0 && field == 2) || (level == 1 && field == 1);
            if (text && memchr(x, 0, (size_t)v)) return true;
            if (sub && rls_strings_have_nul(x, x + v, level + 1)) return true;
            break;
        }
        default: /* groups are not in these messages */
            return false;
        }
    }
    return false;
}

/* Decodes a RateLimitRequest into q (descriptors in ds, strings in the
 * arena). Returns SL__GRPC_OK or a status with *message. */
static int decode_protobuf_c(const sl__grpc_call_env *env, const uint8_t *msg, size_t len,
                             sl__rls_request *q, sl__rls_descriptor *ds, const char **message) {
    ProtobufCAllocator alloc = {
        .alloc = arena_alloc, .free = arena_nofree, .allocator_data = env->arena};
    RLRequest *req = envoy__service__ratelimit__v3__rate_limit_request__unpack(&alloc, len, msg);
    if (!req) {
        *message = "cannot parse the RateLimitRequest";
        return SL__GRPC_INTERNAL;
    }
    if (rls_strings_have_nul(msg, msg + len, 0)) {
        *message = "a domain, descriptor key or value contains a NUL byte";
        return SL__GRPC_INVALID_ARGUMENT;
    }
    size_t nd = req->n_descriptors;
    if (nd > SL__RLS_MAX_DESCRIPTORS) {
        *message = "too many descriptors (at most 64)";
        return SL__GRPC_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < nd; i++) {
        const RLDescriptor *d = req->descriptors[i];
        sl__rls_descriptor *x = &ds[i];
        memset(x, 0, sizeof *x);
        if (d->n_entries > SL__RLS_MAX_ENTRIES) {
            *message = "too many entries in a descriptor (at most 32)";
            return SL__GRPC_INVALID_ARGUMENT;
        }
        sl__rls_entry *e = zalloc(env->arena, (d->n_entries ? d->n_entries : 1) * sizeof *e);
        if (!e) {
            *message = "the request is too large";
            return SL__GRPC_RESOURCE_EXHAUSTED;
        }
        for (size_t j = 0; j < d->n_entries; j++) {
            e[j].key = d->entries[j]->key;
            e[j].key_len = strlen(e[j].key);
            e[j].value = d->entries[j]->value;
            e[j].value_len = strlen(e[j].value);
        }
        x->entries = e;
        x->nentries = d->n_entries;
        if (d->limit) {
            x->has_limit = true;
            x->limit_requests_per_unit = d->limit->requests_per_unit;
            x->limit_unit = (int)d->limit->unit;
        }
        if (d->hits_addend) {
            x->has_hits = true;
            x->hits = d->hits_addend->value;
        }
    }
    *q = (sl__rls_request){.domain = req->domain,
                           .domain_len = strlen(req->domain),
                           .descriptors = ds,
                           .ndescriptors = nd,
                           .hits_addend = req->hits_addend};
    return SL__GRPC_OK;
}

/* The direct decoder: the RateLimitRequests Envoy sends (every field at
 * most once but the repeated ones, each with its own one-byte tag and wire
 * type, no unknown field, no NUL in the domain, a key or a value, within
 * SL__RLS_MAX_DESCRIPTORS and SL__RLS_MAX_ENTRIES, varints no longer than
 * their type needs) read in one pass, with the strings left in the message
 * (sl__rls_entry's are not NUL-terminated) and only the entries in the
 * arena; protobuf-c's unpack and the NUL walk cost about 2,300 instructions
 * per request. Anything else is declined (false) and decoded by protobuf-c
 * as before, so its answers (errors, merged duplicates, unknown fields)
 * stay protobuf-c's; on the messages it takes, the two agree field by field
 * (fuzz_grpc, test_grpc's decode_paths). */
typedef struct wire {
    const uint8_t *p, *end;
} wire;

/* A varint of at most max bytes (5: 32 bits, 9: 63 bits). */
static bool wire_varint(wire *w, unsigned max, uint64_t *v) {
    return read_varint(&w->p, w->end, max, v);
}

/* A length-delimited field's bytes, in sub. */
static bool wire_bytes(wire *w, wire *sub) {
    uint64_t n;
    if (!wire_varint(w, 5, &n) || n > (uint64_t)(w->end - w->p)) return false;
    sub->p = w->p;
    sub->end = w->p + n;
    w->p += n;
    return true;
}

static bool wire_text(wire *w, const char **s, size_t *len) {
    wire t;
    if (!wire_bytes(w, &t) || memchr(t.p, 0, (size_t)(t.end - t.p))) return false;
    *s = (const char *)t.p;
    *len = (size_t)(t.end - t.p);
    return true;
}

static bool direct_entry(wire w, sl__rls_entry *e) {
    bool key = false, value = false;
    *e = (sl__rls_entry){.key = "", .value = ""};
    while (w.p < w.end) {
        uint8_t tag = *w.p++;
        if (tag == 0x0a && !key) {
            key = true;
            if (!wire_text(&w, &e->key, &e->key_len)) return false;
        } else if (tag == 0x12 && !value) {
            value = true;
            if (!wire_text(&w, &e->value, &e->value_len)) return false;
        } else {
            return false;
        }
    }
    return true;
}

static bool direct_override(wire w, sl__rls_descriptor *x) {
    bool rpu = false, unit = false;
    while (w.p < w.end) {
        uint8_t tag = *w.p++;
        uint64_t v;
        if (tag == 0x08 && !rpu) {
            rpu = true;
            if (!wire_varint(&w, 5, &v) || v > UINT32_MAX) return false;
            x->limit_requests_per_unit = (uint32_t)v;
        } else if (tag == 0x10 && !unit) {
            unit = true;
            if (!wire_varint(&w, 5, &v) || v > INT32_MAX) return false;
            x->limit_unit = (int)v;
        } else {
            return false;
        }
    }
    return true;
}

static bool direct_descriptor(const sl__grpc_call_env *env, wire w, sl__rls_descriptor *x) {
    sl__rls_entry e[SL__RLS_MAX_ENTRIES];
    size_t n = 0;
    memset(x, 0, sizeof *x);
    while (w.p < w.end) {
        uint8_t tag = *w.p++;
        wire sub;
        if (!wire_bytes(&w, &sub)) return false;
        if (tag == 0x0a) { /* entries */
            if (n == SL__RLS_MAX_ENTRIES || !direct_entry(sub, &e[n])) return false;
            n++;
        } else if (tag == 0x12 && !x->has_limit) { /* limit */
            x->has_limit = true;
            if (!direct_override(sub, x)) return false;
        } else if (tag == 0x1a && !x->has_hits) { /* hits_addend: UInt64Value */
            x->has_hits = true;
            if (sub.p < sub.end) {
                if (*sub.p++ != 0x08 || !wire_varint(&sub, 9, &x->hits) || sub.p != sub.end)
                    return false;
            }
        } else {
            return false;
        }
    }
    sl__rls_entry *copy = arena_alloc(env->arena, (n ? n : 1) * sizeof *copy);
    if (!copy) return false;
    memcpy(copy, e, n * sizeof *copy);
    x->entries = copy;
    x->nentries = n;
    return true;
}

static bool decode_direct(const sl__grpc_call_env *env, const uint8_t *msg, size_t len,
                          sl__rls_request *q, sl__rls_descriptor *ds) {
    wire w = {msg, msg + len};
    bool domain = false, hits = false;
    *q = (sl__rls_request){.domain = "", .descriptors = ds};
    while (w.p < w.end) {
        uint8_t tag = *w.p++;
        if (tag == 0x0a && !domain) {
            domain = true;
            if (!wire_text(&w, &q->domain, &q->domain_len)) return false;
        } else if (tag == 0x12) {
            wire sub;
            if (q->ndescriptors == SL__RLS_MAX_DESCRIPTORS || !wire_bytes(&w, &sub) ||
                !direct_descriptor(env, sub, &ds[q->ndescriptors]))
                return false;
            q->ndescriptors++;
        } else if (tag == 0x18 && !hits) {
            hits = true;
            uint64_t v;
            if (!wire_varint(&w, 5, &v) || v > UINT32_MAX) return false;
            q->hits_addend = (uint32_t)v;
        } else {
            return false;
        }
    }
    return true;
}

int sl__grpc_rls_decode(const sl__grpc_call_env *env, const uint8_t *msg, size_t len,
                        sl__rls_request *q, sl__rls_descriptor *ds, const char **message,
                        sl__grpc_decoder how) {
    if (how != SL__GRPC_DECODE_PROTOBUF_C) {
        if (decode_direct(env, msg, len, q, ds)) return SL__GRPC_OK;
        /* protobuf-c gets the whole arena, as before: the same cap */
        sl__grpc_arena_reset(env->arena);
        if (how == SL__GRPC_DECODE_DIRECT) return SL__GRPC_DECLINED;
    }
    return decode_protobuf_c(env, msg, len, q, ds, message);
}

int sl__grpc_rls_prepare(const sl__grpc_call_env *env, const uint8_t *msg, size_t len,
                         size_t user_bytes, sl__decide_call **call, sl__buf *out,
                         const char **message) {
    sl__rls_descriptor ds[SL__RLS_MAX_DESCRIPTORS];
    sl__rls_request q;
    *call = NULL;
    sl__grpc_arena_reset(env->arena);
    env->arena->cap = ARENA_FIRST_BLOCK + len * ARENA_PER_BYTE;
    int code = sl__grpc_rls_decode(env, msg, len, &q, ds, message, SL__GRPC_DECODE_AUTO);
    if (code != SL__GRPC_OK) return code;
    sl__rls_status st[SL__RLS_MAX_DESCRIPTORS];
    int overall;
    int rc =
        sl__domain_prepare(env->domains, &q, env->now, st, &overall, message, user_bytes, call);
    if (rc != SL_OK)
        return rc == SL_EINVAL ? SL__GRPC_INVALID_ARGUMENT : SL__GRPC_RESOURCE_EXHAUSTED;
    if (!*call && sl__grpc_put_rls_response(out, overall, st, q.ndescriptors) != 0) {
        *message = "out of memory";
        return SL__GRPC_RESOURCE_EXHAUSTED;
    }
    return SL__GRPC_OK;
}

int sl__grpc_rls_answer(sl__decide_call *call, sl__buf *out, const char **message) {
    sl__rls_status st[SL__RLS_MAX_DESCRIPTORS];
    size_t n;
    int overall;
    int rc = sl__domain_finish(call, st, &n, &overall, message);
    if (rc != SL_OK)
        return rc == SL_EINVAL ? SL__GRPC_INVALID_ARGUMENT : SL__GRPC_RESOURCE_EXHAUSTED;
    if (sl__grpc_put_rls_response(out, overall, st, n) != 0) {
        *message = "out of memory";
        return SL__GRPC_RESOURCE_EXHAUSTED;
    }
    return SL__GRPC_OK;
}

/* sl__grpc_call's ShouldRateLimit: on the memory store, which decides inline. */
typedef struct inline_rls {
    sl__buf *out;
    const char **message;
    int code;
} inline_rls;

static void inline_done(sl__decide_call *call) {
    inline_rls *r = sl__domain_user(call);
    r->code = sl__grpc_rls_answer(call, r->out, r->message);
}

static int should_rate_limit(const sl__grpc_call_env *env, const uint8_t *msg, size_t len,
                             sl__buf *out, const char **message) {
    sl__decide_call *call;
    int code = sl__grpc_rls_prepare(env, msg, len, sizeof(inline_rls), &call, out, message);
    if (code != SL__GRPC_OK || !call) return code;
    inline_rls *r = sl__domain_user(call);
    *r = (inline_rls){.out = out, .message = message, .code = SL__GRPC_INTERNAL};
    call->done = inline_done;
    sl__engine_decide(sl__decider_memory(), call, env->now);
    code = r->code;
    sl__decide_call_free(call);
    return code;
}

/* ---- Health/Check ------------------------------------------------------------------ */

static int health_check(const sl__grpc_call_env *env, const uint8_t *msg, size_t len, sl__buf *out,
                        const char **message) {
    ProtobufCAllocator alloc = {
        .alloc = arena_alloc, .free = arena_nofree, .allocator_data = env->arena};
    Grpc__Health__V1__HealthCheckRequest *req =
        grpc__health__v1__health_check_request__unpack(&alloc, len, msg);
    if (!req) {
        *message = "cannot parse the HealthCheckRequest";
        return SL__GRPC_INTERNAL;
    }
    /* "" (the server), the service's full name, and "ratelimit": the name
     * envoyproxy/ratelimit registers its health service under */
    if (req->service[0] && strcmp(req->service, SL__GRPC_RLS_SERVICE) != 0 &&
        strcmp(req->service, "ratelimit") != 0) {
        *message = "unknown service";
        return SL__GRPC_NOT_FOUND;
    }
    Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    resp.status = env->serving
                      ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
                      : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
    if (put_message(out, &resp.base) != 0) {
        *message = "out of memory";
        return SL__GRPC_RESOURCE_EXHAUSTED;
    }
    return SL__GRPC_OK;
}

int sl__grpc_call(const sl__grpc_call_env *env, sl__grpc_method_id m, const uint8_t *msg,
                  size_t len, sl__buf *out, const char **message) {
    sl__grpc_arena *a = env->arena;
    sl__grpc_arena_reset(a);
    a->cap = ARENA_FIRST_BLOCK + len * ARENA_PER_BYTE;
    size_t mark = out->len;
    int rc;
    switch (m) {
    case SL__GRPC_M_SHOULD_RATE_LIMIT:
        rc = should_rate_limit(env, msg, len, out, message);
        break;
    case SL__GRPC_M_HEALTH_CHECK:
        rc = health_check(env, msg, len, out, message);
        break;
    default:
        *message = "unknown method";
        rc = SL__GRPC_UNIMPLEMENTED;
        break;
    }
    if (rc != SL__GRPC_OK) out->len = mark;
    return rc;
}
