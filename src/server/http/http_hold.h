/* http_hold.h: which /v1/auth answers wait for their release time
 * (docs/protection.md, "Held answers"; the holding itself: server/hold.h).
 * An allowed answer is held when a limit it passed is a leaky queue with
 * `hold:` that delayed it; for how long, whom for (the tenant and its
 * weight) and, when it cannot be held, how it is refused. */
#ifndef SLUICE_SERVER_HTTP_HOLD_H
#define SLUICE_SERVER_HTTP_HOLD_H

#include <stddef.h>
#include <stdint.h>

#include "policy/rules.h"

/* The item an allowed answer waits for: the enforced, decided one with
 * `hold:` and the longest delay (set in *delay, ns > 0); a->n when none (the
 * answer goes at once, its delay only told). */
size_t sl__http_hold_pick(const sl__rules_answer *a, int64_t *delay);

/* Whether the delay is within the item's policy's hold: (else the request
 * is refused at once). */
bool sl__http_hold_fits(const sl__rules_answer *a, size_t i, int64_t delay);

/* How many of one tenant's answers item i's queue holds at most. */
size_t sl__http_hold_per_tenant(const sl__rules_answer *a, size_t i);

/* The fair queue's weight of the request's tenant in item i's queue: its
 * tier's under the policy's hold_weights, else 1. */
uint32_t sl__http_hold_weight(const sl__rules_answer *a, size_t i);

/* Whom the answer is for, in the fair queue: the key's organisation, the
 * API key, or the client address (in that order of what the request has),
 * pointing into a (*len 0: one anonymous tenant). */
void sl__http_hold_tenant(const sl__rules_answer *a, const char **tenant, size_t *len);

/* Turns an allowed answer that cannot wait into a refusal by item i (403
 * with Retry-After: the delay): the hold is full or the delay longer than
 * hold:. The queue's place it took is not given back. */
void sl__http_hold_refuse(sl__rules_answer *a, size_t i, int64_t delay);

#endif
