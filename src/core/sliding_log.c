/* sliding_log.c: the exact sliding window. The state is a ring of the times
 * of the last N counted requests (a request of cost c is c entries), oldest
 * first; entries with t <= now - P are gone. Allowed iff live + c <= N.
 * Memory: 16 bytes + 8 per unit of the limit, fixed per key.
 * New entries are stamped max(now, latest time this key was asked about), so
 * the ring stays sorted and a clock that steps back cannot stamp a request
 * early (which would let it slide out early); expiry uses the caller's now,
 * so a clock that goes back expires less, never more. The state, the
 * expiry and a refusal that records nothing are in sliding_log.h (inline in
 * the keyed table's check); the charged path is here. */
#include "core/sliding_log.h"

void sl__sliding_log_init(const sl__plan *plan, void *state, int64_t now) {
    (void)now;
    sl__log_state *s = state;
    s->head = 0;
    s->len = 0;
    s->seen = 0;
    if (plan->start_empty) {
        s->seen = plan->params.origin;
        for (int64_t i = 0; i < plan->limit; i++) s->t[i] = plan->params.origin;
        s->len = (uint32_t)plan->limit;
    }
}
/* How long until the entry at index i of the log after this call slides
 * out: its kept entries from ring offset `first`, then fresh ones stamped
 * `stamp` (i >= kept). */
static inline int64_t slides_out(const sl__log_state *s, int64_t N, int64_t P, uint32_t first,
                                 int64_t kept, int64_t i, int64_t stamp, int64_t now) {
    int64_t t = i < kept ? sl__log_at(s, N, first + (uint32_t)i) : stamp;
    return sl__max64(0, t + P - now);
}

/* The charged path (sliding_log.h). */
void sl__sliding_log_charge(const sl__plan *plan, sl__log_state *s, int64_t cost, int64_t now,
                            sl__mode mode, uint32_t gone, int64_t live, bool allowed, int64_t stamp,
                            sl_decision *d) {
    const int64_t N = plan->limit, P = plan->period;
    /* Charged (allowed, or a counted rejection). The log after this call:
     * the live entries minus the `dropped` oldest (only a counted rejection
     * can push entries out), then `fresh` new entries stamped `stamp`; at
     * most N in all. Everything below is computed on this view first, then
     * written unless peeking. */
    int64_t after = sl__min64(live + cost, N);
    int64_t dropped = sl__min64(live, live + cost - after);
    int64_t fresh = after - (live - dropped);
    uint32_t first = gone + (uint32_t)dropped; /* ring offset of the oldest kept entry */
    int64_t kept = live - dropped;

    d->allowed = allowed;
    d->limit = N;
    d->remaining = N - after;
    d->delay = 0;
    /* the newest entry; fresh > 0 puts it among the fresh ones */
    d->reset_after = after == 0 ? 0 : slides_out(s, N, P, first, kept, after - 1, stamp, now);
    /* The (after + cost - N)-th oldest entry must slide out first;
     * 1 <= that <= after because cost <= N. */
    d->retry_after =
        allowed ? 0 : slides_out(s, N, P, first, kept, after + cost - N - 1, stamp, now);

    if (mode != SL__PEEK) {
        sl__log_keep(s, N, first, kept, stamp);
        for (int64_t k = 0; k < fresh; k++) {
            s->t[sl__log_ring((uint64_t)N, s->head, s->len)] = stamp;
            s->len++;
        }
    }
}

SL__HOT void sl__sliding_log_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                                    sl__mode mode, sl_decision *d) {
    sl__sliding_log_decide_inline(plan, state, cost, now, mode, d);
}

bool sl__sliding_log_fresh(const sl__plan *plan, const void *state, int64_t now) {
    const sl__log_state *s = state;
    return s->len == 0 || sl__log_at(s, plan->limit, s->len - 1) <= now - plan->period;
}
