/* http_hold.c: which /v1/auth answers wait, whom for, and their refusal
 * when they cannot (http_hold.h). */
#include <stdatomic.h>
#include <string.h>

#include "policy/policy.h"
#include "server/http/http_hold.h"
#include "sluice/table.h"

size_t sl__http_hold_pick(const sl__rules_answer *a, int64_t *delay) {
    size_t pick = a->n;
    *delay = 0;
    if (a->verdict != SL__VERDICT_ALLOW) return pick;
    for (size_t i = 0; i < a->n; i++) {
        const sl__policy_item *it = &a->items[i];
        if (!it->decided || it->shadow || atomic_load(&it->policy->lim.shadow)) continue;
        if (it->policy->cfg.hold <= 0 || !it->decision.allowed) continue;
        if (it->decision.delay > *delay) {
            *delay = it->decision.delay;
            pick = i;
        }
    }
    return pick;
}

bool sl__http_hold_fits(const sl__rules_answer *a, size_t i, int64_t delay) {
    return delay <= a->items[i].policy->cfg.hold;
}

size_t sl__http_hold_per_tenant(const sl__rules_answer *a, size_t i) {
    int64_t n = a->items[i].policy->cfg.hold_per_tenant;
    return n > 0 ? (size_t)n : SL__HOLD_PER_TENANT;
}

uint32_t sl__http_hold_weight(const sl__rules_answer *a, size_t i) {
    const sl__policy_config *pc = &a->items[i].policy->cfg;
    for (unsigned j = 0; a->tier_name && j < pc->nhold_weights; j++)
        if (strcmp(pc->hold_weights[j].tier, a->tier_name) == 0) return pc->hold_weights[j].weight;
    return 1;
}

void sl__http_hold_tenant(const sl__rules_answer *a, const char **tenant, size_t *len) {
    if (a->key && a->key->org && a->key->orglen) {
        *tenant = a->key->org;
        *len = a->key->orglen;
    } else if (a->key) {
        *tenant = a->key->key;
        *len = a->key->keylen;
    } else if (a->have_client) {
        *tenant = (const char *)a->client.b;
        *len = sizeof a->client.b;
    } else {
        *tenant = "";
        *len = 0;
    }
    if (*len > SL_KEY_MAX) *len = SL_KEY_MAX; /* the fair queue's bound: a longer key's prefix */
}

void sl__http_hold_refuse(sl__rules_answer *a, size_t i, int64_t delay) {
    sl_decision *d = &a->items[i].decision;
    d->allowed = false;
    d->retry_after = delay;
    d->delay = 0;
    a->verdict = SL__VERDICT_LIMITED;
    a->reason = "hold_full";
    a->message = "the answer cannot be held until its release time";
    a->refused = i;
}
