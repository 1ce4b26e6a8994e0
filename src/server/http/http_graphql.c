/* http_graphql.c: POST /v1/graphql?policy=P&key=K (issue 17, seed section
 * 08, docs/graphql.md). The body is a GraphQL request, JSON
 * ({"query": ..., "variables": {...}, "operationName": ...}) or the query
 * itself (Content-Type: application/graphql). Its cost is computed before
 * anything else happens (sluice/graphql.h, with the policy's graphql:
 * block) and charged, as the request's cost, to the policy through the one
 * engine: 200 with the cost and what is left, 429 when the cost is over
 * what is left (nothing charged), 400 for a query that does not parse (the
 * parser's message and byte offset), 413 for one over max_cost or longer
 * than the parser takes; neither is charged. */
#include "server/http/http_graphql.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/http/http.h"
#include "server/http/http_auth.h"
#include "policy/decide.h"
#include "policy/policy.h"
#include "server/request.h"
#include "sluice/error.h"
#include "sluice/graphql.h"

#define KEY_MAX  1024
#define VARS_MAX 256 /* variables of one request that are looked at */

typedef struct gql_ctx {
    sl__reply reply;
    bool keep;
    int64_t now;
    sl_gql_cost_result cost;
} gql_ctx;

static void send_error(sl__buf *out, bool keep, int status, const char *code, const char *message,
                       const sl_gql_error *err, const sl_gql_cost_result *cost) {
    sl__buf body;
    sl__buf_init(&body);
    sl__http_error_json(&body, code, message);
    if (body.len && (err || cost)) {
        body.len--; /* the closing brace */
        if (err) sl__buf_printf(&body, ",\"offset\":%zu", err->offset);
        if (cost)
            sl__buf_printf(&body, ",\"cost\":%llu,\"objects\":%llu,\"requests\":%llu",
                           (unsigned long long)cost->points, (unsigned long long)cost->objects,
                           (unsigned long long)cost->requests);
        sl__buf_puts(&body, "}");
    }
    sl__http_begin(out, status);
    sl__http_end(out, keep, "application/json", body.data, body.len);
    sl__buf_free(&body);
}

static void count(sl__policy *p, int result) {
    if (p) atomic_fetch_add_explicit(&p->gql[result], 1, memory_order_relaxed);
}

/* Says where a decision came from when it was not the store's own answer
 * (as /v1/check does). */
static const char *source_field(sl__store_from from) {
    switch (from) {
    case SL__FROM_DENY_CACHE:
        return ",\"cached\":true";
    case SL__FROM_OPEN:
        return ",\"fallback\":\"open\"";
    case SL__FROM_CLOSED:
        return ",\"fallback\":\"closed\"";
    case SL__FROM_LOCAL:
        return ",\"fallback\":\"local\"";
    default:
        return "";
    }
}

static void gql_done(sl__decide_call *c) {
    gql_ctx *g = sl__decide_call_user(c);
    const sl__decide_item *it = &c->items[0];
    sl__policy *p = sl__policy_of(it->limit);
    sl__buf *out = sl__reply_out(&g->reply);
    bool keep = sl__reply_keep(&g->reply, g->keep);
    if (c->rc != SL_OK) {
        char msg[200];
        if (c->rc == SL_ECOST) count(p, SL__GQL_RESULT_TOO_COSTLY); /* nothing charged */
        if (c->rc == SL_ECOST)
            snprintf(msg, sizeof msg,
                     "the query costs %lld points and can never pass: policy %s allows at most "
                     "%lld at once",
                     (long long)it->cost, p->cfg.name, (long long)it->decision.limit);
        else
            snprintf(msg, sizeof msg, "%s", sl_strerror(c->rc));
        send_error(out, keep, c->rc == SL_ECOST ? 400 : 500,
                   c->rc == SL_ECOST ? "cost_exceeds_limit" : "internal", msg, NULL,
                   c->rc == SL_ECOST ? &g->cost : NULL);
    } else {
        const sl_decision *d = &it->decision;
        count(p, d->allowed ? SL__GQL_RESULT_ALLOWED : SL__GQL_RESULT_LIMITED);
        if (d->allowed)
            atomic_fetch_add_explicit(&p->gql_points, (uint64_t)it->cost, memory_order_relaxed);
        sl__buf body;
        sl__buf_init(&body);
        sl__http_decision_json(&body, p->cfg.name, d, it->shadowed);
        if (body.len) {
            body.len--;
            sl__buf_printf(&body, ",\"cost\":%llu,\"objects\":%llu,\"requests\":%llu%s}",
                           (unsigned long long)g->cost.points, (unsigned long long)g->cost.objects,
                           (unsigned long long)g->cost.requests, source_field(c->from));
        }
        sl__http_policy_view view = {.name = p->cfg.name, .rate = p->rate_text};
        sl__policy_quota(p, g->now, &view.q, &view.w);
        sl__http_begin(out, d->allowed ? 200 : 429);
        sl__http_ratelimit_fields(out, &view, d);
        sl__http_header_line(out, "Cache-Control", "no-store");
        sl__http_end(out, keep, "application/json", body.data, body.len);
        sl__buf_free(&body);
    }
    sl__reply_end(&g->reply);
    sl__decide_call_free(c);
}

