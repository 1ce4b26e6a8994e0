/* http_json.c: POST /json, envoyproxy/ratelimit's HTTP form of
 * ShouldRateLimit: a RateLimitRequest in the proto3 JSON mapping in, a
 * RateLimitResponse in the proto3 JSON mapping out, 200 when the overall code
 * is OK and 429 when it is OVER_LIMIT. The decision is the gRPC one
 * (sl__domain_prepare on the worker's rule set, decided by its engine).
 *
 * Input: field names in lowerCamelCase or as in the .proto ("hitsAddend" or
 * "hits_addend"); unknown fields are refused, as protojson does; enums as
 * names or numbers; the UInt64Value hits_addend of a descriptor as a number
 * or a decimal string. Any Content-Type is taken (upstream does not look).
 * Output: default values are left out (protojson's habit): no
 * "limitRemaining" when 0, no "currentLimit" for a descriptor no rule
 * matched; "durationUntilReset" is a string such as "30s". Bad input: 400
 * with {"error":"bad_request","message":...}; a NUL in a string (which
 * cJSON would cut the string at) with "nul_byte", bytes after the value with
 * "bad_json". With the Redis store the
 * table limits are decided in Redis and the answer written then. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/decide.h"
#include "policy/domains.h"
#include "server/http/http.h"
#include "server/http/http_api.h"
#include "server/request.h"

#define JSON_MAX_ENTRIES (SL__RLS_MAX_DESCRIPTORS * SL__RLS_MAX_ENTRIES)

typedef struct parsed {
    sl__rls_request req;
    sl__rls_descriptor d[SL__RLS_MAX_DESCRIPTORS];
    sl__rls_entry e[JSON_MAX_ENTRIES];
    size_t nentries;
} parsed;

/* The member of o named a (lowerCamel) or b (proto name), once. */
static bool field_is(const cJSON *f, const char *camel, const char *snake) {
    return !strcmp(f->string, camel) || (snake && !strcmp(f->string, snake));
}

static bool get_u64(const cJSON *v, uint64_t max, uint64_t *out) {
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d >= 0) || d > (double)max || d > (double)(uint64_t)d) return false;
        *out = (uint64_t)d;
        return true;
    }
    if (cJSON_IsString(v) && v->valuestring[0]) { /* protojson writes 64-bit ints as strings */
        uint64_t x = 0;
        for (const char *p = v->valuestring; *p; p++) {
            if (*p < '0' || *p > '9') return false;
            unsigned dg = (unsigned)(*p - '0');
            if (x > (UINT64_MAX - dg) / 10) return false;
            x = x * 10 + dg;
        }
        if (x > max) return false;
        *out = x;
        return true;
    }
    return false;
}

static bool get_unit(const cJSON *v, int *out) {
    if (cJSON_IsNumber(v)) {
        uint64_t u;
        if (!get_u64(v, 7, &u)) return false;
        *out = (int)u;
        return true;
    }
    if (!cJSON_IsString(v)) return false;
    for (int u = 0; u <= SL__RLS_UNIT_WEEK; u++)
        if (!strcmp(v->valuestring, sl__rls_unit_name(u))) return *out = u, true;
    return false;
}

