/* hold.h: answers held until their release time, served fairly across
 * tenants (docs/protection.md, "Held answers"). A leaky-queue policy with
 * `hold:` lets GET /v1/auth keep its allowed answer until the queue's
 * release time instead of answering at once with delay_ms, so that nginx,
 * waiting for its auth subrequest, forwards the smoothed flow of its own
 * `limit_req burst=B` (without nodelay).
 *
 * Groups and fairness. Held answers are grouped by the queue that granted
 * their release times (the policy and its key). A group's release times
 * are kept as they were granted; each time that comes releases one answer
 * of the group, chosen by the weighted fair queue across tenants
 * (sluice/fairq.h: deficit round robin, cost 1 an answer, the tenant's
 * weight its plan's), not necessarily the answer that time was granted
 * for. So what leaves a group is the policy's flow (never more answers
 * than the queue granted times, never earlier than they were granted),
 * and who goes first within it is fair: a tenant's burst delays its own
 * answers, a small tenant's single answer takes one of the next times.
 *
 * Bounds (a hostile client controls how many it sends): at most max_held
 * answers held in all (one sl__hold per worker) and the entry's per_tenant
 * of one tenant in one group; a push beyond them is refused (the caller refuses
 * the request at once). A cancelled answer (its client went away) frees its
 * place at once and leaves its release time to the group's next answer (or
 * to nobody); at most 2 x max_held times are kept, beyond it a push is
 * refused too. Memory: the times array (2 x max_held entries) and the
 * group index at creation, then one group, fair queue and item per use.
 *
 * The clock. Release times and `now` are in the caller's clock (Unix ns,
 * the worker's). With a loop, a timer on it releases what is due
 * (sl_now()); without one (tests), the caller runs sl__hold_run with its
 * own clock. Not thread-safe: one per worker, used on its loop only. */
#ifndef SLUICE_SERVER_HOLD_H
#define SLUICE_SERVER_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct sl__hold sl__hold;
typedef struct sl__hold_item sl__hold_item;

/* What releases a held answer: writes it (the item is already gone). */
typedef void (*sl__hold_fn)(void *arg);

typedef struct sl__hold_entry {
    const char *group; /* the queue that granted the time (policy and key): len bytes */
    size_t group_len;
    const char *tenant; /* whom the answer is for: at most SL_KEY_MAX bytes */
    size_t tenant_len;
    uint32_t weight; /* the tenant's weight, 1..SL_FAIRQ_WEIGHT_MAX; 0: 1 */
    int64_t release; /* the granted release time (the caller's clock) */
    /* the tenant's answers held in the group at most (0 or above max_held:
       max_held); the group's first entry's counts */
    size_t per_tenant;
    sl__hold_fn fn; /* called once, when a time of the group comes */
    void *arg;      /* fn's, and what sl__hold_cancel gives back */
} sl__hold_entry;

/* A hold of at most max_held answers (>= 1). loop: where its timer runs, or
 * NULL (no timer: sl__hold_run by hand). NULL: out of memory or max_held out
 * of range. */
sl__hold *sl__hold_new(size_t max_held, uv_loop_t *loop);

/* Holds e (the strings are copied). Returns 0 and *out (the item, for
 * sl__hold_cancel, valid until fn runs or it is cancelled), SL_ETOOMANY (a
 * bound reached: nothing held), SL_EKEY (tenant too long), SL_ENOMEM. A
 * release time already passed is released at the next run (the timer's
 * next turn), never inside this call. */
int sl__hold_push(sl__hold *h, const sl__hold_entry *e, sl__hold_item **out);

/* Cancels a held answer (its connection closed): fn is never called for
 * it. Returns its arg. */
void *sl__hold_cancel(sl__hold *h, sl__hold_item *it);

/* Releases what is due at `now`: one answer per release time that came,
 * in fair order within each group, calling fn for each. Returns how many
 * were released. fn may push or cancel other items. */
size_t sl__hold_run(sl__hold *h, int64_t now);

/* The earliest release time pending, INT64_MAX when none. */
int64_t sl__hold_next(const sl__hold *h);

/* Answers held now. */
size_t sl__hold_count(const sl__hold *h);

/* Stops and closes the timer (the worker stops: no answer is held any more,
 * their connections having closed); the loop must run once afterwards,
 * before sl__hold_free. Fine without a loop. */
void sl__hold_close(sl__hold *h);

/* Frees the hold. Items still held are dropped without their fn (error
 * paths only: their connections are gone). NULL is fine. */
void sl__hold_free(sl__hold *h);

#endif