/* The media type of the body, without parameters: 1 JSON, 2 GraphQL, 0
 * anything else (or none). */
static int media_type(const sl__http_request *r) {
    const sl__http_field *h = sl__http_header(r, "Content-Type");
    if (!h) return 0;
    static const char *const types[] = {"application/json", "application/graphql"};
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(types[i]);
        if (h->value_len >= n && strncasecmp(h->value, types[i], n) == 0 &&
            (h->value_len == n || h->value[n] == ';' || h->value[n] == ' '))
            return i + 1;
    }
    return 0;
}

/* A JSON variable's value as an Int for first/last: integral numbers only
 * (others cannot be an Int argument and are left out: the page is then the
 * operation's default, or default_page), clamped to int64 (the cost
 * saturates). */
static bool var_value(const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (d >= 9223372036854775807.0) {
        *out = INT64_MAX;
        return true;
    }
    if (d <= -9223372036854775807.0) {
        *out = -INT64_MAX;
        return true;
    }
    if (!(d > -9223372036854775807.0)) return false; /* NaN */
    int64_t t = (int64_t)d;
    if ((double)t < d || (double)t > d) return false; /* a fraction */
    *out = t;
    return true;
}

/* What the request says: the query text (into the body or the cJSON
 * document), its operation name and Int variables. */
typedef struct gql_request {
    cJSON *json;
    const char *query;
    size_t query_len;
    const char *operation;
    sl_gql_var vars[VARS_MAX];
    size_t nvars;
} gql_request;

