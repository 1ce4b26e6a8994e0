/* sluice/limiter.h: one token bucket with the golang.org/x/time/rate verbs:
 * allow (never waits), reserve (book a future slot, cancel to give it back),
 * wait (sleep until the slot, or fail at once when it lies beyond the
 * deadline), and changing rate and burst while in use (for AIMD).
 *
 * Differences from x/time/rate, on purpose: the rate is an exact fraction
 * (no float drift), zero or negative rates are refused instead of meaning
 * "never" or "infinite", and a clock that goes backwards credits nothing.
 * Thread-safe: every call takes the limiter's own lock. */
#ifndef SLUICE_LIMITER_H
#define SLUICE_LIMITER_H

#include "sluice/clock.h"
#include "sluice/limit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_limiter sl_limiter;

/* Creates a limiter refilling at `rate`, holding at most `burst` tokens,
 * full at `now` (or empty at `now` with SL_START_EMPTY in flags). Returns 0
 * and *out (free with sl_limiter_destroy), or SL_ERATE, SL_EBURST,
 * SL_EOVERFLOW, SL_ENOMEM. */
SL_API int sl_limiter_create(sl_rate rate, int64_t burst, unsigned flags, int64_t now,
                             sl_limiter **out);
SL_API void sl_limiter_destroy(sl_limiter *l);

/* Takes n tokens at `now` if they are there; never waits, never goes into
 * debt. false also for n > burst or n < 0. n == 0 is always true (a peek
 * that changes nothing, also while in debt). A `now` older than the latest
 * time the limiter has seen takes the tokens that are there at that time. */
SL_API bool sl_limiter_allow(sl_limiter *l, int64_t n, int64_t now);

/* A booked slot. Fill by sl_limiter_reserve; read-only for the caller. */
typedef struct sl_reservation {
    bool ok;             /* false: nothing was booked */
    int64_t tokens;      /* n */
    int64_t time_to_act; /* when the caller may act (== now if no wait) */
    int64_t delay;       /* time_to_act - now at reservation time */
    sl_rate rate;        /* the rate when booked (reduced): sl_limiter_cancel uses it */
} sl_reservation;

/* Books n tokens at `now`, going into debt if needed, and says how long to
 * wait. A `now` older than the latest time the limiter has seen (threads'
 * clock readings race) takes the tokens that are there, and its slot counts
 * from that latest time (time_to_act = latest + debt / rate, delay includes
 * the step back): no slot comes before its tokens exist.
 * With max_wait >= 0, a slot further than max_wait away is not booked
 * (out->ok false, state unchanged, returns SL_EDEADLINE); max_wait < 0 means
 * no bound. Returns 0, SL_EINVAL (now outside 0..SL_TIME_MAX), SL_ECOST
 * (n < 0 or n > burst: never possible), SL_EDEADLINE, SL_EOVERFLOW (paying
 * the debt back would take more than 100 years at the current rate). */
SL_API int sl_limiter_reserve(sl_limiter *l, int64_t n, int64_t now, int64_t max_wait,
                              sl_reservation *out);

/* Gives back what `r` booked, as far as possible: nothing if r was not ok or
 * its time has come (time_to_act <= now); otherwise the x/time/rate rule, at
 * the rate r was booked at (r->rate): r's tokens minus (T - r's
 * time_to_act) * that rate, where T is the slot of the most recent
 * reservation (so after a rate change it may give back more than r's
 * tokens), rounded down, the bucket capped at its burst. Marks r as no
 * longer ok, so cancelling twice gives back nothing more. */
SL_API void sl_limiter_cancel(sl_limiter *l, sl_reservation *r, int64_t now);

/* Waits for n tokens: reserves with max_wait = deadline - clock->now(), and
 * sleeps with clock->sleep_until() when the slot is in the future. Fails at
 * once, without booking or sleeping, when the slot lies beyond the deadline.
 * deadline SL_NO_DEADLINE = wait as long as needed. clock NULL = the
 * monotonic system clock (so every other call must pass sl_now_monotonic()
 * times). Returns 0, SL_EDEADLINE, SL_ECOST, SL_EOVERFLOW. */
SL_API int sl_limiter_wait(sl_limiter *l, int64_t n, int64_t deadline, const sl_clock *clock);

/* Changes the rate or the burst from `now` on: tokens are first brought up
 * to `now` at the old rate, then kept (rounded down when the exact fraction
 * changes; a burst change clamps them to the new size). Reservations already
 * made keep their times. Returns 0 or SL_ERATE / SL_EBURST / SL_EOVERFLOW,
 * leaving the limiter unchanged on error. */
SL_API int sl_limiter_set_rate(sl_limiter *l, sl_rate rate, int64_t now);
SL_API int sl_limiter_set_burst(sl_limiter *l, int64_t burst, int64_t now);

SL_API sl_rate sl_limiter_rate(sl_limiter *l);
SL_API int64_t sl_limiter_burst(sl_limiter *l);

/* Whole tokens available at `now` (negative while in debt), rounded down. */
SL_API int64_t sl_limiter_tokens(sl_limiter *l, int64_t now);

#ifdef __cplusplus
}
#endif
#endif
