/* fuzz_grpc.c: libFuzzer target for the gRPC side of sluiced: HTTP/2 and
 * gRPC framing (src/server/grpc/grpc_session.c on nghttp2), the protobuf
 * decoding of ShouldRateLimit and Health/Check requests and the decisions
 * behind them (grpc_service.c, policy/domains.c), and the rule-file loader.
 *
 * The first byte picks the mode:
 * - 0: a connection. The client preface and an empty SETTINGS frame are put
 *   in front (so the fuzzer starts inside HTTP/2), the rest is fed in reads
 *   whose sizes come from the second byte, as a connection does; streams are
 *   answered against a small rule set, then the session is shut down.
 * - 1: the same without the preface (bytes that may not be HTTP/2 at all).
 * - 2: one ShouldRateLimit message (protobuf), decided and encoded; first
 *   decoded by the direct decoder and by protobuf-c alone: when the direct
 *   one takes it, protobuf-c takes it too, with the same fields.
 * - 3: one Health/Check message.
 * - 4: one rule file (YAML), loaded and compiled, then a request decided.
 * Properties: no crash, leak or overread (ASan); feed returns 0 or -1 and
 * nothing more is accepted after -1; an answer is a well-formed gRPC message
 * (prefix length = the rest); the output buffer never fails; a rule file
 * either loads or reports at least one error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/domains.h"
#include "server/grpc/grpc.h"
#include "server/grpc/grpc_service.h"
#include "server/request.h"
#include "sluice/clock.h"
#include "../unit/decide_helper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) abort();                                                                         \
    } while (0)

static const char RULES[] = "domain: d\n"
                            "descriptors:\n"
                            "  - key: k\n"
                            "    rate_limit: {unit: second, requests_per_unit: 3}\n"
                            "  - key: k\n"
                            "    value: v*\n"
                            "    share_threshold: true\n"
                            "    rate_limit: {unit: minute, requests_per_unit: 2, name: n}\n"
                            "  - key: a\n"
                            "    descriptors:\n"
                            "      - key: b\n"
                            "        shadow_mode: true\n"
                            "        rate_limit: {unit: hour, requests_per_unit: 1, algorithm: "
                            "gcra}\n"
                            "  - key: u\n"
                            "    rate_limit: {unlimited: true, replaces: [{name: n}]}\n"
                            "  - key: z\n"
                            "    rate_limit: {unit: day, requests_per_unit: 0}\n";

static sl__domain_set *rule_set(void) {
    static sl__domain_set *set;
    if (set) return set;
    sl__domain_rules *r = NULL;
    sl__config_errors e = {0};
    CHECK(sl__domain_rules_parse(RULES, sizeof RULES - 1, "fuzz.yaml", &r, &e) == 0);
    char err[128];
    CHECK(sl__domain_set_build(r, 1u << 20, NULL, 0, &set, err, sizeof err) == 0);
    sl__domain_rules_free(r);
    return set;
}

static void check_message(const sl__buf *b, size_t from) {
    CHECK(b->len >= from + 5);
    const uint8_t *p = (const uint8_t *)b->data + from;
    CHECK(p[0] == 0);
    uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    CHECK(n == b->len - from - 5);
}

static void connection(const uint8_t *data, size_t size, bool preface) {
    static sl__limits_config limits;
    limits.max_body_bytes = 2048;
    limits.max_header_bytes = 4096;
    sl__request_ctx rq = {.now = sl_now(), .domains = rule_set(), .limits = &limits};
    if (size < 1) return;
    uint32_t x = 0x9e3779b9u ^ data[0];
    bool split = data[0] & 1;
    data++;
    size--;
    sl__buf out;
    sl__buf_init(&out);
    sl__grpc_session *s = sl__grpc_session_new(&limits, &out);
    CHECK(s);
    int rc = 0;
    if (preface) {
        static const char start[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                    "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
        size_t used;
        rc = sl__grpc_session_feed(s, &rq, start, sizeof start - 1, &used);
        CHECK(rc == 0);
    }
    for (size_t off = 0; off < size && rc == 0;) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        size_t piece = split ? 1 + x % 61 : size - off;
        if (piece > size - off) piece = size - off;
        char *chunk = malloc(piece); /* exact size: an overread is caught */
        CHECK(chunk);
        memcpy(chunk, data + off, piece);
        size_t used;
        rc = sl__grpc_session_feed(s, &rq, chunk, piece, &used);
        CHECK(rc != 0 || used == piece); /* no connection: never held back */
        CHECK(rc == 0 || rc == -1);
        free(chunk);
        off += piece;
        CHECK(!out.failed);
        if (out.len > (1u << 20)) sl__buf_reset(&out); /* the peer "read" it */
    }
    if (rc == 0) {
        sl__grpc_session_done(s);
        sl__grpc_session_shutdown(s);
        sl__grpc_session_done(s);
    }
    CHECK(!out.failed);
    sl__grpc_session_free(s);
    sl__buf_free(&out);
}

