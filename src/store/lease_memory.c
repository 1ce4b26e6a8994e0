/* lease_memory.c: the memory store's lease operation (store/lease.h): the
 * limit's own concurrency limiter (sluice/concurrency.h), decided inline. */
#include "sluice/error.h"
#include "store/lease.h"

void sl__memory_lease(sl__store *s, sl__lease_call *c) {
    (void)s;
    sl__lease_limit *l = c->limit;
    c->from = SL__FROM_REDIS; /* "the store itself" */
    c->in_flight = -1;
    switch (c->op) {
    case SL__LEASE_ACQUIRE:
        c->rc = sl_concurrency_acquire(l->conc, c->key, c->keylen, c->now, &c->acq);
        break;
    case SL__LEASE_RELEASE:
        c->rc = sl_concurrency_release(l->conc, c->key, c->keylen, c->id, c->now, &c->in_flight);
        break;
    case SL__LEASE_RENEW:
        c->rc = sl_concurrency_renew(l->conc, c->key, c->keylen, c->id, c->now, &c->lease);
        break;
    default:
        c->rc = SL_EINVAL;
    }
    c->done(c);
}
