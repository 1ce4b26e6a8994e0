/* hosts.c: per-host state (AIMD pacer, slow-down time) in a small LRU table,
 * and the AIMD step. See hosts.h. */
#include "client/hosts.h"

#include <stdlib.h>
#include <string.h>

sl__host *sl__hosts_get(sl__hosts *h, const char *key, bool create) {
    h->tick++;
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->v[i].key, key) == 0) {
            h->v[i].used = h->tick;
            return &h->v[i];
        }
    }
    if (!create) return NULL;
    char *k = strdup(key);
    if (!k) return NULL;
    sl__host *slot;
    if (h->n < SL__MAX_HOSTS) {
        slot = &h->v[h->n++];
    } else {
        slot = &h->v[0];
        for (size_t i = 1; i < h->n; i++)
            if (h->v[i].used < slot->used) slot = &h->v[i];
        free(slot->key);
        sl_limiter_destroy(slot->pacer);
    }
    *slot =
        (sl__host){.key = k, .pacer = NULL, .rate = 0, .not_before = INT64_MIN, .used = h->tick};
    return slot;
}

void sl__hosts_free(sl__hosts *h) {
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].key);
        sl_limiter_destroy(h->v[i].pacer);
    }
    h->n = 0;
}

int64_t sl__aimd_next(const sl_client_aimd *a, int64_t rate, int status) {
    int64_t next = rate;
    if (status == 429 || status == 503) {
        next = (int64_t)((__int128)rate * a->decrease_ppm / 1000000); /* rounded down */
        if (next < a->floor) next = a->floor;
    } else if (status >= 200 && status < 400) {
        next = rate + a->increase;
        if (next > a->cap) next = a->cap;
    }
    return next;
}