static const char *parse_descriptor(const cJSON *o, parsed *p, sl__rls_descriptor *d) {
    if (!cJSON_IsObject(o)) return "each descriptor must be an object";
    for (const cJSON *f = o->child; f; f = f->next) {
        if (field_is(f, "entries", NULL)) {
            if (!cJSON_IsArray(f)) return "\"entries\" must be an array";
            d->entries = &p->e[p->nentries];
            for (const cJSON *x = f->child; x; x = x->next) {
                if (d->nentries == SL__RLS_MAX_ENTRIES || p->nentries == JSON_MAX_ENTRIES)
                    return "too many entries in a descriptor (at most 32)";
                if (!cJSON_IsObject(x)) return "each entry must be an object";
                sl__rls_entry *e = &p->e[p->nentries++];
                d->nentries++;
                memset(e, 0, sizeof *e);
                e->key = e->value = "";
                for (const cJSON *g = x->child; g; g = g->next) {
                    if (!cJSON_IsString(g) ||
                        (strcmp(g->string, "key") != 0 && strcmp(g->string, "value") != 0))
                        return "an entry has \"key\" and \"value\" strings only";
                    if (!strcmp(g->string, "key"))
                        e->key = g->valuestring, e->key_len = strlen(g->valuestring);
                    else
                        e->value = g->valuestring, e->value_len = strlen(g->valuestring);
                }
            }
        } else if (field_is(f, "limit", NULL)) {
            if (cJSON_IsNull(f)) continue;
            if (!cJSON_IsObject(f)) return "\"limit\" must be an object";
            d->has_limit = true;
            for (const cJSON *g = f->child; g; g = g->next) {
                uint64_t u;
                if (field_is(g, "requestsPerUnit", "requests_per_unit")) {
                    if (!get_u64(g, UINT32_MAX, &u))
                        return "\"requestsPerUnit\" must be a whole number below 2^32";
                    d->limit_requests_per_unit = (uint32_t)u;
                } else if (field_is(g, "unit", NULL)) {
                    if (!get_unit(g, &d->limit_unit)) return "unknown \"unit\"";
                } else {
                    return "unknown field in \"limit\"";
                }
            }
        } else if (field_is(f, "hitsAddend", "hits_addend")) {
            if (cJSON_IsNull(f)) continue;
            if (!get_u64(f, UINT64_MAX, &d->hits))
                return "a descriptor's \"hitsAddend\" must be a whole number";
            d->has_hits = true;
        } else {
            return "unknown field in a descriptor";
        }
    }
    return NULL;
}

static const char *parse_request(const cJSON *root, parsed *p) {
    if (!cJSON_IsObject(root)) return "the body is not a JSON object";
    memset(&p->req, 0, sizeof p->req);
    p->req.domain = "";
    p->nentries = 0;
    for (const cJSON *f = root->child; f; f = f->next) {
        if (field_is(f, "domain", NULL)) {
            if (!cJSON_IsString(f)) return "\"domain\" must be a string";
            p->req.domain = f->valuestring;
            p->req.domain_len = strlen(f->valuestring);
        } else if (field_is(f, "descriptors", NULL)) {
            if (!cJSON_IsArray(f)) return "\"descriptors\" must be an array";
            for (const cJSON *x = f->child; x; x = x->next) {
                if (p->req.ndescriptors == SL__RLS_MAX_DESCRIPTORS)
                    return "too many descriptors (at most 64)";
                sl__rls_descriptor *d = &p->d[p->req.ndescriptors++];
                memset(d, 0, sizeof *d);
                const char *err = parse_descriptor(x, p, d);
                if (err) return err;
            }
        } else if (field_is(f, "hitsAddend", "hits_addend")) {
            uint64_t u;
            if (!get_u64(f, UINT32_MAX, &u))
                return "\"hitsAddend\" must be a whole number below 2^32";
            p->req.hits_addend = (uint32_t)u;
        } else {
            return "unknown field in the request";
        }
    }
    p->req.descriptors = p->d;
    return NULL;
}

static const char *code_name(int code) {
    return code == SL__RLS_OK ? "OK" : code == SL__RLS_OVER_LIMIT ? "OVER_LIMIT" : "UNKNOWN";
}

static void write_response(sl__buf *b, int overall, const sl__rls_status *st, size_t n) {
    sl__buf_printf(b, "{\"overallCode\":\"%s\",\"statuses\":[", code_name(overall));
    for (size_t i = 0; i < n; i++) {
        sl__buf_printf(b, "%s{\"code\":\"%s\"", i ? "," : "", code_name(st[i].code));
        if (st[i].has_limit) {
            sl__buf_puts(b, ",\"currentLimit\":{");
            bool comma = false;
            if (st[i].name && st[i].name[0]) {
                sl__buf_puts(b, "\"name\":");
                sl__http_json_string(b, st[i].name, strlen(st[i].name));
                comma = true;
            }
            if (st[i].requests_per_unit) {
                sl__buf_printf(b, "%s\"requestsPerUnit\":%u", comma ? "," : "",
                               st[i].requests_per_unit);
                comma = true;
            }
            if (st[i].unit)
                sl__buf_printf(b, "%s\"unit\":\"%s\"", comma ? "," : "",
                               sl__rls_unit_name(st[i].unit));
            sl__buf_puts(b, "}");
        }
        if (st[i].limit_remaining)
            sl__buf_printf(b, ",\"limitRemaining\":%u", st[i].limit_remaining);
        if (st[i].has_limit)
            sl__buf_printf(b, ",\"durationUntilReset\":\"%llds\"", (long long)st[i].reset_seconds);
        sl__buf_puts(b, "}");
    }
    sl__buf_puts(b, "]");
    char *meta = NULL;
    size_t mlen = sl__domain_dynamic_metadata(st, n, &meta);
    if (mlen) { /* proto3 JSON of a Struct: the object itself */
        sl__buf_puts(b, ",\"dynamicMetadata\":");
        sl__buf_append(b, meta, mlen);
    }
    free(meta);
    sl__buf_puts(b, "}");
}

