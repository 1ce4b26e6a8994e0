/* domains.c: placeholder until the envoyproxy/ratelimit rule files are
 * loaded: always the empty set. */
#include <stdatomic.h>
#include <stdlib.h>

#include "policy/domains.h"

struct sl_domain_set {
    atomic_int refs;
};

int sl__domain_set_create(const sl_config *cfg, sl_domain_set *prev, int64_t now,
                          sl_domain_set **out, char *err, size_t errlen) {
    (void)cfg;
    (void)prev;
    (void)now;
    (void)err;
    (void)errlen;
    sl_domain_set *s = calloc(1, sizeof *s);
    if (!s) return -1;
    atomic_init(&s->refs, 1);
    *out = s;
    return 0;
}

void sl__domain_set_retain(sl_domain_set *s) {
    atomic_fetch_add(&s->refs, 1);
}

void sl__domain_set_release(sl_domain_set *s) {
    if (s && atomic_fetch_sub(&s->refs, 1) == 1) free(s);
}
