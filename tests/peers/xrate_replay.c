/* xrate_replay.c: replays the traces printed by xrate_trace.go (the real
 * golang.org/x/time/rate on a fake clock) through sl_limiter and compares
 * every answer; prints the first divergence with its trace and exits 1.
 * Times may differ by a few ns (x/time/rate truncates float64 durations,
 * sluice rounds exact fractions up); answers must be equal. At a step back
 * of the clock the trace ends (x/time/rate moves its clock back, sluice
 * does not: a deliberate difference), after checking sluice's own rule
 * there: a slot booked at an older reading is never before the latest
 * update (a booking, a take, a rate or burst change). Reads stdin; usage: xrate_trace SEED N |
 * xrate_replay. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

#define T0       (INT64_C(1000) * SL_NS_PER_SEC)
#define TOL      2000 /* ns */
#define MAX_RES  4096
#define MAX_KEPT 256

static char kept[MAX_KEPT][256];
static int nkept;

static void keep(const char *line) {
    if (nkept < MAX_KEPT) snprintf(kept[nkept++], sizeof kept[0], "%s", line);
}

static int diverge(long trace, const char *what) {
    fprintf(stderr, "xrate: trace %ld diverges: %s\n", trace, what);
    for (int i = 0; i < nkept; i++) fprintf(stderr, "  %s", kept[i]);
    return 1;
}

int main(void) {
    static sl_reservation res[MAX_RES];
    char line[256], msg[256];
    sl_limiter *l = NULL;
    long trace = -1, steps = 0, backs = 0;
    bool skip = false;
    int64_t latest = T0;
    while (fgets(line, sizeof line, stdin)) {
        char op = line[0];
        long long a = 0, b = 0, c = 0, d = 0, e = 0;
        double g = 0;
        if (op == 'T') {
            sl_limiter_destroy(l);
            trace++;
            nkept = 0;
            skip = false;
            latest = T0;
            keep(line);
            if (sscanf(line, "T %lld %lld", &a, &b) != 2) return diverge(trace, "bad line");
            int rc = sl_limiter_create((sl_rate){a, SL_NS_PER_SEC}, b, 0, T0, &l);
            if (rc) return diverge(trace, sl_strerror(rc));
            continue;
        }
        if (skip || !l) continue;
        keep(line);
        steps++;
        switch (op) {
        case 'R': {
            if (sscanf(line, "R %lld %lld %lld %lld %lld", &a, &b, &c, &d, &e) != 5 || a >= MAX_RES)
                return diverge(trace, "bad line");
            int64_t now = T0 + c;
            int rc = sl_limiter_reserve(l, b, now, -1, &res[a]);
            bool ok = rc == SL_OK && res[a].ok;
            if (ok && now > latest) latest = now;
            if (ok != (d != 0)) {
                snprintf(msg, sizeof msg, "reserve ok %d (%s), x/time/rate %lld", ok,
                         sl_strerror(rc), d);
                return diverge(trace, msg);
            }
            if (ok && llabs((long long)(res[a].time_to_act - T0) - e) > TOL) {
                snprintf(msg, sizeof msg, "time_to_act %" PRId64 ", x/time/rate %lld",
                         res[a].time_to_act - T0, e);
                return diverge(trace, msg);
            }
            break;
        }
        case 'A': {
            if (sscanf(line, "A %lld %lld %lld", &a, &b, &c) != 3)
                return diverge(trace, "bad line");
            int64_t now = T0 + b;
            bool ok = sl_limiter_allow(l, a, now);
            if (ok && now > latest) latest = now;
            if (ok != (c != 0)) {
                snprintf(msg, sizeof msg, "allow %d, x/time/rate %lld", ok, c);
                return diverge(trace, msg);
            }
            break;
        }
        case 'C':
            if (sscanf(line, "C %lld %lld", &a, &b) != 2 || a >= MAX_RES)
                return diverge(trace, "bad line");
            sl_limiter_cancel(l, &res[a], T0 + b);
            break;
        case 'L':
        case 'B': {
            if (sscanf(line + 1, " %lld %lld", &a, &b) != 2) return diverge(trace, "bad line");
            latest = T0 + b > latest ? T0 + b : latest;
            int rc = op == 'L' ? sl_limiter_set_rate(l, (sl_rate){a, SL_NS_PER_SEC}, T0 + b)
                               : sl_limiter_set_burst(l, a, T0 + b);
            if (rc) return diverge(trace, sl_strerror(rc));
            break;
        }
        case 'K': {
            if (sscanf(line, "K %lld %lf", &a, &g) != 2) return diverge(trace, "bad line");
            int64_t want = (int64_t)floor(g + 1e-6), got = sl_limiter_tokens(l, T0 + a);
            if (got != want) {
                snprintf(msg, sizeof msg, "tokens %" PRId64 ", x/time/rate %.9f", got, g);
                return diverge(trace, msg);
            }
            break;
        }
        case 'X': {
            if (sscanf(line, "X %lld", &a) != 1) return diverge(trace, "bad line");
            backs++;
            skip = true;
            sl_reservation r;
            if (sl_limiter_reserve(l, 1, T0 + a, -1, &r) == SL_OK && r.time_to_act < latest) {
                snprintf(msg, sizeof msg,
                         "a reservation at an older reading: slot %" PRId64
                         " before the latest time seen %" PRId64,
                         r.time_to_act - T0, latest - T0);
                return diverge(trace, msg);
            }
            break;
        }
        default:
            return diverge(trace, "bad line");
        }
    }
    sl_limiter_destroy(l);
    if (trace < 0) {
        fprintf(stderr, "xrate: no trace read\n");
        return 1;
    }
    printf("xrate: %ld traces, %ld steps (%ld ending at a step back of the clock): all agree\n",
           trace + 1, steps, backs);
    return 0;
}
