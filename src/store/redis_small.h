/* redis_small.h: one call of a small one-key script (lease.lua,
 * retry.lua) on the worker's connections: the key under the store's
 * prefix and its cluster slot, EVALSHA and one EVAL with the source on
 * NOSCRIPT, the reply's four integers, and the breaker's retry time for
 * the fail modes. What differs per script (its arguments, what its reply
 * means, its fail mode) is the caller's, through two callbacks. */
#ifndef SLUICE_STORE_REDIS_SMALL_H
#define SLUICE_STORE_REDIS_SMALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/redis_client.h"
#include "store/store.h"
#include "util/buf.h"

typedef struct sl__small_call sl__small_call;

typedef struct sl__small_script {
    const char *source, *sha1; /* the script's text and its SHA1 (40 hex digits) */
    int nargs;                 /* the call's arguments, EVAL(SHA) and the script included */
    /* Writes the nargs - 4 arguments after the key (the call is EVALSHA,
     * sha1, 1, key, then these); a failed buffer is not sent, and answers
     * as Redis not answering. */
    void (*args)(sl__small_call *sc, sl__buf *b);
    /* The answer: good with v[0..4) the reply's integers, or not good
     * (Redis did not answer, or not as the script does). Called once;
     * sc is freed after it returns. */
    void (*reply)(sl__small_call *sc, bool good, const long long v[4]);
} sl__small_script;

struct sl__small_call {
    const sl__small_script *script;
    void *call; /* the caller's */
    sl__redis *redis;
    uv_loop_t *loop;
    const sl__redis_config *cfg;
    unsigned slot;
    bool with_source;
    size_t rkeylen;
    char rkey[]; /* prefix, ns and the client key: any bytes */
};

/* A call on s's Redis of `script` for the key (key, keylen) in namespace
 * ns, on behalf of `call`; NULL without memory (nothing sent). Send it
 * with sl__small_call_send. */
sl__small_call *sl__small_call_new(sl__store *s, const sl__small_script *script, void *call,
                                   const char *ns, const char *key, size_t keylen);
/* Sends sc's call (EVALSHA first); its answer goes to script->reply, and
 * sc is freed after that. */
void sl__small_call_send(sl__small_call *sc);
/* The time until the breaker tries sc's Redis node again, in ns, or the
 * breaker's cooldown when it is not open; at least 1 ms. */
int64_t sl__small_call_retry_after(const sl__small_call *sc);

#endif
