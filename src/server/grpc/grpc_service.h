/* grpc_service.h: the two gRPC methods sluiced serves, independent of
 * HTTP/2: decoding one request message (protobuf-c, into a bounded arena),
 * deciding, encoding the answer as one length-prefixed gRPC message.
 *
 * - envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit: the
 *   RateLimitRequest becomes an sl__rls_request (policy/domains.h), the
 *   decision a RateLimitResponse.
 * - grpc.health.v1.Health/Check: "" and the rate-limit service's name are
 *   SERVING (NOT_SERVING while draining); any other name is NOT_FOUND. */
#ifndef SLUICE_SERVER_GRPC_SERVICE_H
#define SLUICE_SERVER_GRPC_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/domains.h"
#include "util/buf.h"

/* gRPC status codes (google/rpc/code.proto). */
enum {
    SL__GRPC_OK = 0,
    SL__GRPC_CANCELLED = 1,
    SL__GRPC_INVALID_ARGUMENT = 3,
    SL__GRPC_DEADLINE_EXCEEDED = 4,
    SL__GRPC_NOT_FOUND = 5,
    SL__GRPC_RESOURCE_EXHAUSTED = 8,
    SL__GRPC_UNIMPLEMENTED = 12,
    SL__GRPC_INTERNAL = 13,
    SL__GRPC_UNAVAILABLE = 14
};

typedef enum sl__grpc_method_id {
    SL__GRPC_M_UNKNOWN = 0,
    SL__GRPC_M_SHOULD_RATE_LIMIT,
    SL__GRPC_M_HEALTH_CHECK
} sl__grpc_method_id;

#define SL__GRPC_RLS_PATH    "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
#define SL__GRPC_HEALTH_PATH "/grpc.health.v1.Health/Check"
#define SL__GRPC_RLS_SERVICE "envoy.service.ratelimit.v3.RateLimitService"

/* The method of a :path, or SL__GRPC_M_UNKNOWN. */
sl__grpc_method_id sl__grpc_method(const char *path, size_t len);

/* A bump allocator for decoding: reset after every call, its first block
 * kept; at most `cap` bytes in all (decoding fails beyond). */
typedef struct sl__grpc_arena {
    struct sl__grpc_arena_block *first, *cur; /* blocks from first to cur */
    size_t used, cap;
} sl__grpc_arena;

void sl__grpc_arena_reset(sl__grpc_arena *a);
void sl__grpc_arena_free(sl__grpc_arena *a);

/* What a call needs from the server. */
typedef struct sl__grpc_call_env {
    sl__domain_set *domains; /* may be NULL: no rules */
    int64_t now;             /* Unix ns */
    bool serving;            /* false while draining */
    sl__grpc_arena *arena;
} sl__grpc_call_env;

/* Runs method m on one message (msg, len). On SL__GRPC_OK the answer, as a
 * whole length-prefixed gRPC message, is appended to out; otherwise *message
 * says why (static text) and out is untouched. ShouldRateLimit is decided
 * here on the memory store (tests, tools); sluiced's sessions decide it on
 * their worker's store with sl__grpc_rls_prepare. */
int sl__grpc_call(const sl__grpc_call_env *env, sl__grpc_method_id m, const uint8_t *msg,
                  size_t len, sl__buf *out, const char **message);

/* ShouldRateLimit: decodes the message and prepares the decision
 * (sl__domain_prepare). When table limits apply, *call is set (with
 * user_bytes for the caller: sl__domain_user) and the caller decides it
 * (sl__engine_decide) and in its done appends the response to its output
 * with sl__grpc_rls_answer (then frees the call); otherwise the response is
 * appended to out. Returns SL__GRPC_OK or a status with *message (both). */
struct sl__decide_call;
int sl__grpc_rls_prepare(const sl__grpc_call_env *env, const uint8_t *msg, size_t len,
                         size_t user_bytes, struct sl__decide_call **call, sl__buf *out,
                         const char **message);
int sl__grpc_rls_answer(struct sl__decide_call *call, sl__buf *out, const char **message);

/* How sl__grpc_rls_decode reads a RateLimitRequest: AUTO as sluiced does
 * (the direct decoder for the shape Envoy sends, protobuf-c for anything
 * else), or one of the two alone, for the tests and fuzz_grpc that compare
 * them. */
typedef enum sl__grpc_decoder {
    SL__GRPC_DECODE_AUTO = 0,
    SL__GRPC_DECODE_PROTOBUF_C,
    SL__GRPC_DECODE_DIRECT
} sl__grpc_decoder;

#define SL__GRPC_DECLINED (-1) /* SL__GRPC_DECODE_DIRECT: not a message it takes */

/* Decodes the RateLimitRequest (msg, len) into q, its descriptors in ds
 * (SL__RLS_MAX_DESCRIPTORS of them), entries and strings in env->arena,
 * which must have been reset (sl__grpc_arena_reset) and given its cap
 * before; strings may point into msg. Returns SL__GRPC_OK, a status with
 * *message, or SL__GRPC_DECLINED (the arena reset again). */
int sl__grpc_rls_decode(const sl__grpc_call_env *env, const uint8_t *msg, size_t len,
                        sl__rls_request *q, sl__rls_descriptor *ds, const char **message,
                        sl__grpc_decoder how);

/* Appends a RateLimitResponse (overall_code, one DescriptorStatus per
 * status, dynamic_metadata from sl__domain_dynamic_metadata when there is
 * some) as one length-prefixed gRPC message: the same bytes protobuf-c
 * would write. Returns 0, or -1 (out of memory, or n > SL__RLS_MAX_DESCRIPTORS). */
int sl__grpc_put_rls_response(sl__buf *out, int overall, const sl__rls_status *st, size_t n);

/* Appends the google.protobuf.Struct (its fields, no tag or length) of the
 * JSON object json[0..len) as util/json.h reads it (grpc_struct.c). Returns
 * 0, or -1 (not such an object, or out of memory). */
int sl__grpc_put_struct(sl__buf *out, const char *json, size_t len);

#endif
