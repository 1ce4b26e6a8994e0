/* cell_expect.h: one CL.THROTTLE call on a memory sl__cell checked against
 * its five-integer answer, for the unit tests of CL.THROTTLE (test_cell,
 * test_resp). The including file defines T0 and MS (ns) and includes
 * cmocka and policy/cell.h first. */
#ifndef SLUICE_TESTS_CELL_EXPECT_H
#define SLUICE_TESTS_CELL_EXPECT_H

#include <stdint.h>
#include <string.h>

#include "decide_helper.h"

typedef struct want5 {
    int64_t limited, limit, remaining, retry, reset;
} want5;

/* CL.THROTTLE key b n p q at now must answer w (the test fails otherwise). */
static void throttle(sl__cell *c, const char *key, int64_t b, int64_t n, int64_t p, int64_t q,
                     int64_t now, want5 w) {
    int64_t r[5];
    char err[SL__CELL_ERR_MAX];
    if (cell_throttle(c, key, strlen(key), b, n, p, q, now, r, err) != 0)
        fail_msg("CL.THROTTLE %s %lld %lld %lld %lld: %s", key, (long long)b, (long long)n,
                 (long long)p, (long long)q, err);
    if (r[0] != w.limited || r[1] != w.limit || r[2] != w.remaining || r[3] != w.retry ||
        r[4] != w.reset)
        fail_msg("CL.THROTTLE %s %lld %lld %lld %lld at %lld ms: got [%lld %lld %lld %lld %lld], "
                 "want [%lld %lld %lld %lld %lld]",
                 key, (long long)b, (long long)n, (long long)p, (long long)q,
                 (long long)((now - T0) / MS), (long long)r[0], (long long)r[1], (long long)r[2],
                 (long long)r[3], (long long)r[4], (long long)w.limited, (long long)w.limit,
                 (long long)w.remaining, (long long)w.retry, (long long)w.reset);
}

#endif
