/* retry_memory.c: the memory store's retry operation (store/retry.h): the
 * policy's own sl_retry (sluice/retry.h), decided inline; and the counters
 * every store's answer goes through. */
#include "sluice/error.h"
#include "store/retry.h"

void sl__memory_retry(sl__store *s, sl__retry_call *c) {
    (void)s;
    c->from = SL__FROM_REDIS; /* "the store itself" */
    c->rc = sl_retry_note(c->limit->mem, c->key, c->keylen, c->retry, c->now, &c->d);
    c->done(c);
}

void sl__retry_count(sl__retry_call *c) {
    sl__retry_limit *l = c->limit;
    if (!c->retry) {
        atomic_fetch_add_explicit(&l->firsts, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(c->d.allowed ? &l->allowed : &l->refused, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&l->from[c->from], 1, memory_order_relaxed);
}