/* Reads r's body into q; false after writing the error answer. */
static bool read_request(const sl__http_request *r, gql_request *q, sl__buf *out, bool keep,
                         sl__policy *p) {
    int type = media_type(r);
    if (type == 2) {
        q->query = r->body ? r->body : "";
        q->query_len = r->body_len;
        return true;
    }
    if (type != 1) {
        send_error(out, keep, 415, "unsupported_media_type",
                   "send Content-Type: application/json ({\"query\": ...}) or "
                   "application/graphql",
                   NULL, NULL);
        return false;
    }
    const char *bad = NULL;
    sl__json_scan sc = sl__http_json_scan(r->body, r->body_len, NULL, NULL, NULL);
    const char *end = NULL;
    if (sc == SL__JSON_NUL)
        bad = "the body contains a NUL character (\\u0000 or a 0 byte)";
    else if (sc == SL__JSON_TRAILING)
        bad = "the body has bytes after the JSON object";
    else if (sc != SL__JSON_OK ||
             !(q->json = cJSON_ParseWithLengthOpts(r->body, r->body_len, &end, 0)) ||
             !cJSON_IsObject(q->json))
        bad = "the body is not a JSON object";
    const cJSON *query = NULL, *vars = NULL, *op = NULL;
    if (!bad) {
        query = cJSON_GetObjectItemCaseSensitive(q->json, "query");
        vars = cJSON_GetObjectItemCaseSensitive(q->json, "variables");
        op = cJSON_GetObjectItemCaseSensitive(q->json, "operationName");
        if (!cJSON_IsString(query))
            bad = "\"query\" must be a string (the GraphQL document)";
        else if (vars && !cJSON_IsNull(vars) && !cJSON_IsObject(vars))
            bad = "\"variables\" must be an object (or null)";
        else if (op && !cJSON_IsNull(op) && !cJSON_IsString(op))
            bad = "\"operationName\" must be a string (or null)";
    }
    if (bad) {
        count(p, SL__GQL_RESULT_BAD_QUERY);
        send_error(out, keep, 400, "bad_json", bad, NULL, NULL);
        return false;
    }
    q->query = query->valuestring;
    q->query_len = strlen(query->valuestring);
    /* cJSON_IsString(NULL) is false */
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
    q->operation = cJSON_IsString(op) ? op->valuestring : NULL;
    const cJSON *v, *obj = cJSON_IsObject(vars) ? vars : NULL;
    cJSON_ArrayForEach(v, obj) {
        int64_t value;
        if (!v->string || !var_value(v, &value)) continue;
        if (q->nvars == VARS_MAX) {
            count(p, SL__GQL_RESULT_BAD_QUERY);
            send_error(out, keep, 400, "bad_json", "more than 256 Int variables", NULL, NULL);
            return false;
        }
        q->vars[q->nvars++] = (sl_gql_var){.name = v->string, .value = value};
    }
    return true;
}

/* The refusal of a query that sl_gql_parse or sl_gql_cost refused with rc
 * (err and cost as they left them): 413 when it is longer than max_bytes
 * (parse) or costs too much (cost), 400 when it is no valid query, 500
 * otherwise; p, when given, counts it. Returns false. */
static bool refuse_query(sl__policy *p, int rc, const sl_gql_error *err,
                         const sl_gql_cost_result *cost, sl__buf *out, bool keep) {
    if (rc == SL_ECOST) {
        count(p, SL__GQL_RESULT_TOO_COSTLY);
        send_error(out, keep, 413, "query_too_costly", err->message, NULL, cost);
    } else if (rc == SL_EPARSE && err->kind == SL_GQL_ESIZE) {
        count(p, SL__GQL_RESULT_TOO_LARGE);
        send_error(out, keep, 413, "query_too_large", err->message, NULL, NULL);
    } else if (rc == SL_EPARSE) {
        count(p, SL__GQL_RESULT_BAD_QUERY);
        send_error(out, keep, 400, "bad_query", err->message, err, NULL);
    } else {
        send_error(out, keep, 500, "internal", sl_strerror(rc), NULL, NULL);
    }
    return false;
}

/* Parses the query into *doc; false after writing the refusal (p, when
 * given, counts it). */
static bool parse_query(sl__policy *p, const gql_request *q, sl_gql_doc **doc, sl__buf *out,
                        bool keep) {
    sl_gql_error err = {0};
    int rc = sl_gql_parse(q->query, q->query_len, NULL, doc, &err);
    if (rc == SL_OK) return true;
    return refuse_query(p, rc, &err, NULL, out, keep);
}

/* The query's cost under p's graphql: block; false after writing the
 * refusal (nothing is charged). */
static bool query_cost(sl__policy *p, const gql_request *q, sl_gql_cost_result *cost, sl__buf *out,
                       bool keep) {
    sl_gql_doc *doc = NULL;
    if (!parse_query(p, q, &doc, out, keep)) return false;
    sl_gql_error err = {0};
    sl_gql_options o;
    sl_gql_options_init(&o);
    const sl__policy_graphql *g = &p->cfg.graphql;
    if (g->configured) {
        o.scheme = (sl_gql_scheme)g->scheme;
        o.divisor = g->divisor;
        o.default_page = g->default_page;
        o.max_cost = g->max_cost;
    }
    o.operation = q->operation;
    o.vars = q->vars;
    o.nvars = q->nvars;
    int rc = sl_gql_cost(doc, &o, cost, &err);
    sl_gql_free(doc);
    if (rc == SL_OK && cost->points > (uint64_t)SL__GQL_POINTS_MAX) {
        rc = SL_ECOST;
        snprintf(err.message, sizeof err.message,
                 "The query costs %llu points, more than any budget (10^12).",
                 (unsigned long long)cost->points);
    }
    if (rc == SL_OK) return true;
    return refuse_query(p, rc, &err, cost, out, keep);
}