static bool same_text(const char *a, size_t an, const char *b, size_t bn) {
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* The direct decoder against protobuf-c's (grpc_service.h). */
static void decoders_agree(const uint8_t *data, size_t size) {
    static sl__grpc_arena a1, a2;
    static sl__rls_descriptor d1[SL__RLS_MAX_DESCRIPTORS], d2[SL__RLS_MAX_DESCRIPTORS];
    sl__grpc_call_env e1 = {.arena = &a1}, e2 = {.arena = &a2};
    sl__grpc_arena_reset(&a1);
    sl__grpc_arena_reset(&a2);
    a1.cap = a2.cap = 16 * 1024 + size * 48;
    sl__rls_request q1, q2;
    const char *m1 = NULL, *m2 = NULL;
    if (sl__grpc_rls_decode(&e1, data, size, &q1, d1, &m1, SL__GRPC_DECODE_DIRECT) != SL__GRPC_OK)
        return;
    CHECK(sl__grpc_rls_decode(&e2, data, size, &q2, d2, &m2, SL__GRPC_DECODE_PROTOBUF_C) ==
          SL__GRPC_OK);
    CHECK(same_text(q1.domain, q1.domain_len, q2.domain, q2.domain_len));
    CHECK(q1.hits_addend == q2.hits_addend && q1.ndescriptors == q2.ndescriptors);
    for (size_t i = 0; i < q1.ndescriptors; i++) {
        const sl__rls_descriptor *x = &d1[i], *y = &d2[i];
        CHECK(x->nentries == y->nentries && x->has_limit == y->has_limit &&
              x->has_hits == y->has_hits && x->hits == y->hits &&
              x->limit_requests_per_unit == y->limit_requests_per_unit &&
              x->limit_unit == y->limit_unit);
        for (size_t j = 0; j < x->nentries; j++) {
            CHECK(same_text(x->entries[j].key, x->entries[j].key_len, y->entries[j].key,
                            y->entries[j].key_len));
            CHECK(same_text(x->entries[j].value, x->entries[j].value_len, y->entries[j].value,
                            y->entries[j].value_len));
        }
    }
}

static void one_call(sl__grpc_method_id m, const uint8_t *data, size_t size) {
    static sl__grpc_arena arena;
    sl__grpc_call_env env = {.domains = rule_set(),
                             .now = INT64_C(1700000000) * SL_NS_PER_SEC,
                             .serving = true,
                             .arena = &arena};
    sl__buf out;
    sl__buf_init(&out);
    const char *message = NULL;
    int code = sl__grpc_call(&env, m, data, size, &out, &message);
    if (code == SL__GRPC_OK)
        check_message(&out, 0);
    else
        CHECK(message && out.len == 0);
    sl__buf_free(&out);
}

static void rule_file(const uint8_t *data, size_t size) {
    sl__domain_rules *r = NULL;
    static sl__config_errors e;
    e.n = 0;
    if (sl__domain_rules_parse((const char *)data, size, "fuzz.yaml", &r, &e) != 0) {
        CHECK(!r && e.n > 0);
        return;
    }
    CHECK(r && e.n == 0);
    sl__domain_set *s = NULL;
    char err[128];
    if (sl__domain_set_build(r, 1u << 20, NULL, 0, &s, err, sizeof err) == 0) {
        /* a request against the first domain, if any */
        sl__rls_entry en[2] = {{.key = "k", .key_len = 1, .value = "v", .value_len = 1},
                               {.key = "a", .key_len = 1, .value = "", .value_len = 0}};
        sl__rls_descriptor d[2] = {{.entries = en, .nentries = 1}, {.entries = en, .nentries = 2}};
        const char *dom = size > 8 ? "d" : "x";
        sl__rls_request q = {.domain = dom, .domain_len = 1, .descriptors = d, .ndescriptors = 2};
        sl__rls_status st[2];
        int overall;
        const char *message;
        domain_decide(s, &q, INT64_C(1700000000) * SL_NS_PER_SEC, st, &overall, &message);
        sl__domain_set_release(s);
    }
    sl__domain_rules_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0] % 5;
    data++;
    size--;
    switch (mode) {
    case 0:
        connection(data, size, true);
        break;
    case 1:
        connection(data, size, false);
        break;
    case 2:
        decoders_agree(data, size);
        one_call(SL__GRPC_M_SHOULD_RATE_LIMIT, data, size);
        break;
    case 3:
        one_call(SL__GRPC_M_HEALTH_CHECK, data, size);
        break;
    default:
        rule_file(data, size);
        break;
    }
    return 0;
}
