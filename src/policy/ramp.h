/* ramp.h: the server's ramp-up after recovery (docs/protection.md; the
 * arithmetic is sluice/ramp.h's). One start for every policy with
 * ramp_up:, moved to `now` when the server starts, when the store recovers
 * from an outage (the Redis store's health going from down to up: the
 * worker's tick, policy/decide.h's sl__decider_recovered) and by
 * POST /v1/ramp. Before any restart the start is 0 (no ramp running). The
 * engine reads it at every decision of a ramped policy (decide.c).
 * Process-wide, thread-safe (atomics). */
#ifndef SLUICE_POLICY_RAMP_H
#define SLUICE_POLICY_RAMP_H

#include <stdint.h>

typedef enum sl__ramp_reason {
    SL__RAMP_BY_START = 0, /* the server started */
    SL__RAMP_BY_RECOVERY,  /* the store came back after an outage */
    SL__RAMP_BY_ADMIN,     /* POST /v1/ramp */
    SL__RAMP_REASONS
} sl__ramp_reason;

/* Starts every ramp again at `now` (a start never moves back: a restart
 * with an earlier `now` than the running start keeps that start, so a
 * ramp's factor never jumps up). Counts the restart under `why`. */
void sl__ramp_restart(int64_t now, sl__ramp_reason why);

/* The running start (0: never started). */
int64_t sl__ramp_started(void);

/* Restarts counted under `why` (why < SL__RAMP_REASONS). */
uint64_t sl__ramp_restarts(sl__ramp_reason why);

/* "start", "recovery", "admin": the metric label of `why`. */
const char *sl__ramp_reason_name(sl__ramp_reason why);

#endif
