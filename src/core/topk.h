/* topk.h (internal): a bounded heavy-hitters sketch (space-saving): at most
 * `capacity` counters; any key whose true count exceeds total/capacity is
 * guaranteed to be present, and each count overestimates by at most its
 * `error`. Thread-safe (one short lock). Keys are copied, truncated to
 * SL__TOPK_KEY_MAX bytes. */
#ifndef SLUICE_CORE_TOPK_H
#define SLUICE_CORE_TOPK_H

#include <stddef.h>
#include <stdint.h>

#define SL__TOPK_KEY_MAX 128

typedef struct sl__topk sl__topk;

typedef struct sl__topk_item {
    char key[SL__TOPK_KEY_MAX];
    size_t keylen;
    uint64_t count; /* an upper bound of the true count */
    uint64_t error; /* count - error is a lower bound */
} sl__topk_item;

/* A sketch of `capacity` counters (1 to 2^20). Returns 0 and *out (free
 * with sl__topk_destroy), SL_EINVAL (capacity out of range; *out untouched)
 * or SL_ENOMEM. */
int sl__topk_create(size_t capacity, sl__topk **out);
void sl__topk_destroy(sl__topk *t);
void sl__topk_add(sl__topk *t, const char *key, size_t keylen, uint64_t weight);
/* Copies the heaviest up to `max` items, heaviest first; returns how many. */
size_t sl__topk_list(sl__topk *t, sl__topk_item *items, size_t max);

#endif