/* POST /v1/graphql without a policy: the config's rules decide, from the
 * headers a proxy sets, as /v1/auth does; their limits with cost: graphql
 * are charged the query's points (policy/rules.h). */
static bool by_rules(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                     bool keep) {
    static _Thread_local gql_request q; /* large (the variables): not on the stack */
    memset(&q, 0, sizeof q);
    sl_gql_doc *doc = NULL;
    if (read_request(r, &q, out, keep, NULL) && parse_query(NULL, &q, &doc, out, keep)) {
        sl__rules_query query = {
            .doc = doc, .operation = q.operation, .vars = q.vars, .nvars = q.nvars};
        keep = sl__http_auth_decide(rq, r, out, keep, &query);
    }
    sl_gql_free(doc);
    cJSON_Delete(q.json);
    q.json = NULL;
    return keep;
}

bool sl__http_graphql_handle(const sl__request_ctx *rq, const sl__http_request *r, sl__buf *out,
                             bool keep) {
    char policy[SL__POLICY_NAME_MAX + 2], key[KEY_MAX + 1];
    long n = sl__http_query_param(r->query, r->query_len, "policy", policy, sizeof policy);
    if (n == -1) return by_rules(rq, r, out, keep);
    if (n < 0 || n > SL__POLICY_NAME_MAX) {
        send_error(out, keep, 400, "bad_policy",
                   "the policy parameter is malformed (a bad %-escape, or %00) or longer than "
                   "63 bytes",
                   NULL, NULL);
        return keep;
    }
    long kn = sl__http_query_param(r->query, r->query_len, "key", key, sizeof key);
    if (kn == -1) {
        send_error(out, keep, 400, "missing_key", "the key parameter is required", NULL, NULL);
        return keep;
    }
    if (kn < 0) {
        send_error(out, keep, 400, "bad_key",
                   "the key parameter is malformed (a bad %-escape, or %00: a key cannot contain "
                   "NUL) or longer than 1024 bytes",
                   NULL, NULL);
        return keep;
    }
    sl__policy *p = sl__policy_find(rq->policies, policy, (size_t)n);
    if (!p) {
        char msg[128];
        snprintf(msg, sizeof msg, "no policy named \"%s\"", policy);
        send_error(out, keep, 404, "unknown_policy", msg, NULL, NULL);
        return keep;
    }
    static _Thread_local gql_request q; /* large (the variables): not on the stack */
    memset(&q, 0, sizeof q);
    sl_gql_cost_result cost;
    bool ok = read_request(r, &q, out, keep, p) && query_cost(p, &q, &cost, out, keep);
    cJSON_Delete(q.json);
    q.json = NULL;
    if (!ok) return keep;

    sl__decide_item item = sl__policy_use(p, key, (size_t)kn, (int64_t)cost.points, false);
    sl__decide_call *call = sl__decide_call_new(&item, 1, NULL, NULL, sizeof(gql_ctx));
    if (!call) {
        send_error(out, keep, 500, "internal", "out of memory", NULL, NULL);
        return keep;
    }
    int64_t now = rq->now;
    gql_ctx *g = sl__decide_call_user(call);
    g->keep = keep;
    g->now = now;
    g->cost = cost;
    sl__decide_call_hold(call, rq->policies);
    call->done = gql_done;
    bool answered;
    sl__reply_begin(&g->reply, rq->slot, out, &answered);
    sl__engine_decide(rq->decider, call, now);
    if (!answered && !sl__reply_wait(&g->reply))
        send_error(out, keep, 500, "internal", "out of memory", NULL, NULL);
    return keep;
}
