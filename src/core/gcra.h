/* gcra.h (internal): the GCRA state and step, shared by gcra.c and
 * leaky_queue.c (the queue is GCRA acceptance plus a release delay). */
#ifndef SLUICE_CORE_GCRA_H
#define SLUICE_CORE_GCRA_H

#include "core/algorithm.h"

typedef struct sl__gcra_state {
    int64_t tat;  /* whole ns of the theoretical arrival time */
    int64_t frac; /* plus frac/n ns, 0 <= frac < n */
} sl__gcra_state;

/* The state of an any-rate plan (sl__plan.any_rate): frac is counted in
 * units of 1/n ns for the n of the plan that last wrote it. */
typedef struct sl__gcra_any_state {
    sl__gcra_state g;
    int64_t n;
} sl__gcra_any_state;

/* The GCRA's halves (core/algorithm.h, sl__outcome): sl__gcra_step leaves
 * in o->b max(tat, now) - now before this request, rounded up (the queue's
 * release delay for an accepted request). */
#endif