static bool error_answer(sl__buf *out, bool keep, int status, const char *code,
                         const char *message) {
    sl__http_error_answer(out, status, keep, code, message);
    return keep;
}

static void write_answer(sl__buf *out, bool keep, int overall, const sl__rls_status *st, size_t n) {
    sl__buf body;
    sl__buf_init(&body);
    write_response(&body, overall, st, n);
    sl__http_begin(out, overall == SL__RLS_OVER_LIMIT ? 429 : 200);
    sl__http_end(out, keep, "application/json", body.data, body.len);
    sl__buf_free(&body);
}

/* The table limits are decided by the worker's engine; the answer is
 * written in done (reply.h). */
typedef struct json_ctx {
    sl__reply reply;
    bool keep;
} json_ctx;

static void json_done(sl__decide_call *call) {
    json_ctx *jc = sl__domain_user(call);
    sl__rls_status st[SL__RLS_MAX_DESCRIPTORS];
    size_t n;
    int overall;
    const char *message;
    sl__buf *out = sl__reply_out(&jc->reply);
    bool keep = sl__reply_keep(&jc->reply, jc->keep);
    int rc = sl__domain_finish(call, st, &n, &overall, &message);
    if (rc == SL_OK)
        write_answer(out, keep, overall, st, n);
    else if (rc == SL_EINVAL)
        error_answer(out, keep, 400, "bad_request", message);
    else
        error_answer(out, keep, 500, "internal", message);
    sl__reply_end(&jc->reply);
    sl__decide_call_free(call);
}

bool sl__http_json_handle(const sl__request_ctx *rq, const sl__http_request *req, sl__buf *out,
                          bool keep) {
    /* cJSON strings end at a NUL: a descriptor value "v\u0000x" would count
     * as "v". The raw body is looked at first (see sl__http_json_scan). */
    sl__json_scan sc = sl__http_json_scan(req->body, req->body_len, NULL, NULL, NULL);
    if (sc == SL__JSON_NUL)
        return error_answer(out, keep, 400, "nul_byte",
                            "the body contains a NUL character (\\u0000 or a 0 byte): domains, "
                            "descriptor keys and values cannot contain NUL");
    if (sc == SL__JSON_TRAILING)
        return error_answer(out, keep, 400, "bad_json", "the body has bytes after the JSON value");
    cJSON *root = sc == SL__JSON_OK ? cJSON_ParseWithLength(req->body, req->body_len) : NULL;
    if (!root) return error_answer(out, keep, 400, "bad_json", "the body is not valid JSON");
    static _Thread_local parsed p; /* large: not on the stack */
    const char *err = parse_request(root, &p);
    if (err) {
        cJSON_Delete(root);
        return error_answer(out, keep, 400, "bad_request", err);
    }
    sl__rls_status st[SL__RLS_MAX_DESCRIPTORS];
    int overall;
    const char *message;
    sl__decide_call *call = NULL;
    int64_t now = rq->now;
    int rc = sl__domain_prepare(rq->domains, &p.req, now, st, &overall, &message, sizeof(json_ctx),
                                &call);
    if (rc != SL_OK) {
        cJSON_Delete(root);
        return rc == SL_EINVAL ? error_answer(out, keep, 400, "bad_request", message)
                               : error_answer(out, keep, 500, "internal", message);
    }
    size_t n = p.req.ndescriptors;
    cJSON_Delete(root);
    if (call) {
        json_ctx *jc = sl__domain_user(call);
        jc->keep = keep;
        call->done = json_done;
        bool answered;
        sl__reply_begin(&jc->reply, rq->slot, out, &answered);
        sl__engine_decide(rq->decider, call, now);
        if (!answered && !sl__reply_wait(&jc->reply))
            error_answer(out, keep, 500, "internal", "out of memory");
        return keep;
    }
    write_answer(out, keep, overall, st, n);
    return keep;
}
