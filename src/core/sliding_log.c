/* sliding_log.c: the exact sliding window. The state is a ring of the times
 * of the last N counted requests (a request of cost c is c entries), oldest
 * first; entries with t <= now - P are gone. Allowed iff live + c <= N.
 * Memory: 16 bytes + 8 per unit of the limit, fixed per key.
 * New entries are stamped max(now, latest time this key was asked about), so
 * the ring stays sorted and a clock that steps back cannot stamp a request
 * early (which would let it slide out early); expiry uses the caller's now,
 * so a clock that goes back expires less, never more. */
#include "core/algorithm.h"

typedef struct log_state {
    uint32_t head; /* index of the oldest entry */
    uint32_t len;
    int64_t seen; /* latest `now` of a recorded (non-peek) call */
    int64_t t[];  /* capacity N */
} log_state;

/* (head + i) mod cap for head, i < cap: a compare instead of a division. */
static inline uint64_t ring(uint64_t cap, uint64_t head, uint64_t i) {
    uint64_t x = head + i;
    return x >= cap ? x - cap : x;
}

/* The i-th oldest entry, i < cap. */
static inline int64_t at(const log_state *s, int64_t cap, uint32_t i) {
    return s->t[ring((uint64_t)cap, s->head, i)];
}

void sl__sliding_log_init(const sl__plan *plan, void *state, int64_t now) {
    (void)now;
    log_state *s = state;
    s->head = 0;
    s->len = 0;
    s->seen = 0;
    if (plan->start_empty) {
        s->seen = plan->params.origin;
        for (int64_t i = 0; i < plan->limit; i++) s->t[i] = plan->params.origin;
        s->len = (uint32_t)plan->limit;
    }
}

/* Number of entries that have slid out at now. The oldest first, without
 * the ring's wrap (head < cap): on a hot key it is still live, the answer
 * is 0 and the loop never runs. */
static uint32_t expired(const log_state *s, int64_t cap, int64_t now, int64_t P) {
    int64_t out = now - P;
    if (s->len == 0 || s->t[s->head] > out) return 0;
    uint32_t k = 1;
    while (k < s->len && at(s, cap, k) <= out) k++;
    return k;
}

/* How long until the entry at index i of the log after this call slides
 * out: its kept entries from ring offset `first`, then fresh ones stamped
 * `stamp` (i >= kept). */
static inline int64_t slides_out(const log_state *s, int64_t N, int64_t P, uint32_t first,
                                 int64_t kept, int64_t i, int64_t stamp, int64_t now) {
    int64_t t = i < kept ? at(s, N, first + (uint32_t)i) : stamp;
    return sl__max64(0, t + P - now);
}

/* Writes the log's kept entries (from ring offset first) and its stamp. */
static inline void keep(log_state *s, int64_t N, uint32_t first, int64_t kept, int64_t stamp) {
    s->seen = stamp;
    s->head = (uint32_t)ring((uint64_t)N, s->head, first);
    s->len = (uint32_t)kept;
}

/* A refusal that records nothing (a hot key over its limit, the common case
 * under abuse): the decide below with nothing added, i.e. after = kept =
 * live, first = gone, nothing fresh. live >= 1 since live + cost > N >= cost
 * (max_cost), so the newest entry exists, and both entries the answer reads
 * are kept ones: live - 1 and live + cost - N - 1 lie in [0, live). With
 * nothing expired (gone = 0) the ring stays as it is and only the stamp is
 * written. */
static void refuse(log_state *s, int64_t N, int64_t P, uint32_t gone, int64_t live, int64_t cost,
                   int64_t now, sl__mode mode, int64_t stamp, sl_decision *d) {
    d->allowed = false;
    d->limit = N;
    d->remaining = N - live;
    d->delay = 0;
    d->reset_after = sl__max64(0, at(s, N, s->len - 1) + P - now); /* gone + live - 1 */
    d->retry_after = sl__max64(0, at(s, N, gone + (uint32_t)(live + cost - N - 1)) + P - now);
    if (mode == SL__PEEK) return;
    if (gone)
        keep(s, N, gone, live, stamp);
    else
        s->seen = stamp;
}

SL__HOT void sl__sliding_log_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                                    sl__mode mode, sl_decision *d) {
    log_state *s = state;
    const int64_t N = plan->limit, P = plan->period;
    uint32_t gone = expired(s, N, now, P);
    int64_t live = (int64_t)s->len - gone;

    bool allowed = live + cost <= N;
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t stamp = sl__max64(now, s->seen);
    if (!charge) {
        refuse(s, N, P, gone, live, cost, now, mode, stamp, d);
        return;
    }

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
        keep(s, N, first, kept, stamp);
        for (int64_t k = 0; k < fresh; k++) {
            s->t[ring((uint64_t)N, s->head, s->len)] = stamp;
            s->len++;
        }
    }
}

bool sl__sliding_log_fresh(const sl__plan *plan, const void *state, int64_t now) {
    const log_state *s = state;
    return s->len == 0 || at(s, plan->limit, s->len - 1) <= now - plan->period;
}
