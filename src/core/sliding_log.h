/* sliding_log.h (internal): the sliding log's state and its refusal, inline
 * so that the keyed table's check for this algorithm decides a refused hot
 * key (the common case under abuse) without a call (core/table.c);
 * sliding_log.c has the rest (the charged path, init, the fresh test) and
 * the maths in its header comment. */
#ifndef SLUICE_CORE_SLIDING_LOG_H
#define SLUICE_CORE_SLIDING_LOG_H

#include "core/algorithm.h"

typedef struct sl__log_state {
    uint32_t head; /* index of the oldest entry */
    uint32_t len;
    int64_t seen; /* latest `now` of a recorded (non-peek) call */
    int64_t t[];  /* capacity N */
} sl__log_state;

/* (head + i) mod cap for head, i < cap: a compare instead of a division. */
static inline uint64_t sl__log_ring(uint64_t cap, uint64_t head, uint64_t i) {
    uint64_t x = head + i;
    return x >= cap ? x - cap : x;
}

/* The i-th oldest entry, i < cap. */
static inline int64_t sl__log_at(const sl__log_state *s, int64_t cap, uint32_t i) {
    return s->t[sl__log_ring((uint64_t)cap, s->head, i)];
}

/* Number of entries that have slid out at now. The oldest first, without
 * the ring's wrap (head < cap): on a hot key it is still live, the answer
 * is 0 and the loop never runs. */
static inline uint32_t sl__log_expired(const sl__log_state *s, int64_t cap, int64_t now,
                                       int64_t P) {
    int64_t out = now - P;
    if (s->len == 0 || s->t[s->head] > out) return 0;
    uint32_t k = 1;
    while (k < s->len && sl__log_at(s, cap, k) <= out) k++;
    return k;
}

/* Writes the log's kept entries (from ring offset first) and its stamp. */
static inline void sl__log_keep(sl__log_state *s, int64_t N, uint32_t first, int64_t kept,
                                int64_t stamp) {
    s->seen = stamp;
    s->head = (uint32_t)sl__log_ring((uint64_t)N, s->head, first);
    s->len = (uint32_t)kept;
}

/* A refusal that records nothing (a hot key over its limit, the common case
 * under abuse): the charged path (sliding_log.c) with nothing added, i.e.
 * after = kept = live, first = gone, nothing fresh. live >= 1 since live +
 * cost > N >= cost (max_cost), so the newest entry exists, and both entries
 * the answer reads are kept ones: live - 1 and live + cost - N - 1 lie in
 * [0, live). With nothing expired (gone = 0) the ring stays as it is and
 * only the stamp is written. */
static inline void sl__log_refuse(sl__log_state *s, int64_t N, int64_t P, uint32_t gone,
                                  int64_t live, int64_t cost, int64_t now, sl__mode mode,
                                  int64_t stamp, sl_decision *d) {
    d->allowed = false;
    d->limit = N;
    d->remaining = N - live;
    d->delay = 0;
    d->reset_after = sl__max64(0, sl__log_at(s, N, s->len - 1) + P - now); /* gone + live - 1 */
    d->retry_after =
        sl__max64(0, sl__log_at(s, N, gone + (uint32_t)(live + cost - N - 1)) + P - now);
    if (mode == SL__PEEK) return;
    if (gone)
        sl__log_keep(s, N, gone, live, stamp);
    else
        s->seen = stamp;
}

/* The decision's charged path (allowed, or a counted rejection), once
 * sl__sliding_log_decide_inline has found gone, live, allowed and the
 * stamp (sliding_log.c). */
void sl__sliding_log_charge(const sl__plan *plan, sl__log_state *s, int64_t cost, int64_t now,
                            sl__mode mode, uint32_t gone, int64_t live, bool allowed, int64_t stamp,
                            sl_decision *d);

/* sl__sliding_log_decide, inline: the refusal here, the charged path a
 * call. */
static inline void sl__sliding_log_decide_inline(const sl__plan *plan, void *state, int64_t cost,
                                                 int64_t now, sl__mode mode, sl_decision *d) {
    sl__log_state *s = state;
    const int64_t N = plan->limit, P = plan->period;
    uint32_t gone = sl__log_expired(s, N, now, P);
    int64_t live = (int64_t)s->len - gone;

    bool allowed = live + cost <= N;
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t stamp = sl__max64(now, s->seen);
    if (!charge) {
        sl__log_refuse(s, N, P, gone, live, cost, now, mode, stamp, d);
        return;
    }
    sl__sliding_log_charge(plan, s, cost, now, mode, gone, live, allowed, stamp, d);
}

#endif
